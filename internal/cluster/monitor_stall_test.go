package cluster_test

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// Slow primaries: the probe's wait tells a host that answers late from one
// that does not answer. Every test here runs at failoverDelay 100ms (the issue's
// setting), so that one failed probe (it waits more than 100 ms) moves the pool: a
// single late answer taken for a death shows as a switch.

// steady gives H1 n probes answered in rtt each: its estimate settles (RTTVAR falls
// towards 0, the deviation-aware timeout towards SRTT + 50ms).
func steady(r *rig, lat interface{ Store(int64) }, rtt time.Duration, n int) {
	lat.Store(int64(rtt))
	for range n {
		r.tick(monInterval)
	}
}

// noFailover fails the test if H1 failed a probe or the pool left it.
func noFailover(t *testing.T, r *rig, what string) {
	t.Helper()
	if n := len(r.events(failover.EventProbe)); n != 0 || r.cl.Active() != 0 || len(r.events(failover.EventSwitch)) != 0 {
		t.Fatalf("%s: %d failed probes (%v), active H%d, %d switches; want none, H1", what, n, r.stat(0).LastError, r.cl.Active()+1, len(r.events(failover.EventSwitch)))
	}
}

// A host whose probes took 1 ms for long (RTTVAR near 0: 3 x RTO is 153 ms) answers one
// probe 200 ms late, then one 220 ms late: neither fails, its wait being SRTT + 225ms
// (226 ms). Without the stall wait both answers would fail the probe and move the pool.
func TestProbeLateAnswerWithinStallPasses(t *testing.T) {
	r, lat := slowRig(t, 100*time.Millisecond)
	steady(r, lat, time.Millisecond, 50)
	if w, want := r.stat(0).ProbeTimeout, time.Millisecond+cluster.DefaultMaxStall+cluster.DefaultStallMargin; w != want || want != 226*time.Millisecond {
		t.Fatalf("after 50 answers of 1 ms: wait %v, want %v (1 + 200 + 25, more than 3 x 51)", w, want)
	}
	for _, late := range []time.Duration{200 * time.Millisecond, 220 * time.Millisecond} {
		lat.Store(int64(late))
		r.tick(monInterval)
		noFailover(t, r, "an answer "+late.String()+" late")
		steady(r, lat, time.Millisecond, 50)
	}
}

// A host that stops answering fails its probe once the wait is over, 226 ms for a host
// whose probes took 1 ms, and with failoverDelay 100ms the pool leaves it at once. The
// hung probe waits for its context: 226 ms of real time.
func TestProbeNoAnswerFails(t *testing.T) {
	r, lat := slowRig(t, 100*time.Millisecond)
	steady(r, lat, time.Millisecond, 50)
	lat.Store(hung)
	r.tick(monInterval)
	h := r.stat(0)
	if h.State != failover.HostDown || r.cl.Active() != 1 {
		t.Fatalf("after a probe without an answer: H1 %v, active H%d; want down, H2", h.State, r.cl.Active()+1)
	}
	if h.LastError == nil || !strings.Contains(h.LastError.Error(), "probe timed out after 226ms") {
		t.Fatalf("H1's error: %v, want the 226ms wait named", h.LastError)
	}
	if sw := r.events(failover.EventSwitch); len(sw) != 1 || sw[0].From != "H1:3306" {
		t.Fatalf("switches %v, want one from H1", sw)
	}
}

// Latency steps, each after the estimate settled on the level before: 1 -> 200 ms (the
// issue's step), back to 1, 1 -> 200 again, 1 -> 150 and 150 -> 350 ms (200 ms more on a
// slow host: its wait is 150 + 225, or 3 x RTO when that is longer). None fails a probe.
func TestProbeLatencyStepsPass(t *testing.T) {
	r, lat := slowRig(t, 100*time.Millisecond)
	for _, level := range []struct {
		rtt time.Duration
		n   int
	}{
		{time.Millisecond, 100},
		{200 * time.Millisecond, 30},
		{time.Millisecond, 100},
		{200 * time.Millisecond, 5},
		{time.Millisecond, 100},
		{150 * time.Millisecond, 100},
		{350 * time.Millisecond, 20},
		{time.Millisecond, 20},
	} {
		steady(r, lat, level.rtt, level.n)
		noFailover(t, r, "a step to "+level.rtt.String())
	}
}

// Jitter and jumps of up to 200 ms, drawn from a fixed seed: spikes, one answer 0 to
// 200 ms late on a host that was steady at 1 ms before each; jitter, every answer 0 to
// 200 ms late (toxiproxy's latency 100 ms, jitter 100 ms); and a latency that jumps to a
// new value of 0 to 200 ms every 20 probes (the "each second", the active host
// being probed every 50 ms). None fails a probe.
func TestProbeJitterPasses(t *testing.T) {
	rnd := rand.New(rand.NewPCG(18, 4))
	draw := func() time.Duration { return time.Duration(rnd.IntN(201)) * time.Millisecond }
	r, lat := slowRig(t, 100*time.Millisecond)
	for i := range 30 {
		steady(r, lat, time.Millisecond, 60)
		lat.Store(int64(draw()))
		r.tick(monInterval)
		noFailover(t, r, "spike "+strconv.Itoa(i))
	}
	for i := range 300 {
		lat.Store(int64(draw()))
		r.tick(monInterval)
		noFailover(t, r, "jitter, probe "+strconv.Itoa(i))
	}
	for range 30 {
		steady(r, lat, draw(), 20)
		noFailover(t, r, "a jump")
	}
	if st := r.cl.Stats(); st.Failovers != 0 || st.Aborted != 0 {
		t.Fatalf("stats %+v, want no failover", st)
	}
}
