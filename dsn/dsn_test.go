package dsn

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"go.uber.org/goleak"
)

// testPW is the password of every DSN in parseTests that has one worth
// checking: no error, String or GoString may contain it.
const testPW = "S3cr3tPW"

// testToken is the hostsToken of the rows that have one worth checking: no
// error, String or GoString may contain it. Letters and digits only, so
// that url.QueryEscape leaves it as it is.
const testToken = "T0kenS3cr3tQ"

// rawURL is a hostsURL written unescaped in a DSN.
const rawURL = "https://cfg.example/db/hosts.json"

var local = []Host{{Name: "127.0.0.1", Port: 3306}}

// parseTest is one row of the Parse table. A row with wantErr set expects an
// error; otherwise hosts and opts describe the result and my checks MySQL.
type parseTest struct {
	name  string
	dsn   string
	hosts []Host
	opts  func(*Config)                   // changes from NewConfig's defaults
	my    func(*testing.T, *mysql.Config) // extra checks on Config.MySQL

	wantErr  error    // sentinel the error must wrap; errAny for "any error"
	errParts []string // substrings of the error message
}

// errAny marks rows that expect an error without a sentinel of ours (an
// error of go-sql-driver).
var errAny = errors.New("any error")

var parseTests = []parseTest{
	// Host lists.
	{name: "empty DSN is go-sql-driver's default", dsn: "", hosts: local},
	{name: "only database", dsn: "/db", hosts: local, my: func(t *testing.T, m *mysql.Config) {
		want(t, "DBName", m.DBName, "db")
		want(t, "Net", m.Net, "tcp")
		want(t, "Addr", m.Addr, "127.0.0.1:3306")
	}},
	{name: "three hosts with ports and IPv6", dsn: "user:" + testPW + "@tcp(h1:3306,h2:3307,[::1]:3308)/db?k=v",
		hosts: []Host{{Name: "h1", Port: 3306}, {Name: "h2", Port: 3307}, {Name: "::1", Port: 3308}},
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "User", m.User, "user")
			want(t, "Passwd", m.Passwd, testPW)
			want(t, "DBName", m.DBName, "db")
			want(t, "Addr", m.Addr, "h1:3306")
			want(t, "Params[k]", m.Params["k"], "v")
		}},
	{name: "default ports", dsn: "u:" + testPW + "@tcp(db1,db2,[fe80::1%eth0])/x",
		hosts: []Host{{Name: "db1", Port: 3306}, {Name: "db2", Port: 3306}, {Name: "fe80::1%eth0", Port: 3306}}},
	{name: "net without address list", dsn: "u:" + testPW + "@tcp/db", hosts: local},
	{name: "empty address list", dsn: "u:" + testPW + "@tcp()/db", hosts: local},
	{name: "empty net means tcp", dsn: "u@(db1)/x", hosts: []Host{{Name: "db1", Port: 3306}},
		my: func(t *testing.T, m *mysql.Config) { want(t, "Net", m.Net, "tcp") }},
	{name: "tcp6 kept", dsn: "u@tcp6([::1]:3307,[2001:db8::2])/x",
		hosts: []Host{{Name: "::1", Port: 3307}, {Name: "2001:db8::2", Port: 3306}},
		my:    func(t *testing.T, m *mysql.Config) { want(t, "Net", m.Net, "tcp6") }},
	{name: "tcp4 kept", dsn: "tcp4(10.0.0.1,10.0.0.2:3310)/", hosts: []Host{{Name: "10.0.0.1", Port: 3306}, {Name: "10.0.0.2", Port: 3310}},
		my: func(t *testing.T, m *mysql.Config) { want(t, "Net", m.Net, "tcp4") }},
	{name: "bracketed name without colon", dsn: "tcp([db1]:3307)/", hosts: []Host{{Name: "db1", Port: 3307}}},
	{name: "leading zeros in port", dsn: "tcp(db1:03306,db2:65535,db3:1)/", hosts: []Host{{Name: "db1", Port: 3306}, {Name: "db2", Port: 65535}, {Name: "db3", Port: 1}}},
	{name: "unresolvable name is fine", dsn: "tcp(no-such-host.invalid)/", hosts: []Host{{Name: "no-such-host.invalid", Port: 3306}}},
	{name: "same name other port is not a duplicate", dsn: "tcp(db1:3306,db1:3307)/", hosts: []Host{{Name: "db1", Port: 3306}, {Name: "db1", Port: 3307}}},

	// User info, cut where go-sql-driver cuts.
	{name: "password with @ : / ( )", dsn: "u:p@ss:w/o(r)d" + testPW + "@tcp(h1,h2)/db",
		hosts: []Host{{Name: "h1", Port: 3306}, {Name: "h2", Port: 3306}},
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "User", m.User, "u")
			want(t, "Passwd", m.Passwd, "p@ss:w/o(r)d"+testPW)
		}},
	{name: "password without user", dsn: ":" + testPW + "@tcp(h1)/db", hosts: []Host{{Name: "h1", Port: 3306}},
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "User", m.User, "")
			want(t, "Passwd", m.Passwd, testPW)
		}},
	{name: "fuzz: non-ASCII user, password spelt by GoString's escapes", dsn: "\U0001a618:000@/", hosts: local,
		my: func(t *testing.T, m *mysql.Config) { want(t, "Passwd", m.Passwd, "000") }},
	{name: "escaped database name", dsn: "/my%2Fdb%3F", hosts: local,
		my: func(t *testing.T, m *mysql.Config) { want(t, "DBName", m.DBName, "my/db?") }},

	// Our options.
	{name: "all options", dsn: "u:" + testPW + "@tcp(h1,h2)/db?retriesAllDown=3&secondsBeforeRetryMaster=10&queriesBeforeRetryMaster=20&failOverReadOnly=false&readOnly=true&hostTimeout=1500ms",
		hosts: []Host{{Name: "h1", Port: 3306}, {Name: "h2", Port: 3306}},
		opts: func(c *Config) {
			c.RetriesAllDown, c.SecondsBeforeRetryMaster, c.QueriesBeforeRetryMaster = 3, 10, 20
			c.FailOverReadOnly, c.ReadOnly, c.HostTimeout = false, true, 1500*time.Millisecond
		},
		my: func(t *testing.T, m *mysql.Config) {
			if len(m.Params) != 0 {
				t.Errorf("our keys reached go-sql-driver: Params = %v", m.Params)
			}
		}},
	{name: "Source aliases", dsn: "/?secondsBeforeRetrySource=7&queriesBeforeRetrySource=8", hosts: local,
		opts: func(c *Config) { c.SecondsBeforeRetryMaster, c.QueriesBeforeRetryMaster = 7, 8 }},
	{name: "alias and main name agreeing", dsn: "/?secondsBeforeRetryMaster=7&secondsBeforeRetrySource=7", hosts: local,
		opts: func(c *Config) { c.SecondsBeforeRetryMaster = 7 }},
	{name: "same key twice with equal values", dsn: "/?readOnly=1&readOnly=true&retriesAllDown=5&retriesAllDown=005", hosts: local,
		opts: func(c *Config) { c.ReadOnly, c.RetriesAllDown = true, 5 }},
	{name: "zeros", dsn: "/?retriesAllDown=0&secondsBeforeRetryMaster=0&queriesBeforeRetryMaster=0&hostTimeout=0", hosts: local,
		opts: func(c *Config) {
			c.RetriesAllDown, c.SecondsBeforeRetryMaster, c.QueriesBeforeRetryMaster, c.HostTimeout = 0, 0, 0, 0
		}},
	{name: "defaults written out", dsn: "/?retriesAllDown=120&failOverReadOnly=T&readOnly=F&hostTimeout=5s", hosts: local},
	{name: "long duration", dsn: "/?hostTimeout=1h2m3.5s", hosts: local,
		opts: func(c *Config) { c.HostTimeout = time.Hour + 2*time.Minute + 3500*time.Millisecond }},

	// go-sql-driver's parameters pass unchanged.
	{name: "go-sql-driver params and system variables", dsn: "u:" + testPW + "@tcp(h1,h2)/db?tls=skip-verify&readTimeout=2s&parseTime=true&retriesAllDown=1&sql_mode=%27ANSI_QUOTES%2CSTRICT_ALL_TABLES%27&time_zone=%27%2B00%3A00%27&maxAllowedPacket=0",
		hosts: []Host{{Name: "h1", Port: 3306}, {Name: "h2", Port: 3306}},
		opts:  func(c *Config) { c.RetriesAllDown = 1 },
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "TLSConfig", m.TLSConfig, "skip-verify")
			want(t, "ReadTimeout", m.ReadTimeout, 2*time.Second)
			want(t, "ParseTime", m.ParseTime, true)
			want(t, "MaxAllowedPacket", m.MaxAllowedPacket, 0)
			want(t, "Params[sql_mode]", m.Params["sql_mode"], "'ANSI_QUOTES,STRICT_ALL_TABLES'")
			want(t, "Params[time_zone]", m.Params["time_zone"], "'+00:00'")
			want(t, "len(Params)", len(m.Params), 2)
		}},
	{name: "system variables near our names pass through", dsn: "/?wait_timeout=2&net_read_timeout=30&tx_read_only=0&innodb_lock_wait_timeout=5",
		hosts: []Host{{Name: "127.0.0.1", Port: 3306}},
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "len(Params)", len(m.Params), 4)
		}},
	{name: "tls=true leaves TLS for NewConnector to build per host", dsn: "tcp(h1,h2)/?tls=true", hosts: []Host{{Name: "h1", Port: 3306}, {Name: "h2", Port: 3306}},
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "TLSConfig", m.TLSConfig, "true")
			if m.TLS != nil {
				t.Errorf("TLS = %+v, want nil (ServerName would be the primary's for every host)", m.TLS)
			}
		}},
	{name: "tls=preferred", dsn: "/?tls=preferred", hosts: local,
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "AllowFallbackToPlaintext", m.AllowFallbackToPlaintext, true)
		}},
	{name: "item without = is ignored as by go-sql-driver", dsn: "/?foo&parseTime=1&&", hosts: local,
		my: func(t *testing.T, m *mysql.Config) { want(t, "ParseTime", m.ParseTime, true) }},
	{name: "plus and question mark in values", dsn: "/db?x=a+b%2Bc?d&retriesAllDown=2", hosts: local,
		opts: func(c *Config) { c.RetriesAllDown = 2 },
		my:   func(t *testing.T, m *mysql.Config) { want(t, "Params[x]", m.Params["x"], "a b+c?d") }},

	// Syntax errors.
	{name: "missing slash", dsn: "u:" + testPW + "@tcp(h1,h2)", wantErr: ErrSyntax, errParts: []string{"'/'"}},
	{name: "unterminated address list", dsn: "u:" + testPW + "@tcp(h1,h2/db", wantErr: ErrSyntax, errParts: []string{"missing ')'"}},
	{name: "text after address list", dsn: "u:" + testPW + "@tcp(h1,h2)x/db", wantErr: ErrSyntax, errParts: []string{"escape"}},
	{name: "our key without value", dsn: "u:" + testPW + "@tcp(h1)/db?readOnly", wantErr: ErrSyntax, errParts: []string{"readOnly", "=value"}},
	{name: "strict makes go-sql-driver panic", dsn: "u:" + testPW + "@tcp(h1)/db?strict=true", wantErr: ErrSyntax, errParts: []string{`"strict"`}},

	// Networks.
	{name: "unix socket", dsn: "u:" + testPW + "@unix(/tmp/mysql.sock)/db", hosts: []Host{{Name: "/tmp/mysql.sock"}},
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "Net", m.Net, "unix")
			want(t, "Addr", m.Addr, "/tmp/mysql.sock")
		}},
	{name: "unix without a path is go-sql-driver's default", dsn: "unix/db", hosts: []Host{{Name: "/tmp/mysql.sock"}}},
	{name: "unix lists one socket", dsn: "u:" + testPW + "@unix(/run/a.sock,/run/b.sock)/db", wantErr: ErrNotTCP, errParts: []string{"more than one socket", "exactly one socket path"}},
	{name: "unix path with a blank", dsn: "unix(/run/my sql.sock)/db", wantErr: ErrInvalidHost, errParts: []string{`"/run/my sql.sock"`, "blank"}},
	{name: "registered network, addresses verbatim", dsn: "u:" + testPW + "@tunnel(h1:3306,h2;dc=b,proj:region:inst)/db",
		hosts: []Host{{Name: "h1:3306"}, {Name: "h2", DC: "b"}, {Name: "proj:region:inst"}},
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "Net", m.Net, "tunnel")
			want(t, "Addr", m.Addr, "h1:3306")
		}},
	{name: "registered network with a dash", dsn: "cloudsql-mysql(p:r:i)/db", hosts: []Host{{Name: "p:r:i"}}},
	{name: "registered network without addresses", dsn: "tunnel/db", wantErr: ErrInvalidHost, errParts: []string{`"tunnel"`, "needs an address list"}},
	{name: "registered network, duplicate address", dsn: "tunnel(h1:1,h1:1)/db", wantErr: ErrInvalidHost, errParts: []string{"host 2", "duplicate of host 1"}},
	{name: "registered network, empty entry", dsn: "tunnel(h1:1,)/db", wantErr: ErrInvalidHost, errParts: []string{"host 2", "empty address"}},
	{name: "udp", dsn: "u:" + testPW + "@udp(h1,h2)/db", wantErr: ErrNotTCP, errParts: []string{`"udp"`, "stream"}},
	{name: "missing @ makes user:password the net", dsn: "u:" + testPW + "/db", wantErr: ErrNotTCP, errParts: []string{"not a network name", "'@'"}},
	{name: "missing @ with address list", dsn: "u:" + testPW + "tcp(h1)/db", wantErr: ErrNotTCP},

	// Host entries.
	{name: "empty entry", dsn: "u:" + testPW + "@tcp(h1,,h2)/db", wantErr: ErrInvalidHost, errParts: []string{"host 2", `""`, "empty"}},
	{name: "trailing comma", dsn: "tcp(h1,)/db", wantErr: ErrInvalidHost, errParts: []string{"host 2", "empty"}},
	{name: "non-numeric port", dsn: "u:" + testPW + "@tcp(h1:abc)/db", wantErr: ErrInvalidHost, errParts: []string{"host 1", `"h1:abc"`, `"abc"`}},
	{name: "port 0", dsn: "tcp(h1,h2:0)/db", wantErr: ErrInvalidHost, errParts: []string{"host 2", `"h2:0"`, "1..65535"}},
	{name: "port 65536", dsn: "tcp(h1:65536)/db", wantErr: ErrInvalidHost, errParts: []string{`"h1:65536"`}},
	{name: "huge port", dsn: "tcp(h1:99999999999999999999999)/db", wantErr: ErrInvalidHost},
	{name: "signed port", dsn: "tcp(h1:+3306)/db", wantErr: ErrInvalidHost, errParts: []string{`"+3306"`}},
	{name: "empty port", dsn: "tcp(h1:)/db", wantErr: ErrInvalidHost, errParts: []string{`"h1:"`}},
	{name: "empty name", dsn: "tcp(:3306)/db", wantErr: ErrInvalidHost, errParts: []string{"empty host name"}},
	{name: "empty brackets", dsn: "tcp([]:3306)/db", wantErr: ErrInvalidHost, errParts: []string{"empty host name"}},
	{name: "open bracket", dsn: "tcp(h1,[::1)/db", wantErr: ErrInvalidHost, errParts: []string{"host 2", `"[::1"`, "unbalanced"}},
	{name: "close bracket", dsn: "tcp(::1]:3306)/db", wantErr: ErrInvalidHost, errParts: []string{"unbalanced"}},
	{name: "double bracket", dsn: "tcp([[::1]])/db", wantErr: ErrInvalidHost, errParts: []string{"unbalanced"}},
	{name: "junk after bracket", dsn: "tcp([::1]3306)/db", wantErr: ErrInvalidHost, errParts: []string{`"[::1]3306"`}},
	{name: "unbracketed IPv6", dsn: "tcp(::1)/db", wantErr: ErrInvalidHost, errParts: []string{"brackets"}},
	{name: "blank in name", dsn: "tcp(h1, h2)/db", wantErr: ErrInvalidHost, errParts: []string{`" h2"`}},
	{name: "slash in name", dsn: "tcp(a/b)/db", wantErr: ErrInvalidHost, errParts: []string{`"a/b"`}},
	{name: "parenthesis in name", dsn: "tcp(a(b)/db", wantErr: ErrInvalidHost, errParts: []string{`"a(b"`}},
	{name: "duplicate host", dsn: "u:" + testPW + "@tcp(h1,h2,h1:3306)/db", wantErr: ErrInvalidHost, errParts: []string{"host 3", `"h1:3306"`, "duplicate of host 1", `"h1"`}},
	{name: "duplicate host in other case", dsn: "tcp(DB1,db1)/db", wantErr: ErrInvalidHost, errParts: []string{"duplicate"}},
	{name: "duplicate IPv6 in other spelling", dsn: "tcp([::1],[0:0::1]:3306)/db", wantErr: ErrInvalidHost, errParts: []string{"duplicate"}},

	// Option values.
	{name: "non-numeric count", dsn: "u:" + testPW + "@tcp(h1)/db?retriesAllDown=abc", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: retriesAllDown: invalid value "abc": want an integer >= 0`}},
	{name: "negative count", dsn: "/?queriesBeforeRetryMaster=-1", wantErr: ErrInvalidOption, errParts: []string{"queriesBeforeRetryMaster", `"-1"`}},
	{name: "empty count", dsn: "/?retriesAllDown=", wantErr: ErrInvalidOption, errParts: []string{"retriesAllDown", `""`}},
	{name: "fractional seconds", dsn: "/?secondsBeforeRetrySource=1.5", wantErr: ErrInvalidOption, errParts: []string{"secondsBeforeRetrySource", `"1.5"`, "seconds"}},
	{name: "count overflow", dsn: "/?retriesAllDown=99999999999999999999999", wantErr: ErrInvalidOption, errParts: []string{"fits"}},
	{name: "bad bool", dsn: "/?failOverReadOnly=maybe", wantErr: ErrInvalidOption, errParts: []string{"failOverReadOnly", `"maybe"`}},
	{name: "duration without unit", dsn: "/?hostTimeout=5", wantErr: ErrInvalidOption, errParts: []string{"hostTimeout", `"5"`, "duration"}},
	{name: "negative duration", dsn: "/?hostTimeout=-1s", wantErr: ErrInvalidOption, errParts: []string{"hostTimeout", `"-1s"`}},
	{name: "alias conflict", dsn: "u:" + testPW + "@tcp(h1)/db?secondsBeforeRetryMaster=1&secondsBeforeRetrySource=2", wantErr: ErrInvalidOption,
		errParts: []string{"secondsBeforeRetryMaster", "secondsBeforeRetrySource", `"1"`, `"2"`}},
	{name: "queries alias conflict", dsn: "/?queriesBeforeRetrySource=1&queriesBeforeRetryMaster=2", wantErr: ErrInvalidOption,
		errParts: []string{"queriesBeforeRetryMaster", "queriesBeforeRetrySource"}},
	{name: "same key twice differing", dsn: "/?retriesAllDown=1&retriesAllDown=2", wantErr: ErrInvalidOption,
		errParts: []string{"retriesAllDown", "twice", `"1"`, `"2"`}},

	// Near misses.
	{name: "lower-case key", dsn: "u:" + testPW + "@tcp(h1)/db?retriesalldown=1", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: unknown parameter "retriesalldown": did you mean "retriesAllDown"?`}},
	{name: "capitalised key", dsn: "/?FailOverReadOnly=true", wantErr: ErrInvalidOption, errParts: []string{`"failOverReadOnly"`}},
	{name: "upper-case alias", dsn: "/?SECONDSBEFORERETRYSOURCE=3", wantErr: ErrInvalidOption, errParts: []string{`"secondsBeforeRetrySource"`}},
	{name: "near miss without value", dsn: "/?readonly", wantErr: ErrInvalidOption, errParts: []string{`"readOnly"`}},
	{name: "near miss by Unicode folding", dsn: "/?retrieſAllDown=1", wantErr: ErrInvalidOption, errParts: []string{`"retriesAllDown"`}},
	{name: "near miss by a dropped letter", dsn: "/?retriesAllDwn=1", wantErr: ErrInvalidOption, errParts: []string{`"retriesAllDwn": did you mean "retriesAllDown"`}},
	{name: "near miss by two edits", dsn: "/?secondsBeforeRetryMastr=1", wantErr: ErrInvalidOption, errParts: []string{`"secondsBeforeRetryMaster"`}},
	{name: "go-sql-driver key in the wrong case", dsn: "/?readtimeout=2s", wantErr: ErrInvalidOption, errParts: []string{`"readtimeout": did you mean "readTimeout"`}},
	{name: "go-sql-driver key in the wrong case, parseTime", dsn: "/?ParseTime=true", wantErr: ErrInvalidOption, errParts: []string{`"parseTime"`}},

	// go-sql-driver's errors.
	{name: "go-sql-driver bad bool", dsn: "u:" + testPW + "@tcp(h1,h2)/db?parseTime=maybe", wantErr: errAny, errParts: []string{"dsn: ", "maybe"}},
	{name: "go-sql-driver unknown TLS config", dsn: "u:" + testPW + "@tcp(h1,h2)/db?tls=nosuchconfig", wantErr: errAny, errParts: []string{"nosuchconfig"}},
	{name: "go-sql-driver bad dbname escape", dsn: "u:" + testPW + "@tcp(h1)/%zz", wantErr: errAny, errParts: []string{"dbname"}},
	{name: "go-sql-driver bad duration", dsn: "/?readTimeout=soon", wantErr: errAny, errParts: []string{"soon"}},

	// Data-centre labels.
	{name: "dc labels in every host form", dsn: "u:" + testPW + "@tcp(h1:3306;dc=east,h2;dc=west,[::1]:3308;dc=east,[::2];dc=x.Y_z-9,h5)/db",
		hosts: []Host{{Name: "h1", Port: 3306, DC: "east"}, {Name: "h2", Port: 3306, DC: "west"}, {Name: "::1", Port: 3308, DC: "east"},
			{Name: "::2", Port: 3306, DC: "x.Y_z-9"}, {Name: "h5", Port: 3306}},
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "Addr", m.Addr, "h1:3306")
			want(t, "Passwd", m.Passwd, testPW)
		}},
	{name: "labels without localDC are informational", dsn: "tcp(h1;dc=east,h2)/", hosts: []Host{{Name: "h1", Port: 3306, DC: "east"}, {Name: "h2", Port: 3306}}},
	{name: "IPv6 with zone and label", dsn: "tcp([fe80::1%eth0];dc=a,[fe80::1%eth0]:3307;dc=b)/",
		hosts: []Host{{Name: "fe80::1%eth0", Port: 3306, DC: "a"}, {Name: "fe80::1%eth0", Port: 3307, DC: "b"}}},
	{name: "tcp6 with labels and localDC", dsn: "u:" + testPW + "@tcp6([::1]:3307;dc=a,[2001:db8::2];dc=b)/x?localDC=b",
		hosts: []Host{{Name: "::1", Port: 3307, DC: "a"}, {Name: "2001:db8::2", Port: 3306, DC: "b"}},
		opts:  func(c *Config) { c.LocalDC = "b" },
		my:    func(t *testing.T, m *mysql.Config) { want(t, "Net", m.Net, "tcp6") }},
	{name: "64-byte label", dsn: "tcp(h1;dc=" + strings.Repeat("a", 64) + ")/", hosts: []Host{{Name: "h1", Port: 3306, DC: strings.Repeat("a", 64)}}},

	// Topology options.
	{name: "localDC, usedHostsPerRemoteDC and targetSessionAttrs", dsn: "u:" + testPW + "@tcp(h1;dc=dc1,h2;dc=dc2,h3;dc=dc3,h4)/db?localDC=dc1&usedHostsPerRemoteDC=1&targetSessionAttrs=read-write&parseTime=true",
		hosts: []Host{{Name: "h1", Port: 3306, DC: "dc1"}, {Name: "h2", Port: 3306, DC: "dc2"}, {Name: "h3", Port: 3306, DC: "dc3"}, {Name: "h4", Port: 3306}},
		opts: func(c *Config) {
			c.LocalDC, c.UsedHostsPerRemoteDC, c.TargetSessionAttrs = "dc1", 1, attrs.ReadWrite
		},
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "ParseTime", m.ParseTime, true)
			want(t, "len(Params)", len(m.Params), 0)
		}},
	{name: "targetSessionAttrs=any", dsn: "/?targetSessionAttrs=any", hosts: local},
	{name: "targetSessionAttrs=read-only", dsn: "/?targetSessionAttrs=read-only", hosts: local, opts: func(c *Config) { c.TargetSessionAttrs = attrs.ReadOnly }},
	{name: "targetSessionAttrs=primary", dsn: "/?targetSessionAttrs=primary", hosts: local, opts: func(c *Config) { c.TargetSessionAttrs = attrs.Primary }},
	{name: "targetSessionAttrs=standby", dsn: "/?targetSessionAttrs=standby", hosts: local, opts: func(c *Config) { c.TargetSessionAttrs = attrs.Standby }},
	{name: "targetSessionAttrs=prefer-standby", dsn: "tcp(h1,h2)/?targetSessionAttrs=prefer-standby&targetSessionAttrs=prefer-standby",
		hosts: []Host{{Name: "h1", Port: 3306}, {Name: "h2", Port: 3306}}, opts: func(c *Config) { c.TargetSessionAttrs = attrs.PreferStandby }},
	{name: "usedHostsPerRemoteDC=0 needs nothing", dsn: "/?usedHostsPerRemoteDC=0", hosts: local},
	{name: "localDC with unlabelled hosts too", dsn: "tcp(h1,h2;dc=east,h3;dc=west)/?localDC=east&usedHostsPerRemoteDC=2",
		hosts: []Host{{Name: "h1", Port: 3306}, {Name: "h2", Port: 3306, DC: "east"}, {Name: "h3", Port: 3306, DC: "west"}},
		opts:  func(c *Config) { c.LocalDC, c.UsedHostsPerRemoteDC = "east", 2 }},

	// Host attribute errors.
	{name: "empty dc label", dsn: "u:" + testPW + "@tcp(h1;dc=)/db", wantErr: ErrInvalidHost,
		errParts: []string{`dsn: host 1 ("h1;dc="): empty dc label: want 1..64 bytes of A-Z a-z 0-9 . _ -`}},
	{name: "bad character in dc label", dsn: "tcp(h1,h2;dc=we+st)/db", wantErr: ErrInvalidHost,
		errParts: []string{`host 2 ("h2;dc=we+st")`, `dc label "we+st" contains '+'`}},
	{name: "non-ASCII dc label", dsn: "tcp(h1;dc=osté)/db", wantErr: ErrInvalidHost, errParts: []string{"host 1", `contains 'é'`}},
	{name: "65-byte dc label", dsn: "tcp(h1;dc=" + strings.Repeat("a", 65) + ")/db", wantErr: ErrInvalidHost, errParts: []string{"dc label of 65 bytes", "1..64"}},
	{name: "dc label before the port", dsn: "tcp(h1;dc=a:3306)/db", wantErr: ErrInvalidHost, errParts: []string{`dc label "a:3306" contains ':'`}},
	{name: "unknown host attribute", dsn: "tcp(h1;zone=x)/db", wantErr: ErrInvalidHost,
		errParts: []string{`dsn: host 1 ("h1;zone=x"): unknown host attribute "zone": only "dc" is known`}},
	{name: "host attribute in the wrong case", dsn: "tcp(h1,h2;DC=x)/db", wantErr: ErrInvalidHost,
		errParts: []string{`host 2 ("h2;DC=x")`, `unknown host attribute "DC": did you mean "dc"?`}},
	{name: "host attribute without =", dsn: "tcp(h1;dc)/db", wantErr: ErrInvalidHost, errParts: []string{`host 1 ("h1;dc")`, `"dc" without "="`}},
	{name: "bare word as host attribute", dsn: "tcp(h1;east)/db", wantErr: ErrInvalidHost, errParts: []string{`unknown host attribute "east"`, `only "dc"`}},
	{name: "empty host attribute", dsn: "tcp(h1;)/db", wantErr: ErrInvalidHost, errParts: []string{`host 1 ("h1;")`, "empty host attribute"}},
	{name: "dc twice", dsn: "tcp(h1;dc=a;dc=b)/db", wantErr: ErrInvalidHost, errParts: []string{`host 1 ("h1;dc=a;dc=b")`, `"dc" given twice`}},
	{name: "dc twice with the same label", dsn: "tcp(h1;dc=a;dc=a)/db", wantErr: ErrInvalidHost, errParts: []string{"given twice"}},
	{name: "label without host", dsn: "tcp(;dc=a)/db", wantErr: ErrInvalidHost, errParts: []string{"empty host name"}},
	{name: "label inside IPv6 brackets", dsn: "tcp([::1;dc=a])/db", wantErr: ErrInvalidHost, errParts: []string{"unbalanced"}},
	{name: "unbracketed IPv6 with label", dsn: "tcp(::1;dc=a)/db", wantErr: ErrInvalidHost, errParts: []string{"brackets"}},
	{name: "equals sign in host name", dsn: "tcp(h=1)/db", wantErr: ErrInvalidHost, errParts: []string{`host 1 ("h=1")`, `contains '='`}},
	{name: "duplicate host with other labels", dsn: "tcp(h1;dc=a,h2,H1:3306;dc=b)/db", wantErr: ErrInvalidHost,
		errParts: []string{`host 3 ("H1:3306;dc=b"): duplicate of host 1 ("h1;dc=a")`}},
	{name: "duplicate IPv6 with labels", dsn: "tcp([::1]:3306;dc=a,[0::1];dc=a)/db", wantErr: ErrInvalidHost, errParts: []string{"duplicate of host 1"}},

	// Topology option errors.
	{name: "unknown targetSessionAttrs", dsn: "u:" + testPW + "@tcp(h1)/db?targetSessionAttrs=master", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: targetSessionAttrs: invalid value "master": want one of any, read-write, read-only, primary, standby, prefer-standby`}},
	{name: "targetSessionAttrs with underscore", dsn: "/?targetSessionAttrs=read_write", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: targetSessionAttrs: invalid value "read_write": did you mean "read-write"?`, "case-sensitive"}},
	{name: "targetSessionAttrs in the wrong case", dsn: "/?targetSessionAttrs=Primary", wantErr: ErrInvalidOption, errParts: []string{`"Primary": did you mean "primary"?`}},
	{name: "targetSessionAttrs without dash", dsn: "/?targetSessionAttrs=PreferStandby", wantErr: ErrInvalidOption, errParts: []string{`did you mean "prefer-standby"?`}},
	{name: "empty targetSessionAttrs", dsn: "/?targetSessionAttrs=", wantErr: ErrInvalidOption, errParts: []string{`targetSessionAttrs: invalid value ""`, "want one of"}},
	{name: "targetSessionAttrs twice differing", dsn: "/?targetSessionAttrs=standby&targetSessionAttrs=primary", wantErr: ErrInvalidOption,
		errParts: []string{"targetSessionAttrs given twice", `"standby"`, `"primary"`}},
	{name: "targetSessionAttrs without value", dsn: "/?targetSessionAttrs", wantErr: ErrSyntax, errParts: []string{"targetSessionAttrs", "=value"}},
	{name: "bad localDC label", dsn: "tcp(h1;dc=a)/?localDC=a%20b", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: localDC: invalid value "a%20b": want a dc label, 1..64 bytes of A-Z a-z 0-9 . _ -`}},
	{name: "empty localDC", dsn: "tcp(h1;dc=a)/?localDC=", wantErr: ErrInvalidOption, errParts: []string{`localDC: invalid value ""`}},
	{name: "negative usedHostsPerRemoteDC", dsn: "/?usedHostsPerRemoteDC=-1", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: usedHostsPerRemoteDC: invalid value "-1": want an integer >= 0`}},
	{name: "localDC without labels", dsn: "u:" + testPW + "@tcp(h1,h2)/db?localDC=dc1", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: localDC "dc1": no host has a dc label (write them as tcp(db1:3306;dc=east,...))`}},
	{name: "localDC matching no label", dsn: "u:" + testPW + "@tcp(h1;dc=dc2,h2;dc=dc1,h3;dc=dc3,h4;dc=dc1,h5)/db?localDC=dc9", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: localDC "dc9" matches no host's dc label; known DCs: dc1, dc2, dc3 (labels are case-sensitive)`}},
	{name: "localDC matching a label in other case", dsn: "tcp(h1;dc=dc2,h2;dc=dc1,h3;dc=dc3)/db?localDC=DC1", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: localDC "DC1" matches no host's dc label; known DCs: dc1, dc2, dc3; labels are case-sensitive: did you mean "dc1"?`}},
	{name: "usedHostsPerRemoteDC without labels", dsn: "tcp(h1,h2)/db?usedHostsPerRemoteDC=1", wantErr: ErrInvalidOption,
		errParts: []string{"dsn: usedHostsPerRemoteDC=1 needs dc labels on the hosts and localDC", "tcp(db1:3306;dc=east,"}},
	{name: "usedHostsPerRemoteDC without localDC", dsn: "tcp(h1;dc=a,h2;dc=b)/db?usedHostsPerRemoteDC=2", wantErr: ErrInvalidOption,
		errParts: []string{"usedHostsPerRemoteDC=2 needs localDC", "known DCs: a, b"}},

	// Near misses of the topology keys.
	{name: "localdc", dsn: "/?localdc=east", wantErr: ErrInvalidOption, errParts: []string{`dsn: unknown parameter "localdc": did you mean "localDC"?`}},
	{name: "LocalDC", dsn: "/?LocalDC=east", wantErr: ErrInvalidOption, errParts: []string{`"LocalDC": did you mean "localDC"?`}},
	{name: "DataStax's usedHostsPerRemoteDc", dsn: "/?usedHostsPerRemoteDc=1", wantErr: ErrInvalidOption,
		errParts: []string{`"usedHostsPerRemoteDc": did you mean "usedHostsPerRemoteDC"?`}},
	{name: "libpq's target_session_attrs", dsn: "/?target_session_attrs=read-write", wantErr: ErrInvalidOption,
		errParts: []string{`"target_session_attrs": did you mean "targetSessionAttrs"?`}},
	{name: "targetsessionattrs", dsn: "/?targetsessionattrs=any", wantErr: ErrInvalidOption, errParts: []string{`did you mean "targetSessionAttrs"?`}},

	// Active health probes.
	{name: "probe options", dsn: "u:" + testPW + "@tcp(h1,h2)/db?checkInterval=2s&failoverDelay=500ms&switchBackDelay=1m",
		hosts: []Host{{Name: "h1", Port: 3306}, {Name: "h2", Port: 3306}},
		opts: func(c *Config) {
			c.CheckInterval, c.FailoverDelay, c.SwitchBackDelay = 2*time.Second, 500*time.Millisecond, time.Minute
		},
		my: func(t *testing.T, m *mysql.Config) { want(t, "len(Params)", len(m.Params), 0) }},
	{name: "probe zeros", dsn: "/?checkInterval=0&failoverDelay=0&switchBackDelay=0", hosts: local,
		opts: func(c *Config) { c.CheckInterval, c.FailoverDelay, c.SwitchBackDelay = 0, 0, 0 }},
	{name: "probe defaults written out", dsn: "/?checkInterval=0s&failoverDelay=1s&switchBackDelay=30s", hosts: local},
	{name: "checkInterval at the minimum", dsn: "/?checkInterval=10ms&checkInterval=0.01s", hosts: local,
		opts: func(c *Config) { c.CheckInterval = 10 * time.Millisecond }},
	{name: "delays without probing are kept", dsn: "/?failoverDelay=3s&switchBackDelay=1h", hosts: local,
		opts: func(c *Config) { c.FailoverDelay, c.SwitchBackDelay = 3*time.Second, time.Hour }},

	// Host list provider.
	{name: "escaped hostsURL and token", dsn: "u:" + testPW + "@tcp(h1,h2)/db?checkInterval=5s&hostsURL=https%3A%2F%2Fcfg.example%2Fdb%3Fcluster%3Da&hostsToken=" + testToken + "&parseTime=true",
		hosts: []Host{{Name: "h1", Port: 3306}, {Name: "h2", Port: 3306}},
		opts: func(c *Config) {
			c.CheckInterval, c.HostsURL, c.HostsToken = 5*time.Second, "https://cfg.example/db?cluster=a", testToken
		},
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "ParseTime", m.ParseTime, true)
			want(t, "len(Params)", len(m.Params), 0)
		}},
	{name: "raw hostsURL", dsn: "u:" + testPW + "@tcp(h1,h2)/db?checkInterval=5s&hostsURL=" + rawURL + "&hostsToken=" + testToken,
		hosts: []Host{{Name: "h1", Port: 3306}, {Name: "h2", Port: 3306}},
		opts:  func(c *Config) { c.CheckInterval, c.HostsURL, c.HostsToken = 5*time.Second, rawURL, testToken },
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "DBName", m.DBName, "db")
			want(t, "Passwd", m.Passwd, testPW)
		}},
	{name: "raw hostsURL with a query, last", dsn: "tcp(h1)/db?checkInterval=1s&hostsURL=https://cfg.example/db?cluster=a",
		hosts: []Host{{Name: "h1", Port: 3306}},
		opts:  func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "https://cfg.example/db?cluster=a" }},
	{name: "raw hostsURL first, go-sql-driver params after", dsn: "u:" + testPW + "@tcp(h1)/db?hostsURL=https://cfg.example:8443/v1/hosts&checkInterval=1s&sql_mode=ANSI&readTimeout=1s",
		hosts: []Host{{Name: "h1", Port: 3306}},
		opts:  func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "https://cfg.example:8443/v1/hosts" },
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "Params[sql_mode]", m.Params["sql_mode"], "ANSI")
			want(t, "ReadTimeout", m.ReadTimeout, time.Second)
		}},
	{name: "raw hostsURL with parentheses and @ in the path", dsn: "tcp(h1)/db?checkInterval=1s&hostsURL=https://cfg.example/(a)/api@v2/hosts",
		hosts: []Host{{Name: "h1", Port: 3306}},
		opts:  func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "https://cfg.example/(a)/api@v2/hosts" }},
	{name: "raw and escaped hostsURL agreeing", dsn: "/?checkInterval=1s&hostsURL=https://cfg/x&hostsURL=https%3A%2F%2Fcfg%2Fx", hosts: local,
		opts: func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "https://cfg/x" }},
	{name: "scheme in upper case", dsn: "/?checkInterval=1s&hostsURL=HTTPS://Cfg.Example/x", hosts: local,
		opts: func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "HTTPS://Cfg.Example/x" }},
	{name: "http to 127.0.0.1", dsn: "/?checkInterval=1s&hostsURL=http://127.0.0.1:8080/hosts", hosts: local,
		opts: func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "http://127.0.0.1:8080/hosts" }},
	{name: "http to 127.9.8.7", dsn: "/?checkInterval=1s&hostsURL=http%3A%2F%2F127.9.8.7%2Fh", hosts: local,
		opts: func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "http://127.9.8.7/h" }},
	{name: "http to [::1]", dsn: "/?checkInterval=1s&hostsURL=http://[::1]:8080/hosts", hosts: local,
		opts: func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "http://[::1]:8080/hosts" }},
	{name: "http to localhost", dsn: "/?checkInterval=1s&hostsURL=http://LocalHost/hosts", hosts: local,
		opts: func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "http://LocalHost/hosts" }},
	{name: "http to a mapped loopback", dsn: "/?checkInterval=1s&hostsURL=http://[::ffff:127.0.0.1]/h", hosts: local,
		opts: func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "http://[::ffff:127.0.0.1]/h" }},
	{name: "http elsewhere with hostsAllowHTTP", dsn: "u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=http://cfg.internal/hosts&hostsAllowHTTP=true&hostsToken=" + testToken,
		hosts: []Host{{Name: "h1", Port: 3306}},
		opts: func(c *Config) {
			c.CheckInterval, c.HostsURL, c.HostsAllowHTTP, c.HostsToken = time.Second, "http://cfg.internal/hosts", true, testToken
		}},
	{name: "hostsAllowHTTP alone", dsn: "/?hostsAllowHTTP=1", hosts: local, opts: func(c *Config) { c.HostsAllowHTTP = true }},
	{name: "hostsAllowHTTP=false", dsn: "/?hostsAllowHTTP=false", hosts: local},
	{name: "token with + / and padding, raw", dsn: "u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=" + rawURL + "&hostsToken=" + testToken + "+/9-._~==",
		hosts: []Host{{Name: "h1", Port: 3306}},
		opts: func(c *Config) {
			c.CheckInterval, c.HostsURL, c.HostsToken = time.Second, rawURL, testToken+"+/9-._~=="
		}},
	{name: "token escaped", dsn: "u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=" + rawURL + "&hostsToken=" + testToken + "%2B%2F%3D",
		hosts: []Host{{Name: "h1", Port: 3306}},
		opts:  func(c *Config) { c.CheckInterval, c.HostsURL, c.HostsToken = time.Second, rawURL, testToken+"+/=" }},
	{name: "hostsURL text in the password", dsn: "u:" + testPW + "&hostsURL=x/y@tcp(h1)/db", hosts: []Host{{Name: "h1", Port: 3306}},
		my: func(t *testing.T, m *mysql.Config) { want(t, "Passwd", m.Passwd, testPW+"&hostsURL=x/y") }},
	{name: "hostsToken text in the password, hostsURL after", dsn: "u:" + testPW + "?hostsToken=a/b&c@tcp(h1)/db?checkInterval=1s&hostsURL=https%3A%2F%2Fcfg%2Fx",
		hosts: []Host{{Name: "h1", Port: 3306}},
		opts:  func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "https://cfg/x" },
		my:    func(t *testing.T, m *mysql.Config) { want(t, "Passwd", m.Passwd, testPW+"?hostsToken=a/b&c") }},

	// Probe option errors.
	{name: "checkInterval too small", dsn: "u:" + testPW + "@tcp(h1)/db?checkInterval=9ms", wantErr: ErrInvalidOption,
		errParts: []string{"dsn: checkInterval=9ms is too small: want 0 (probing off) or at least 10ms"}},
	{name: "checkInterval of 1ns", dsn: "/?checkInterval=1ns", wantErr: ErrInvalidOption, errParts: []string{"checkInterval=1ns is too small"}},
	{name: "negative checkInterval", dsn: "/?checkInterval=-5s", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: checkInterval: invalid value "-5s": want a duration >= 0`}},
	{name: "negative failoverDelay", dsn: "/?failoverDelay=-1s", wantErr: ErrInvalidOption, errParts: []string{`dsn: failoverDelay: invalid value "-1s"`}},
	{name: "switchBackDelay without unit", dsn: "/?switchBackDelay=30", wantErr: ErrInvalidOption, errParts: []string{`switchBackDelay: invalid value "30"`, "duration"}},
	{name: "checkInterval twice differing", dsn: "/?checkInterval=1s&checkInterval=2s", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: checkInterval given twice with different values ("1s" and "2s")`}},
	{name: "bad hostsAllowHTTP", dsn: "/?hostsAllowHTTP=yes", wantErr: ErrInvalidOption, errParts: []string{`hostsAllowHTTP: invalid value "yes"`}},
	{name: "failoverDelay without value", dsn: "/?failoverDelay", wantErr: ErrSyntax, errParts: []string{"failoverDelay", "=value"}},

	// Host list provider errors.
	{name: "hostsURL without checkInterval", dsn: "u:" + testPW + "@tcp(h1)/db?hostsURL=" + rawURL, wantErr: ErrInvalidOption,
		errParts: []string{"dsn: hostsURL needs checkInterval > 0", "set checkInterval"}},
	{name: "hostsURL with checkInterval=0", dsn: "/?hostsURL=" + rawURL + "&checkInterval=0", wantErr: ErrInvalidOption, errParts: []string{"needs checkInterval > 0"}},
	{name: "hostsURL with user and password", dsn: "u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=https://admin:" + testToken + "@cfg.example/h", wantErr: ErrInvalidOption,
		errParts: []string{"dsn: hostsURL (not shown: it may hold credentials): must not carry credentials", "hostsToken"}},
	{name: "hostsURL with escaped user info", dsn: "/?checkInterval=1s&hostsURL=https%3A%2F%2Fadmin%3A" + testToken + "%40cfg.example%2Fh", wantErr: ErrInvalidOption,
		errParts: []string{"must not carry credentials"}},
	{name: "hostsURL with a user name only", dsn: "/?checkInterval=1s&hostsURL=https://" + testToken + "@cfg.example/h", wantErr: ErrInvalidOption,
		errParts: []string{"must not carry credentials"}},
	{name: "hostsURL with user info and a bad escape", dsn: "/?checkInterval=1s&hostsURL=https://u:" + testToken + "%zz@cfg.example/h", wantErr: ErrInvalidOption,
		errParts: []string{"dsn: hostsURL: invalid value (not shown: it may hold credentials): want a URL, query-escaped"}},
	{name: "hostsURL with a bad escape", dsn: "/?checkInterval=1s&hostsURL=https%3A%2F%2Fcfg%2F%zz", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: hostsURL: invalid value "https%3A%2F%2Fcfg%2F%zz": want a URL, query-escaped as by url.QueryEscape`}},
	{name: "hostsURL that url.Parse rejects", dsn: "/?checkInterval=1s&hostsURL=https://cfg:x/h", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: hostsURL "https://cfg:x/h": not a valid URL: invalid port ":x" after host`}},
	{name: "empty hostsURL", dsn: "/?hostsURL=", wantErr: ErrInvalidOption, errParts: []string{`dsn: hostsURL: invalid value "": want an http(s) URL`}},
	{name: "ftp hostsURL", dsn: "/?checkInterval=1s&hostsURL=ftp://cfg.example/h", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: hostsURL "ftp://cfg.example/h": scheme "ftp": want https`}},
	{name: "hostsURL without scheme", dsn: "/?checkInterval=1s&hostsURL=cfg.example%2Fh", wantErr: ErrInvalidOption, errParts: []string{`scheme "": want https`}},
	{name: "hostsURL without host", dsn: "/?checkInterval=1s&hostsURL=https:///h", wantErr: ErrInvalidOption, errParts: []string{`"https:///h": no host`}},
	{name: "opaque hostsURL", dsn: "/?checkInterval=1s&hostsURL=https:cfg.example", wantErr: ErrInvalidOption, errParts: []string{"no host"}},
	{name: "hostsURL port out of range", dsn: "/?checkInterval=1s&hostsURL=https://cfg:99999/h", wantErr: ErrInvalidOption, errParts: []string{`invalid port "99999"`}},
	{name: "plain http to a remote host", dsn: "u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=http://cfg.example/h&hostsToken=" + testToken, wantErr: ErrInvalidOption,
		errParts: []string{`dsn: hostsURL "http://cfg.example/h": plain http to a host that is not a loopback address`, "hostsAllowHTTP=true"}},
	{name: "plain http to 128.0.0.1", dsn: "/?checkInterval=1s&hostsURL=http://128.0.0.1/h", wantErr: ErrInvalidOption, errParts: []string{"plain http"}},
	{name: "plain http to a name under localhost", dsn: "/?checkInterval=1s&hostsURL=http://localhost.example/h", wantErr: ErrInvalidOption, errParts: []string{"plain http"}},
	{name: "plain http with hostsAllowHTTP=false", dsn: "/?checkInterval=1s&hostsURL=http://10.0.0.1/h&hostsAllowHTTP=false", wantErr: ErrInvalidOption, errParts: []string{"plain http"}},
	{name: "+ in a raw hostsURL is a blank", dsn: "/?checkInterval=1s&hostsURL=https://cfg/a+b", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: hostsURL "https://cfg/a b": contains a blank or control character`, "%2B"}},
	{name: "hostsURL twice differing", dsn: "/?hostsURL=https://a/x&hostsURL=https://b/x", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: hostsURL given twice with different values ("https://a/x" and "https://b/x")`}},
	{name: "hostsURL twice differing, with user info", dsn: "/?hostsURL=https://a/x&hostsURL=https://u:" + testToken + "@b/x", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: hostsURL given twice with different values ("https://a/x" and (not shown: it may hold credentials))`}},
	{name: "hostsToken without hostsURL", dsn: "u:" + testPW + "@tcp(h1)/db?hostsToken=" + testToken + "&checkInterval=1s", wantErr: ErrInvalidOption,
		errParts: []string{"dsn: hostsToken needs hostsURL"}},
	{name: "token with a character outside b64token", dsn: "/?checkInterval=1s&hostsURL=" + rawURL + "&hostsToken=" + testToken + "%21", wantErr: ErrInvalidOption,
		errParts: []string{"dsn: hostsToken (not shown): contains a character outside the b64token set: want a bearer token (RFC 6750 b64token)"}},
	{name: "token with a blank", dsn: "/?checkInterval=1s&hostsURL=" + rawURL + "&hostsToken=" + testToken + "%20x", wantErr: ErrInvalidOption,
		errParts: []string{"hostsToken (not shown): contains a blank or control character"}},
	{name: "token with CR LF", dsn: "/?checkInterval=1s&hostsURL=" + rawURL + "&hostsToken=" + testToken + "%0D%0AX-Evil:%201", wantErr: ErrInvalidOption,
		errParts: []string{"blank or control character"}},
	{name: "token with = inside", dsn: "/?checkInterval=1s&hostsURL=" + rawURL + "&hostsToken=" + testToken + "=x", wantErr: ErrInvalidOption,
		errParts: []string{"'=' before the end"}},
	{name: "token of padding only", dsn: "/?checkInterval=1s&hostsURL=" + rawURL + "&hostsToken===", wantErr: ErrInvalidOption,
		errParts: []string{"empty before the '=' padding"}},
	{name: "empty token", dsn: "/?checkInterval=1s&hostsURL=" + rawURL + "&hostsToken=", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: hostsToken: invalid value "": want a bearer token`}},
	{name: "token with a bad escape", dsn: "u:" + testPW + "@tcp(h1)/db?checkInterval=1s&hostsURL=" + rawURL + "&hostsToken=" + testToken + "%zz", wantErr: ErrInvalidOption,
		errParts: []string{"dsn: hostsToken: invalid value (not shown): want a bearer token, written as is or %XX-escaped"}},
	{name: "token twice differing", dsn: "/?checkInterval=1s&hostsURL=" + rawURL + "&hostsToken=" + testToken + "a&hostsToken=" + testToken + "b", wantErr: ErrInvalidOption,
		errParts: []string{"dsn: hostsToken given twice with different values ((not shown) and (not shown))"}},
	{name: "raw hostsURL with a near-miss key", dsn: "u:" + testPW + "@tcp(h1)/db?hostsUrl=" + rawURL, wantErr: ErrInvalidOption,
		errParts: []string{`dsn: unknown parameter "hostsUrl": did you mean "hostsURL"?`}},
	{name: "raw token with a near-miss key", dsn: "u:" + testPW + "@tcp(h1)/db?HOSTSTOKEN=" + testToken + "/x", wantErr: ErrInvalidOption,
		errParts: []string{`"HOSTSTOKEN": did you mean "hostsToken"?`}},
	{name: "raw hostsURL behind another item's '?'", dsn: "tcp(h1)/db?x=1?hostsURL=" + rawURL, wantErr: ErrSyntax, errParts: []string{"escape"}},

	// Near misses of the probe and provider keys.
	{name: "checkinterval", dsn: "/?checkinterval=1s", wantErr: ErrInvalidOption, errParts: []string{`"checkinterval": did you mean "checkInterval"?`}},
	{name: "check_interval", dsn: "/?check_interval=1s", wantErr: ErrInvalidOption, errParts: []string{`did you mean "checkInterval"?`}},
	{name: "failOverDelay", dsn: "/?failOverDelay=1s", wantErr: ErrInvalidOption, errParts: []string{`"failOverDelay": did you mean "failoverDelay"?`}},
	{name: "switchbackDelay", dsn: "/?switchbackDelay=1s", wantErr: ErrInvalidOption, errParts: []string{`did you mean "switchBackDelay"?`}},
	{name: "hostsurl", dsn: "/?hostsurl=x", wantErr: ErrInvalidOption, errParts: []string{`did you mean "hostsURL"?`}},
	{name: "hostToken", dsn: "/?hostToken=" + testToken, wantErr: ErrInvalidOption, errParts: []string{`"hostToken": did you mean "hostsToken"?`}},
	{name: "hostsAllowHttp", dsn: "/?hostsAllowHttp=true", wantErr: ErrInvalidOption, errParts: []string{`did you mean "hostsAllowHTTP"?`}},

	// Read/write splitting.
	{name: "replica options", dsn: "u:" + testPW + "@tcp(h1,h2,h3)/db?replicaReads=true&checkInterval=1s&maxReplicaLag=10s&replicaSelection=least-in-flight" +
		"&readFromSourceWhenNoReplicas=false&causalReads=local&causalReadsTimeout=250ms&parseTime=true",
		hosts: []Host{{Name: "h1", Port: 3306}, {Name: "h2", Port: 3306}, {Name: "h3", Port: 3306}},
		opts: func(c *Config) {
			c.ReplicaReads, c.CheckInterval, c.MaxReplicaLag, c.ReplicaSelection = true, time.Second, 10*time.Second, "least-in-flight"
			c.ReadFromSourceWhenNoReplicas, c.CausalReads, c.CausalReadsTimeout = false, "local", 250*time.Millisecond
		},
		my: func(t *testing.T, m *mysql.Config) {
			want(t, "ParseTime", m.ParseTime, true)
			want(t, "len(Params)", len(m.Params), 0)
		}},
	{name: "replicaReads alone", dsn: "tcp(h1,h2)/?replicaReads=1", hosts: []Host{{Name: "h1", Port: 3306}, {Name: "h2", Port: 3306}},
		opts: func(c *Config) { c.ReplicaReads = true }},
	{name: "causalReads=global", dsn: "/?causalReads=global&replicaReads=true", hosts: local,
		opts: func(c *Config) { c.ReplicaReads, c.CausalReads = true, "global" }},
	{name: "replica defaults written out", dsn: "/?replicaReads=false&maxReplicaLag=0s&replicaSelection=round-robin&readFromSourceWhenNoReplicas=true&causalReads=none&causalReadsTimeout=1s",
		hosts: local},
	{name: "allowSourceDownConnections", dsn: "/?allowSourceDownConnections=false", hosts: local,
		opts: func(c *Config) { c.AllowSourceDownConnections = false }},
	{name: "allowMasterDownConnections alias", dsn: "/?allowMasterDownConnections=false", hosts: local,
		opts: func(c *Config) { c.AllowSourceDownConnections = false }},
	{name: "allowSourceDownConnections and its alias disagreeing", dsn: "/?allowMasterDownConnections=false&allowSourceDownConnections=true",
		wantErr: ErrInvalidOption, errParts: []string{"disagree"}},
	{name: "Connector/J 5.1 alias", dsn: "/?readFromMasterWhenNoSlaves=false", hosts: local,
		opts: func(c *Config) { c.ReadFromSourceWhenNoReplicas = false }},
	{name: "alias and main name agreeing", dsn: "/?readFromMasterWhenNoSlaves=0&readFromSourceWhenNoReplicas=false", hosts: local,
		opts: func(c *Config) { c.ReadFromSourceWhenNoReplicas = false }},
	{name: "replica options without replicaReads are kept", dsn: "/?replicaSelection=least-in-flight&causalReadsTimeout=5s&readFromSourceWhenNoReplicas=false&maxReplicaLag=0",
		hosts: local,
		opts: func(c *Config) {
			c.ReplicaSelection, c.CausalReadsTimeout, c.ReadFromSourceWhenNoReplicas = "least-in-flight", 5*time.Second, false
		}},
	{name: "causalReads=none needs nothing", dsn: "/?causalReads=none&causalReadsTimeout=1ns", hosts: local,
		opts: func(c *Config) { c.CausalReadsTimeout = 1 }},
	{name: "maxReplicaLag below a second", dsn: "/?replicaReads=true&checkInterval=100ms&maxReplicaLag=500ms", hosts: local,
		opts: func(c *Config) {
			c.ReplicaReads, c.CheckInterval, c.MaxReplicaLag = true, 100*time.Millisecond, 500*time.Millisecond
		}},

	// Cluster types.
	{name: "cluster=galera", dsn: "tcp(h1,h2,h3)/?cluster=galera", hosts: []Host{{Name: "h1", Port: 3306}, {Name: "h2", Port: 3306}, {Name: "h3", Port: 3306}},
		opts: func(c *Config) { c.Cluster = "galera" }},
	{name: "cluster=group", dsn: "/?cluster=group", hosts: local, opts: func(c *Config) { c.Cluster = "group" }},
	{name: "cluster=replication", dsn: "/?cluster=replication", hosts: local, opts: func(c *Config) { c.Cluster = "replication" }},
	{name: "cluster default written out", dsn: "/?cluster=auto", hosts: local},
	{name: "cluster typo", dsn: "/?cluster=galara", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: cluster: invalid value "galara": did you mean "galera"?`, "auto, replication, galera or group"}},
	{name: "cluster in the wrong case", dsn: "/?cluster=Galera", wantErr: ErrInvalidOption, errParts: []string{`did you mean "galera"?`}},
	{name: "cluster by product name", dsn: "/?cluster=pxc", wantErr: ErrInvalidOption, errParts: []string{`"pxc": did you mean "galera"?`}},
	{name: "cluster group replication", dsn: "/?cluster=group_replication", wantErr: ErrInvalidOption, errParts: []string{`did you mean "group"?`}},
	{name: "cluster unknown", dsn: "/?cluster=ndb", wantErr: ErrInvalidOption, errParts: []string{`dsn: cluster: invalid value "ndb": want auto, replication, galera or group`}},
	{name: "cluster key typo", dsn: "/?Cluster=galera", wantErr: ErrInvalidOption, errParts: []string{`did you mean "cluster"?`}},

	// Discovery errors.
	{name: "discoverHosts without checkInterval", dsn: "u:" + testPW + "@tcp(h1)/db?discoverHosts=true", wantErr: ErrInvalidOption,
		errParts: []string{"dsn: discoverHosts needs checkInterval > 0", "set checkInterval"}},
	{name: "bad discoverHosts", dsn: "/?discoverHosts=yes&checkInterval=1s", wantErr: ErrInvalidOption, errParts: []string{`discoverHosts: invalid value "yes"`}},

	// Read/write splitting errors.
	{name: "maxReplicaLag without replicaReads", dsn: "u:" + testPW + "@tcp(h1,h2)/db?maxReplicaLag=5s&checkInterval=1s", wantErr: ErrInvalidOption,
		errParts: []string{"dsn: maxReplicaLag needs replicaReads=true", "maxReplicaLag=5s", "set replicaReads=true"}},
	{name: "maxReplicaLag without checkInterval", dsn: "u:" + testPW + "@tcp(h1,h2)/db?replicaReads=true&maxReplicaLag=5s", wantErr: ErrInvalidOption,
		errParts: []string{"dsn: maxReplicaLag needs checkInterval > 0 (the probes read replica lag)", "set checkInterval"}},
	{name: "maxReplicaLag with checkInterval=0", dsn: "/?replicaReads=true&maxReplicaLag=5s&checkInterval=0", wantErr: ErrInvalidOption,
		errParts: []string{"maxReplicaLag needs checkInterval > 0"}},
	{name: "negative maxReplicaLag", dsn: "/?maxReplicaLag=-1s", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: maxReplicaLag: invalid value "-1s": want a duration >= 0`}},
	{name: "maxReplicaLag without unit", dsn: "/?maxReplicaLag=10", wantErr: ErrInvalidOption, errParts: []string{`maxReplicaLag: invalid value "10"`, "duration"}},
	{name: "unknown replicaSelection", dsn: "u:" + testPW + "@tcp(h1)/db?replicaSelection=x", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: replicaSelection: invalid value "x": want round-robin or least-in-flight`}},
	{name: "replicaSelection with underscores", dsn: "/?replicaSelection=least_in_flight", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: replicaSelection: invalid value "least_in_flight": did you mean "least-in-flight"?`, "case-sensitive"}},
	{name: "replicaSelection without dash", dsn: "/?replicaSelection=RoundRobin", wantErr: ErrInvalidOption, errParts: []string{`did you mean "round-robin"?`}},
	{name: "replicaSelection in MaxScale's words", dsn: "/?replicaSelection=LEAST_CURRENT_OPERATIONS", wantErr: ErrInvalidOption,
		errParts: []string{`"LEAST_CURRENT_OPERATIONS": did you mean "least-in-flight"?`}},
	{name: "empty replicaSelection", dsn: "/?replicaSelection=", wantErr: ErrInvalidOption, errParts: []string{`replicaSelection: invalid value "": want round-robin or least-in-flight`}},
	{name: "unknown causalReads", dsn: "/?replicaReads=true&causalReads=yes", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: causalReads: invalid value "yes": want none, local or global`}},
	{name: "causalReads in the wrong case", dsn: "/?replicaReads=true&causalReads=Local", wantErr: ErrInvalidOption,
		errParts: []string{`"Local": did you mean "local"?`, "case-sensitive"}},
	{name: "MaxScale's causalReads=fast_global", dsn: "/?replicaReads=true&causalReads=fast_global", wantErr: ErrInvalidOption,
		errParts: []string{`causalReads: invalid value "fast_global": want none, local or global`, "not offered"}},
	{name: "causalReads without replicaReads", dsn: "u:" + testPW + "@tcp(h1,h2)/db?causalReads=global", wantErr: ErrInvalidOption,
		errParts: []string{"dsn: causalReads needs replicaReads=true", "causalReads=global"}},
	{name: "causalReads with replicaReads=false", dsn: "/?causalReads=local&replicaReads=false", wantErr: ErrInvalidOption,
		errParts: []string{"causalReads needs replicaReads=true"}},
	{name: "causalReadsTimeout=0", dsn: "/?replicaReads=true&causalReads=local&causalReadsTimeout=0", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: causalReadsTimeout: invalid value "0": want a duration > 0`}},
	{name: "causalReadsTimeout=0s without causalReads", dsn: "/?causalReadsTimeout=0s", wantErr: ErrInvalidOption, errParts: []string{"want a duration > 0"}},
	{name: "negative causalReadsTimeout", dsn: "/?causalReadsTimeout=-1s", wantErr: ErrInvalidOption, errParts: []string{`causalReadsTimeout: invalid value "-1s"`}},
	{name: "causalReadsTimeout without unit", dsn: "/?causalReadsTimeout=2", wantErr: ErrInvalidOption, errParts: []string{`causalReadsTimeout: invalid value "2"`, "duration"}},
	{name: "bad replicaReads", dsn: "/?replicaReads=yes", wantErr: ErrInvalidOption, errParts: []string{`replicaReads: invalid value "yes"`}},
	{name: "replicaReads without value", dsn: "/?replicaReads", wantErr: ErrSyntax, errParts: []string{"replicaReads", "=value"}},
	{name: "causalReads twice differing", dsn: "/?replicaReads=1&causalReads=local&causalReads=global", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: causalReads given twice with different values ("local" and "global")`}},
	{name: "readFrom alias conflict", dsn: "u:" + testPW + "@tcp(h1)/db?readFromSourceWhenNoReplicas=true&readFromMasterWhenNoSlaves=false", wantErr: ErrInvalidOption,
		errParts: []string{`dsn: readFromSourceWhenNoReplicas="true" and readFromMasterWhenNoSlaves="false" disagree: they are the same option`, "...Slaves to ...Replicas"}},

	// Near misses of the replica keys.
	{name: "replicareads", dsn: "/?replicareads=true", wantErr: ErrInvalidOption, errParts: []string{`"replicareads": did you mean "replicaReads"?`}},
	{name: "replica_reads", dsn: "/?replica_reads=true", wantErr: ErrInvalidOption, errParts: []string{`did you mean "replicaReads"?`}},
	{name: "MaxScale's causal_reads", dsn: "/?causal_reads=local", wantErr: ErrInvalidOption, errParts: []string{`"causal_reads": did you mean "causalReads"?`}},
	{name: "MaxScale's causal_reads_timeout", dsn: "/?causal_reads_timeout=1s", wantErr: ErrInvalidOption, errParts: []string{`did you mean "causalReadsTimeout"?`}},
	{name: "maxReplicaLAG", dsn: "/?maxReplicaLAG=1s", wantErr: ErrInvalidOption, errParts: []string{`did you mean "maxReplicaLag"?`}},
	{name: "replicaSelections", dsn: "/?replicaSelections=round-robin", wantErr: ErrInvalidOption, errParts: []string{`did you mean "replicaSelection"?`}},
	{name: "readFromSourceWhenNoReplica", dsn: "/?readFromSourceWhenNoReplica=true", wantErr: ErrInvalidOption,
		errParts: []string{`did you mean "readFromSourceWhenNoReplicas"?`}},
	{name: "readFromMasterWhenNoSlave", dsn: "/?readFromMasterWhenNoSlave=true", wantErr: ErrInvalidOption,
		errParts: []string{`did you mean "readFromMasterWhenNoSlaves"?`}},
}

