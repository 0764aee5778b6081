package mysqlfailoverprom

import (
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
)

// TestObserve: events become the histogram and counter samples, in seconds; a switch
// without a walk (Duration 0) is not a walk sample; the walk histogram of both kinds is
// there from the start. (The Stats metrics are tested
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
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="0.001"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="0.005"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="0.01"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="0.05"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="0.1"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="0.25"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="0.5"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="1"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="2.5"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="5"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="10"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="30"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="60"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="120"} 0
mysqlfailover_walk_duration_seconds_bucket{kind="fall_back",le="+Inf"} 0
mysqlfailover_walk_duration_seconds_sum{kind="fall_back"} 0
mysqlfailover_walk_duration_seconds_count{kind="fall_back"} 0
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

// statsOnly is a prometheus.Collector of one fixed Stats snapshot, through the same
// collectStats as Collector's scrape.
type statsOnly struct{ s failover.Stats }

func (statsOnly) Describe(ch chan<- *prometheus.Desc)   { New().Describe(ch) }
func (c statsOnly) Collect(ch chan<- prometheus.Metric) { collectStats(ch, c.s) }

// replicaMetrics are the names of the replicaReads metrics.
var replicaMetrics = []string{
	"mysqlfailover_host_replica", "mysqlfailover_host_replica_lag_seconds", "mysqlfailover_host_replica_reads_total",
	"mysqlfailover_replica_retries_total", "mysqlfailover_replica_to_primary_total", "mysqlfailover_causal_reads_total",
}

// TestReplicaMetrics: with replicaReads (the writer's ReplicaSkip set) every host has its
// replica gauge (1 only for the one with no ReplicaSkip) and reads counter, the lag gauge
// in seconds only where the lag is known (ReplicaLag >= 0), and the pool's replica and
// causal counters; the exposition passes promlint.
func TestReplicaMetrics(t *testing.T) {
	c := statsOnly{failover.Stats{
		Active: "a:3306", Primary: "a:3306",
		ReplicaRetries: 2, ReplicaToPrimary: 3, CausalWaits: 4, CausalPrimary: 1,
		Hosts: []failover.HostStats{
			{Addr: "a:3306", DC: "east", State: failover.HostUp, OpenConns: -1, ReplicaLag: -1, ReplicaSkip: "the pool's writer"},
			{Addr: "b:3306", DC: "east", State: failover.HostUp, OpenConns: -1, ReplicaLag: 1500 * time.Millisecond, ReplicaReads: 7},
			{Addr: "c:3306", DC: "west", State: failover.HostUp, OpenConns: -1, ReplicaLag: -1, ReplicaReads: 1,
				ReplicaSkip: "lag unknown: its probe could not read it: Error 1227: Access denied"},
			{Addr: "d:3306", DC: "west", State: failover.HostUp, OpenConns: -1, ReplicaLag: 12 * time.Second,
				ReplicaSkip: "lag 12s over maxReplicaLag 10s"},
		},
	}}
	want := `
# HELP mysqlfailover_causal_reads_total Causal reads (causalReads): path waited, served by a replica after it reached the write's position; path primary, sent to the primary instead.
# TYPE mysqlfailover_causal_reads_total counter
mysqlfailover_causal_reads_total{path="primary"} 1
mysqlfailover_causal_reads_total{path="waited"} 4
# HELP mysqlfailover_host_replica 1 while the host serves read-intent statements as a replica (replicaReads): it qualifies and is up; 0 while it does not (Stats' ReplicaSkip says why) or is not used yet.
# TYPE mysqlfailover_host_replica gauge
mysqlfailover_host_replica{dc="east",host="a:3306"} 0
mysqlfailover_host_replica{dc="east",host="b:3306"} 1
mysqlfailover_host_replica{dc="west",host="c:3306"} 0
mysqlfailover_host_replica{dc="west",host="d:3306"} 0
# HELP mysqlfailover_host_replica_lag_seconds Replication lag of the host as its last probe read it (Seconds_Behind_Master or _Source, whole seconds); absent while unknown.
# TYPE mysqlfailover_host_replica_lag_seconds gauge
mysqlfailover_host_replica_lag_seconds{dc="east",host="b:3306"} 1.5
mysqlfailover_host_replica_lag_seconds{dc="west",host="d:3306"} 12
# HELP mysqlfailover_host_replica_reads_total Read-intent statements the host served as a replica.
# TYPE mysqlfailover_host_replica_reads_total counter
mysqlfailover_host_replica_reads_total{dc="east",host="a:3306"} 0
mysqlfailover_host_replica_reads_total{dc="east",host="b:3306"} 7
mysqlfailover_host_replica_reads_total{dc="west",host="c:3306"} 1
mysqlfailover_host_replica_reads_total{dc="west",host="d:3306"} 0
# HELP mysqlfailover_replica_retries_total Read-intent statements that failed on a replica before their result started and ran again on another host.
# TYPE mysqlfailover_replica_retries_total counter
mysqlfailover_replica_retries_total 2
# HELP mysqlfailover_replica_to_primary_total Read-intent statements that ran on the primary because no replica qualified (readFromSourceWhenNoReplicas).
# TYPE mysqlfailover_replica_to_primary_total counter
mysqlfailover_replica_to_primary_total 3
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), replicaMetrics...); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// TestReplicaNotUsedYet: a replica that qualifies but that the pool has not opened a
// session to yet (probes off: its state is unknown) does not serve reads yet, and says
// so: host_replica 0 beside host_state unknown, not 1 beside unknown; once it answered
// (up) it reads 1.
func TestReplicaNotUsedYet(t *testing.T) {
	c := statsOnly{failover.Stats{
		Active: "a:3306", Primary: "a:3306",
		Hosts: []failover.HostStats{
			{Addr: "a:3306", State: failover.HostUp, OpenConns: -1, ReplicaLag: -1, ReplicaSkip: "the pool's writer"},
			{Addr: "b:3306", State: failover.HostUnknown, OpenConns: -1, ReplicaLag: -1},
			{Addr: "c:3306", State: failover.HostUp, OpenConns: -1, ReplicaLag: -1, ReplicaReads: 3},
		},
	}}
	want := `
# HELP mysqlfailover_host_replica 1 while the host serves read-intent statements as a replica (replicaReads): it qualifies and is up; 0 while it does not (Stats' ReplicaSkip says why) or is not used yet.
# TYPE mysqlfailover_host_replica gauge
mysqlfailover_host_replica{dc="",host="a:3306"} 0
mysqlfailover_host_replica{dc="",host="b:3306"} 0
mysqlfailover_host_replica{dc="",host="c:3306"} 1
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "mysqlfailover_host_replica"); err != nil {
		t.Fatal(err)
	}
}

