package dsn

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/internal/hostaddr"
)

// The Parse table (parseTests) has the rows for checkInterval,
// failoverDelay, switchBackDelay, hostsURL, hostsToken and hostsAllowHTTP,
// so TestParse, TestRoundTrip, TestRedaction and FuzzParse's seeds cover
// them; TestValidate has the hand-built ones. This file tests the rest.

// TestFormatDSNProbes pins FormatDSN for hand-built Configs with the probe
// and provider options: after the others in table order, defaults left
// out, hostsURL and hostsToken query-escaped.
func TestFormatDSNProbes(t *testing.T) {
	withHosts := func(hosts ...Host) *Config {
		c := NewConfig()
		c.Hosts = hosts
		return c
	}
	tests := []struct {
		name string
		c    *Config
		want string
	}{
		{"defaults", withHosts(Host{Name: "db1", Port: 3306}), "tcp(db1:3306)/"},
		{"all options", func() *Config {
			c := withHosts(Host{Name: "db1", Port: 3306, DC: "east"}, Host{Name: "db2", Port: 3306, DC: "west"})
			c.MySQL.User, c.MySQL.Passwd, c.MySQL.DBName = "app", "pw", "shop"
			c.RetriesAllDown, c.LocalDC, c.UsedHostsPerRemoteDC = 2, "east", 1
			c.CheckInterval, c.FailoverDelay, c.SwitchBackDelay = 5*time.Second, 0, time.Minute
			c.HostsURL, c.HostsToken, c.HostsAllowHTTP = "http://cfg.internal/db?cluster=a&x=1+2", "ab+c/d==", true
			return c
		}(), "app:pw@tcp(db1:3306;dc=east,db2:3306;dc=west)/shop?retriesAllDown=2&localDC=east&usedHostsPerRemoteDC=1" +
			"&checkInterval=5s&failoverDelay=0s&switchBackDelay=1m0s&hostsURL=http%3A%2F%2Fcfg.internal%2Fdb%3Fcluster%3Da%26x%3D1%2B2" +
			"&hostsToken=ab%2Bc%2Fd%3D%3D&hostsAllowHTTP=true"},
		{"delays only", func() *Config {
			c := withHosts(Host{Name: "db1", Port: 3306})
			c.FailoverDelay, c.SwitchBackDelay = 1500*time.Millisecond, defaultSwitchBackDelay
			return c
		}(), "tcp(db1:3306)/?failoverDelay=1.5s"},
		{"provider after go-sql-driver params", func() *Config {
			c := withHosts(Host{Name: "db1", Port: 3306})
			c.MySQL.ParseTime = true
			c.CheckInterval, c.HostsURL = 10*time.Millisecond, "https://[::1]:8443/hosts.json"
			return c
		}(), "tcp(db1:3306)/?parseTime=true&checkInterval=10ms&hostsURL=https%3A%2F%2F%5B%3A%3A1%5D%3A8443%2Fhosts.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkValidFormat(t, tt.c, tt.want)
		})
	}
}