func want[T comparable](t *testing.T, what string, got, want T) {
	t.Helper()
	if got != want {
		t.Errorf("%s = %v, want %v", what, got, want)
	}
}

// TestParse runs the table: results match, errors wrap the right sentinel and
// name what is wrong, and no error contains the password.
func TestParse(t *testing.T) {
	for _, tt := range parseTests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.dsn)
			if tt.wantErr != nil {
				if err == nil {
					t.Fatalf("Parse(%q) = %v, want an error", tt.dsn, c)
				}
				if c != nil {
					t.Errorf("Parse returned a Config with the error")
				}
				msg := err.Error()
				if !strings.HasPrefix(msg, "dsn: ") {
					t.Errorf("error %q does not start with \"dsn: \"", msg)
				}
				if tt.wantErr != errAny && !errors.Is(err, tt.wantErr) {
					t.Errorf("error %q does not wrap %v", msg, tt.wantErr)
				}
				for _, p := range tt.errParts {
					if !strings.Contains(msg, p) {
						t.Errorf("error %q does not contain %q", msg, p)
					}
				}
				if strings.Contains(msg, testPW) || strings.Contains(msg, testToken) {
					t.Errorf("error %q contains the password or the token", msg)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.dsn, err)
			}
			exp := NewConfig()
			exp.Hosts = tt.hosts
			if tt.opts != nil {
				tt.opts(exp)
			}
			exp.MySQL = c.MySQL
			if d := diffConfig(c, exp); d != "" {
				t.Errorf("Parse(%q): %s", tt.dsn, d)
			}
			if err := c.Validate(); err != nil {
				t.Errorf("Validate of a parsed Config: %v", err)
			}
			if tt.my != nil {
				tt.my(t, c.MySQL)
			}
			if c.MySQL.Addr != c.Hosts[0].Addr() {
				t.Errorf("MySQL.Addr = %q, want the primary %q", c.MySQL.Addr, c.Hosts[0].Addr())
			}
		})
	}
}

