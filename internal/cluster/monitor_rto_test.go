package cluster_test

import (
	"context"
	"database/sql/driver"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// slowConn is a probe connection to a server whose answers come lat after the request:
// a round trip takes lat on the fake clock, unless the context's deadline comes first
// (wall time left, compared with lat), which the round trip then waits for (a frozen
// host) and also takes on the fake clock.
type slowConn struct {
	driver.Conn
	r   *rig
	lat *atomic.Int64 // nanoseconds
}

func (c *slowConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	lat := time.Duration(c.lat.Load())
	if dl, ok := ctx.Deadline(); ok {
		if left := time.Until(dl); lat > left {
			<-ctx.Done()
			c.r.clock.Advance(hungFor(left, c.r.cl.Stats().Hosts[0].ProbeTimeout))
			return nil, ctx.Err()
		}
	}
	c.r.clock.Advance(lat)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

// hung is the latency of a host that never answers.
const hung = int64(time.Hour)

// hungFor is how far a probe that got no answer moves the fake clock: left, the wall
// time its deadline had left when it began waiting, to the millisecond; or the host's
// probe wait (HostStats.ProbeTimeout) when left falls short of it by less than 20 ms,
// the real time this goroutine took to get there after the probe set its deadline (a
// probe that waits less than its host's wait, late in a run of failed probes, falls
// short by more).
func hungFor(left, wait time.Duration) time.Duration {
	if wait > left && wait-left < 20*time.Millisecond {
		return wait
	}
	return left.Round(time.Millisecond)
}

// slowRig is monRig with FailoverDelay failoverDelay and H1's probe connections
// slowConns. H2's probes run while H1's advance the clock: their samples are not
// meaningful.
func slowRig(t *testing.T, failoverDelay time.Duration) (r *rig, lat *atomic.Int64) {
	lat = &atomic.Int64{}
	r, _ = monRig(t, 2, func(o *rigOpts) {
		o.FailoverDelay = failoverDelay
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			c, err := r.net.Dial(ctx, h)
			if err != nil || h != 0 {
				return c, err
			}
			return &slowConn{Conn: c, r: r, lat: lat}, nil
		}
	})
	return r, lat
}

// A host's probe timeout follows its probe round trips as RFC 6298's RTO:
// SRTT + max(50ms, 4*RTTVAR), the fixed 500 ms before the first passed probe, and a
// probe waits 3 times that, or SRTT + 225ms (DefaultMaxStall and DefaultStallMargin) when that is longer
// (HostStats.ProbeTimeout). Each expected value is worked out next to it.
func TestProbeTimeoutFollowsRoundTrips(t *testing.T) {
	r, lat := slowRig(t, 100*time.Millisecond)
	if got := r.stat(0).ProbeTimeout; got != 3*cluster.DefaultMinProbeTimeout {
		t.Fatalf("before any probe: wait %v, want 3 x %v", got, cluster.DefaultMinProbeTimeout)
	}
	for _, step := range []struct {
		rtt, wait time.Duration
	}{
		{10 * time.Millisecond, 235 * time.Millisecond},           // SRTT 10, RTTVAR 5: RTO 10 + max(50, 20) = 60; max(180, 10 + 225)
		{30 * time.Millisecond, 237500 * time.Microsecond},        // RTTVAR (15+20)/4 = 8.75, SRTT (70+30)/8 = 12.5: RTO 62.5; max(187.5, 237.5)
		{110 * time.Millisecond, 3 * 148437500 * time.Nanosecond}, // RTTVAR (26.25+97.5)/4 = 30.9375, SRTT (87.5+110)/8 = 24.6875: RTO 148.4375; 3 x that > 249.6875
	} {
		lat.Store(int64(step.rtt))
		r.tick(monInterval)
		h := r.stat(0)
		if h.State != failover.HostUp {
			t.Fatalf("round trip %v: H1 %v (%v), want up", step.rtt, h.State, h.LastError)
		}
		if h.ProbeTimeout != step.wait {
			t.Fatalf("after a round trip of %v: wait %v, want %v", step.rtt, h.ProbeTimeout, step.wait)
		}
	}
}

// An answer later than the probe timeout but within 3 times it passes, on the
// same connection, and is a sample (no ambiguity: nothing was sent again), so a host
// that turns slow raises its own timeout instead of being called down. Without the
// patience the 120 ms answer below fails against a 51 ms timeout.
func TestProbeLateAnswerIsASample(t *testing.T) {
	r, lat := slowRig(t, 0) // failoverDelay 0: any failed probe would leave H1
	lat.Store(int64(time.Millisecond))
	r.tick(monInterval) // SRTT 1, RTTVAR 0.5: 51, wait max(153, 226)
	lat.Store(int64(120 * time.Millisecond))
	r.tick(monInterval)
	h := r.stat(0)
	if h.State != failover.HostUp || r.cl.Active() != 0 || len(r.events(failover.EventProbe)) != 0 {
		t.Fatalf("a 120ms answer, timeout 51ms, wait 226ms: H1 %v (%v), active H%d; want up, H1", h.State, h.LastError, r.cl.Active()+1)
	}
	// RTTVAR (1.5 + 119)/4 = 30.125, SRTT (7 + 120)/8 = 15.875: 15.875 + 120.5 = 136.375
	if want := 3 * 136375 * time.Microsecond; h.ProbeTimeout != want {
		t.Fatalf("after the late answer: wait %v, want %v", h.ProbeTimeout, want)
	}
	if n := len(r.net.Conns(0)); n != 1 {
		t.Fatalf("%d probe connections opened to H1, want 1 (the late answer came on the first)", n)
	}
}

// A probe that gets no answer within its wait fails and takes no sample
// (Karn's rule); the timeout doubles (to at most 500 ms, the fixed bound, or twice the
// timeout), and while the host is not declared down the monitor probes again at once; a
// frozen host whose round trips took 1 ms fails its first probe 226 ms (1 + 225, the
// stall wait, more than 3 x 51) after it began, and with failoverDelay 400ms
// is declared down by the next one, which waits the 174 ms the run has left; once down
// its probes wait one timeout; a passed probe ends the doubling. The hung probes wait
// for their contexts (226 + 174 + 204 ms of real time).
func TestProbeTimeoutBackoff(t *testing.T) {
	r, lat := slowRig(t, 400*time.Millisecond)
	lat.Store(int64(time.Millisecond))
	r.tick(monInterval)
	if got := r.stat(0).ProbeTimeout; got != 226*time.Millisecond { // max(3 x (1 + max(50, 2)), 1 + 225)
		t.Fatalf("after a 1ms round trip: wait %v, want 226ms", got)
	}
	lat.Store(hung)
	r.tick(monInterval)
	h := r.stat(0)
	if h.State != failover.HostSuspect || r.cl.Active() != 0 {
		t.Fatalf("after one timed-out probe (226ms < failoverDelay 400ms): H1 %v, active H%d; want suspect, H1", h.State, r.cl.Active()+1)
	}
	if h.LastError == nil || !strings.Contains(h.LastError.Error(), "probe timed out after 226ms (the host's probe timeout is 51ms") {
		t.Fatalf("H1's error %v, want the wait and the timeout named", h.LastError)
	}
	if h.ProbeTimeout != 3*102*time.Millisecond {
		t.Fatalf("after one timeout: wait %v, want 3 x 102ms (doubled)", h.ProbeTimeout)
	}
	if !cluster.ProbeAgain(r.cl) {
		t.Fatal("after a timed-out probe of a host not yet down, the next probe is not at once")
	}
	// At once, no clock advance: the probe connection is opened again within the
	// doubled timeout (the fake dial is instant) and its round trip hangs for what the
	// run has left of failoverDelay, 400 - 226 = 174 ms (less than 306).
	r.cl.Check(context.Background())
	if cluster.ProbeAgain(r.cl) {
		t.Fatal("after the timed-out probe that declared H1 down, the next probe is still at once")
	}
	if h := r.stat(0); h.State != failover.HostDown || r.cl.Active() != 1 {
		t.Fatalf("after 226 + 174 ms of failed probes (>= failoverDelay): H1 %v, active H%d; want down, H2", h.State, r.cl.Active()+1)
	}
	if h := r.stat(0); h.LastError == nil || !strings.Contains(h.LastError.Error(), "probe timed out after 174ms") {
		t.Fatalf("H1's error %v, want the run's last 174ms", h.LastError)
	}
	if got := r.stat(0).ProbeTimeout; got != 204*time.Millisecond {
		t.Fatalf("down after two timeouts: wait %v, want 204ms (doubled twice, no patience once down)", got)
	}
	r.tick(monInterval) // a third timeout, 204 ms of real time: 408, at most max(500, 2 x 51) = 500
	if got := r.stat(0).ProbeTimeout; got != 408*time.Millisecond {
		t.Fatalf("down after three timeouts: wait %v, want 408ms", got)
	}
	lat.Store(int64(time.Millisecond))
	r.tick(monInterval)
	// Karn: the estimate is the one of before the timeouts, plus this sample: RTTVAR
	// 0.5 - 0.5/16, SRTT 1: 1 + 50, and the stall wait 1 + 225.
	if got := r.stat(0).ProbeTimeout; got != 226*time.Millisecond {
		t.Fatalf("after a passed probe: wait %v, want 226ms (no doubling left)", got)
	}
}

// lateConn is slowConn whose timeouts return late: after the context's deadline, the
// fake clock moves pause further (this process did not run meanwhile).
type lateConn struct {
	slowConn
	pause time.Duration
}

func (c *lateConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	rows, err := c.slowConn.QueryContext(ctx, q, args)
	if err != nil && ctx.Err() != nil {
		c.r.clock.Advance(c.pause)
	}
	return rows, err
}

// A probe whose timeout fired more than 50 ms late (the monitor's own process
// was paused: the answer may be unread in the socket) says nothing of its host, once in
// a row: no failed probe, no state change, the probe repeated at once; a second late
// timeout in a row counts. The hung probes wait for their contexts: 153 + 306 ms of real
// time.
func TestProbeLateTimeoutIsInconclusive(t *testing.T) {
	lat := &atomic.Int64{}
	var r *rig
	r, _ = monRig(t, 2, func(o *rigOpts) {
		o.FailoverDelay = 0
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			c, err := r.net.Dial(ctx, h)
			if err != nil || h != 0 {
				return c, err
			}
			return &lateConn{slowConn: slowConn{Conn: c, r: r, lat: lat}, pause: 200 * time.Millisecond}, nil
		}
	})
	lat.Store(int64(time.Millisecond))
	r.tick(monInterval)
	lat.Store(hung)
	r.tick(monInterval)
	if h := r.stat(0); h.State != failover.HostUp || r.cl.Active() != 0 || len(r.events(failover.EventProbe)) != 0 {
		t.Fatalf("a timeout 200ms late, failoverDelay 0: H1 %v, active H%d, %d failed probes; want up, H1, none",
			h.State, r.cl.Active()+1, len(r.events(failover.EventProbe)))
	}
	if !cluster.ProbeAgain(r.cl) {
		t.Fatal("the inconclusive probe is not repeated at once")
	}
	r.cl.Check(context.Background())
	if h := r.stat(0); h.State != failover.HostDown || r.cl.Active() != 1 {
		t.Fatalf("a second late timeout in a row: H1 %v, active H%d; want down, H2", h.State, r.cl.Active()+1)
	}
}

