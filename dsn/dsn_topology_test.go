package dsn

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/hostaddr"
)

// The Parse table (parseTests) has the rows for dc labels, targetSessionAttrs,
// localDC and usedHostsPerRemoteDC, so TestParse, TestRoundTrip, TestRedaction
// and FuzzParse's seeds cover them; TestValidate has the hand-built ones.
// This file tests the rest.

// TestTargetSessionAttrs: the constants have libpq's spellings, and each value
// parses, formats (except the default) and round-trips.
func TestTargetSessionAttrs(t *testing.T) {
	tests := []struct {
		t string
		s string
	}{
		{attrs.Any, "any"},
		{attrs.ReadWrite, "read-write"},
		{attrs.ReadOnly, "read-only"},
		{attrs.Primary, "primary"},
		{attrs.Standby, "standby"},
		{attrs.PreferStandby, "prefer-standby"},
		{"", ""},
	}
	for _, tt := range tests {
		want(t, "constant", string(tt.t), tt.s)
		if tt.t == "" {
			continue
		}
		want(t, "knownTarget("+tt.s+")", knownTarget(tt.t), true)
		c, err := Parse("tcp(h1,h2)/?targetSessionAttrs=" + tt.s)
		if err != nil {
			t.Fatalf("Parse with %q: %v", tt.s, err)
		}
		want(t, "TargetSessionAttrs", c.TargetSessionAttrs, tt.t)
		wantDSN := "tcp(h1:3306,h2:3306)/?targetSessionAttrs=" + tt.s
		if tt.t == attrs.Any {
			wantDSN = "tcp(h1:3306,h2:3306)/"
		}
		want(t, "FormatDSN", c.FormatDSN(), wantDSN)
		checkRoundTrip(t, c)
	}
	if len(targets) != 6 || strings.Join(func() []string {
		var s []string
		for _, t := range targets {
			s = append(s, string(t))
		}
		return s
	}(), ", ") != targetList {
		t.Errorf("targetList %q does not list targets %v", targetList, targets)
	}
}

// TestTargetNearMiss: case, '_' or a blank for '-', and a missing '-' are
// near misses; other words are not.
func TestTargetNearMiss(t *testing.T) {
	for in, w := range map[string]string{
		"read_write": attrs.ReadWrite, "READ-WRITE": attrs.ReadWrite, "readwrite": attrs.ReadWrite, "ReadOnly": attrs.ReadOnly,
		"read only": attrs.ReadOnly, "Any": attrs.Any, "PRIMARY": attrs.Primary, "Standby": attrs.Standby,
		"prefer_standby": attrs.PreferStandby, "preferStandby": attrs.PreferStandby,
		"master": "", "replica": "", "": "", "prefer-primary": "", "read-write-x": "",
	} {
		want(t, fmt.Sprintf("targetNearMiss(%q)", in), targetNearMiss(in), w)
	}
}

// TestCheckLabel pins the label rule: 1..64 bytes of A-Z a-z 0-9 . _ -.
func TestCheckLabel(t *testing.T) {
	for _, ok := range []string{"a", "east", "EU-west-1", "dc_2", "rack.3", "0", "-", strings.Repeat("Z", 64),
		"abcdefghijklmnopqrstuvwxyz", "ABCDEFGHIJKLMNOPQRSTUVWXYZ", "0123456789._-"} {
		if r := hostaddr.Label(ok); r != "" {
			t.Errorf("hostaddr.Label(%q) = %q, want valid", ok, r)
		}
	}
	for bad, part := range map[string]string{
		"":                      "empty dc label",
		strings.Repeat("a", 65): "dc label of 65 bytes",
		"a b":                   `contains ' '`,
		"a;b":                   `contains ';'`,
		"a=b":                   `contains '='`,
		"a,b":                   `contains ','`,
		"a)":                    `contains ')'`,
		"a:1":                   `contains ':'`,
		"a%20":                  `contains '%'`,
		"a/b":                   `contains '/'`,
		"a\x00":                 `contains '\x00'`,
		"zürich":                `contains 'ü'`,
		"a\xff":                 `contains '�'`,
	} {
		if r := hostaddr.Label(bad); !strings.Contains(r, part) {
			t.Errorf("hostaddr.Label(%q) = %q, want it to contain %q", bad, r, part)
		}
	}
}

