package dsn

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/mysqlfailover/mysqlfailover/internal/hostaddr"
)

// fuzzPW is put in front of fuzzed DSNs as the password; letters only, so it
// cannot be cut by the DSN syntax, and without 'x', ':' or '@' so that it
// cannot overlap the ":xxxxx@" of String.
const fuzzPW = "Pw9Marker7Q"

// FuzzParse: for any input Parse does not panic (nor recover from one); a
// success is a valid Config that round-trips through FormatDSN (dc labels
// and topology options included) and whose String and GoString hide the
// password; and with a marker password in front, neither errors nor String
// contain it.
func FuzzParse(f *testing.F) {
	for _, tt := range parseTests {
		f.Add(tt.dsn)
	}
	// Labelled hosts and topology options, beyond the table's rows.
	for _, s := range []string{
		"u:pw@tcp([::1]:3308;dc=east,[::2];dc=west,h3:3307;dc=west,h4)/db?localDC=east&usedHostsPerRemoteDC=1&targetSessionAttrs=prefer-standby",
		"tcp6([fe80::1%eth0];dc=a,[fe80::1%eth0]:3307;dc=a)/?localDC=a&targetSessionAttrs=standby",
		"tcp(h1;dc=a;dc=b)/", "tcp(h1;DC=a)/", "tcp(h1;dc=a=b)/", "tcp(h1;;dc=a)/", "tcp([::1]);dc=a)/",
		"tcp(h1;dc=a,h1;dc=b)/", "/?localDC=x&usedHostsPerRemoteDC=1", "/?targetSessionAttrs=Read_Only",
	} {
		f.Add(s)
	}
	// Probes and the host list provider, raw values with '/' included.
	for _, s := range []string{
		"u:pw@tcp(h1,h2)/db?checkInterval=1s&hostsURL=https://cfg/x/y?a=b&hostsToken=ab/c+d==&failoverDelay=0s&switchBackDelay=2m",
		"tcp(h1)/db?hostsURL=http://[::1]:80/(x)&checkInterval=10ms&hostsAllowHTTP=1&hostsToken=a%2Fb",
		"u:p?hostsURL=a/b@tcp(h)/db?checkInterval=1s&hostsURL=https://c/d",
		"u:p&hostsToken=a/b&@tcp(h)/db?hostsToken=c/d&hostsURL=https://e/f&checkInterval=1s",
		"/?checkInterval=1s&hostsURL=https%3A%2F%2Fu%3Ap%40h%2F", "/?hostsToken=x&hostsToken=y", "/?hostsURL=https://a/b&hostsURL=https://a/c",
	} {
		f.Add(s)
	}
	// Read/write splitting, the alias, and values near the valid ones.
	for _, s := range []string{
		"u:pw@tcp(h1,h2,h3)/db?replicaReads=true&checkInterval=1s&maxReplicaLag=2s&replicaSelection=least-in-flight&readFromSourceWhenNoReplicas=0&causalReads=global&causalReadsTimeout=300ms",
		"tcp(h1,h2)/?replicaReads=1&causalReads=local&readFromMasterWhenNoSlaves=false&readFromSourceWhenNoReplicas=F",
		"/?maxReplicaLag=1s", "/?replicaReads=true&maxReplicaLag=1s", "/?causalReads=local", "/?causalReadsTimeout=0",
		"/?replicaSelection=least_in_flight", "/?causalReads=Fast", "/?replicaReads=1&replicaPoolSize=3", "/?replicaPoolSize=2", "/?readFromMasterWhenNoSlaves=1&readFromSourceWhenNoReplicas=0",
		"/?replicaSelection=round-robin&causalReads=none&causalReadsTimeout=1s&maxReplicaLag=0", "/?causal_reads=local",
		// Transaction replay and its limits.
		"tcp(h1,h2)/?transactionReplay=true&transactionReplayMaxSize=512KiB&transactionReplayAttempts=3&transactionReplayTimeout=0s",
		"/?transactionReplayMaxSize=1M", "/?transactionReplay=1&transactionReplayAttempts=0", "/?transaction_replay=1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 2000 {
			t.Skip("too long to be useful")
		}
		c, err := Parse(s)
		if errors.Is(err, errPanicked) {
			t.Fatalf("Parse(%q) panicked", s)
		}
		if err == nil {
			checkParsed(t, s, c)
			if c.HostsURL != "" && !strings.Contains(percentDecode(s), fuzzToken) {
				checkTokenMarker(t, s, c)
			}
		} else if !strings.HasPrefix(err.Error(), "dsn: ") {
			t.Errorf("Parse(%q): error %q lacks the \"dsn: \" prefix", s, err)
		}

		if strings.Contains(s, fuzzPW) || strings.Contains(percentDecode(s), fuzzPW) {
			return
		}
		marked := "fuzzuser:" + fuzzPW + "@" + s
		c, err = Parse(marked)
		if errors.Is(err, errPanicked) {
			t.Fatalf("Parse(%q) panicked", marked)
		}
		if err != nil {
			if strings.Contains(err.Error(), fuzzPW) {
				t.Fatalf("Parse(%q): error %q contains the password", marked, err)
			}
			return
		}
		if !strings.Contains(c.MySQL.Passwd, fuzzPW) || c.MySQL.User != "fuzzuser" {
			t.Fatalf("Parse(%q): user info not cut as go-sql-driver does", marked)
		}
		checkParsed(t, marked, c)
	})
}

