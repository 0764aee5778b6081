package failover

import (
	"time"
)

// EventKind says what an Event reports.
type EventKind int

const (
	// EventConnect is one connection attempt to Host: Err is nil when it succeeded.
	EventConnect EventKind = iota + 1
	// EventHostFailed is a communication error on an established connection to Host (Err).
	EventHostFailed
	// EventSwitch is the pool moving from From to Host: after a failure or a role
	// change (Err is the cause; nil when a new connection's walk passed From over
	// without trying it, as a host already known down), after a new host list moved the
	// primary (Err says so), for SwitchTo (Err nil), or to the writer the cluster follows
	// when two hosts are writable (Err says so, as for EventTwoWriters).
	EventSwitch
	// EventFallBack is the pool returning from From to home (Host): the primary, or with
	// a standby targetSessionAttrs a local standby.
	EventFallBack
	// EventFallBackFailed is an attempt to return to the primary (Host) that failed (Err);
	// the pool stays on From and the fall-back clocks restart.
	EventFallBackFailed
	// EventHostState is a change of what the pool believes of Host: State, with the
	// error that caused it (Err, nil for up).
	EventHostState
	// EventHostList is a host list from the HostListProvider: taken (Err nil; Host is the
	// new list's primary) or rejected (Err says why; the last good list stays). A list
	// equal to the current one is taken silently.
	EventHostList
	// EventProbe is a failed probe of Host (Err). Passed probes are EventProbePassed.
	EventProbe
	// EventAbort is the pool closing every connection to Host, which probes declared
	// down while the pool was on it (or after a walk left it for a failure), so that
	// statements in flight fail at once.
	EventAbort
	// EventSessionEnded is a communication error (Err) on an established connection to
	// Host while Host still answers (a KILL, a packet over max_allowed_packet,
	// net_write_timeout, a query past readTimeout): the connection has a new session on
	// Host and the pool stays.
	EventSessionEnded
	// EventProbePassed is a probe of Host that passed (checkInterval > 0), one per probe
	// (calmCheckInterval or checkInterval apart, see package dsn); Duration is its latency, as HostStats.ProbeLatency. It exists
	// for metrics (a probe-latency histogram); WithLogger logs it at Debug.
	EventProbePassed
	// EventReplica is a change of whether Host serves read-intent statements as a
	// replica (replicaReads): Err is nil when it started to qualify, else why it stopped
	// (as HostStats.ReplicaSkip: lag, health, role, DC).
	EventReplica
	// EventTxRerun is mysqlfailover.RunInTx running its function again, in a new
	// transaction: Err is the error of the attempt before (nothing of it committed),
	// Duration the wait before the new attempt, Host the pool's host.
	EventTxRerun
	// EventTxReplay is a transaction replay (transactionReplay=true) after the session on
	// From failed inside a transaction: on Host, the new session; Err is nil when the
	// transaction runs again there, else why it was not replayed or where the replay
	// differed (the transaction is then lost).
	EventTxReplay
	// EventTwoWriters is more than one host of a replication cluster found writable at
	// once (read_only OFF on each: two writers, whose data diverge; an old primary back
	// unfenced after a promotion, a replica whose read_only was forgotten). Host is the
	// writer the pool chose (the one the cluster's replicas follow, then the one it
	// already writes to, then the list's first), From another writable host, and Err
	// names every writable host, the replicas that follow each, and the fix (fence the
	// others: SET GLOBAL read_only=ON, or stop them). Once per set of writable hosts and
	// writer; Stats.Writers lists them while it lasts. Galera and Group Replication
	// clusters, whose writers are by design, never report it.
	EventTwoWriters
	// EventDiscovery is a change that discoverHosts made to the host list: Host found
	// (Err nil: the cluster reports it, and it joins the list after the hosts of the
	// DSN or the host list) or dropped (Err says why: the cluster stopped reporting it,
	// or it is the same server as a host the list has); or, with Host "", the
	// cluster's members could not be read (Err names the query and the privilege it
	// needs: Stats.Discovery says so while it lasts). A host found is used only once
	// its probes found it ready and of the role wanted.
	EventDiscovery
)

// String returns the kind's name, e.g. "connect".
func (k EventKind) String() string {
	switch k {
	case EventConnect:
		return "connect"
	case EventHostFailed:
		return "host-failed"
	case EventSwitch:
		return "switch"
	case EventFallBack:
		return "fall-back"
	case EventFallBackFailed:
		return "fall-back-failed"
	case EventHostState:
		return "host-state"
	case EventHostList:
		return "host-list"
	case EventProbe:
		return "probe-failed"
	case EventAbort:
		return "abort"
	case EventSessionEnded:
		return "session-ended"
	case EventProbePassed:
		return "probe-passed"
	case EventReplica:
		return "replica"
	case EventTxRerun:
		return "tx-rerun"
	case EventTxReplay:
		return "tx-replay"
	case EventTwoWriters:
		return "two-writers"
	case EventDiscovery:
		return "discovery"
	}
	return "unknown"
}

// Event is what the hook of mysqlfailover.WithEventHook receives, and what
// mysqlfailover.WithLogger logs. Errors in events never contain a password
// (go-sql-driver's errors do not carry the DSN, and this package never adds it).
type Event struct {
	// Kind says what the event reports.
	Kind EventKind
	// Time is when the event happened.
	Time time.Time
	// Host is the host:port the event is about (attempted, failed, or moved to).
	Host string
	// From is the host:port the pool left, for EventSwitch, EventFallBack and
	// EventFallBackFailed; for EventTxReplay the host whose session failed; for
	// EventTwoWriters a writable host other than the writer.
	From string
	// Err is the failure or cause: for a failed EventConnect, EventHostFailed,
	// EventSwitch, EventFallBackFailed, EventHostState (nil for up), a rejected
	// EventHostList, EventProbe, EventAbort, EventTxRerun, a failed EventTxReplay and
	// EventTwoWriters; nil otherwise.
	Err error
	// State is the host's new state, for EventHostState.
	State HostState
	// Duration is, for EventProbePassed, the probe's latency (the role or probe query's
	// round trip, plus reopening the probe connection when it had to be); for an
	// EventSwitch or EventFallBack that ended a host walk, how long the walk took, from
	// its start (the failure, or the new connection that found fall-back due) to the
	// working connection on Host, pauses between passes included (a connection's
	// fall-back attempt at a safe point is a walk of one host); for an
	// EventFallBack the monitor decided (checkInterval > 0), how long home had passed its
	// probes when the pool returned, from the first passing probe of that run
	// (switchBackDelay, plus up to a checkInterval; connections move at their next safe
	// point); for EventTxRerun, the wait before the new attempt. It is 0 for the other
	// moves made without a walk (the monitor's switch away from a failing host, SwitchTo,
	// a new host list) and for every other kind.
	Duration time.Duration
}

// String renders the event on one line, e.g. "connect 10.0.0.2:3306 ok".
func (e Event) String() string {
	s := e.Kind.String()
	if e.Host != "" {
		s += " " + e.Host
	}
	if e.Kind == EventHostState {
		s += " " + e.State.String()
	}
	if e.From != "" {
		s += " from " + e.From
	}
	if e.Err != nil {
		return s + ": " + e.Err.Error()
	}
	if e.Kind == EventConnect {
		return s + " ok"
	}
	if e.Duration > 0 {
		s += " in " + e.Duration.String()
	}
	return s
}
