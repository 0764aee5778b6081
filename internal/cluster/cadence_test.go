package cluster_test

import (
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// calmRig is a schedRig on the two cadences (calmCheckInterval 2s, checkInterval 100ms,
// failoverDelay 100ms), with the traffic's waits set by the test: waits[h] is when a
// statement to host h started waiting for its answer (UnixNano on the rig's clock; 0:
// none), as the connector's socket tracker reports them (Env.Waiting).
type calmRig struct {
	*schedRig
	waits []atomic.Int64
	armed atomic.Pointer[func()] // the monitor's wake while it does not look (Env.ArmWait)
}

const calmPeriod = 2 * time.Second

func newCalmRig(t *testing.T, lat ...time.Duration) *calmRig {
	return newCalmRigWith(t, nil, lat...)
}

// newCalmRigWith is newCalmRig with set applied to the options last.
func newCalmRigWith(t *testing.T, set func(*rigOpts), lat ...time.Duration) *calmRig {
	c := &calmRig{waits: make([]atomic.Int64, len(lat))}
	c.schedRig = newSchedRigWith(t, func(o *rigOpts) {
		if set != nil {
			defer set(o)
		}
		o.CalmCheckInterval = calmPeriod
		o.Waiting = func(addr string) time.Time {
			// The fake hosts are H1:3306, H2:3306...
			i, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(addr, "H"), ":3306"))
			if err != nil || i < 1 || i > len(c.waits) {
				return time.Time{}
			}
			if w := c.waits[i-1].Load(); w != 0 {
				return time.Unix(0, w)
			}
			return time.Time{}
		}
		o.ArmWait = func(wake func()) bool {
			c.armed.Store(&wake)
			for i := range c.waits {
				if c.waits[i].Load() != 0 {
					c.armed.CompareAndSwap(&wake, nil)
					return true
				}
			}
			return false
		}
	}, lat...)
	return c
}

// wait records that a statement to host h starts waiting now (false: its answer came),
// and wakes the monitor when it sleeps without looking at the waits, as the connector's
// socket tracker does.
func (c *calmRig) wait(h int, on bool) {
	var w int64
	if on {
		w = c.sc.Now().UnixNano()
	}
	c.waits[h].Store(w)
	if on {
		if f := c.armed.Load(); f != nil && c.armed.CompareAndSwap(f, nil) {
			(*f)()
		}
	}
}

// now returns the rig's clock, from t0.
func (c *calmRig) now() time.Duration { return c.sc.Now().Sub(c.t0) }

// afterProbe steps until the clock is h's latency (at least 1 ms) after a probe of host
// h started (its answer is in), and waits for the monitor to see it end: h's next calm
// probe is then at least half a calm period away, whatever the rig's random phase.
func (c *calmRig) afterProbe(h int) {
	c.t.Helper()
	lat := max(time.Duration(c.lat[h].Load()), time.Millisecond)
	for {
		c.step()
		st := c.startsOf(h, time.Hour)
		if len(st) > 0 && c.now() == st[len(st)-1]+lat {
			break
		}
	}
	fake.WaitFor(c.t, "the probe seen", func() bool { return cluster.MonitorProbes(c.cl) == 0 })
}

// untilProbe steps the clock until a new probe of host h has started, for a test whose
// host h hangs (a hung probe moves the clock itself, so the rig is not idle while it
// waits), and returns how many probes of h had started before it.
func (c *calmRig) untilProbe(h int) int {
	c.t.Helper()
	n := len(c.startsOf(h, time.Hour))
	for len(c.startsOf(h, time.Hour)) == n {
		c.step()
		fake.WaitFor(c.t, "the monitor after the step", func() bool {
			// Idle as step reads it: the monitor asleep, and every running probe asleep
			// on the clock for its answer (another host's probe may be).
			k, _ := c.sc.next()
			asleep := int(c.sleeping.Load())
			return len(c.startsOf(h, time.Hour)) > n || k == 1+asleep && cluster.MonitorProbes(c.cl) == asleep
		})
	}
	return n
}

// count returns how many probe round trips host h had in (from, to], from t0.
func (c *calmRig) count(h int, from, to time.Duration) int {
	n := 0
	for _, st := range c.startsOf(h, to) {
		if st > from {
			n++
		}
	}
	return n
}

