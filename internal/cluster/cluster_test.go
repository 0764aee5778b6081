package cluster_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// rig is a cluster over fake hosts whose connect attempts are recorded, in Connector/J's
// notation: "/H1" connected, "\H1" failed.
type rig struct {
	t     *testing.T
	net   *fake.Net
	clock *fake.Clock
	cl    *cluster.Cluster
	mu    sync.Mutex
	evs   []failover.Event
}

// rigOpts is what a rig's set function may change: the DSN's failover options (the
// hosts included) and the engine's environment.
type rigOpts struct {
	*dsn.Config
	cluster.Env
}

// labels sets the hosts' DC labels, in order.
func (o *rigOpts) labels(dcs ...string) {
	for i, dc := range dcs {
		o.Hosts[i].DC = dc
	}
}

func newRig(t *testing.T, hosts int, set func(*rigOpts)) *rig {
	t.Helper()
	r := &rig{t: t, net: fake.NewNet(t, hosts), clock: fake.NewClock()}
	opts := rigOpts{
		Config: &dsn.Config{
			Hosts:                    r.net.Hosts(),
			RetriesAllDown:           2,
			SecondsBeforeRetryMaster: 30,
			QueriesBeforeRetryMaster: 50,
		},
		Env: cluster.Env{
			Dial:  r.net.Dial,
			Clock: r.clock,
			OnEvent: func(e failover.Event) {
				r.mu.Lock()
				r.evs = append(r.evs, e)
				r.mu.Unlock()
			},
		},
	}
	if set != nil {
		set(&opts)
	}
	cl, err := cluster.New(opts.Config, opts.Env)
	if err != nil {
		t.Fatal(err)
	}
	r.cl = cl
	return r
}

func (r *rig) events(kind failover.EventKind) []failover.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []failover.Event
	for _, e := range r.evs {
		if e.Kind == kind {
			out = append(out, e)
		}
	}
	return out
}