// fuzzToken is given as hostsToken to fuzzed DSNs that have a hostsURL:
// letters and digits, so a b64token, and without 'x' so that it cannot
// overlap the "xxxxx" of String.
const fuzzToken = "Tk7MarkerQ9z"

// checkTokenMarker adds hostsToken=fuzzToken to c, parsed from s: it must
// come back as c.HostsToken, in FormatDSN only; or, when c has another
// token, be refused by an error that shows neither.
func checkTokenMarker(t *testing.T, s string, c *Config) {
	t.Helper()
	marked := c.FormatDSN() + "&hostsToken=" + fuzzToken
	c2, err := Parse(marked)
	if c.HostsToken != "" && c.HostsToken != fuzzToken {
		if !errors.Is(err, ErrInvalidOption) || strings.Contains(err.Error(), fuzzToken) ||
			len(c.HostsToken) >= 8 && strings.Contains(err.Error(), c.HostsToken) {
			t.Fatalf("Parse(%q) (from %q) with a second token: %v", marked, s, err)
		}
		return
	}
	if err != nil || c2.HostsToken != fuzzToken {
		t.Fatalf("Parse(%q) (from %q): %v, want the token kept", marked, s, err)
	}
	if !strings.Contains(c2.FormatDSN(), "&hostsToken="+fuzzToken) {
		t.Fatalf("FormatDSN() = %q lost the token", c2.FormatDSN())
	}
	for _, p := range []string{c2.String(), c2.GoString(), fmt.Sprintf("%v|%+v|%s|%#v", c2, c2, c2, c2)} {
		if strings.Contains(p, fuzzToken) {
			t.Fatalf("Parse(%q): the token is printed: %s", marked, p)
		}
	}
}

