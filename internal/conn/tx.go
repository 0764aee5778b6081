package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
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
	held  bool      // the primary session held named locks, temporary tables or user variables when it began (see lostState)
	ended bool      // on rs: COMMIT or ROLLBACK succeeded there, so the session holds no transaction
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
		c.sp.giveBack() // the replica sessions tried, but the transaction's
		return tx, err
	}
	return c.beginTx(ctx, opts)
}

func (c *Conn) beginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.tx != nil {
		return nil, errors.New("mysqlfailover: a transaction is already open on this connection")
	}
	if c.sp != nil {
		c.sp.intent = readIntentTx(opts, c.explicitRO) // a read-only one on the primary walks as a read (join)
		if c.sp.intent {
			if tx, err := c.beginReplica(ctx, opts); tx != nil || err != nil {
				return tx, err // counted (saw)
			}
		}
	}
	err := c.attempts(ctx, &call{kind: kBegin, fails: kBegin, retry: stmt.RetryAlways}, func(*rsession) (bool, error) {
		var tx driver.Tx
		var err error
		c.mark()
		if b, ok := c.phys.(driver.ConnBeginTx); ok {
			tx, err = b.BeginTx(ctx, opts)
		} else {
			tx, err = c.phys.Begin() //nolint:staticcheck // fallback for drivers without ConnBeginTx
		}
		if err != nil {
			return false, err
		}
		// START TRANSACTION committed what statements had opened, released table
		// locks and used pending characteristics: from here the Tx governs.
		pending := c.st.pending
		c.st.apply(kBegin)
		c.st.end(false)
		c.tx = &Tx{c: c, inner: tx, ctx: ctx, epoch: c.epoch, held: c.sess.has.any()}
		if c.log != nil {
			c.log.start(true, opts, c.db)
			if pending {
				c.log.refuse(whyPending) // a replay's BEGIN would have opts only
			}
		}
		return true, nil
	})
	if err != nil {
		return nil, err
	}
	return c.tx, nil
}

// Commit commits on the transaction's host. A lost transaction returns its
// failover.ErrTxLost error without sending anything. One the server rolled back (a
// deadlock...: see Conn.failedWith) returns its failover.ErrTxRolledBack error, never
// nil, and sends ROLLBACK instead of COMMIT (see rollbackEnded). A communication failure
// during COMMIT returns a *failover.CommitUnknownError (it matches
// failover.ErrCommitOutcomeUnknown; see settled) with the *failover.FailoverError (the
// connection has moved), unless no byte of COMMIT was sent (see Conn.sent), which means
// the transaction is lost (failover.ErrTxLost).
func (t *Tx) Commit() error {
	c := t.c
	if t.rs != nil {
		defer t.releaseReplica()
	}
	c.tx = nil
	c.st.end(false) // whatever statements did inside the Tx, it ends here
	if c.log != nil && t.rs == nil {
		c.log.clear() // a COMMIT is never replayed
	}
	if t.lost != nil {
		t.forgetGone()
		t.rollbackEnded()
		return c.prim.saw(t.lost)
	}
	c.mark()
	err := t.inner.Commit()
	if err == nil {
		t.ended = true
		if t.rs == nil && c.sp != nil {
			c.sp.intent = false // a transaction on the primary counts as a write, whatever its intent
			c.sp.wroteOnPrimary(c.epoch, c.host)
		}
		return nil
	}
	// A COMMIT refused by a server that became read-only, or that is not ready (a Galera
	// node that left the Primary component: 1047), did not commit.
	rejected := dialect.ReadOnly(err)
	old := ended{c.host, c.sock}
	unsent := errors.Is(err, driver.ErrBadConn)
	if t.rs == nil && t.epoch == c.epoch {
		unsent = !c.sent(err) // the COMMIT's own socket
	}
	notSent := unsent || rejected || dialect.NotReady(err) != nil
	var out error
	if rejected && c.cfg.WriteIntent && t.epoch == c.epoch && !cluster.Ended(t.ctx) {
		_, out = c.rejected(t.ctx, err, stmt.NoRetry, false, kTxEnd) // COMMIT is never a batch
	} else {
		_, out = c.fail(t.ctx, t.epoch, err, stmt.NoRetry, kTxEnd)
	}
	var fe *failover.FailoverError
	var he *heldError
	switch {
	case !errors.As(out, &fe) && c.cl.Kind() == cluster.KindGalera && dialect.Number(err) == dialect.ErrErrorDuringCommit:
		// The node could not replicate the commit for another reason than a lost Primary
		// component (which moved the connection: dialect.LostPrimary): the rest of the
		// cluster may have committed it, or not.
		return c.prim.saw(fmt.Errorf("%w: the Galera node %s could not replicate the COMMIT: %w",
			failover.ErrCommitOutcomeUnknown, c.cl.Host(c.host), err))
	case !errors.As(out, &fe):
		return c.prim.saw(out) // a data error (deadlock...) or the caller's context
	case errors.As(out, &he):
		return c.prim.saw(out) // already says what became of the transaction
	case notSent:
		return c.prim.saw(heldBy(fe, "", failover.ErrTxLost))
	}
	return c.prim.saw(heldBy(fe, "", settled(t.ctx, c.cl, old, fe)))
}

