package cluster

import "time"

// The engine's tuning values, in one place. None of them is a DSN option: the options
// and their defaults are package dsn's (retriesAllDown, hostTimeout, checkInterval...).
// These are the engine's own choices, named here with their unit and the reason for the
// value; the code that uses them says nothing of the numbers. They are exported for the
// module's tests and the integration suite only (the package is internal): no user can
// set them.

// The walk (walk.go) and fall-back (fallback.go).
const (
	// DefaultPassPause is the pause between two passes over the host list (duration,
	// 250 ms): Connector/J's pause between retriesAllDown cycles, which MariaDB's
	// Connector/J restored (CONJ-529) after a hot loop against a cluster that was all
	// down.
	DefaultPassPause = 250 * time.Millisecond

	// DefaultRolePeek is how often a walk that waits for a host of its role (the
	// hosts that answered its last pass did so with a role the target does not want: a
	// writer is being promoted) reads their roles again during the pass pause, on the
	// probes' idle sessions and never on a new one (duration, 100 ms: a promotion is seen
	// within that, without a handshake; with monitoring off, the pass pause alone).
	DefaultRolePeek = 100 * time.Millisecond

	// DefaultFallBackPause is how long after a failed attempt to return to the primary
	// the statement count (queriesBeforeRetryMaster) may trigger the next one (duration,
	// 250 ms, the pass pause): a busy pool runs 50 statements in milliseconds, and a dead
	// primary would otherwise get a connection attempt every few milliseconds.
	DefaultFallBackPause = DefaultPassPause
)

// Host backoff (health.go): after failed attempts a host is left out of the walks of
// the connections that join the pool, DefaultBackoffBase after the first failure,
// doubling with every further consecutive failure up to DefaultBackoffMax. A success (an
// attempt or a probe) resets it. Authentication failures back off the same way and are
// never final: credentials can be rotated.
const (
	// DefaultBackoffBase is the backoff after one failed attempt (duration, 250 ms, the
	// pass pause: a host that failed once is tried again by the next pass).
	DefaultBackoffBase = 250 * time.Millisecond
	// DefaultBackoffMax caps the backoff (duration, 8 s: a host that comes back is used
	// again within seconds, however long it was down).
	DefaultBackoffMax = 8 * time.Second
)

// The one walk per pool (flight.go): the connections that waited for another
// connection's walk each wait a random time in [0, DefaultFollowerJitter x waiters), at
// most DefaultMaxJitter, before they connect to the host that walk found, so that a
// large pool does not open all its connections to the new host in the same millisecond.
const (
	// DefaultFollowerJitter is the spread per waiting connection (duration, 2 ms: 64
	// connections spread over about 128 ms).
	DefaultFollowerJitter = 2 * time.Millisecond
	// DefaultMaxJitter caps the spread (duration, 200 ms: well below a request's
	// deadline, however large the pool).
	DefaultMaxJitter = 200 * time.Millisecond
)

// Host attempts (attempt.go): when the caller's context has a deadline, one attempt gets
// a share of the time left, 1/DefaultTimeLeftShare of it, but at least
// DefaultMinHostShare and at least DefaultTypicalFactor times what the host's attempts
// usually take (always within hostTimeout). A hung host must not eat a short request
// deadline whole, and a host that is merely far away must not be taken for a hung one.
const (
	// DefaultTimeLeftShare divides the caller's time left into an attempt's share (count,
	// 2: half of it, so that a second host can still be tried).
	DefaultTimeLeftShare = 2
	// DefaultMinHostShare is the smallest per-host budget that a caller's deadline can
	// impose (duration, 250 ms, as the pass pause: a handshake on a healthy host fits,
	// and a hung host costs a short deadline little).
	DefaultMinHostShare = 250 * time.Millisecond
	// DefaultTypicalFactor is how many times a host's typical connect time an attempt
	// gets at least (count, 4).
	DefaultTypicalFactor = 4
	// DefaultConnectTimeSmoothing is the weight of a host's typical connect time (count,
	// 4): each successful attempt moves it 1/4 of the way to the attempt's duration, so
	// that one slow handshake does not double every later bound.
	DefaultConnectTimeSmoothing = 4
)