func (r *rig) history() string {
	var parts []string
	for _, e := range r.events(failover.EventConnect) {
		mark := "/"
		if e.Err != nil {
			mark = `\`
		}
		parts = append(parts, mark+strings.TrimSuffix(e.Host, ":3306"))
	}
	return strings.Join(parts, " ")
}

func (r *rig) down(hosts ...int) {
	for _, h := range hosts {
		r.net.Down(h)
	}
}

func (r *rig) up(hosts ...int) {
	for _, h := range hosts {
		r.net.Up(h)
	}
}

// logical plays the part of one logical connection over the cluster.
type logical struct {
	r    *rig
	c    driver.Conn
	host int
}

func (r *rig) connect() *logical {
	r.t.Helper()
	c, h, err := r.cl.Connect(context.Background(), nil)
	if err != nil {
		r.t.Fatalf("Connect: %v", err)
	}
	return &logical{r: r, c: c, host: h}
}

// fail reports a communication error on the logical connection's host.
func (l *logical) fail() {
	l.r.t.Helper()
	_ = l.c.Close()
	c, h, err := l.r.cl.Failover(context.Background(), l.host, mysql.ErrInvalidConn, nil)
	if err != nil {
		l.r.t.Fatalf("Failover from H%d: %v", l.host+1, err)
	}
	l.c, l.host = c, h
}

// statement runs one statement: at a safe point (autocommit) it may fall back.
func (l *logical) statement(autocommit bool) {
	if autocommit {
		if c, _, _ := l.r.cl.TryFallBack(context.Background(), nil); c != nil {
			_ = l.c.Close()
			l.c, l.host = c, primary
		}
	}
	l.r.cl.NoteStatement()
}

func (l *logical) on(want int) {
	l.r.t.Helper()
	if l.host != want || l.r.cl.Active() != want {
		l.r.t.Fatalf("on H%d (pool on H%d), want H%d", l.host+1, l.r.cl.Active()+1, want+1)
	}
}

// TestFailoverTransitions is Connector/J MultiHostConnectionTest.testFailoverTransitions:
// 3 hosts, retriesAllDown=2.
func TestFailoverTransitions(t *testing.T) {
	tests := []struct {
		name        string
		downAtStart []int
		startOn     int
		before      func(r *rig) // after connecting, before the failure
		to          int
		history     string
		sleeps      int
	}{
		{"H1 to H2", nil, 0, nil, 1, `/H1 /H2`, 0},
		{"H1 to H3, H2 down", nil, 0, func(r *rig) { r.down(1) }, 2, `/H1 \H2 /H3`, 0},
		{"H2 to H3, H1 down", []int{0}, 1, nil, 2, `\H1 /H2 /H3`, 0},
		{"H2 to H1, H1 back", []int{0, 2}, 1, func(r *rig) { r.up(0) }, 0, `\H1 /H2 \H3 \H2 \H3 /H1`, 1},
		{"H3 to H1, H1 back", []int{0, 1}, 2, func(r *rig) { r.up(0) }, 0, `\H1 \H2 /H3 \H2 \H3 /H1`, 1},
		{"H3 to H2, H2 back", []int{0, 1}, 2, func(r *rig) { r.up(1) }, 1, `\H1 \H2 /H3 /H2`, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, 3, nil)
			r.down(tt.downAtStart...)
			l := r.connect()
			l.on(tt.startOn)
			if tt.before != nil {
				tt.before(r)
			}
			r.down(tt.startOn)
			l.fail()
			l.on(tt.to)
			if got := r.history(); got != tt.history {
				t.Fatalf("history %q, want %q", got, tt.history)
			}
			if got := len(r.clock.Sleeps()); got != tt.sleeps {
				t.Fatalf("%d pauses between passes, want %d", got, tt.sleeps)
			}
			for _, d := range r.clock.Sleeps() {
				if d != cluster.DefaultPassPause {
					t.Fatalf("paused %v between passes, want %v", d, cluster.DefaultPassPause)
				}
			}
		})
	}
}

// TestFailoverDefaultSettings is Connector/J testFailoverDefaultSettings: the primary is
// skipped in the first pass while fall-back is not due.
func TestFailoverDefaultSettings(t *testing.T) {
	r := newRig(t, 3, nil)
	l := r.connect()
	l.on(0)
	r.down(0)
	l.fail()
	l.on(1)
	r.down(1)
	l.fail()
	l.on(2)
	r.up(0, 1)
	r.down(2)
	l.fail()
	l.on(1) // not time to come back to H1 yet
	r.down(1)
	l.fail()
	l.on(0)
	if got, want := r.history(), `/H1 /H2 /H3 /H2 \H3 \H2 \H3 /H1`; got != want {
		t.Fatalf("history %q, want %q", got, want)
	}
}

// TestFailoverBeforeRetryMaster is Connector/J testFailoverQueriesBeforeRetrySource and
// testFailoverSecondsBeforeRetrySource: when fall-back is due, a failure on a secondary
// tries the primary first. The statements run inside a transaction (no safe point), as
// the reference runs them with autocommit off.
func TestFailoverBeforeRetryMaster(t *testing.T) {
	tests := []struct {
		name    string
		secs    int
		queries int
		advance time.Duration
		history string
	}{
		{"queriesBeforeRetryMaster=10", 30, 10, 0, `/H1 \H2 /H3 /H1`},
		{"queriesBeforeRetryMaster default 50", 30, 50, 0, `/H1 \H2 /H3 /H2`},
		{"secondsBeforeRetryMaster=1 after 2s", 1, 50, 2 * time.Second, `/H1 \H2 /H3 /H1`},
		{"secondsBeforeRetryMaster default 30 after 2s", 30, 50, 2 * time.Second, `/H1 \H2 /H3 /H2`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, 3, func(o *rigOpts) {
				o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = tt.secs, tt.queries
			})
			l := r.connect()
			r.down(0, 1)
			l.fail()
			l.on(2)
			for i := 0; i < 10; i++ {
				l.statement(false)
				r.clock.Advance(tt.advance / 10)
			}
			r.up(0, 1)
			r.down(2)
			l.fail()
			if got := r.history(); got != tt.history {
				t.Fatalf("history %q, want %q", got, tt.history)
			}
		})
	}
}

// TestFallBackDisabled is the last part of Connector/J testFailoverAutoFallBack: with
// both settings 0 the primary is an ordinary member of the rotation.
func TestFallBackDisabled(t *testing.T) {
	r := newRig(t, 3, func(o *rigOpts) { o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = 0, 0 })
	r.down(0, 2)
	l := r.connect()
	l.on(1)
	r.up(0, 2)
	for i := 0; i < 55; i++ {
		l.statement(true)
		r.clock.Advance(time.Second)
	}
	l.on(1)
	r.down(1)
	l.fail()
	l.on(2)
	r.up(1)
	r.down(2)
	l.fail()
	l.on(0)
	if got, want := r.history(), `\H1 /H2 /H3 /H1`; got != want {
		t.Fatalf("history %q, want %q", got, want)
	}
	if n := len(r.events(failover.EventFallBack)) + len(r.events(failover.EventFallBackFailed)); n != 0 {
		t.Fatalf("%d fall-back events with fall-back disabled", n)
	}
}

// TestAutoFallBackAtSafePoint is Connector/J testFailoverAutoFallBack with autocommit on:
// the connection silently moves to the primary once the time has come.
func TestAutoFallBackAtSafePoint(t *testing.T) {
	for _, tt := range []struct {
		name          string
		secs, queries int
		step          time.Duration
		wantAfter     int // statements on H2 before the one that runs on H1
	}{
		{"seconds", 1, 0, 100 * time.Millisecond, 10},
		{"queries", 0, 3, 100 * time.Millisecond, 3},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, 3, func(o *rigOpts) {
				o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = tt.secs, tt.queries
			})
			r.down(0, 2)
			l := r.connect()
			r.up(0, 2)
			n := 0
			for l.host != primary {
				if n > 100 {
					t.Fatal("never fell back")
				}
				l.statement(true)
				if l.host != primary {
					n++
				}
				r.clock.Advance(tt.step)
			}
			if n != tt.wantAfter {
				t.Fatalf("%d statements ran on H2 before the fall-back, want %d", n, tt.wantAfter)
			}
			if got, want := r.history(), `\H1 /H2 /H1`; got != want {
				t.Fatalf("history %q, want %q", got, want)
			}
			fb := r.events(failover.EventFallBack)
			if len(fb) != 1 || fb[0].From != "H2:3306" || fb[0].Host != "H1:3306" {
				t.Fatalf("fall-back events %v", fb)
			}
		})
	}
}

// TestFallBackFailureRestartsClocks: a primary that does not answer keeps the pool where
// it is, silently, and is tried again only a full period later (Connector/J Bug#58706,
// case 12 (ii)).
func TestFallBackFailureRestartsClocks(t *testing.T) {
	r := newRig(t, 2, func(o *rigOpts) { o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = 2, 0 })
	l := r.connect()
	r.down(0)
	l.fail()
	l.on(1)
	attempts := func() int {
		n := 0
		for _, e := range r.events(failover.EventConnect) {
			if e.Host == "H1:3306" {
				n++
			}
		}
		return n
	}
	base := attempts()
	for i := 0; i < 50; i++ { // 10 s in steps of 200 ms
		r.clock.Advance(200 * time.Millisecond)
		l.statement(true)
		l.on(1)
	}
	if got := attempts() - base; got != 5 {
		t.Fatalf("%d attempts on the dead primary in 10 s with secondsBeforeRetryMaster=2, want 5", got)
	}
	if got := len(r.events(failover.EventFallBackFailed)); got != 5 {
		t.Fatalf("%d fall-back-failed events, want 5", got)
	}
	r.up(0)
	r.clock.Advance(2 * time.Second)
	l.statement(true)
	l.on(0)
}

// newProbeRig puts a 2-host pool on H2 with fall-back to H1 due and H1 back up; a dial of
// H1 made while the pool is away from it closes entered and then waits for release.
func newProbeRig(t *testing.T) (r *rig, entered, release chan struct{}) {
	t.Helper()
	entered, release = make(chan struct{}), make(chan struct{})
	r = newRig(t, 2, func(o *rigOpts) {
		o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = 1, 0
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if h == primary && r.cl.Active() != primary {
				close(entered)
				select {
				case <-release:
				case <-ctx.Done(): // the test failed before it released the dial
				}
			}
			return r.net.Dial(ctx, h)
		}
	})
	r.down(0)
	c, _, err := r.cl.Connect(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	r.up(0)
	r.clock.Advance(time.Second)
	return r, entered, release
}

// TestOneFallBackAttemptAtATime: while one connection tries the primary, the others go on
// where they are instead of piling onto it.
func TestOneFallBackAttemptAtATime(t *testing.T) {
	r, entered, release := newProbeRig(t)
	done := make(chan driver.Conn, 1)
	go func() {
		c, _, _ := r.cl.TryFallBack(fake.Context(t), nil)
		done <- c
	}()
	fake.Await(t, "the first fall-back attempt's dial of H1", entered)
	if c2, _, err := r.cl.TryFallBack(fake.Context(t), nil); c2 != nil || err != nil {
		t.Fatalf("second concurrent fall-back attempt made: %v %v", c2, err)
	}
	close(release)
	c1 := fake.Recv(t, "the first fall-back attempt", done)
	if c1 == nil {
		t.Fatal("the first fall-back attempt did not land on the primary")
	}
	c1.Close()
	if r.cl.Active() != primary {
		t.Fatal("pool not on the primary after fall-back")
	}
}

// TestPoolMovesAsOne: one connection's failure moves the pool; another connection joins
// the new host without touching the failed one.
func TestPoolMovesAsOne(t *testing.T) {
	r := newRig(t, 3, nil)
	a, b := r.connect(), r.connect()
	r.down(0)
	a.fail()
	a.on(1)
	// b joins the pool's host: nothing is tried on H1 again.
	before := r.history()
	c, h, err := r.cl.Connect(context.Background(), nil)
	if err != nil || h != 1 {
		t.Fatalf("join: host H%d, %v", h+1, err)
	}
	b.c.Close()
	b.c, b.host = c, h
	if got := strings.TrimPrefix(r.history(), before); got != " /H2" {
		t.Fatalf("join attempts %q, want only /H2", got)
	}
	sw := r.events(failover.EventSwitch)
	if len(sw) != 1 || sw[0].From != "H1:3306" || sw[0].Host != "H2:3306" || !errors.Is(sw[0].Err, mysql.ErrInvalidConn) {
		t.Fatalf("switch events %v", sw)
	}
	// b failing on H1 late (its error arrives after the pool moved) joins H2 too.
	r.down(1)
	r.up(0)
	b.fail()
	if b.host != 2 {
		t.Fatalf("b on H%d, want H3 (H2 just failed, primary skipped in the first pass)", b.host+1)
	}
	a.c.Close()
	b.c.Close()
}

// TestAllHostsDown: retriesAllDown passes over every host with 250 ms between passes, one
// error naming every host, never driver.ErrBadConn (case 04).
func TestAllHostsDown(t *testing.T) {
	for _, tt := range []struct {
		name     string
		retries  int
		dialErr  func(r *rig, h int) error
		attempts int
		cause    error
	}{
		{"refused, retriesAllDown=3", 3, func(r *rig, h int) error { return fake.Refused(r.net.Addrs()[h]) }, 9, syscall.ECONNREFUSED},
		{"EOF at greeting, retriesAllDown=3", 3, func(*rig, int) error { return mysql.ErrInvalidConn }, 9, mysql.ErrInvalidConn},
		{"ErrBadConn at greeting, retriesAllDown=3", 3, func(*rig, int) error { return driver.ErrBadConn }, 9, nil},
		{"retriesAllDown=0 is one pass", 0, func(r *rig, h int) error { return fake.Refused(r.net.Addrs()[h]) }, 3, syscall.ECONNREFUSED},
	} {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t, 3, func(o *rigOpts) { o.RetriesAllDown = tt.retries })
			for h := 0; h < 3; h++ {
				r.net.Set(h, tt.dialErr(r, h), nil)
			}
			_, _, err := r.cl.Connect(context.Background(), nil)
			var nh *failover.NoHostAvailableError
			if !errors.As(err, &nh) {
				t.Fatalf("error %T %v, want *NoHostAvailableError", err, err)
			}
			if errors.Is(err, driver.ErrBadConn) {
				t.Fatal("error matches driver.ErrBadConn: database/sql would repeat the walk")
			}
			if got := len(r.events(failover.EventConnect)); got != tt.attempts {
				t.Fatalf("%d attempts, want %d", got, tt.attempts)
			}
			if got, want := len(r.clock.Sleeps()), max(tt.retries, 1)-1; got != want {
				t.Fatalf("%d pauses, want %d", got, want)
			}
			for i, he := range nh.Hosts {
				if he.Host != r.net.Addrs()[i] || he.Err == nil || !strings.Contains(err.Error(), he.Host+": ") {
					t.Fatalf("host entry %d: %+v in %q", i, he, err)
				}
			}
			if errors.Is(tt.cause, mysql.ErrInvalidConn) && !strings.Contains(err.Error(), "H2:3306: connection closed by the server during the handshake") {
				t.Fatalf("a handshake failure is not described as one: %v", err)
			}
			if tt.cause != nil && !errors.Is(err, tt.cause) {
				t.Fatalf("error %v does not reach %v", err, tt.cause)
			}
		})
	}
}

// TestSkippedPrimaryIsNamed: a primary skipped because fall-back is not due still appears
// in the error, with the reason (invariant bounded-waiting).
func TestSkippedPrimaryIsNamed(t *testing.T) {
	r := newRig(t, 3, func(o *rigOpts) { o.RetriesAllDown = 1 })
	r.down(0)
	l := r.connect()
	l.on(1)
	r.up(0)
	r.down(1, 2)
	_, _, err := r.cl.Failover(context.Background(), 1, mysql.ErrInvalidConn, nil)
	var nh *failover.NoHostAvailableError
	if !errors.As(err, &nh) {
		t.Fatalf("error %v", err)
	}
	if nh.Hosts[0].Err != nil || !strings.Contains(nh.Hosts[0].Skipped, "fall-back to the primary not due") {
		t.Fatalf("primary entry %+v", nh.Hosts[0])
	}
	if !strings.Contains(err.Error(), "H1:3306: not tried (fall-back to the primary not due") {
		t.Fatalf("error text %q", err)
	}
}

// TestDataErrorEndsTheWalk: access denied on a host ends the walk at once (every host
// would say the same) and names the host.
func TestDataErrorEndsTheWalk(t *testing.T) {
	r := newRig(t, 3, nil)
	r.down(0)
	denied := &mysql.MySQLError{Number: 1045, SQLState: [5]byte{'2', '8', '0', '0', '0'}, Message: "Access denied for user 'app'"}
	r.net.Set(1, denied, nil)
	_, _, err := r.cl.Connect(context.Background(), nil)
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1045 || !strings.Contains(err.Error(), "H2:3306") {
		t.Fatalf("error %v", err)
	}
	if got, want := r.history(), `\H1 \H2`; got != want {
		t.Fatalf("history %q, want %q (H3 must not be tried)", got, want)
	}
}

// TestCallerContextEndsTheWalk: the caller's context bounds the whole walk; hosts not
// reached say why.
func TestCallerContextEndsTheWalk(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var r *rig
	r = newRig(t, 3, func(o *rigOpts) {
		o.OnEvent = func(e failover.Event) {
			if e.Kind == failover.EventConnect && e.Err != nil {
				cancel()
			}
			r.mu.Lock()
			r.evs = append(r.evs, e)
			r.mu.Unlock()
		}
	})
	r.down(0, 1, 2)
	_, _, err := r.cl.Connect(ctx, nil)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("error %v, want context.Canceled", err)
	}
	if got := len(r.events(failover.EventConnect)); got != 1 {
		t.Fatalf("%d attempts after the context ended, want 1", got)
	}
	if !strings.Contains(err.Error(), "H3:3306: not tried (the caller's context ended first)") {
		t.Fatalf("error text %q", err)
	}
}

// TestHostTimeoutBoundsEachAttempt: a host that accepts and then hangs costs at most
// HostTimeout, the walk goes on, and the timeout is a communication error that does not
// look like the caller's deadline.
func TestHostTimeoutBoundsEachAttempt(t *testing.T) {
	var r *rig
	r = newRig(t, 2, func(o *rigOpts) {
		o.HostTimeout = time.Millisecond
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if h == primary {
				<-ctx.Done() // a blackholed handshake
				return nil, ctx.Err()
			}
			return r.net.Dial(ctx, h)
		}
	})
	c, h, err := r.cl.Connect(fake.Context(t), nil) // bounded: a hostTimeout not applied would hang
	if err != nil || h != 1 {
		t.Fatalf("Connect: H%d %v", h+1, err)
	}
	c.Close()
	ev := r.events(failover.EventConnect)[0]
	var te *cluster.HostTimeoutError
	if !errors.As(ev.Err, &te) || errors.Is(ev.Err, context.DeadlineExceeded) {
		t.Fatalf("H1 attempt error %v, want *HostTimeoutError not matching context.DeadlineExceeded", ev.Err)
	}
}

// TestSetupRunsInsideTheAttempt: a communication error in session set-up moves the walk
// on and closes the half-set-up connection; a data error ends the walk.
func TestSetupRunsInsideTheAttempt(t *testing.T) {
	r := newRig(t, 3, nil)
	setup := func(ctx context.Context, c driver.Conn, h int) error {
		switch h {
		case 0:
			return mysql.ErrInvalidConn
		case 1:
			return &mysql.MySQLError{Number: 1049, Message: "Unknown database 'other'"}
		}
		return nil
	}
	_, _, err := r.cl.Connect(context.Background(), setup)
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1049 {
		t.Fatalf("error %v, want 1049 from H2", err)
	}
	for _, c := range r.net.AllConns() {
		if c.Closes() != 1 {
			t.Fatalf("connection to H%d closed %d times, want 1", c.Host+1, c.Closes())
		}
	}
	if got, want := r.history(), `\H1 \H2`; got != want {
		t.Fatalf("history %q, want %q", got, want)
	}
}

func TestClosedClusterRefuses(t *testing.T) {
	r := newRig(t, 1, nil)
	r.cl.Close()
	if _, _, err := r.cl.Connect(context.Background(), nil); !errors.Is(err, failover.ErrClosed) {
		t.Fatalf("Connect after Close: %v", err)
	}
}

// TestNewConnectionFallsBackWhenDue: a connection that joins a pool on a secondary tries
// the primary first once fall-back is due; if it answers, the pool is back (a fall-back
// event); if not, the clocks restart and later joins go straight to the secondary.
func TestNewConnectionFallsBackWhenDue(t *testing.T) {
	r := newRig(t, 2, func(o *rigOpts) { o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = 1, 0 })
	r.down(0)
	l := r.connect()
	l.on(1)
	r.clock.Advance(time.Second)
	j := r.connect() // due, primary still down: tried first, then H2
	j.on(1)
	k := r.connect() // clocks restarted: H1 not tried
	k.on(1)
	if got, want := r.history(), `\H1 /H2 \H1 /H2 /H2`; got != want {
		t.Fatalf("history %q, want %q", got, want)
	}
	r.up(0)
	r.clock.Advance(time.Second)
	m := r.connect()
	m.on(0)
	if fb := r.events(failover.EventFallBack); len(fb) != 1 || fb[0].From != "H2:3306" {
		t.Fatalf("fall-back events %v", fb)
	}
	for _, x := range []*logical{l, j, k, m} {
		x.c.Close()
	}
}

// TestShortCallerDeadlineStillMovesPastAHungHost: with a caller deadline shorter than
// HostTimeout, a hung primary gets half of the time left, so the walk still reaches H2
// inside the caller's deadline (a frozen primary must not hold a pool whose callers all
// carry short deadlines). The first deadline is under twice DefaultMinHostShare, so the
// share's floor decides, and leaves H2 200 ms of wall time (a loaded machine needs it).
func TestShortCallerDeadlineStillMovesPastAHungHost(t *testing.T) {
	for _, deadline := range []time.Duration{450 * time.Millisecond, 4 * cluster.DefaultMinHostShare} {
		t.Run(deadline.String(), func(t *testing.T) {
			var r *rig
			r = newRig(t, 2, func(o *rigOpts) {
				o.HostTimeout = time.Hour
				o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
					if h == primary {
						<-ctx.Done() // a frozen server: TCP accepted, no greeting
						return nil, ctx.Err()
					}
					return r.net.Dial(ctx, h)
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), deadline)
			defer cancel()
			c, h, err := r.cl.Connect(ctx, nil)
			if err != nil || h != 1 {
				t.Fatalf("Connect: H%d %v", h+1, err)
			}
			c.Close()
			var te *cluster.HostTimeoutError
			ev := r.events(failover.EventConnect)[0]
			if !errors.As(ev.Err, &te) || te.After > max(deadline/2, cluster.DefaultMinHostShare) {
				t.Fatalf("H1 attempt: %v, want a HostTimeoutError bounded by half the caller's time (at least DefaultMinHostShare)", ev.Err)
			}
		})
	}
}

// TestPrimaryProbeDataErrorKeepsTheWalkGoing: when fall-back is due, a primary that answers
// with a data error (a locked account, rotated credentials) is a failed fall-back probe:
// the walk goes on to the pool's host instead of failing the caller.
func TestPrimaryProbeDataErrorKeepsTheWalkGoing(t *testing.T) {
	locked := &mysql.MySQLError{Number: 4151, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "Access denied, this account is locked"}
	r := newRig(t, 3, func(o *rigOpts) { o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = 1, 0 })
	r.down(0)
	l := r.connect()
	l.on(1)
	r.net.Set(0, locked, nil)
	r.clock.Advance(time.Second)
	j := r.connect() // a new connection: probe H1 (locked), then H2
	j.on(1)
	r.clock.Advance(time.Second)
	r.down(1)
	l.fail() // due again: probe H1 (locked), then H3
	l.on(2)
	if got, want := r.history(), `\H1 /H2 \H1 /H2 \H1 /H3`; got != want {
		t.Fatalf("history %q, want %q", got, want)
	}
	j.c.Close()
	l.c.Close()
}

// TestQueryTriggerPausesAfterAFailedProbe: after a failed attempt to return, the statement
// count alone cannot trigger the next attempt sooner than DefaultFallBackPause later, so a
// busy pool does not hammer a dead primary with an attempt every few statements.
func TestQueryTriggerPausesAfterAFailedProbe(t *testing.T) {
	r := newRig(t, 2, func(o *rigOpts) { o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = 0, 3 })
	l := r.connect()
	r.down(0)
	l.fail()
	l.on(1)
	probes := func() int { return len(r.events(failover.EventFallBackFailed)) }
	for i := 0; i < 3; i++ {
		l.statement(true)
	}
	l.statement(true) // due by count: the first probe, which fails
	if probes() != 1 {
		t.Fatalf("%d probes after 3 statements, want 1", probes())
	}
	for i := 0; i < 100; i++ { // no time passes: the count alone must not trigger again
		l.statement(true)
	}
	if probes() != 1 {
		t.Fatalf("%d probes within DefaultFallBackPause of a failed one, want 1", probes())
	}
	r.clock.Advance(cluster.DefaultFallBackPause)
	l.statement(true)
	if probes() != 2 {
		t.Fatalf("%d probes once DefaultFallBackPause passed, want 2", probes())
	}
	r.up(0)
	r.clock.Advance(cluster.DefaultFallBackPause)
	for i := 0; i < 4 && l.host != primary; i++ {
		l.statement(true)
	}
	l.on(0)
	l.c.Close()
}

// TestOneProbeOfThePrimaryPerPool: while one connection tries the primary for a fall-back,
// connections that open meanwhile go straight to the pool's host instead of each paying
// the primary's timeout.
func TestOneProbeOfThePrimaryPerPool(t *testing.T) {
	r, entered, release := newProbeRig(t)
	done := make(chan driver.Conn, 1)
	go func() {
		c, _, _ := r.cl.Connect(fake.Context(t), nil) // due: probes H1
		done <- c
	}()
	fake.Await(t, "the probing connection's dial of H1", entered)
	c2, h, err := r.cl.Connect(fake.Context(t), nil) // must not touch H1
	if err != nil || h != 1 {
		t.Fatalf("second connection: H%d %v, want H2 without waiting for the probe", h+1, err)
	}
	c2.Close()
	close(release)
	c1 := fake.Recv(t, "the probing connection", done)
	if c1 == nil || r.cl.Active() != primary {
		t.Fatal("the probing connection did not bring the pool back to H1")
	}
	c1.Close()
}

// TestShortDeadlineCapSparesAFarHost: a host whose attempts usually take longer than half
// a caller's deadline is given the whole deadline, not half of it, so a slow but healthy
// handshake (a far region, TLS) does not fail the pool over. The attempts' duration is
// read from the Cluster's clock: each handshake of H1 takes 300 ms of it.
func TestShortDeadlineCapSparesAFarHost(t *testing.T) {
	const handshake = 300 * time.Millisecond
	var r *rig
	var budget time.Duration // what the last attempt on H1 was given
	r = newRig(t, 2, func(o *rigOpts) {
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if h == primary {
				budget = 0
				if dl, ok := ctx.Deadline(); ok {
					budget = time.Until(dl)
				}
				r.clock.Advance(handshake) // far away
			}
			return r.net.Dial(ctx, h)
		}
	})
	c, h, err := r.cl.Connect(context.Background(), nil) // learns how long H1 takes
	if err != nil || h != primary {
		t.Fatalf("first connection: H%d %v", h+1, err)
	}
	c.Close()
	// Half of 500 ms is shorter than the handshake: without the host's history the
	// attempt would be cut at 250 ms and the pool moved to H2.
	ctx, cancel := context.WithTimeout(context.Background(), 2*cluster.DefaultMinHostShare)
	defer cancel()
	c, h, err = r.cl.Connect(ctx, nil)
	if err != nil || h != primary {
		t.Fatalf("under a 500 ms deadline: H%d %v, want H1", h+1, err)
	}
	c.Close()
	if budget <= cluster.DefaultMinHostShare+50*time.Millisecond {
		t.Fatalf("the attempt on H1 was given %v of a 500 ms deadline, want the whole deadline (its handshakes take %v)", budget, handshake)
	}
	if r.cl.Active() != primary {
		t.Fatal("the pool left a slow but healthy primary")
	}
}

// primary is the index of the primary in these tests: the first host (no localDC).
const primary = 0

// A user DialFunc's own timeout (net.Dialer.Timeout) matches context.DeadlineExceeded,
// but the caller's context is live: the host did not answer, and the walk goes on to the
// next host instead of ending as if the caller had cancelled.
func TestDialTimeoutOfUserDialFuncIsAHostFailure(t *testing.T) {
	r := newRig(t, 2, nil)
	r.net.Set(0, dialTimeout(t), nil)
	_, h, err := r.cl.Connect(context.Background(), nil)
	if err != nil {
		t.Fatalf("Connect: %v, want H2", err)
	}
	if h != 1 {
		t.Fatalf("Connect landed on host %d, want 1 (H2)", h)
	}
	if got := r.history(); got != `\H1 /H2` {
		t.Fatalf("history %q, want \\H1 /H2", got)
	}
}

// A connection that joins the pool does not move it back when the pool moved while it
// was joining: here a new host list makes H2 the primary (the pool goes there) while a
// new connection's attempt on H1, planned before, is still in its handshake. The pool
// stays on H2; the new connection, on H1, joins H2 at its next safe point. (A flaky
// connector test caught this race: the pool stayed on H1 until switchBackDelay.)
func TestJoinWalkDoesNotUndoAMoveMadeMeanwhile(t *testing.T) {
	var r *rig
	moved := false
	r = newRig(t, 2, func(o *rigOpts) {
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if h == primary && !moved {
				moved = true
				if err := r.cl.SetHosts([]failover.ProvidedHost{{Addr: "H2:3306"}, {Addr: "H1:3306"}}); err != nil {
					t.Error(err)
				}
			}
			return r.net.Dial(ctx, h)
		}
	})
	c, h, err := r.cl.Connect(context.Background(), nil)
	if err != nil || h != primary {
		t.Fatalf("Connect: H%d %v, want H1 (planned before the list changed)", h+1, err)
	}
	c.Close()
	if a := r.cl.Active(); a != 1 {
		t.Fatalf("pool on H%d after the new list made H2 the primary, want H2", a+1)
	}
	if n := len(r.events(failover.EventSwitch)); n != 1 {
		t.Fatalf("%d switch events, want 1 (the list's)", n)
	}
}
