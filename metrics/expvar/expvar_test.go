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
		Active: "b:3306", Primary: "a:3306", Failovers: 2, FallBacks: 1, Aborted: 3, WriteRefusals: 8, CallerErrors: 10, Writers: []string{"b:3306", "a:3306"},
		Discovery:      "discoverHosts: refused",
		ReplicaRetries: 4, ReplicaToPrimary: 5, CausalWaits: 6, CausalPrimary: 7,
		TxReruns: 11, TxGaveUp: 12, TxCommitChecks: 13, TxReplays: 14, TxReplayMismatches: 15, TxReplayTooBig: 16, TxReplayUnsafe: 17,
		Hosts: []failover.HostStats{
			{Addr: "a:3306", DC: "east", State: failover.HostDown, LastError: errors.New("refused"), Changed: at, OpenConns: 0,
				ReplicaLag: -1, ReplicaReads: 9, ReplicaSkip: "down: its probes failed for failoverDelay"},
			{Addr: "b:3306", State: failover.HostUp, Role: failover.RoleStandby, ProbeLatency: 1500 * time.Microsecond, OpenConns: 4,
				ReplicaLag: 2 * time.Second},
			{Addr: "c:3306", State: failover.HostUp, OpenConns: 1, ReplicaLag: -5 * time.Second, // any negative: unknown
				Origin: failover.OriginDiscovered, Discovered: at},
		},
	}))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"active":"b:3306","primary":"a:3306","failovers":2,"fall_backs":1,"aborts":3,"writer_available":false,"write_refusals":8,"caller_errors":10,"writers":["b:3306","a:3306"],"discovery":"discoverHosts: refused",` +
		`"replica_retries":4,"replica_to_primary":5,"causal_waits":6,"causal_primary":7,` +
		`"tx_reruns":11,"tx_gave_up":12,"tx_commit_checks":13,"tx_replays":14,"tx_replay_mismatches":15,"tx_replay_too_big":16,"tx_replay_unsafe":17,"hosts":[` +
		`{"host":"a:3306","dc":"east","origin":"dsn","state":"down","role":"unknown","connections":0,"probe_latency_seconds":0,` +
		`"replica_lag_seconds":-1,"replica_reads":9,"replica_skip":"down: its probes failed for failoverDelay","last_error":"refused","changed":"2026-12-01T10:00:00Z"},` +
		`{"host":"b:3306","dc":"","origin":"dsn","state":"up","role":"standby","connections":4,"probe_latency_seconds":0.0015,"replica_lag_seconds":2,"replica_reads":0},` +
		`{"host":"c:3306","dc":"","origin":"discovered","discovered":"2026-12-01T10:00:00Z","state":"up","role":"unknown","connections":1,"probe_latency_seconds":0,"replica_lag_seconds":-1,"replica_reads":0}]}`
	if got := string(b); got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
	if b, _ := json.Marshal(render(failover.Stats{})); !strings.Contains(string(b), `"hosts":[]`) || !strings.Contains(string(b), `"writers":[]`) {
		t.Fatalf("no hosts, no two writers: %s, want empty lists", b)
	}
}
