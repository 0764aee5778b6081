// Package hostaddr holds the rules for host addresses, ports, data-centre labels and
// host-list URLs that a DSN (package dsn) and a host list provider's answer
// (internal/cluster) share, so that both accept exactly the same hosts. Functions that
// check return a reason ("" when the input is fine), for the caller to put in its own
// error; a reason never quotes more than the offending part.
package hostaddr

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// MaxLabel is the longest data-centre label, in bytes.
const MaxLabel = 64

// LabelRule says what Label accepts, for messages.
const LabelRule = "1..64 bytes of A-Z a-z 0-9 . _ -"

// Label returns why s cannot be a data-centre label, or "": labels are 1..MaxLabel bytes
// of A-Z a-z 0-9 '.' '_' '-', which need no escaping in a DSN. The reason quotes s unless
// it is too long.
func Label(s string) string {
	if s == "" {
		return "empty dc label"
	}
	if len(s) > MaxLabel {
		return fmt.Sprintf("dc label of %d bytes", len(s))
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '.' || r == '_' || r == '-') {
			return fmt.Sprintf("dc label %q contains %q", s, r)
		}
	}
	return ""
}

// Name returns why name cannot be the name of a listed host, or "". It refuses what a
// DSN could not write back unambiguously (',', '@', '/', brackets, parentheses, and ';'
// and '=', which start host attributes) and blanks or control characters, which no host
// name or IP literal contains; it does not resolve the name.
func Name(name string) string {
	if name == "" {
		return "empty host name"
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		if b <= ' ' || b == 0x7f {
			return fmt.Sprintf("host name contains the blank or control character %q", b)
		}
		if strings.IndexByte(",@/()[];=", b) >= 0 {
			return fmt.Sprintf("host name contains %q", b)
		}
	}
	return ""
}

// Port parses a TCP port: 1 to 5 decimal digits (no sign, no blank), 1..65535.
func Port(s string) (int, bool) {
	if s == "" || len(s) > 5 {
		return 0, false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.Atoi(s)
	return n, err == nil && n >= 1 && n <= 65535
}

// Split parses "name", "name:port", "[ipv6]" or "[ipv6]:port" and checks the name (Name)
// and the port (Port). A missing port gives port 0, or with needPort the reason that it
// is missing.
func Split(addr string, needPort bool) (name string, port int, reason string) {
	if addr == "" {
		if needPort {
			return "", 0, `empty addr: want "host:port"`
		}
		return "", 0, "empty host name"
	}
	var p string
	hasPort := false
	if addr[0] == '[' {
		end := strings.IndexByte(addr, ']')
		if end < 0 {
			return "", 0, "unbalanced brackets: '[' without ']'"
		}
		name = addr[1:end]
		rest := addr[end+1:]
		if strings.ContainsAny(name, "[]") || strings.ContainsAny(rest, "[]") {
			return "", 0, "unbalanced brackets"
		}
		switch {
		case rest == "" && needPort:
			return "", 0, `missing port: want "[address]:port"`
		case rest == "":
		case rest[0] != ':' && needPort:
			return "", 0, `want "[address]:port"`
		case rest[0] != ':':
			return "", 0, `want "[address]" or "[address]:port"`
		default:
			p, hasPort = rest[1:], true
		}
	} else {
		if strings.ContainsAny(addr, "[]") {
			return "", 0, "unbalanced brackets"
		}
		switch strings.Count(addr, ":") {
		case 0:
			name = addr
			if needPort {
				return "", 0, `missing port: want "host:port"`
			}
		case 1:
			name, p, _ = strings.Cut(addr, ":")
			hasPort = true
		default:
			return "", 0, `IPv6 address must be in brackets, as in "[::1]" or "[::1]:3306"`
		}
	}
	if reason := Name(name); reason != "" {
		return "", 0, reason
	}
	if hasPort {
		n, ok := Port(p)
		if !ok {
			return "", 0, fmt.Sprintf("invalid port %s: want a decimal in 1..65535", quote(p))
		}
		port = n
	}
	return name, port, ""
}

// Key identifies a host for duplicate detection: DNS names are case-insensitive, and IP
// literals have several spellings ("::1", "0:0::1", an IPv4-mapped IPv6 address for its
// IPv4 address).
func Key(name string, port int) string {
	k := strings.ToLower(name)
	if a, err := netip.ParseAddr(name); err == nil {
		k = a.Unmap().String()
	}
	return net.JoinHostPort(k, strconv.Itoa(port))
}

// Loopback reports whether host (a URL's Hostname: no brackets, no port) is "localhost"
// (in any case) or a loopback IP literal: 127.0.0.0/8, ::1, or those mapped into IPv6 or
// with a zone. It does not resolve names.
func Loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	a, err := netip.ParseAddr(host)
	return err == nil && a.Unmap().IsLoopback()
}

