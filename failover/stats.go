package failover

import (
	"time"
)

// HostState is what the pool believes of a host, for Stats and the logs.
type HostState int

const (
	// HostUnknown: never tried, never probed.
	HostUnknown HostState = iota
	// HostUp: the last attempt or probe succeeded.
	HostUp
	// HostSuspect: probes are failing, for less than failoverDelay.
	HostSuspect
	// HostDown: the last attempt failed, or probes failed for failoverDelay. After a
	// failed attempt Stats shows HostBackoff until the backoff ends, then HostDown until a
	// success; a host the probes declared down is skipped by every walk until a probe
	// passes.
	HostDown
	// HostBackoff: down, and new connections skip it until HostStats.RetryAt while
	// another host of the plan is healthy (Stats only; never in EventHostState).
	HostBackoff
	// HostWrongRole: up, but its role does not qualify for targetSessionAttrs (Stats
	// only; never in EventHostState). A replica that serves read-intent statements
	// (replicaReads, HostStats.ReplicaSkip "") is HostUp: its role is right for that.
	HostWrongRole
	// HostNotReady: up, but the server says it is not ready for application use (a
	// Galera node outside the Primary component, not synced, desynced or rejecting
	// queries; MySQL offline_mode; a Group Replication member not ONLINE, or without
	// quorum): no walk, connect or fall-back uses it until it says it is ready.
	// HostStats.LastError and the EventHostState's Err say why; the event of its return
	// has HostUp.
	HostNotReady
)

// String returns "unknown", "up", "suspect", "down", "backoff", "wrong-role" or
// "not-ready".
func (s HostState) String() string {
	switch s {
	case HostUp:
		return "up"
	case HostSuspect:
		return "suspect"
	case HostDown:
		return "down"
	case HostBackoff:
		return "backoff"
	case HostWrongRole:
		return "wrong-role"
	case HostNotReady:
		return "not-ready"
	}
	return "unknown"
}

// HostOrigin says where a host of the list came from (HostStats.Origin).
type HostOrigin int

const (
	// OriginDSN: the DSN (or Config.Hosts) lists it.
	OriginDSN HostOrigin = iota
	// OriginHostList: the last list of the HostListProvider (hostsURL) names it.
	OriginHostList
	// OriginDiscovered: the cluster reported it (discoverHosts): a replica registered
	// with the primary, a Galera node or a Group Replication member. It follows the
	// hosts of the DSN or the host list, and leaves the list once the cluster has
	// stopped reporting it for a few reads.
	OriginDiscovered
)

// String returns "dsn", "host-list" or "discovered".
func (o HostOrigin) String() string {
	switch o {
	case OriginHostList:
		return "host-list"
	case OriginDiscovered:
		return "discovered"
	}
	return "dsn"
}

