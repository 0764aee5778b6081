package cluster_test

import (
	"context"
	"database/sql/driver"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// dialCost makes every dial of the rig take d on its fake clock.
func dialCost(o *rigOpts, d time.Duration) {
	dial, clk := o.Dial, o.Clock.(*fake.Clock)
	o.Dial = func(ctx context.Context, i int) (driver.Conn, error) {
		clk.Advance(d)
		return dial(ctx, i)
	}
}

// TestProbePassedEvent: every passed probe is an EventProbePassed whose Duration is the
// probe's latency (here the probe connection's dial, 7ms on the fake clock, then a reused
// connection's round trip, 0), the same figure as HostStats.ProbeLatency; a failed probe
// is an EventProbe and no EventProbePassed. One host: probes of several hosts run at
// once and would share the fake clock's advances.
func TestProbePassedEvent(t *testing.T) {
	r, _ := monRig(t, 1, func(o *rigOpts) { dialCost(o, 7*time.Millisecond) })
	r.cl.Check(context.Background())
	passed := r.events(failover.EventProbePassed)
	if len(passed) != 1 || passed[0].Duration != 7*time.Millisecond || passed[0].Host != r.net.Addrs()[0] {
		t.Fatalf("probe-passed events after one round: %v (%v), want one for H1 in 7ms", passed, durations(passed))
	}
	if got := r.stat(0).ProbeLatency; got != 7*time.Millisecond {
		t.Fatalf("HostStats.ProbeLatency %v, want 7ms", got)
	}
	r.tick(monInterval)
	passed = r.events(failover.EventProbePassed)
	if len(passed) != 2 || passed[1].Duration != 0 {
		t.Fatalf("second round (probe connection reused): %v, want one more in 0s", durations(passed))
	}
	r.down(0)
	r.tick(monInterval)
	if n, m := len(r.events(failover.EventProbePassed)), len(r.events(failover.EventProbe)); n != 2 || m != 1 {
		t.Fatalf("after a failed probe: %d probe-passed, %d probe-failed events, want 2 and 1", n, m)
	}
}

// TestSwitchDuration: the EventSwitch of a walk carries the walk's duration (each dial
// 5ms and the pause between passes on the fake clock); a fall-back by a walk too.
func TestSwitchDuration(t *testing.T) {
	r := newRig(t, 3, func(o *rigOpts) { dialCost(o, 5*time.Millisecond) })
	r.down(0)
	l := r.connect() // \H1 /H2: the first walk moves the pool off H1
	l.on(1)
	first := r.events(failover.EventSwitch)
	if len(first) != 1 || first[0].Duration != 10*time.Millisecond {
		t.Fatalf("switch events of the first walk: %v, want one in 10ms (two dials)", first)
	}
	r.down(2)
	r.down(1)
	r.up(0)
	l.fail() // \H3 \H2, pause, \H3 /H1 (the primary is left out of the first pass)
	l.on(0)
	sw := r.events(failover.EventSwitch)
	want := 4*5*time.Millisecond + cluster.DefaultPassPause
	if len(sw) != 2 || sw[1].Duration != want {
		t.Fatalf("switch events: %v (durations %v), want a second one in %v", sw, durations(sw), want)
	}
}

func durations(evs []failover.Event) []time.Duration {
	var out []time.Duration
	for _, e := range evs {
		out = append(out, e.Duration)
	}
	return out
}
