package conn

import (
	"slices"
	"strings"

	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

// Statement kinds: what a statement does to its session's transaction state when it
// succeeds (see txState.apply; a failure is judged by txState.verdict and
// txState.failed). classify computes them; a prepared statement carries its kind
// (stmt.Kind). The low byte is the class, the bits above are COMMIT/ROLLBACK clauses.
const (
	kPlain      stmt.Kind = iota // no effect (SELECT, INSERT, SAVEPOINT, ROLLBACK TO, XA END): with autocommit off it opens a transaction
	kUse                         // USE db: also the current database
	kBegin                       // BEGIN [WORK], START TRANSACTION ...: commits an open transaction and opens one
	kXAStart                     // XA START|BEGIN: opens an XA transaction
	kXAPrepare                   // XA PREPARE: the XA transaction now survives its session
	kXACommit                    // XA COMMIT: ends it; completion_type does not apply
	kXARollback                  // XA ROLLBACK
	kCommit                      // COMMIT [WORK] [AND [NO] CHAIN] [[NO] RELEASE]
	kRollback                    // ROLLBACK [WORK] [AND [NO] CHAIN] [[NO] RELEASE]
	kACOn                        // SET autocommit = 1: commits when it was 0
	kACOff                       // SET autocommit = 0
	kACUnknown                   // SET autocommit = <a value not read here>
	kCTNoChain                   // SET completion_type = 0 (NO_CHAIN)
	kCTChain                     // SET completion_type = 1 (CHAIN)
	kCTRelease                   // SET completion_type = 2 (RELEASE)
	kCTUnknown                   // SET completion_type = <a value not read here>
	kSetTx                       // SET TRANSACTION ...: characteristics of the next transaction
	kImplicit                    // commits implicitly: DDL, GRANT, FLUSH, ...
	kMaybe                       // may commit implicitly: ALTER TABLE (not of a temporary table on MariaDB), TRUNCATE, replication control
	kLockTables                  // LOCK TABLES: commits, and holds table locks
	kLock                        // other session locks: FLUSH TABLES ... WITH READ LOCK, LOCK INSTANCE
	kUnlock                      // UNLOCK TABLES|INSTANCE
	kUnknown                     // CALL, EXECUTE, compound statements, executable comments, what cannot be read
	kBatch                       // several statements (multiStatements): each applies in turn
	kEmpty                       // only white space and comments
	kSession                     // not a statement: SetReadOnly, or the PREPARE of a statement that ends a lost transaction
	kTxEnd                       // not a statement: Tx.Commit, Tx.Rollback (the Tx proxy decides)

	kClass stmt.Kind = 0xff // the class bits

	// The clauses of COMMIT and ROLLBACK; where a statement has neither AND CHAIN nor
	// AND NO CHAIN (RELEASE nor NO RELEASE), completion_type decides.
	fChain     stmt.Kind = 1 << 8
	fNoChain   stmt.Kind = 1 << 9
	fRelease   stmt.Kind = 1 << 10
	fNoRelease stmt.Kind = 1 << 11

	// Flags of plain statements that read intent must not take to a replica (route):
	// fSession, a statement that changes the session's own state (SET of a variable,
	// the names or the role; CREATE or DROP TEMPORARY TABLE), which the replica
	// sessions would never see; fTemp, one that creates or drops a temporary table,
	// which only this session has (see hold).
	fSession stmt.Kind = 1 << 12
	fTemp    stmt.Kind = 1 << 13

	// Flags of any statement, from its text (heldFlags): fHolds, it names a user
	// variable or calls GET_LOCK, RELEASE_LOCK or RELEASE_ALL_LOCKS (see hold);
	// fLastID, fRowCount and fFoundRows, it reads LAST_INSERT_ID(), ROW_COUNT() or
	// FOUND_ROWS(), values of the session's last statement (fReads: any of them). Such
	// a statement runs on the primary session (route), and never as the first on a
	// session the connection moved to (ready).
	fHolds     stmt.Kind = 1 << 14
	fLastID    stmt.Kind = 1 << 15
	fRowCount  stmt.Kind = 1 << 16
	fFoundRows stmt.Kind = 1 << 17
	fReads               = fLastID | fRowCount | fFoundRows
)

// classify returns the kind of query: of its one statement, or kBatch when multi
// (multiStatements) is set and query holds several that are not all plain. Without
// multiStatements only the first statement exists for the server.
//
// It is on every statement's path: a query that starts with SELECT, INSERT, UPDATE or
// DELETE (no leading space or comment) is recognised with one comparison of its first
// six bytes, and two byte searches for what it does to the state its session holds
// (heldFlags, here by hand: it is too big to inline).
func classify(query string, multi bool) stmt.Kind {
	if !multi && plainStart(query) {
		if strings.IndexByte(query, '@') < 0 && strings.IndexByte(query, '(') < 0 {
			return kPlain
		}
		return kPlain | heldFlagsSlow(query)
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

// classifySlow is classify without the shortcut.
func classifySlow(query string, multi bool) stmt.Kind {
	return classifyStatements(query, multi) | heldFlags(query)
}

// classifyStatements is classifySlow without the flags of heldFlags.
func classifyStatements(query string, multi bool) stmt.Kind {
	if !multi || strings.IndexByte(query, ';') < 0 {
		if plainStart(query) {
			return kPlain
		}
		return classifyOne(query)
	}
	first, n, plain := kEmpty, 0, true
	for s, i, ok := nextStatement(query, 0); ; s, i, ok = nextStatement(query, i) {
		if !ok {
			return kUnknown
		}
		if k := classifyOne(s); k != kEmpty {
			if n++; n == 1 {
				first = k
			}
			plain = plain && k == kPlain
		}
		if i > len(query) {
			break
		}
	}
	switch {
	case n <= 1:
		return first
	case plain:
		return kPlain
	}
	return kBatch
}

// statements calls f with each statement of a multi-statement query and its kind, in
// order, skipping empty ones; it stops when f returns false, and after a statement of
// kind kUnknown: the ';' that ended it may be inside a compound statement, where the
// statements after it are not what they seem (IF 0 THEN SELECT 1; COMMIT; END IF). A
// query that cannot be split is one statement of kind kUnknown.
func statements(query string, f func(s string, k stmt.Kind) bool) {
	for s, i, ok := nextStatement(query, 0); ; s, i, ok = nextStatement(query, i) {
		if !ok {
			f(query, kUnknown)
			return
		}
		if k := classifyOne(s); k != kEmpty && (!f(s, k) || k == kUnknown) {
			return
		}
		if i > len(query) {
			return
		}
	}
}

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
		case '#':
			i = lineEnd(q, i)
		case '-':
			if dashComment(q, i) {
				i = lineEnd(q, i)
			} else {
				i++
			}
		case '/':
			if i+1 >= len(q) || q[i+1] != '*' {
				i++
				continue
			}
			end := strings.Index(q[i+2:], "*/")
			if end < 0 || executable(q[i+2:]) && strings.IndexByte(q[i+2:i+2+end], ';') >= 0 {
				return "", 0, false
			}
			i += 2 + end + 2
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
		switch c := l.s[l.i]; {
		case isSpace(c):
			l.i++
		case c == '#' || c == '-' && dashComment(l.s, l.i):
			l.i = lineEnd(l.s, l.i)
		case c == '/' && l.i+1 < len(l.s) && l.s[l.i+1] == '*':
			rest := l.s[l.i+2:]
			end := strings.Index(rest, "*/")
			if end < 0 || executable(rest) {
				l.bad, l.i = true, len(l.s)
				return
			}
			l.i += 2 + end + 2
		default:
			return
		}
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

// classifyOne returns the kind of the one statement s (a trailing ';' allowed).
func classifyOne(s string) stmt.Kind {
	l := lexer{s: s}
	k := l.statement()
	if l.bad {
		return kUnknown
	}
	return k
}

// statement returns the kind of the statement l reads, from its first keyword
// (keywords), or kPlain for a statement the table does not name.
func (l *lexer) statement() stmt.Kind {
	w := l.word()
	if w == "" {
		switch {
		case l.end():
			return kEmpty
		case l.peek() == '(':
			return kPlain // a parenthesised query
		}
		return kUnknown
	}
	kw := find(w)
	switch {
	case kw == nil:
		if l.peek() == ':' && !strings.HasPrefix(l.s[l.i:], ":=") {
			return kUnknown // a label: a compound statement
		}
		return kPlain
	case kw.read != readNone:
		return l.rest(kw.read)
	case kw.next != nil:
		w = l.word()
		for _, p := range kw.next {
			if is(w, p.word) {
				return p.k
			}
		}
	}
	return kw.k
}

// A keyword is what a statement's first word tells of its kind: k, or with next the
// kind its second word picks (k for any other), or with read the method that reads the
// rest of the statement (rest).
type keyword struct {
	k    stmt.Kind
	next []pick
	read reader
}

// A pick is a second word (lower case) and the kind it picks.
type pick struct {
	word string
	k    stmt.Kind
}

// The readers of a keyword's rest: named, not func values, because an indirect call
// would move every statement's lexer to the heap.
type reader uint8

const (
	readNone reader = iota
	readBegin
	readCommit
	readRollback
	readSet
	readFlush
	readCreate
	readMaintenance
)

// rest reads the rest of the statement with r.
func (l *lexer) rest(r reader) stmt.Kind {
	switch r {
	case readBegin:
		return l.begin()
	case readCommit:
		return l.clauses(kCommit)
	case readRollback:
		return l.rollback()
	case readSet:
		return l.setStatement()
	case readFlush:
		return l.flush()
	case readCreate:
		return l.create()
	case readMaintenance:
		return l.maintenance()
	}
	return kUnknown // readNone: not reached
}

// keywords is the statement table, by first keyword in lower case (see find).
var keywords = map[string]keyword{
	"select": {k: kPlain}, "insert": {k: kPlain}, "update": {k: kPlain}, "delete": {k: kPlain},
	"replace": {k: kPlain}, "savepoint": {k: kPlain},
	"use":   {k: kUse},
	"begin": {read: readBegin},
	"start": {k: kUnknown, next: []pick{
		{"transaction", kBegin},
		{"slave", kMaybe}, {"replica", kMaybe}, {"group_replication", kMaybe}, {"all", kMaybe},
	}},
	"commit":   {read: readCommit},
	"rollback": {read: readRollback},
	"xa": {k: kUnknown, next: []pick{
		{"start", kXAStart}, {"begin", kXAStart},
		{"end", kPlain}, {"recover", kPlain},
		{"prepare", kXAPrepare},
		{"commit", kXACommit},
		{"rollback", kXARollback},
	}},
	"release": {k: kUnknown, next: []pick{{"savepoint", kPlain}}},
	"set":     {read: readSet},
	"lock":    {k: kLock, next: []pick{{"table", kLockTables}, {"tables", kLockTables}}},
	"unlock":  {k: kUnlock},
	"flush":   {read: readFlush},
	"create":  {read: readCreate},
	"drop": {k: kImplicit, next: []pick{
		{"temporary", kPlain | fSession | fTemp},
		{"prepare", kPlain},
	}},
	"alter": {k: kImplicit, next: []pick{ // MariaDB: not of a temporary table or sequence
		{"table", kMaybe}, {"online", kMaybe}, {"ignore", kMaybe}, {"sequence", kMaybe},
		{"instance", kMaybe}, {"resource", kMaybe},
	}},
	"rename": {k: kImplicit}, "grant": {k: kImplicit}, "revoke": {k: kImplicit},
	"install": {k: kImplicit}, "uninstall": {k: kImplicit},
	"truncate": {k: kMaybe}, "change": {k: kMaybe}, "stop": {k: kMaybe}, "reset": {k: kMaybe},
	"backup": {k: kMaybe}, "cache": {k: kMaybe}, "import": {k: kMaybe},
	"load":    {k: kPlain, next: []pick{{"index", kMaybe}}}, // LOAD DATA | XML: a commit only on NDB
	"analyze": {read: readMaintenance}, "optimize": {read: readMaintenance},
	"repair": {read: readMaintenance}, "check": {read: readMaintenance},
	"call": {k: kUnknown}, "execute": {k: kUnknown}, "if": {k: kUnknown}, "while": {k: kUnknown},
	"loop": {k: kUnknown}, "repeat": {k: kUnknown}, "case": {k: kUnknown}, "declare": {k: kUnknown},
	"for": {k: kUnknown},
}

// initials indexes keywords by the first letter of their word: find compares a few
// lengths, and hashes nothing (classify reads every statement that does not start with
// SELECT, INSERT, UPDATE or DELETE).
var initials = func() (t [26][]spelled) {
	for w, kw := range keywords {
		t[w[0]-'a'] = append(t[w[0]-'a'], spelled{w, kw})
	}
	for _, words := range t {
		slices.SortFunc(words, func(a, b spelled) int { return strings.Compare(a.word, b.word) }) // one order every run
	}
	return t
}()

// spelled is a keyword with its word (lower case).
type spelled struct {
	word string
	keyword
}

// find returns the keyword w is, in any ASCII case (as is compares), or nil. w is not
// empty. b|0x20 lowers an ASCII letter and maps no other byte onto one.
func find(w string) *keyword {
	if c := w[0] | 0x20; 'a' <= c && c <= 'z' {
		t := initials[c-'a']
		for i := range t {
			if is(w, t[i].word) {
				return &t[i].keyword
			}
		}
	}
	return nil
}

// begin reads the rest of BEGIN [WORK].
func (l *lexer) begin() stmt.Kind {
	w := l.word()
	if is(w, "work") {
		w = l.word()
	}
	if w == "" && l.end() {
		return kBegin
	}
	return kUnknown // BEGIN NOT ATOMIC: a MariaDB compound statement
}

// rollback reads the rest of ROLLBACK: ROLLBACK [WORK] TO SAVEPOINT, or its clauses.
func (l *lexer) rollback() stmt.Kind {
	save := l.i
	w := l.word()
	if is(w, "work") {
		w = l.word()
	}
	if is(w, "to") {
		return kPlain // ROLLBACK TO SAVEPOINT: the transaction stays open
	}
	l.i = save
	return l.clauses(kRollback)
}

// setStatement reads the rest of SET.
func (l *lexer) setStatement() stmt.Kind {
	k := l.set()
	if k == kPlain {
		k |= fSession // SET NAMES, SET @x, SET time_zone...: the session's own state
	}
	return k
}

// flush reads the rest of FLUSH.
func (l *lexer) flush() stmt.Kind {
	for t := l.token(); t != ""; t = l.token() {
		if is(t, "lock") || is(t, "export") {
			return kLock // FLUSH TABLES ... WITH READ LOCK | FOR EXPORT
		}
	}
	return kImplicit
}

// create reads the rest of CREATE [OR REPLACE].
func (l *lexer) create() stmt.Kind {
	w := l.word()
	if is(w, "or") && is(l.word(), "replace") {
		w = l.word()
	}
	if is(w, "temporary") {
		return kPlain | fSession | fTemp // CREATE TEMPORARY TABLE does not commit
	}
	return kImplicit
}

// maintenance reads the rest of ANALYZE, OPTIMIZE, REPAIR and CHECK.
func (l *lexer) maintenance() stmt.Kind {
	w := l.word()
	if is(w, "no_write_to_binlog") || is(w, "local") {
		w = l.word()
	}
	if is(w, "table") || is(w, "tables") {
		return kImplicit
	}
	return kPlain // MariaDB's ANALYZE SELECT, CHECK VIEW ...: not known to commit
}

// clauses reads the rest of COMMIT or ROLLBACK: [WORK] [AND [NO] CHAIN] [[NO] RELEASE].
func (l *lexer) clauses(k stmt.Kind) stmt.Kind {
	w := l.word()
	if is(w, "work") {
		w = l.word()
	}
	if is(w, "and") {
		if w = l.word(); is(w, "no") {
			k |= fNoChain
			w = l.word()
		} else {
			k |= fChain
		}
		if !is(w, "chain") {
			return kUnknown
		}
		w = l.word()
	}
	switch {
	case is(w, "no"):
		if !is(l.word(), "release") {
			return kUnknown
		}
		k |= fNoRelease
		w = l.word()
	case is(w, "release"):
		k |= fRelease
		w = l.word()
	}
	if w != "" || !l.end() || k&fChain != 0 && k&fRelease != 0 {
		return kUnknown // AND CHAIN RELEASE: the server refuses it
	}
	return k
}

// set reads the rest of a SET statement.
func (l *lexer) set() stmt.Kind {
	save := l.i
	switch w := l.word(); {
	case is(w, "transaction"):
		return kSetTx
	case is(w, "session"), is(w, "local"), is(w, "global"), is(w, "persist"), is(w, "persist_only"):
		if is(l.word(), "transaction") {
			return kPlain // SET SESSION|GLOBAL TRANSACTION: for later transactions
		}
	case is(w, "statement"):
		return kUnknown // SET STATEMENT ... FOR <statement>
	}
	l.i = save
	return l.assignments()
}

// Variable scopes in a SET statement.
const (
	scopeNone    = iota // no keyword yet: the session
	scopeSession        // SESSION, LOCAL, @@session., @@local.
	scopeGlobal         // GLOBAL, PERSIST, PERSIST_ONLY, @@global. ...: not this session
	scopeAtAt           // @@name without a scope
)

func scopeOf(w string) int {
	switch {
	case is(w, "session"), is(w, "local"):
		return scopeSession
	case is(w, "global"), is(w, "persist"), is(w, "persist_only"):
		return scopeGlobal
	}
	return scopeNone
}

// The items of a SET list (setItem).
const (
	itemVar         = iota // var = expr
	itemNames              // NAMES x [COLLATE y], CHARACTER SET x, CHARSET x
	itemRole               // ROLE r
	itemDefaultRole        // DEFAULT ROLE r [FOR u]: commits implicitly
	itemPassword           // PASSWORD [FOR u] = p: commits implicitly
)

// assignments reads the list of a SET statement, every item of it: var = expr, and in
// any place the items that assign no variable (setItem), which MariaDB takes anywhere
// in the list (SET NAMES utf8mb4, autocommit = 0). A scope keyword holds for the
// assignments after it until the next one (MySQL's rule). It returns the kind of the one
// item that matters here, kUnknown for several (or for one whose scope is not clear),
// else kPlain.
func (l *lexer) assignments() stmt.Kind {
	k, n := kPlain, 0
	keyword := scopeNone // the last scope keyword
	roles := false       // after ROLE or DEFAULT ROLE: MySQL lists their roles and users with commas
	for {
		more := false
		switch item := l.setItem(); item {
		case itemVar:
			last, scope, name, user := l.variable(keyword)
			keyword = last
			if op := l.token(); op != "=" && op != ":=" {
				if !roles {
					return kUnknown
				}
				_, _, more = l.expr() // one more role or user of MySQL's SET [DEFAULT] ROLE
				break
			}
			var value string
			var parts int
			value, parts, more = l.expr()
			if ak, ok := assignmentKind(name, value, parts, scope, keyword); ok && !user {
				n++
				k = ak
			}
		default:
			roles = roles || item == itemRole || item == itemDefaultRole
			if item == itemDefaultRole || item == itemPassword {
				n++
				k = kImplicit // they change the grant tables: MariaDB and MySQL commit first
			}
			_, _, more = l.expr() // the item's rest, up to the next ',' outside parentheses
		}
		if l.bad {
			return kUnknown
		}
		if !more {
			break
		}
	}
	if !l.end() {
		return kUnknown
	}
	if n > 1 {
		return kUnknown
	}
	return k
}

// setItem reads the keywords that start an item of a SET list naming no variable, and
// returns which item it is; for a variable's assignment it returns itemVar without
// moving. A scope keyword before such an item is a syntax error: it is read as a
// variable's.
func (l *lexer) setItem() int {
	switch l.peek() | 0x20 { // the first letters of those keywords: most variables take none
	case 'n', 'c', 'r', 'd', 'p':
	default:
		return itemVar
	}
	save := l.i
	switch w := l.word(); {
	case is(w, "names"), is(w, "charset"):
		return itemNames
	case is(w, "character") && is(l.word(), "set"):
		return itemNames
	case is(w, "role"):
		return itemRole
	case is(w, "default") && is(l.word(), "role"):
		return itemDefaultRole
	case is(w, "password"):
		return itemPassword
	}
	l.i = save
	return itemVar
}

// variable reads the variable of one assignment, with the scope keyword before it if
// any; keyword is the last scope keyword so far. It returns the last one after it, the
// variable's scope (@@scope.name, @@name, or the keyword's) and name ("" for a
// structured variable, cache.name), and whether it is a user variable (@name).
func (l *lexer) variable(keyword int) (last, scope int, name string, user bool) {
	t := l.token()
	if s := scopeOf(t); s != scopeNone {
		keyword = s
		t = l.token()
	}
	scope = keyword
	if t == "@" {
		if t = l.token(); t != "@" {
			user = true // @name: a user variable
		} else {
			scope, t = scopeAtAt, l.token()
			if l.peek() == '.' {
				if s := scopeOf(t); s != scopeNone {
					l.token()
					scope, t = s, l.token()
				}
			}
		}
	}
	if l.peek() == '.' {
		l.token()
		l.token()
		t = "" // a structured variable (default.key_buffer_size): a key cache's, no session's
	}
	return keyword, scope, unquoteIdent(t), user
}

// assignmentKind returns the kind of an assignment to the system variable name in scope
// (keyword: the last scope keyword) of a value whose first token is value, in parts
// tokens; ok is false for one that does not matter here (another variable, or another
// scope than this session's).
func assignmentKind(name, value string, parts, scope, keyword int) (k stmt.Kind, ok bool) {
	switch {
	case is(name, "autocommit") || is(name, "completion_type"):
		if scope == scopeGlobal {
			return 0, false // another scope: not this session's
		}
		if scope == scopeAtAt && keyword == scopeGlobal || parts != 1 {
			value = "" // the scope or the value is not clear
		}
		if is(name, "autocommit") {
			return autocommitKind(value), true
		}
		return completionKind(value), true
	case scope == scopeAtAt && (is(name, "transaction_isolation") || is(name, "tx_isolation") ||
		is(name, "transaction_read_only") || is(name, "tx_read_only")):
		return kSetTx, true // @@name without a scope: the next transaction only
	}
	return 0, false
}

// expr reads one assigned value up to the next ',' outside parentheses (more: another
// assignment follows) or the end. It returns the value's first token and how many
// tokens it has.
func (l *lexer) expr() (first string, parts int, more bool) {
	depth := 0
	for {
		save := l.i
		t := l.token()
		switch {
		case t == "":
			return first, parts, false
		case depth == 0 && t == ",":
			return first, parts, true
		case depth == 0 && t == ";":
			l.i = save
			return first, parts, false
		case t == "(":
			depth++
		case t == ")":
			depth--
		}
		if parts == 0 {
			first = t
		}
		parts++
	}
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

// autocommitKind is the kind of SET autocommit = v for one value token v: 0, 1, ON, OFF,
// TRUE, FALSE, or 'ON', 'OFF' quoted. Anything else (DEFAULT, a variable, an
// expression) is a value not read here.
func autocommitKind(v string) stmt.Kind {
	quoted := v != unquote(v)
	switch v = unquote(v); {
	case is(v, "on"), !quoted && (v == "1" || is(v, "true")):
		return kACOn
	case is(v, "off"), !quoted && (v == "0" || is(v, "false")):
		return kACOff
	}
	return kACUnknown
}

// completionKind is the kind of SET completion_type = v: 0, 1, 2 or NO_CHAIN, CHAIN,
// RELEASE (also quoted).
func completionKind(v string) stmt.Kind {
	quoted := v != unquote(v)
	switch v = unquote(v); {
	case is(v, "no_chain"), !quoted && v == "0":
		return kCTNoChain
	case is(v, "chain"), !quoted && v == "1":
		return kCTChain
	case is(v, "release"), !quoted && v == "2":
		return kCTRelease
	}
	return kCTUnknown
}

// isSpace reports whether b is white space between SQL tokens (the lexer's, and every
// scanner's of this package).
func isSpace(b byte) bool {
	return b == ' ' || b == '\t' || b == '\n' || b == '\r' || b == '\f' || b == '\v'
}