// The same-host check of Recover (verdict.go), for a session failure that does not prove
// the server is up: the attempt gets DefaultCheckFactor times the host's typical connect
// time, at least DefaultMinCheck, within hostTimeout and the caller's share as every
// attempt. A frozen host accepts TCP (the kernel completes the handshake) and then never
// greets: without this bound every session caught on it would pay hostTimeout before the
// pool left it.
const (
	// DefaultCheckFactor is the check's multiple of the typical connect time (count, 4).
	DefaultCheckFactor = 4
	// DefaultMinCheck is the check's least bound (duration, 50 ms: a handshake within a
	// data centre takes a few ms).
	DefaultMinCheck = 50 * time.Millisecond
)

// A full host (verdict.go): a connection that must not leave its host (the pool's host
// when it joins the pool, or a host whose session ended) and finds it full (1040, 1203)
// tries again after DefaultFullWaitBase, doubling up to DefaultFullWaitMax, for at most
// hostTimeout in all, or DefaultFullWait when hostTimeout is 0.
const (
	// DefaultFullWaitBase is the first wait (duration, 25 ms: sessions end all the time
	// on a busy server).
	DefaultFullWaitBase = 25 * time.Millisecond
	// DefaultFullWaitMax caps each wait (duration, 400 ms).
	DefaultFullWaitMax = 400 * time.Millisecond
	// DefaultFullWait is the total wait when hostTimeout is 0 (duration, 5 s, the DSN's
	// default hostTimeout).
	DefaultFullWait = 5 * time.Second
)

// A closed handshake (storm.go): a connection that must not leave its host and whose
// handshake the server closed or reset tries again after a pause drawn from the upper
// half of DefaultHandshakePause, doubling up to DefaultHandshakePauseMax,
// DefaultHandshakeTries tries in all within the full host's total (hostTimeout, or
// DefaultFullWait). The pauses spread a storm of new sessions over the host: 20 to
// 40 ms, then 40 to 80 ms, then 80 to 160 ms, at most about 280 ms in all.
const (
	// DefaultHandshakeTries is the number of tries of a new session on its host while
	// the server closes its handshakes (count, 4).
	DefaultHandshakeTries = 4
	// DefaultHandshakePause is the first pause's upper bound (duration, 40 ms).
	DefaultHandshakePause = 40 * time.Millisecond
	// DefaultHandshakePauseMax caps each pause (duration, 320 ms).
	DefaultHandshakePauseMax = 320 * time.Millisecond
)

