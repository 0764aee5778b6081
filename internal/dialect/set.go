package dialect

// set reads the rest of a SET statement.
func (l *lexer) set() Kind {
	save := l.i
	switch w := l.word(); {
	case is(w, "transaction"):
		return SetTx
	case is(w, "session"), is(w, "local"), is(w, "global"), is(w, "persist"), is(w, "persist_only"):
		if is(l.word(), "transaction") {
			return Plain // SET SESSION|GLOBAL TRANSACTION: for later transactions
		}
	case is(w, "statement"):
		return Unknown // SET STATEMENT ... FOR <statement>
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
// item that matters here, Unknown for several (or for one whose scope is not clear),
// else Plain.
func (l *lexer) assignments() Kind {
	k, n := Plain, 0
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
					return Unknown
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
				k = Implicit // they change the grant tables: MariaDB and MySQL commit first
			}
			_, _, more = l.expr() // the item's rest, up to the next ',' outside parentheses
		}
		if l.bad {
			return Unknown
		}
		if !more {
			break
		}
	}
	if !l.end() {
		return Unknown
	}
	if n > 1 {
		return Unknown
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
func assignmentKind(name, value string, parts, scope, keyword int) (k Kind, ok bool) {
	switch {
	case is(name, "autocommit") || is(name, "completion_type"):
		if scope == scopeGlobal {
			return 0, false // another scope: not this session's
		}
		if scope == scopeAtAt && keyword == scopeGlobal || parts != 1 {
			value = "" // the scope or the value is not clear
		}
		if is(name, "autocommit") {
			return AutocommitKind(value), true
		}
		return CompletionKind(value), true
	case scope == scopeAtAt && (is(name, "transaction_isolation") || is(name, "tx_isolation") ||
		is(name, "transaction_read_only") || is(name, "tx_read_only")):
		return SetTx, true // @@name without a scope: the next transaction only
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

// AutocommitKind is the kind of SET autocommit = v for one value token v: 0, 1, ON, OFF,
// TRUE, FALSE, or 'ON', 'OFF' quoted. Anything else (DEFAULT, a variable, an
// expression) is a value not read here.
func AutocommitKind(v string) Kind {
	quoted := v != unquote(v)
	switch v = unquote(v); {
	case is(v, "on"), !quoted && (v == "1" || is(v, "true")):
		return AutocommitOn
	case is(v, "off"), !quoted && (v == "0" || is(v, "false")):
		return AutocommitOff
	}
	return AutocommitUnknown
}

// CompletionKind is the kind of SET completion_type = v: 0, 1, 2 or NO_CHAIN, CHAIN,
// RELEASE (also quoted).
func CompletionKind(v string) Kind {
	quoted := v != unquote(v)
	switch v = unquote(v); {
	case is(v, "no_chain"), !quoted && v == "0":
		return CompletionNoChain
	case is(v, "chain"), !quoted && v == "1":
		return CompletionChain
	case is(v, "release"), !quoted && v == "2":
		return CompletionRelease
	}
	return CompletionUnknown
}