// TestFormatDSNTopology pins FormatDSN for hand-built Configs with labels
// and the topology options: labels after each labelled host's address (IPv6
// too), the options after the others in table order, defaults left out.
func TestFormatDSNTopology(t *testing.T) {
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
		{"labels", withHosts(Host{Name: "db1", Port: 3306, DC: "east"}, Host{Name: "db2", Port: 3307}, Host{Name: "::1", Port: 3308, DC: "west"}),
			"tcp(db1:3306;dc=east,db2:3307,[::1]:3308;dc=west)/"},
		{"IPv6 zone and label", withHosts(Host{Name: "fe80::1%eth0", Port: 3306, DC: "a.b_c-d"}), "tcp([fe80::1%eth0]:3306;dc=a.b_c-d)/"},
		{"all topology options", func() *Config {
			c := withHosts(Host{Name: "db1", Port: 3306, DC: "east"}, Host{Name: "db2", Port: 3306, DC: "west"}, Host{Name: "db3", Port: 3306, DC: "west"})
			c.MySQL.User, c.MySQL.Passwd, c.MySQL.DBName = "app", "pw", "shop"
			c.RetriesAllDown, c.HostTimeout = 2, 0
			c.TargetSessionAttrs, c.LocalDC, c.UsedHostsPerRemoteDC = attrs.PreferStandby, "east", 1
			return c
		}(), "app:pw@tcp(db1:3306;dc=east,db2:3306;dc=west,db3:3306;dc=west)/shop?retriesAllDown=2&hostTimeout=0s&targetSessionAttrs=prefer-standby&localDC=east&usedHostsPerRemoteDC=1"},
		{"tcp6 with labels", func() *Config {
			c := withHosts(Host{Name: "::1", Port: 3306, DC: "a"}, Host{Name: "2001:db8::2", Port: 3310, DC: "b"})
			c.MySQL.Net, c.LocalDC, c.TargetSessionAttrs = "tcp6", "b", attrs.ReadOnly
			return c
		}(), "tcp6([::1]:3306;dc=a,[2001:db8::2]:3310;dc=b)/?targetSessionAttrs=read-only&localDC=b"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkValidFormat(t, tt.c, tt.want)
			for i, h := range tt.c.Hosts {
				if a := h.Addr(); strings.Contains(a, ";") {
					t.Errorf("Hosts[%d].Addr() = %q, want it without the label", i, a)
				}
			}
		})
	}
}

// TestEmptyTargetIsAny: a hand-built Config with TargetSessionAttrs ""
// validates, FormatDSN leaves it out, and it comes back as attrs.Any, its
// equivalent.
func TestEmptyTargetIsAny(t *testing.T) {
	c := NewConfig()
	c.Hosts = []Host{{Name: "db1", Port: 3306}}
	c.TargetSessionAttrs = ""
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	want(t, "FormatDSN", c.FormatDSN(), "tcp(db1:3306)/")
	c2, err := Parse(c.FormatDSN())
	if err != nil {
		t.Fatal(err)
	}
	want(t, "TargetSessionAttrs after the round trip", c2.TargetSessionAttrs, attrs.Any)
	c2.TargetSessionAttrs = ""
	if d := diffConfig(c, c2); d != "" {
		t.Errorf("round trip: %s", d)
	}
}

// TestTopologyRedaction: labels and topology options do not disturb the
// redaction; the password appears in FormatDSN only.
func TestTopologyRedaction(t *testing.T) {
	// A password that looks like host attributes and options.
	pw := testPW + ";dc=east,h9)/x?localDC=east&"
	c, err := Parse("u:" + pw + "@tcp(h1;dc=east,h2;dc=west)/db?localDC=east&usedHostsPerRemoteDC=1&targetSessionAttrs=read-write")
	if err != nil {
		t.Fatal(err)
	}
	want(t, "Passwd", c.MySQL.Passwd, pw)
	want(t, "Hosts", fmt.Sprint(c.Hosts), "[h1:3306;dc=east h2:3306;dc=west]")
	want(t, "String", c.String(), "u:xxxxx@tcp(h1:3306;dc=east,h2:3306;dc=west)/db?targetSessionAttrs=read-write&localDC=east&usedHostsPerRemoteDC=1")
	for _, s := range []string{c.String(), c.GoString(), fmt.Sprintf("%v|%+v|%#v", c, *c, c)} {
		if strings.Contains(s, testPW) {
			t.Errorf("password printed: %s", s)
		}
	}
	if !strings.Contains(c.FormatDSN(), pw) {
		t.Errorf("FormatDSN lost the password")
	}
	checkRoundTrip(t, c)

	// Errors about labels and topology name no password either.
	for _, s := range []string{
		"u:" + pw + "@tcp(h1;dc=)/db",
		"u:" + pw + "@tcp(h1;dc=a)/db?localDC=b",
		"u:" + pw + "@tcp(h1)/db?usedHostsPerRemoteDC=1",
		"u:" + pw + "@tcp(h1)/db?targetSessionAttrs=master",
	} {
		_, err := Parse(s)
		if err == nil {
			t.Fatalf("Parse(%q): no error", s)
		}
		if strings.Contains(err.Error(), pw) || !errors.Is(err, ErrInvalidOption) && !errors.Is(err, ErrInvalidHost) {
			t.Errorf("Parse: error %q", err)
		}
	}
}
