package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

const retryAlways = stmt.RetryAlways

// Tx is the transaction proxy. A transaction lives and dies on one host: no switch and no fall-back happen while it is open; a communication error
// inside it loses it (failover.ErrTxLost) and every later statement of it fails without
// running anywhere, while the connection itself has already moved for the next
// transaction.
type Tx struct {
	c     *Conn
	inner driver.Tx
	ctx   context.Context // BeginTx's: database/sql keeps it alive until Commit or Rollback
	epoch uint64
	lost  error     // set when the transaction is lost
	rs    *rsession // the replica session of a read-only transaction (replicaReads); nil: the primary's
}

// Begin implements driver.Conn.
func (c *Conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx implements driver.ConnBeginTx; opts (isolation, read-only) go to go-sql-driver
// unchanged. BEGIN has no effect on data, so a communication failure is retried once on
// the new host.
func (c *Conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.sp != nil {
		tx, err := c.beginTx(ctx, opts)
		c.giveBack() // the replica sessions tried, but the transaction's
		return tx, err
	}
	return c.beginTx(ctx, opts)
}

func (c *Conn) beginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.tx != nil {
		return nil, errors.New("mysqlfailover: a transaction is already open on this connection")
	}
	if c.sp != nil && c.readIntentTx(opts) {
		if tx, err := c.beginReplica(ctx, opts); tx != nil || err != nil {
			return tx, c.saw(err)
		}
	}
	for attempt := 0; ; attempt++ {
		if err := c.ready(ctx, false, kBegin); err != nil {
			return nil, c.saw(err)
		}
		var tx driver.Tx
		var err error
		if b, ok := c.phys.(driver.ConnBeginTx); ok {
			tx, err = b.BeginTx(ctx, opts)
		} else {
			tx, err = c.phys.Begin() //nolint:staticcheck // fallback for drivers without ConnBeginTx
		}
		if err == nil {
			// START TRANSACTION committed what statements had opened, released table
			// locks and used pending characteristics: from here the Tx governs.
			c.st.apply(kBegin)
			c.st.end(false)
			c.tx = &Tx{c: c, inner: tx, ctx: ctx, epoch: c.epoch}
			if c.log != nil {
				c.log.start(true, opts, c.db)
			}
			return c.tx, nil
		}
		retry, out := c.fail(ctx, c.epoch, err, retryFor(attempt, retryAlways), kBegin)
		if !retry {
			return nil, c.saw(out)
		}
	}
}

// Commit commits on the transaction's host. A lost transaction returns its
// failover.ErrTxLost error without sending anything. One the server rolled back (a
// deadlock...: see Conn.failedWith) returns its failover.ErrTxRolledBack error, never
// nil, and sends ROLLBACK instead of COMMIT (see rollbackEnded). A communication failure
// during COMMIT returns an error that matches failover.ErrCommitOutcomeUnknown and wraps
// the *failover.FailoverError (the connection has moved), unless go-sql-driver proved
// COMMIT was never sent, which means the transaction is lost (failover.ErrTxLost).
func (t *Tx) Commit() error {
	c := t.c
	if t.rs != nil {
		defer c.hold(t.rs.epoch, -1, true) // the transaction's replica session goes back
	}
	c.tx = nil
	c.st.end(false) // whatever statements did inside the Tx, it ends here
	if c.log != nil && t.rs == nil {
		c.log.clear() // a COMMIT is never replayed
	}
	if t.lost != nil {
		t.rollbackEnded()
		return c.saw(t.lost)
	}
	err := t.inner.Commit()
	if err == nil {
		if t.rs == nil && c.sp != nil {
			c.sp.intent = false // a transaction on the primary counts as a write, whatever its intent
			c.wroteOnPrimary()
		}
		return nil
	}
	// A COMMIT refused by a server that became read-only, or that is not ready (a Galera
	// node that left the Primary component: 1047), did not commit.
	rejected := cluster.ReadOnlyRejection(err)
	notSent := errors.Is(err, driver.ErrBadConn) || rejected || cluster.Refusal(err) != nil
	var out error
	if rejected && c.cfg.WriteIntent && t.epoch == c.epoch && !cluster.Ended(t.ctx) {
		_, out = c.rejected(t.ctx, err, stmt.NoRetry, false, kTxEnd) // COMMIT is never a batch
	} else {
		_, out = c.fail(t.ctx, t.epoch, err, stmt.NoRetry, kTxEnd)
	}
	var fe *failover.FailoverError
	var he *heldError
	switch {
	case !errors.As(out, &fe) && c.cl.Kind() == cluster.KindGalera && isErrno(err, errDuringCommit):
		// The node left the Primary component while it replicated the commit: the rest of
		// the cluster may have committed it (seen here: 5 of 16 such commits were), or not.
		return c.saw(fmt.Errorf("%w: the Galera node %s lost the Primary component during COMMIT: %w",
			failover.ErrCommitOutcomeUnknown, c.cl.Host(c.host), err))
	case !errors.As(out, &fe):
		return c.saw(out) // a data error (deadlock...) or the caller's context
	case errors.As(out, &he):
		return c.saw(out) // already says what became of the transaction
	case notSent:
		return c.saw(heldBy(fe, "", failover.ErrTxLost))
	}
	return c.saw(heldBy(fe, "", failover.ErrCommitOutcomeUnknown))
}

// Rollback rolls back on the transaction's host. A lost transaction was already rolled
// back by the server when its session died: nil, and nothing is sent anywhere. One the
// server rolled back while the session lived: nil, after ROLLBACK (see rollbackEnded).
func (t *Tx) Rollback() error {
	c := t.c
	if t.rs != nil {
		defer c.hold(t.rs.epoch, -1, true)
	}
	c.tx = nil
	c.st.end(false)
	if c.log != nil && t.rs == nil {
		c.log.clear()
	}
	if t.lost != nil {
		t.rollbackEnded()
		return nil
	}
	err := t.inner.Rollback()
	if err == nil {
		return nil
	}
	_, out := c.fail(t.ctx, t.epoch, err, stmt.NoRetry, kTxEnd)
	return c.saw(out)
}

// rollbackEnded sends ROLLBACK for a transaction the server rolled back while its session
// lived (t.lost is an *endedError), when that session is still the connection's. The
// server holds no transaction then, but should it hold one the driver took for ended
// (1205 under innodb_rollback_on_timeout is also the answer to a metadata lock wait,
// which rolls back nothing), nothing of it commits and the next transaction starts clean.
// Its outcome does not change what Commit and Rollback return; a communication failure
// moves the connection as usual.
func (t *Tx) rollbackEnded() {
	c := t.c
	if _, ok := t.lost.(*endedError); !ok || t.epoch != c.epoch || c.phys == nil {
		return
	}
	if err := t.inner.Rollback(); err != nil {
		_, _ = c.fail(t.ctx, t.epoch, err, stmt.NoRetry, kTxEnd)
	}
}

var _ driver.Tx = (*Tx)(nil)