// TestRawValues: a hostsURL or hostsToken written unescaped gives the same
// Config as its escaped form, wherever it is in the query string; text that
// only looks like one (in the password, or inside another item's value)
// does not move go-sql-driver's cut.
func TestRawValues(t *testing.T) {
	const tok = "ab/cd+ef/=="
	for _, u := range []string{
		"https://cfg.example/hosts.json",
		"https://cfg.example/db?cluster=a",
		"https://cfg.example:8443/a/b/c/",
		"https://cfg.example/(x)/y@z?q=/",
		"http://[::1]:8080/h",
		"https://cfg.example",
	} {
		escaped := "u:" + testPW + "@tcp(h1,h2)/db?checkInterval=1s&hostsURL=" + url.QueryEscape(u) + "&hostsToken=" + url.QueryEscape(tok) + "&parseTime=1"
		want, err := Parse(escaped)
		if err != nil {
			t.Fatalf("Parse(%q): %v", escaped, err)
		}
		if want.HostsURL != u || want.HostsToken != tok {
			t.Fatalf("Parse(%q): HostsURL %q, token as expected: %v", escaped, want.HostsURL, want.HostsToken == tok)
		}
		for _, raw := range []string{
			"u:" + testPW + "@tcp(h1,h2)/db?checkInterval=1s&hostsURL=" + u + "&hostsToken=" + tok + "&parseTime=1",
			"u:" + testPW + "@tcp(h1,h2)/db?hostsURL=" + u + "&parseTime=1&hostsToken=" + tok + "&checkInterval=1s",
			"u:" + testPW + "@tcp(h1,h2)/db?hostsToken=" + tok + "&parseTime=1&checkInterval=1s&hostsURL=" + u,
			"u:" + testPW + "@tcp(h1,h2)/db?parseTime=1&checkInterval=1s&hostsToken=" + url.QueryEscape(tok) + "&hostsURL=" + u + "&hostsURL=" + url.QueryEscape(u),
		} {
			c, err := Parse(raw)
			if err != nil {
				t.Errorf("Parse(%q): %v", raw, err)
				continue
			}
			if d := diffConfig(c, want); d != "" {
				t.Errorf("Parse(%q): %s", raw, d)
			}
		}
	}

	// Look-alikes outside the query string.
	for _, tt := range []struct{ dsn, pw, db string }{
		{"u:p&hostsURL=a/b@tcp(h1)/db", "p&hostsURL=a/b", "db"},
		{"u:p?hostsToken=a/b@tcp(h1)/db?parseTime=1", "p?hostsToken=a/b", "db"},
		{"u:p&hostsURL=a/b&@tcp(h1)/db", "p&hostsURL=a/b&", "db"},
		{"u:p?hostsURL=(a)/b@tcp(h1)/d&hostsURL=x", "p?hostsURL=(a)/b", "d&hostsURL=x"},
		// The masked cut makes "u:a" the network: go-sql-driver's cut wins.
		{"u:a/b?hostsURL=c@tcp(h1)/db", "a/b?hostsURL=c", "db"},
		{"u:a/b&hostsToken=c@tcp(h1)/db?parseTime=1", "a/b&hostsToken=c", "db"},
	} {
		c, err := Parse(tt.dsn)
		if err != nil {
			t.Errorf("Parse(%q): %v", tt.dsn, err)
			continue
		}
		if c.MySQL.Passwd != tt.pw || c.MySQL.DBName != tt.db || c.HostsURL != "" || c.Hosts[0].Name != "h1" {
			t.Errorf("Parse(%q): password %q, database %q, hosts %v, HostsURL %q", tt.dsn, c.MySQL.Passwd, c.MySQL.DBName, c.Hosts, c.HostsURL)
		}
	}
	// A raw value must be an item of the query string: behind another
	// item's '?' it is that item's value, and go-sql-driver's cut stands.
	if _, err := Parse("tcp(h1)/db?x=1?hostsURL=https://a/b"); !errors.Is(err, ErrSyntax) {
		t.Errorf("raw hostsURL inside another value: %v, want ErrSyntax", err)
	}
	// With a raw value, a bad host list is reported as such.
	for s, part := range map[string]string{
		"u:" + testPW + "@tcp(h1,,h2)/db?checkInterval=1s&hostsURL=https://a/b":         `host 2 (""): empty host entry`,
		"u:" + testPW + "@unix(/tmp/s,/tmp/t)/db?checkInterval=1s&hostsURL=https://a/b": `more than one socket`,
		"u:" + testPW + "@tcp(h1,h1)/db?hostsToken=a/b":                                 "duplicate of host 1",
	} {
		if _, err := Parse(s); err == nil || !strings.Contains(err.Error(), part) {
			t.Errorf("Parse(%q): %v, want an error with %q", s, err, part)
		}
	}
}

// TestRawValuesMask pins rawValues: which bytes are masked and which item
// starts it reports.
func TestRawValuesMask(t *testing.T) {
	for _, tt := range []struct {
		in, scan string
		items    []int
	}{
		{"/db?hostsURL=https://a/b&x=/", "/db?hostsURL=https:xxaxb&x=/", []int{3}},
		{"/db?x=1&HOSTSTOKEN=a/b?(c)@", "/db?x=1&HOSTSTOKEN=axbxxcxx", []int{7}},
		{"/db?hostsURL=https%3A%2F%2Fa", "/db?hostsURL=https%3A%2F%2Fa", nil},
		{"/db?hostsURL", "/db?hostsURL", nil},
		{"/db?hostsURL=", "/db?hostsURL=", nil},
		{"hostsURL=a/b", "hostsURL=a/b", nil},
		{"?hostsURL=a/b?hostsToken=c/d&hostsToken=e/f", "?hostsURL=axbxhostsToken=cxd&hostsToken=exf", []int{0, 28}},
	} {
		scan, items := rawValues(tt.in)
		if scan != tt.scan || fmt.Sprint(items) != fmt.Sprint(tt.items) {
			t.Errorf("rawValues(%q) = %q, %v, want %q, %v", tt.in, scan, items, tt.scan, tt.items)
		}
	}
}

