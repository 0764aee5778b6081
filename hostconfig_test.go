package mysqlfailover

import (
	"bytes"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/dsn"
)

const testPW = "pw-not-shown"

func wantEq[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestHostConfig: one go-sql-driver config per host, with that host's
// address, the configured TCP flavour, everything else from MySQL, and no
// sharing with c; go-sql-driver's NewConnector accepts it.
func TestHostConfig(t *testing.T) {
	tests := []struct {
		dsn     string
		wantNet string
	}{
		{"u:" + testPW + "@tcp(h1,h2:3307,[::1]:3308)/db?parseTime=true&tls=true&sql_mode=ANSI", "tcp"},
		{"u:" + testPW + "@(h1,h2:3307,[::1]:3308)/db", "tcp"},
		{"tcp6(h1,h2:3307,[::1]:3308)/db", "tcp6"},
		{"tcp4(h1,h2:3307,[::1]:3308)/db", "tcp4"},
	}
	for _, tt := range tests {
		c, err := dsn.Parse(tt.dsn)
		if err != nil {
			t.Fatal(err)
		}
		before := c.FormatDSN()
		wantAddrs := []string{"h1:3306", "h2:3307", "[::1]:3308"}
		for i, addr := range wantAddrs {
			m := hostConfig(c, addr)
			wantEq(t, "Addr", m.Addr, addr)
			wantEq(t, "Net", m.Net, tt.wantNet)
			wantEq(t, "Passwd", m.Passwd, c.MySQL.Passwd)
			wantEq(t, "DBName", m.DBName, "db")
			wantEq(t, "ParseTime", m.ParseTime, c.MySQL.ParseTime)
			if _, err := mysql.NewConnector(m); err != nil {
				t.Errorf("mysql.NewConnector(hostConfig(%d)): %v", i, err)
			}
			m.Params = map[string]string{"x": "y"}
			m.DBName = "changed"
		}
		wantEq(t, "config after hostConfig", c.FormatDSN(), before)
	}
	c := &dsn.Config{Hosts: []dsn.Host{{Name: "db1", Port: 3306}}}
	if m := hostConfig(c, "db1:3306"); m.Addr != "db1:3306" || m.Net != "tcp" {
		t.Errorf("HostConfig with nil MySQL = %s(%s)", m.Net, m.Addr)
	}
}

// TestTopologyHostConfig: labelled hosts give go-sql-driver plain addresses,
// which its NewConnector accepts, and the primary's address in MySQL.Addr.
func TestTopologyHostConfig(t *testing.T) {
	c, err := dsn.Parse("u:" + testPW + "@tcp(h1;dc=east,h2:3307;dc=west,[::1]:3308;dc=west)/db?localDC=east&usedHostsPerRemoteDC=1&tls=true")
	if err != nil {
		t.Fatal(err)
	}
	wantEq(t, "MySQL.Addr", c.MySQL.Addr, "h1:3306")
	for _, addr := range []string{"h1:3306", "h2:3307", "[::1]:3308"} {
		m := hostConfig(c, addr)
		wantEq(t, "Addr", m.Addr, addr)
		if _, err := mysql.NewConnector(m); err != nil {
			t.Errorf("NewConnector(hostConfig(%s)): %v", addr, err)
		}
	}
}

// funcLogger is a go-sql-driver logger whose type cannot be compared with ==.
type funcLogger func(v ...any)

func (f funcLogger) Print(v ...any) { f(v...) }

// TestDriverLogger: with WithLogger, go-sql-driver's lines for a host go to the pool's
// slog logger at Debug, with the host and the source, not to go-sql-driver's default
// logger; a logger set in the go-sql-driver configuration is kept (also one whose type
// cannot be compared: no panic), and without WithLogger go-sql-driver keeps its own.
// The integration test TestOutageLogs checks the same under a real outage.
func TestDriverLogger(t *testing.T) {
	var buf bytes.Buffer
	pool := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	def := mysql.NewConfig().Logger

	driverLogger(def, pool, "db1:3306").Print("packets.go:58 ", io.ErrUnexpectedEOF)
	if got := buf.String(); !strings.Contains(got, `level=DEBUG msg="mysqlfailover: go-sql-driver" source=go-sql-driver host=db1:3306 message="packets.go:58 unexpected EOF"`) {
		t.Errorf("go-sql-driver's line through the pool's logger: %q", got)
	}
	if got := driverLogger(def, nil, "db1:3306"); !sameLogger(got, def) {
		t.Errorf("without WithLogger: %T, want go-sql-driver's default", got)
	}
	own := &mysql.NopLogger{}
	if got := driverLogger(own, pool, "db1:3306"); got != mysql.Logger(own) {
		t.Errorf("a logger of the configuration's own: %T, want it kept", got)
	}
	printed := 0
	var fl funcLogger = func(...any) { printed++ }
	driverLogger(fl, pool, "db1:3306").Print("x")
	if printed != 1 {
		t.Errorf("an incomparable logger of the configuration's own: printed %d lines, want it kept", printed)
	}
}
