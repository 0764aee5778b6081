package dsn

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/internal/hostaddr"
)

// driverParams are go-sql-driver v1.10's own DSN parameters (parseDSNParams).
var driverParams = []string{
	"allowAllFiles", "allowCleartextPasswords", "allowFallbackToPlaintext", "allowNativePasswords",
	"allowOldPasswords", "checkConnLiveness", "clientFoundRows", "charset", "collation",
	"columnsWithAlias", "compress", "interpolateParams", "loc", "multiStatements", "parseTime",
	"timeTruncate", "readTimeout", "rejectReadOnly", "serverPubKey", "timeout", "tls",
	"writeTimeout", "maxAllowedPacket", "connectionAttributes",
}

// nearMiss returns the parameter key was probably meant to be, or "": one of ours that
// another client spells key (option.peers: MaxScale's and ProxySQL's names, further
// than two edits from ours), one of ours differing in case or by at most two edits (for
// keys of 8 characters or more), or one of go-sql-driver's differing only in case. Any other unknown key goes to go-sql-driver,
// which sends it to the server as a system variable ("SET retriesalldown=..."), where a
// typo fails late and obscurely. Server system variables are lower case with
// underscores, so none of them is caught here.
func nearMiss(key string) string {
	for _, o := range options {
		if slices.Contains(o.peers, key) {
			return o.key
		}
	}
	for _, k := range allKeys() {
		if strings.EqualFold(k, key) || len(key) >= 8 && editDistance(strings.ToLower(k), strings.ToLower(key)) <= 2 {
			return k
		}
	}
	for _, k := range driverParams {
		if k != key && strings.EqualFold(k, key) {
			return k
		}
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// Parse parses a DSN in go-sql-driver's syntax with a host list:
//
//	[user[:password]@][net[(host[:port][;dc=LABEL],...)]]/dbname[?param=value&...]
//
// e.g. "app:pw@tcp(db1:3306,db2,[::1]:3308)/shop?readTimeout=5s&retriesAllDown=3"
// or "app:pw@tcp(db1;dc=east,db2;dc=east,db3:3307;dc=west)/shop?localDC=east".
// The first host is the primary; a host without a port gets 3306; IPv6
// literals go in brackets; ";dc=LABEL" after the optional port sets
// Host.DC; no address list means 127.0.0.1:3306, as in go-sql-driver. net
// is tcp, tcp4 or tcp6 (or absent: tcp), unix with one socket path, or a
// network registered with mysql.RegisterDialContext, whose addresses are
// taken as they are (see Networks in the package documentation). Names are
// not resolved.
//
// Our options (see the package documentation) are taken out of the query
// string (the values of hostsURL and hostsToken may hold unescaped '/');
// everything else goes, with its escaping untouched, to mysql.ParseDSN, whose result becomes MySQL (with Addr the primary's and TLS
// left nil, see Config.MySQL).
//
// Errors start with "dsn: " and wrap ErrSyntax, ErrNotTCP, ErrInvalidHost or
// ErrInvalidOption, or wrap go-sql-driver's own error. They name the
// offending host entry (1-based position and text) or key and value, never
// the password, hostsToken or the whole DSN. Parse does not panic.
func Parse(dsn string) (c *Config, err error) {
	defer func() {
		// go-sql-driver panics on at least "strict=" (rejected below); any
		// other panic must not take the caller down either.
		if r := recover(); r != nil {
			c, err = nil, errPanicked
		}
	}()

	p, hosts, err := split(dsn)
	if err != nil {
		return nil, err
	}
	c = NewConfig()
	c.Hosts = hosts
	kept, err := c.takeOptions(p.query)
	if err != nil {
		return nil, err
	}

	// go-sql-driver would take the whole list as one address, so it gets the
	// primary only; HostConfig sets the address per host.
	var b strings.Builder
	b.WriteString(p.userinfo)
	if p.net == "" {
		b.WriteString("tcp")
	} else {
		b.WriteString(p.net)
	}
	b.WriteByte('(')
	b.WriteString(hosts[0].Addr())
	b.WriteString(")/")
	b.WriteString(p.dbname)
	if kept != "" {
		b.WriteByte('?')
		b.WriteString(kept)
	}
	m, err := mysql.ParseDSN(b.String())
	if err != nil {
		return nil, fmt.Errorf("dsn: %w", err)
	}
	// go-sql-driver set TLS.ServerName from the primary's name; without TLS,
	// NewConnector rebuilds it from TLSConfig and each host's own name.
	m.TLS = nil
	c.MySQL = m
	if err := c.Validate(); err != nil {
		return nil, err
	}
	return c, nil
}

// errPanicked is what Parse returns after a panic. The panic value is not
// included, as it might quote the DSN; the fuzz test fails on this error.
var errPanicked = newError(ErrSyntax, "dsn: internal error while parsing the DSN (panic recovered)")

// dsnParts are the raw pieces of a DSN, cut where go-sql-driver cuts.
type dsnParts struct {
	userinfo string // "user:password@", "user@" or ""; never printed
	net      string
	addrlist string // between the parentheses after net, "" if none
	dbname   string // still path-escaped
	query    string // after the first '?' following the dbname slash
}

// split cuts dsn by go-sql-driver's rules (ParseDSN, dsn.go): the last '/'
// ends the address part, the last '@' before it ends the user info (so a
// password may contain '@', ':', '/', '(' ...), and the first '(' after that
// '@' opens the address list, which must end just before the '/'. It checks
// the network and parses the host list too.
//
// One exception: the values of hostsURL and hostsToken may be written
// unescaped ("?hostsURL=https://cfg.example/hosts.json"), although their
// '/' would move go-sql-driver's cut. split first cuts with those values
// masked (rawValues). It keeps that cut if each masked value is then an
// item of the query string and the network and hosts are valid; otherwise
// it cuts dsn as it is (the look-alike is in the password, say), and
// reports the masked cut's network or host error only if that fails too.
func split(dsn string) (dsnParts, []Host, error) {
	if scan, items := rawValues(dsn); len(items) > 0 {
		p, q, err := cut(dsn, scan)
		if err == nil && q >= 0 && !slices.ContainsFunc(items, func(i int) bool { return i < q || i > q && dsn[i] != '&' }) {
			hosts, err := p.hosts()
			if err == nil {
				return p, hosts, nil
			}
			if p2, _, err2 := cut(dsn, dsn); err2 == nil {
				if hosts2, err2 := p2.hosts(); err2 == nil {
					return p2, hosts2, nil
				}
			}
			return p, nil, err
		}
	}
	p, _, err := cut(dsn, dsn)
	if err != nil {
		return p, nil, err
	}
	hosts, err := p.hosts()
	return p, hosts, err
}

// hosts checks the network and parses the address list.
func (p dsnParts) hosts() ([]Host, error) {
	if err := checkNet(p.net); err != nil {
		return nil, err
	}
	switch kindOf(p.net) {
	case netUnix:
		return parseUnix(p.addrlist)
	case netCustom:
		return parseOpaqueHosts(p.net, p.addrlist)
	}
	return parseHosts(p.addrlist)
}

// parseUnix parses the address of a unix DSN: one socket path, taken as it is
// (go-sql-driver's default /tmp/mysql.sock when absent).
func parseUnix(list string) ([]Host, error) {
	if list == "" {
		return []Host{{Name: defaultUnixSocket}}, nil
	}
	if strings.IndexByte(list, ',') >= 0 {
		return nil, newError(ErrNotTCP, "dsn: unix(...) lists more than one socket: "+unixOne)
	}
	if reason := hostaddr.UnixPath(list); reason != "" {
		return nil, newError(ErrInvalidHost, fmt.Sprintf("dsn: unix socket %s: %s", hostaddr.Quote(list), reason))
	}
	return []Host{{Name: list}}, nil
}

// parseOpaqueHosts splits the address list of a registered network: each entry
// is an address for the network's dial function, taken as it is (no default
// port: go-sql-driver adds none for such a network either), optionally
// followed by ";dc=LABEL".
func parseOpaqueHosts(network, list string) ([]Host, error) {
	if list == "" {
		return nil, newError(ErrInvalidHost, fmt.Sprintf("dsn: network %q needs an address list, as in %s(host1:3306,host2:3306): it has no default address", network, network))
	}
	entries := strings.Split(list, ",")
	hosts := make([]Host, 0, len(entries))
	seen := make(map[string]int, len(entries))
	for i, e := range entries {
		addr, attrs, hasAttrs := strings.Cut(e, ";")
		reason := hostaddr.Opaque(addr)
		h := Host{Name: addr}
		if reason == "" && hasAttrs {
			h.DC, reason = parseHostAttrs(attrs)
		}
		if reason != "" {
			return nil, newError(ErrInvalidHost, fmt.Sprintf("dsn: host %d (%s): %s", i+1, hostaddr.Quote(e), reason))
		}
		if j, dup := seen[addr]; dup {
			return nil, newError(ErrInvalidHost, fmt.Sprintf("dsn: host %d (%q): duplicate of host %d (%q)", i+1, e, j+1, entries[j]))
		}
		seen[addr] = i
		hosts = append(hosts, h)
	}
	return hosts, nil
}

// rawValueKeys are the options whose values may hold '/' unescaped:
// hostsURL and hostsToken.
var rawValueKeys = func() (keys []string) {
	for _, o := range options {
		if o.kind.raw {
			keys = append(keys, o.key)
		}
	}
	return keys
}()

// rawValues returns dsn with the bytes split looks for ('/', '@', '(',
// ')', '?') replaced by 'x' in the value of every "hostsURL=" or
// "hostsToken=" (in any case, so that a misspelt key reaches the near-miss
// check) that follows a '?' or '&' and runs to the next '&' or the end;
// and the indexes of those '?' or '&'. It returns no indexes when no byte
// was replaced.
func rawValues(dsn string) (string, []int) {
	var b []byte
	var items []int
	for i := 0; i < len(dsn); i++ {
		if dsn[i] != '?' && dsn[i] != '&' {
			continue
		}
		start := -1
		for _, k := range rawValueKeys {
			if n := i + 1 + len(k); n < len(dsn) && dsn[n] == '=' && strings.EqualFold(dsn[i+1:n], k) {
				start = n + 1
			}
		}
		if start < 0 {
			continue
		}
		end := len(dsn)
		if j := strings.IndexByte(dsn[start:], '&'); j >= 0 {
			end = start + j
		}
		masked := false
		for j := start; j < end; j++ {
			if strings.IndexByte("/@()?", dsn[j]) >= 0 {
				if b == nil {
					b = []byte(dsn)
				}
				b[j] = 'x'
				masked = true
			}
		}
		if masked {
			items = append(items, i)
		}
		i = end - 1
	}
	if b == nil {
		return dsn, nil
	}
	return string(b), items
}

// cut is split's cut: it finds the separators in scan, which is dsn or dsn
// with some bytes masked (same length), and slices dsn. q is the index of
// the '?' that starts the query string, or -1.
func cut(dsn, scan string) (p dsnParts, q int, err error) {
	if dsn == "" {
		return p, -1, nil
	}
	slash := strings.LastIndexByte(scan, '/')
	if slash < 0 {
		return p, -1, newError(ErrSyntax, "dsn: missing the '/' before the database name")
	}
	if slash > 0 {
		at := strings.LastIndexByte(scan[:slash], '@')
		p.userinfo = dsn[:at+1]
		rest := scan[at+1 : slash]
		if open := strings.IndexByte(rest, '('); open >= 0 {
			if scan[slash-1] != ')' {
				if strings.IndexByte(rest[open+1:], ')') >= 0 {
					return p, -1, newError(ErrSyntax, "dsn: address list not closed right before '/': did you forget to escape a parameter value?")
				}
				return p, -1, newError(ErrSyntax, "dsn: address list not terminated (missing ')')")
			}
			p.net = dsn[at+1 : at+1+open]
			p.addrlist = dsn[at+1+open+1 : slash-1]
		} else {
			p.net = dsn[at+1 : slash]
		}
	}
	p.dbname = dsn[slash+1:]
	q = -1
	if i := strings.IndexByte(scan[slash+1:], '?'); i >= 0 {
		q = slash + 1 + i
		p.dbname, p.query = dsn[slash+1:q], dsn[q+1:]
	}
	return p, q, nil
}

// parseHosts splits the address list. An empty list is go-sql-driver's
// default address.
func parseHosts(list string) ([]Host, error) {
	if list == "" {
		return []Host{{Name: "127.0.0.1", Port: defaultPort}}, nil
	}
	entries := strings.Split(list, ",")
	hosts := make([]Host, 0, len(entries))
	seen := make(map[string]int, len(entries))
	for i, e := range entries {
		h, reason := parseHost(e)
		if reason != "" {
			return nil, newError(ErrInvalidHost, fmt.Sprintf("dsn: host %d (%q): %s", i+1, e, reason))
		}
		k := hostaddr.Key(h.Name, h.Port)
		if j, dup := seen[k]; dup {
			return nil, newError(ErrInvalidHost, fmt.Sprintf("dsn: host %d (%q): duplicate of host %d (%q)", i+1, e, j+1, entries[j]))
		}
		seen[k] = i
		hosts = append(hosts, h)
	}
	return hosts, nil
}

// parseHost parses "name", "name:port", "[ipv6]" or "[ipv6]:port", each
// optionally followed by attributes ";dc=LABEL". It returns a reason instead
// of an error so that the caller can name the entry.
func parseHost(e string) (Host, string) {
	if e == "" {
		return Host{}, "empty host entry"
	}
	// Host names cannot contain ';' (hostaddr.Name), so the first one ends
	// the address.
	addr, attrs, hasAttrs := strings.Cut(e, ";")
	h, reason := parseAddr(addr)
	if reason != "" || !hasAttrs {
		return h, reason
	}
	dc, reason := parseHostAttrs(attrs)
	if reason != "" {
		return Host{}, reason
	}
	h.DC = dc
	return h, ""
}

// parseHostAttrs parses the ';'-separated attributes after a host's
// address; "dc" is the only one, and it returns its label.
func parseHostAttrs(attrs string) (dc, reason string) {
	seen := false
	for _, a := range strings.Split(attrs, ";") {
		key, val, hasValue := strings.Cut(a, "=")
		switch {
		case key == "dc":
		case a == "":
			return "", `empty host attribute after ';': want ";dc=LABEL"`
		case strings.EqualFold(key, "dc"):
			return "", fmt.Sprintf(`unknown host attribute %q: did you mean "dc"? (attribute keys are case-sensitive)`, key)
		default:
			return "", fmt.Sprintf(`unknown host attribute %q: only "dc" is known (";dc=LABEL")`, key)
		}
		if !hasValue {
			return "", `host attribute "dc" without "=": want ";dc=LABEL"`
		}
		if seen {
			return "", `host attribute "dc" given twice`
		}
		seen = true
		if reason := hostaddr.Label(val); reason != "" {
			return "", reason + ": want " + hostaddr.LabelRule
		}
		dc = val
	}
	return dc, ""
}

// takeOptions applies our keys from the raw query string to c and returns the
// rest, byte for byte (escapes included: go-sql-driver unescapes values
// itself).
func (c *Config) takeOptions(query string) (string, error) {
	if query == "" {
		return "", nil
	}
	type given struct {
		key, raw string
		v        any
	}
	seen := make(map[string]given)
	items := strings.Split(query, "&")
	var kept []string
	for _, item := range items {
		key, raw, hasValue := strings.Cut(item, "=")
		o := lookup(key)
		if o == nil {
			if k := nearMiss(key); k != "" {
				return "", newError(ErrInvalidOption, fmt.Sprintf("dsn: unknown parameter %q: did you mean %q?", key, k))
			}
			if key == "strict" && hasValue {
				return "", newError(ErrSyntax, `dsn: parameter "strict" is not supported: go-sql-driver removed strict mode`)
			}
			kept = append(kept, item)
			continue
		}
		if !hasValue {
			return "", newError(ErrSyntax, fmt.Sprintf("dsn: %s: missing \"=value\"", key))
		}
		v, err := o.kind.parse(o.kind, key, raw)
		if err != nil {
			return "", err
		}
		if prev, ok := seen[o.key]; ok {
			if prev.v == v {
				continue
			}
			if prev.key == key {
				return "", newError(ErrInvalidOption, fmt.Sprintf("dsn: %s given twice with different values (%s and %s)", key, o.kind.show(prev.raw), o.kind.show(raw)))
			}
			return "", newError(ErrInvalidOption, fmt.Sprintf(
				"dsn: %s=%s and %s=%s disagree: they are the same option (Connector/J 8.0.23 renamed ...Master to ...Source, ...Slaves to ...Replicas)",
				prev.key, o.kind.show(prev.raw), key, o.kind.show(raw)))
		}
		seen[o.key] = given{key: key, raw: raw, v: v}
		o.set(c, v)
	}
	return strings.Join(kept, "&"), nil
}

// parseAddr parses a host entry's address: "name", "name:port", "[ipv6]" or
// "[ipv6]:port" (hostaddr.Split); a missing port is 3306.
func parseAddr(e string) (Host, string) {
	name, port, reason := hostaddr.Split(e, false)
	if reason != "" {
		return Host{}, reason
	}
	if port == 0 {
		port = defaultPort
	}
	return Host{Name: name, Port: port}, ""
}