// TestProbeRedaction: the token and a hand-built HostsURL's user info never
// appear in String, GoString or the fmt verbs of a *Config, nor in errors,
// while FormatDSN keeps them.
func TestProbeRedaction(t *testing.T) {
	c := NewConfig()
	c.Hosts = []Host{{Name: "db1", Port: 3306}}
	c.MySQL.User, c.MySQL.Passwd = "app", testPW
	c.CheckInterval, c.HostsURL, c.HostsToken = time.Second, "https://cfg.example/h", testToken+"/+="
	want(t, "String", c.String(), "app:xxxxx@tcp(db1:3306)/?checkInterval=1s&hostsURL=https%3A%2F%2Fcfg.example%2Fh&hostsToken=xxxxx")
	want(t, "GoString", c.GoString(), `dsn.Config("app:xxxxx@tcp(db1:3306)/?checkInterval=1s&hostsURL=https%3A%2F%2Fcfg.example%2Fh&hostsToken=xxxxx")`)
	for _, s := range []string{fmt.Sprint(c), fmt.Sprintf("%v|%+v|%s|%#v|%q", c, c, c, c, c), fmt.Sprint([]*Config{c})} {
		if strings.Contains(s, testToken) || strings.Contains(s, testPW) {
			t.Errorf("secret printed: %s", s)
		}
	}
	if !strings.Contains(c.FormatDSN(), "&hostsToken="+url.QueryEscape(c.HostsToken)) {
		t.Errorf("FormatDSN() = %q lost the token", c.FormatDSN())
	}

	// User info in a hand-built HostsURL, which Validate rejects, is
	// redacted by String too; a URL with '@' that does not parse is
	// replaced whole.
	for u, w := range map[string]string{
		"https://admin:" + testToken + "@cfg/h":    "hostsURL=" + url.QueryEscape("https://xxxxx@cfg/h"),
		"https://" + testToken + "@cfg/h":          "hostsURL=" + url.QueryEscape("https://xxxxx@cfg/h"),
		"https://a:" + testToken + "%zz@cfg/h":     "hostsURL=xxxxx&",
		"https://cfg/api@v2?k=" + testToken[:4]:    "hostsURL=" + url.QueryEscape("https://cfg/api@v2?xxxxx"),
		"ftp://cfg/" + testToken[:4] + "@x/y#frag": "hostsURL=" + url.QueryEscape("ftp://cfg/"+testToken[:4]+"@x/y#xxxxx"),
	} {
		h := c.Clone()
		h.HostsURL = u
		if s := h.String(); !strings.Contains(s, w) || strings.Contains(s, testToken) {
			t.Errorf("String() with HostsURL %q = %q, want it to contain %q", u, s, w)
		}
		if err := h.Validate(); err != nil && strings.Contains(err.Error(), testToken) {
			t.Errorf("Validate with HostsURL %q: %v", u, err)
		}
	}

	// Errors about the token, or with the token in the DSN, never show it.
	for _, s := range []string{
		"u:" + testPW + "@tcp(h1)/db?hostsToken=" + testToken,
		"u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=https://cfg/h&hostsToken=" + testToken + "&hostsToken=" + testToken + "x",
		"u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=https://cfg/h&hostsToken=" + testToken + "%",
		"u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=https://cfg/h&hostsToken=" + testToken + "%00",
		"u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=https://cfg/h&hostsToken=" + testToken + "&checkInterval=1ms",
		"u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=http://cfg/h&hostsToken=" + testToken,
		"u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=https://cfg/h&hostsToken=" + testToken + "&parseTime=maybe",
		"u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=https://x:" + testToken + "@cfg/h",
		"u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=https://x:" + testToken + "%@cfg/h",
		"u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=https://a/b&hostsURL=https://x:" + testToken + "@cfg/h",
		"u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=https://x:" + testToken + "@cfg:bad/h",
	} {
		_, err := Parse(s)
		if err == nil {
			t.Errorf("Parse(%q): no error", s)
			continue
		}
		if msg := err.Error(); strings.Contains(msg, testToken) || strings.Contains(msg, testPW) || !strings.HasPrefix(msg, "dsn: ") {
			t.Errorf("Parse(%q): error %q", s, msg)
		}
	}
}