// ended is a physical session that a communication failure ended: its host and what the
// socket tracker knew of its socket (nil: nothing).
type ended struct {
	host int
	sock *cluster.Socket
}

// settled returns the error of a COMMIT whose outcome is unknown, sent on session old:
// a *failover.CommitUnknownError that says whether old's server thread is confirmed gone,
// so that the transaction has committed or rolled back for good (nothing may act on "not
// committed" before that: a semi-synchronous COMMIT lands when its wait for an
// acknowledgement ends, even when it is killed). The Cluster kills the thread through a
// new session and waits until it leaves the process list (cluster.Cluster.Settle),
// within ctx and a bound of its own. A host the connection could not open a new session
// on again (fe: it moved elsewhere, or nowhere) is not tried once more, and a session
// whose id on the server the tracker did not read cannot be settled.
func settled(ctx context.Context, cl *cluster.Cluster, old ended, fe *failover.FailoverError) error {
	e := &failover.CommitUnknownError{Host: fe.Failed}
	switch {
	case fe.Current == "":
		e.Why = errors.New("no new session could be opened on it")
	case fe.Current != fe.Failed:
		e.Why = errors.New("it did not answer a new session; the connection moved to " + fe.Current)
	default:
		e.Why = cl.Settle(ctx, old.host, fe.Failed, old.sock)
		fe.Settled, fe.Unsettled = e.Why == nil, e.Why
	}
	e.Settled = e.Why == nil
	return e
}

// Rollback rolls back on the transaction's host. A lost transaction was already rolled
// back by the server when its session died: nil, and nothing is sent anywhere. One the
// server rolled back while the session lived: nil, after ROLLBACK (see rollbackEnded);
// so is a read-only one on a replica whose session lives on.
func (t *Tx) Rollback() error {
	c := t.c
	if t.rs != nil {
		defer t.releaseReplica()
	}
	c.tx = nil
	c.st.end(false)
	if c.log != nil && t.rs == nil {
		c.log.clear()
	}
	if t.lost != nil {
		t.forgetGone()
		t.rollbackEnded()
		return nil
	}
	c.mark()
	err := t.inner.Rollback()
	if err == nil {
		t.ended = true
		return nil
	}
	_, out := c.fail(t.ctx, t.epoch, err, stmt.NoRetry, kTxEnd)
	return c.prim.saw(out)
}

// releaseReplica ends what the read-only transaction t holds of its replica session,
// once Commit or Rollback is over. The session goes back to the pool's shared ones only
// when its COMMIT or ROLLBACK succeeded (t.ended) and no statement of the transaction
// changed the session (rsession.dirty); otherwise it is closed. A shared session never
// holds a transaction, or any other state of one connection, when another takes it: an
// autocommit read there would run inside that transaction's snapshot.
func (t *Tx) releaseReplica() {
	c := t.c
	rs := c.sp.byEpoch(t.rs.epoch)
	if rs == nil {
		return // closed already: it broke
	}
	if !t.ended || rs.dirty {
		c.sp.dropReplica(rs)
		return
	}
	c.sp.hold(rs.epoch, -1, true)
}

// rollbackEnded sends ROLLBACK for a transaction the server rolled back while its session
// lived (t.lost is an *endedError), when that session is still the connection's; and for
// a lost read-only transaction on a replica session that is still the connection's. The
// server holds no transaction then, but should it hold one the driver took for ended
// (1205 under innodb_rollback_on_timeout is also the answer to a metadata lock wait,
// which rolls back nothing), nothing of it commits and the next transaction starts clean.
// Its outcome does not change what Commit and Rollback return; a communication failure
// moves the connection as usual.
func (t *Tx) rollbackEnded() {
	c := t.c
	if t.rs != nil {
		// A read-only transaction lost while its replica session lives on (lost by
		// something other than that session's failure): ROLLBACK there for real, so that
		// the session can be shared again (releaseReplica closes it otherwise).
		if c.sp.byEpoch(t.rs.epoch) != nil && t.inner.Rollback() == nil {
			t.ended = true
		}
		return
	}
	if _, ok := t.lost.(*endedError); !ok || t.epoch != c.epoch || c.phys == nil {
		return
	}
	c.mark()
	if err := t.inner.Rollback(); err != nil {
		_, _ = c.fail(t.ctx, t.epoch, err, stmt.NoRetry, kTxEnd)
	}
}

// forgetGone drops the record of a session lost with the transaction (Conn.gone) when the
// session held nothing before the transaction began: what it held then, the transaction
// took, and its failover.ErrTxLost says so (see lostState).
func (t *Tx) forgetGone() {
	if !t.held {
		t.c.gone = nil
	}
}

var _ driver.Tx = (*Tx)(nil)
