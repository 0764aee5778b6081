package dsn

import (
	"net/url"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// redacted replaces the password and HostsToken in String and GoString. It
// is a fixed text so that the output says neither the secret nor its
// length.
const redacted = "xxxxx"

// FormatDSN returns a DSN that Parse turns back into an equal Config. It
// includes the password: it is for machines (a connection string to hand
// over); use String to log or print.
//
// The address list is the comma-joined Host.String() values (the address,
// then ";dc=LABEL" for a labelled host); the rest comes
// from go-sql-driver's mysql.Config.FormatDSN, followed by our options that
// differ from their defaults, in a fixed order and under their main
// (...Master) names; hostsURL and hostsToken are escaped with
// url.QueryEscape, so the output never relies on Parse's tolerance of raw
// values. Like go-sql-driver's, it cannot express MySQL.TLS, Logger or
// DialFunc, and the guarantee holds for Configs that pass
// Validate and whose MySQL go-sql-driver can format (a user name without
// ':', parameter names without '&' or '=' ...), which all Parse results do.
// A nil MySQL is formatted as mysql.NewConfig(), and a TargetSessionAttrs,
// ReplicaSelection or CausalReads of "" is left out, and so is a
// CausalReadsTimeout of 0 (which Validate accepts only without causal
// reads), a TransactionReplayMaxSize or TransactionReplayAttempts of 0 (valid
// only without transaction replay) and, without transaction replay, a
// TransactionReplayTimeout of 0, so they come back as their defaults
// (mysql.NewConfig(), "any", "round-robin", "none", 1s, 1 MiB, 5, 30s),
// which mean the same.
func (c *Config) FormatDSN() string { return c.format(false) }

// String returns FormatDSN with the password and HostsToken replaced by
// "xxxxx", and so are a HostsURL's query, fragment and user info (which
// Validate rejects), so a Config can be logged; it never contains the
// password or the token. A nil
// receiver gives "<nil>".
func (c *Config) String() string {
	if c == nil {
		return "<nil>"
	}
	return c.format(true)
}

// GoString implements fmt.GoStringer so that %#v prints the redacted DSN,
// as dsn.Config("..."), instead of the fields (whose MySQL holds the
// password, and HostsToken the token).
func (c *Config) GoString() string {
	if c == nil {
		return "(*dsn.Config)(nil)"
	}
	return "dsn.Config(" + strconv.Quote(c.String()) + ")"
}

func (c *Config) format(redact bool) string {
	var m *mysql.Config
	if c.MySQL != nil {
		m = c.MySQL.Clone()
	} else {
		m = mysql.NewConfig()
	}
	// go-sql-driver drops a password without a user name, which Parse
	// accepts (":pw@"), so the user info is written here.
	user, pw := m.User, m.Passwd
	m.User, m.Passwd = "", ""
	if m.Net == "" {
		m.Net = "tcp"
	}
	addrs := make([]string, len(c.Hosts))
	for i, h := range c.Hosts {
		addrs[i] = h.String()
	}
	// go-sql-driver writes net(addr) verbatim, and always when addr is set,
	// so the default 127.0.0.1:3306 and the ";dc=" labels survive too.
	m.Addr = strings.Join(addrs, ",")

	var b strings.Builder
	if user != "" || pw != "" {
		b.WriteString(user)
		if pw != "" {
			b.WriteByte(':')
			if redact {
				b.WriteString(redacted)
			} else {
				b.WriteString(pw)
			}
		}
		b.WriteByte('@')
	}
	rest := m.FormatDSN()
	b.WriteString(rest)

	sep := byte('?')
	if strings.IndexByte(rest[strings.LastIndexByte(rest, '/')+1:], '?') >= 0 {
		sep = '&'
	}
	// Our options that differ from their defaults, in table order, under
	// their main keys.
	for i := range options {
		o := &options[i]
		if v := o.get(c); !o.isDefault(c, v) {
			b.WriteByte(sep)
			sep = '&'
			b.WriteString(o.key + "=" + o.kind.format(v, redact))
		}
	}
	return b.String()
}

// redactURL returns a HostsURL for String: its query and fragment, which may
// carry a key, are replaced by "xxxxx" (as the host list provider prints it);
// user info, which Validate rejects but a hand-built Config may hold, is
// replaced by "xxxxx" too (a user name can be a token); a URL that does not
// parse is replaced whole when it has '@', '?' or '#'.
func redactURL(s string) string {
	if !strings.ContainsAny(s, "@?#") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return redacted
	}
	if u.User != nil {
		u.User = url.User(redacted)
	}
	if u.RawQuery != "" || u.ForceQuery {
		u.RawQuery, u.ForceQuery = redacted, false
	}
	if u.Fragment != "" {
		u.Fragment, u.RawFragment = redacted, ""
	}
	return u.String()
}
