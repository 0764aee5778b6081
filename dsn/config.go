package dsn

import (
	"fmt"
	"net"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/internal/hostaddr"
)

// defaultPort is MySQL's registered port, the one go-sql-driver adds too.
const defaultPort = 3306

// Host is one server of the list. Hosts[0] of a Config is the primary.
type Host struct {
	// Name is the host name or IP literal, IPv6 WITHOUT brackets (e.g. "::1"). With Port
	// 0 it is instead the whole address, passed verbatim to the dialer: a unix socket's
	// path, or the address of a host of a registered network (see Networks in the
	// package documentation).
	Name string
	// Port is the TCP port, 1..65535; Parse fills 3306 when a tcp DSN gives none. It is
	// 0 for the hosts of a unix or registered network, whose Name is the address.
	Port int

	// DC is the host's data-centre label, written "db1:3306;dc=east" in the
	// DSN: 1..64 bytes of A-Z a-z 0-9 '.' '_' '-', case-sensitive. "" means
	// no label, and such a host counts as local (see Config.LocalDC). It is
	// not part of the address: two entries with the same name and port are
	// duplicates whatever their labels.
	DC string
}

// Addr returns the address in the form net.Dial and go-sql-driver's
// Config.Addr take: "db1:3306", or "[::1]:3308" for an IPv6 literal; Name as
// it is when Port is 0 (a socket path, an address of a registered network).
// It never includes the DC label.
func (h Host) Addr() string {
	if h.Port == 0 {
		return h.Name
	}
	return net.JoinHostPort(h.Name, strconv.Itoa(h.Port))
}

// String returns Addr followed by ";dc=LABEL" when DC is set
// ("db1:3306;dc=east", "[::1]:3308;dc=west"), so host lists print the way
// they are written in a DSN. Use Addr for an address to dial.
func (h Host) String() string {
	if h.DC == "" {
		return h.Addr()
	}
	return h.Addr() + ";dc=" + h.DC
}