// Stats is a snapshot of a pool, for operators, as (*mysqlfailover.Connector).Stats
// returns it.
type Stats struct {
	// Active is the host:port the pool uses now; "" while it uses none: its host is
	// down (HostDown or HostBackoff) and no walk has found another yet, as when the
	// primary died and no host qualifies for targetSessionAttrs=read-write.
	Active string
	// Primary is the host:port the pool returns to (the list's primary, the local DC's
	// first host, or SwitchTo's choice).
	Primary string
	// Hosts has one entry per host of the current list, in list order.
	Hosts []HostStats
	// Failovers counts walks that moved the pool after a failure (count since start).
	Failovers int64
	// FallBacks counts returns to the primary (count since start).
	FallBacks int64
	// ProbeSessions is the number of sessions the monitor keeps open for its probes
	// now, one at most per host (HostStats.ProbeSession): with every host's probes
	// borrowing idle pooled sessions, 0.
	ProbeSessions int
	// Aborted counts hosts whose in-flight statements were aborted after probes declared
	// them down (count of abort rounds, not of statements).
	Aborted int64
	// ReplicaRetries counts read-intent statements (replicaReads) that failed on a
	// replica before their result started and ran again on another host (count).
	ReplicaRetries int64
	// ReplicaToPrimary counts read-intent statements that ran on the primary because
	// no replica qualified (readFromSourceWhenNoReplicas, default true; count).
	ReplicaToPrimary int64
	// CausalWaits counts the waits of causal reads (causalReads local or global) in
	// which a replica reached the write's position: the replica served the read (count).
	CausalWaits int64
	// CausalPrimary counts causal reads sent to the primary because no qualifying
	// replica had reached the position within causalReadsTimeout (a replica that missed
	// one is then skipped by causal reads for causalReadsTimeout, and the next replica
	// tried), or because the position could not be read (count).
	CausalPrimary int64
	// WriteRefusals counts the errors that said a write could not be served (count
	// since start): each statement a server refused as read-only that the driver saw
	// (1290 ER_OPTION_PREVENTS_STATEMENT, 1836 ER_READ_ONLY_MODE, 1792
	// ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION: with failOverReadOnly a session on a
	// secondary is read-only), including one after which a connection with
	// targetSessionAttrs read-write or primary found the new writer and ran the statement
	// again there, and each connection or statement that found no host to use (a
	// *NoHostAvailableError, or a FailoverError whose Reconnect is one, after a walk
	// that tried at least one host: with read-write or primary, no writer). A service
	// that writes alerts on its increase; a pool that only reads on standbys never
	// counts one.
	WriteRefusals int64
	// CallerErrors counts the errors the driver returned to its callers because a host
	// failed, refused or was missing (count since start): a *FailoverError, a
	// *NoHostAvailableError (unless the caller's context ended the walk before it tried
	// a host), ErrTxLost (for the statement that hit the failure and for every later
	// statement of the transaction), ErrCommitOutcomeUnknown, and a statement a server
	// refused as read-only (1290, 1836, 1792) that reached the caller. Not counted: data
	// errors, the caller's own context ending, ErrTxRolledBack (a deadlock is the
	// application's), and what the driver absorbed (a statement it ran again on the new
	// host, a write a demoted primary refused that it ran on the new writer). Where
	// WriteRefusals counts attempts, this counts what the application saw: alert on it.
	CallerErrors int64
	// WriterAvailable reports whether the pool can serve writes now, as far as the
	// driver knows: the host it uses (Active) is up (or not tried yet: a new pool) and
	// ready, and is a writer: its
	// role as last read is RolePrimary (targetSessionAttrs other than any, or probes
	// reading it), or, with the role never read (targetSessionAttrs any without
	// probing), it is the list's primary or failOverReadOnly is false. A host demoted
	// behind the driver's back with the role never read still reads true until
	// WriteRefusals counts its refusals.
	WriterAvailable bool
	// Writers lists the hosts of a replication cluster found writable at once, while more
	// than one is (two writers, whose data diverge: see failover.EventTwoWriters), the
	// pool's writer first: the one the cluster's replicas follow, then the one the pool
	// already writes to, then the list's first; nil while at most one is. It is what the
	// last look found (a new pool's first connection with targetSessionAttrs read-write or
	// primary, a fall-back to a writable primary, a probe that found a second writable
	// host), less the hosts since found down or read-only.
	Writers []string
	// Discovery says why discoverHosts finds no host now, "" while its reads work (or
	// it is off): the pool's user may not run the query that lists the cluster's
	// members (the privilege to grant is named), or the members' addresses cannot be
	// dialled (a Galera node reported as AUTO). The pool then works on the hosts of
	// the DSN or the host list, as without discovery.
	Discovery string
	// TxReruns counts the runs of a mysqlfailover.RunInTx function after its first, in
	// a fresh transaction, each after an error for which nothing of the transaction
	// committed (count; one EventTxRerun each).
	TxReruns int64
	// TxGaveUp counts the RunInTx calls that returned such an error all the same: their
	// attempts were used up, or their context ended before the next one (count).
	TxGaveUp int64
	// TxCommitChecks counts the commit checks (RunOptions.Committed) RunInTx ran after a
	// Commit that returned ErrCommitOutcomeUnknown (count).
	TxCommitChecks int64
	// TxReplays counts the transactions replayed (transactionReplay=true) on a new
	// session after theirs failed: every statement ran again with the results the
	// application had seen (count; one EventTxReplay each).
	TxReplays int64
	// TxReplayMismatches counts the replays given up because a statement's result
	// differed from what the application had seen, or it failed (count).
	TxReplayMismatches int64
	// TxReplayTooBig counts the transactions not replayed because they recorded more
	// than transactionReplayMaxSize (count).
	TxReplayTooBig int64
	// TxReplayUnsafe counts the transactions not replayed because they used what a new
	// session lacks or a replay cannot repeat: temporary tables, user variables,
	// GET_LOCK, LOCK TABLES, XA, CALL, LOAD DATA, a multi-statement batch (count).
	TxReplayUnsafe int64
	// HandshakeRetries counts the new sessions' handshakes that the pool's host closed
	// or reset after accepting the TCP connection (an overloaded listener) and that were
	// tried again on the same host (count).
	HandshakeRetries int64
	// SessionsClosed counts the new sessions that failed so on every try while the host
	// answered other sessions or probes: their callers got the error, and the pool
	// stayed on the host, as for a full host (count).
	SessionsClosed int64
}

