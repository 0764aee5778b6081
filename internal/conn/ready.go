package conn

// ready is the safe point every call on the primary session passes before it is sent:
// what the call's kind meets there (a session state lost since the last call, a lost or
// ended transaction, state the session must stay for), and where the session goes.

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"strings"

	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

// ready is the safe-point check before every call that talks to the server, for a call
// of kind k (a statement's, or kSession). It first replaces a physical connection that
// went stale while idle (see stale; skipped right after database/sql's checkout, which
// ran the same check). Outside a transaction it then moves the connection to the pool's
// host (nothing has been sent, so the caller sees no error) and falls back to the
// primary when that is due; inside one, a Tx or one opened by statements (see
// txState.held), it only refuses statements of a lost transaction (see whileLost:
// errAnswered means the call succeeds without being sent). count marks statements.
//
// A read-only transaction on a replica session is not the primary session's: the
// primary session's liveness, moves and failures never touch it (primaryTx).
func (c *Conn) ready(ctx context.Context, count bool, k stmt.Kind) error {
	c.counted = false
	c.lend.used = true // database/sql resets it before its next use (lendIdle)
	if c.live.checked {
		c.live.checked = false // database/sql's checkout just checked it: no clock read needed
	} else if c.stale(ctx, k) {
		if t := c.primaryTx(); t != nil && t.lost == nil {
			c.lose(t, lost("the server closed the connection while the transaction sat idle"))
		}
	}
	if c.gone != nil {
		if err := c.tracker.lostState(k, c.lostCause()); err != nil {
			return err
		}
	}
	if t := c.primaryTx(); t != nil {
		if t.lost != nil {
			return t.lost
		}
		c.countAway(count)
		return c.synced(ctx)
	}
	if c.lost != nil && k != kSession {
		if err := c.whileLost(ctx, k); err != nil {
			return err
		}
	}
	place := cluster.PlaceAway
	if c.phys != nil {
		place = c.cl.Place(c.host)
	}
	if place == cluster.PlaceHome {
		return c.synced(ctx) // the hot path
	}
	if c.st.held() {
		if err := c.settle(ctx, place); err != nil {
			return err
		}
		if c.st.held() {
			// Inside a transaction opened by statements: as inside a Tx, the session
			// stays on its host until it reaches a real safe point.
			c.countAway(count)
			return c.synced(ctx)
		}
	}
	if c.stays(k) {
		// It holds what a new session would lack, or the call reads a value of its last
		// statement: as inside a transaction, it stays until a call finds neither.
		c.countAway(count)
		return c.synced(ctx)
	}
	if place == cluster.PlaceActive {
		c.fallBack(ctx, count)
		return c.synced(ctx)
	}
	return c.join(ctx, count)
}

// primaryTx returns the open Tx when it runs on the primary session; nil when none is
// open, or when it is a read-only transaction on a replica session (replica reads),
// which lives and dies with that session alone.
func (t *tracker) primaryTx() *Tx {
	if t.tx != nil && t.tx.rs == nil {
		return t.tx
	}
	return nil
}

// synced is ready's last step on the primary session: it applies a read-only state
// that SetReadOnly or ResetSession left pending (replica reads; see applyReadOnly).
func (c *Conn) synced(ctx context.Context) error {
	if !c.roPending || c.phys == nil {
		return nil
	}
	return c.applyReadOnly(ctx)
}

// countAway counts a statement (count) towards queriesBeforeRetryMaster when the
// session is not on the primary.
func (c *Conn) countAway(count bool) {
	if count && !c.cl.Home(c.host) {
		c.counted = c.cl.NoteStatement()
	}
}

// fallBack is ready's step on the pool's host when it is a secondary: it falls back to
// the primary when that is due (cluster.Cluster.TryFallBack) and no results are being
// read here; where the session stays, the statement (count) counts.
func (c *Conn) fallBack(ctx context.Context, count bool) {
	if c.rows == 0 {
		if phys, host, _ := c.cl.TryFallBack(ctx, c.setup); phys != nil {
			c.drop()
			c.attach(phys, host)
			return
		}
	}
	if count {
		c.counted = c.cl.NoteStatement()
	}
}

// join is ready's step away from the pool's host, outside a transaction: it moves the
// connection to the pool's host (or walks), unless results are still being read here.
func (c *Conn) join(ctx context.Context, count bool) error {
	if c.closed {
		return driver.ErrBadConn
	}
	if c.phys != nil && c.rows > 0 {
		return nil // results are still being read here; move at the next safe point
	}
	// The pool moved (another connection saw this host fail, or fell back), or this
	// connection lost its physical one, or its host no longer has the wanted role (a
	// demoted primary: another connection is looking for the writer): join the pool's
	// host, or the walk.
	c.drop()
	connect := c.cl.Connect
	if c.cfg.AllowSourceDown && c.sp != nil && c.sp.intent {
		// For a read (no replica could serve it, or a causal read needs the writer's
		// position): one pass, not the passes a write waits for while no writer answers.
		connect = c.cl.ConnectOnePass
	}
	phys, host, err := connect(ctx, c.setup)
	if err != nil {
		return c.refusedWrite(err)
	}
	c.attach(phys, host)
	c.countAway(count)
	return nil
}

// stale runs the liveness check on a connection idle for cluster.DefaultIdleCheck or more and drops a
// physical connection that fails it, without blaming its host (the next call joins the
// pool's host). It reports whether it dropped one, and with it whatever the session
// held: with transactionReplay an open transaction is replayed on a new session instead
// (replayIdle; k is the kind of the call about to be sent), and then it reports false.
func (c *Conn) stale(ctx context.Context, k stmt.Kind) bool {
	now := c.cl.Now().UnixNano()
	idle := now-c.live.lastUsed >= int64(cluster.DefaultIdleCheck)
	c.live.lastUsed = now
	if !idle || c.phys == nil || c.rows > 0 {
		return false
	}
	r, ok := c.phys.(driver.SessionResetter)
	if !ok || r.ResetSession(ctx) == nil {
		return false
	}
	before := c.st
	c.discard("the server closed the connection while it sat idle", kPlain)
	return !c.replayIdle(ctx, before, k)
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

// stays reports whether the physical session must stay where it is for a call of kind
// k at a point where the connection would move (the pool's host is another one, or the
// fall-back is due): it holds named locks, temporary tables or user variables, or the
// call reads a value of its last statement. It moves at the first call that finds
// neither.
func (c *Conn) stays(k stmt.Kind) bool {
	return c.phys != nil && (c.sess.has.any() || k.Flags()&dialect.Reads != 0)
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
	if err := c.exec(ctx, c.phys, q); err != nil {
		// Whatever the failure, the transaction is over; a communication failure
		// moves the connection as for any statement.
		_, _ = c.fail(ctx, c.epoch, err, stmt.NoRetry, rk)
		return e
	}
	if c.st.apply(rk) {
		c.drop() // RELEASE: the server closed the session
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

var _ driver.Rows = noRows{}