// Probe timeouts (probe.go, rto.go). Each host's probe round trip is bounded by a
// timeout derived from that host's own probe round trips as TCP derives its
// retransmission timeout (RFC 6298): RTO = SRTT + max(DefaultProbeMargin,
// DefaultProbeVarianceFactor x RTTVAR), at most hostTimeout (DefaultMaxProbeTimeout when
// hostTimeout is 0), doubled after each timed-out probe; a probe waits for its answer
// DefaultProbePatience times that, and at least SRTT + DefaultMaxStall +
// DefaultStallMargin. Before a host's first passed probe, and as the cap of the doubling,
// the timeout is DefaultMinProbeTimeout (or checkInterval when that is longer), the fixed
// bound every probe had before.
//
// The arithmetic of a frozen active host: its first probe after the freeze starts within
// one probe period, checkInterval/DefaultActiveProbes, and fails when its wait is over,
// so the pool leaves it within checkInterval/DefaultActiveProbes + SRTT + DefaultMaxStall
// + DefaultStallMargin (when failoverDelay is shorter than that wait): 50 + 1 + 200 + 25
// ms, about 0.28 s, for a host whose probes take 1 ms at checkInterval=100ms. With one
// probe per checkInterval it would be 0.33 s: a wait that rides out 200 ms stalls and a
// 300 ms bound leave less than 100 ms for the probe period. On the calm cadence
// (cadence.go) the probe period is replaced by the traffic's grace time, as long: a
// statement sent to the frozen host has waited checkInterval/DefaultActiveProbes when
// the host's probe starts, so the bound is the same for a host under traffic, and a
// statement of an idle instance is failed (and a read run again on the next host)
// after the same 0.28 s.
const (
	// DefaultMinProbeTimeout is a probe's bound before its host's first passed probe
	// (duration, 500 ms, or checkInterval when that is longer, never more than
	// hostTimeout when that is set), and the most that the doubling after timed-out
	// probes raises a timeout to, unless the host's own round trips call for more: a
	// host not measured yet must not be called down for a scheduling hiccup.
	DefaultMinProbeTimeout = 500 * time.Millisecond
	// DefaultProbeMargin is the least a probe timeout adds to the smoothed round trip
	// (duration, 50 ms), also the least timeout: RFC 6298's clock granularity G, here
	// the scheduling noise of a busy client or server (a Go runtime's pause, a CPU
	// shared with other processes). It is also the least wait of a probe late in a run
	// of failed probes (what the run has left of failoverDelay may be less).
	DefaultProbeMargin = 50 * time.Millisecond
	// DefaultProbeVarianceFactor multiplies the round trip's mean deviation RTTVAR in a
	// probe timeout (count, 4: RFC 6298's K).
	DefaultProbeVarianceFactor = 4
	// DefaultProbePatience is how many probe timeouts a probe waits for its answer,
	// on the same connection, before it fails (count, 3: TCP's first timeout and the
	// doubled one after it, 1 + 2; the server would only queue a repeated request
	// behind the one it has not answered). A host declared down gets one. It is what
	// a host whose round trips vary (jitter: RTTVAR large) is given; DefaultMaxStall
	// is what a steady one is given.
	DefaultProbePatience = 3
	// DefaultMaxStall is how much later than its smoothed round trip an alive host may
	// answer a probe without failing it (duration, 200 ms): slow primaries,
	// a latency that steps or jumps to 200 ms, jitter of up to 200 ms, an fsync stall or
	// a noisy neighbour, must cause no failover, however steady the host's round trips
	// were before (its RTTVAR small). Linux's TCP keeps its retransmission timeout at
	// least 200 ms (TCP_RTO_MIN) for the same reason. It costs detection as much: a
	// frozen host is left that much later than its round trips alone would allow.
	DefaultMaxStall = 200 * time.Millisecond
	// DefaultStallMargin is what a probe's least wait adds to DefaultMaxStall for the
	// noise around a stall (duration, 25 ms): the server's thread waiting for a CPU
	// once its stall is over, the wake-up of the reader here. Answers delayed 200 ms
	// came 1 to 6 ms later than that on a shared 2-core machine at load averages of 1 to
	// 12 (BENCHMARKS.md, failure detection). A pause of this process beyond the margin
	// is caught by DefaultMaxLocalPause, which is as long; every millisecond of it is
	// a millisecond more before a frozen host is left.
	DefaultStallMargin = 25 * time.Millisecond
	// DefaultActiveProbes is how many probes the active host (the one the pool uses)
	// gets per checkInterval (count, 2): its probes start every checkInterval/2, the
	// other hosts' every checkInterval, each on a fixed-rate schedule of its own. The
	// probe period bounds how soon a probe starts after a freeze; with the wait above
	// 200 ms, one probe per checkInterval could not leave a frozen host within 300 ms
	// at checkInterval=100ms, and the other hosts' failures only pick the target.
	DefaultActiveProbes = 2
	// DefaultProbeVarianceDecay is how slowly RTTVAR falls (count, 16): a round trip
	// closer to SRTT than RTTVAR moves RTTVAR 1/16 of the way to its deviation (RFC
	// 6298's 1/4 when farther: rising at once), so that a host's stall is remembered for
	// some 11 probes (half of it), about half a second at checkInterval=100ms.
	DefaultProbeVarianceDecay = 16
	// DefaultMaxLocalPause is how late a probe's timeout may fire and still count
	// against its host (duration, 25 ms, DefaultStallMargin): later, this process itself
	// was not running (Cassandra's failure detector ignores its own pauses likewise,
	// beyond 5 s there), and an answer that came meanwhile may be waiting unread; the
	// probe is repeated at once and counts only if that happens twice in a row. A
	// shorter pause is within the margin of the probe's wait.
	DefaultMaxLocalPause = DefaultStallMargin
	// DefaultMaxProbeTimeout caps a probe timeout when hostTimeout is 0 (duration, 5 s,
	// the DSN's default hostTimeout); otherwise hostTimeout caps it.
	DefaultMaxProbeTimeout = 5 * time.Second
)