// diffConfig describes how a and b differ, or returns "". MySQL is compared
// by go-sql-driver's FormatDSN (which covers user, net, database and every
// parameter; Addr is left out, as the driver replaces it per host) plus the password
// and TLS: DeepEqual would trip over
// *time.Location caches and unexported fields go-sql-driver itself does not
// round-trip (a negative timeTruncate).
func diffConfig(a, b *Config) string {
	var d []string
	if !reflect.DeepEqual(a.Hosts, b.Hosts) {
		d = append(d, fmt.Sprintf("Hosts %v != %v", a.Hosts, b.Hosts))
	}
	ao, bo := *a, *b
	ao.Hosts, bo.Hosts, ao.MySQL, bo.MySQL = nil, nil, nil, nil
	if !reflect.DeepEqual(ao, bo) {
		d = append(d, fmt.Sprintf("options %+v != %+v", ao, bo))
	}
	switch am, bm := a.MySQL, b.MySQL; {
	case am == nil || bm == nil:
		if am != bm {
			d = append(d, "one MySQL is nil")
		}
	default:
		if af, bf := formatUsed(am), formatUsed(bm); af != bf {
			d = append(d, fmt.Sprintf("MySQL %q != %q", af, bf))
		}
		if am.Passwd != bm.Passwd {
			d = append(d, "MySQL.Passwd differs")
		}
		if (am.TLS == nil) != (bm.TLS == nil) {
			d = append(d, "MySQL.TLS differs")
		}
	}
	return strings.Join(d, "; ")
}

