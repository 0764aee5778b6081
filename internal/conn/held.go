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
	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

// hold is what a physical session holds that no other session can be given, as its
// statements told (see track and scanHeld). A new session holds nothing (Conn.clean),
// and so does one database/sql hands to its next user (ResetSession).
type hold struct {
	locks int      // GET_LOCK calls, less RELEASE_LOCK calls (never below 0); RELEASE_ALL_LOCKS: 0
	temps []string // the temporary tables it created and did not drop, as database.table
	vars  bool     // a statement named a user variable (@name): a session cannot unset one
}

// any reports whether the session holds anything a new session would lack.
func (h *hold) any() bool { return h.locks > 0 || len(h.temps) > 0 || h.vars }

// The functions whose calls change or read what a session holds (heldName).
const (
	fnNone = iota
	fnGetLock
	fnReleaseLock
	fnReleaseAll
	fnLastID
	fnRowCount
	fnFoundRows
)

// heldName returns which function name is (fnNone for any other), in any case.
func heldName(name string) int {
	switch len(name) {
	case 8:
		if is(name, "get_lock") {
			return fnGetLock
		}
	case 9:
		if is(name, "row_count") {
			return fnRowCount
		}
	case 10:
		if is(name, "found_rows") {
			return fnFoundRows
		}
	case 12:
		if is(name, "release_lock") {
			return fnReleaseLock
		}
	case 14:
		if is(name, "last_insert_id") {
			return fnLastID
		}
	case 17:
		if is(name, "release_all_locks") {
			return fnReleaseAll
		}
	}
	return fnNone
}

// heldFlags returns the flags classify gives every statement for what its text does to
// the state its session holds: fHolds when it names a user variable or calls GET_LOCK,
// RELEASE_LOCK or RELEASE_ALL_LOCKS; fLastID, fRowCount, fFoundRows when it reads
// LAST_INSERT_ID() (without an argument), ROW_COUNT() or FOUND_ROWS(). Quotes and
// comments are skipped; an executable comment is read as code.
//
// It is on every statement's path: a query with neither '@' nor '(' costs two byte
// searches (inlined into classify), one with a '(' a look at the word before each.
func heldFlags(q string) stmt.Kind {
	if strings.IndexByte(q, '@') < 0 && strings.IndexByte(q, '(') < 0 {
		return 0
	}
	return heldFlagsSlow(q)
}

// heldFlagsSlow is heldFlags for a query with an '@' or a '('.
func heldFlagsSlow(q string) stmt.Kind {
	if strings.IndexByte(q, '@') < 0 && !heldCall(q) {
		return 0
	}
	return scanHeld(q, nil)
}

// heldCall reports whether a '(' of q follows one of the names heldName knows (white
// space between them allowed), inside quotes or comments too: scanHeld then reads q
// properly.
func heldCall(q string) bool {
	for i := 0; ; i++ {
		j := strings.IndexByte(q[i:], '(')
		if j < 0 {
			return false
		}
		i += j
		e := i
		for e > 0 && isSpace(q[e-1]) {
			e--
		}
		s := e
		for s > 0 && e-s < 18 && isIdentByte(q[s-1]) {
			s-- // 18 bytes at most: a longer word is none of the names (17 at most)
		}
		if heldName(q[s:e]) != fnNone {
			return true
		}
	}
}

// scanHeld reads statement text q (of one statement or several) for what it does to the
// state its session holds, in text order, and returns the flags of heldFlags. With h it
// also records in h what the text did, for a statement that ran: each GET_LOCK counts one
// lock taken (whatever it returned: the driver does not read results), each
// RELEASE_LOCK one released, RELEASE_ALL_LOCKS all; a user variable, read or set, counts
// as set.
func scanHeld(q string, h *hold) stmt.Kind {
	var flags stmt.Kind
	for i := 0; i < len(q); i++ {
		switch c := q[i]; {
		case c == '\'' || c == '"' || c == '`' || c == '#' || c == '-' || c == '/':
			if i = skipText(q, i); i < 0 {
				return flags
			}
		case c == '@':
			if i+1 < len(q) && q[i+1] == '@' {
				i++ // a system variable
				continue
			}
			if i > 0 && (isIdentByte(q[i-1]) || q[i-1] == '\'' || q[i-1] == '"' || q[i-1] == '`') {
				continue // an account's host part (u@localhost, 'u'@'%'), not a variable
			}
			if userVar(q, i) {
				flags |= fHolds
				if h != nil {
					h.vars = true
				}
			}
		case isIdentByte(c):
			j := i + 1
			for j < len(q) && isIdentByte(q[j]) {
				j++
			}
			if fn := heldName(q[i:j]); fn != fnNone {
				flags |= call(q, j, fn, h)
			}
			i = j - 1
		}
	}
	return flags
}

// call is scanHeld's step for the name of function fn ending at q[j]: when a call
// follows, its flag, with its effect recorded in h (if set).
func call(q string, j, fn int, h *hold) stmt.Kind {
	for j < len(q) && isSpace(q[j]) {
		j++
	}
	if j >= len(q) || q[j] != '(' {
		return 0 // a column or an alias of that name
	}
	switch fn {
	case fnGetLock:
		if h != nil {
			h.locks++
		}
	case fnReleaseLock:
		if h != nil && h.locks > 0 {
			h.locks--
		}
	case fnReleaseAll:
		if h != nil {
			h.locks = 0
		}
	case fnLastID:
		for j++; j < len(q) && isSpace(q[j]); j++ {
		}
		if j < len(q) && q[j] == ')' {
			return fLastID
		}
		return 0 // LAST_INSERT_ID(expr) sets the value: it reads nothing
	case fnRowCount:
		return fRowCount
	case fnFoundRows:
		return fFoundRows
	}
	return fHolds
}