// The monitor's cadences (cadence.go): a host that looks well is probed once per
// calmCheckInterval (the DSN option, 2 s by default); one that looks wrong, or on which
// a statement waits for its answer longer than checkInterval/DefaultActiveProbes, is on
// the alert schedule above.
const (
	// DefaultAlertHold is how long a host stays on the alert schedule after it last
	// looked wrong (its probes failed, a walk's attempt or a session failed on it, its
	// server said it is not ready, its role changed), the pool's new host after the
	// pool moved, and how long the other hosts are watched after the pool moved or the
	// host list changed (duration, 3 s: a host that flaps is watched closely, the
	// probes of the hosts a pool just moved among read their roles again, and an idle
	// fleet is back to its calm cost within seconds).
	DefaultAlertHold = 3 * time.Second
	// DefaultWatchDivisor divides the calm period into the probe period of a host that
	// looks well while the pool's host looks wrong or the pool just moved (count, 4:
	// every 500 ms at the default calmCheckInterval, never more often than
	// checkInterval). Such a host is a target the pool may move to, and its liveness
	// and role must be recent, but a fleet whose primary died must not probe every
	// other host of the cluster at the alert rate: 100 instances did so at 2,000
	// statements a second, and that load kept their sessions to the new primary from
	// opening. Connections find the new writer by their own walks, which read the role
	// of each host they connect to.
	DefaultWatchDivisor = 4
	// DefaultIdleAfter is how long the monitor looks at the statements' waits every
	// grace time (checkInterval/DefaultActiveProbes) after it last saw one, or was woken
	// by one starting (duration, 1 s). Then, with Env.ArmWait, it stops looking and the
	// next wait wakes it: a process whose pool is idle wakes for its calm probes only,
	// where each wake-up costs a fleet's instance CPU (0.35 % of a core for a 50 ms
	// ticker on the benchmark's VM), and a steady trickle of statements wakes it once a
	// DefaultIdleAfter, not once a statement.
	DefaultIdleAfter = time.Second
	// DefaultTargetDownDelay is the least time the probes of a host the pool does not
	// use must fail without a pause before they declare it down (duration, 1 s, or
	// failoverDelay when that is longer): the verdict only keeps the walks from trying
	// the host, and a host a fleet's failover overloads for a moment must not be left
	// out of every walk (a fleet of 100 whose primary was killed saw its new primary's
	// probes time out at failoverDelay=100ms while sessions to it opened).
	DefaultTargetDownDelay = time.Second
	// DefaultCalmJitter divides the calm period into the most a calm probe is delayed
	// at random beyond its point of the monitor's grid (count, 16: up to 125 ms of 2 s),
	// so that a fleet started in step drifts apart even where the phases met.
	DefaultCalmJitter = 16
)

// DefaultClusterViewAge is how old another Galera node's reading of its cluster may be
// and still count when a node's cluster is compared with it (duration, 10 s: several
// probe rounds at any usable checkInterval, and a reading from the walk that just left
// the node): a node whose cluster is smaller than another listed node's, in another
// cluster history, is not ready (ready.go, noteGalera).
const DefaultClusterViewAge = 10 * time.Second

// DefaultGaleraSamples is how many steps of a Galera cluster's write frontier the lag
// of replica reads keeps (count, 256: at one step per probe round of continuous writes,
// 25 s at checkInterval=100ms and over 4 minutes at 1s, beyond any useful
// maxReplicaLag; a node further behind is reported at least that far).
const DefaultGaleraSamples = 256

