package mysqlfailoverotel

import (
	"context"
	"testing"
	"time"

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
