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

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
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

// noteGone records, before the physical session (on host) is closed without the
// caller's doing (found dead, broken, or its host failed), what it held, with cause
// (nil: the caller adds it): the next call says so (lostState). An earlier loss not said yet is kept
// unless this session holds something itself.
func (t *tracker) noteGone(host string, cause error) {
	if t.gone != nil && !t.sess.has.any() {
		return
	}
	h := &t.sess.has
	t.gone = &failover.SessionStateError{Host: host, NamedLocks: h.Locks,
		TempTables: slices.Clone(h.temps), UserVariables: h.Vars, Err: cause}
}

// notSentCause is the cause of a session dropped between calls (why, from discard: found
// closed while it sat idle, or broken after a cancel): the next call is not sent.
func notSentCause(why string) error {
	return errors.New(why + "; the statement was not sent")
}