// TestOriginMetrics: each host's origin (1 for its own, 0 for the others), when a
// discovered host was found, and whether discovery has a problem to act on.
func TestOriginMetrics(t *testing.T) {
	found := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	c := statsOnly{failover.Stats{Active: "a:3306", Primary: "a:3306", Discovery: "discoverHosts: SHOW REPLICA HOSTS refused",
		Hosts: []failover.HostStats{
			{Addr: "a:3306", State: failover.HostUp, OpenConns: -1, ReplicaLag: -1},
			{Addr: "b:3306", State: failover.HostUp, OpenConns: -1, ReplicaLag: -1, Origin: failover.OriginHostList},
			{Addr: "c:3306", State: failover.HostUp, OpenConns: -1, ReplicaLag: -1, Origin: failover.OriginDiscovered, Discovered: found},
		}}}
	want := `
# HELP mysqlfailover_discovery_problem 1 while discoverHosts finds no host for a reason to act on (Stats.Discovery says which: a missing privilege, members without an address), 0 otherwise.
# TYPE mysqlfailover_discovery_problem gauge
mysqlfailover_discovery_problem 1
# HELP mysqlfailover_host_discovered_timestamp_seconds When discovery (discoverHosts) found the host, as Unix time; discovered hosts only.
# TYPE mysqlfailover_host_discovered_timestamp_seconds gauge
mysqlfailover_host_discovered_timestamp_seconds{dc="",host="c:3306"} 1.7961192e+09
# HELP mysqlfailover_host_origin Where the host came from: 1 for its origin (dsn, host_list, discovered), 0 for the others.
# TYPE mysqlfailover_host_origin gauge
mysqlfailover_host_origin{dc="",host="a:3306",origin="discovered"} 0
mysqlfailover_host_origin{dc="",host="a:3306",origin="dsn"} 1
mysqlfailover_host_origin{dc="",host="a:3306",origin="host_list"} 0
mysqlfailover_host_origin{dc="",host="b:3306",origin="discovered"} 0
mysqlfailover_host_origin{dc="",host="b:3306",origin="dsn"} 0
mysqlfailover_host_origin{dc="",host="b:3306",origin="host_list"} 1
mysqlfailover_host_origin{dc="",host="c:3306",origin="discovered"} 1
mysqlfailover_host_origin{dc="",host="c:3306",origin="dsn"} 0
mysqlfailover_host_origin{dc="",host="c:3306",origin="host_list"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "mysqlfailover_host_origin",
		"mysqlfailover_host_discovered_timestamp_seconds", "mysqlfailover_discovery_problem"); err != nil {
		t.Fatal(err)
	}
	if problems, err := testutil.CollectAndLint(c); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// TestActiveNone: while the pool uses no host (Stats.Active "": its host is down and no
// walk found another) no host reads active.
func TestActiveNone(t *testing.T) {
	c := statsOnly{failover.Stats{Active: "", Primary: "a:3306", Hosts: []failover.HostStats{
		{Addr: "a:3306", State: failover.HostDown, OpenConns: -1, ReplicaLag: -1},
		{Addr: "b:3306", State: failover.HostWrongRole, OpenConns: -1, ReplicaLag: -1},
	}}}
	want := `
# HELP mysqlfailover_host_active 1 for the host the pool uses now, 0 for the others (for all while it uses none: its host is down).
# TYPE mysqlfailover_host_active gauge
mysqlfailover_host_active{dc="",host="a:3306"} 0
mysqlfailover_host_active{dc="",host="b:3306"} 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "mysqlfailover_host_active"); err != nil {
		t.Fatal(err)
	}
}

