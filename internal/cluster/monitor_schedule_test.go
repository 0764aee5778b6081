package cluster_test

import (
	"context"
	"database/sql/driver"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// stepClock is a fake clock whose Sleep blocks until Advance moves the time to its end
// (or its context ends): the test decides when the monitor goroutine wakes and when a
// probe's answer comes, and nothing waits for real time.
type stepClock struct {
	mu       sync.Mutex
	now      time.Time
	sleepers map[*stepSleeper]struct{}
	slept    atomic.Int64 // Sleep calls with d > 0: the wake-ups of the monitor and its probes
}

type stepSleeper struct {
	until time.Time
	ch    chan struct{}
	ctx   context.Context
}

func newStepClock() *stepClock {
	return &stepClock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), sleepers: map[*stepSleeper]struct{}{}}
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
	c.slept.Add(1)
	c.mu.Lock()
	s := &stepSleeper{until: c.now.Add(d), ch: make(chan struct{}), ctx: ctx}
	c.sleepers[s] = struct{}{}
	c.mu.Unlock()
	select {
	case <-s.ch:
		return nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.sleepers, s)
		c.mu.Unlock()
		return ctx.Err()
	}
}

// Advance moves the time by d and wakes the sleepers whose end it reached.
func (c *stepClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for s := range c.sleepers {
		if !s.until.After(c.now) {
			close(s.ch)
			delete(c.sleepers, s)
		}
	}
}

// next returns how many goroutines sleep and the earliest end among them. A sleeper
// whose context has ended is on its way out (the monitor woken by a probe's end) and
// does not count.
func (c *stepClock) next() (int, time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first time.Time
	n := 0
	for s := range c.sleepers {
		if s.ctx.Err() != nil {
			continue
		}
		n++
		if first.IsZero() || s.until.Before(first) {
			first = s.until
		}
	}
	return n, first
}

// schedRig is a monitor rig whose Cluster runs on a stepClock with Start, every probe
// connection a schedConn: each probe query is logged with its start on the clock and
// answered after its host's latency on the clock (a Sleep the test ends with step).
type schedRig struct {
	*rig
	sc       *stepClock
	t0       time.Time
	lat      []atomic.Int64 // per host, nanoseconds; hung: no answer until the probe's context ends
	sleeping atomic.Int32   // probe queries asleep on the clock
	mu       sync.Mutex
	starts   [][]time.Duration // per host, each probe query's start, from t0
	texts    [][]string        // per host, each probe query's text, as starts
}

// schedConn is a probe connection of a schedRig.
type schedConn struct {
	driver.Conn
	s    *schedRig
	host int
}

func (c *schedConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	s := c.s
	s.mu.Lock()
	s.starts[c.host] = append(s.starts[c.host], s.sc.Now().Sub(s.t0))
	s.texts[c.host] = append(s.texts[c.host], q)
	s.mu.Unlock()
	if lat := time.Duration(s.lat[c.host].Load()); lat == time.Duration(hung) {
		// A frozen server: the probe's own deadline (wall time) ends the wait; the
		// clock then moves by as much, as the real one would have.
		dl, _ := ctx.Deadline()
		left := time.Until(dl)
		<-ctx.Done()
		s.sc.Advance(hungFor(left, s.cl.Stats().Hosts[c.host].ProbeTimeout))
		return nil, ctx.Err()
	} else if lat > 0 {
		s.sleeping.Add(1)
		err := s.sc.Sleep(ctx, lat)
		s.sleeping.Add(-1)
		if err != nil {
			return nil, err
		}
	}
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

// newSchedRig returns a started monitor over len(lat) fake hosts answering after lat at
// checkInterval 100ms and failoverDelay 100ms (the 300 ms detection setting).
func newSchedRig(t *testing.T, lat ...time.Duration) *schedRig {
	return newSchedRigWith(t, nil, lat...)
}

// newSchedRigWith is newSchedRig with set applied to the options last.
func newSchedRigWith(t *testing.T, set func(*rigOpts), lat ...time.Duration) *schedRig {
	hosts := len(lat)
	s := &schedRig{sc: newStepClock(), lat: make([]atomic.Int64, hosts), starts: make([][]time.Duration, hosts), texts: make([][]string, hosts)}
	for h, d := range lat {
		s.lat[h].Store(int64(d))
	}
	s.t0 = s.sc.Now()
	s.rig, _ = monRig(t, hosts, func(o *rigOpts) {
		o.Clock = s.sc
		o.CheckInterval, o.FailoverDelay = 100*time.Millisecond, 100*time.Millisecond
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			c, err := s.net.Dial(ctx, h)
			if err != nil {
				return c, err
			}
			return &schedConn{Conn: c, s: s, host: h}, nil
		}
		if set != nil {
			set(o)
		}
	})
	s.cl.Start()
	return s
}

