package mysqlfailoverprom

import (
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestObserve: events become the histogram and counter samples, in seconds; a move
// without a walk (Duration 0) is not a walk sample. (The Stats metrics are tested
// against a live cluster in the integration module.)
func TestObserve(t *testing.T) {
	c := New()
	c.Observe(failover.Event{Kind: failover.EventProbePassed, Host: "a:3306", Duration: 3 * time.Millisecond})
	c.Observe(failover.Event{Kind: failover.EventProbe, Host: "a:3306"})
	c.Observe(failover.Event{Kind: failover.EventSwitch, Host: "b:3306", Duration: 400 * time.Millisecond})
	c.Observe(failover.Event{Kind: failover.EventSwitch, Host: "a:3306"})
	want := `
# HELP mysqlfailover_probe_failures_total Failed probes (checkInterval > 0).
# TYPE mysqlfailover_probe_failures_total counter
mysqlfailover_probe_failures_total{dc="",host="a:3306"} 1
# HELP mysqlfailover_walk_duration_seconds Duration of each host walk that moved the pool, from its start to the working connection on the new host (kind switch: a failover; fall_back).
# TYPE mysqlfailover_walk_duration_seconds histogram
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="0.001"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="0.005"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="0.01"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="0.05"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="0.1"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="0.25"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="0.5"} 1
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="1"} 1
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="2.5"} 1
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="5"} 1
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="10"} 1
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="30"} 1
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="60"} 1
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="120"} 1
mysqlfailover_walk_duration_seconds_bucket{kind="switch",le="+Inf"} 1
mysqlfailover_walk_duration_seconds_sum{kind="switch"} 0.4
mysqlfailover_walk_duration_seconds_count{kind="switch"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "mysqlfailover_probe_failures_total", "mysqlfailover_walk_duration_seconds"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c, "mysqlfailover_probe_duration_seconds"); n != 1 {
		t.Fatalf("%d probe histograms, want 1", n)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}
