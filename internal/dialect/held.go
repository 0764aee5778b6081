package dialect

import "strings"

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

// heldFlags returns the flags Classify gives every statement for what its text does to
// the state its session holds: Holds when it names a user variable or calls GET_LOCK,
// RELEASE_LOCK or RELEASE_ALL_LOCKS; LastID, RowCount, FoundRows when it reads
// LAST_INSERT_ID() (without an argument), ROW_COUNT() or FOUND_ROWS(). Quotes and
// comments are skipped; an executable comment is read as code.
//
// It is on every statement's path: a query with neither '@' nor '(' costs two byte
// searches (inlined into Classify), one with a '(' a look at the word before each.
func heldFlags(q string) Flags {
	if strings.IndexByte(q, '@') < 0 && strings.IndexByte(q, '(') < 0 {
		return 0
	}
	return heldFlagsSlow(q)
}

// heldFlagsSlow is heldFlags for a query with an '@' or a '('.
func heldFlagsSlow(q string) Flags {
	if strings.IndexByte(q, '@') < 0 && !heldCall(q) {
		return 0
	}
	return ScanHeld(q, nil)
}

// heldCall reports whether a '(' of q follows one of the names heldName knows (white
// space between them allowed), inside quotes or comments too: ScanHeld then reads q
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

// Held is what a session holds by its statements' text, as ScanHeld counts it.
type Held struct {
	Locks int  // GET_LOCK calls, less RELEASE_LOCK calls (never below 0); RELEASE_ALL_LOCKS: 0
	Vars  bool // a statement named a user variable (@name): a session cannot unset one
}

// ScanHeld reads statement text q (of one statement or several) for what it does to the
// state its session holds, in text order, and returns the flags of heldFlags. With h it
// also records in h what the text did, for a statement that ran: each GET_LOCK counts one
// lock taken (whatever it returned: the driver does not read results), each
// RELEASE_LOCK one released, RELEASE_ALL_LOCKS all; a user variable, read or set, counts
// as set.
func ScanHeld(q string, h *Held) Flags {
	var flags Flags
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
				flags |= Holds
				if h != nil {
					h.Vars = true
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

// call is ScanHeld's step for the name of function fn ending at q[j]: when a call
// follows, its flag, with its effect recorded in h (if set).
func call(q string, j, fn int, h *Held) Flags {
	j = spaceEnd(q, j)
	if j >= len(q) || q[j] != '(' {
		return 0 // a column or an alias of that name
	}
	switch fn {
	case fnGetLock:
		if h != nil {
			h.Locks++
		}
	case fnReleaseLock:
		if h != nil && h.Locks > 0 {
			h.Locks--
		}
	case fnReleaseAll:
		if h != nil {
			h.Locks = 0
		}
	case fnLastID:
		j = spaceEnd(q, j+1)
		if j < len(q) && q[j] == ')' {
			return LastID
		}
		return 0 // LAST_INSERT_ID(expr) sets the value: it reads nothing
	case fnRowCount:
		return RowCount
	case fnFoundRows:
		return FoundRows
	}
	return Holds
}

// TempTables reads statement s, run in database db, for the temporary tables it creates
// or drops, and calls f with each name: CREATE [OR REPLACE] TEMPORARY TABLE|SEQUENCE
// [IF NOT EXISTS] name (created; name "" when it cannot be read), DROP [TEMPORARY]
// TABLE|SEQUENCE [IF EXISTS] name [, name]... (a DROP TABLE drops a temporary table of
// the name first). A name is database.table as it is written (unquoted), with db when it
// names no database. A rename (RENAME TABLE, ALTER TABLE ... RENAME) is not followed.
func TempTables(s, db string, f func(name string, created bool)) {
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
		f(name, true)
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
			if name == "" {
				return
			}
			f(name, false)
			if l.peek() != ',' {
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
