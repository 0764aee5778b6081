package mysqlfailover_test

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const password = "s3cr3t-Pa55"

// pool is a *sql.DB over fake hosts H1..Hn whose connections answer SELECT @@port with
// their host's port (3301 for H1, ...), DO 1 with OK, and whose secondaries accept the
// read-only set-up.
type pool struct {
	t   *testing.T
	net *fake.Net
	db  *sql.DB
	c   *mysqlfailover.Connector
	mu  sync.Mutex
	evs []failover.Event
}

func newPool(t *testing.T, hosts int, params string) *pool {
	t.Helper()
	p := &pool{t: t, net: fake.NewNet(t, hosts)}
	for i := 0; i < hosts; i++ {
		port := 3301 + i
		p.net.Script(i, func(_ int, m sqlmock.Sqlmock) {
			m.ExpectExec("SET SESSION TRANSACTION READ ONLY").WillReturnResult(sqlmock.NewResult(0, 0))
			for k := 0; k < 200; k++ {
				m.ExpectQuery("SELECT @@port").WillReturnRows(sqlmock.NewRows([]string{"port"}).AddRow(port))
				m.ExpectExec("DO 1").WillReturnResult(sqlmock.NewResult(0, 0))
			}
		})
	}
	hs := strings.Join(p.net.Addrs(), ",")
	cfg, err := dsn.Parse("app:" + password + "@tcp(" + hs + ")/shop?" + params)
	if err != nil {
		t.Fatal(err)
	}
	p.c, err = mysqlfailover.NewConnector(cfg, mysqlfailover.WithDial(p.net.Dial), mysqlfailover.WithClock(fake.NewClock()),
		mysqlfailover.WithSockets(p.net.Socket), // none until p.net.TrackSockets
		mysqlfailover.WithEventHook(func(e failover.Event) {
			p.mu.Lock()
			p.evs = append(p.evs, e)
			p.mu.Unlock()
		}))
	if err != nil {
		t.Fatal(err)
	}
	p.db = sql.OpenDB(p.c)
	t.Cleanup(func() { _ = p.db.Close() })
	return p
}

func (p *pool) port(ctx context.Context, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var port int
	err := q.QueryRowContext(ctx, "SELECT @@port").Scan(&port)
	return port, err
}

func (p *pool) attempts(host int) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.evs {
		if e.Kind == failover.EventConnect && e.Host == p.net.Addrs()[host] {
			n++
		}
	}
	return n
}

func (p *pool) eventText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var b strings.Builder
	for _, e := range p.evs {
		fmt.Fprintln(&b, e)
	}
	return b.String()
}

func TestRegistered(t *testing.T) {
	if !slices.Contains(sql.Drivers(), "mysqlfailover") {
		t.Fatalf("drivers %v", sql.Drivers())
	}
	db, err := sql.Open("mysqlfailover", "app:"+password+"@tcp(h1:3306,h2:3306)/shop?retriesAllDown=2")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = sql.Open("mysqlfailover", "app:"+password+"@tcp(h1:3306,h2:3306)/shop?retriesalldown=2")
	if err == nil || !strings.Contains(err.Error(), "retriesAllDown") || strings.Contains(err.Error(), password) {
		t.Fatalf("near-miss key: %v", err)
	}
}

// TestKilledPrimaryUnderIdlePool: the idle connections to a killed primary are retired
// before anyone uses them (go-sql-driver's liveness check, forwarded), so the statements
// after the kill all succeed on H2.
func TestKilledPrimaryUnderIdlePool(t *testing.T) {
	p := newPool(t, 3, "")
	p.db.SetMaxIdleConns(8)
	ctx := context.Background()
	var held []*sql.Conn
	for i := 0; i < 8; i++ {
		c, err := p.db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if port, err := p.port(ctx, c); err != nil || port != 3301 {
			t.Fatalf("port %d %v", port, err)
		}
		held = append(held, c)
	}
	for _, c := range held {
		c.Close()
	}
	p.net.Kill(0)
	for i := 0; i < 100; i++ {
		port, err := p.port(ctx, p.db)
		if err != nil || port != 3302 {
			t.Fatalf("statement %d after the kill: port %d, %v\nevents:\n%s", i, port, err, p.eventText())
		}
	}
	if n := p.attempts(0); n > 8+2 {
		t.Fatalf("%d connection attempts to the dead H1 (8 before the kill)", n)
	}
	if err := p.db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, c := range p.net.AllConns() {
		if c.Closes() != 1 {
			t.Fatalf("H%d connection closed %d times after DB.Close, want exactly once", c.Host+1, c.Closes())
		}
	}
}

