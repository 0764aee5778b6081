package cluster_test

import (
	"context"
	"database/sql/driver"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// TestMonitorAbortsHostAWalkLeft: a connection's walk moved the pool off a hung primary
// before the probes declared it down (in the field: a caller's deadline share cut its
// attempt on the frozen host at 250 ms, while the probe timeout is 500 ms). When the probes
// then declare H1 down, its connections are closed all the same (once): here a new
// connection whose handshake on H1 hangs (a SIGSTOPped server accepts the TCP connection
// and never greets) is released and lands on H2, instead of waiting for HostTimeout; in
// the field the statements caught on H1 also fail at once instead of after readTimeout.
// A host the pool left that passes a probe afterwards is not aborted when it fails later.
func TestMonitorAbortsHostAWalkLeft(t *testing.T) {
	gate := make(chan struct{}) // closed by Abort(H1): the hung handshake's socket is closed
	entered := make(chan struct{})
	var closeGate sync.Once
	var hang atomic.Int32 // dials to H1 that hang until the gate closes (or HostTimeout)
	var r *rig
	r, ab := monRig(t, 3, func(o *rigOpts) {
		o.HostTimeout = time.Hour // only an abort, or the test's guard, ends the hung handshake
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if h == 0 && hang.Add(-1) >= 0 {
				close(entered)
				select {
				case <-gate:
					return nil, mysql.ErrInvalidConn // its socket was closed under it
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return r.net.Dial(ctx, h)
		}
		record := o.Abort
		o.Abort = func(h int) {
			record(h)
			if h == 0 {
				closeGate.Do(func() { close(gate) })
			}
		}
	})
	defer closeGate.Do(func() { close(gate) }) // a failing test does not leak the hung dial
	r.cl.Check(context.Background())           // every host up, probe connections open
	r.down(0)
	hang.Store(1)
	type result struct {
		host int
		err  error
	}
	hung := make(chan result, 1)
	go func() { // a new pool connection, no deadline: its handshake on H1 hangs
		c, h, err := r.cl.Connect(context.Background(), nil)
		if c != nil {
			_ = c.Close()
		}
		hung <- result{h, err}
	}()
	fake.Await(t, "the new connection's hung handshake on H1", entered)
	// Another connection's walk finds H1 failing and moves the pool to H2 (a switch by a
	// walk, not by the monitor).
	c, h, err := r.cl.Connect(context.Background(), nil)
	if err != nil || h != 1 || r.cl.Active() != 1 {
		t.Fatalf("second Connect: H%d %v, pool on H%d; want H2", h+1, err, r.cl.Active()+1)
	}
	_ = c.Close()
	if sw := r.events(failover.EventSwitch); len(sw) != 1 || sw[0].From != "H1:3306" {
		t.Fatalf("switch events %v, want one from H1 (by the walk)", sw)
	}
	r.clock.Advance(monInterval)
	r.cl.Check(context.Background()) // H1 suspect
	if len(ab.get()) != 0 {
		t.Fatalf("aborts %v while H1 is only suspect", ab.get())
	}
	r.tick(monFailDelay) // failed for FailoverDelay: declared down
	if got := ab.get(); !slices.Equal(got, []int{0}) {
		t.Fatalf("H1 declared down after the pool had left it: aborts %v, want [0] (its connections wait for hostTimeout and readTimeout)", got)
	}
	select {
	case res := <-hung:
		if res.err != nil || res.host != 1 {
			t.Fatalf("the connection whose handshake hung on H1: H%d %v, want H2", res.host+1, res.err)
		}
	case <-time.After(10 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("the connection hung on H1 was not released by the abort")
	}
	if ae := r.events(failover.EventAbort); len(ae) != 1 || ae[0].Host != "H1:3306" || ae[0].Err == nil {
		t.Fatalf("abort events %v, want one for H1 with the probes' error", ae)
	}
	if s := r.cl.Stats(); s.Aborted != 1 || s.Active != "H2:3306" || len(r.events(failover.EventSwitch)) != 1 {
		t.Fatalf("stats: aborted %d, active %s, %d switches; want 1, H2, 1", s.Aborted, s.Active, len(r.events(failover.EventSwitch)))
	}
	for i := 0; i < 5; i++ {
		r.tick(monInterval)
	}
	if got := ab.get(); !slices.Equal(got, []int{0}) {
		t.Fatalf("H1 still down: aborts %v, want [0] (once)", got)
	}

	// H2 is left by a walk too, but passes a probe before it fails for good: by then the
	// pool is not on it, and nothing is aborted.
	r.up(0)
	r.tick(monInterval) // H1 passes again
	r.down(1)           // H2 fails: the pool's walk goes to H3
	c, h, err = r.cl.Failover(context.Background(), 1, mysql.ErrInvalidConn, nil)
	if err != nil || h != 2 {
		t.Fatalf("Failover from H2: H%d %v, want H3", h+1, err)
	}
	_ = c.Close()
	r.up(1)
	r.tick(monInterval) // H2 passes: it is fine after all
	r.down(1)
	r.tick(monInterval)
	r.tick(monFailDelay) // H2 declared down while the pool is on H3
	if got := ab.get(); !slices.Equal(got, []int{0}) {
		t.Fatalf("H2 failed after it had passed a probe, the pool elsewhere: aborts %v, want [0]", got)
	}
}

// An attempt on a host that the probes declared down after the walk planned it (walks
// leave such hosts out, unless nothing else is left) gets no more than the probe timeout:
// a socket opened after the monitor closed the host's connections must not wait for
// hostTimeout.
func TestAttemptOnAHostDeclaredDownGetsTheProbeTimeout(t *testing.T) {
	var r *rig
	var budget time.Duration
	r, _ = monRig(t, 1, func(o *rigOpts) {
		o.HostTimeout = time.Hour
		o.FailoverDelay = 0
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if dl, ok := ctx.Deadline(); ok {
				budget = time.Until(dl)
			}
			return r.net.Dial(ctx, h)
		}
	})
	r.down(0)
	r.cl.Check(context.Background()) // the only host is declared down at its first failed probe
	r.up(0)
	c, _, err := r.cl.Connect(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	if budget <= 0 || budget > cluster.DefaultMinProbeTimeout {
		t.Fatalf("the attempt on the host declared down was given %v, want at most the probe timeout %v", budget, cluster.DefaultMinProbeTimeout)
	}
}
