package conn

// ready is the safe point every call on the primary session passes before it is sent:
// a session gone stale while idle, then what the call's kind meets there (txtrack.go: a
// session state lost since the last call, a lost or ended transaction), state the session
// must stay for, and where the session goes (call.go: join, fallBack).

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"

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
	} else if c.prim.stale(ctx, k) {
		if t := c.primaryTx(); t != nil && t.lost == nil {
			c.lose(t, lost("the server closed the connection while the transaction sat idle"))
		}
	}
	if c.gone != nil {
		if err := c.tracker.lostState(k, c.lostCause()); err != nil {
			return err
		}
	}
	if c.lost != nil && k != kSession && c.primaryTx() == nil {
		if err := c.whileLost(ctx, k); err != nil {
			return err
		}
	}
	if t := c.primaryTx(); t != nil {
		if t.lost != nil {
			return t.lost
		}
		c.prim.countAway(count)
		return c.synced(ctx)
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
			c.prim.countAway(count)
			return c.synced(ctx)
		}
	}
	if c.prim.stays(k) {
		// It holds what a new session would lack, or the call reads a value of its last
		// statement: as inside a transaction, it stays until a call finds neither.
		c.prim.countAway(count)
		return c.synced(ctx)
	}
	if place == cluster.PlaceActive {
		c.prim.fallBack(ctx, count)
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

// stale runs the liveness check on a connection idle for cluster.DefaultIdleCheck or more and drops a
// physical connection that fails it, without blaming its host (the next call joins the
// pool's host). It reports whether it dropped one, and with it whatever the session
// held: with transactionReplay an open transaction is replayed on a new session instead
// (replayIdle; k is the kind of the call about to be sent), and then it reports false.
func (p *prim) stale(ctx context.Context, k stmt.Kind) bool {
	now := p.cl.Now().UnixNano()
	idle := now-p.live.lastUsed >= int64(cluster.DefaultIdleCheck)
	p.live.lastUsed = now
	if !idle || p.phys == nil || p.rows > 0 {
		return false
	}
	r, ok := p.phys.(driver.SessionResetter)
	if !ok || r.ResetSession(ctx) == nil {
		return false
	}
	before := p.st
	p.discard("the server closed the connection while it sat idle", kPlain)
	return !p.replayIdle(ctx, before, k)
}

// stays reports whether the physical session must stay where it is for a call of kind
// k at a point where the connection would move (the pool's host is another one, or the
// fall-back is due): it holds named locks, temporary tables or user variables, or the
// call reads a value of its last statement. It moves at the first call that finds
// neither.
func (p *prim) stays(k stmt.Kind) bool {
	return p.phys != nil && (p.sess.has.any() || k.Flags()&dialect.Reads != 0)
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

// noRows is the result of a query answered without being sent.
type noRows struct{}

func (noRows) Columns() []string         { return nil }
func (noRows) Close() error              { return nil }
func (noRows) Next([]driver.Value) error { return io.EOF }

var _ driver.Rows = noRows{}