// failed returns how many failed probes host h had in (from, to], from t0 (a probe
// whose connection could not be opened has no round trip).
func (c *calmRig) failed(h int, from, to time.Duration) int {
	addr := "H" + strconv.Itoa(h+1) + ":3306"
	n := 0
	for _, e := range c.events(failover.EventProbe) {
		if at := e.Time.Sub(c.t0); e.Host == addr && at > from && at <= to {
			n++
		}
	}
	return n
}

// An idle instance costs each host one probe per calmCheckInterval: over a minute of a
// calm cluster (no waits, every probe passing, nothing moving), each of three hosts is
// probed about 30 times, the active one included, where the fixed schedule probed the
// active host 1,200 times and the others 600.
func TestMonitorCalmCadenceWhenIdle(t *testing.T) {
	c := newCalmRig(t, time.Millisecond, 0, 0)
	c.runTo(61 * time.Second)
	for h := range 3 {
		n := c.count(h, time.Second, 61*time.Second)
		if n > 31 || n < 28 {
			t.Errorf("H%d probed %d times in a calm minute, want about 30 (one per %v): %v", h+1, n, calmPeriod, c.startsOf(h, 61*time.Second))
		}
	}
	if n := len(c.events(failover.EventProbe)); n != 0 || c.cl.Active() != 0 {
		t.Fatalf("%d failed probes, active H%d; want none, H1", n, c.cl.Active()+1)
	}
}

// Traffic says look: a statement waiting for the active host's answer for
// checkInterval/2 (the grace time, 50 ms) puts it on the alert schedule at once, though
// its last probe was a calm period ago and the monitor slept (its local tick sees the
// wait): its probe starts 50 ms after the wait started, and it is probed every 50 ms
// while the wait lasts, the other hosts are watched (every 500 ms). Once the answer
// came, the hosts go back to the calm cadence.
// An idle instance's monitor does not wake every grace time to look at the waits: once
// none has been seen for DefaultIdleAfter it sleeps until its next probe is due, and the
// next wait to start wakes it (Env.ArmWait). Over 20 s of a calm, idle cluster of two
// hosts it sleeps about 20 times for the probes (each probe's round trip and the
// monitor's sleep to the next), not 400 times for the 50 ms tick. A wait then still puts
// the host on alert when it crosses the grace time (TestMonitorAlertWhileWaitCrossesGrace,
// whose wait starts while the monitor sleeps so), and for DefaultIdleAfter after a wait
// the monitor looks every grace time again.
func TestMonitorIdleSleepsUntilAWait(t *testing.T) {
	c := newCalmRig(t, time.Millisecond, time.Millisecond)
	c.runTo(10 * time.Second)
	before := c.sc.slept.Load()
	c.runTo(30 * time.Second)
	if n := c.sc.slept.Load() - before; n > 80 {
		t.Errorf("%d sleeps in 20 s of an idle, calm cluster of 2 hosts, want at most 80 (the calm probes': at most 10 a host, a few sleeps each), not a look every %v", n, 50*time.Millisecond)
	}
	c.wait(0, true)
	c.wait(0, false) // a statement that answered at once: the monitor looks every grace time for DefaultIdleAfter
	from, at := c.sc.slept.Load(), c.now()
	c.runTo(at + cluster.DefaultIdleAfter/2)
	if n := c.sc.slept.Load() - from; n < int64(cluster.DefaultIdleAfter/2/(50*time.Millisecond))-1 {
		t.Errorf("%d sleeps in the %v after a wait started, want a look every 50 ms", n, cluster.DefaultIdleAfter/2)
	}
	// Looking every grace time, the monitor is not armed: a wait that starts now, between
	// two looks, is seen at the next one, and the host's alert probe starts by the time
	// the wait crosses the grace time, as when idle.
	k := len(c.startsOf(0, time.Hour))
	w := c.now()
	c.wait(0, true)
	c.runTo(w + 50*time.Millisecond)
	if got := c.startsOf(0, time.Hour)[k:]; len(got) == 0 || got[0] > w+50*time.Millisecond {
		t.Errorf("a wait started at %v while the monitor looks every grace time: H1 probed at %v after it, want by 50 ms after it", w, got)
	}
	c.wait(0, false)
}