// idle waits until the monitor is idle: asleep, and every probe it started either seen
// to end or asleep on the clock for its answer, the same in two readings in a row (the
// counts are read one after the other). It returns the earliest wake-up.
func (s *schedRig) idle() time.Time {
	s.t.Helper()
	type reading struct {
		running, n, sleeping int
		until                time.Time
	}
	read := func() reading {
		var r reading
		r.running = cluster.MonitorProbes(s.cl)
		r.n, r.until = s.sc.next()
		r.sleeping = int(s.sleeping.Load())
		return r
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		a := read()
		if a.n == 1+a.sleeping && a.running == a.sleeping && read() == a {
			return a.until
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("the monitor is not idle: %d asleep on the clock, %d of them probes, %d probes running; clock at %v",
				a.n, a.sleeping, a.running, s.sc.Now().Sub(s.t0))
		}
		runtime.Gosched()
	}
}

// step waits until the monitor is idle and moves the clock to the earliest wake-up.
func (s *schedRig) step() {
	s.t.Helper()
	until := s.idle()
	s.sc.Advance(until.Sub(s.sc.Now()))
}

// runTo steps until the clock is at least t0 + d.
func (s *schedRig) runTo(d time.Duration) {
	s.t.Helper()
	for s.sc.Now().Sub(s.t0) < d {
		s.step()
	}
	s.idle()
}

// queriesOf counts host's probe queries that started in (from, to], from t0, by text.
func (s *schedRig) queriesOf(host int, from, to time.Duration) map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := map[string]int{}
	for i, st := range s.starts[host] {
		if st > from && st <= to {
			n[s.texts[host][i]]++
		}
	}
	return n
}

// startsOf returns host's probe starts, from t0, up to and including d.
func (s *schedRig) startsOf(host int, d time.Duration) []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []time.Duration
	for _, st := range s.starts[host] {
		if st <= d {
			out = append(out, st)
		}
	}
	return out
}

func ms(ds ...int) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = time.Duration(d) * time.Millisecond
	}
	return out
}

// Each host's probes run on a fixed-rate schedule of their own: a probe starts
// a period after the previous one of its host started, not a period after it ended (its
// round trip is not added to every gap), and right after it ended when it took longer
// than the period; the active host's period is checkInterval/2, the others'
// checkInterval. Here H1 (active) answers in 30 ms, then in 70 ms (longer than its 50 ms
// period), H2 at once.
func TestMonitorProbeSchedule(t *testing.T) {
	s := newSchedRig(t, 30*time.Millisecond, 0)
	s.runTo(200 * time.Millisecond)
	if got, want := s.startsOf(0, 200*time.Millisecond), ms(0, 50, 100, 150, 200); !slices.Equal(got, want) {
		t.Fatalf("H1 (active, 30 ms answers) probed at %v, want %v (every 50 ms from start to start); %v", got, want, s.events(failover.EventProbe))
	}
	if got, want := s.startsOf(1, 200*time.Millisecond), ms(0, 100, 200); !slices.Equal(got, want) {
		t.Fatalf("H2 probed at %v, want %v (every checkInterval)", got, want)
	}
	s.lat[0].Store(int64(70 * time.Millisecond)) // from the probe after the one at 200
	s.runTo(460 * time.Millisecond)
	if got, want := s.startsOf(0, 460*time.Millisecond), ms(0, 50, 100, 150, 200, 250, 320, 390, 460); !slices.Equal(got, want) {
		t.Fatalf("H1 (70 ms answers from 250 on) probed at %v, want %v (each as soon as the previous ended)", got, want)
	}
	if n := len(s.events(failover.EventProbe)); n != 0 || s.cl.Active() != 0 {
		t.Fatalf("%d failed probes, active H%d; want none, H1", n, s.cl.Active()+1)
	}
}