// Config is a parsed failover DSN: the host list, the failover options and,
// in MySQL, everything else for go-sql-driver.
//
// Build one with Parse or NewConfig (a zero Config has no defaults and no
// MySQL config), and check a hand-built one with Validate. Methods do not
// modify the Config; it is safe for concurrent reads.
//
// Each option field holds the DSN key of the same name (see Options in the
// package documentation, where the table and the rules are); its comment names
// the key only. A zero Config has the zero values, not the defaults (false for
// ReadFromSourceWhenNoReplicas and AllowSourceDownConnections, whose defaults
// are true).
type Config struct {
	// Hosts is ordered: Hosts[0] is the primary, the rest are secondaries in
	// order of preference (Connector/J's failover order). At least one.
	Hosts []Host

	// RetriesAllDown is option retriesAllDown; see Options.
	RetriesAllDown int
	// SecondsBeforeRetryMaster is option secondsBeforeRetryMaster (alias
	// secondsBeforeRetrySource); see Options.
	SecondsBeforeRetryMaster int
	// QueriesBeforeRetryMaster is option queriesBeforeRetryMaster (alias
	// queriesBeforeRetrySource); see Options.
	QueriesBeforeRetryMaster int
	// FailOverReadOnly is option failOverReadOnly; see Options.
	FailOverReadOnly bool
	// ReadOnly is option readOnly; see Options.
	ReadOnly bool
	// HostTimeout is option hostTimeout; see Options.
	HostTimeout time.Duration
	// TargetSessionAttrs is option targetSessionAttrs; see Options.
	TargetSessionAttrs string
	// LocalDC is option localDC; see Options.
	LocalDC string
	// UsedHostsPerRemoteDC is option usedHostsPerRemoteDC; see Options.
	UsedHostsPerRemoteDC int
	// CheckInterval is option checkInterval; see Options.
	CheckInterval time.Duration
	// FailoverDelay is option failoverDelay; see Options.
	FailoverDelay time.Duration
	// SwitchBackDelay is option switchBackDelay; see Options.
	SwitchBackDelay time.Duration
	// CalmCheckInterval is option calmCheckInterval; see Options.
	CalmCheckInterval time.Duration
	// HostsURL is option hostsURL; see Options.
	HostsURL string
	// HostsToken is option hostsToken; see Options.
	// It is a secret: print the *Config, whose String hides it, not the
	// Config value.
	HostsToken string
	// HostsAllowHTTP is option hostsAllowHTTP; see Options.
	HostsAllowHTTP bool
	// DiscoverHosts is option discoverHosts; see Options.
	DiscoverHosts bool
	// ReplicaReads is option replicaReads; see Options.
	ReplicaReads bool
	// MaxReplicaLag is option maxReplicaLag; see Options.
	MaxReplicaLag time.Duration
	// ReplicaSelection is option replicaSelection; see Options.
	ReplicaSelection string
	// ReplicaPoolSize is option replicaPoolSize; see Options.
	ReplicaPoolSize int
	// ReadFromSourceWhenNoReplicas is option readFromSourceWhenNoReplicas (alias
	// readFromMasterWhenNoSlaves); see Options.
	ReadFromSourceWhenNoReplicas bool
	// CausalReads is option causalReads; see Options.
	CausalReads string
	// CausalReadsTimeout is option causalReadsTimeout; see Options.
	CausalReadsTimeout time.Duration
	// AllowSourceDownConnections is option allowSourceDownConnections (alias
	// allowMasterDownConnections); see Options.
	AllowSourceDownConnections bool
	// Cluster is option cluster; see Options.
	Cluster string
	// TransactionReplay is option transactionReplay; see Options.
	TransactionReplay bool
	// TransactionReplayMaxSize is option transactionReplayMaxSize; see Options.
	TransactionReplayMaxSize int
	// TransactionReplayAttempts is option transactionReplayAttempts; see Options.
	TransactionReplayAttempts int
	// TransactionReplayTimeout is option transactionReplayTimeout; see Options.
	TransactionReplayTimeout time.Duration

	// MySQL holds every other setting, given to go-sql-driver for each host.
	// Its Net and Addr are not used for hosts: the driver sets them per host
	// (Parse leaves Addr at the primary). Parse leaves MySQL.TLS nil and keeps
	// the name in MySQL.TLSConfig, so that go-sql-driver's NewConnector
	// derives the TLS ServerName from each host's own name; a hand-built TLS
	// with a non-empty ServerName is used for every host as it is. Its Logger
	// receives go-sql-driver's own log lines (mysql.NewConfig and Parse take
	// go-sql-driver's default logger, set with mysql.SetLogger, at that time).
	MySQL *mysql.Config
}

