package mysqlfailover_test

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"go.uber.org/goleak"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// stepClock is a fake clock whose Sleep blocks until Advance moves the time past its end
// (or its context ends), so that a test decides when the monitor probes and when a
// linger runs out, without waiting for real time. A sleep that no Advance ends within
// fake.Bound of real time returns an error and is counted (Stuck): a sleep the test did
// not expect (a walk's pause between passes, on a path whose context never ends, such as
// Driver.Open's) fails the test instead of hanging it.
type stepClock struct {
	mu      sync.Mutex
	now     time.Time
	waiters map[*stepWaiter]struct{}
	stuck   int
}

type stepWaiter struct {
	until time.Time
	ch    chan struct{}
}

func newStepClock(t testing.TB) *stepClock {
	c := &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), waiters: map[*stepWaiter]struct{}{}}
	t.Cleanup(func() {
		if n := c.Stuck(); n > 0 {
			t.Errorf("%d sleeps on the step clock waited %v for an Advance that never came", n, fake.Bound)
		}
	})
	return c
}

// Stuck returns how many sleeps gave up waiting for an Advance.
func (c *stepClock) Stuck() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.stuck
}

func (c *stepClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stepClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d <= 0 {
		return nil
	}
	c.mu.Lock()
	w := &stepWaiter{until: c.now.Add(d), ch: make(chan struct{})}
	c.waiters[w] = struct{}{}
	c.mu.Unlock()
	guard := time.NewTimer(fake.Bound)
	defer guard.Stop()
	select {
	case <-w.ch:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.waiters, w)
		c.mu.Unlock()
		return ctx.Err()
	case <-guard.C:
		c.mu.Lock()
		delete(c.waiters, w)
		c.stuck++
		c.mu.Unlock()
		return fmt.Errorf("stepClock: a sleep of %v waited %v for an Advance that never came", d, fake.Bound)
	}
}

// Advance moves the time by d and wakes the sleepers whose end it reached.
func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for w := range c.waiters {
		if !w.until.After(c.now) {
			close(w.ch)
			delete(c.waiters, w)
		}
	}
}

// Sleepers returns how many goroutines sleep now.
func (c *stepClock) Sleepers() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters)
}

// openOnly hides everything of a driver but Open, as a wrapper that calls only
// Driver.Open does (an instrumentation wrapper without driver.DriverContext).
type openOnly struct{ sqldriver.Driver }

var registerOpenOnly sync.Once

// openOnlyDB opens dsn through "mysqlfailover-open-only", registered once, over fake
// hosts (WithDial) and clk for the Connectors Driver.Open makes.
func openOnlyDB(t *testing.T, n *fake.Net, clk *stepClock, dsnStr string) *sql.DB {
	t.Helper()
	registerOpenOnly.Do(func() {
		db, err := sql.Open("mysqlfailover", "tcp(h1)/")
		if err != nil {
			t.Fatal(err)
		}
		sql.Register("mysqlfailover-open-only", openOnly{db.Driver()})
		_ = db.Close()
	})
	t.Cleanup(mysqlfailover.SetOpenSeams(clk, mysqlfailover.WithDial(n.Dial)))
	db, err := sql.Open("mysqlfailover-open-only", dsnStr)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0) // every Conn is a new connection
	return db
}

func openPortScript(n *fake.Net, hosts int) {
	for i := 0; i < hosts; i++ {
		port := 3301 + i
		n.Script(i, func(_ int, m sqlmock.Sqlmock) {
			m.ExpectExec("SET SESSION TRANSACTION READ ONLY").WillReturnResult(sqlmock.NewResult(0, 0))
			for k := 0; k < 50; k++ {
				m.ExpectQuery("SELECT @@port").WillReturnRows(sqlmock.NewRows([]string{"port"}).AddRow(port))
			}
		})
	}
}