func TestMonitorAlertWhileWaitCrossesGrace(t *testing.T) {
	c := newCalmRig(t, time.Millisecond, 0)
	c.runTo(10 * time.Second)
	c.afterProbe(0)
	before := len(c.startsOf(0, time.Hour))
	w := c.now()
	c.wait(0, true)
	c.runTo(w + 50*time.Millisecond)
	if got := c.startsOf(0, time.Hour)[before:]; !slices.Equal(got, []time.Duration{w + 50*time.Millisecond}) {
		t.Fatalf("the wait started at %v; H1 probed at %v after it, want once, 50 ms after it", w, got)
	}
	c.runTo(w + 450*time.Millisecond)
	if n := c.count(0, w, w+450*time.Millisecond); n != 9 {
		t.Errorf("H1 probed %d times in the 400 ms after the wait crossed the grace time, want 9 (every 50 ms): %v", n, c.startsOf(0, time.Hour)[before:])
	}
	// The other hosts are watched meanwhile: every 500 ms (calm/DefaultWatchDivisor), not
	// every 100 ms (a fleet whose primary died must not probe every host at the alert
	// rate), nor once per calm period (a target's liveness and role must be recent).
	c.runTo(w + 2050*time.Millisecond)
	if n := c.count(1, w+50*time.Millisecond, w+2050*time.Millisecond); n < 3 || n > 5 {
		t.Errorf("H2 probed %d times in the 2 s the active host's statement waited, want every 500 ms (4): %v", n, c.startsOf(1, time.Hour))
	}
	c.wait(0, false)
	end := c.now()
	c.runTo(end + 20*time.Second)
	if n := c.count(0, end+time.Second, end+20*time.Second); n > 10 {
		t.Errorf("H1 probed %d times in the 19 s after the answer came, want the calm cadence (at most 10): %v; %v", n, c.startsOf(0, time.Hour)[before:], c.events(failover.EventProbe))
	}
}

// With a write target, a probe reads the server's role: on the pool's own host, on the
// alert schedule because a statement waits, a probe every 50 ms asks only whether it
// answers (SELECT 1), and reads the role once per watch period (500 ms). The other hosts
// have their role read by every probe: the pool may have to move to one.
func TestMonitorAlertProbesOfActiveAreCheap(t *testing.T) {
	c := newCalmRigWith(t, func(o *rigOpts) { o.TargetSessionAttrs = attrs.ReadWrite }, time.Millisecond, 0)
	c.net.SetReadOnly(1, true)
	c.runTo(10 * time.Second)
	c.afterProbe(0)
	w := c.now()
	c.wait(0, true)
	c.runTo(w + 2050*time.Millisecond)
	roles, ones := c.roleReads(0, w, w+2050*time.Millisecond)
	if roles < 3 || roles > 5 || ones < 30 {
		t.Errorf("H1 (the pool's host, a statement waiting 2 s): %d role reads and %d SELECT 1, want a role read every 500 ms (4) and SELECT 1 between (about 36)", roles, ones)
	}
	if roles, ones := c.roleReads(1, w, w+2050*time.Millisecond); ones != 0 || roles < 3 {
		t.Errorf("H2 (watched): %d role reads and %d SELECT 1, want a role read by every probe", roles, ones)
	}
	// The role reads are the learned SELECT of @@global values, with RoleQuery (a SHOW of
	// every variable) once per DefaultRoleRelearn.
	for h := range 2 {
		if q := c.queriesOf(h, w, w+2050*time.Millisecond); q[cluster.RoleQuery] > 1 {
			t.Errorf("H%d: RoleQuery %d times in 2 s, want at most once (DefaultRoleRelearn %v): %v", h+1, q[cluster.RoleQuery], cluster.DefaultRoleRelearn, q)
		}
	}
}

// roleReads counts host h's probe queries in (from, to] that read its role (RoleQuery,
// or the SELECT of @@global values learned from it), and its SELECT 1.
func (c *calmRig) roleReads(h int, from, to time.Duration) (roles, ones int) {
	for q, n := range c.queriesOf(h, from, to) {
		switch {
		case q == cluster.RoleQuery || strings.HasPrefix(q, "SELECT @@global."):
			roles += n
		case q == "SELECT 1":
			ones += n
		}
	}
	return roles, ones
}

