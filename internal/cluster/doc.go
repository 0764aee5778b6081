// Package cluster is the engine of mysqlfailover: the failover state that every pooled
// connection of one connector shares (the Cluster), and the mechanisms that move it. It
// knows nothing of database/sql pooling. Package conn (internal/conn) drives it, one
// call per event in a connection's life; the driver's Connector (the module root) makes
// one Cluster per connector and closes it with the pool. What users see of the engine
// (errors, events, Stats, roles, host-list types) is in the public package failover,
// the Policy interface in package policy; this package imports both and is internal.
//
// # Configuration
//
// New takes the connector's *dsn.Config and reads each failover option where it is used
// (retriesAllDown, secondsBeforeRetryMaster, queriesBeforeRetryMaster, hostTimeout,
// targetSessionAttrs, localDC, usedHostsPerRemoteDC, checkInterval, failoverDelay,
// switchBackDelay, calmCheckInterval) and its Hosts (Addr, DC) as the first host list; nothing is copied.
// An Env carries what no DSN can say: the dialer, the clock, the event hook and logger,
// the user's policy layers, a host list provider, and the abort hook. The engine's own
// tuning values, which no user sets, are the Default... constants of defaults.go.
//
// # The mechanisms, by file, and the state each owns
//
// Each mechanism is a group of files that owns its state under its own lock and reaches
// the others through a few methods. Its methods belong to its own type, a field of the
// Cluster (named below); the Cluster is the facade that composes them: the exported
// methods that package conn and the driver call, the position, and emit. A mechanism
// that needs much of the others holds a back-pointer to the Cluster (c); one that needs
// little is given it (settings, a func, a small interface). What every mechanism needs
// of a host stays in its
// hostState (health.go); the per-host records of the monitor, of replica reads and of
// Galera's view are parts of it with locks of their own. The lock order is given at the
// top of each owning file: the Cluster's mu and inUse first, then a hostState's mu, then
// the record locks (monitorHost's, replicaRecord's, galeraView's, the Galera frontier's),
// which are taken one at a time and never held while another lock is taken.
//
//   - cluster.go: the Cluster, New, Close, emit; settings (Cluster.cfg), the *dsn.Config
//     and what follows from it alone (passes, the probes' periods and timeouts, whether
//     fall-back is on, the target).
//   - position.go, topology.go: the pool's position (the host list in force and its
//     versions, SetHosts; the active host, the last-resort flag, the fall-back clock, the
//     counts of moves). Owns Cluster.pos, changed only under Cluster.mu and published
//     whole, so that Place, Home and Active, which run before every statement, cost one
//     atomic load; inUse keeps host ids from being reused while they are held. A new
//     list is hostLists' (Cluster.lists: newTopo, set, put, apply).
//   - walk.go, attempt.go: the host walk of Connector/J's FailoverConnectionProxy over
//     one flat ordered list (a plan, its order per pass, retriesAllDown passes, the error
//     that names every host: walker, Cluster.walks) and one bounded host attempt (dial,
//     state check, set-up: attempter, Cluster.att; its options are attemptOpts).
//     A walk owns only its own walkRun; its outcome reaches the position through landed
//     (under Cluster.mu) and the host's health through recorder's attemptSucceeded and
//     attemptFailed, and noteConnectTime (under hostState.mu).
//   - storm.go: a new session whose handshake the pool's host closed (an overloaded
//     listener): tried again on the same host with jittered pauses (attempter.patient,
//     closedAgain),
//     and blamed on the host only when it showed no sign of life meanwhile (life: the
//     host's answers count, which every passed attempt or probe moves, and the socket
//     tracker's reads, Env.Answers) and nothing else blames it. Owns no state beyond
//     hostState.answers and two Stats counters (attempter's atomics).
//   - flight.go: one walk per pool after a failure (Failover; walker.lead). Owns
//     Cluster.flight, under Cluster.mu: the other connections that fail meanwhile wait
//     for it.
//   - fallback.go: the return home without probes: the clock and counter (Cluster.ran,
//     atomic; the clock is in the position) and the one attempt at a time
//     (Cluster.fallingBack, under Cluster.mu; TryFallBack; walker.findHome).
//   - verdict.go: whether a failed session means a failed host (Recover; walker.checked;
//     attempter.knownDown), and the patience owed to a full host (attempter.patient).
//     Owns the same-host check in progress (hostState.check, under hostState.mu, read
//     together with the host's backoff and the monitor's verdict).
//   - health.go: what every mechanism knows of a host (hostState: its role and fitness,
//     readiness, backoff after failed attempts, state and last error, typical connect
//     time, connections out), under hostState.mu; health, the copy walks and checks read;
//     recorder (Cluster.rec), which records what attempts and probes learn of a host
//     (backOff, attemptFailed, attemptSucceeded, reportState, setRole; ready.go's
//     noteState, setReady); and Stats.
//   - monitor.go, cadence.go, probe.go, roleselect.go, decide.go, monitorhost.go, rto.go:
//     the monitor, with checkInterval > 0 (Start, Check): the type monitor (Cluster.mon),
//     which owns the monitor goroutine, the probe connections, the events' alerts, the
//     calm phase and the abort count. monitor.go schedules probes and
//     host-list polls; cadence.go says which hosts are on the alert schedule and which
//     on the calm one (the monitor goroutine's cadenceRun, and alerts, the events'
//     holds, under its own lock, taken alone; Env.Waiting, the traffic's waits);
//     probe.go is one probe (its bounds, the probe dial, the round trip, the lag read,
//     pause detection, the host's transition; a failed one, or one whose connection
//     broke, marks the host's idle replica sessions for a check) and owns the probe
//     connections (monitor.probes, a probeSet, its own lock), kept only for hosts where
//     the pool lends no idle session (Env.Borrow), and handed to the walk that moves the
//     pool to their host when a probe passed on them within watchEvery (probeSet.adopt,
//     from attempter.session: a fleet that moves needs no handshake); roleselect.go is the SELECT of
//     @@global values a host's probes learn from RoleQuery (hostState.roleSel, an
//     atomic pointer); decide.go moves the pool on the results (and SwitchTo), through
//     moveFrom under Cluster.mu. monitorhost.go is the monitor's per-host record
//     (monitorHost: the verdict down, the runs of failed and passed probes, the RTO
//     estimator of rto.go, the last probe's latency, the requests to probe again and to
//     abort), under its own lock; other mechanisms read it through its methods, and a
//     walk that left a host after a failure asks for its abort (leftAfterFailure). A
//     probe's result reaches the host's health under hostState.mu (probeFailed,
//     probePassed).
//   - replicas.go, replicarecord.go, replicapool.go, lag.go, gtid.go: replica reads
//     (replicaReads; Replicas, Cluster.replicas, is what package conn calls): the set of
//     hosts that qualify as replicas (not the writer, healthy, read-only, within
//     maxReplicaLag, local DC first), published whole and rebuilt when the position or a
//     probe result changes (replicaState, Cluster.rep: atomics and one build at a time);
//     the choice of one (rendezvous hashing of a routing key, round-robin,
//     least-in-flight); replica sessions (Replicas.Open) and the pool of them the
//     connections share (replicaPool, Cluster.rpool, its own lock); the lag the probes
//     read (ReadLag);
//     the GTID positions and waits of causal reads. replicarecord.go is the per-host
//     record (replicaRecord: lag, the status query's form, the set's verdict, read
//     counters), under its own lock.
//   - ready.go, galera.go: whether a host is ready for application use, in its server's
//     words: the cluster type (Kind: dsn's cluster option, or learnt; Cluster.kind,
//     atomic), ReadState, the refusals of a server that is not ready (Refusal, the
//     NotReady class), and what the Cluster records of them (recorder's noteState,
//     NoteRefusal, into
//     hostState.notReady and role under hostState.mu). galera.go: Galera's replica reads
//     and lag (the frontier, its own lock) and each host's view of its cluster
//     (galeraView, its own lock).
//   - writers.go: one writer. When more than one host of a replication cluster is
//     writable at once, a look at the hosts (their roles, whom their replicas follow)
//     chooses the writer: the one the cluster follows, then the one in use, then the
//     list's first; it is reported (EventTwoWriters, Stats.Writers). A fall-back never
//     moves the pool from one writable host to another unless the cluster follows home,
//     a new pool with a write target goes to the writer, and the monitor moves the pool
//     to it. Owns Cluster.writers (writerState: the last look, its own lock, taken alone;
//     the look is its method, lookAt). The rules that use the look are the walker's
//     (firstWriter, fallBackGate) and the monitor's (moveToWriter, returnBlocked).
//   - hostlist.go: host lists from a provider (HTTPHostList, immutable: it owns no
//     state) and their validation; the monitor polls it and SetHosts applies the answer.
//   - discover.go: discovery (discoverHosts): the members the cluster reports, read
//     once per checkInterval over the pool's host's probe session (monitor.probeDiscover),
//     join the list after the base (the DSN's hosts or the provider's last list): one
//     list, composed and applied by hostLists.apply. A member is known by its address and
//     its identity (State.Ident, which every state read records: recorder.noteIdent), leaves
//     after DefaultDiscoverMisses reads that miss it, and a base host never leaves.
//     Owns Cluster.disc (the base, the members found, the read's schedule and note;
//     its own lock, and the apply lock taken before Cluster.mu); the topo records where
//     each member came from (topo.from).
//   - policy.go, role.go, classify.go, txcount.go: the built-in policies, server roles,
//     error classification (Classify; Judge adds a refusal's *NotReadyError, for a
//     connection's failure), the counters of transactions run again (atomics). What a
//     server's error number or answer means is not decided here: package dialect
//     (internal/dialect) names each number and reads rows and values; this package
//     judges what to do.
//   - settle.go: a COMMIT or a write whose outcome is unknown, settled (Settle: KILL of
//     the old session's server thread through a new session, then the process list until
//     it is gone; Kill: the KILL alone, for a read), and Socket, what the connector's
//     socket tracker learns of a physical
//     connection (bytes written, the server's id of the session). It owns no shared
//     state: a Socket's atomics belong to its physical connection.
//   - clock.go, errors.go, event.go, defaults.go: time, the engine's error types, log
//     records (logRuns, Cluster.logs), tuning values.
//
// # How it is driven
//
// conn.Open asks Connect for a physical connection on the pool's host (the walk, when it
// does not answer). Before each statement a connection asks Place: PlaceHome, nothing to
// do (the hot path); PlaceActive, the pool is away from home, so it may first call
// TryFallBack, and it counts the statement with NoteStatement; PlaceAway, the pool has
// moved (or the host is unfit for the target), so it joins it through Connect, before it
// sends anything. On a communication error on its session it calls Recover, which decides
// between a new session on the same host and Failover, the walk to the next host; a write
// rejected as read-only makes it read the role and report it (NoteRole). It calls Release
// for every physical connection it closes, and its ResetSession (database/sql's check
// before reuse) consults Active and Unfit. The Connector calls Start on every new
// connection (the monitor, once, with checkInterval > 0), and exposes SwitchTo and
// Stats; Close stops everything.
//
// # The shared state
//
// One Cluster serves every pooled connection of one connector. It holds the index of the
// active host, the host the pool uses. A connection that finds its host is no longer the
// active one moves at its next safe point, before it sends anything, so a single failure
// moves the whole pool and the other callers see no error.
//
// # The walk
//
// Connect (a connection joining the pool) and Failover (a connection whose host failed)
// walk the host list the way Connector/J's FailoverConnectionProxy does. A first
// connection tries the primary, then the secondaries in DSN order. After a failure on
// host k the walk goes round-robin from k+1 and ends the pass with k itself; while
// fall-back is enabled but not due, the primary is skipped in the first pass and included
// from the second; when fall-back is due, the primary is tried first. Each pass may be
// followed by another, retriesAllDown in all, with DefaultPassPause (250 ms) between
// them; the pause ends early when the pool moves or a host comes to qualify (passNews),
// and while hosts answered with a role the target does not want it reads their roles
// again every DefaultRolePeek on the probes' idle sessions (walker.pause): a promotion is
// taken within that, without a handshake. Every host attempt (dial, handshake, session
// set-up) is bounded by hostTimeout and by the caller's context, which also bounds the
// walk. A failure that belongs to the host (it is unreachable, slow, full, of the wrong
// role, fails the TLS handshake, greets wrongly) moves the walk to the next host; a server's refusal every host would repeat
// (access denied, unknown database) ends it. A walk that finds no host returns a
// *failover.NoHostAvailableError naming every host and its last error, or why it was not
// tried.
//
// # A refusal is not a death
//
// A server that answers but says it is not ready (Galera outside the Primary component,
// offline_mode, a group member not ONLINE: see ready.go) is neither down nor a dead
// session: its host becomes not ready (unfit, as a host of the wrong role: Place sends
// its connections away, the monitor leaves it, healthy and the walks' attempts refuse it)
// until a read of its state says it is ready again. The refusing connection moves with
// Recover, which goes straight to Failover for a *NotReadyError, without backoff.
// A server that stops being ready while it runs a statement and says so (Galera's 1180
// "Not connected to Primary Component" at a commit it could not replicate: LostPrimary,
// the NotReadyMidway class) is left the same way, but what it ran may have taken effect:
// nothing runs again.
//
// # A dead session is not a dead host
//
// A communication error on an established session proves only that the session died.
// Recover decides: from what the Cluster knows (probes, a failed attempt a moment ago,
// the server's own words), or with one quick attempt on the same host, shared by the
// sessions that fail together. A host that answers keeps the pool, and the connection
// gets a new session there; only a host that does not answer is left (Failover). A host
// that answers full (1040, 1203) is waited for, never left by the connections that join
// the pool. So is a host that closes a new session's handshake while it answers the
// connector's other sessions (storm.go): a connection storm on a healthy primary (a
// deploy, an autoscaling step) must not scatter the fleet onto a read-only secondary.
// A refused dial and a handshake that times out (a frozen host) are the host's.
//
// # Fall-back
//
// Once the pool is on a secondary it returns to the primary when
// secondsBeforeRetryMaster seconds have passed or queriesBeforeRetryMaster statements ran
// since it left (both 0: never; the primary is then an ordinary member of the rotation).
// Connections check this only at safe points, before a statement outside a transaction,
// and one connection at a time makes the attempt (TryFallBack). If the primary does not
// answer, the pool stays and both clocks restart, silently. A fall-back never moves the
// pool from one writable host to another (writers.go): with the primary writable beside
// the pool's host, the pool returns only if the cluster's replicas follow the primary.
//
// # Active health
//
// With checkInterval > 0, Start runs a monitor that probes every host, each on a
// fixed-rate schedule of its own, on one of two cadences (cadence.go): the alert
// schedule (the active host twice per checkInterval, the others once) while the host
// looks wrong or just changed to a role that does not qualify, or a statement has waited
// for its answer for checkInterval/2 (Env.Waiting); watched (every
// calmCheckInterval/DefaultWatchDivisor) while the pool's host looks wrong or the pool
// just moved (its new host too: every instance of a fleet moves to the new primary at
// once), and while a host is declared down; the calm one (once per calmCheckInterval, at
// a random phase) otherwise, so that an idle fleet costs each host little. A wait counts
// from the host's last answer to any session: a host that answers others is busy, not
// silent. A probe reads the role with
// the SELECT learned from RoleQuery (roleselect.go); the pool's own host, while its role
// qualifies, has it read once per watch period and is only pinged (SELECT 1) in between.
// It polls the
// HostListProvider and moves the pool itself: away from an active host that failed its
// probes for failoverDelay, back home after switchBackDelay of passed probes (see
// Check and monitor). A probe waits long enough for a host that answers late (a stall
// of up to 200 ms) not to be taken for one that does not answer (rto.go,
// defaults.go). The fall-back clock and counter are then not used. SwitchTo moves the
// pool on an operator's request.
//
// # Classification
//
// Classify sorts errors into Data (returned untouched), Communication (the session is
// gone, or a host did not answer in time) and Canceled (the caller's context ended, read
// from the context itself; the host is fine). Errors this package returns never match
// driver.ErrBadConn (dialect.NotBadConn cuts that chain), because database/sql repeats any call
// that fails with it.
//
// # Concurrency
//
// Every method is safe for concurrent use, and no lock is held while dialing, sleeping
// or reporting an event. The Cluster has one mutex: every change of the position is made
// under it and published as a new immutable position (one atomic pointer), and it also
// guards the one fall-back claim, the walk in flight and the monitor's start and stop.
// Beside it stay four atomics, each for a reason given at its field: the statement
// counter (it moves with every statement away from home), the closed flag, the abort
// count, and the count of the monitor's probes in flight (for tests that step its
// clock). Each host has one mutex for its health (hostState.mu) and an atomic count of
// its physical connections that are out; its monitor, replica and Galera records have a
// mutex each, taken after the host's when both are held (see the mechanisms above). The
// read lock inUse keeps host ids from being reused while an operation holds them (see
// SetHosts); the probe connections have their own small lock. All time comes from the
// Clock, except a caller's deadline and a context's bound, which only the wall clock can
// measure (clock.go).
package cluster