// TestNoReplicaMetrics: without replicaReads (no ReplicaSkip anywhere) no replica metric
// is exported, not even at 0, while the other Stats metrics are; a lag in Stats does not
// make one either.
func TestNoReplicaMetrics(t *testing.T) {
	c := statsOnly{failover.Stats{
		Active: "a:3306", Primary: "a:3306",
		Hosts: []failover.HostStats{
			{Addr: "a:3306", State: failover.HostUp, OpenConns: 2, ReplicaLag: -1},
			{Addr: "b:3306", State: failover.HostUp, OpenConns: 1, ReplicaLag: 0},
		},
	}}
	if n := testutil.CollectAndCount(c, replicaMetrics...); n != 0 {
		t.Fatalf("%d replica samples without replicaReads, want none", n)
	}
	if n := testutil.CollectAndCount(c, "mysqlfailover_host_active", "mysqlfailover_host_connections", "mysqlfailover_failovers_total"); n != 5 {
		t.Fatalf("%d Stats samples, want 5 (2 active, 2 connections, failovers)", n)
	}
	// The same hosts with replicaReads: the writer's skip turns the replica metrics on.
	c.s.Hosts[0].ReplicaSkip = "the pool's writer"
	if n := testutil.CollectAndCount(c, replicaMetrics...); n != 2+2+1+1+1+2 {
		t.Fatalf("%d replica samples with replicaReads, want 9 (2 replica, 2 reads, 1 lag, retries, to_primary, 2 causal)", n)
	}
}

// TestStateLabels: every failover.HostState has its label value, in order: the state's
// name with '_' for '-'.
func TestStateLabels(t *testing.T) {
	for s := failover.HostUnknown; s <= failover.HostNotReady; s++ {
		if int(s) >= len(states) || states[s] != strings.ReplaceAll(s.String(), "-", "_") {
			t.Errorf("state %d (%v): label %v, want %q", s, s, states, strings.ReplaceAll(s.String(), "-", "_"))
		}
	}
	if len(states) != int(failover.HostNotReady)+1 {
		t.Errorf("%d labels for %d states", len(states), failover.HostNotReady+1)
	}
}

