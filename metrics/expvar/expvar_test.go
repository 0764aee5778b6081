package mysqlfailoverexpvar

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// TestRender: the JSON names, units (seconds) and values of a Stats snapshot.
func TestRender(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	b, err := json.Marshal(render(failover.Stats{
		Active: "b:3306", Primary: "a:3306", Failovers: 2, FallBacks: 1, Aborted: 3,
		Hosts: []failover.HostStats{
			{Addr: "a:3306", DC: "east", State: failover.HostDown, LastError: errors.New("refused"), Changed: at, OpenConns: 0},
			{Addr: "b:3306", State: failover.HostUp, Role: failover.RoleStandby, ProbeLatency: 1500 * time.Microsecond, OpenConns: 4},
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"active":"b:3306","primary":"a:3306","failovers":2,"fall_backs":1,"aborts":3,"hosts":[` +
		`{"host":"a:3306","dc":"east","state":"down","role":"unknown","connections":0,"probe_latency_seconds":0,"last_error":"refused","changed":"2026-12-01T10:00:00Z"},` +
		`{"host":"b:3306","dc":"","state":"up","role":"standby","connections":4,"probe_latency_seconds":0.0015}]}`
	if got := string(b); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if b, _ := json.Marshal(render(failover.Stats{})); !strings.Contains(string(b), `"hosts":[]`) {
		t.Fatalf("no hosts: %s, want an empty list", b)
	}
}