// A host whose probes fail is on the alert schedule (every checkInterval, as it is not
// the active host), and back on the calm cadence DefaultAlertHold after its probes pass
// again; the active host stays calm meanwhile.
func TestMonitorAlertWhileProbeFailsThenCalm(t *testing.T) {
	c := newCalmRig(t, time.Millisecond, 0)
	c.runTo(10 * time.Second)
	c.down(1)
	for c.failed(1, 0, time.Hour) == 0 { // the calm probe that finds it down comes within 2 s
		c.step()
	}
	c.idle()
	from := c.now()
	c.runTo(from + time.Second)
	if n := c.failed(1, from, from+time.Second); n < 9 {
		t.Errorf("H2, failing its probes, failed %d probes in a second, want every 100 ms (10): %v", n, c.events(failover.EventProbe))
	}
	if n := c.count(0, from, from+time.Second); n > 1 {
		t.Errorf("H1 (active, well) probed %d times in that second, want the calm cadence", n)
	}
	c.up(1)
	c.runTo(from + 1100*time.Millisecond)
	back := c.now()
	c.runTo(back + cluster.DefaultAlertHold - 200*time.Millisecond)
	if n := c.count(1, back+100*time.Millisecond, back+cluster.DefaultAlertHold-200*time.Millisecond); n < 25 {
		t.Errorf("H2 probed %d times in the hold after its probes passed again, want every 100 ms", n)
	}
	c.runTo(back + cluster.DefaultAlertHold + 20*time.Second)
	if n := c.count(1, back+cluster.DefaultAlertHold+time.Second, back+cluster.DefaultAlertHold+20*time.Second); n > 10 {
		t.Errorf("H2 probed %d times in the 19 s after the hold, want the calm cadence (at most 10)", n)
	}
}

// On a host that answers in 200 ms (a saturated one), a statement waiting 50 ms is no sign
// of anything: the host goes on the alert schedule once a wait outlasts its usual answer
// (its probes' smoothed round trip plus 4 deviations), not after the 50 ms grace time.
func TestMonitorWaitOnSlowHostOutlastsItsAnswers(t *testing.T) {
	c := newCalmRig(t, 200*time.Millisecond, 0)
	c.runTo(20 * time.Second)
	c.afterProbe(0)
	w := c.now()
	before := len(c.startsOf(0, time.Hour))
	c.wait(0, true)
	c.runTo(w + 180*time.Millisecond)
	if got := c.startsOf(0, time.Hour)[before:]; len(got) > 0 {
		t.Fatalf("a statement waited %v on a host that answers in 200 ms: H1 probed at %v, want no probe yet", c.now()-w, got)
	}
	c.runTo(w + 800*time.Millisecond)
	if got := c.startsOf(0, time.Hour)[before:]; len(got) == 0 || got[0] > w+600*time.Millisecond {
		t.Fatalf("the wait outlasted H1's usual answer: probes at %v, want the first by %v", got, w+600*time.Millisecond)
	}
}

// The frozen-primary bound under traffic: H1, the active host, answers in 1 ms and has
// been calm for seconds; it freezes as a statement is sent to it. The wait crosses the
// grace time 50 ms later, H1's probe starts then and waits 226 ms (SRTT 1 + 225), so the
// pool leaves it 276 ms after the freeze, as the fixed schedule's worst case (275).
func TestMonitorFrozenActiveUnderTrafficBound(t *testing.T) {
	c := newCalmRig(t, time.Millisecond, 0)
	c.runTo(10 * time.Second)
	c.afterProbe(0)
	if w := c.stat(0).ProbeTimeout; w != 226*time.Millisecond {
		t.Fatalf("H1's wait before the freeze: %v, want 226ms (1 + 225)", w)
	}
	c.lat[0].Store(hung)
	frozen := c.sc.Now()
	c.wait(0, true)
	c.untilProbe(0)
	fake.WaitFor(t, "the switch from the frozen H1", func() bool { return len(c.events(failover.EventSwitch)) > 0 })
	sw := c.events(failover.EventSwitch)[0]
	if sw.From != "H1:3306" || c.cl.Active() != 1 {
		t.Fatalf("switch %+v, active H%d; want from H1 to H2", sw, c.cl.Active()+1)
	}
	if took, want := sw.Time.Sub(frozen), 50*time.Millisecond+226*time.Millisecond; took != want {
		t.Errorf("the pool left the frozen H1 %v after the freeze (on the clock), want %v: the 50 ms grace time and the probe's 226 ms wait", took, want)
	}
}

