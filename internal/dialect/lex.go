package dialect

import "strings"

// nextStatement returns the statement of q that starts at i (up to the next ';' outside
// quotes and comments, without it) and the index after that ';' (len(q)+1 for the last
// one). ok is false when a quote or comment does not end, or an executable comment holds
// a ';' (the server would split there).
func nextStatement(q string, i int) (s string, next int, ok bool) {
	start := i
	for i < len(q) {
		switch c := q[i]; c {
		case ';':
			return q[start:i], i + 1, true
		case '\'', '"', '`':
			if i = skipQuoted(q, i); i < 0 {
				return "", 0, false
			}
		case '#', '-', '/':
			end, exec := commentEnd(q, i)
			switch {
			case end == i:
				i++ // a minus sign, a division
			case end < 0 || exec && strings.IndexByte(q[i:end], ';') >= 0:
				return "", 0, false
			default:
				i = end
			}
		default:
			i++
		}
	}
	return q[start:], len(q) + 1, true
}

// skipQuoted returns the index after the string or quoted identifier that starts at
// q[i] (', " or `), or -1 when it does not end. Inside ' and " a backslash escapes the
// next byte (MySQL's default; NO_BACKSLASH_ESCAPES is not followed); a doubled quote is
// one quote character.
func skipQuoted(q string, i int) int {
	quote := q[i]
	for i++; i < len(q); i++ {
		switch q[i] {
		case '\\':
			if quote != '`' {
				i++
			}
		case quote:
			if i+1 < len(q) && q[i+1] == quote {
				i++
				continue
			}
			return i + 1
		}
	}
	return -1
}

// lineEnd returns the index of the line end after q[i], or len(q).
func lineEnd(q string, i int) int {
	if n := strings.IndexByte(q[i:], '\n'); n >= 0 {
		return i + n
	}
	return len(q)
}

// dashComment reports whether q[i:] starts a "-- " comment: two dashes and then white
// space, a control character or the end.
func dashComment(q string, i int) bool {
	return i+1 < len(q) && q[i+1] == '-' && (i+2 == len(q) || q[i+2] <= ' ' || q[i+2] == 0x7f)
}

// commentEnd returns the index after the comment that starts at q[i] (#, "-- " or
// /* */), i where none starts there, or -1 for a /* comment that does not end. exec
// reports an executable comment, whose text the server runs as code (executable). It is
// every scanner's one reading of comments: each decides what an executable one means.
func commentEnd(q string, i int) (end int, exec bool) {
	switch q[i] {
	case '#':
		return lineEnd(q, i), false
	case '-':
		if dashComment(q, i) {
			return lineEnd(q, i), false
		}
	case '/':
		if i+1 < len(q) && q[i+1] == '*' {
			rest := q[i+2:]
			if n := strings.Index(rest, "*/"); n >= 0 {
				return i + 2 + n + 2, executable(rest)
			}
			return -1, executable(rest)
		}
	}
	return i, false
}

// spaceEnd returns the index of the first byte at or after q[i] that is not white space.
func spaceEnd(q string, i int) int {
	for i < len(q) && isSpace(q[i]) {
		i++
	}
	return i
}

// executable reports whether a comment whose text (after "/*") is rest is one the
// server runs: /*! ... */ (MySQL, MariaDB) or /*M! ... */ (MariaDB).
func executable(rest string) bool {
	return len(rest) > 0 && rest[0] == '!' || len(rest) > 1 && rest[0]|0x20 == 'm' && rest[1] == '!'
}

// lexer reads the tokens of one statement.
type lexer struct {
	s   string
	i   int
	bad bool // an executable or unterminated comment, or an unterminated quote
}

// space skips white space and comments.
func (l *lexer) space() {
	for l.i < len(l.s) {
		c := l.s[l.i]
		if isSpace(c) {
			l.i++
			continue
		}
		if c != '#' && c != '-' && c != '/' {
			return
		}
		end, exec := commentEnd(l.s, l.i)
		switch {
		case end == l.i:
			return
		case end < 0 || exec:
			l.bad, l.i = true, len(l.s)
			return
		}
		l.i = end
	}
}

// word returns the next token if it is a word (a keyword, a bare identifier or a
// number), else "" without moving.
func (l *lexer) word() string {
	l.space()
	start := l.i
	for l.i < len(l.s) && isIdentByte(l.s[l.i]) {
		l.i++
	}
	return l.s[start:l.i]
}

// token returns the next token: a word, a quoted string or identifier with its quotes,
// ":=", or one other byte; "" at the end.
func (l *lexer) token() string {
	l.space()
	if l.i >= len(l.s) {
		return ""
	}
	start := l.i
	switch c := l.s[l.i]; {
	case isIdentByte(c):
		return l.word()
	case c == '\'' || c == '"' || c == '`':
		if l.i = skipQuoted(l.s, l.i); l.i < 0 {
			l.bad, l.i = true, len(l.s)
			return ""
		}
	case c == ':' && l.i+1 < len(l.s) && l.s[l.i+1] == '=':
		l.i += 2
	default:
		l.i++
	}
	return l.s[start:l.i]
}

