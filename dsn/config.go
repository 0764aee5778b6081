package dsn

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Defaults of the failover options, used by NewConfig and by Parse for options
// the DSN does not give. They are Connector/J 5.1's defaults except
// DefaultHostTimeout, which has no Connector/J counterpart.
const (
	// DefaultRetriesAllDown is the number of passes over the host list when
	// every host is down (count), as Connector/J's retriesAllDown.
	DefaultRetriesAllDown = 120
	// DefaultSecondsBeforeRetryMaster is the time on a secondary before trying
	// the primary again (seconds), as Connector/J's secondsBeforeRetryMaster.
	DefaultSecondsBeforeRetryMaster = 30
	// DefaultQueriesBeforeRetryMaster is the number of statements on a
	// secondary before trying the primary again (count), as Connector/J's
	// queriesBeforeRetryMaster.
	DefaultQueriesBeforeRetryMaster = 50
	// DefaultHostTimeout bounds one host attempt (dial, handshake, session
	// set-up). Five seconds lets a list of several dead hosts be walked well
	// within a typical request deadline.
	DefaultHostTimeout = 5 * time.Second
)

// defaultPort is MySQL's registered port, the one go-sql-driver adds too.
const defaultPort = 3306

// Host is one server of the list. Hosts[0] of a Config is the primary.
type Host struct {
	Name string // host name or IP literal, IPv6 WITHOUT brackets (e.g. "::1")
	Port int    // TCP port, 1..65535; Parse fills 3306 when the DSN gives none
}

// Addr returns the address in the form net.Dial and go-sql-driver's
// Config.Addr take: "db1:3306", or "[::1]:3308" for an IPv6 literal.
func (h Host) Addr() string { return net.JoinHostPort(h.Name, strconv.Itoa(h.Port)) }

// String returns Addr, so host lists print the way they are written in a DSN.
func (h Host) String() string { return h.Addr() }

// Config is a parsed failover DSN: the host list, the failover options and,
// in MySQL, everything else for go-sql-driver.
//
// Build one with Parse or NewConfig (a zero Config has no defaults and no
// MySQL config), and check a hand-built one with Validate. Methods do not
// modify the Config; it is safe for concurrent reads.
type Config struct {
	// Hosts is ordered: Hosts[0] is the primary, the rest are secondaries in
	// order of preference (Connector/J's failover order). At least one.
	Hosts []Host

	// RetriesAllDown is the number of passes over the whole host list when
	// every host is down, before a connection attempt gives up (count >= 0,
	// default DefaultRetriesAllDown, DSN retriesAllDown, as Connector/J 5.1's
	// retriesAllDown). 0 is treated as one pass by package failover.
	RetriesAllDown int

	// SecondsBeforeRetryMaster is the time on a secondary after which the
	// pool tries to fall back to the primary (seconds >= 0, default
	// DefaultSecondsBeforeRetryMaster, 0 disables this trigger). DSN
	// secondsBeforeRetryMaster or its alias secondsBeforeRetrySource
	// (Connector/J 8.0.23 renamed ...Master to ...Source; both are accepted).
	SecondsBeforeRetryMaster int

	// QueriesBeforeRetryMaster is the number of statements on a secondary
	// after which the pool tries to fall back to the primary (count >= 0,
	// default DefaultQueriesBeforeRetryMaster, 0 disables this trigger; both
	// triggers 0 disables fall-back, as in Connector/J). DSN
	// queriesBeforeRetryMaster or its alias queriesBeforeRetrySource.
	QueriesBeforeRetryMaster int

	// FailOverReadOnly makes sessions on a secondary read-only (default true,
	// DSN failOverReadOnly, as Connector/J's failOverReadOnly): a secondary is
	// usually a replica, and writes there would be lost or diverge.
	FailOverReadOnly bool

	// ReadOnly makes every session start read-only, on the primary too
	// (default false, DSN readOnly, as JDBC Connection.setReadOnly(true)).
	ReadOnly bool

	// HostTimeout bounds every host attempt: dial, handshake and session
	// set-up (duration >= 0, default DefaultHostTimeout, DSN hostTimeout in
	// time.ParseDuration syntax such as "5s" or "500ms"). 0 means no per-host
	// bound, only the caller's context. It exists because go-sql-driver's
	// timeout only bounds the TCP dial, and a host that accepts the
	// connection but never answers would otherwise stall the walk.
	HostTimeout time.Duration

	// MySQL holds every other setting, given to go-sql-driver for each host.
	// Its Net and Addr are not used for hosts: HostConfig sets them per host
	// (Parse leaves Addr at the primary). Parse leaves MySQL.TLS nil and keeps
	// the name in MySQL.TLSConfig, so that go-sql-driver's NewConnector
	// derives the TLS ServerName from each host's own name; a hand-built TLS
	// with a non-empty ServerName is used for every host as it is.
	MySQL *mysql.Config
}

// NewConfig returns a Config with the documented defaults, no hosts, and
// MySQL from mysql.NewConfig(). Set Hosts before use.
func NewConfig() *Config {
	return &Config{
		RetriesAllDown:           DefaultRetriesAllDown,
		SecondsBeforeRetryMaster: DefaultSecondsBeforeRetryMaster,
		QueriesBeforeRetryMaster: DefaultQueriesBeforeRetryMaster,
		FailOverReadOnly:         true,
		HostTimeout:              DefaultHostTimeout,
		MySQL:                    mysql.NewConfig(),
	}
}

// Clone returns a deep copy: a new Hosts slice and MySQL from
// mysql.Config.Clone (which shares only what go-sql-driver shares, such as
// Logger, DialFunc and Loc). A nil receiver gives nil.
func (c *Config) Clone() *Config {
	if c == nil {
		return nil
	}
	cp := *c
	if c.Hosts != nil {
		cp.Hosts = append([]Host(nil), c.Hosts...)
	}
	if c.MySQL != nil {
		cp.MySQL = c.MySQL.Clone()
	}
	return &cp
}