// checkParsed checks a Config Parse returned for s.
func checkParsed(t *testing.T, s string, c *Config) {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatalf("Parse(%q) returned an invalid Config: %v", s, err)
	}
	if c.MySQL.Addr != c.Hosts[0].Addr() || c.MySQL.Net != dialNet(c.MySQL.Net) {
		t.Fatalf("Parse(%q): MySQL has %s(%s)", s, c.MySQL.Net, c.MySQL.Addr)
	}
	hostList := make([]string, len(c.Hosts))
	for i, h := range c.Hosts {
		// A ";dc=" label is never left in the address of a host that takes one; a unix
		// socket's path takes none and is taken as it is, ';' and '=' included.
		if a := h.Addr(); strings.ContainsAny(a, ";=") && c.MySQL.Net != "unix" {
			t.Fatalf("Parse(%q): Hosts[%d].Addr() = %q", s, i, a)
		}
		wantStr := h.Addr()
		if h.DC != "" {
			if r := hostaddr.Label(h.DC); r != "" {
				t.Fatalf("Parse(%q): Hosts[%d].DC: %s", s, i, r)
			}
			wantStr += ";dc=" + h.DC
		}
		if h.String() != wantStr {
			t.Fatalf("Hosts[%d].String() = %q, want %q", i, h.String(), wantStr)
		}
		hostList[i] = wantStr
	}
	if !knownTarget(c.TargetSessionAttrs) {
		t.Fatalf("Parse(%q): TargetSessionAttrs %q", s, c.TargetSessionAttrs)
	}
	if c.LocalDC != "" && !slices.ContainsFunc(c.Hosts, func(h Host) bool { return h.DC == c.LocalDC }) {
		t.Fatalf("Parse(%q): LocalDC %q is no host's label", s, c.LocalDC)
	}
	if c.UsedHostsPerRemoteDC > 0 && c.LocalDC == "" {
		t.Fatalf("Parse(%q): UsedHostsPerRemoteDC %d without LocalDC", s, c.UsedHostsPerRemoteDC)
	}

	f := c.FormatDSN()
	if !strings.Contains(f, "("+strings.Join(hostList, ",")+")/") {
		t.Fatalf("FormatDSN() = %q lacks the host list %v", f, hostList)
	}
	c2, err := Parse(f)
	if err != nil {
		t.Fatalf("Parse(%q) ok, but Parse of its FormatDSN %q: %v", s, f, err)
	}
	if d := diffConfig(c, c2); d != "" {
		t.Fatalf("Parse(%q), round trip through %q: %s", s, f, d)
	}
	if c2.MySQL.Addr != c.MySQL.Addr || c2.MySQL.Net != c.MySQL.Net {
		t.Fatalf("round trip of %q changed MySQL %s(%s) to %s(%s)", s, c.MySQL.Net, c.MySQL.Addr, c2.MySQL.Net, c2.MySQL.Addr)
	}
	if f2 := c2.FormatDSN(); f2 != f {
		t.Fatalf("FormatDSN not stable: %q then %q", f, f2)
	}

	// Probe and provider options.
	if d := c.CheckInterval; d < 0 || d > 0 && d < minCheckInterval || c.FailoverDelay < 0 || c.SwitchBackDelay < 0 {
		t.Fatalf("Parse(%q): CheckInterval %v, FailoverDelay %v, SwitchBackDelay %v", s, d, c.FailoverDelay, c.SwitchBackDelay)
	}
	if c.HostsURL != "" {
		u, err := url.Parse(c.HostsURL)
		if err != nil || u.User != nil || u.Scheme != "https" && u.Scheme != "http" || u.Hostname() == "" || c.CheckInterval == 0 {
			t.Fatalf("Parse(%q): HostsURL %q with CheckInterval %v", s, c.HostsURL, c.CheckInterval)
		}
		if u.Scheme == "http" && !c.HostsAllowHTTP && !hostaddr.Loopback(u.Hostname()) {
			t.Fatalf("Parse(%q): plain http HostsURL %q", s, c.HostsURL)
		}
	}
	if c.HostsToken != "" && (c.HostsURL == "" || hostaddr.Token(c.HostsToken) != "") {
		t.Fatalf("Parse(%q): HostsToken without HostsURL or not a b64token", s)
	}

	// Read/write splitting options.
	if d := c.MaxReplicaLag; d < 0 || d > 0 && (!c.ReplicaReads || c.CheckInterval == 0) {
		t.Fatalf("Parse(%q): MaxReplicaLag %v with ReplicaReads %v, CheckInterval %v", s, d, c.ReplicaReads, c.CheckInterval)
	}
	if !slices.Contains(selections, c.ReplicaSelection) || !slices.Contains(causalModes, c.CausalReads) || c.CausalReadsTimeout <= 0 {
		t.Fatalf("Parse(%q): ReplicaSelection %q, CausalReads %q, CausalReadsTimeout %v", s, c.ReplicaSelection, c.CausalReads, c.CausalReadsTimeout)
	}
	if !slices.Contains(clusterTypes, c.Cluster) {
		t.Fatalf("Parse(%q): Cluster %q", s, c.Cluster)
	}
	if c.CausalReads != causalNone && !c.ReplicaReads {
		t.Fatalf("Parse(%q): CausalReads %q without ReplicaReads", s, c.CausalReads)
	}

	// String must be FormatDSN with only the password, the token and the
	// hostsURL's query (and user info) replaced ...
	pw := c.MySQL.Passwd
	r := c.Clone()
	if pw != "" {
		r.MySQL.Passwd = redacted
	}
	if r.HostsToken != "" {
		r.HostsToken = redacted
	}
	if r.HostsURL != "" {
		r.HostsURL = redactURL(r.HostsURL)
	}
	str := c.String()
	if str != r.FormatDSN() {
		t.Fatalf("String() = %q, want %q", str, r.FormatDSN())
	}
	// ... and must not contain it. A password that also occurs elsewhere in
	// the DSN, or that could straddle ":xxxxx@", cannot be checked by
	// substring. (checkToken tests the token the same way, with a marker.)
	if len(pw) < 3 || strings.ContainsAny(pw, "x:@") {
		return
	}
	r.MySQL.Passwd = ""
	if strings.Contains(r.FormatDSN(), pw) {
		return
	}
	if strings.Contains(str, pw) {
		t.Fatalf("String() = %q contains the password", str)
	}
	// GoString quotes String; the escapes it adds ("\U0001a618") may spell
	// the password by chance, so check the structure instead.
	if g := c.GoString(); g != "dsn.Config("+strconv.Quote(str)+")" {
		t.Fatalf("GoString() = %q, want String quoted", g)
	}
}

// percentDecode decodes every valid %XX, for telling whether fuzz input
// spells the marker in escaped form (go-sql-driver unescapes values, so the
// marker could legitimately come back in a parameter).
func percentDecode(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b.WriteByte(unhex(s[i+1])<<4 | unhex(s[i+2]))
			i += 2
			continue
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	default:
		return c - 'a' + 10
	}
}
