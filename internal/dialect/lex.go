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