// TestAllDownNoRetryStorm: Connect never returns mysqlfailover.ErrBadConn, so database/sql does
// not repeat the walk: retriesAllDown=3 over 3 hosts makes 9 attempts, not 27 (case 04).
func TestAllDownNoRetryStorm(t *testing.T) {
	for _, tt := range []struct {
		name string
		set  func(n *fake.Net, h int)
	}{
		{"refused", func(n *fake.Net, h int) { n.Down(h) }},
		{"EOF at greeting", func(n *fake.Net, h int) { n.Set(h, sqldriver.ErrBadConn, nil) }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newPool(t, 3, "retriesAllDown=3")
			for h := 0; h < 3; h++ {
				tt.set(p.net, h)
			}
			err := p.db.PingContext(context.Background())
			var nh *failover.NoHostAvailableError
			if !errors.As(err, &nh) || errors.Is(err, sqldriver.ErrBadConn) {
				t.Fatalf("ping: %v", err)
			}
			total := p.attempts(0) + p.attempts(1) + p.attempts(2)
			if total != 9 {
				t.Fatalf("%d attempts, want 9\n%s", total, p.eventText())
			}
			for _, h := range p.net.Addrs() {
				if !strings.Contains(err.Error(), h) {
					t.Fatalf("error does not name %s: %v", h, err)
				}
			}
			p.net.Up(1)
			if port, err := p.port(context.Background(), p.db); err != nil || port != 3302 {
				t.Fatalf("after H2 came back: port %d, %v", port, err)
			}
		})
	}
}

// TestPinnedConnMovesHost: a pinned *sql.Conn gets the typed failover error once, and its
// next statement runs on the new host, read-only there (failOverReadOnly defaults to true).
func TestPinnedConnMovesHost(t *testing.T) {
	p := newPool(t, 3, "")
	ctx := context.Background()
	c, err := p.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	host := func() (h string, ro bool) {
		_ = c.Raw(func(dc any) error {
			pc, _ := mysqlfailover.ConnOf(dc)
			h, ro = pc.Host(), pc.ReadOnly()
			return nil
		})
		return
	}
	if h, ro := host(); h != "H1:3306" || ro {
		t.Fatalf("on %s read-only %v", h, ro)
	}
	p.net.Down(0)
	_, err = c.ExecContext(ctx, "DO 1")
	var fe *failover.FailoverError
	if !errors.As(err, &fe) || fe.Failed != "H1:3306" || fe.Current != "H2:3306" || errors.Is(err, sqldriver.ErrBadConn) {
		t.Fatalf("exec on the dead host: %v", err)
	}
	if port, err := p.port(ctx, c); err != nil || port != 3302 {
		t.Fatalf("next statement: port %d, %v", port, err)
	}
	if h, ro := host(); h != "H2:3306" || !ro {
		t.Fatalf("on %s read-only %v, want H2:3306 read-only", h, ro)
	}
}

// TestStatementNotRepeatedByDatabaseSQL: a statement whose connection failed after it was
// sent is not run again, neither by the proxy nor by database/sql (invariant no-silent-rerun), whether
// the host is gone (the connection moves to H2) or answers (a new session on H1).
func TestStatementNotRepeatedByDatabaseSQL(t *testing.T) {
	for _, tc := range []struct {
		maxOpen  int
		hostDown bool
	}{{1, true}, {3, true}, {1, false}, {3, false}} {
		t.Run(fmt.Sprintf("maxOpen=%d hostDown=%v", tc.maxOpen, tc.hostDown), func(t *testing.T) {
			p := newPool(t, 2, "failOverReadOnly=false")
			p.db.SetMaxOpenConns(tc.maxOpen)
			p.net.Script(0, func(seq int, m sqlmock.Sqlmock) {
				if seq == 0 { // later sessions on H1 expect nothing at all
					m.ExpectExec("UPDATE counters SET n=n+1 WHERE id=1").WillReturnError(mysql.ErrInvalidConn)
				}
			})
			p.net.Script(1, func(_ int, m sqlmock.Sqlmock) {}) // H2 expects nothing at all
			if err := p.db.PingContext(context.Background()); err != nil {
				t.Fatal(err)
			}
			if tc.hostDown {
				p.net.Set(0, fake.Refused("H1:3306"), nil)
			}
			_, err := p.db.ExecContext(context.Background(), "UPDATE counters SET n=n+1 WHERE id=1")
			var fe *failover.FailoverError
			if !errors.As(err, &fe) || !fe.MaybeExecuted || errors.Is(err, sqldriver.ErrBadConn) {
				t.Fatalf("exec: %v", err)
			}
			if want := map[bool]string{true: "H2:3306", false: "H1:3306"}[tc.hostDown]; fe.Current != want {
				t.Fatalf("FailoverError.Current = %q, want %q: %v", fe.Current, want, err)
			}
			for _, c := range p.net.AllConns() {
				if err := c.Mock.ExpectationsWereMet(); err != nil {
					t.Fatalf("H%d: %v", c.Host+1, err)
				}
			}
		})
	}
}