// formatUsed is go-sql-driver's FormatDSN of what the driver uses from m:
// Addr is replaced per host, and Net "" means tcp.
func formatUsed(m *mysql.Config) string {
	m = m.Clone()
	m.Addr, m.Net = "", dialNet(m.Net)
	return m.FormatDSN()
}

// TestRoundTrip: for every valid row, Parse(FormatDSN()) gives an equal
// Config, and formatting is stable.
func TestRoundTrip(t *testing.T) {
	for _, tt := range parseTests {
		if tt.wantErr != nil {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.dsn)
			if err != nil {
				t.Fatal(err)
			}
			checkRoundTrip(t, c)
		})
	}
}

// checkValidFormat checks that c is valid, formats as want and round-trips.
func checkValidFormat(t *testing.T, c *Config, want string) {
	t.Helper()
	if err := c.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	if got := c.FormatDSN(); got != want {
		t.Errorf("FormatDSN() = %q, want %q", got, want)
	}
	checkRoundTrip(t, c)
}

func checkRoundTrip(t *testing.T, c *Config) {
	t.Helper()
	s := c.FormatDSN()
	c2, err := Parse(s)
	if err != nil {
		t.Fatalf("Parse(FormatDSN()) of %q: %v", c.String(), err)
	}
	if d := diffConfig(c, c2); d != "" {
		t.Errorf("round trip through %q: %s", c2.String(), d)
	}
	if s2 := c2.FormatDSN(); s2 != s {
		t.Errorf("FormatDSN not stable: %q then %q", c.String(), c2.String())
	}
}

