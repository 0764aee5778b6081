package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"

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

// lostState is the error of a call of kind k on a connection whose session ended since
// its last call (c.gone), with cause as why (nil: the reason noteGone recorded), or nil
// when the session held nothing and the call reads nothing of it. Either way the loss
// is said once. State taken inside a Tx that was lost with it is said by the Tx's
// failover.ErrTxLost alone: running the transaction again takes it again.
func (t *tracker) lostState(k stmt.Kind, cause error) error {
	g := t.gone
	t.gone = nil
	if t.tx != nil && !t.tx.held {
		return nil
	}
	if k.Flags()&dialect.Reads != 0 {
		g.Reads = readsOf(k)
	}
	if g.NamedLocks == 0 && len(g.TempTables) == 0 && !g.UserVariables && g.Reads == "" {
		return nil
	}
	if cause != nil {
		g.Err = cause
	}
	return g
}

// lostCause is what ready gives lostState as the cause when the call found its session
// gone: the transaction's lost error when one went with it, else nil (noteGone's).
func (t *tracker) lostCause() error {
	switch {
	case t.tx != nil && t.tx.lost != nil:
		return t.tx.lost
	case t.tx == nil && t.lost != nil:
		return t.lost
	}
	return nil
}

// readsOf names the values of the last statement a call of kind k reads, for
// failover.SessionStateError.Reads.
func readsOf(k stmt.Kind) string {
	var names []string
	if k.Flags()&dialect.LastID != 0 {
		names = append(names, "LAST_INSERT_ID()")
	}
	if k.Flags()&dialect.RowCount != 0 {
		names = append(names, "ROW_COUNT()")
	}
	if k.Flags()&dialect.FoundRows != 0 {
		names = append(names, "FOUND_ROWS()")
	}
	return strings.Join(names, ", ")
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
			c.prim.drop()
		}
	}
	return err
}

// whileEnded answers a statement of kind k while the transaction the server rolled back
// (e, the refusal) holds the connection (see whileLost):
//
//   - ROLLBACK (with its clauses) runs, and ends the state (nil: send it).
//   - COMMIT is not sent: ROLLBACK with the same clauses runs instead, so that nothing
//     commits even if the server still held a transaction the driver took for ended,
//     and the caller gets e (never success); the state ends.
//   - UNLOCK TABLES runs (the rollback kept the table locks) and the state stays.
//   - Anything else gets e, unsent.
func (c *Conn) whileEnded(ctx context.Context, e error, k stmt.Kind) error {
	switch k.Kind() {
	case dialect.Rollback:
		c.lost = nil
		return nil
	case dialect.Unlock:
		return nil
	case dialect.Commit:
	default:
		return e
	}
	c.lost = nil
	q := rollbackSQL(k)
	rk := dialect.Of(dialect.Rollback, k.Clauses(), k.Flags())
	if c.phys == nil {
		return e // the session is gone, and nothing with it
	}
	if err := c.prim.exec(ctx, c.phys, q); err != nil {
		// Whatever the failure, the transaction is over; a communication failure
		// moves the connection as for any statement.
		_, _ = c.fail(ctx, c.epoch, err, stmt.NoRetry, rk)
		return e
	}
	if c.st.apply(rk) {
		c.prim.drop() // RELEASE: the server closed the session
	}
	return e
}

// rollbackSQL returns the ROLLBACK with the clauses of COMMIT statement kind k.
func rollbackSQL(k stmt.Kind) string {
	q := "ROLLBACK"
	switch {
	case k.Clauses()&dialect.Chain != 0:
		q += " AND CHAIN"
	case k.Clauses()&dialect.NoChain != 0:
		q += " AND NO CHAIN"
	}
	switch {
	case k.Clauses()&dialect.Release != 0:
		q += " RELEASE"
	case k.Clauses()&dialect.NoRelease != 0:
		q += " NO RELEASE"
	}
	return q
}
