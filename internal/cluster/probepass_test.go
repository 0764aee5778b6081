package cluster

import (
	"context"
	"database/sql/driver"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
)

// stillClock moves only when the test says (Sleep moves it by d).
type stillClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *stillClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *stillClock) Sleep(ctx context.Context, d time.Duration) error {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return ctx.Err()
}

// TestProbePassOlderThanAFailure: a probe that was in flight when a session of its host
// failed (the host died just after it answered the probe) does not turn the host up again:
// its answer is older news than the failure. A probe that started after the failure does.
func TestProbePassOlderThanAFailure(t *testing.T) {
	clk := &stillClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	cfg := &dsn.Config{Hosts: []dsn.Host{{Name: "H1", Port: 3306}, {Name: "H2", Port: 3306}}, RetriesAllDown: 2}
	c, err := New(cfg, Env{
		Dial:  func(context.Context, int) (driver.Conn, error) { return nil, errors.New("no dial in this test") },
		Clock: clk,
	})
	if err != nil {
		t.Fatal(err)
	}
	h := c.topo().host(1)
	state := func() failover.HostState { return c.Stats().Hosts[1].State }
	c.mon.probePassed(h, clk.Now(), clk.Now().Add(time.Millisecond), time.Millisecond)
	if s := state(); s != failover.HostUp {
		t.Fatalf("after a passed probe: %v, want up", s)
	}
	inFlight := clk.Now()
	_ = clk.Sleep(context.Background(), 5*time.Millisecond)
	c.rec.backOff(h, errors.New("invalid connection"), true) // a session's failure
	_ = clk.Sleep(context.Background(), 5*time.Millisecond)
	c.mon.probePassed(h, inFlight, clk.Now(), 10*time.Millisecond)
	if s := state(); s == failover.HostUp {
		t.Errorf("a probe begun before the failure passed after it: the host is %v, want still down (in backoff)", s)
	}
	fresh := clk.Now()
	_ = clk.Sleep(context.Background(), time.Millisecond)
	c.mon.probePassed(h, fresh, clk.Now(), time.Millisecond)
	if s := state(); s != failover.HostUp {
		t.Errorf("a probe begun after the failure passed: the host is %v, want up", s)
	}
}
