// Package failover holds what users see of mysqlfailover's failover model: the
// errors a call may return (FailoverError, NoHostAvailableError and its
// HostError entries, ErrTxLost, ErrCommitOutcomeUnknown and CommitUnknownError,
// ErrClosed), the
// events and Stats that report what a pool does, the Role of a server and the
// host list provider (HostListProvider, ProvidedHost); the host policy types
// are package policy's. The driver is package
// mysqlfailover, which documents what a caller sees; the engine that uses these
// types is internal. Nothing here has to be called for failover to work: the
// DSN options (package dsn) choose the model, and this package describes it.
//
// # Host order
//
// All connections of a pool share one active host. A walk (a connection that
// opens, or one whose host failed) tries hosts in Connector/J's order: a new
// pool tries the primary, then the secondaries in DSN order. After a failure on
// host k the walk goes k+1, k+2, ... and ends the pass with k; while fall-back
// is enabled but not yet due, the primary is left out of the first pass (and
// tried from the second). Passes repeat, 250 ms apart, as many as retriesAllDown
// says (package dsn).
// Once the pool has failed over, a new connection tries the pool's host first:
// new connections follow the pool, and the way back is the fall-back rules
// (package mysqlfailover). localDC, targetSessionAttrs and policy layers
// reorder and filter each pass.
//
// A host whose connection attempt failed (refused, timed out, access denied:
// credentials can be rotated, so that too is never final) is skipped by new
// connections for 250 ms, then 500 ms, 1 s, 2 s, 4 s, at most 8 s per
// consecutive failure, as long as a healthy host is in the plan (one that
// answers with a role targetSessionAttrs accepts: read-only standbys do not
// keep a writer in backoff); a success or a passing probe clears it. When every
// host is failing, each walk tries them all, pass after pass.
//
// When many connections fail at once, one walk finds the next host for the
// whole pool; the others wait for it (each within its own context) and then
// open their own connection to that host, spread over up to 2 ms per waiting
// connection (at most 200 ms). A dead host gets one attempt per pass from the
// pool, not one per pooled connection.
//
// # Roles
//
// MySQL and MariaDB have no recovery mode; orchestrators mark replicas with the
// global read_only (MySQL also super_read_only). With targetSessionAttrs other
// than any, every host attempt reads them with one query (SHOW GLOBAL
// VARIABLES WHERE Variable_name IN ('read_only', 'super_read_only',
// 'transaction_read_only', 'tx_read_only'), which works on every version and
// needs no privilege), and the walk skips a host that does not qualify as if it
// had failed; its HostError reads "skipped: role is standby, wanted
// read-write":
//
//	targetSessionAttrs  a host qualifies when
//	any (default)       always; no query is sent
//	primary             read_only and super_read_only are OFF
//	read-write          as primary, and transactions start read-write (global
//	                    transaction_read_only, tx_read_only on older servers, OFF)
//	standby             read_only or super_read_only is ON (any value but OFF)
//	read-only           as standby, or transactions start read-only
//	prefer-standby      as standby; when no standby answers in a pass, the first
//	                    other host that answered is used as a last resort
//
// With read-write or primary the walk keeps the primary in its first pass (the
// writer may be anywhere after a promotion), hosts whose last check found the
// wrong role are tried last, and failOverReadOnly does not apply: a host that
// passed the check is a writer wherever it is in the list.
//
// A demoted primary is found by its answers. With read-write or primary, a
// statement rejected with 1290 or 1836 on a host believed writable makes the
// connection read the role again (1290 is also --secure-file-priv and others:
// if the host still qualifies, the error is returned untouched). If the host
// became read-only, the whole pool moves to the writable host, and the
// statement, which did not run, runs again there; the caller sees no error
// (with multiStatements it sees a FailoverError with MaybeExecuted instead,
// and inside a transaction ErrTxLost with a FailoverError whose Err says
// "demoted" and wraps the server's error). 1792, a write in a read-only
// transaction, comes from the session itself and never moves anything. A
// promotion (node 2 made writable, node 1 read_only=ON) thus moves all writes
// to node 2 at the first rejected write, without a restart.
//
// Fall-back keeps its rules. With any, read-write and primary the pool returns
// to the primary, and the attempt also checks the role, so after a promotion
// it fails quietly (the clocks restart) until the primary qualifies again. With
// standby, read-only and prefer-standby the primary is a writer and never the
// way home: any local standby is home, so a pool that moved from one standby to
// another stays there; with localDC a pool on a remote standby returns to a
// local one, and a prefer-standby pool that had to take a non-standby looks for
// a standby again, each by the same clocks (one strict pass over the local
// hosts).
//
// # Two writers
//
// One writer: the pool never moves from one writable host to another by
// fall-back. An old primary that comes back with read_only=OFF after a
// promotion (a fencing hook that failed) takes writes its replicas never see;
// so does a replica whose read_only was forgotten. When the primary and the
// pool's host are both writable, the driver looks at the hosts: on one short
// session each it reads the role, the server_id, whom the server replicates from
// (SHOW REPLICA STATUS: REPLICA MONITOR on MariaDB, REPLICATION CLIENT on MySQL)
// and the replicas registered with each writer (SHOW REPLICA HOSTS: REPLICATION
// MASTER ADMIN on MariaDB, REPLICATION SLAVE on MySQL; either privilege is
// enough). The writer is the host most replicas follow, then the one the pool
// writes to, then the list's first. A fall-back goes on only to that writer; a
// new pool with targetSessionAttrs read-write or primary looks at the hosts at
// its first connection and goes to it; with probing (checkInterval) the monitor
// moves the pool to it once it has passed its probes for switchBackDelay. A look
// stands for 5 s, so a split brain that lasts costs each host one session per 5
// s at most; otherwise a look costs each host one session per new pool with a
// write target, and per fall-back to a writable primary. Never one per
// statement. The two writers are reported:
// EventTwoWriters (once per set of writers), Stats.Writers, the metrics, and
// `mysqlfailover check`, each naming both hosts with the fix: fence the one no
// replica follows (SET GLOBAL read_only=ON on it, or stop it).
//
// With targetSessionAttrs any the list names the primary and no role is read
// when connecting: a new pool takes the list's first host, as it always did. A
// fall-back reads the primary's role on its new session (one query) and, when
// it is writable, looks at the hosts as above: a pool on a writable secondary
// (a promotion the DSN has not caught up with) stays there unless the cluster
// follows the primary. With failOverReadOnly (the default) its sessions there
// are read-only, so its writes fail (1792, counted in Stats.WriteRefusals)
// rather than land on a server whose data diverged: fence the old primary, or
// use targetSessionAttrs=read-write, which finds the writer.
//
// Galera clusters (every node writes) and Group Replication (the group names
// its primary; secondaries are super_read_only) have their writers by design:
// none of this applies to them.
//
// # Readiness
//
// A server that answers may still say it is not ready for application use, and
// the driver believes the server's word over the socket's. Such a host is
// HostNotReady: no walk, connect or fall-back chooses it, the pool leaves it
// (at once, with probing: it said so itself), and it is used again once a read
// of its state says it is ready (with probing, after switchBackDelay of ready
// probes for a return home). What "ready" means depends on the cluster type,
// which dsn's cluster option names (auto by default: the servers say):
//
//	type         ready when
//	galera       wsrep_ready=ON, wsrep_cluster_status=Primary, wsrep_local_state
//	             4 (Synced), or 2 (Donor/Desynced) while it donates with a state
//	             transfer that does not block it (wsrep_sst_method mariabackup,
//	             xtrabackup, clone: MaxScale galeramon's available_when_donor),
//	             wsrep_desync=OFF, wsrep_reject_queries=NONE, and not in a
//	             smaller cluster (wsrep_cluster_state_uuid, wsrep_cluster_size) than
//	             another listed node's (a minority bootstrapped apart)
//	group        its performance_schema.replication_group_members row says
//	             ONLINE, and fewer than half of the group's members are
//	             UNREACHABLE from it (it has quorum); the role is super_read_only's
//	replication  always (a server that answers is ready)
//
// and for every type, offline_mode OFF. The state is read in the role query's
// round trip (its variables include offline_mode, wsrep_on, wsrep_desync,
// wsrep_reject_queries, wsrep_sst_method and group_replication_group_name),
// plus one for Galera (SHOW GLOBAL STATUS) or Group Replication (the member
// query): at every connect and fall-back attempt of a Galera or Group
// Replication pool, by every probe, and with cluster=auto by the first
// connection of a pool of several hosts, to learn the type (one round trip per
// pool). A replication pool with targetSessionAttrs any reads nothing more.
//
// A refusal is not a death. A server that is not ready refuses statements
// while its sessions live: a Galera node outside the Primary component answers
// SELECT 1, SET, USE and SHOW but refuses everything that touches a table, BEGIN
// and COMMIT with 1047 (SQLSTATE 08S01), "WSREP has not yet prepared node for
// application use"; MySQL's offline_mode refuses sessions without
// CONNECTION_ADMIN with 3032, at connect and on their next statement; a Group
// Replication member that is not ONLINE refuses transactions that need its
// consistency with 3796 (3799 while the plugin stops). Nothing of the refused
// statement ran. The host becomes HostNotReady (not down: no backoff, no
// abort), the pool leaves it for the next ready host, and an autocommit
// statement runs there without the caller seeing an error; inside a
// transaction the caller gets ErrTxLost (SafeToRetry: RetryTransaction), and a
// refused COMMIT committed nothing (ErrTxLost, never ErrCommitOutcomeUnknown).
// At connect, 3032 moves the walk on to the next host: it is not a refusal
// every host would repeat.
//
// Galera writes. Every Galera node takes writes, but writers on several nodes
// at once meet as certification conflicts (1213 at COMMIT), so the pool writes
// to one node: the first ready node in DSN order, by the walk above (after a
// failure of node k, k+1 and on), and back to the first under the fall-back
// rules. DSN order is the same in every application instance, which so pick
// the same node without reading every node first; MaxScale's galeramon picks
// the lowest wsrep_local_index instead, which only a monitor that reads every
// node can know, which follows the nodes' UUIDs (not their numbers), and which
// changes when membership does. failOverReadOnly does
// not apply to Galera nodes: the node the pool moves to is as much a writer as
// the one it left. With replicaReads the other ready nodes serve reads (they
// are writable, yet replicas of the writer's writes here); a node's lag is how
// long ago the cluster first passed its wsrep_last_committed, the global
// sequence number of its last committed write set, to within a probe round
// (the receive queue says nothing of staleness), and maxReplicaLag bounds it
// as for replicas. Numbers count within one cluster history
// (wsrep_cluster_state_uuid): after the cluster is bootstrapped anew they start
// again, and so does the lag; a node in another history than the writer's
// (halves bootstrapped apart, another cluster) serves no reads. Causal reads
// (causalReads local or global) use the node's own
// causality check: its replica sessions run with wsrep_sync_wait=1, so a read
// first applies every write set the cluster committed before it began, bounded
// by the servers' repl.causal_read_timeout (past it the read goes to another
// node, then the writer).
//
// A Galera node cut off from the others does not know it at once: until it
// suspects them (evs.suspect_timeout, 5 s by default) and installs a view
// without them, its commits wait for the group, and a write may wait that long
// (measured with MariaDB 10.11 and galera-4: 6.1 to 6.5 s with Galera's default
// timeouts, 2.3 to 2.5 s with evs.suspect_timeout=PT2S; a readTimeout or
// deadline shorter than that ends it first, its outcome unknown). Then the node
// fails the commits it could not replicate with 1180, "Not connected to Primary
// Component", and refuses what comes next with 1047. That 1180 says the node is
// not ready: the connection and the pool leave it before the error returns. But
// the other nodes may have received the write set before they evicted the node,
// and then they committed it (8 of 60 such writes, measured), so nothing runs
// again: an autocommit statement returns a *FailoverError with MaybeExecuted
// wrapping the 1180 (SafeToRetry: RetryNothing, read the data), a COMMIT
// ErrCommitOutcomeUnknown, a statement inside a transaction ErrTxLost (nothing of
// it committed: the others roll back what they received of a transaction that
// did not commit).
//
// Stats shows such a host as HostNotReady with the reason in LastError, and an
// EventHostState (HostNotReady, Err saying why; HostUp on its return) reports
// each change.
//
// # Data centres
//
// With localDC, the hosts of that DC and the unlabelled hosts are local; of
// every other DC the first usedHostsPerRemoteDC hosts in list order are remote,
// and the rest are ignored: never connected to, and named as such in a
// NoHostAvailableError. Each pass tries the local hosts first, then the remote
// ones, each group in the usual rotation order. The primary, where the pool
// starts and falls back to, is the first local host. A localDC that matches no
// label is an error from dsn.Parse, sql.Open and NewConnector, which lists the
// known DCs: nothing waits for the first query to find out. Without localDC,
// labels are informational.
//
// # Host policies
//
// The plan of each pass is built by composable policies (localDC and
// targetSessionAttrs are built-in layers, mysqlfailover.WithPolicy adds yours):
// package policy has the types and the rules.
//
// # Active health
//
// Without probing (checkInterval 0, the default) the pool notices a dead host
// when a statement fails on it, and a host that hangs without resetting its
// connections costs the statements on it their readTimeout. With checkInterval
// set, each connector runs one monitor goroutine, from its first connection
// until Close (sql.DB.Close calls it).
//
// Probes. Each listed host (not those localDC or a policy ignores) gets a real
// SQL round trip, SELECT 1 (with targetSessionAttrs,
// replicaReads, a Galera or Group Replication cluster, or until the cluster
// type is known, the state read of Readiness, so that roles and readiness are
// learnt before a statement fails), on a session the pool holds idle on the
// host (outside any transaction, holding no session state; its next user waits
// for the probe to end), else on one long-lived probe connection of the host's
// own, opened again when it breaks and closed as soon as the pool holds an idle
// session there: an instance costs the primary no session beyond its pool's
// (Stats.ProbeSessions), and a replica that serves no reads one. No
// connect-and-drop, which servers count as aborted connects and may answer by
// blocking the client host (1129). The active host, the one the pool uses, is
// probed every checkInterval/2: how soon a probe starts after it froze bounds
// how soon the pool leaves it. Each host's probes keep a fixed rate of their
// own, one at a time (a probe starts a period after the previous one started,
// or as soon as that one ended when it took longer), and no host's probes wait
// for another's. How long a probe waits follows its host's own probe round
// trips, as TCP's retransmission timeout does, so that a host that answers
// late is not taken for one that does not answer: package dsn, section
// Options (checkInterval), has the formulas and the bound they set on
// detection. A probe connection the server closed (a KILL, a
// restart) is opened again within the probe: that is not a failed probe; a
// borrowed session on which a probe fails is closed, and its connection's next
// user gets a new one.
//
// Two cadences. A host that looks well is probed once per calmCheckInterval (2s
// by default, never more often than checkInterval), at a random phase of each
// connector, so that an idle fleet costs each host about one probe per instance
// every 2 s and its instances do not probe in step. A host is on the alert
// schedule above (every checkInterval; the active host every checkInterval/2)
// while it looks wrong or just changed: its probes fail, a connection or a walk
// failed on it, its server says it is not ready, its role changed or (the active
// host) does not qualify, and for 3 s after; the pool's host for 3 s after the
// pool moved; and, while the pool is away from home, a home host that qualifies.
// The other hosts are watched, probed every calmCheckInterval/4 (500 ms), while
// the active host looks wrong and for 3 s after the pool moved or the host list
// changed: a host the pool may move to has a recent probe, and a fleet whose
// primary died does not probe the rest of the cluster at the alert rate (a host
// found of another role by a connection's walk, a standby, does not look wrong:
// the walks read the role of each host they connect to). The
// traffic is the evidence that costs no host anything: a statement that has
// waited checkInterval/2 for its host's answer puts the host on the alert
// schedule at once (the connector watches its own sockets' reads), so a host that
// freezes under traffic gets its probe when the fixed schedule would have given
// it one, and the detection bound below holds. A statement sent to a host that
// froze while it looked well is answered from the next host (a read run again,
// as SafeToRetry allows) about checkInterval/2 plus the probe's wait later.
// calmCheckInterval=0 keeps every host on the alert schedule. A probe that times
// out while the connector's other sessions read from its host is no failure of the
// host, which is slow, not down; it is repeated at once. A host the pool
// does not use is declared down once its probes have failed for 1 s (or
// failoverDelay when longer): the verdict only keeps walks from trying it, and a
// new primary that a fleet's failover loads for a moment stays in the walks.
//
// Failover. When the active host has failed its probes without a pause for
// failoverDelay (at once when its role stops qualifying, or its server says it
// is not ready), the pool moves to
// the first host of the plan whose last probe passed. When the probes declared
// the host down (not for a role change), every socket to it is closed
// (EventAbort): statements in flight there fail at once with a FailoverError
// (inside a transaction, ErrTxLost) instead of waiting for readTimeout, and
// statements that start later never wait on it. A frozen (SIGSTOPped) primary
// is thus left within about checkInterval/2 plus its probe's wait. A
// connection's walk may leave the host first (a caller's deadline cuts an
// attempt on a hung host to a share of at least 250 ms); its sockets are then
// closed when the probes declare it down, all the same, so that no statement
// or handshake there waits for readTimeout or hostTimeout. With no healthy host
// to go to, the pool stays and keeps probing.
//
// Switch-back. Away from the primary (with a standby target: from a local
// standby), the pool returns once the primary (a local standby) has passed its
// probes without a pause for switchBackDelay: a primary that flaps never draws
// the pool back. The delays count from the first probe of the current run;
// any probe that breaks the run restarts it. With probing on,
// secondsBeforeRetryMaster and queriesBeforeRetryMaster are not used.
//
// Suggested settings: checkInterval=500ms&failoverDelay=1s&switchBackDelay=30s.
// Probing costs one connection per host per connector and one round trip per
// host per calmCheckInterval while all is well; the alert schedule (one per
// checkInterval, two for the active host) only while something looks wrong.
//
// # Controlled failover
//
// (*mysqlfailover.Connector).SwitchTo moves the pool to a listed host for an
// operator, before maintenance for example, as Pulsar's
// ControlledClusterFailover: one attempt checks the host (and its role), then
// connections move at their next safe point, never inside a transaction, and
// their callers see no error. The host becomes the primary, the one the pool
// returns to, until the next SwitchTo or a host list that differs from the
// current one.
//
// # Host lists
//
// With checkInterval set, the host list may come from hostsURL or from a
// HostListProvider given with mysqlfailover.WithHostListProvider, polled every
// checkInterval; each request is bounded by max(checkInterval, 500ms), at most
// hostTimeout, so a slower list
// server counts as failing. The DSN's hosts are the first list. The document
// hostsURL serves is
//
//	{"hosts": [{"addr": "10.0.0.1:3306", "dc": "east"}, {"addr": "10.0.0.2:3306"}]}
//
// primary first, each address with its port, "dc" optional. It is checked
// strictly: unknown fields, an empty list, a bad or repeated address, a bad
// label, trailing data and more than 1 MiB are rejected. The token is sent only
// to the URL's own origin (redirects elsewhere are refused). A failing or
// invalid answer keeps the last good list and is reported (EventHostList, the
// logger); the pool is never emptied. Give hosts the same dc labels as in the
// DSN: with localDC, a list without a local host is rejected, and a host whose
// label changes is a new host. A new list takes effect at safe points:
// connections on hosts that left it move, and when the primary changes (the
// first host; with localDC the first local one) the pool moves there.
//
// With discoverHosts=true the members the cluster reports join the list after
// the hosts of the DSN or of the host list: the replicas registered with the
// primary, a Galera cluster's nodes, a Group Replication group's members, read
// once per checkInterval on the pool's host (calmCheckInterval while it looks
// well: the read rides on its probe). It is one list: a member the DSN
// or the host list names is that host (also under another address, when its
// server_id, server_uuid or Galera node UUID is the listed host's), a host of
// the DSN or the host list never leaves, and a member found leaves once the
// cluster has stopped reporting it for three reads. A member found is used only
// once its probes found it ready and of the role wanted. HostStats.Origin says
// where each host came from (OriginDSN, OriginHostList, OriginDiscovered) and
// HostStats.Discovered since when; EventDiscovery reports each member found or
// dropped, and Stats.Discovery why discovery finds none (a missing privilege:
// the pool then works on the DSN's hosts). Package dsn's discoverHosts gives the
// queries and privileges; mysqlfailover.WithDiscoveryMap maps the addresses the
// cluster reports to the ones to dial.
//
// # Stats and events
//
// (*mysqlfailover.Connector).Stats returns a Stats: the active host, the
// primary, the counts of failovers, fall-backs and abort rounds, and per host
// (HostStats) its DC label, HostState, Role, last error, time of the last
// change, end of its backoff, last probe latency and open connections (probe
// connections included). mysqlfailover.WithLogger logs every state change
// (the driver is silent without it), and mysqlfailover.WithEventHook receives
// the same as Events (see EventKind), and also each passed probe
// (EventProbePassed, whose Duration is its latency) and, for a switch or a
// fall-back that a host walk made, how long the walk took (Event.Duration);
// neither ever carries a password. The metrics packages (metrics/prometheus,
// metrics/otel, metrics/expvar) are built on these two.
// mysqlfailover.ConnectorOf finds the Connector of any *sql.DB:
//
//	connector, err := mysqlfailover.ConnectorOf(ctx, db)
//	if err != nil {
//		return err
//	}
//	err = connector.SwitchTo(ctx, "db2:3306") // before maintenance on db1
//	for _, h := range connector.Stats().Hosts {
//		fmt.Println(h.Addr, h.State, h.OpenConns, h.ProbeLatency, h.LastError)
//	}
package failover