// readsOf names the values of the last statement a call of kind k reads, for
// failover.SessionStateError.Reads.
func readsOf(k stmt.Kind) string {
	var names []string
	if k&fLastID != 0 {
		names = append(names, "LAST_INSERT_ID()")
	}
	if k&fRowCount != 0 {
		names = append(names, "ROW_COUNT()")
	}
	if k&fFoundRows != 0 {
		names = append(names, "FOUND_ROWS()")
	}
	return strings.Join(names, ", ")
}

// tables records a statement s that succeeded in database db and creates or drops
// temporary tables: CREATE [OR REPLACE] TEMPORARY TABLE|SEQUENCE [IF NOT EXISTS] name,
// DROP [TEMPORARY] TABLE|SEQUENCE [IF EXISTS] name [, name]... (a DROP TABLE drops a
// temporary table of the name first). A name counts as it is written (unquoted), in db
// when it names no database. A temporary table whose name cannot be read counts under
// a name no DROP matches, until the session ends; so does one renamed (RENAME TABLE,
// ALTER TABLE ... RENAME), under its first name.
func (h *hold) tables(s, db string) {
	l := lexer{s: s}
	switch w := l.word(); {
	case is(w, "create"):
		save := l.i
		if !is(l.word(), "or") || !is(l.word(), "replace") {
			l.i = save
		}
		if !is(l.word(), "temporary") {
			return // CREATE TABLE: not a temporary one
		}
		name := ""
		if w := l.word(); is(w, "table") || is(w, "sequence") {
			l.ifExists(true)
			name = l.tableName(db)
		}
		if name == "" {
			name = "(a temporary table the driver could not name)"
		}
		if !slices.Contains(h.temps, name) {
			h.temps = append(h.temps, name)
		}
	case is(w, "drop"):
		save := l.i
		if !is(l.word(), "temporary") {
			l.i = save
		}
		if w := l.word(); !is(w, "table") && !is(w, "tables") && !is(w, "sequence") {
			return
		}
		l.ifExists(false)
		for {
			name := l.tableName(db)
			if i := slices.Index(h.temps, name); i >= 0 {
				h.temps = slices.Delete(h.temps, i, i+1)
			}
			if name == "" || l.peek() != ',' {
				return
			}
			l.token()
		}
	}
}

// ifExists reads IF EXISTS (not: IF NOT EXISTS) if it comes next.
func (l *lexer) ifExists(not bool) {
	save := l.i
	if !is(l.word(), "if") || not && !is(l.word(), "not") || !is(l.word(), "exists") {
		l.i = save
	}
}

// tableName reads a table name, [database.]table, bare or backquoted, and returns it as
// database.table, with db when it names no database; "" when none can be read.
func (l *lexer) tableName(db string) string {
	t := l.token()
	if t == "" || !isIdentByte(t[0]) && t[0] != '`' {
		return ""
	}
	name := unquoteIdent(t)
	if l.peek() == '.' {
		l.token()
		t = l.token()
		if t == "" || !isIdentByte(t[0]) && t[0] != '`' {
			return ""
		}
		db, name = name, unquoteIdent(t)
	}
	return db + "." + name
}

// track records what a statement of kind k, query q, that succeeded on the physical
// session did to what it holds, for the parts read from the whole text (locks and user
// variables, over every statement of a batch); ran1 follows the temporary tables
// statement by statement.
func (c *Conn) track(k stmt.Kind, q string) {
	if k&fHolds != 0 {
		scanHeld(q, &c.sess.has)
	}
}

// trackTables is ran1's part for statement s of kind k: the temporary tables it created
// or dropped (tables), in the current database.
func (c *Conn) trackTables(k stmt.Kind, s string) {
	if k&fTemp != 0 || k&kClass == kImplicit && len(c.sess.has.temps) > 0 {
		c.sess.has.tables(s, c.db)
	}
}

// stays reports whether the physical session must stay where it is for a call of kind
// k at a point where the connection would move (the pool's host is another one, or the
// fall-back is due): it holds named locks, temporary tables or user variables, or the
// call reads a value of its last statement. It moves at the first call that finds
// neither.
func (c *Conn) stays(k stmt.Kind) bool {
	return c.phys != nil && (c.sess.has.any() || k&fReads != 0)
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
	c.gone = &failover.SessionStateError{Host: c.cl.Host(c.host), NamedLocks: h.locks,
		TempTables: slices.Clone(h.temps), UserVariables: h.vars, Err: cause}
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
	if k&fReads != 0 {
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

// mayHold is track for a multi-statement query whose results are being read (k is
// kBatch): any number of its statements may have run, so each counts as run, with the
// current database (its USE statements are not followed).
func (c *Conn) mayHold(k stmt.Kind, q string) {
	c.track(k, q)
	statements(q, func(s string, sk stmt.Kind) bool {
		c.trackTables(sk, s)
		return true
	})
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