// TestSeriesFromTheStart: once SetConnector has run, before any event, every listed
// host has its probe counter and histogram at 0 (with its DC label), the walk histogram
// both kinds, and the pool its writer gauge and refusal counter: an increase() over the
// first burst of failures sees them all. A fall-back is a walk sample whatever its
// duration.
func TestSeriesFromTheStart(t *testing.T) {
	cfg, err := dsn.Parse("app:pw@tcp(db1:3306;dc=east,db2:3306;dc=west)/app")
	if err != nil {
		t.Fatal(err)
	}
	col := New()
	cn, err := mysqlfailover.NewConnector(cfg, col.Option())
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	col.SetConnector(cn)
	want := `
# HELP mysqlfailover_probe_failures_total Failed probes (checkInterval > 0).
# TYPE mysqlfailover_probe_failures_total counter
mysqlfailover_probe_failures_total{dc="east",host="db1:3306"} 0
mysqlfailover_probe_failures_total{dc="west",host="db2:3306"} 0
# HELP mysqlfailover_caller_errors_total Errors the driver returned to callers because a host failed, refused or was missing (FailoverError, NoHostAvailableError, ErrTxLost, ErrCommitOutcomeUnknown, read-only refusals).
# TYPE mysqlfailover_caller_errors_total counter
mysqlfailover_caller_errors_total 0
# HELP mysqlfailover_write_refusals_total Writes that could not be served: statements refused as read-only (1290, 1836, 1792) and connections or statements that found no host (no writer).
# TYPE mysqlfailover_write_refusals_total counter
mysqlfailover_write_refusals_total 0
# HELP mysqlfailover_writer_available 1 while the pool can serve writes as far as the driver knows (its host is up and a writer), 0 while it cannot.
# TYPE mysqlfailover_writer_available gauge
mysqlfailover_writer_available 1
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want), "mysqlfailover_probe_failures_total", "mysqlfailover_write_refusals_total", "mysqlfailover_writer_available", "mysqlfailover_caller_errors_total"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(col, "mysqlfailover_probe_duration_seconds"); n != 2 {
		t.Fatalf("%d probe histograms before any probe, want one per host (2)", n)
	}
	if n := testutil.CollectAndCount(col, "mysqlfailover_walk_duration_seconds"); n != 2 {
		t.Fatalf("%d walk histograms before any walk, want both kinds (2)", n)
	}
	col.Observe(failover.Event{Kind: failover.EventFallBack, Host: "db1:3306"})
	var m dto.Metric
	if err := col.walk.WithLabelValues("fall_back").(prometheus.Metric).Write(&m); err != nil || m.Histogram.GetSampleCount() != 1 {
		t.Fatalf("fall-back of duration 0: %v samples (%v), want 1", m.Histogram.GetSampleCount(), err)
	}
	if problems, err := testutil.CollectAndLint(col); err != nil || len(problems) > 0 {
		t.Fatalf("lint: %v %v", problems, err)
	}
}

// TestTwoWritersMetric: the two-writers gauge is 1 while Stats.Writers lists more than
// one host, 0 otherwise.
func TestTwoWritersMetric(t *testing.T) {
	for _, tc := range []struct {
		writers []string
		want    string
	}{
		{nil, "0"},
		{[]string{"b:3306", "a:3306"}, "1"},
	} {
		c := statsOnly{failover.Stats{Active: "b:3306", Primary: "a:3306", Writers: tc.writers}}
		want := `
# HELP mysqlfailover_two_writers 1 while more than one host of a replication cluster is writable at once (two writers: fence all but the one the replicas follow), 0 otherwise.
# TYPE mysqlfailover_two_writers gauge
mysqlfailover_two_writers ` + tc.want + "\n"
		if err := testutil.CollectAndCompare(c, strings.NewReader(want), "mysqlfailover_two_writers"); err != nil {
			t.Errorf("Writers %v: %v", tc.writers, err)
		}
	}
}

// TestWriteMetrics: the writer gauge, the refusal counter and the callers' errors follow Stats, and a dead
// host's role reads unknown (Stats says so).
func TestWriteMetrics(t *testing.T) {
	c := statsOnly{failover.Stats{Active: "b:3306", Primary: "a:3306", WriteRefusals: 9261, CallerErrors: 12, Hosts: []failover.HostStats{
		{Addr: "a:3306", State: failover.HostDown, Role: failover.RoleUnknown, OpenConns: -1, ReplicaLag: -1},
		{Addr: "b:3306", State: failover.HostUp, Role: failover.RoleStandby, OpenConns: -1, ReplicaLag: -1},
	}}}
	want := `
# HELP mysqlfailover_caller_errors_total Errors the driver returned to callers because a host failed, refused or was missing (FailoverError, NoHostAvailableError, ErrTxLost, ErrCommitOutcomeUnknown, read-only refusals).
# TYPE mysqlfailover_caller_errors_total counter
mysqlfailover_caller_errors_total 12
# HELP mysqlfailover_write_refusals_total Writes that could not be served: statements refused as read-only (1290, 1836, 1792) and connections or statements that found no host (no writer).
# TYPE mysqlfailover_write_refusals_total counter
mysqlfailover_write_refusals_total 9261
# HELP mysqlfailover_writer_available 1 while the pool can serve writes as far as the driver knows (its host is up and a writer), 0 while it cannot.
# TYPE mysqlfailover_writer_available gauge
mysqlfailover_writer_available 0
`
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "mysqlfailover_write_refusals_total", "mysqlfailover_writer_available", "mysqlfailover_caller_errors_total"); err != nil {
		t.Fatal(err)
	}
}
