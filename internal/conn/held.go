package conn

// State a session holds that the driver cannot carry to another session: named locks
// (GET_LOCK), temporary tables and user variables, which a session takes by its
// statements, and the values of its last statement (LAST_INSERT_ID(), ROW_COUNT(),
// FOUND_ROWS()), which a statement reads. The rule: state that cannot move is never
// dropped silently. A session that holds such state is not moved by the driver (a
// fall-back, the pool moving): ready keeps it on its host until it holds none, as a
// transaction; a call that reads a value of the last statement is never the first on a
// session the driver moved to. When the session ends anyway (its host died, it was
// killed, it timed out while idle), the next call says what was lost, once
// (failover.ErrSessionStateLost), and the connection carries on.

import (
	"errors"
	"slices"
	"strings"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

// hold is what a physical session holds that no other session can be given, as its
// statements told (see track and dialect.ScanHeld). A new session holds nothing
// (Conn.clean), and so does one database/sql hands to its next user (ResetSession).
type hold struct {
	dialect.Held          // named locks and user variables
	temps        []string // the temporary tables it created and did not drop, as database.table
}

// any reports whether the session holds anything a new session would lack.
func (h *hold) any() bool { return h.Locks > 0 || len(h.temps) > 0 || h.Vars }

// tables records a statement s that succeeded in database db and creates or drops
// temporary tables (dialect.TempTables). A temporary table whose name cannot be read
// counts under a name no DROP matches, until the session ends; so does one renamed,
// under its first name.
func (h *hold) tables(s, db string) {
	dialect.TempTables(s, db, func(name string, created bool) {
		if !created {
			if i := slices.Index(h.temps, name); i >= 0 {
				h.temps = slices.Delete(h.temps, i, i+1)
			}
			return
		}
		if name == "" {
			name = "(a temporary table the driver could not name)"
		}
		if !slices.Contains(h.temps, name) {
			h.temps = append(h.temps, name)
		}
	})
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

// track records what a statement of kind k, query q, that succeeded on the physical
// session did to what it holds, for the parts read from the whole text (locks and user
// variables, over every statement of a batch); ran1 follows the temporary tables
// statement by statement.
func (h *hold) track(k stmt.Kind, q string) {
	if k.Flags()&dialect.Holds != 0 {
		dialect.ScanHeld(q, &h.Held)
	}
}

// trackTables is ran1's part for statement s of kind k: the temporary tables it created
// or dropped (tables), in the current database db.
func (h *hold) trackTables(k stmt.Kind, s, db string) {
	if k.Flags()&dialect.Temp != 0 || k.Kind() == dialect.Implicit && len(h.temps) > 0 {
		h.tables(s, db)
	}
}

// stays reports whether the physical session must stay where it is for a call of kind
// k at a point where the connection would move (the pool's host is another one, or the
// fall-back is due): it holds named locks, temporary tables or user variables, or the
// call reads a value of its last statement. It moves at the first call that finds
// neither.
func (c *Conn) stays(k stmt.Kind) bool {
	return c.phys != nil && (c.sess.has.any() || k.Flags()&dialect.Reads != 0)
}

// noteGone records, before the physical session is closed without the caller's doing
// (found dead, broken, or its host failed), what it held, with cause (nil: the caller
// adds it): the next call says so (lostState). An earlier loss not said yet is kept
// unless this session holds something itself.
func (c *Conn) noteGone(cause error) {
	if c.phys == nil || c.gone != nil && !c.sess.has.any() {
		return
	}
	h := &c.sess.has
	c.gone = &failover.SessionStateError{Host: c.cl.Host(c.host), NamedLocks: h.Locks,
		TempTables: slices.Clone(h.temps), UserVariables: h.Vars, Err: cause}
}

// lostState is the error of a call of kind k on a connection whose session ended since
// its last call (c.gone), with cause as why (nil: the reason noteGone recorded), or nil
// when the session held nothing and the call reads nothing of it. Either way the loss
// is said once. State taken inside a Tx that was lost with it is said by the Tx's
// failover.ErrTxLost alone: running the transaction again takes it again.
func (c *Conn) lostState(k stmt.Kind, cause error) error {
	g := c.gone
	c.gone = nil
	if c.tx != nil && !c.tx.held {
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

// notSentCause is the cause of a session dropped between calls (why, from discard: found
// closed while it sat idle, or broken after a cancel): the next call is not sent.
func notSentCause(why string) error {
	return errors.New(why + "; the statement was not sent")
}

// lostCause is what ready gives lostState as the cause when the call found its session
// gone: the transaction's lost error when one went with it, else nil (noteGone's).
func (c *Conn) lostCause() error {
	switch {
	case c.tx != nil && c.tx.lost != nil:
		return c.tx.lost
	case c.tx == nil && c.lost != nil:
		return c.lost
	}
	return nil
}