// TestFormatDSN pins the output for hand-built Configs: host list, user info,
// only non-default options in a fixed order under the Master names.
func TestFormatDSN(t *testing.T) {
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
		{"defaults with default host", withHosts(local...), "tcp(127.0.0.1:3306)/"},
		{"hosts and IPv6", withHosts(Host{Name: "db1", Port: 3306}, Host{Name: "::1", Port: 3307}), "tcp(db1:3306,[::1]:3307)/"},
		{"options", func() *Config {
			c := withHosts(Host{Name: "db1", Port: 3306})
			c.MySQL.User, c.MySQL.Passwd, c.MySQL.DBName = "app", "pw", "shop"
			c.MySQL.ParseTime = true
			c.HostTimeout, c.ReadOnly, c.FailOverReadOnly = 0, true, false
			c.RetriesAllDown, c.SecondsBeforeRetryMaster, c.QueriesBeforeRetryMaster = 1, 2, 3
			return c
		}(), "app:pw@tcp(db1:3306)/shop?parseTime=true&retriesAllDown=1&secondsBeforeRetryMaster=2&queriesBeforeRetryMaster=3&failOverReadOnly=false&readOnly=true&hostTimeout=0s"},
		{"password without user", func() *Config {
			c := withHosts(Host{Name: "db1", Port: 3306})
			c.MySQL.Passwd = "pw"
			return c
		}(), ":pw@tcp(db1:3306)/"},
		{"tcp6 and empty net", func() *Config {
			c := withHosts(Host{Name: "::1", Port: 3306})
			c.MySQL.Net = "tcp6"
			return c
		}(), "tcp6([::1]:3306)/"},
		{"nil MySQL", &Config{Hosts: []Host{{Name: "db1", Port: 3306}}, RetriesAllDown: defaultRetriesAllDown, SecondsBeforeRetryMaster: defaultSecondsBeforeRetryMaster,
			QueriesBeforeRetryMaster: defaultQueriesBeforeRetryMaster, FailOverReadOnly: true, HostTimeout: defaultHostTimeout,
			FailoverDelay: defaultFailoverDelay, SwitchBackDelay: defaultSwitchBackDelay, CalmCheckInterval: defaultCalmCheckInterval, ReadFromSourceWhenNoReplicas: true, AllowSourceDownConnections: true}, "tcp(db1:3306)/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.c.FormatDSN(); got != tt.want {
				t.Errorf("FormatDSN() = %q, want %q", got, tt.want)
			}
			if tt.c.MySQL != nil {
				checkRoundTrip(t, tt.c)
			}
		})
	}
}

