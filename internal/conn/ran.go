package conn

// The one step after a statement succeeded on the primary session (ranHere): its effect
// on the transaction state, the current database, what the session holds, and the
// replay record.

import (
	"database/sql/driver"
	"slices"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

// ranHere is the one step after a statement succeeded on the primary session, of every
// path (ExecContext, QueryContext, a prepared statement's Ran): kind k, query, run with
// args, how. It applies the statement's effect on the session (ran) and, with replay on,
// records it (noteStmt). It returns the result for the caller (res; nil for a query).
func (c *Conn) ranHere(k stmt.Kind, query string, args []driver.NamedValue, how via, res driver.Result) driver.Result {
	if c.sp != nil && (c.tx == nil || c.tx.rs == nil) {
		c.sp.wroteOnPrimary(c.epoch, c.host) // for causal reads: it may have written
	}
	if c.log == nil {
		if (k != kPlain || c.st.ac != acOn) && c.tracker.ran(k, query, how == viaQuery) {
			c.prim.drop() // RELEASE: the server closed the session
		}
		return res
	}
	before, db := c.st, c.db
	if c.tracker.ran(k, query, how == viaQuery) {
		c.prim.drop()
	}
	return c.log.noteStmt(noted{k, query, args, how}, res, c.tx, stepped{before, c.st, db})
}

// ran records that a statement of kind k, query q, succeeded on the physical session:
// its effect on the transaction state, the current database and what the session holds
// (track). It reports whether the server closes the session after it (COMMIT or
// ROLLBACK ... RELEASE): the caller drops it without blaming its host (what it held goes
// with it: the caller asked for that), and the next call opens a new one.
//
// A multi-statement query whose results are being read (reading) has run its first
// statement only; any number of the others may have run, one at least (see
// txState.mayHaveRun). Its USE statements are not followed, and a RELEASE in it does not
// drop the session.
func (t *tracker) ran(k stmt.Kind, q string, reading bool) (release bool) {
	if k == kPlain && t.st.ac == acOn {
		return false // the hot path: nothing changes
	}
	t.sess.has.track(k, q) // the locks and user variables, over the whole text
	var may mayRun
	if reading = reading && k.Kind() == dialect.Batch; reading {
		may = t.st.mayHaveRun()
	}
	db := t.db
	dialect.Each(q, k, func(s string, k stmt.Kind) bool {
		if reading {
			t.sess.has.trackTables(k, s, db)
			may.next(k)
		} else {
			release = t.ran1(k, s) || release
		}
		return true
	})
	if reading {
		t.st = may.out
	}
	return release
}

func (t *tracker) ran1(k stmt.Kind, s string) (release bool) {
	t.sess.has.trackTables(k, s, t.db) // while it holds a temporary table its reads stay on it (route)
	if k.Kind() == dialect.Use {
		if db, ok := dialect.ParseUse(s); ok {
			t.db = db
		}
	}
	return t.st.apply(k)
}

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