// A run of failed probes reaches failoverDelay without the doubling's overshoot: at 560
// ms, the waits are 226 ms (the stall wait of a 1 ms host) and 306 ms (3 x the doubled
// timeout, 532 ms so far), then not 612 ms but 50 ms, the most of the 28 ms left and
// DefaultProbeMargin (real time: about 0.58 s).
func TestProbeRunEndsAtFailoverDelay(t *testing.T) {
	r, lat := slowRig(t, 560*time.Millisecond)
	lat.Store(int64(time.Millisecond))
	r.tick(monInterval)
	lat.Store(hung)
	var waits []string
	for range 3 {
		r.cl.Check(context.Background())
		h := r.stat(0)
		if h.LastError != nil {
			msg := h.LastError.Error()
			if i := strings.Index(msg, "probe timed out after "); i >= 0 {
				waits = append(waits, strings.Fields(msg[i+len("probe timed out after "):])[0])
			}
		}
		if h.State == failover.HostDown {
			break
		}
	}
	if got := strings.Join(waits, " "); got != "226ms 306ms 50ms" {
		t.Errorf("waits of the run: %s, want 226ms 306ms 50ms", got)
	}
	if r.stat(0).State != failover.HostDown || r.cl.Active() != 1 {
		t.Errorf("after the run: H1 %v, active H%d; want down, H2", r.stat(0).State, r.cl.Active()+1)
	}
}

