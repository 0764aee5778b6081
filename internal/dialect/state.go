package dialect

import "strings"

// SessionState says why statement q leaves state on its session that a new session
// would lack, so that no later transaction of the session can be replayed ("" when it
// does not): a user variable (@name, outside quotes and comments), a named lock
// (GET_LOCK), a temporary table (CREATE or DROP TEMPORARY TABLE, in any statement of a
// multi-statement query with multi). It reads the text only, to its end: an executable
// comment is read as code, and text with a quote or comment that does not end here (a
// string the server ended at a backslash, under NO_BACKSLASH_ESCAPES) is read again as
// code throughout, which may find more than there is.
func SessionState(q string, multi bool) string {
	if why := tempTable(q); why != "" {
		return why
	}
	if multi && strings.IndexByte(q, ';') >= 0 {
		why := ""
		Statements(q, func(s string, _ Class) bool {
			why = tempTable(s)
			return why == ""
		})
		if why != "" {
			return why
		}
	}
	if strings.IndexByte(q, '@') < 0 && !containsFold(q, "get_lock") {
		return "" // the common case, in two scans
	}
	why, whole := sessionUse(q, false)
	if !whole {
		why, _ = sessionUse(q, true)
	}
	return why
}

// sessionUse is SessionState's scan for user variables and GET_LOCK, skipping quotes
// and comments unless raw. whole is false when a quote or comment did not end (the scan
// stopped there).
func sessionUse(q string, raw bool) (why string, whole bool) {
	for i := 0; i < len(q); i++ {
		switch q[i] {
		case '\'', '"', '`', '#', '-', '/':
			if raw {
				continue
			}
			if i = skipText(q, i); i < 0 {
				return "", false
			}
		case '@':
			if i+1 < len(q) && q[i+1] == '@' {
				i++ // a system variable
				continue
			}
			if userVar(q, i) {
				return "a user variable (@" + identAt(q, i+1) + "): a new session has none", true
			}
		case 'g', 'G':
			if namedLock(q, i) {
				return "a named lock (GET_LOCK): it belongs to the session", true
			}
		}
	}
	return "", true
}

// tempTable is SessionState for CREATE [OR REPLACE] TEMPORARY TABLE and DROP TEMPORARY
// TABLE.
func tempTable(q string) string {
	lead := skipLead(q)
	if len(lead) < 6 {
		return ""
	}
	l := lexer{s: lead}
	w := l.word()
	if !is(w, "create") && !is(w, "drop") {
		return ""
	}
	w2 := l.word()
	if is(w2, "or") && is(l.word(), "replace") {
		w2 = l.word()
	}
	if is(w2, "temporary") {
		return "a temporary table (" + strings.ToUpper(w) + " TEMPORARY TABLE): a new session has none"
	}
	return ""
}

// namedLock reports whether a call of GET_LOCK starts at q[i]: the name, then white
// space and comments (which the server skips there too), then '('. An executable or
// unterminated comment after the name counts as a call.
func namedLock(q string, i int) bool {
	if i > 0 && isIdentByte(q[i-1]) || i+8 > len(q) || !is(q[i:i+8], "get_lock") {
		return false
	}
	l := lexer{s: q, i: i + 8}
	return l.peek() == '(' || l.bad
}

// identAt returns the identifier at q[i:] (for a message), at most 32 bytes.
func identAt(q string, i int) string {
	j := i
	for j < len(q) && j-i < 32 && isIdentByte(q[j]) {
		j++
	}
	return q[i:j]
}

// containsFold reports whether s contains sub (lower case ASCII) in any case.
func containsFold(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if is(s[i:i+len(sub)], sub) {
			return true
		}
	}
	return false
}

// Multiple reports whether q holds more than one statement (multiStatements).
func Multiple(q string) bool {
	n := 0
	Statements(q, func(string, Class) bool { n++; return n < 2 })
	return n > 1
}

// LoadsData reports whether q, a statement of kind Plain, is LOAD DATA or LOAD XML,
// whose data is read from a file or the client.
func LoadsData(q string) bool {
	l := lexer{s: q}
	return is(l.word(), "load")
}
