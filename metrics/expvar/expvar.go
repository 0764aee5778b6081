// Package mysqlfailoverexpvar publishes a mysqlfailover.Connector's Stats through the
// standard library's expvar (/debug/vars), with no dependency beyond the driver's:
//
//	expvar.Publish("mysqlfailover", mysqlfailoverexpvar.Func(c))
//
// Each read of the variable takes a fresh (*mysqlfailover.Connector).Stats and renders it
// as a JSON object:
//
//	{"active": "db2:3306", "primary": "db1:3306", "failovers": 1, "fall_backs": 0, "aborts": 1,
//	 "writer_available": false, "write_refusals": 9261, "caller_errors": 12,
//	 "writers": ["db2:3306", "db1:3306"], "discovery": "",
//	 "replica_retries": 0, "replica_to_primary": 3, "causal_waits": 0, "causal_primary": 0,
//	 "tx_reruns": 2, "tx_gave_up": 0, "tx_commit_checks": 0, "tx_replays": 1,
//	 "tx_replay_mismatches": 0, "tx_replay_too_big": 0, "tx_replay_unsafe": 0,
//	 "hosts": [{"host": "db1:3306", "dc": "", "origin": "dsn", "state": "down", "role": "unknown",
//	            "connections": 0, "probe_latency_seconds": 0.0012,
//	            "replica_lag_seconds": -1, "replica_reads": 0,
//	            "replica_skip": "down: its probes failed for failoverDelay",
//	            "last_error": "...", "changed": "2026-12-01T10:00:00Z"}, ...]}
//
// states are those of failover.HostState.String (unknown, up, suspect, down, backoff,
// wrong-role, not-ready), roles unknown, primary, read_only_primary, standby; failovers, fall_backs
// and aborts count since the connector was built; connections is -1 when unknown;
// probe_latency_seconds is the last passed probe's latency (0: none); last_error never
// contains a password; changed is omitted when the state never changed; a host's role
// is unknown while it is down. writer_available and write_refusals are
// Stats.WriterAvailable (the pool can serve writes, as far as the driver knows) and
// Stats.WriteRefusals (writes refused as read-only, 1290, 1836, 1792, or that found no
// host: no writer; count since the connector was built); caller_errors is
// Stats.CallerErrors (errors returned to callers because a host failed, refused or was
// missing: what the application saw, where write_refusals counts attempts). writers is Stats.Writers: the
// hosts of a replication cluster found writable at once, the pool's writer first (two
// writers: fence the others); [] while at most one is.
//
// origin is where the host came from (failover.HostOrigin: dsn, host-list, discovered),
// and discovered, for a host discoverHosts found, when it found it (RFC 3339; omitted for
// the others); discovery is Stats.Discovery, why discoverHosts finds no host ("" while
// its reads work, or it is off).
//
// The tx_ fields count since the connector was built what failover.Stats' Tx fields
// count: mysqlfailover.RunInTx's reruns, the calls that gave up, its commit checks, and
// transactionReplay's replays, differences, and transactions refused as too big or for
// what they used.
//
// The replica fields are those of read/write splitting (replicaReads): replica_retries,
// replica_to_primary, causal_waits and causal_primary count since the connector was
// built (failover.Stats: read-intent statements run again on another replica, run on
// the primary for want of a replica, causal reads a replica served after waiting, causal
// reads sent to the primary); per host replica_lag_seconds is the lag its last probe
// read (whole seconds; -1 when unknown, always without replicaReads or checkInterval),
// replica_reads the read-intent statements it served as a replica, replica_skip why it
// serves none now (omitted when it qualifies, and for every host without replicaReads).
// They are present, at 0 or -1, without replicaReads too: the object keeps one shape.
// expvar has no
// histograms: for probe latency and walk duration distributions use the Prometheus or
// OpenTelemetry modules (metrics/prometheus, metrics/otel).
package mysqlfailoverexpvar

import (
	"expvar"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
)

// Func returns the expvar.Func that renders c's Stats at each read (see the package
// documentation for the JSON). Publish it with expvar.Publish, under a name of yours
// (expvar.Publish panics on a name published twice).
func Func(c *mysqlfailover.Connector) expvar.Func {
	return func() any { return render(c.Stats()) }
}