func TestConnectorCloseAndConfig(t *testing.T) {
	cfg, err := dsn.Parse("app:" + password + "@tcp(h1:3306,h2:3307)/shop")
	if err != nil {
		t.Fatal(err)
	}
	before := cfg.FormatDSN()
	c, err := mysqlfailover.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Hosts[0].Name = "changed"
	if s := c.String(); strings.Contains(s, password) || !strings.Contains(s, "h1:3306") {
		t.Fatalf("String() = %q", s)
	}
	if cfg.FormatDSN() == before {
		t.Fatal("test did not change the caller's config")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Connect(context.Background()); !errors.Is(err, failover.ErrClosed) {
		t.Fatalf("Connect after Close: %v", err)
	}
	bad := dsn.NewConfig()
	if _, err := mysqlfailover.NewConnector(bad); err == nil {
		t.Fatal("NewConnector accepted a config without hosts")
	}
	if _, err := mysqlfailover.NewConnector(nil); err == nil {
		t.Fatal("NewConnector accepted nil")
	}
}

// TestPasswordNeverInErrorsOrEvents walks a pool into access denied and all-down errors.
func TestPasswordNeverInErrorsOrEvents(t *testing.T) {
	p := newPool(t, 2, "retriesAllDown=1")
	p.net.Down(0)
	p.net.Set(1, &mysql.MySQLError{Number: 1045, SQLState: [5]byte{'2', '8', '0', '0', '0'}, Message: "Access denied for user 'app'@'localhost' (using password: YES)"}, nil)
	err := p.db.Ping()
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1045 {
		t.Fatalf("ping: %v", err)
	}
	p.net.Down(1)
	err2 := p.db.Ping()
	for _, s := range []string{err.Error(), err2.Error(), p.eventText(), p.c.String(), fmt.Sprintf("%v %+v %#v", p.c, p.c, p.c)} {
		if strings.Contains(s, password) {
			t.Fatalf("password leaked: %s", s)
		}
	}
}

// The DSN's autocommit reaches the connections (go-sql-driver sends it to every
// new session): with autocommit=0 every statement runs inside a transaction, so a pinned
// connection stays on its host when the pool moves, until COMMIT; without it, it moves
// at once.
func TestDSNAutocommitOffKeepsTheSessionUntilCommit(t *testing.T) {
	for _, tc := range []struct {
		params string
		stays  bool
	}{{"autocommit=0", true}, {"AUTOCOMMIT=%27OFF%27", true}, {"autocommit=1", false}, {"", false}} {
		t.Run(tc.params, func(t *testing.T) {
			ctx := context.Background()
			p := newPool(t, 2, tc.params)
			for i := 0; i < 2; i++ {
				port := 3301 + i
				p.net.Script(i, func(_ int, m sqlmock.Sqlmock) {
					for k := 0; k < 5; k++ {
						m.ExpectQuery("SELECT @@port").WillReturnRows(sqlmock.NewRows([]string{"port"}).AddRow(port))
					}
					m.ExpectExec("COMMIT").WillReturnResult(sqlmock.NewResult(0, 0))
				})
			}
			sc, err := p.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			if port, err := p.port(ctx, sc); port != 3301 || err != nil {
				t.Fatalf("first statement: port %d %v, want H1", port, err)
			}
			if err := p.c.SwitchTo(ctx, "H2:3306"); err != nil {
				t.Fatal(err)
			}
			want := 3302
			if tc.stays {
				want = 3301
			}
			if port, err := p.port(ctx, sc); port != want || err != nil {
				t.Fatalf("after SwitchTo: port %d %v, want %d", port, err, want)
			}
			if _, err := sc.ExecContext(ctx, "COMMIT"); err != nil {
				t.Fatal(err)
			}
			if port, err := p.port(ctx, sc); port != 3302 || err != nil {
				t.Fatalf("after COMMIT: port %d %v, want H2", port, err)
			}
		})
	}
}