// peek returns the next byte after white space and comments, or 0 at the end.
func (l *lexer) peek() byte {
	l.space()
	if l.i >= len(l.s) {
		return 0
	}
	return l.s[l.i]
}

// end reports whether nothing but white space, comments and one trailing ';' is left.
func (l *lexer) end() bool {
	l.space()
	if l.i < len(l.s) && l.s[l.i] == ';' {
		rest := lexer{s: l.s, i: l.i + 1}
		rest.space()
		return rest.i == len(l.s) && !rest.bad
	}
	return l.i == len(l.s)
}

// is reports whether the token w is the keyword kw (lower case), in any ASCII case.
func is(w, kw string) bool {
	if len(w) != len(kw) {
		return false
	}
	for i := 0; i < len(kw); i++ {
		b := w[i]
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if b != kw[i] {
			return false
		}
	}
	return true
}

// unquoteIdent returns a backquoted identifier's name (t itself if it is not quoted).
func unquoteIdent(t string) string {
	if len(t) >= 2 && t[0] == '`' && t[len(t)-1] == '`' {
		return strings.ReplaceAll(t[1:len(t)-1], "``", "`")
	}
	return t
}

// unquote returns the text of a '...' or "..." token without its quotes (escapes are
// not undone: the values read here have none), or t as it is.
func unquote(t string) string {
	if len(t) >= 2 && (t[0] == '\'' || t[0] == '"') && t[len(t)-1] == t[0] {
		return t[1 : len(t)-1]
	}
	return t
}

// isSpace reports whether b is white space between SQL tokens (the lexer's, and every
// scanner's of this package).
func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f' || b == '\v'
}

// isIdentByte reports whether b may be part of a bare identifier or a number.
func isIdentByte(b byte) bool {
	return b >= '0' && b <= '9' || b|0x20 >= 'a' && b|0x20 <= 'z' || b == '_' || b == '$' || b >= 0x80
}

// QuoteIdent quotes a MySQL identifier with backticks, doubling any inside.
func QuoteIdent(s string) string {
	return "`" + strings.ReplaceAll(s, "`", "``") + "`"
}

// skipLead returns s after its leading white space and comments.
func skipLead(s string) string {
	l := lexer{s: s}
	l.space()
	return s[l.i:]
}

// Classify returns the Class of query: of its one statement, or of kind Batch when multi
// (multiStatements) is set and query holds several that are not all plain. Without
// multiStatements only the first statement exists for the server.
//
// It is on every statement's path: a query that starts with SELECT, INSERT, UPDATE or
// DELETE (no leading space or comment) is recognised with one comparison of its first
// six bytes, and two byte searches for what it does to the state its session holds
// (heldFlags, here by hand: it is too big to inline).
func Classify(query string, multi bool) Class {
	if !multi && plainStart(query) {
		if strings.IndexByte(query, '@') < 0 && strings.IndexByte(query, '(') < 0 {
			return Class(Plain)
		}
		return Class(Plain).with(heldFlagsSlow(query))
	}
	return classifySlow(query, multi)
}

// The first six bytes of SELECT, INSERT, UPDATE and DELETE, little-endian, lower case.
const (
	wSelect = 's' | 'e'<<8 | 'l'<<16 | 'e'<<24 | 'c'<<32 | 't'<<40
	wInsert = 'i' | 'n'<<8 | 's'<<16 | 'e'<<24 | 'r'<<32 | 't'<<40
	wUpdate = 'u' | 'p'<<8 | 'd'<<16 | 'a'<<24 | 't'<<32 | 'e'<<40
	wDelete = 'd' | 'e'<<8 | 'l'<<16 | 'e'<<24 | 't'<<32 | 'e'<<40
)

// plainStart reports whether q starts with the keyword SELECT, INSERT, UPDATE or DELETE
// in any case. b|0x20 lowers an ASCII letter and maps no other byte onto one, so one
// OR and one comparison read six bytes at once.
func plainStart(q string) bool {
	if len(q) < 7 {
		return false
	}
	w := (uint64(q[0]) | uint64(q[1])<<8 | uint64(q[2])<<16 | uint64(q[3])<<24 |
		uint64(q[4])<<32 | uint64(q[5])<<40) | 0x202020202020
	return (w == wSelect || w == wInsert || w == wUpdate || w == wDelete) && !isIdentByte(q[6])
}

// classifySlow is Classify without the shortcut.
func classifySlow(query string, multi bool) Class {
	return classifyStatements(query, multi).with(heldFlags(query))
}

// classifyStatements is classifySlow without the flags of heldFlags.
func classifyStatements(query string, multi bool) Class {
	if !multi || strings.IndexByte(query, ';') < 0 {
		if plainStart(query) {
			return Class(Plain)
		}
		return classifyOne(query)
	}
	first, n, plain := Class(Empty), 0, true
	for s, i, ok := nextStatement(query, 0); ; s, i, ok = nextStatement(query, i) {
		if !ok {
			return Class(Unknown)
		}
		if k := classifyOne(s); k != Class(Empty) {
			if n++; n == 1 {
				first = k
			}
			plain = plain && k == Class(Plain)
		}
		if i > len(query) {
			break
		}
	}
	switch {
	case n <= 1:
		return first
	case plain:
		return Class(Plain)
	}
	return Class(Batch)
}

