package mysqlfailoverotel

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// TestObserve: events become histogram and counter points with the host's attributes,
// in seconds; a move without a walk (Duration 0) is no walk point; without a connector
// no observable instrument reports. (The Stats instruments are tested against a live
// cluster in the integration module.)
func TestObserve(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	m, err := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.Observe(failover.Event{Kind: failover.EventProbePassed, Host: "a:3306", Duration: 3 * time.Millisecond})
	m.Observe(failover.Event{Kind: failover.EventProbe, Host: "a:3306"})
	m.Observe(failover.Event{Kind: failover.EventFallBack, Host: "a:3306", Duration: 400 * time.Millisecond})
	m.Observe(failover.Event{Kind: failover.EventSwitch, Host: "b:3306"})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		if sm.Scope.Name != ScopeName {
			t.Fatalf("scope %q, want %q", sm.Scope.Name, ScopeName)
		}
		for _, mt := range sm.Metrics {
			got[mt.Name] = mt.Data
			if mt.Name == "mysqlfailover.probe.duration" && mt.Unit != "s" {
				t.Fatalf("unit %q", mt.Unit)
			}
		}
	}
	if len(got) != 3 {
		t.Fatalf("instruments reported: %v, want the probe and walk histograms and the failure counter", got)
	}
	probe := got["mysqlfailover.probe.duration"].(metricdata.Histogram[float64]).DataPoints
	if len(probe) != 1 || probe[0].Count != 1 || probe[0].Sum != 0.003 {
		t.Fatalf("probe points %+v", probe)
	}
	if v, _ := probe[0].Attributes.Value("server.port"); v.AsInt64() != 3306 {
		t.Fatalf("probe attributes %v", probe[0].Attributes.ToSlice())
	}
	if v, _ := probe[0].Attributes.Value("server.address"); v.AsString() != "a" {
		t.Fatalf("probe attributes %v", probe[0].Attributes.ToSlice())
	}
	walk := got["mysqlfailover.walk.duration"].(metricdata.Histogram[float64]).DataPoints
	if len(walk) != 1 || walk[0].Count != 1 || walk[0].Sum != 0.4 || !walk[0].Attributes.HasValue("mysqlfailover.walk.kind") {
		t.Fatalf("walk points %+v", walk)
	}
	if v, _ := walk[0].Attributes.Value(attribute.Key("mysqlfailover.walk.kind")); v.AsString() != "fall_back" {
		t.Fatalf("walk kind %v", v.AsString())
	}
	fails := got["mysqlfailover.probe.failures"].(metricdata.Sum[int64]).DataPoints
	if len(fails) != 1 || fails[0].Value != 1 {
		t.Fatalf("failure points %+v", fails)
	}
}

// collectStats returns the points of one collection of m with its Stats replaced by s:
// "name" for a point without attributes, "name|host" (server.address) for a host's,
// "name|path" for a causal read's; the value of gauges and sums (int or float), and the
// units by name.
func collectStats(t *testing.T, s failover.Stats) (map[string]float64, map[string]string) {
	t.Helper()
	reader := sdkmetric.NewManualReader()
	m, err := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	m.stats = func() (failover.Stats, bool) { return s, true }
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	points, units := map[string]float64{}, map[string]string{}
	key := func(name string, a attribute.Set) string {
		if v, ok := a.Value("server.address"); ok {
			name += "|" + v.AsString()
		}
		if v, ok := a.Value("mysqlfailover.causal_read.path"); ok {
			name += "|" + v.AsString()
		}
		if v, ok := a.Value("mysqlfailover.host.state"); ok {
			name += "|" + v.AsString()
		}
		if v, ok := a.Value("mysqlfailover.host.role"); ok {
			name += "|" + v.AsString()
		}
		if v, ok := a.Value("mysqlfailover.host.origin"); ok {
			name += "|" + v.AsString()
		}
		return name
	}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			units[mt.Name] = mt.Unit
			switch d := mt.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					points[key(mt.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Gauge[float64]:
				for _, p := range d.DataPoints {
					points[key(mt.Name, p.Attributes)] = p.Value
				}
			case metricdata.Sum[int64]:
				if !d.IsMonotonic && mt.Name != "mysqlfailover.host.connection.count" {
					t.Errorf("%s is not monotonic", mt.Name)
				}
				for _, p := range d.DataPoints {
					points[key(mt.Name, p.Attributes)] = float64(p.Value)
				}
			}
		}
	}
	return points, units
}

// replicaInstruments are the names of the replicaReads instruments.
var replicaInstruments = []string{
	"mysqlfailover.host.replica.qualified", "mysqlfailover.host.replica.lag", "mysqlfailover.host.replica.reads",
	"mysqlfailover.replica.retries", "mysqlfailover.replica.to_primary", "mysqlfailover.causal_reads",
}