// Connections that Driver.Open returns for one DSN share one Connector, whose
// monitor probes at checkInterval; it outlives the last connection by OpenLinger (a
// connection opened meanwhile keeps it), then it is closed, its monitor stops, and
// nothing is left.
func TestDriverOpenSharesOneConnector(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSQLMock)
	// The step clock's sleeps wait for Advance: a walk that sleeps where the test does not
	// expect it would wait forever without the deadline (boundedCtx).
	ctx := fake.Context(t)
	n := fake.NewNet(t, 2)
	openPortScript(n, 2)
	clk := newStepClock(t)
	// calmCheckInterval=0: every host on the fixed schedule this test steps through (the
	// monitor's cadences have tests of their own).
	db := openOnlyDB(t, n, clk, "app:"+password+"@tcp(H1:3306,H2:3306)/shop?checkInterval=1s&calmCheckInterval=0")
	defer db.Close()

	c1, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cn1, cn2 := ownerOf(t, c1), ownerOf(t, c2)
	if cn1 == nil || cn1 != cn2 {
		t.Fatalf("two connections of Driver.Open: Connectors %p and %p, want one", cn1, cn2)
	}
	if got := mysqlfailover.SharedConnectors(); got != 1 {
		t.Fatalf("%d shared Connectors, want 1", got)
	}

	// The monitor runs: a round of probes at once, then one per checkInterval.
	// Until a server has said what the cluster is (cluster=auto), a probe reads the server's
	// state instead of running SELECT 1: which one the first round sends depends on whether
	// the connection's own state read came first.
	probed := func(i int) int { return n.Probes(i) + n.RoleChecks(i) }
	fake.WaitFor(t, "the first probe round", func() bool { return probed(0) >= 1 && probed(1) >= 1 && clk.Sleepers() == 1 })
	// The active host is probed twice per checkInterval (cluster.DefaultActiveProbes): its
	// next probe half a checkInterval on.
	// (At least one more: the monitor may sleep while its first round's probe of the
	// active host is still running, which then counts after p0 is read: seen under CI's
	// load, the count went to p0+2 and an exact p0+1 never came.)
	p0 := probed(0)
	clk.Advance(time.Second / 2)
	fake.WaitFor(t, "the active host's next probe, half a checkInterval on", func() bool { return probed(0) > p0 && clk.Sleepers() == 1 })

	// The last connection closes: the linger starts (a second sleeper).
	_ = c1.Close()
	_ = c2.Close()
	fake.WaitFor(t, "the linger", func() bool { return clk.Sleepers() == 2 })
	clk.Advance(mysqlfailover.OpenLinger - time.Second)
	fake.WaitFor(t, "the monitor asleep again", func() bool { return clk.Sleepers() == 2 })
	// Churn: a connection within the linger keeps the Connector and its state.
	c3, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if ownerOf(t, c3) != cn1 {
		t.Fatal("a connection within the linger got a new Connector")
	}
	fake.WaitFor(t, "the linger stopped", func() bool { return clk.Sleepers() == 1 })
	_ = c3.Close()
	fake.WaitFor(t, "a new linger", func() bool { return clk.Sleepers() == 2 })
	clk.Advance(mysqlfailover.OpenLinger - time.Nanosecond)
	if got := mysqlfailover.SharedConnectors(); got != 1 {
		t.Fatalf("%d shared Connectors before the linger ran out, want 1", got)
	}
	clk.Advance(time.Nanosecond)
	fake.WaitFor(t, "the Connector closed", func() bool { return mysqlfailover.SharedConnectors() == 0 && clk.Sleepers() == 0 })
	if _, err := cn1.Connect(ctx); !errors.Is(err, failover.ErrClosed) {
		t.Fatalf("Connect after the linger: %v, want failover.ErrClosed", err)
	}
	// The linger drops the Connector from the registry, then closes it: Close again waits
	// for the monitor's last probes (each host's runs on its own) to end.
	_ = cn1.Close()
	probes := n.Probes(0)
	clk.Advance(time.Minute)
	if n.Probes(0) != probes {
		t.Fatal("the monitor probes after the linger closed its Connector")
	}

	// The next connection makes a new Connector.
	c4, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cn := ownerOf(t, c4); cn == cn1 || cn == nil {
		t.Fatal("a connection after the linger reused the closed Connector")
	}
	_ = c4.Close()
	fake.WaitFor(t, "the linger", func() bool { return clk.Sleepers() == 2 })
	clk.Advance(mysqlfailover.OpenLinger)
	fake.WaitFor(t, "the second Connector closed", func() bool { return mysqlfailover.SharedConnectors() == 0 })
}

