package conn

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

// Call kinds conn names: a plain statement without flags, a BEGIN, and the calls that
// are not statements, of kinds numbered after the statements' (dialect.Calls).
const (
	kPlain   = stmt.Kind(dialect.Plain)
	kBegin   = stmt.Kind(dialect.Begin)
	kSession = stmt.Kind(dialect.Calls) // SetReadOnly, or the PREPARE of a statement that ends a lost transaction
	kTxEnd   = kSession + 1             // Tx.Commit, Tx.Rollback (the Tx proxy decides)
)

// tracker is what the connection follows of its physical session from the statements
// that run on it: the transaction state, and what the session's server told.
type tracker struct {
	st    txState      // the physical session's transaction state
	tx    *Tx          // the open transaction (BeginTx), if any
	db    string       // the current database: the DSN's or the last USE
	dsnAC uint8        // the autocommit of a new physical session (Config.Autocommit)
	dsnCT uint8        // its completion_type (Config.CompletionType)
	lost  error        // set while a transaction opened by statements is lost (see whileLost)
	batch string       // the query of the dialect.Batch statement in flight, for fail
	sess  sessionFacts // what the physical session's server told, or the session did

	// gone is a session that ended without the caller's doing, with what it held: the
	// next call says so (lostState).
	gone *failover.SessionStateError
}

// clean resets what the connection knows of its session to a new session's: no
// transaction, autocommit and completion_type as restored (the DSN's when unknown).
func (t *tracker) clean() {
	t.st = txState{ac: t.st.ac, ct: t.st.ct}
	if t.st.ac == acUnknown {
		t.st.ac = t.dsnAC
	}
	if t.st.ct == ctUnknown {
		t.st.ct = t.dsnCT
	}
	t.sess = sessionFacts{rbot: rbotUnknown}
}

// lose is the one place that marks a transaction lost: tx's, or with tx nil the one that
// statements opened on the primary session. err is the reason: every later statement
// of it gets err without being sent, until COMMIT or ROLLBACK ends it (whileLost, Tx).
func (t *tracker) lose(tx *Tx, err error) {
	if tx != nil {
		tx.lost = err
		return
	}
	t.lost = err
}

// settle is called before a call at a point where the session would move (place: the
// pool's host is another one, or it is due to fall back) while it holds state. Where
// only unknowns hold it, the server is asked (resolve), off the hot path; a session whose
// results are still being read is not.
func (c *Conn) settle(ctx context.Context, place cluster.Place) error {
	if c.rows > 0 || !c.st.resolvable() || place == cluster.PlaceActive && !c.cl.FallBackDue() {
		return nil
	}
	if c.sess.mute || c.sess.noInTrans && c.st.ac != acUnknown && c.st.ct != ctUnknown {
		return nil // this session's server cannot tell
	}
	return c.resolve(ctx)
}

// The questions resolve asks. @@in_transaction is MariaDB's (10.3+): whether the session
// is inside a transaction, as the server's own SERVER_STATUS_IN_TRANS flag says.
// go-sql-driver reads that flag from every OK packet but keeps it unexported, so the
// driver cannot follow it there; MySQL has no such variable (error 1193), and on MySQL
// an unknown transaction stays counted as open until COMMIT or ROLLBACK.
const (
	askAll     = "SELECT @@autocommit, @@completion_type, @@in_transaction"
	askNoInTrx = "SELECT @@autocommit, @@completion_type"
)

// resolve asks the session's server what its statements did not tell: autocommit,
// completion_type and (MariaDB) whether a transaction is open. A server without
// @@in_transaction is remembered for the session. A communication failure of the
// question loses the session with whatever it held: the caller gets failover.ErrTxLost
// (its own statement was not sent), as do the statements after it until COMMIT or
// ROLLBACK. Any other error leaves the state as it was (counted as open), and the
// session is not asked again.
func (c *Conn) resolve(ctx context.Context) error {
	q := askAll
	if c.sess.noInTrans {
		q = askNoInTrx
	}
	vals, err := queryRow(ctx, c.queryer, q, 3)
	if q == askAll && dialect.Number(err) == dialect.ErrUnknownSystemVariable {
		c.sess.noInTrans = true
		if c.st.ac != acUnknown && c.st.ct != ctUnknown {
			return nil
		}
		vals, err = queryRow(ctx, c.queryer, askNoInTrx, 2)
	}
	if err != nil {
		switch f := failureOf(ctx, err); f.class {
		case cluster.Data:
			c.sess.mute = true
			return nil
		case cluster.Canceled:
			_, out := c.fail(ctx, c.epoch, err, stmt.NoRetry, kPlain)
			return out
		case cluster.NotReady:
			_, out := c.refused(ctx, f.nr, stmt.NoRetry, false, kPlain)
			return out
		}
		_, out := c.move(ctx, err, true, stmt.NoRetry, kPlain)
		return out
	}
	if k := dialect.AutocommitKind(dialect.Text(vals[0])); k == dialect.AutocommitOn || k == dialect.AutocommitOff {
		c.st.ac = acOn
		if k == dialect.AutocommitOff {
			c.st.ac = acOff
		}
	}
	if ct := completionOf(dialect.Text(vals[1])); dialect.Text(vals[1]) != "" {
		c.st.ct = ct
	}
	if len(vals) > 2 {
		switch dialect.Text(vals[2]) {
		case "0":
			c.st.txn, c.st.began = txnNone, false
		case "1":
			if c.st.txn == txnUnknown {
				c.st.txn = txnOpen
			}
		}
	}
	return nil
}

var errNoRow = errors.New("mysqlfailover: no row")

// queryRow runs q on the physical session (through queryer, nil: none) and returns its
// first row, which must have cols columns at least.
func queryRow(ctx context.Context, queryer driver.QueryerContext, q string, cols int) ([]driver.Value, error) {
	if queryer == nil {
		return nil, errNoRow
	}
	_, rows, err := dialect.Query(ctx, queryer, q, 1)
	switch {
	case err != nil:
		return nil, err
	case len(rows) == 0 || len(rows[0]) < cols:
		return nil, errNoRow // a data error: no answer
	}
	return rows[0], nil
}