// HostStats is one host's part of Stats.
type HostStats struct {
	// Addr is host:port.
	Addr string
	// DC is its data-centre label, "" for none.
	DC string
	// Origin says where it came from: the DSN, the host list (hostsURL or a
	// HostListProvider) or discovery (discoverHosts).
	Origin HostOrigin
	// Discovered is when discovery first found it (OriginDiscovered; zero otherwise).
	Discovered time.Time
	// State is what the pool believes of it.
	State HostState
	// Role is what the last role check found (RoleUnknown without targetSessionAttrs
	// and without probes that read it), RoleUnknown while the host is HostDown or
	// HostBackoff: its last role is no longer known.
	Role Role
	// LastError is the last error that changed its state, nil after a success. It never
	// contains a password.
	LastError error
	// Changed is when State last changed (zero: never).
	Changed time.Time
	// RetryAt is when its backoff ends (zero: not in backoff).
	RetryAt time.Time
	// ProbeLatency is the duration of its last successful probe, including reopening the
	// probe connection when it had to be (0: none).
	ProbeLatency time.Duration
	// ProbeTimeout is how long its next probe waits for its answer: three times its
	// probe timeout, derived from its probe round trips as TCP derives its
	// retransmission timeout (RFC 6298), or its smoothed round trip plus 225 ms when that
	// is longer (package dsn, section Options, gives the formulas; once the probes
	// declared it down, one probe timeout); 0 with probing off.
	ProbeTimeout time.Duration
	// OpenConns is the number of physical connections open to it, probe connections
	// included (filled by the driver; -1 when unknown).
	OpenConns int
	// ProbeSession reports whether the monitor (checkInterval > 0) keeps a session of
	// its own open to it for its probes now. It keeps none on a host where the pool
	// holds a session that sits idle: a probe borrows that one (ProbesBorrowed).
	ProbeSession bool
	// ProbesBorrowed counts its probes that ran on an idle pooled session (count since
	// start); ProbesOwn those that ran on the monitor's own probe session, opened
	// because the pool held no idle session there (a replica that serves no reads, or
	// every pooled session busy).
	ProbesBorrowed, ProbesOwn uint64
	// ReplicaLag is its replication lag as its last probe read it (Seconds_Behind_Master,
	// or Seconds_Behind_Source: whole seconds), with replicaReads and checkInterval > 0;
	// -1 (time.Duration(-1), printed "-1ns") when unknown (not read, not a replica, a replication thread stopped, or the
	// probe user lacks the privilege: ReplicaSkip says which).
	ReplicaLag time.Duration
	// ReplicaReads counts the read-intent statements it served as a replica (count).
	ReplicaReads int64
	// ReplicaIdle is the number of its replica sessions that sit idle in the pool's
	// shared ones, waiting for the next read (count; OpenConns counts them too, and each
	// open session holds one go-sql-driver goroutine). See replicaPoolSize (package dsn).
	ReplicaIdle int
	// ReplicaWaits counts the reads that found as many sessions open to it as
	// replicaPoolSize allows and waited for one to come back (count; database/sql's
	// DBStats.WaitCount for the replica sessions): raise replicaPoolSize when it grows.
	ReplicaWaits int64
	// ReplicaSkip says why, with replicaReads, it serves no replica reads now ("the
	// pool's writer", "down", "lag 12s over maxReplicaLag 10s", "lag unknown: ...",
	// "remote DC", "writable: not a replica"); "" when it qualifies or without
	// replicaReads.
	ReplicaSkip string
}