// ownerOf returns the Connector behind a pinned connection.
func ownerOf(t *testing.T, sc *sql.Conn) *mysqlfailover.Connector {
	t.Helper()
	var c *mysqlfailover.Connector
	err := sc.Raw(func(dc any) error {
		fc, ok := mysqlfailover.ConnOf(dc)
		if !ok {
			return errors.New("no mysqlfailover connection")
		}
		c, _ = fc.(interface{ Owner() any }).Owner().(*mysqlfailover.Connector)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Connector.Close of a shared Connector ends it at once (the next connection
// gets a new one); a failed Open leaves no Connector behind after the linger; DSNs that
// differ (in the password too) have Connectors of their own.
func TestDriverOpenSharedConnectorLifecycle(t *testing.T) {
	defer goleak.VerifyNone(t, ignoreSQLMock)
	// The step clock's sleeps wait for Advance: a walk that sleeps where the test does not
	// expect it would wait forever without the deadline (boundedCtx).
	ctx := fake.Context(t)
	n := fake.NewNet(t, 2)
	openPortScript(n, 2)
	clk := newStepClock(t)
	db := openOnlyDB(t, n, clk, "app:"+password+"@tcp(H1:3306,H2:3306)/shop?checkInterval=1s")
	defer db.Close()
	db2, err := sql.Open("mysqlfailover-open-only", "app:other-pw@tcp(H1:3306,H2:3306)/shop?checkInterval=1s")
	if err != nil {
		t.Fatal(err)
	}
	defer db2.Close()
	db2.SetMaxIdleConns(0)

	c1, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := db2.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cn1, cn2 := ownerOf(t, c1), ownerOf(t, c2)
	if cn1 == cn2 || mysqlfailover.SharedConnectors() != 2 {
		t.Fatalf("two DSNs: %d shared Connectors, same %v; want 2, distinct", mysqlfailover.SharedConnectors(), cn1 == cn2)
	}
	if s := cn2.String(); strings.Contains(s, "other-pw") {
		t.Fatalf("Connector.String shows the password: %s", s)
	}
	_ = c2.Close()

	// Close by the user: gone at once, while c1 is still open.
	if err := cn1.Close(); err != nil {
		t.Fatal(err)
	}
	if got := mysqlfailover.SharedConnectors(); got != 1 {
		t.Fatalf("after Connector.Close: %d shared Connectors, want 1 (db2's, lingering)", got)
	}
	_ = c1.Close() // its release finds no entry: no linger
	c3, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if cn := ownerOf(t, c3); cn == cn1 {
		t.Fatal("a connection after Connector.Close got the closed Connector")
	}
	_ = c3.Close()

	// A failed Open: every host down.
	n.Down(0)
	n.Down(1)
	db3, err := sql.Open("mysqlfailover-open-only", "app:"+password+"@tcp(H1:3306,H2:3306)/shop?retriesAllDown=0&checkInterval=1s")
	if err != nil {
		t.Fatal(err)
	}
	defer db3.Close()
	var nh *failover.NoHostAvailableError
	if err := db3.PingContext(ctx); !errors.As(err, &nh) || nh.Err != nil || nh.Passes != 1 || clk.Stuck() != 0 {
		// Stuck: the walk slept on the step clock between passes, one pass more than
		// retriesAllDown=0 allows (Driver.Open's walk has no caller's context to end it).
		t.Fatalf("Ping with every host down: %v (%d sleeps stuck), want a NoHostAvailableError after one pass, no sleep", err, clk.Stuck())
	}
	fake.WaitFor(t, "three lingers", func() bool { return mysqlfailover.SharedConnectors() == 3 && clk.Sleepers() >= 3 })
	for mysqlfailover.SharedConnectors() > 0 {
		clk.Advance(time.Second)
		fake.WaitFor(t, "the clock's sleepers", func() bool { return clk.Sleepers() > 0 || mysqlfailover.SharedConnectors() == 0 })
	}
}