// HostConfig returns the go-sql-driver config for Hosts[i], ready for
// mysql.NewConnector: a Clone of MySQL with Net "tcp" (or the configured
// tcp4/tcp6) and Addr Hosts[i].Addr(). Changing it does not change c. It
// panics if i is out of range, like a slice index; a nil MySQL is taken as
// mysql.NewConfig().
func (c *Config) HostConfig(i int) *mysql.Config {
	h := c.Hosts[i]
	var m *mysql.Config
	if c.MySQL != nil {
		m = c.MySQL.Clone()
	} else {
		m = mysql.NewConfig()
	}
	m.Net = tcpNet(m.Net)
	m.Addr = h.Addr()
	return m
}

// tcpNet maps the configured network to the one to dial: go-sql-driver treats
// "" as "tcp", and Validate has rejected anything that is not TCP.
func tcpNet(n string) string {
	if n == "tcp4" || n == "tcp6" {
		return n
	}
	return "tcp"
}

// Validate checks a Config, typically a hand-built one (Parse already
// returns valid Configs): Hosts non-empty with valid, distinct names and ports
// 1..65535 (ErrInvalidHost); counts, seconds and HostTimeout >= 0, and no
// failover option in MySQL.Params under any spelling, where go-sql-driver
// would send it to the server as a system variable (ErrInvalidOption);
// MySQL non-nil (ErrInvalidOption) with Net "", tcp, tcp4 or tcp6
// (ErrNotTCP). It does not modify c and never includes the password in an
// error.
func (c *Config) Validate() error {
	if c == nil {
		return newError(ErrInvalidOption, "dsn: nil *Config")
	}
	if len(c.Hosts) == 0 {
		return newError(ErrInvalidHost, "dsn: no hosts: Config.Hosts needs at least the primary")
	}
	seen := make(map[string]int, len(c.Hosts))
	for i, h := range c.Hosts {
		where := fmt.Sprintf("dsn: Hosts[%d] (%q, port %d)", i, h.Name, h.Port)
		if reason := checkHostName(h.Name); reason != "" {
			return newError(ErrInvalidHost, where+": "+reason)
		}
		if h.Port < 1 || h.Port > 65535 {
			return newError(ErrInvalidHost, where+": port out of range 1..65535")
		}
		k := hostKey(h)
		if j, dup := seen[k]; dup {
			return newError(ErrInvalidHost, fmt.Sprintf("%s: duplicate of Hosts[%d]", where, j))
		}
		seen[k] = i
	}
	for _, f := range []struct {
		name string
		v    int
		unit string
	}{
		{"RetriesAllDown", c.RetriesAllDown, "a count"},
		{"SecondsBeforeRetryMaster", c.SecondsBeforeRetryMaster, "seconds"},
		{"QueriesBeforeRetryMaster", c.QueriesBeforeRetryMaster, "a count"},
	} {
		if f.v < 0 {
			return newError(ErrInvalidOption, fmt.Sprintf("dsn: %s is %d: want %s >= 0", f.name, f.v, f.unit))
		}
	}
	if c.HostTimeout < 0 {
		return newError(ErrInvalidOption, fmt.Sprintf("dsn: HostTimeout is %v: want a duration >= 0 (0: no per-host bound)", c.HostTimeout))
	}
	if c.MySQL == nil {
		return newError(ErrInvalidOption, "dsn: Config.MySQL is nil: start from NewConfig or Parse")
	}
	if err := checkNet(c.MySQL.Net); err != nil {
		return err
	}
	for k := range c.MySQL.Params {
		if o := foldOption(k); o != nil {
			return newError(ErrInvalidOption, fmt.Sprintf(
				"dsn: MySQL.Params[%q] is the failover option %q: set Config.%s instead (go-sql-driver would send it to the server as a system variable)",
				k, o.key, o.field))
		}
	}
	return nil
}

// checkNet accepts the networks that reach a TCP host.
func checkNet(n string) error {
	switch n {
	case "", "tcp", "tcp4", "tcp6":
		return nil
	}
	// A "net" that is not a plain word is more likely a mangled
	// user:password (a DSN without '@'), so it is not echoed.
	if len(n) <= 16 && isWord(n) {
		return newError(ErrNotTCP, fmt.Sprintf("dsn: network %q not supported: failover needs TCP hosts (tcp, tcp4 or tcp6)", n))
	}
	return newError(ErrNotTCP, "dsn: unsupported network before the address list: failover needs TCP hosts (tcp, tcp4 or tcp6)")
}

func isWord(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9') {
			return false
		}
	}
	return s != ""
}

// checkHostName returns why name cannot be a host of the list, or "". It
// refuses what FormatDSN could not write back unambiguously (',', '@', '/',
// brackets, parentheses) and blanks or control characters, which no host name
// or IP literal contains; it does not resolve the name.
func checkHostName(name string) string {
	if name == "" {
		return "empty host name"
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		if b <= ' ' || b == 0x7f {
			return fmt.Sprintf("host name contains the blank or control character %q", b)
		}
		if strings.IndexByte(",@/()[]", b) >= 0 {
			return fmt.Sprintf("host name contains %q", b)
		}
	}
	return ""
}

// hostKey identifies a host for duplicate detection: DNS names are
// case-insensitive and IP literals have several spellings ("::1",
// "0:0::1").
func hostKey(h Host) string {
	name := strings.ToLower(h.Name)
	if a, err := netip.ParseAddr(h.Name); err == nil {
		name = a.String()
	}
	return net.JoinHostPort(name, strconv.Itoa(h.Port))
}
