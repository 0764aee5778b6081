package hostaddr

import (
	"strings"
	"testing"
)

func TestSplit(t *testing.T) {
	for _, c := range []struct {
		addr     string
		needPort bool
		name     string
		port     int
		reason   string
	}{
		{"db1", false, "db1", 0, ""},
		{"db1:3307", false, "db1", 3307, ""},
		{"[::1]", false, "::1", 0, ""},
		{"[::1]:3308", true, "::1", 3308, ""},
		{"db1", true, "", 0, "missing port"},
		{"[::1]", true, "", 0, "missing port"},
		{"::1:3306", false, "", 0, "IPv6 address must be in brackets"},
		{"[::1", false, "", 0, "unbalanced brackets"},
		{"db1:0", false, "", 0, "invalid port"},
		{"db1:65536", false, "", 0, "invalid port"},
		{"db1:003306", false, "", 0, "invalid port"},
		{"db1:+3306", false, "", 0, "invalid port"},
		{"db1:" + strings.Repeat("9", 200), false, "", 0, `"...: want`},
		{"db,1:3306", false, "", 0, "contains ','"},
		{"", false, "", 0, "empty host name"},
		{"", true, "", 0, "empty addr"},
	} {
		name, port, reason := Split(c.addr, c.needPort)
		if name != c.name || port != c.port || !strings.Contains(reason, c.reason) || (c.reason == "") != (reason == "") {
			t.Errorf("Split(%q, %v) = %q, %d, %q; want %q, %d, %q", c.addr, c.needPort, name, port, reason, c.name, c.port, c.reason)
		}
	}
}

func TestKeyAndLoopback(t *testing.T) {
	same := [][2]string{{"DB1.example", "db1.example"}, {"::1", "0:0::1"}, {"::ffff:10.0.0.1", "10.0.0.1"}}
	for _, s := range same {
		if Key(s[0], 3306) != Key(s[1], 3306) {
			t.Errorf("Key(%q) != Key(%q)", s[0], s[1])
		}
	}
	if Key("db1", 3306) == Key("db1", 3307) {
		t.Error("Key ignores the port")
	}
	for h, want := range map[string]bool{"localhost": true, "LocalHost": true, "127.0.0.2": true, "::1": true, "::ffff:127.0.0.1": true, "10.0.0.1": false, "localhost.example": false} {
		if Loopback(h) != want {
			t.Errorf("Loopback(%q) = %v, want %v", h, !want, want)
		}
	}
}

// The addresses of registered networks and unix sockets.
func TestOpaqueAndUnixPath(t *testing.T) {
	for addr, reason := range map[string]string{
		"db1:3306": "", "proj:region:inst": "", "[::1]:3306": "", "10.0.0.1": "",
		"": "empty address", "a b": "blank", "a,b": "contains ','", "a;dc=x": "contains ';'", "a(b)": "contains '('", "a=b": "contains '='", "a\x00": "control",
	} {
		if got := Opaque(addr); !strings.Contains(got, reason) || (reason == "") != (got == "") {
			t.Errorf("Opaque(%q) = %q, want %q", addr, got, reason)
		}
	}
	for p, reason := range map[string]string{
		"/run/mysqld/mysqld.sock": "", "/tmp/a;b.sock": "", "relative.sock": "",
		"": "empty socket path", "/run/my sql.sock": "blank", "/a,/b": "contains ','", "/a)": "contains ')'",
	} {
		if got := UnixPath(p); !strings.Contains(got, reason) || (reason == "") != (got == "") {
			t.Errorf("UnixPath(%q) = %q, want %q", p, got, reason)
		}
	}
}