// NewConfig returns a Config with the documented defaults, no hosts, and
// MySQL from mysql.NewConfig(). Set Hosts before use.
func NewConfig() *Config {
	c := &Config{MySQL: mysql.NewConfig()}
	for i := range options {
		options[i].set(c, options[i].def)
	}
	return c
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

// dialNet maps the configured network to the one to dial: go-sql-driver treats
// "" as "tcp".
func dialNet(n string) string {
	if n == "" {
		return "tcp"
	}
	return n
}

// netKind is what a network's address list holds.
type netKind int

const (
	netTCP    netKind = iota // "", tcp, tcp4, tcp6: host[:port] entries, failover
	netUnix                  // unix: one socket path
	netCustom                // a network registered with mysql.RegisterDialContext: opaque addresses
)

// kindOf classifies a network that checkNet accepted.
func kindOf(n string) netKind {
	switch n {
	case "", "tcp", "tcp4", "tcp6":
		return netTCP
	case "unix":
		return netUnix
	}
	return netCustom
}

// defaultUnixSocket is go-sql-driver's address for "unix" without one.
const defaultUnixSocket = "/tmp/mysql.sock"

// Validate checks a Config, typically a hand-built one (Parse already
// returns valid Configs, as it ends with Validate): Hosts non-empty with
// valid, distinct addresses (ports 1..65535, or 0 for the whole address of a
// unix or registered network) and DC labels "" or valid (ErrInvalidHost);
// every option in the range the Options table gives it (the zero value of an
// enum meaning its default) and consistent with the others as the Options
// section says: localDC one of the hosts' labels, hostsURL with
// checkInterval, and so on (ErrInvalidOption); no failover option in
// MySQL.Params under any spelling, where go-sql-driver would send it to the
// server as a system variable (ErrInvalidOption); MySQL non-nil
// (ErrInvalidOption) with a network that can carry the host list
// (ErrNotTCP). Of several problems it reports one, an option's own range
// before a conflict between options. It does not modify c and never includes
// the password or HostsToken in an error.
func (c *Config) Validate() error {
	if c == nil {
		return newError(ErrInvalidOption, "dsn: nil *Config")
	}
	network := ""
	if c.MySQL != nil {
		network = c.MySQL.Net
	}
	if err := c.checkHosts(network); err != nil {
		return err
	}
	for i := range options {
		if o := &options[i]; o.check != nil {
			if err := o.check(o, o.get(c)); err != nil {
				return err
			}
		}
	}
	for _, rule := range rules {
		if err := rule(c); err != nil {
			return err
		}
	}
	if c.MySQL == nil {
		return newError(ErrInvalidOption, "dsn: Config.MySQL is nil: start from NewConfig or Parse")
	}
	if c.HostsURL != "" && kindOf(network) == netUnix {
		return newError(ErrInvalidOption, "dsn: hostsURL with network \"unix\": a host list names TCP hosts, and a unix socket is one local server")
	}
	if c.DiscoverHosts && kindOf(network) == netUnix {
		return newError(ErrInvalidOption, "dsn: discoverHosts with network \"unix\": a cluster reports TCP hosts, and a unix socket is one local server")
	}
	for k := range c.MySQL.Params {
		if key, o := foldOption(k); o != nil {
			return newError(ErrInvalidOption, fmt.Sprintf(
				"dsn: MySQL.Params[%q] is the failover option %q: set Config.%s instead (go-sql-driver would send it to the server as a system variable)",
				k, key, o.field))
		}
	}
	return nil
}

// checkHosts checks Hosts and the network (MySQL.Net, or "" without MySQL):
// one socket path for unix, and otherwise valid, distinct addresses with
// valid dc labels.
func (c *Config) checkHosts(network string) error {
	if len(c.Hosts) == 0 {
		return newError(ErrInvalidHost, "dsn: no hosts: Config.Hosts needs at least the primary")
	}
	if c.MySQL != nil {
		if err := checkNet(network); err != nil {
			return err
		}
	}
	kind := kindOf(network)
	if kind == netUnix && len(c.Hosts) > 1 {
		return newError(ErrNotTCP, fmt.Sprintf("dsn: %d hosts on network \"unix\": %s", len(c.Hosts), unixOne))
	}
	seen := make(map[string]int, len(c.Hosts))
	for i, h := range c.Hosts {
		where := fmt.Sprintf("dsn: Hosts[%d] (%q, port %d)", i, h.Name, h.Port)
		k, reason := hostKey(kind, h)
		if reason == "" && h.DC != "" {
			if r := hostaddr.Label(h.DC); r != "" {
				reason = r + ": want " + hostaddr.LabelRule
			}
		}
		if reason != "" {
			return newError(ErrInvalidHost, where+": "+reason)
		}
		if j, dup := seen[k]; dup {
			return newError(ErrInvalidHost, fmt.Sprintf("%s: duplicate of Hosts[%d]", where, j))
		}
		seen[k] = i
	}
	return nil
}

// hostKey checks the address of h, a host of a network of kind, and returns
// the key that duplicates share, or why the address is not valid.
func hostKey(kind netKind, h Host) (key, reason string) {
	switch {
	case kind == netUnix:
		if h.Port != 0 {
			return "", "a unix socket has no port: want Port 0 and the path in Name"
		}
		return "\x00" + h.Name, hostaddr.UnixPath(h.Name)
	case kind == netCustom && h.Port == 0:
		// An address passed verbatim: duplicates are exact.
		return "\x00" + h.Name, hostaddr.Opaque(h.Name)
	}
	if reason := hostaddr.Name(h.Name); reason != "" {
		return "", reason
	}
	if h.Port < 1 || h.Port > 65535 {
		if kind == netCustom {
			return "", "port out of range 1..65535 (or 0: Name is the whole address)"
		}
		return "", "port out of range 1..65535"
	}
	return hostaddr.Key(h.Name, h.Port), ""
}

// checkTopology checks LocalDC and UsedHostsPerRemoteDC against the hosts'
// labels, which Validate has checked before, as LocalDC's own.
func (c *Config) checkTopology() error {
	var dcs []string // distinct labels, sorted
	for _, h := range c.Hosts {
		if h.DC != "" {
			dcs = append(dcs, h.DC)
		}
	}
	slices.Sort(dcs)
	dcs = slices.Compact(dcs)
	if c.LocalDC != "" {
		if len(dcs) == 0 {
			return newError(ErrInvalidOption, fmt.Sprintf("dsn: localDC %q: no host has a dc label (write them as tcp(db1:3306;dc=east,...))", c.LocalDC))
		}
		if !slices.Contains(dcs, c.LocalDC) {
			msg := fmt.Sprintf("dsn: localDC %q matches no host's dc label; known DCs: %s", c.LocalDC, strings.Join(dcs, ", "))
			if i := slices.IndexFunc(dcs, func(dc string) bool { return strings.EqualFold(dc, c.LocalDC) }); i >= 0 {
				msg += fmt.Sprintf("; labels are case-sensitive: did you mean %q?", dcs[i])
			} else {
				msg += " (labels are case-sensitive)"
			}
			return newError(ErrInvalidOption, msg)
		}
	}
	if n := c.UsedHostsPerRemoteDC; n > 0 {
		switch {
		case len(dcs) == 0:
			// LocalDC is "" here: with LocalDC set, the check above failed.
			return newError(ErrInvalidOption, fmt.Sprintf(
				"dsn: usedHostsPerRemoteDC=%d needs dc labels on the hosts and localDC (as in tcp(db1:3306;dc=east,db2;dc=west)/db?localDC=east&usedHostsPerRemoteDC=%d)", n, n))
		case c.LocalDC == "":
			return newError(ErrInvalidOption, fmt.Sprintf(
				"dsn: usedHostsPerRemoteDC=%d needs localDC: without it no DC is remote (known DCs: %s)", n, strings.Join(dcs, ", ")))
		}
	}
	return nil
}

// checkProbing checks CheckInterval against minCheckInterval and the host
// list provider and discovery options against each other. Messages never include
// HostsToken, nor HostsURL when it may hold credentials (showURL).
func (c *Config) checkProbing() error {
	if d := c.CheckInterval; d > 0 && d < minCheckInterval {
		return newError(ErrInvalidOption, fmt.Sprintf(
			"dsn: checkInterval=%v is too small: want 0 (probing off) or at least %v", d, minCheckInterval))
	}
	if c.HostsURL != "" {
		if reason := hostURLProblem(c.HostsURL, c.HostsAllowHTTP); reason != "" {
			return newError(ErrInvalidOption, "dsn: hostsURL "+showURL(c.HostsURL)+": "+reason)
		}
		if c.CheckInterval == 0 {
			return newError(ErrInvalidOption,
				"dsn: hostsURL needs checkInterval > 0, the interval at which it is polled: set checkInterval (e.g. checkInterval=5s)")
		}
	}
	if c.DiscoverHosts && c.CheckInterval == 0 {
		return newError(ErrInvalidOption,
			"dsn: discoverHosts needs checkInterval > 0: the probes read the cluster's members every checkInterval and check each one before it is used; set checkInterval (e.g. checkInterval=1s)")
	}
	if c.HostsToken != "" {
		if reason := hostaddr.Token(c.HostsToken); reason != "" {
			return newError(ErrInvalidOption, "dsn: hostsToken (not shown): "+reason+": want "+hostaddr.TokenRule)
		}
		if c.HostsURL == "" {
			return newError(ErrInvalidOption, "dsn: hostsToken needs hostsURL: the token is only sent to hostsURL")
		}
	}
	return nil
}

// checkReplicas checks the read/write splitting options against ReplicaReads
// and CheckInterval.
func (c *Config) checkReplicas() error {
	if n := c.ReplicaPoolSize; n > 0 && !c.ReplicaReads {
		return newError(ErrInvalidOption, fmt.Sprintf("dsn: replicaPoolSize=%d needs replicaReads=true: without it no session is opened to a replica", n))
	}
	causal := c.CausalReads
	on := causal == causalLocal || causal == causalGlobal
	if err := causalTimeout(c.CausalReadsTimeout, on); err != nil {
		return err
	}
	if d := c.MaxReplicaLag; d > 0 {
		if !c.ReplicaReads {
			return newError(ErrInvalidOption, fmt.Sprintf(
				"dsn: maxReplicaLag needs replicaReads=true: maxReplicaLag=%v bounds the lag of the replicas that replica reads use; set replicaReads=true or leave maxReplicaLag out", d))
		}
		if c.CheckInterval == 0 {
			return newError(ErrInvalidOption,
				"dsn: maxReplicaLag needs checkInterval > 0 (the probes read replica lag): set checkInterval (e.g. checkInterval=1s)")
		}
	}
	if on && !c.ReplicaReads {
		return newError(ErrInvalidOption, fmt.Sprintf(
			"dsn: causalReads needs replicaReads=true: without replica reads every statement runs on the active host, where the writes are; set replicaReads=true or leave causalReads=%s out", causal))
	}
	return nil
}

// checkReplay checks the limits of transaction replay against
// TransactionReplay: with it, a size and a number of attempts > 0.
func (c *Config) checkReplay() error {
	if err := replayMaxSize(c.TransactionReplayMaxSize, c.TransactionReplay); err != nil {
		return err
	}
	return replayAttempts(c.TransactionReplayAttempts, c.TransactionReplay)
}

// showURL quotes a HostsURL for a message, unless it may hold credentials:
// with '@' in it, it is shown only when url.Parse finds no user info; its
// query and fragment, which may carry a key, are shown as "xxxxx" (redactURL).
func showURL(s string) string {
	if strings.Contains(s, "@") {
		if u, err := url.Parse(s); err != nil || u.User != nil {
			return "(not shown: it may hold credentials)"
		}
	}
	r := redactURL(s)
	if r == redacted {
		return "(not shown: it may hold credentials)"
	}
	return strconv.Quote(r)
}

// unixOne says why a unix DSN names one socket.
const unixOne = "a unix socket names one local server, so a unix DSN has exactly one socket path and no failover; list TCP hosts (tcp(db1,db2)) or hosts of a registered network for failover"

// checkNet accepts tcp, tcp4, tcp6 and unix, and any other network name made of
// A-Z a-z 0-9 '-' '_' '.' (at most maxNetName bytes): one a program registers
// with go-sql-driver's mysql.RegisterDialContext (whether it is registered is
// checked by mysqlfailover.NewConnector, when the connector is made).
func checkNet(n string) error {
	switch n {
	case "", "tcp", "tcp4", "tcp6", "unix":
		return nil
	case "udp", "udp4", "udp6", "ip", "ip4", "ip6", "unixgram", "unixpacket":
		return newError(ErrNotTCP, fmt.Sprintf("dsn: network %q not supported: MySQL speaks over a stream (tcp, tcp4, tcp6, unix, or a network registered with mysql.RegisterDialContext)", n))
	}
	if len(n) <= maxNetName && isNetName(n) {
		return nil
	}
	// A "net" that is not a name is more likely a mangled user:password (a
	// DSN without '@'), so it is not echoed.
	return newError(ErrNotTCP, "dsn: the network before the address list is not a network name (tcp, tcp4, tcp6, unix or a name registered with mysql.RegisterDialContext): is the '@' after the user info missing?")
}

// maxNetName is the longest network name checkNet accepts, in bytes.
const maxNetName = 64

func isNetName(s string) bool {
	for i := 0; i < len(s); i++ {
		b := s[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '_' || b == '.') {
			return false
		}
	}
	return s != ""
}

// hostURLProblem returns why s cannot be Config.HostsURL, or "" (hostaddr.URL).
func hostURLProblem(s string, allowHTTP bool) string {
	_, reason := hostaddr.URL(s, allowHTTP)
	return reason
}