// TestReplicaInstruments: with replicaReads (the writer's ReplicaSkip set) each host has
// its qualified gauge (1 only without ReplicaSkip) and reads counter, the lag gauge in
// seconds only where the lag is known, and the pool has its replica and causal counters,
// with their units.
func TestReplicaInstruments(t *testing.T) {
	got, units := collectStats(t, failover.Stats{
		Active: "a:3306", Primary: "a:3306",
		ReplicaRetries: 2, ReplicaToPrimary: 3, CausalWaits: 4, CausalPrimary: 1,
		Hosts: []failover.HostStats{
			{Addr: "a:3306", State: failover.HostUp, OpenConns: -1, ReplicaLag: -1, ReplicaSkip: "the pool's writer"},
			{Addr: "b:3306", State: failover.HostUp, OpenConns: -1, ReplicaLag: 1500 * time.Millisecond, ReplicaReads: 7},
			{Addr: "c:3306", State: failover.HostUp, OpenConns: -1, ReplicaLag: -1, ReplicaReads: 1, ReplicaSkip: "lag unknown: not read yet"},
		},
	})
	want := map[string]float64{
		"mysqlfailover.host.replica.qualified|a": 0, "mysqlfailover.host.replica.qualified|b": 1, "mysqlfailover.host.replica.qualified|c": 0,
		"mysqlfailover.host.replica.reads|a": 0, "mysqlfailover.host.replica.reads|b": 7, "mysqlfailover.host.replica.reads|c": 1,
		"mysqlfailover.host.replica.lag|b":  1.5,
		"mysqlfailover.replica.retries":     2,
		"mysqlfailover.replica.to_primary":  3,
		"mysqlfailover.causal_reads|waited": 4, "mysqlfailover.causal_reads|primary": 1,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (reported %v), want %v", k, g, ok, v)
		}
	}
	for _, k := range []string{"mysqlfailover.host.replica.lag|a", "mysqlfailover.host.replica.lag|c"} {
		if v, ok := got[k]; ok {
			t.Errorf("%s = %v, want no point (lag unknown)", k, v)
		}
	}
	for name, unit := range map[string]string{
		"mysqlfailover.host.replica.qualified": "1", "mysqlfailover.host.replica.lag": "s", "mysqlfailover.host.replica.reads": "{read}",
		"mysqlfailover.replica.retries": "{retry}", "mysqlfailover.replica.to_primary": "{read}", "mysqlfailover.causal_reads": "{read}",
	} {
		if units[name] != unit {
			t.Errorf("%s unit %q, want %q", name, units[name], unit)
		}
	}
}

// TestReplicaNotUsedYet: a replica that qualifies but that the pool has not opened a
// session to yet (probes off: its state is unknown) reads 0 qualified beside state
// unknown; once up, 1.
func TestReplicaNotUsedYet(t *testing.T) {
	got, _ := collectStats(t, failover.Stats{
		Active: "a:3306", Primary: "a:3306",
		Hosts: []failover.HostStats{
			{Addr: "a:3306", State: failover.HostUp, OpenConns: -1, ReplicaLag: -1, ReplicaSkip: "the pool's writer"},
			{Addr: "b:3306", State: failover.HostUnknown, OpenConns: -1, ReplicaLag: -1},
			{Addr: "c:3306", State: failover.HostUp, OpenConns: -1, ReplicaLag: -1},
		},
	})
	for k, v := range map[string]float64{
		"mysqlfailover.host.replica.qualified|a": 0, "mysqlfailover.host.replica.qualified|b": 0,
		"mysqlfailover.host.replica.qualified|c": 1, "mysqlfailover.host.state|b|unknown": 1,
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (reported %v), want %v", k, g, ok, v)
		}
	}
}