// Statements calls f with each statement of a multi-statement query and its Class, in
// order, skipping empty ones; it stops when f returns false, and after a statement of
// kind Unknown: the ';' that ended it may be inside a compound statement, where the
// statements after it are not what they seem (IF 0 THEN SELECT 1; COMMIT; END IF). A
// query that cannot be split is one statement of kind Unknown.
func Statements(query string, f func(s string, k Class) bool) {
	for s, i, ok := nextStatement(query, 0); ; s, i, ok = nextStatement(query, i) {
		if !ok {
			f(query, Class(Unknown))
			return
		}
		if k := classifyOne(s); k != Class(Empty) && (!f(s, k) || k == Class(Unknown)) {
			return
		}
		if i > len(query) {
			return
		}
	}
}

// Each calls f with the statements of query, of Class k, and their Classes: query itself
// when k is not of kind Batch, else each of its statements, as Statements does.
func Each(query string, k Class, f func(s string, k Class) bool) {
	if k.Kind() != Batch {
		f(query, k)
		return
	}
	Statements(query, f)
}

// classifyOne returns the Class of the one statement s (a trailing ';' allowed).
func classifyOne(s string) Class {
	l := lexer{s: s}
	k := l.statement()
	if l.bad {
		return Class(Unknown)
	}
	return k
}

// statement returns the Class of the statement l reads, from its first keyword
// (keywords), or Plain for a statement the table does not name.
func (l *lexer) statement() Class {
	w := l.word()
	if w == "" {
		switch {
		case l.end():
			return Class(Empty)
		case l.peek() == '(':
			return Class(Plain) // a parenthesised query
		}
		return Class(Unknown)
	}
	kw := find(w)
	switch {
	case kw == nil:
		if l.peek() == ':' && !strings.HasPrefix(l.s[l.i:], ":=") {
			return Class(Unknown) // a label: a compound statement
		}
		return Class(Plain)
	case kw.read != readNone:
		return l.rest(kw.read)
	case kw.next != nil:
		w = l.word()
		for _, p := range kw.next {
			if is(w, p.word) {
				return Class(p.k)
			}
		}
	}
	return Class(kw.k)
}

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

// skipText returns the index of the last byte of the string, quoted identifier or
// comment that starts at q[i] (an executable comment's text is code: it is not
// skipped), i where none starts there, or -1 when it does not end.
func skipText(q string, i int) int {
	if c := q[i]; c == '\'' || c == '"' || c == '`' {
		if i = skipQuoted(q, i); i < 0 {
			return -1
		}
		return i - 1
	}
	end, exec := commentEnd(q, i)
	switch {
	case end == i || exec:
		return i
	case end < 0:
		return -1
	}
	return end - 1
}

// userVar reports whether the '@' at q[i] starts a user variable (@name, @'name').
func userVar(q string, i int) bool {
	return i+1 < len(q) && (isIdentByte(q[i+1]) || q[i+1] == '\'' || q[i+1] == '"' || q[i+1] == '`')
}

// ParseUse returns the database of a USE statement that succeeded: its name bare,
// backquoted, or double-quoted (a USE "db" succeeds only under ANSI_QUOTES, where that is
// an identifier), with white space and comments anywhere around it, as the server reads
// it. Anything else (an executable comment, a string) is not understood, so it is not
// tracked: tracking garbage would make every later switch fail on "USE <garbage>".
func ParseUse(q string) (string, bool) {
	l := lexer{s: q}
	if !is(l.word(), "use") {
		return "", false
	}
	t := l.token()
	if t == "" || l.bad || !l.end() {
		return "", false
	}
	name := t
	switch t[0] {
	case '`':
		name = unquoteIdent(t)
	case '"':
		name = strings.ReplaceAll(t[1:len(t)-1], `""`, `"`)
	default:
		if !isIdentByte(t[0]) {
			return "", false // a string, or not a name
		}
	}
	return name, name != ""
}

// Class is what Classify reads of a statement: its Kind, the Clauses of a COMMIT or
// ROLLBACK and its Flags, in one word. A prepared statement carries its Class.
type Class uint32

// Of returns the Class of a statement of kind k with clauses c and flags f.
func Of(k Kind, c Clauses, f Flags) Class {
	return Class(k) | Class(c)<<8 | Class(f)<<16
}

// Kind returns the statement's Kind.
func (c Class) Kind() Kind { return Kind(c) }

// Clauses returns the clauses of a COMMIT or ROLLBACK.
func (c Class) Clauses() Clauses { return Clauses(c >> 8) }

// Flags returns the statement's Flags.
func (c Class) Flags() Flags { return Flags(c >> 16) }

// with returns c with flags f added.
func (c Class) with(f Flags) Class { return c | Class(f)<<16 }