// TestCheckToken pins the b64token rule of RFC 6750.
func TestCheckToken(t *testing.T) {
	for _, ok := range []string{"a", "abc123", "A-Z_a.z~0+9/", "abc=", "abc==", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig-_", "ghp_0123456789abcdef"} {
		if r := hostaddr.Token(ok); r != "" {
			t.Errorf("hostaddr.Token(%q) = %q, want valid", ok, r)
		}
	}
	for bad, part := range map[string]string{
		"":       "empty",
		"==":     "empty",
		"a=b":    "'=' before the end",
		"ab cd":  "blank",
		"a\r\nb": "control",
		"a\tb":   "control",
		"a\x7f":  "control",
		"a&b":    "outside",
		"a%2F":   "outside",
		"a,b":    "outside",
		"é":      "outside",
		`a"b`:    "outside",
	} {
		r := hostaddr.Token(bad)
		if !strings.Contains(r, part) {
			t.Errorf("hostaddr.Token(%q) = %q, want it to contain %q", bad, r, part)
		}
		if bad != "" && strings.Contains(r, bad) {
			t.Errorf("hostaddr.Token(%q) = %q shows the token", bad, r)
		}
	}
}

// TestIsLoopback: localhost in any case and loopback IP literals, nothing
// else, and no name resolution.
func TestIsLoopback(t *testing.T) {
	for host, w := range map[string]bool{
		"localhost": true, "LOCALHOST": true, "127.0.0.1": true, "127.255.0.9": true, "::1": true, "0:0::1": true,
		"::1%lo": true, "::ffff:127.0.0.1": true,
		"128.0.0.1": false, "localhost.": false, "a.localhost": false, "localhost.example": false, "10.0.0.1": false,
		"::2": false, "0.0.0.0": false, "": false, "127.0.0.1.nip.io": false,
	} {
		want(t, fmt.Sprintf("hostaddr.Loopback(%q)", host), hostaddr.Loopback(host), w)
	}
}

// TestProbeNearMisses: the new keys catch their misspellings, but no
// go-sql-driver parameter, nor system variables near them.
func TestProbeNearMisses(t *testing.T) {
	for _, k := range driverParams {
		if n := nearMiss(k); n != "" {
			t.Errorf("go-sql-driver's %q is taken for a near miss of %q", k, n)
		}
	}
	for _, k := range []string{"interactive_timeout", "wait_timeout", "host_cache_size", "session_track_gtids", "hostname"} {
		if n := nearMiss(k); n != "" {
			t.Errorf("system variable %q is taken for a near miss of %q", k, n)
		}
	}
	for k, w := range map[string]string{
		"checkIntervall": "checkInterval", "CheckInterval": "checkInterval", "failoverDelays": "failoverDelay",
		"switchbackdelay": "switchBackDelay", "HOSTSURL": "hostsURL", "hostsTokens": "hostsToken", "hostsAllowHttp": "hostsAllowHTTP",
	} {
		want(t, fmt.Sprintf("nearMiss(%q)", k), nearMiss(k), w)
	}
}

// TestProbeDefaultsOmitted: NewConfig's values of the new options are left
// out of FormatDSN, and a zero Config's (FailoverDelay and SwitchBackDelay
// 0) are written, so that they come back.
func TestProbeDefaultsOmitted(t *testing.T) {
	c := NewConfig()
	c.Hosts = []Host{{Name: "db1", Port: 3306}}
	want(t, "FormatDSN", c.FormatDSN(), "tcp(db1:3306)/")
	c.FailoverDelay, c.SwitchBackDelay = 0, 0
	want(t, "FormatDSN", c.FormatDSN(), "tcp(db1:3306)/?failoverDelay=0s&switchBackDelay=0s")
	checkRoundTrip(t, c)
}