type host struct {
	Host         string  `json:"host"`
	DC           string  `json:"dc"`
	Origin       string  `json:"origin"`
	Discovered   string  `json:"discovered,omitempty"`
	State        string  `json:"state"`
	Role         string  `json:"role"`
	Connections  int     `json:"connections"`
	ProbeLatency float64 `json:"probe_latency_seconds"`
	ReplicaLag   float64 `json:"replica_lag_seconds"`
	ReplicaReads int64   `json:"replica_reads"`
	ReplicaSkip  string  `json:"replica_skip,omitempty"`
	ReplicaIdle  int     `json:"replica_idle,omitempty"`
	ReplicaWaits int64   `json:"replica_waits,omitempty"`
	LastError    string  `json:"last_error,omitempty"`
	Changed      string  `json:"changed,omitempty"`
}

type stats struct {
	Active    string `json:"active"`
	Primary   string `json:"primary"`
	Failovers int64  `json:"failovers"`
	FallBacks int64  `json:"fall_backs"`
	Aborts    int64  `json:"aborts"`
	// The pool's writes (Stats.WriterAvailable, Stats.WriteRefusals, Stats.Writers) and the
	// callers' errors (Stats.CallerErrors).
	WriterAvailable bool     `json:"writer_available"`
	WriteRefusals   int64    `json:"write_refusals"`
	CallerErrors    int64    `json:"caller_errors"`
	Writers         []string `json:"writers"`
	Discovery       string   `json:"discovery"`
	// The replica counts (replicaReads).
	ReplicaRetries   int64 `json:"replica_retries"`
	ReplicaToPrimary int64 `json:"replica_to_primary"`
	CausalWaits      int64 `json:"causal_waits"`
	CausalPrimary    int64 `json:"causal_primary"`
	// The transaction counts (RunInTx, transactionReplay).
	TxReruns           int64  `json:"tx_reruns"`
	TxGaveUp           int64  `json:"tx_gave_up"`
	TxCommitChecks     int64  `json:"tx_commit_checks"`
	TxReplays          int64  `json:"tx_replays"`
	TxReplayMismatches int64  `json:"tx_replay_mismatches"`
	TxReplayTooBig     int64  `json:"tx_replay_too_big"`
	TxReplayUnsafe     int64  `json:"tx_replay_unsafe"`
	Hosts              []host `json:"hosts"`
}

var roles = map[failover.Role]string{failover.RolePrimary: "primary", failover.RoleReadOnlyPrimary: "read_only_primary", failover.RoleStandby: "standby"}

func render(s failover.Stats) stats {
	out := stats{Active: s.Active, Primary: s.Primary, Failovers: s.Failovers, FallBacks: s.FallBacks, Aborts: s.Aborted,
		WriterAvailable: s.WriterAvailable, WriteRefusals: s.WriteRefusals, CallerErrors: s.CallerErrors,
		Writers: append([]string{}, s.Writers...), Discovery: s.Discovery,
		ReplicaRetries: s.ReplicaRetries, ReplicaToPrimary: s.ReplicaToPrimary, CausalWaits: s.CausalWaits, CausalPrimary: s.CausalPrimary,
		TxReruns: s.TxReruns, TxGaveUp: s.TxGaveUp, TxCommitChecks: s.TxCommitChecks, TxReplays: s.TxReplays,
		TxReplayMismatches: s.TxReplayMismatches, TxReplayTooBig: s.TxReplayTooBig, TxReplayUnsafe: s.TxReplayUnsafe,
		Hosts: []host{}}
	for _, h := range s.Hosts {
		r, ok := roles[h.Role]
		if !ok {
			r = "unknown"
		}
		e := host{Host: h.Addr, DC: h.DC, Origin: h.Origin.String(), State: h.State.String(), Role: r, Connections: h.OpenConns, ProbeLatency: h.ProbeLatency.Seconds(),
			ReplicaLag: -1, ReplicaReads: h.ReplicaReads, ReplicaSkip: h.ReplicaSkip, ReplicaIdle: h.ReplicaIdle, ReplicaWaits: h.ReplicaWaits}
		if h.ReplicaLag >= 0 {
			e.ReplicaLag = h.ReplicaLag.Seconds()
		}
		if h.LastError != nil {
			e.LastError = h.LastError.Error()
		}
		if !h.Discovered.IsZero() {
			e.Discovered = h.Discovered.UTC().Format(time.RFC3339Nano)
		}
		if !h.Changed.IsZero() {
			e.Changed = h.Changed.UTC().Format(time.RFC3339Nano)
		}
		out.Hosts = append(out.Hosts, e)
	}
	return out
}