// TestNoReplicaInstruments: without replicaReads (no ReplicaSkip anywhere) no replica
// instrument reports, not even 0, while the Stats instruments do.
func TestNoReplicaInstruments(t *testing.T) {
	got, _ := collectStats(t, failover.Stats{
		Active: "a:3306", Primary: "a:3306",
		Hosts: []failover.HostStats{
			{Addr: "a:3306", State: failover.HostUp, OpenConns: 2, ReplicaLag: -1},
			{Addr: "b:3306", State: failover.HostUp, OpenConns: 1, ReplicaLag: 0},
		},
	})
	for k, v := range got {
		for _, name := range replicaInstruments {
			if k == name || strings.HasPrefix(k, name+"|") {
				t.Errorf("%s = %v without replicaReads, want no point", k, v)
			}
		}
	}
	if got["mysqlfailover.host.active|a"] != 1 || got["mysqlfailover.host.connection.count|b"] != 1 || got["mysqlfailover.host.state|b|up"] != 1 {
		t.Errorf("Stats instruments missing: %v", got)
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

// TestCountersFromTheStart: once SetConnector has run, before any event, each listed
// host's probe.failures reports 0, and the pool's writer gauge and refusal counter
// report; a fall-back of any duration is a walk point.
func TestCountersFromTheStart(t *testing.T) {
	cfg, err := dsn.Parse("app:pw@tcp(db1:3306;dc=east,db2:3306;dc=west)/app")
	if err != nil {
		t.Fatal(err)
	}
	reader := sdkmetric.NewManualReader()
	m, err := New(sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader)))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	cn, err := mysqlfailover.NewConnector(cfg, m.Option())
	if err != nil {
		t.Fatal(err)
	}
	defer cn.Close()
	m.SetConnector(cn)
	m.Observe(failover.Event{Kind: failover.EventFallBack, Host: "db1:3306"})
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	units := map[string]string{}
	for _, sm := range rm.ScopeMetrics {
		for _, mt := range sm.Metrics {
			units[mt.Name] = mt.Unit
			switch d := mt.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					k := mt.Name
					if v, ok := p.Attributes.Value("server.address"); ok {
						dc, _ := p.Attributes.Value("mysqlfailover.dc")
						k += "|" + v.AsString() + "|" + dc.AsString()
					}
					got[k] = float64(p.Value)
				}
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					if p.Attributes.Len() == 0 {
						got[mt.Name] = float64(p.Value)
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					got[mt.Name] += float64(p.Count)
				}
			}
		}
	}
	for k, v := range map[string]float64{
		"mysqlfailover.probe.failures|db1|east": 0, "mysqlfailover.probe.failures|db2|west": 0,
		"mysqlfailover.write.refusals": 0, "mysqlfailover.writer.available": 1, "mysqlfailover.walk.duration": 1,
		"mysqlfailover.caller.errors": 0,
	} {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (reported %v), want %v; all: %v", k, g, ok, v, got)
		}
	}
	if units["mysqlfailover.write.refusals"] != "{refusal}" || units["mysqlfailover.writer.available"] != "1" {
		t.Errorf("units %v", units)
	}
}

// TestTwoWritersInstrument: the two-writers gauge is 1 while Stats.Writers lists more
// than one host, 0 otherwise.
func TestTwoWritersInstrument(t *testing.T) {
	for writers, want := range map[int]float64{0: 0, 2: 1} {
		s := failover.Stats{Active: "b:3306", Primary: "a:3306"}
		if writers == 2 {
			s.Writers = []string{"b:3306", "a:3306"}
		}
		got, _ := collectStats(t, s)
		if got["mysqlfailover.two_writers"] != want {
			t.Errorf("Writers %v: two_writers %v, want %v", s.Writers, got["mysqlfailover.two_writers"], want)
		}
	}
}

// TestWriteInstruments: the writer gauge, the refusal counter and the callers' errors
// follow Stats.
func TestWriteInstruments(t *testing.T) {
	got, units := collectStats(t, failover.Stats{Active: "b:3306", Primary: "a:3306", WriteRefusals: 9261, CallerErrors: 12, Hosts: []failover.HostStats{
		{Addr: "a:3306", State: failover.HostDown, OpenConns: -1, ReplicaLag: -1},
		{Addr: "b:3306", State: failover.HostUp, Role: failover.RoleStandby, OpenConns: -1, ReplicaLag: -1},
	}})
	if got["mysqlfailover.write.refusals"] != 9261 || got["mysqlfailover.writer.available"] != 0 || got["mysqlfailover.host.role|a|unknown"] != 1 ||
		got["mysqlfailover.caller.errors"] != 12 || units["mysqlfailover.caller.errors"] != "{error}" {
		t.Fatalf("write instruments: %v %v", got, units)
	}
}

// TestOriginInstruments: each host's origin (1 for its own, 0 for the others), when a
// discovered host was found, and whether discovery has a problem to act on.
func TestOriginInstruments(t *testing.T) {
	found := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	got, units := collectStats(t, failover.Stats{Active: "a:3306", Primary: "a:3306", Discovery: "discoverHosts: refused", Hosts: []failover.HostStats{
		{Addr: "a:3306", State: failover.HostUp, OpenConns: -1, ReplicaLag: -1},
		{Addr: "b:3306", State: failover.HostUp, OpenConns: -1, ReplicaLag: -1, Origin: failover.OriginHostList},
		{Addr: "c:3306", State: failover.HostUp, OpenConns: -1, ReplicaLag: -1, Origin: failover.OriginDiscovered, Discovered: found},
	}})
	want := map[string]float64{
		"mysqlfailover.host.origin|a|dsn": 1, "mysqlfailover.host.origin|a|discovered": 0,
		"mysqlfailover.host.origin|b|host_list": 1, "mysqlfailover.host.origin|b|dsn": 0,
		"mysqlfailover.host.origin|c|discovered": 1, "mysqlfailover.host.origin|c|host_list": 0,
		"mysqlfailover.host.discovered|c": float64(found.Unix()), "mysqlfailover.discovery.problem": 1,
	}
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, v)
		}
	}
	if _, ok := got["mysqlfailover.host.discovered|a"]; ok || units["mysqlfailover.host.discovered"] != "s" {
		t.Errorf("a DSN host has a discovered point, or the unit is %q", units["mysqlfailover.host.discovered"])
	}
}