// TestRedaction: String, GoString and every fmt verb hide the password and
// hostsToken, for parsed and hand-built Configs, while FormatDSN keeps them.
// (A Config value, *c, prints its fields: HostsToken is a plain string.)
func TestRedaction(t *testing.T) {
	for _, tt := range parseTests {
		hasPW, hasToken := strings.Contains(tt.dsn, testPW), strings.Contains(tt.dsn, "hostsToken="+testToken)
		if tt.wantErr != nil || !hasPW && !hasToken {
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			c, err := Parse(tt.dsn)
			if err != nil {
				t.Fatal(err)
			}
			f := c.FormatDSN()
			if hasPW && !strings.Contains(f, testPW) || hasToken && !strings.Contains(f, "&hostsToken="+testToken) {
				t.Errorf("FormatDSN() = %q lost the password or the token", f)
			}
			prints := []string{
				c.String(), c.GoString(),
				fmt.Sprint(c), fmt.Sprintf("%v|%+v|%s|%#v|%q", c, c, c, c, c),
				fmt.Sprintf("%v|%#v", []*Config{c}, []*Config{c}),
			}
			if !hasToken {
				prints = append(prints, fmt.Sprintf("%v|%+v|%#v", *c, *c, *c))
			}
			for _, s := range prints {
				if strings.Contains(s, testPW) || strings.Contains(s, testToken) {
					t.Errorf("password or token printed: %s", s)
				}
			}
			if hasPW && !strings.Contains(c.String(), ":xxxxx@") {
				t.Errorf("String() = %q, want the password as xxxxx", c.String())
			}
			if hasToken && !strings.Contains(c.String(), "&hostsToken=xxxxx") {
				t.Errorf("String() = %q, want the token as xxxxx", c.String())
			}
			r := c.Clone()
			if hasPW {
				r.MySQL.Passwd = "xxxxx"
			}
			if hasToken {
				r.HostsToken = "xxxxx"
			}
			if r.HostsURL != "" {
				r.HostsURL = redactURL(r.HostsURL) // its query may hold a key
			}
			want(t, "String()", c.String(), r.FormatDSN())
		})
	}
	var nilCfg *Config
	want(t, "nil String", nilCfg.String(), "<nil>")
	want(t, "nil GoString", fmt.Sprintf("%#v", nilCfg), "(*dsn.Config)(nil)")
	c := NewConfig()
	c.Hosts = local
	want(t, "String without password", c.String(), "tcp(127.0.0.1:3306)/")
	want(t, "GoString", c.GoString(), `dsn.Config("tcp(127.0.0.1:3306)/")`)
}