// Each monitor has a phase of its own on the calm grid: two connectors started at the
// same instant do not probe in step.
func TestMonitorCalmPhaseDiffers(t *testing.T) {
	phase := func() []time.Duration {
		c := newCalmRig(t, 0)
		c.runTo(9 * time.Second)
		var out []time.Duration
		for _, st := range c.startsOf(0, 9*time.Second)[1:] {
			out = append(out, st%calmPeriod)
		}
		return out
	}
	a, b := phase(), phase()
	if pa, pb := cluster.CalmPhase(newCalmRig(t, 0).cl), cluster.CalmPhase(newCalmRig(t, 0).cl); pa == pb {
		t.Errorf("two connectors with the same calm phase %v", pa)
	}
	if len(a) < 3 || len(b) < 3 {
		t.Fatalf("calm probes at %v and %v, want at least 3 each", a, b)
	}
	same := 0
	for i := range min(len(a), len(b)) {
		d := a[i] - b[i]
		if d < 0 {
			d = -d
		}
		if d < time.Millisecond {
			same++
		}
	}
	if same == min(len(a), len(b)) {
		t.Fatalf("two monitors probed in step: %v and %v (within the calm period)", a, b)
	}
}

// Away from home, home's probes decide the return (switchBackDelay of passed probes): once
// H1 answers again it stays on the alert schedule, past DefaultAlertHold, until the pool
// is back, so that the return comes switchBackDelay after H1 answered and not up to a calm
// period later. While H1 is down it is only watched: its refused connects tell nothing.
func TestMonitorHomeOnAlertWhileAway(t *testing.T) {
	c := newCalmRigWith(t, func(o *rigOpts) { o.SwitchBackDelay = 6 * time.Second }, time.Millisecond, time.Millisecond)
	c.net.SetReadOnly(1, true) // a secondary: the pool never returns from a writer to a writer
	c.runTo(10 * time.Second)
	c.down(0)
	for c.cl.Active() != 1 {
		c.step()
	}
	gone := c.now() + time.Second
	c.runTo(gone + 2*time.Second)
	if n := c.failed(0, gone, gone+2*time.Second); n > 5 {
		t.Errorf("H1 (home, down, the pool away) failed %d probes in 2 s, want it watched (every %v): %v", n, calmPeriod/cluster.DefaultWatchDivisor, c.startsOf(0, gone+2*time.Second))
	}
	c.up(0)
	back := c.now()
	from := back + cluster.DefaultAlertHold + time.Second
	c.runTo(from + time.Second)
	if c.cl.Active() != 1 {
		t.Fatalf("the pool is on H%d %v after H1 answered again, want still H2 (switchBackDelay 6s)", c.cl.Active()+1, c.now()-back)
	}
	if n := c.count(0, from, from+time.Second); n < 9 {
		t.Errorf("H1 (home, answering, the pool away) probed %d times in a second after the hold, want every 100 ms (10): %v", n, c.startsOf(0, from+time.Second))
	}
	for c.cl.Active() != 0 {
		c.step()
	}
	if took := c.now() - back; took > 6*time.Second+800*time.Millisecond {
		t.Errorf("the pool returned to H1 %v after it answered again, want within switchBackDelay (6s), a watch period (500ms) and a probe period or two", took)
	}
}

// With replica reads, a replica skipped for its replication (stopped here) stays on the
// alert schedule, so that the reading that lets it serve again is fresh; once it
// replicates again it goes back to the calm cadence after the hold.
func TestMonitorSkippedReplicaOnAlert(t *testing.T) {
	c := newCalmRigWith(t, func(o *rigOpts) { o.ReplicaReads = true }, time.Millisecond, time.Millisecond)
	c.net.SetReadOnly(1, true)
	c.net.Follow(1, 0)
	c.net.SetLag(1, fake.LagNull)
	from := 10 * time.Second
	c.runTo(from + time.Second)
	if n := c.count(1, from, from+time.Second); n < 9 {
		t.Errorf("H2, a replica whose replication is stopped, had %d probe round trips in a second, want a probe every 100 ms: %q", n, c.stat(1).ReplicaSkip)
	}
	c.net.SetLag(1, 0)
	from += time.Second + cluster.DefaultAlertHold + time.Second
	c.runTo(from + 10*time.Second)
	// Two round trips per probe of a replica: its state, and its replica status.
	if n := c.count(1, from, from+10*time.Second); n > 12 {
		t.Errorf("H2, replicating again, had %d probe round trips in 10 s after the hold, want the calm cadence (at most 6 probes, 12 round trips): %q", n, c.stat(1).ReplicaSkip)
	}
}