// maxEcho caps how much of the input a reason quotes, in bytes.
const maxEcho = 100

// Quote quotes s for a message, at most maxEcho bytes of it.
func Quote(s string) string { return quote(s) }

// quote quotes s for a reason, at most maxEcho bytes of it.
func quote(s string) string {
	if len(s) > maxEcho {
		return strconv.Quote(s[:maxEcho]) + "..."
	}
	return strconv.Quote(s)
}

// URL parses s, a host list URL (a DSN's hostsURL), and returns it, or the reason it
// cannot be one: it must be an absolute http or https URL with a host, a valid port and
// no user information, and plain http only to a loopback host unless allowHTTP. The reason
// does not quote s, nor anything from it when it contains '@' (url.Parse's
// messages quote parts of the URL, such as a bad escape in a password).
func URL(s string, allowHTTP bool) (*url.URL, string) {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b <= ' ' || b == 0x7f {
			return nil, "contains a blank or control character (in a DSN, '+' stands for a blank: write a '+' as %2B)"
		}
	}
	u, err := url.Parse(s)
	if err != nil {
		var ue *url.Error
		if !strings.Contains(s, "@") && errors.As(err, &ue) {
			return nil, "not a valid URL: " + ue.Err.Error()
		}
		return nil, "not a valid URL"
	}
	if u.User != nil {
		return nil, "must not carry credentials (user info before '@'): send a bearer token as hostsToken instead"
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return nil, fmt.Sprintf("scheme %q: want https (or http to a loopback host, or with hostsAllowHTTP=true)", u.Scheme)
	}
	if u.Opaque != "" || u.Hostname() == "" {
		return nil, `no host: want an absolute URL such as "https://cfg.example/hosts.json"`
	}
	if p := u.Port(); p != "" {
		if _, ok := Port(p); !ok {
			return nil, fmt.Sprintf("invalid port %q: want a decimal in 1..65535", p)
		}
	}
	if u.Scheme == "http" && !allowHTTP && !Loopback(u.Hostname()) {
		return nil, "plain http to a host that is not a loopback address would send the host list (and hostsToken) unencrypted: use https, or set hostsAllowHTTP=true"
	}
	return u, ""
}

// TokenRule says what Token accepts, for messages.
const TokenRule = "a bearer token (RFC 6750 b64token): 1 or more of A-Z a-z 0-9 - . _ ~ + / then optional '=' padding"

// Token returns why s cannot be a bearer token (RFC 6750 b64token,
// which needs no quoting in an Authorization header and cannot smuggle
// header lines), or "". The reason never includes s, nor its characters or
// length.
func Token(s string) string {
	t := strings.TrimRight(s, "=")
	if t == "" {
		return "empty before the '=' padding"
	}
	for i := 0; i < len(t); i++ {
		b := t[i]
		switch {
		case 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.IndexByte("-._~+/", b) >= 0:
		case b == '=':
			return "'=' before the end (only trailing '=' padding is allowed)"
		case b <= ' ' || b == 0x7f:
			return "contains a blank or control character"
		default:
			return "contains a character outside the b64token set"
		}
	}
	return ""
}

// Opaque returns why addr cannot be the address of a host of a network registered with
// go-sql-driver's RegisterDialContext, or "". Such an address goes to the registered
// dial function verbatim ("db1:3306", Cloud SQL's "project:region:instance"), so only
// what a DSN could not write back unambiguously is refused: ',' (the list separator),
// ';' and '=' (host attributes), parentheses, and blanks or control characters.
func Opaque(addr string) string {
	if addr == "" {
		return "empty address"
	}
	for i := 0; i < len(addr); i++ {
		b := addr[i]
		if b <= ' ' || b == 0x7f {
			return fmt.Sprintf("address contains the blank or control character %q", b)
		}
		if strings.IndexByte(",;=()", b) >= 0 {
			return fmt.Sprintf("address contains %q", b)
		}
	}
	return ""
}

// UnixPath returns why p cannot be the path of a unix socket in a DSN, or "": it must be
// non-empty and hold no ',' (the list separator), parentheses, blanks or control
// characters.
func UnixPath(p string) string {
	if p == "" {
		return "empty socket path"
	}
	for i := 0; i < len(p); i++ {
		b := p[i]
		if b <= ' ' || b == 0x7f {
			return fmt.Sprintf("socket path contains the blank or control character %q", b)
		}
		if strings.IndexByte(",()", b) >= 0 {
			return fmt.Sprintf("socket path contains %q", b)
		}
	}
	return ""
}