// TestValidate checks hand-built Configs: each broken field yields the right
// sentinel and a message naming it; Validate does not modify the Config.
func TestValidate(t *testing.T) {
	good := func() *Config {
		c := NewConfig()
		c.Hosts = []Host{{Name: "db1", Port: 3306}, {Name: "db2", Port: 3307}}
		c.MySQL.User, c.MySQL.Passwd = "u", testPW
		return c
	}
	tests := []struct {
		name    string
		change  func(*Config)
		wantErr error
		parts   []string
	}{
		{"valid", func(*Config) {}, nil, nil},
		{"zero values allowed", func(c *Config) {
			c.RetriesAllDown, c.SecondsBeforeRetryMaster, c.QueriesBeforeRetryMaster, c.HostTimeout = 0, 0, 0, 0
		}, nil, nil},
		{"empty Net allowed", func(c *Config) { c.MySQL.Net = "" }, nil, nil},
		{"tcp6 allowed", func(c *Config) { c.MySQL.Net = "tcp6" }, nil, nil},
		{"no hosts", func(c *Config) { c.Hosts = nil }, ErrInvalidHost, []string{"no hosts"}},
		{"empty name", func(c *Config) { c.Hosts[1].Name = "" }, ErrInvalidHost, []string{"Hosts[1]", "empty"}},
		{"comma in name", func(c *Config) { c.Hosts[0].Name = "a,b" }, ErrInvalidHost, []string{"Hosts[0]", `','`}},
		{"port 0", func(c *Config) { c.Hosts[1].Port = 0 }, ErrInvalidHost, []string{"Hosts[1]", "1..65535"}},
		{"port 65536", func(c *Config) { c.Hosts[0].Port = 65536 }, ErrInvalidHost, []string{"Hosts[0]"}},
		{"duplicate", func(c *Config) { c.Hosts[1] = Host{Name: "DB1", Port: 3306} }, ErrInvalidHost, []string{"Hosts[1]", "duplicate of Hosts[0]"}},
		{"negative retries", func(c *Config) { c.RetriesAllDown = -1 }, ErrInvalidOption, []string{"RetriesAllDown", "-1"}},
		{"negative seconds", func(c *Config) { c.SecondsBeforeRetryMaster = -2 }, ErrInvalidOption, []string{"SecondsBeforeRetryMaster", "seconds"}},
		{"negative queries", func(c *Config) { c.QueriesBeforeRetryMaster = -3 }, ErrInvalidOption, []string{"QueriesBeforeRetryMaster"}},
		{"negative timeout", func(c *Config) { c.HostTimeout = -time.Second }, ErrInvalidOption, []string{"HostTimeout"}},
		{"nil MySQL", func(c *Config) { c.MySQL = nil }, ErrInvalidOption, []string{"MySQL"}},
		{"unix with two hosts", func(c *Config) { c.MySQL.Net = "unix" }, ErrNotTCP, []string{`2 hosts on network "unix"`, "exactly one socket path"}},
		{"unix socket", func(c *Config) { c.MySQL.Net, c.Hosts = "unix", []Host{{Name: "/run/mysqld/mysqld.sock"}} }, nil, nil},
		{"unix socket with a port", func(c *Config) { c.MySQL.Net, c.Hosts = "unix", []Host{{Name: "/run/m.sock", Port: 3306}} }, ErrInvalidHost, []string{"Hosts[0]", "no port"}},
		{"unix socket and hostsURL", func(c *Config) {
			c.MySQL.Net, c.Hosts = "unix", []Host{{Name: "/run/m.sock"}}
			c.CheckInterval, c.HostsURL = time.Second, "https://cfg.example/h"
		}, ErrInvalidOption, []string{"hostsURL", `"unix"`}},
		{"unix socket and discoverHosts", func(c *Config) {
			c.MySQL.Net, c.Hosts = "unix", []Host{{Name: "/run/m.sock"}}
			c.CheckInterval, c.DiscoverHosts = time.Second, true
		}, ErrInvalidOption, []string{"discoverHosts", `"unix"`}},
		{"registered network", func(c *Config) { c.MySQL.Net, c.Hosts = "tunnel", []Host{{Name: "p:r:i"}, {Name: "db2:3307", DC: "b"}} }, nil, nil},
		{"registered network, bad opaque address", func(c *Config) { c.MySQL.Net, c.Hosts[0] = "tunnel", Host{Name: "a b"} }, ErrInvalidHost, []string{"Hosts[0]", "blank"}},
		{"TCP host with port 0", func(c *Config) { c.Hosts[0] = Host{Name: "p:r:i"} }, ErrInvalidHost, []string{"Hosts[0]"}},
		{"mangled network", func(c *Config) { c.MySQL.Net = "u:pw" }, ErrNotTCP, []string{"not a network name"}},
		{"our key in Params", func(c *Config) { c.MySQL.Params = map[string]string{"readOnly": "1"} }, ErrInvalidOption,
			[]string{`"readOnly"`, "Config.ReadOnly"}},
		{"our key in Params in other case", func(c *Config) { c.MySQL.Params = map[string]string{"RETRIESALLDOWN": "1"} }, ErrInvalidOption,
			[]string{`"RETRIESALLDOWN"`, "Config.RetriesAllDown"}},
		{"alias in Params", func(c *Config) { c.MySQL.Params = map[string]string{"secondsbeforeretrysource": "1"} }, ErrInvalidOption,
			[]string{"Config.SecondsBeforeRetryMaster"}},

		// Labels and topology.
		{"labels, localDC, remote hosts, target", func(c *Config) {
			c.Hosts = append(c.Hosts, Host{Name: "db3", Port: 3306, DC: "west"})
			c.Hosts[0].DC, c.Hosts[1].DC = "east", "east"
			c.LocalDC, c.UsedHostsPerRemoteDC, c.TargetSessionAttrs = "east", 1, attrs.Standby
		}, nil, nil},
		{"labels without localDC", func(c *Config) { c.Hosts[1].DC = "west" }, nil, nil},
		{"bad dc label", func(c *Config) { c.Hosts[1].DC = "we st" }, ErrInvalidHost,
			[]string{`Hosts[1] ("db2", port 3307)`, `dc label "we st" contains ' '`, "1..64 bytes"}},
		{"long dc label", func(c *Config) { c.Hosts[0].DC = strings.Repeat("x", 65) }, ErrInvalidHost, []string{"Hosts[0]", "dc label of 65 bytes"}},
		{"semicolon in name", func(c *Config) { c.Hosts[0].Name = "db1;dc=east" }, ErrInvalidHost, []string{"Hosts[0]", `contains ';'`}},
		{"equals sign in name", func(c *Config) { c.Hosts[1].Name = "a=b" }, ErrInvalidHost, []string{"Hosts[1]", `contains '='`}},
		{"duplicate with other labels", func(c *Config) {
			c.Hosts[0].DC = "east"
			c.Hosts[1] = Host{Name: "db1", Port: 3306, DC: "west"}
		}, ErrInvalidHost, []string{"Hosts[1]", "duplicate of Hosts[0]"}},
		{"unknown target", func(c *Config) { c.TargetSessionAttrs = "master" }, ErrInvalidOption,
			[]string{`dsn: TargetSessionAttrs is "master": want one of any, read-write, read-only, primary, standby, prefer-standby, or "" (any)`}},
		{"target in the wrong case", func(c *Config) { c.TargetSessionAttrs = "READ-ONLY" }, ErrInvalidOption,
			[]string{`TargetSessionAttrs is "READ-ONLY": did you mean "read-only"?`}},
		{"bad LocalDC", func(c *Config) { c.Hosts[0].DC = "east"; c.LocalDC = "east;dc" }, ErrInvalidOption,
			[]string{`dsn: LocalDC is "east;dc": want a dc label, 1..64 bytes`}},
		{"LocalDC without labels", func(c *Config) { c.LocalDC = "dc1" }, ErrInvalidOption,
			[]string{`dsn: localDC "dc1": no host has a dc label (write them as tcp(db1:3306;dc=east,...))`}},
		{"LocalDC matching no label", func(c *Config) { c.Hosts[0].DC, c.Hosts[1].DC, c.LocalDC = "b", "a", "c" }, ErrInvalidOption,
			[]string{`dsn: localDC "c" matches no host's dc label; known DCs: a, b (labels are case-sensitive)`}},
		{"LocalDC in other case", func(c *Config) { c.Hosts[0].DC, c.LocalDC = "East", "east" }, ErrInvalidOption,
			[]string{`known DCs: East; labels are case-sensitive: did you mean "East"?`}},
		{"negative UsedHostsPerRemoteDC", func(c *Config) { c.UsedHostsPerRemoteDC = -1 }, ErrInvalidOption,
			[]string{"dsn: UsedHostsPerRemoteDC is -1: want a count >= 0"}},
		{"UsedHostsPerRemoteDC without labels", func(c *Config) { c.UsedHostsPerRemoteDC = 3 }, ErrInvalidOption,
			[]string{"usedHostsPerRemoteDC=3 needs dc labels on the hosts"}},
		{"UsedHostsPerRemoteDC without LocalDC", func(c *Config) { c.Hosts[0].DC = "east"; c.UsedHostsPerRemoteDC = 1 }, ErrInvalidOption,
			[]string{"usedHostsPerRemoteDC=1 needs localDC"}},
		{"topology key in Params", func(c *Config) { c.MySQL.Params = map[string]string{"localdc": "east"} }, ErrInvalidOption,
			[]string{`"localdc"`, "Config.LocalDC"}},

		// Probes and the host list provider.
		{"probes and provider", func(c *Config) {
			c.CheckInterval, c.FailoverDelay, c.SwitchBackDelay = 250*time.Millisecond, 0, 0
			c.HostsURL, c.HostsToken = "https://cfg.example/hosts?x=a&y=b+c%2F", testToken+"+/=="
		}, nil, nil},
		{"http with HostsAllowHTTP", func(c *Config) {
			c.CheckInterval, c.HostsURL, c.HostsAllowHTTP = time.Second, "http://10.0.0.1:8080/h", true
		}, nil, nil},
		{"delays and HostsAllowHTTP without probing", func(c *Config) {
			c.FailoverDelay, c.SwitchBackDelay, c.HostsAllowHTTP = time.Hour, time.Nanosecond, true
		}, nil, nil},
		{"negative CheckInterval", func(c *Config) { c.CheckInterval = -time.Second }, ErrInvalidOption,
			[]string{"dsn: CheckInterval is -1s: want a duration >= 0 (0: probing off)"}},
		{"negative FailoverDelay", func(c *Config) { c.FailoverDelay = -time.Millisecond }, ErrInvalidOption,
			[]string{"dsn: FailoverDelay is -1ms: want a duration >= 0"}},
		{"negative SwitchBackDelay", func(c *Config) { c.SwitchBackDelay = -1 }, ErrInvalidOption,
			[]string{"dsn: SwitchBackDelay is -1ns: want a duration >= 0"}},
		{"CheckInterval too small", func(c *Config) { c.CheckInterval = time.Millisecond }, ErrInvalidOption,
			[]string{"dsn: checkInterval=1ms is too small: want 0 (probing off) or at least 10ms"}},
		{"HostsURL without CheckInterval", func(c *Config) { c.HostsURL = "https://cfg/h" }, ErrInvalidOption,
			[]string{"dsn: hostsURL needs checkInterval > 0"}},
		{"HostsURL with user info", func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "https://u:"+testToken+"@cfg/h" }, ErrInvalidOption,
			[]string{"dsn: hostsURL (not shown: it may hold credentials): must not carry credentials"}},
		{"HostsURL with user info that does not parse", func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "https://u:"+testToken+"%zz@cfg/h" }, ErrInvalidOption,
			[]string{"dsn: hostsURL (not shown: it may hold credentials): not a valid URL"}},
		{"HostsURL that does not parse", func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "https://cfg/%zz" }, ErrInvalidOption,
			[]string{`dsn: hostsURL "https://cfg/%zz": not a valid URL: invalid URL escape "%zz"`}},
		{"HostsURL with a control character", func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "https://cfg/\x00" }, ErrInvalidOption,
			[]string{`"https://cfg/\x00": contains a blank or control character`}},
		{"HostsURL plain http", func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "http://10.0.0.1/h" }, ErrInvalidOption,
			[]string{"plain http", "hostsAllowHTTP=true"}},
		{"HostsURL relative", func(c *Config) { c.CheckInterval, c.HostsURL = time.Second, "/hosts.json" }, ErrInvalidOption,
			[]string{`scheme ""`}},
		{"HostsToken without HostsURL", func(c *Config) { c.HostsToken = testToken }, ErrInvalidOption,
			[]string{"dsn: hostsToken needs hostsURL"}},
		{"HostsToken with &", func(c *Config) {
			c.CheckInterval, c.HostsURL, c.HostsToken = time.Second, "https://cfg/h", testToken+"&x=y"
		}, ErrInvalidOption,
			[]string{"dsn: hostsToken (not shown): contains a character outside the b64token set"}},
		{"HostsToken with a header line", func(c *Config) {
			c.CheckInterval, c.HostsURL, c.HostsToken = time.Second, "https://cfg/h", testToken+"\r\nX: y"
		}, ErrInvalidOption,
			[]string{"blank or control character"}},
		{"HostsToken in Params", func(c *Config) { c.MySQL.Params = map[string]string{"hoststoken": testToken} }, ErrInvalidOption,
			[]string{`"hoststoken"`, "Config.HostsToken"}},
		{"checkInterval in Params", func(c *Config) { c.MySQL.Params = map[string]string{"checkInterval": "1s"} }, ErrInvalidOption,
			[]string{"Config.CheckInterval"}},

		// Read/write splitting.
		{"replica options", func(c *Config) {
			c.ReplicaReads, c.CheckInterval, c.MaxReplicaLag, c.ReplicaSelection = true, time.Second, 3*time.Second, "least-in-flight"
			c.ReadFromSourceWhenNoReplicas, c.CausalReads, c.CausalReadsTimeout = false, "global", 100*time.Millisecond
		}, nil, nil},
		{"replica options without ReplicaReads", func(c *Config) {
			c.ReplicaSelection, c.ReadFromSourceWhenNoReplicas, c.CausalReads, c.CausalReadsTimeout = "least-in-flight", false, "none", time.Hour
		}, nil, nil},
		{"negative MaxReplicaLag", func(c *Config) { c.ReplicaReads, c.CheckInterval, c.MaxReplicaLag = true, time.Second, -time.Second }, ErrInvalidOption,
			[]string{"dsn: MaxReplicaLag is -1s: want a duration >= 0 (0: no bound)"}},
		{"MaxReplicaLag without ReplicaReads", func(c *Config) { c.CheckInterval, c.MaxReplicaLag = time.Second, time.Minute }, ErrInvalidOption,
			[]string{"dsn: maxReplicaLag needs replicaReads=true", "maxReplicaLag=1m0s"}},
		{"MaxReplicaLag without CheckInterval", func(c *Config) { c.ReplicaReads, c.MaxReplicaLag = true, time.Minute }, ErrInvalidOption,
			[]string{"dsn: maxReplicaLag needs checkInterval > 0 (the probes read replica lag)"}},
		{"unknown ReplicaSelection", func(c *Config) { c.ReplicaSelection = "random" }, ErrInvalidOption,
			[]string{`dsn: replicaSelection="random": want round-robin or least-in-flight (or "": round-robin)`}},
		{"ReplicaSelection in the wrong case", func(c *Config) { c.ReplicaSelection = "Round-Robin" }, ErrInvalidOption,
			[]string{`dsn: replicaSelection="Round-Robin": did you mean "round-robin"?`}},
		{"unknown CausalReads", func(c *Config) { c.ReplicaReads, c.CausalReads = true, "universal" }, ErrInvalidOption,
			[]string{`dsn: causalReads="universal": want none, local or global (or "": none)`, "not offered"}},
		{"CausalReads without ReplicaReads", func(c *Config) { c.CausalReads = "local" }, ErrInvalidOption,
			[]string{"dsn: causalReads needs replicaReads=true", "leave causalReads=local out"}},
		{"CausalReads with CausalReadsTimeout 0", func(c *Config) { c.ReplicaReads, c.CausalReads, c.CausalReadsTimeout = true, "local", 0 }, ErrInvalidOption,
			[]string{"dsn: causalReadsTimeout=0s: want a duration > 0", "default is 1s"}},
		{"negative CausalReadsTimeout", func(c *Config) { c.CausalReadsTimeout = -time.Millisecond }, ErrInvalidOption,
			[]string{"dsn: causalReadsTimeout=-1ms: want a duration > 0"}},
		{"Cluster galera", func(c *Config) { c.Cluster = "galera" }, nil, nil},
		{"unknown Cluster", func(c *Config) { c.Cluster = "Galera" }, ErrInvalidOption,
			[]string{`dsn: cluster="Galera": did you mean "galera"?`, `(or "": auto)`}},
		{"replica key in Params", func(c *Config) { c.MySQL.Params = map[string]string{"causalreads": "local"} }, ErrInvalidOption,
			[]string{`"causalreads"`, "Config.CausalReads"}},
		{"replica alias in Params", func(c *Config) { c.MySQL.Params = map[string]string{"readFromMasterWhenNoSlaves": "true"} }, ErrInvalidOption,
			[]string{`"readFromMasterWhenNoSlaves"`, "Config.ReadFromSourceWhenNoReplicas"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := good()
			tt.change(c)
			before := c.Clone()
			err := c.Validate()
			if d := diffConfig(c, before); d != "" {
				t.Errorf("Validate modified the Config: %s", d)
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				checkRoundTrip(t, c)
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want %v", tt.wantErr)
			}
			msg := err.Error()
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("error %q does not wrap %v", msg, tt.wantErr)
			}
			if !strings.HasPrefix(msg, "dsn: ") || strings.Contains(msg, testPW) || strings.Contains(msg, testToken) {
				t.Errorf("error %q: want a \"dsn: \" prefix and no password or token", msg)
			}
			for _, p := range tt.parts {
				if !strings.Contains(msg, p) {
					t.Errorf("error %q does not contain %q", msg, p)
				}
			}
		})
	}
	var nilCfg *Config
	if err := nilCfg.Validate(); err == nil {
		t.Error("nil Config validated")
	}
}