// A host the pool does not use is declared down by its probes only after they have
// failed for DefaultTargetDownDelay (1 s), not failoverDelay (100 ms): the verdict only
// keeps the walks from trying it, and a host that a fleet's failover overloads for a
// moment must stay in the walks. The pool's host is still left after failoverDelay.
func TestMonitorTargetDownAfterTargetDelay(t *testing.T) {
	c := newCalmRig(t, time.Millisecond, time.Millisecond)
	c.runTo(10 * time.Second)
	c.down(1)
	for c.failed(1, 0, time.Hour) == 0 {
		c.step()
	}
	first := c.now()
	c.runTo(first + 500*time.Millisecond)
	if s := c.stat(1).State; s == failover.HostDown {
		t.Errorf("H2 (not the pool's host) declared down 500 ms after its first failed probe, want after %v", cluster.DefaultTargetDownDelay)
	}
	c.runTo(first + cluster.DefaultTargetDownDelay + 300*time.Millisecond)
	if s := c.stat(1).State; s != failover.HostDown {
		t.Errorf("H2 is %v %v after its first failed probe, want down", s, cluster.DefaultTargetDownDelay+300*time.Millisecond)
	}
}

// Traffic as evidence: probes of H1 (the pool's host) that time out while the
// connector's other sessions read from H1 are no failure of H1, which is slow, not down
// (a starved CPU): the pool stays, and each timed-out probe is repeated at once.
func TestMonitorProbeTimeoutWhileHostAnswers(t *testing.T) {
	var reads atomic.Uint64
	c := newCalmRigWith(t, func(o *rigOpts) {
		o.Answers = func(addr string) uint64 {
			if addr == "H1:3306" {
				return reads.Add(1) // a session read from H1 since the last look
			}
			return 0
		}
	}, time.Millisecond, time.Millisecond)
	c.runTo(10 * time.Second)
	c.afterProbe(0)
	c.lat[0].Store(hung) // H1 answers no probe; its sessions still read
	c.wait(0, true)
	n := c.untilProbe(0)
	fake.WaitFor(t, "four timed-out probes of H1", func() bool { return len(c.startsOf(0, time.Hour)) >= n+4 })
	var failedH1 []failover.Event // H2's probes may time out too: the rig's clock moves only with H1's
	for _, e := range c.events(failover.EventProbe) {
		if e.Host == "H1:3306" {
			failedH1 = append(failedH1, e)
		}
	}
	if c.cl.Active() != 0 || len(c.events(failover.EventSwitch)) > 0 || len(failedH1) > 0 {
		t.Fatalf("H1's sessions read answers while its probes timed out, yet: active H%d, switches %v, failed probes of H1 %v",
			c.cl.Active()+1, c.events(failover.EventSwitch), failedH1)
	}
}

// The pool's new host is not put on the alert schedule because its role changed: after
// the primary died and a standby was promoted, the pool moves to the new primary, which
// is then watched (every calm/DefaultWatchDivisor) for the hold that follows a move, like
// every other host, and not probed every checkInterval/DefaultActiveProbes: a fleet's
// instances would all do so just when their first writes reach it.
func TestMonitorNewPrimaryNotOnAlert(t *testing.T) {
	c := newCalmRigWith(t, func(o *rigOpts) { o.TargetSessionAttrs = attrs.ReadWrite }, time.Millisecond, time.Millisecond)
	c.net.SetReadOnly(1, true)
	c.runTo(10 * time.Second)
	c.down(0)
	c.net.SetReadOnly(1, false) // promoted
	for c.cl.Active() != 1 {
		c.step()
	}
	moved := c.now()
	from, to := moved+100*time.Millisecond, moved+cluster.DefaultAlertHold-100*time.Millisecond
	c.runTo(to)
	if n := c.count(1, from, to); n > 12 {
		t.Errorf("H2, the new primary the pool moved to, had %d probe round trips in the %v after the move, want it watched (every %v): %v",
			n, to-from, calmPeriod/cluster.DefaultWatchDivisor, c.startsOf(1, to))
	}
}