// A probe that repeats one whose timeout fired late opens its new connection within
// its own wait, not within hostTimeout: the late timeout closed the old connection, and
// a frozen host accepts a new one (its kernel does) and never greets. Here the host
// froze, the first timeout fired 200 ms late (inconclusive), and the repeat's dial hangs
// until its bound, 226 ms (the probe's wait; hostTimeout's 500 ms without this), after
// which the host is down and the pool moves. Real time: 226 + 226 ms.
func TestProbeRepeatDialsWithinItsWait(t *testing.T) {
	lat := &atomic.Int64{}
	var frozen atomic.Bool
	var r *rig
	r, _ = monRig(t, 2, func(o *rigOpts) {
		o.FailoverDelay = 100 * time.Millisecond
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if h == 0 && frozen.Load() {
				dl, _ := ctx.Deadline()
				left := time.Until(dl)
				<-ctx.Done()
				r.clock.Advance(left.Round(time.Millisecond))
				return nil, ctx.Err()
			}
			c, err := r.net.Dial(ctx, h)
			if err != nil || h != 0 {
				return c, err
			}
			return &lateConn{slowConn: slowConn{Conn: c, r: r, lat: lat}, pause: 200 * time.Millisecond}, nil
		}
	})
	lat.Store(int64(time.Millisecond))
	r.tick(monInterval)
	lat.Store(hung)
	frozen.Store(true)
	r.tick(monInterval)
	if n := len(r.events(failover.EventProbe)); n != 0 || !cluster.ProbeAgain(r.cl) {
		t.Fatalf("a timeout 200ms late: %d failed probes, want none and the probe repeated at once", n)
	}
	r.cl.Check(context.Background())
	h := r.stat(0)
	if h.LastError == nil || !strings.Contains(h.LastError.Error(), "probe connection not opened within 226ms (the probe's wait, repeating a probe whose timeout fired late)") {
		t.Fatalf("the repeat's error: %v, want its dial bounded by the probe's wait, 226ms", h.LastError)
	}
	if h.State != failover.HostDown || r.cl.Active() != 1 {
		t.Fatalf("after the repeat: H1 %v, active H%d; want down, H2", h.State, r.cl.Active()+1)
	}
}