// No host's probes wait for another's: H2's probe takes 10 s to be answered
// (a far or hung host), and meanwhile H1, the active host, is probed every 50 ms as
// before. (The monitor used to run rounds: each waited for its slowest probe.)
func TestMonitorSlowHostDoesNotHoldBackActive(t *testing.T) {
	s := newSchedRig(t, 0, 10*time.Second)
	s.runTo(500 * time.Millisecond)
	if got := s.startsOf(0, 500*time.Millisecond); !slices.Equal(got, ms(0, 50, 100, 150, 200, 250, 300, 350, 400, 450, 500)) {
		t.Fatalf("H1 probed at %v while H2's probe was unanswered, want every 50 ms", got)
	}
	if got := s.startsOf(1, 500*time.Millisecond); !slices.Equal(got, ms(0)) {
		t.Fatalf("H2 probed at %v, want once (its probe is still waiting for its answer); %v", got, s.events(failover.EventProbe))
	}
}

// The frozen-primary bound at checkInterval=100ms&failoverDelay=100ms, on the
// clock: H1, the active host, answers in 1 ms and freezes right after an answer (the
// worst phase: its next probe is a whole period away). Its next probe starts 50 ms
// after the last (its period is checkInterval/2) and waits 226 ms (SRTT 1 + 225: the
// stall a live host may have), so the pool leaves it 49 + 226 = 275 ms after the
// freeze, within 300 ms. (With one probe per checkInterval, 325 ms.) The hung probe waits
// for its context: 226 ms of real time.
func TestMonitorFrozenActiveHostBound(t *testing.T) {
	s := newSchedRig(t, time.Millisecond, 0)
	s.runTo(2 * time.Second) // SRTT 1 ms, RTTVAR near 0
	// Run on to just after an answer of H1: the clock at a probe start + 1 ms.
	for {
		s.step()
		st := s.startsOf(0, time.Hour)
		if s.sc.Now().Sub(s.t0) == st[len(st)-1]+time.Millisecond {
			break
		}
	}
	// The answer is in: wait for the monitor to see the probe end, then freeze.
	fake.WaitFor(t, "H1's last probe seen", func() bool { return cluster.MonitorProbes(s.cl) == 0 })
	if w := s.stat(0).ProbeTimeout; w != 226*time.Millisecond {
		t.Fatalf("H1's wait before the freeze: %v, want 226ms (1 + 225)", w)
	}
	s.lat[0].Store(hung)
	frozen := s.sc.Now()
	// Step until H1's next probe has started; from then on its probes (it is declared
	// down, and probed on to see it come back) always run, so the monitor is never idle
	// again: wait for the switch instead.
	n := len(s.startsOf(0, time.Hour))
	for {
		s.step()
		fake.WaitFor(t, "the monitor after the step", func() bool {
			k, _ := s.sc.next()
			return len(s.startsOf(0, time.Hour)) > n || k == 1 && cluster.MonitorProbes(s.cl) == 0
		})
		if len(s.startsOf(0, time.Hour)) > n {
			break
		}
	}
	fake.WaitFor(t, "the switch from the frozen H1", func() bool { return len(s.events(failover.EventSwitch)) > 0 })
	sw := s.events(failover.EventSwitch)[0]
	if sw.From != "H1:3306" || s.cl.Active() != 1 {
		t.Fatalf("switch %+v, active H%d; want from H1 to H2", sw, s.cl.Active()+1)
	}
	took := sw.Time.Sub(frozen)
	if want := 49*time.Millisecond + 226*time.Millisecond; took != want {
		t.Errorf("the pool left the frozen H1 %v after the freeze (on the clock), want %v: 49 ms to its next probe and the probe's 226 ms wait", took, want)
	}
	if took > 300*time.Millisecond {
		t.Errorf("left %v after the freeze, beyond the 300 ms bound", took)
	}
}