// Host lists (hostlist.go).
const (
	// DefaultMaxHostListBytes caps the body of a host-list response (bytes, 1 MiB,
	// far more than any real list needs): a larger body is an invalid list.
	DefaultMaxHostListBytes = 1 << 20
	// DefaultHostListTimeout bounds each request of an HTTPHostList built without a
	// client (duration, 5 s, as http.Client.Timeout), on top of the caller's context.
	// net/http measures it on the wall clock, as a context's deadline.
	DefaultHostListTimeout = 5 * time.Second
	// DefaultMaxHostListRedirects is how many same-origin redirects a host-list request
	// follows (count, 10, as net/http's default policy).
	DefaultMaxHostListRedirects = 10
	// DefaultMaxEcho caps how much of a host-list entry (or of the provider's words) an
	// error quotes (bytes, 100): enough to recognise it, too little to flood a log.
	DefaultMaxEcho = 100
)

// DefaultIdleCheck (internal/conn) is how long a connection may sit unused (duration,
// 1 s) before its next call first runs go-sql-driver's liveness check (a non-blocking
// read, no round trip). database/sql runs that check itself (through ResetSession) only
// when it hands a pooled connection out, not between the calls of a pinned *sql.Conn or
// a transaction: without this, a session the server closed while it sat idle
// (wait_timeout, a KILL of a sleeping connection) would fail its next statement with
// mysql.ErrInvalidConn, and its transaction would be lost without need.
const DefaultIdleCheck = time.Second

// DefaultReplicaMaxIdle is how long a shared replica session may sit idle (duration, 30
// s) before the pool closes it, at its next take or give-back of any replica session
// (replicapool.go): after a burst of reads, the sessions it opened go again within a
// minute, while a steady load keeps the ones it uses.
const DefaultReplicaMaxIdle = 30 * time.Second

// DefaultCausalReadsTimeout is the replica's wait for a causal read's position when the
// configuration gives none (duration; dsn's causalReadsTimeout default is the same).
const DefaultCausalReadsTimeout = time.Second

// DefaultReplicaTries is how many replicas one read-intent statement tries, at most,
// before it goes to the primary (or fails, with readFromSourceWhenNoReplicas=false): a
// replica whose session cannot be opened or fails the statement before its result is
// left for the next (count).
const DefaultReplicaTries = 3

// Settling a COMMIT or a write whose outcome is unknown (settle.go): the old session's
// server thread is killed through a new session, and the process list is read until it
// is gone (Kill, for a read, stops after the KILL, within the same bound).
const (
	// DefaultSettleTimeout bounds the whole of it (duration, 5 s, the DSN's default
	// hostTimeout): a KILL ends a semi-synchronous wait at once, and a thread that
	// lingers longer (a server that is stalled) leaves the outcome unconfirmed.
	DefaultSettleTimeout = 5 * time.Second
	// DefaultSettlePoll is the first wait between two reads of the process list
	// (duration, 5 ms: a killed thread usually ends within a millisecond or two);
	// each later wait doubles, up to DefaultSettleMaxPoll (duration, 200 ms).
	DefaultSettlePoll    = 5 * time.Millisecond
	DefaultSettleMaxPoll = 200 * time.Millisecond
)

// The logger (event.go).
const (
	// DefaultLogRepeat is how often a failure that goes on (a dead primary's failed
	// fall-backs, a host's failed probes) is told again at Warn, with the count of the
	// same failures logged at Debug since (duration, 1 min): an operator reading the log
	// of an outage sees that it lasts without a line per attempt.
	DefaultLogRepeat = time.Minute
)

// DefaultWriterLookAge is how long a look at the writable hosts stands (duration, 5 s;
// writers.go): the fall-backs, new connections and probes within it decide by its
// answer, and a split brain that lasts costs every listed host one short session per
// DefaultWriterLookAge, never one per statement or connection.
const DefaultWriterLookAge = 5 * time.Second

// Discovery (discover.go, discoverHosts): the cluster's members are read once per
// checkInterval, on the pool's host, over its probe connection.
const (
	// DefaultDiscoverMisses is how many reads in a row must miss a member found before it
	// leaves the host list (count, 3: a member that a read misses while it rejoins, or
	// while the view changes, stays; one gone leaves within three checkIntervals).
	DefaultDiscoverMisses = 3
	// DefaultDiscoverRetry is how long after a read the server refused (a missing
	// privilege) the next one is made (duration, 1 min: a grant is seen within a minute,
	// and a fleet without the privilege costs the server one refused query per instance
	// a minute).
	DefaultDiscoverRetry = time.Minute
)
