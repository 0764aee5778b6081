package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"

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

// ranHere is the one step after a statement n succeeded on the primary session, of
// every path (ExecContext, QueryContext, a prepared statement's Ran): it applies the
// statement's effect on the session (ran) and, with replay on, records it (noteStmt). It
// returns the result for the caller (res; nil for a query).
func (c *Conn) ranHere(n noted, res driver.Result) driver.Result {
	if c.tx == nil || c.tx.rs == nil {
		c.wroteOnPrimary() // for causal reads: it may have written
	}
	if c.log == nil {
		c.ran(n.k, n.query, n.how == viaQuery)
		return res
	}
	before, db := c.st, c.db
	c.ran(n.k, n.query, n.how == viaQuery)
	return c.noteStmt(before, db, n, res)
}

// ran records that a statement of kind k, query q, succeeded on the physical session:
// its effect on the transaction state, the current database and what the session holds
// (track). After COMMIT or ROLLBACK ... RELEASE the server closes the session: it is
// dropped without blaming its host (what it held goes with it: the caller asked for
// that), and the next call opens a new one.
//
// A multi-statement query whose results are being read (reading) has run its first
// statement only; any number of the others may have run, one at least (see
// txState.mayHaveRun). Its USE statements are not followed, and a RELEASE in it does not
// drop the session.
func (c *Conn) ran(k stmt.Kind, q string, reading bool) {
	if k == kPlain && c.st.ac == acOn {
		return // the hot path: nothing changes
	}
	c.sess.has.track(k, q)
	if k.Kind() != dialect.Batch {
		if c.ran1(k, q) {
			c.drop()
		}
		return
	}
	var release bool
	may := c.st.mayHaveRun()
	db := c.db
	dialect.Statements(q, func(s string, k stmt.Kind) bool {
		if reading {
			c.sess.has.trackTables(k, s, db)
			may.next(k)
		} else {
			release = c.ran1(k, s) || release
		}
		return true
	})
	if reading {
		c.st = may.out
	} else if release {
		c.drop()
	}
}

func (c *Conn) ran1(k stmt.Kind, s string) (release bool) {
	c.sess.has.trackTables(k, s, c.db) // while it holds a temporary table its reads stay on it (route)
	if k.Kind() == dialect.Use {
		if db, ok := dialect.ParseUse(s); ok {
			c.db = db
		}
	}
	return c.st.apply(k)
}

// errAnswered is ready's word for a statement answered without being sent (see
// whileLost); the callers turn it into success, it never reaches a user.
var errAnswered = errors.New("mysqlfailover: answered without sending")

// endsLost reports whether a statement of kind k ends a lost transaction (whileLost).
func endsLost(k stmt.Kind) bool {
	switch k.Kind() {
	case dialect.Commit, dialect.Rollback, dialect.XACommit, dialect.XARollback, dialect.Unlock:
		return true
	}
	return false
}

// whileLost answers a statement of kind k while a transaction opened by statements is
// lost, without sending it anywhere, as Tx.Commit and Tx.Rollback answer for a lost Tx.
// COMMIT (XA COMMIT, and UNLOCK TABLES, which commits) gets the lost error; ROLLBACK
// (XA ROLLBACK) succeeds: the server rolled the transaction back when its session died.
// Either ends the lost state (after RELEASE the session is dropped, as the server would
// have closed it). Any other statement gets the lost error and leaves the state as it is.
// A transaction the server rolled back while the session lived is answered by
// whileEnded, which may return nil: the statement is then sent.
func (c *Conn) whileLost(ctx context.Context, k stmt.Kind) error {
	err := c.lost
	if e, ok := err.(*endedError); ok {
		return c.whileEnded(ctx, e, k)
	}
	switch k.Kind() {
	case dialect.Commit, dialect.XACommit, dialect.Unlock:
	case dialect.Rollback, dialect.XARollback:
		err = errAnswered
	default:
		return err
	}
	c.lost = nil
	if cls := k.Kind(); cls == dialect.Commit || cls == dialect.Rollback {
		if _, release, _ := c.st.completion(k); release {
			c.drop()
		}
	}
	return err
}

// noRows is the result of a query answered without being sent.
type noRows struct{}

func (noRows) Columns() []string         { return nil }
func (noRows) Close() error              { return nil }
func (noRows) Next([]driver.Value) error { return io.EOF }

var _ driver.Rows = noRows{}

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
	vals, err := c.queryRow(ctx, q, 3)
	if q == askAll && dialect.Number(err) == dialect.ErrUnknownSystemVariable {
		c.sess.noInTrans = true
		if c.st.ac != acUnknown && c.st.ct != ctUnknown {
			return nil
		}
		vals, err = c.queryRow(ctx, askNoInTrx, 2)
	}
	if err != nil {
		switch cluster.Classify(ctx, err) {
		case cluster.Data:
			c.sess.mute = true
			return nil
		case cluster.Canceled:
			_, out := c.fail(ctx, c.epoch, err, stmt.NoRetry, kPlain)
			return out
		case cluster.NotReady:
			_, out := c.refused(ctx, err, stmt.NoRetry, false, kPlain)
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

// queryRow runs q on the physical session and returns its first row, which must have
// cols columns at least.
func (c *Conn) queryRow(ctx context.Context, q string, cols int) ([]driver.Value, error) {
	if c.queryer == nil {
		return nil, errNoRow
	}
	_, rows, err := dialect.Query(ctx, c.queryer, q, 1)
	switch {
	case err != nil:
		return nil, err
	case len(rows) == 0 || len(rows[0]) < cols:
		return nil, errNoRow // a data error: no answer
	}
	return rows[0], nil
}