// TestNewConfig pins the defaults against the constants and Connector/J's
// values.
func TestNewConfig(t *testing.T) {
	c := NewConfig()
	want(t, "RetriesAllDown", c.RetriesAllDown, 120)
	want(t, "SecondsBeforeRetryMaster", c.SecondsBeforeRetryMaster, 30)
	want(t, "QueriesBeforeRetryMaster", c.QueriesBeforeRetryMaster, 50)
	want(t, "FailOverReadOnly", c.FailOverReadOnly, true)
	want(t, "ReadOnly", c.ReadOnly, false)
	want(t, "HostTimeout", c.HostTimeout, 5*time.Second)
	want(t, "TargetSessionAttrs", c.TargetSessionAttrs, attrs.Any)
	want(t, "LocalDC", c.LocalDC, "")
	want(t, "UsedHostsPerRemoteDC", c.UsedHostsPerRemoteDC, 0)
	want(t, "CheckInterval", c.CheckInterval, 0)
	want(t, "FailoverDelay", c.FailoverDelay, time.Second)
	want(t, "SwitchBackDelay", c.SwitchBackDelay, 30*time.Second)
	want(t, "HostsURL", c.HostsURL, "")
	want(t, "HostsToken", c.HostsToken, "")
	want(t, "HostsAllowHTTP", c.HostsAllowHTTP, false)
	want(t, "ReplicaReads", c.ReplicaReads, false)
	want(t, "MaxReplicaLag", c.MaxReplicaLag, 0)
	want(t, "ReplicaSelection", c.ReplicaSelection, "round-robin")
	want(t, "ReadFromSourceWhenNoReplicas", c.ReadFromSourceWhenNoReplicas, true) // Connector/J: false
	want(t, "CausalReads", c.CausalReads, "none")
	want(t, "CausalReadsTimeout", c.CausalReadsTimeout, time.Second)
	want(t, "defaultCheckInterval", defaultCheckInterval, 0)
	want(t, "minCheckInterval", minCheckInterval, 10*time.Millisecond)
	if c.Hosts != nil || c.MySQL == nil {
		t.Errorf("Hosts = %v, MySQL = %p: want nil hosts and a MySQL config", c.Hosts, c.MySQL)
	}
	if d := (&Config{MySQL: c.MySQL}).MySQL.FormatDSN(); d != mysql.NewConfig().FormatDSN() {
		t.Errorf("MySQL is not mysql.NewConfig(): %q", d)
	}
	if err := c.Validate(); !errors.Is(err, ErrInvalidHost) {
		t.Errorf("Validate without hosts: %v, want ErrInvalidHost", err)
	}
}

// TestClone: the copy is equal and shares neither Hosts nor MySQL (nor its
// Params map) with the original.
func TestClone(t *testing.T) {
	c, err := Parse("u:" + testPW + "@tcp(h1,h2)/db?sql_mode=ANSI&retriesAllDown=4")
	if err != nil {
		t.Fatal(err)
	}
	cp := c.Clone()
	if d := diffConfig(c, cp); d != "" {
		t.Fatalf("clone differs: %s", d)
	}
	cp.Hosts[0].Name = "changed"
	cp.MySQL.Params["sql_mode"] = "changed"
	cp.MySQL.User = "changed"
	cp.RetriesAllDown = 9
	if c.Hosts[0].Name != "h1" || c.MySQL.Params["sql_mode"] != "ANSI" || c.MySQL.User != "u" || c.RetriesAllDown != 4 {
		t.Errorf("changing the clone changed the original: %v", c)
	}
	var nilCfg *Config
	if nilCfg.Clone() != nil {
		t.Error("nil.Clone() != nil")
	}
	if got := (&Config{}).Clone(); got.Hosts != nil || got.MySQL != nil {
		t.Errorf("Clone of zero Config = %#v", got)
	}
}

// TestHostAddr: Addr and String bracket IPv6 literals; String adds the dc
// label as written in a DSN, Addr never does.
func TestHostAddr(t *testing.T) {
	for _, tt := range []struct {
		h          Host
		addr, want string
	}{
		{Host{Name: "db1", Port: 3306}, "db1:3306", "db1:3306"},
		{Host{Name: "10.0.0.1", Port: 1}, "10.0.0.1:1", "10.0.0.1:1"},
		{Host{Name: "::1", Port: 3308}, "[::1]:3308", "[::1]:3308"},
		{Host{Name: "fe80::1%eth0", Port: 3306}, "[fe80::1%eth0]:3306", "[fe80::1%eth0]:3306"},
		{Host{Name: "db1", Port: 3306, DC: "east"}, "db1:3306", "db1:3306;dc=east"},
		{Host{Name: "::1", Port: 3308, DC: "west-2"}, "[::1]:3308", "[::1]:3308;dc=west-2"},
	} {
		want(t, "Addr", tt.h.Addr(), tt.addr)
		want(t, "String", tt.h.String(), tt.want)
		want(t, "%v", fmt.Sprint(tt.h), tt.want)
	}
}

// TestParseDoesNotPanic covers inputs that make go-sql-driver itself panic
// or that stress the cutting logic.
func TestParseDoesNotPanic(t *testing.T) {
	for _, s := range []string{
		"/?strict=1", "/?strict=", "(/", "()/", "@", "@/", "/?", "/?=", "/?&", "(", ")/", "a(/b)/", "[", "tcp([)/", "tcp(])/",
		"tcp(,)/", "tcp([]:)/", "\x00/", "tcp(h:\x00)/",
	} {
		func() {
			defer func() {
				if r := recover(); r != nil {
					t.Errorf("Parse(%q) panicked: %v", s, r)
				}
			}()
			if _, err := Parse(s); errors.Is(err, errPanicked) {
				t.Errorf("Parse(%q): go-sql-driver or this package panicked", s)
			}
		}()
	}
}

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }
