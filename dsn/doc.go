// Package dsn parses and formats the data source names of the mysqlfailover
// driver: go-sql-driver/mysql DSNs with a list of hosts and the failover
// options of MySQL Connector/J. Its option table (see Options) is the one
// reference for every key. A program that builds its configuration in code
// parses the DSN here (Parse, or NewConfig for the defaults), adjusts the
// Config and gives it to mysqlfailover.NewConnector.
//
// # Syntax
//
// A DSN has go-sql-driver's shape, with a comma-separated host list where
// go-sql-driver has one address:
//
//	[user[:password]@][net[(host[:port][;dc=LABEL],host[:port][;dc=LABEL],...)]]/dbname[?param=value&...]
//
//	app:secret@tcp(db1:3306,db2:3307,[fd00::3]:3306)/shop?parseTime=true&retriesAllDown=3
//	app:secret@tcp(db1:3306;dc=east,db2;dc=west,[::1]:3308;dc=east)/shop?localDC=east
//
// The first host is the primary, the others are secondaries in order of
// preference, as in a Connector/J failover URL. A host without a port gets
// 3306; IPv6 literals go in brackets ("[::1]", "[::1]:3308"); no host list
// means 127.0.0.1:3306, as in go-sql-driver. net is tcp, tcp4 or tcp6 (absent
// means tcp), unix, or a network registered with go-sql-driver's
// mysql.RegisterDialContext (see Networks). The DSN is cut where
// go-sql-driver cuts it (the last '/', the last '@' before it, the first '('
// after that), so the password may contain '@', ':', '/' or '('. Host names
// are resolved when connecting, not when parsing: an unresolvable secondary
// is a host that is down. An empty entry, a bad port, unbalanced brackets or
// the same host twice are errors.
//
// # Networks
//
// Every network go-sql-driver accepts works, dialled as go-sql-driver dials it
// (package mysqlfailover, Networks and dialers, tells how):
//
//   - tcp, tcp4, tcp6: a host list of host[:port] entries, with failover.
//   - A registered network ("tunnel", Cloud SQL's "cloudsql-mysql"): a host
//     list too, with failover across it, but each entry is an address passed to
//     the registered function as it is written, with no default port:
//     "app@tunnel(db1:3306,db2:3306;dc=b)/shop", "app@cloudsql-mysql(project:region:instance)/shop".
//     An entry may carry ";dc=LABEL"; it must not contain ',', ';', '=',
//     parentheses or blanks, and needs an address list (go-sql-driver has no
//     default address for such a network). A network name is A-Z a-z 0-9 '-'
//     '_' '.'; whether it is registered is checked when the connector is made
//     (mysqlfailover.NewConnector, sql.Open): an unregistered one is an error
//     naming it.
//   - unix: exactly one socket path, "app@unix(/run/mysqld/mysqld.sock)/shop"
//     (/tmp/mysql.sock when absent, as in go-sql-driver). A socket is one local
//     server, so there is no failover: a list of sockets is an error (ErrNotTCP),
//     and so is hostsURL with unix. To fail over between local servers, list them
//     as tcp hosts; tcp and unix hosts cannot be mixed in one DSN.
//
// A host of a unix or registered network has Host.Port 0 and its whole address
// in Host.Name. udp, ip and the other packet networks are errors (ErrNotTCP).
//
// # Host attributes
//
// A host entry may end with attributes, each written ";key=value" after the
// optional port (and after the brackets of an IPv6 literal: "[::1];dc=east",
// "[::1]:3308;dc=east"). The only key is dc, the host's data-centre label
// (Host.DC): 1..64 bytes of A-Z a-z 0-9 '.' '_' '-', case-sensitive. A host
// without one has no label and counts as local. An empty label (";dc="), a
// character outside that set, another key (";zone=x", ";DC=x"), a key without
// "=" and dc given twice are errors, and so are ';' and '=' in host names.
// Labels do not make hosts different: "db1;dc=east,db1;dc=west" is the same
// host twice. Labels only matter with localDC; without it they are
// informational, printed by Host.String and kept by FormatDSN.
//
// # Options
//
// These query parameters belong to this package; go-sql-driver never sees
// them. Keys are case-sensitive. The Config fields have the same names,
// capitalised (RetriesAllDown, ..., LocalDC, HostsURL). The last column names
// the client the option comes from, and its name there when that differs.
//
//	key                           type          unit     default       meaning                                   from
//	retriesAllDown                int >= 0      passes   120           passes over the list, all hosts down      Connector/J
//	secondsBeforeRetryMaster      int >= 0      seconds  30            time on a secondary before fall-back      Connector/J
//	secondsBeforeRetrySource      alias                                of secondsBeforeRetryMaster               Connector/J 8.0.23+
//	queriesBeforeRetryMaster      int >= 0      count    50            statements on a secondary, the same       Connector/J
//	queriesBeforeRetrySource      alias                                of queriesBeforeRetryMaster               Connector/J 8.0.23+
//	failOverReadOnly              bool          -        true          sessions on a secondary read-only         Connector/J
//	readOnly                      bool          -        false         every session starts read-only            JDBC setReadOnly
//	hostTimeout                   duration      -        5s            bound on each host attempt                -
//	targetSessionAttrs            enum          -        any           which hosts qualify                       libpq target_session_attrs
//	localDC                       dc label      -        ""            data centre whose hosts come first        DataStax localDc
//	usedHostsPerRemoteDC          int >= 0      hosts    0             hosts used of each other DC               DataStax usedHostsPerRemoteDc
//	checkInterval                 duration      -        0 (off)       probe and hostsURL poll interval          Pulsar
//	failoverDelay                 duration      -        1s            failing probes before leaving             Pulsar
//	switchBackDelay               duration      -        30s           passing probes before going home          Pulsar
//	calmCheckInterval             duration      -        2s            probe interval of a host that looks well  -
//	hostsURL                      URL           -        ""            http(s) JSON host list, polled            -
//	hostsToken                    secret        -        ""            bearer token sent to hostsURL             -
//	hostsAllowHTTP                bool          -        false         plain http to non-loopback hostsURL       -
//	discoverHosts                 bool          -        false         hosts the cluster reports join the list   MySQL Router, ProxySQL
//	replicaReads                  bool          -        false         read intent goes to replicas              Connector/J jdbc:mysql:replication:
//	maxReplicaLag                 duration      -        0 (no bound)  lag above it: replica not used            MaxScale max_replication_lag
//	replicaSelection              enum          -        round-robin   which qualifying replica reads            MaxScale slave_selection_criteria
//	replicaPoolSize               int >= 0      count    0 (no bound)  most sessions open to each replica        ProxySQL max_connections
//	readFromSourceWhenNoReplicas  bool          -        true          no replica: read on the active host       Connector/J 8.0.23+ (default false)
//	readFromMasterWhenNoSlaves    alias                                of readFromSourceWhenNoReplicas           Connector/J 5.1
//	causalReads                   enum          -        none          replica reads wait for writes             MaxScale causal_reads
//	causalReadsTimeout            duration > 0  -        1s            bound of that wait, then the active host  MaxScale causal_reads_timeout
//	allowSourceDownConnections    bool          -        true          replica reads while no writer answers     Connector/J 8.0.23+ (default false)
//	allowMasterDownConnections    alias                                of allowSourceDownConnections             Connector/J 5.1
//	cluster                       enum          -        auto          cluster type: how readiness is read       -
//	transactionReplay             bool          -        false         replay a transaction after a failover     MaxScale transaction_replay, MariaDB Connector/J
//	transactionReplayMaxSize      size          bytes    1MiB          most a transaction records to replay      MaxScale transaction_replay_max_size
//	transactionReplayAttempts     int >= 0      count    5             replays per transaction                   MaxScale transaction_replay_attempts
//	transactionReplayTimeout      duration      -        30s           bound of the replays, 0: none             MaxScale transaction_replay_timeout
//
// DataStax is the Java driver's DCAwareRoundRobinPolicy, Pulsar the Java
// client's AutoClusterFailover, MaxScale MariaDB MaxScale's readwritesplit
// router; libpq's name is pgx's too.
//
// Integers are decimal; booleans are what strconv.ParseBool accepts
// (true/false/1/0 among others); durations are time.ParseDuration's ("5s",
// "500ms"), >= 0; sizes are decimal bytes, or with a KiB, MiB or GiB suffix
// (1024, 1024^2, 1024^3: "512KiB", "1MiB"). A key given twice must have the same value, and so must an
// option and its alias.
//
// retriesAllDown is the number of passes over the whole host list, 250 ms
// apart, before a walk that finds no host gives up; 0 means one pass
// (Connector/J would try a single host). With every host refusing, 120 passes
// take about 30 s: give calls a context, or lower it. A pause ends early when
// the pool moves or a host comes to qualify, and with probing on a walk that
// waits for a host of its role (a writer being promoted) reads the roles of the
// hosts that answered every 100 ms of the pause, on the probes' sessions. With a single host and
// no hostsURL it does not apply (package mysqlfailover, Networks and dialers).
//
// secondsBeforeRetryMaster and queriesBeforeRetryMaster: once the pool is on a
// secondary it tries to fall back to the primary after that many seconds or
// that many statements (counted over the whole pool), whichever comes first;
// 0 disables that trigger, and both 0 disable fall-back, as in Connector/J.
// With checkInterval > 0, switchBackDelay replaces both. Package mysqlfailover
// describes when a fall-back happens.
//
// failOverReadOnly makes sessions on a secondary (any host but the primary)
// read-only with SET SESSION TRANSACTION READ ONLY, since a secondary is
// usually a replica; it does not apply with targetSessionAttrs read-write or
// primary. readOnly makes every session read-only, the primary's too: it is
// the initial explicit flag of every connection, which the connection's
// SetReadOnly changes until database/sql hands the connection to its next
// user.
//
// hostTimeout bounds each host attempt: dial, TLS and MySQL handshake, role
// check and session set-up; 0 leaves only the caller's context (a connection
// that waits for a full host still gives up after 5 s). It exists
// because go-sql-driver's timeout parameter bounds only the TCP dial, so a
// host that accepts the connection and then hangs would stall the walk. When
// the caller's context has a deadline, an attempt also gets at most a share
// of the time left: half of it, but at least 250 ms and at least four times
// what this host's attempts usually take, so that a hung host cannot eat a
// short request deadline whole while a far one is not mistaken for a hung one.
//
// targetSessionAttrs is one of any, read-write, read-only, primary, standby
// and prefer-standby; package failover
// tells which hosts each value accepts. Values are case-sensitive:
// "read_write" or "Primary" is an error that says what was meant.
//
// localDC names the local data centre: it must be the label of at least one
// host, exactly (labels are case-sensitive); a localDC without labelled hosts,
// or matching none of them, is an error that lists the known labels.
// usedHostsPerRemoteDC is how many hosts of each other data centre may be
// used, the first ones in DSN order; a value > 0 needs localDC and labelled
// hosts. Package failover describes the order they give.
//
// checkInterval turns on active health and is the alert schedule: a host that
// looks wrong (its probes fail, a session or a walk failed on it, it is not
// ready, its role changed) is probed this often, the active host (the one the
// pool uses) twice as often, and hostsURL polled; 0 turns it off, and any other
// value must be at least 10ms. On this schedule each host's probes keep a fixed
// rate of their own: a probe starts checkInterval (the active host's,
// checkInterval/2) after the previous one of its host started, as soon as that
// one ended when it took longer, and no host's probes wait for another's.
// failoverDelay and switchBackDelay tune it (0: at the first failed or passed
// probe) and are ignored without checkInterval. A probe runs on a session the
// pool holds idle on the host when there is one, else on a probe connection of
// its own. Package failover describes the probes.
//
// calmCheckInterval is the probe period of a host that looks well (raised to
// checkInterval when shorter), on a grid of each connector's own random phase:
// an idle instance costs each host one probe per calmCheckInterval. A host is on
// checkInterval's schedule while it looks wrong and 3 s after, and so is the
// pool's host 3 s after the pool moved; the other hosts are watched, every
// calmCheckInterval/4, while the active host looks wrong and 3 s after the pool
// moved; away from home, a home host that qualifies is on checkInterval's
// schedule (its probes time the fall-back); and a host on
// which a statement has waited checkInterval/2 for an answer is at once (the
// connector watches its sockets' reads), so the detection bound below holds for a
// host that freezes under traffic. A host that freezes while idle is found by
// the next statement that waits for it, or by its next calm probe. 0 keeps every
// host on checkInterval's schedule, as before the option existed.
//
// Probe timeouts have no option: each host's follows its own probe round
// trips, as TCP derives its retransmission timeout (RFC 6298). With R the
// duration of each passed probe's round trip, the first R sets SRTT = R and
// RTTVAR = R/2, and each later one sets RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|
// when |SRTT - R| > RTTVAR, else RTTVAR - 1/16 (RTTVAR - |SRTT - R|), then
// SRTT = 7/8 SRTT + 1/8 R. (RFC 6298 lowers RTTVAR by a quarter too; here, as
// in Linux's TCP, it falls more slowly, so that a host whose answers stall now
// and then, a CPU-starved server, keeps a stall in its timeout for some 11
// probes, half of it.) The host's probe timeout is
//
//	RTO = min(SRTT + max(50ms, 4 x RTTVAR), hostTimeout)   (5s when hostTimeout is 0)
//
// and max(checkInterval, 500ms), at most hostTimeout, before its first passed
// probe. A probe waits for its answer, on its own connection,
//
//	W = max(3 x RTO, SRTT + 200ms + 25ms)                  (at most the same cap)
//
// 3 x RTO being RFC 6298's first timeout and the doubled one after it (a
// repeated request would only queue behind the unanswered one), and SRTT +
// 225ms the stall an alive host may have: a host whose round trips have been
// steady (RTTVAR small) must not be left when its latency steps or jumps by up
// to 200 ms (an fsync stall, a noisy neighbour; Linux's TCP keeps its timeout
// at least 200 ms for the same reason), with 25 ms for the scheduling of this
// process and the server's. An answer however late is a sample. A probe that
// gets none fails, gives no sample (Karn's rule), doubles RTO until a probe
// passes (to at most max(checkInterval, 500ms) or 2 x RTO, whichever is more),
// and is repeated at once, on a new connection opened within RTO or 4 times
// the host's typical connect time C, whichever is more; but within such a run
// of failed probes a probe (its round trip, or the opening of its connection)
// waits no longer than the run has left of failoverDelay, and at least 50ms,
// so that the doubling does not overshoot it. Once the probes declared a host
// down its probes wait RTO. A refused, reset or closed connection fails a
// probe at once. A timeout that fires more than 25ms late (this process was
// not running: an overloaded machine) says nothing of the host, once in a row:
// the probe is repeated at once, as Cassandra's failure detector ignores its
// own pauses. HostStats.ProbeTimeout (Stats) shows each host's W.
//
// So an active host that hangs (frozen, blackholed: its sockets stay open,
// nothing answers) is left, after the fault, within
//
//	checkInterval/2 + W                           when failoverDelay <= W
//	checkInterval/2 + failoverDelay + 50ms        otherwise
//
// (the first probe after the fault starts within checkInterval/2, and the pool
// moves as soon as it fails). For a host whose probes take 1 ms
// (SRTT 1ms, RTO 51ms, W 226ms) at checkInterval=100ms&failoverDelay=100ms:
// 50 + 226 ms, about 0.28 s (measured: 0.26 s at the median, 0.28 s at most,
// BENCHMARKS.md); at checkInterval=200ms&failoverDelay=500ms, 0.65 s. A host
// that is always slow takes longer, by its own latency: with 300 ms round trips (RTO about
// 350 ms, W 1.05 s), about 50 + 1050 ms. A slow but alive host is left only
// when no answer comes within W: a slowdown of more than 200 ms beyond its
// smoothed round trip, and beyond 3 x RTO, in less time than the estimate
// takes to follow it (each sample moves SRTT an eighth of the way).
//
// hostsURL is an http or https URL whose JSON document gives the host list
// (package failover shows the document); it needs checkInterval > 0. Its value
// is query-escaped, as url.QueryEscape and FormatDSN write it:
//
//	tcp(db1,db2)/shop?checkInterval=5s&hostsURL=https%3A%2F%2Fcfg.example%2Fdb%3Fcluster%3Da
//
// A URL without '&', '%' or '+' may also be written as it is
// ("?checkInterval=5s&hostsURL=https://cfg.example/hosts.json"): its '/' do
// not end the address list. A raw value ends at the next '&', and '+' in it
// means a blank, as in any query string. The URL must be https, or http to a
// loopback host (127.0.0.0/8, ::1, localhost), and have a host; plain http to
// another host is an error unless hostsAllowHTTP=true, as the host list and
// the token would cross the network unencrypted. It must not hold user info
// ("https://user:pw@cfg.example/"): String and errors show the URL (its query
// and fragment as "xxxxx"), so credentials go in hostsToken.
//
// hostsToken is sent to hostsURL as "Authorization: Bearer <token>"; it
// needs hostsURL. It must be an RFC 6750 b64token: 1 or more of A-Z a-z 0-9 -
// . _ ~ + / followed by optional '=' padding, written as it is ('/' included)
// or %XX-escaped; unlike in other values, '+' stays '+'. FormatDSN escapes it
// with url.QueryEscape. It is a secret, treated as the password (see
// Passwords).
//
// discoverHosts=true adds the hosts the cluster reports to the host list, after
// the DSN's (or hostsURL's) hosts: the replicas registered with the primary (SHOW
// REPLICA HOSTS: each replica's report_host and report_port), a Galera
// cluster's nodes (mysql.wsrep_cluster_members, or wsrep_incoming_addresses
// where the table may not be read: each node's wsrep_node_incoming_address), a
// Group Replication group's members (performance_schema.replication_group_members).
// It needs checkInterval > 0: once per checkInterval (calmCheckInterval while
// the pool's host looks well: the read rides on its probe) the pool's host (in a
// replication cluster only while it is the writable primary) answers one query
// over its probe session, and each host found is probed and used only once
// it is ready and of the role wanted, as any other. A host of the DSN or
// hostsURL never leaves; one found leaves once three reads in a row have not
// reported it. A member reported under an address that reaches a listed host
// (the same server_id, server_uuid or Galera node UUID: MariaDB lists a replica
// without report_host by its own port) is that host. Set report_host and
// report_port (wsrep_node_incoming_address) to the address clients dial; where
// they cannot, map the reported addresses with mysqlfailover.WithDiscoveryMap.
// A host found has no dc label: with localDC it counts as local. Reading
// Galera's members needs no privilege (wsrep_incoming_addresses; SELECT on
// mysql.wsrep_cluster_members adds the nodes' UUIDs). Listing the replicas needs REPLICATION MASTER ADMIN on MariaDB 10.5.2+
// (REPLICATION SLAVE on MySQL); without it the pool works on the DSN's hosts,
// says why once (failover.EventDiscovery, the logger) and in
// failover.Stats.Discovery, and tries again a minute later.
//
// # Read/write splitting
//
// replicaReads=true sends statements with read intent to replicas, the hosts
// other than the pool's active one, and everything else to the active host
// as before. Read intent is explicit, the driver never parses SQL to guess
// it: a context from mysqlfailover.WithReadIntent, a read-only transaction
// (sql.TxOptions{ReadOnly: true}), or a connection after SetReadOnly(true);
// package mysqlfailover tells which statements are routed. Replica sessions
// open when a read first needs them, read-only (SET SESSION TRANSACTION READ
// ONLY), and the pool's connections share them (replicaPoolSize). Without replicaReads nothing changes and no
// extra server connection opens; the other options of this section are then
// kept (FormatDSN writes them) but unused, except that maxReplicaLag > 0 and
// causalReads local or global are errors.
//
// maxReplicaLag bounds replication lag: a replica whose lag, read by the
// probes (Seconds_Behind_Source of SHOW REPLICA STATUS, Seconds_Behind_Master
// of SHOW SLAVE STATUS on servers without it), is above it, or cannot be
// read, is not used; 0, the default, sets no bound. A value > 0 needs
// replicaReads=true and checkInterval > 0, as the probes read the lag (a
// replica that looks well once per calmCheckInterval: lower that option for a
// fresher reading);
// without either it is an error that says so. Servers report the lag in
// whole seconds, so a bound below 1s admits only replicas that report 0.
// Reading it needs the REPLICATION CLIENT privilege on MySQL, REPLICA
// MONITOR (or its alias SLAVE MONITOR) on MariaDB 10.5 and later; without
// it the lag is unknown, and HostStats.ReplicaSkip (package failover) says
// so. This is MaxScale's max_replication_lag, there in seconds, here a
// duration.
//
// replicaSelection chooses among the replicas that qualify: round-robin (the
// default) takes them in turn, least-in-flight the one with the fewest
// statements of this pool in flight (MaxScale's slave_selection_criteria
// LEAST_CURRENT_OPERATIONS). A routing key given to WithReadIntent takes
// precedence: its replica is chosen by rendezvous hashing of the key.
// Values are case-sensitive; "least_in_flight" or MaxScale's
// LEAST_CURRENT_OPERATIONS is an error that says what was meant.
//
// replicaPoolSize bounds the sessions open to each replica (count). The
// connections of a pool share their replica sessions: an autocommit read
// takes an idle session of the chosen replica and gives it back when it is
// over (its rows closed), so that the sessions on a replica follow the
// concurrent reads, not the pool's size; a read-only transaction, open rows
// and a prepared statement keep theirs until they end. 0, the default, sets
// no bound but the pool's own: at most one session per pooled connection
// and replica, which is what a pool held before sessions were shared. With
// a bound, a read that finds as many sessions open to its replica waits for
// one to be given back, up to its context's deadline (database/sql's wait
// at SetMaxOpenConns). A prepared statement (*sql.Stmt) with read intent
// keeps a session on each pooled connection that ran it for as long as it
// stays open: under a bound, long-lived ones can hold every session of a
// replica, and reads then wait until their contexts end. Close such
// statements after use, or set the bound above the pool's size. A session
// idle for 30s is closed at the next read;
// one idle for a second, or idle while another session of its replica broke,
// gets go-sql-driver's liveness check before its next use.
// HostStats.ReplicaIdle (package failover) counts the idle ones,
// HostStats.OpenConns every session. ProxySQL's max_connections of a
// backend server; > 0 needs replicaReads=true.
//
// readFromSourceWhenNoReplicas says what a read does when no replica
// qualifies (none is listed, or all are down, lagging or of the wrong
// role): true, the default, runs it on the active host; false fails it with
// *failover.NoHostAvailableError. The name and meaning are Connector/J's
// (readFromMasterWhenNoSlaves before 8.0.23, accepted as an alias), whose
// default is false; here it is true because a replica set is an
// optimisation: a service that must keep answering should not fail reads
// that the primary can serve, and the primary is never stale. Set it to
// false to keep read load off the primary whatever happens.
//
// causalReads makes a read on a replica see earlier writes, as MaxScale's
// causal_reads: none (the default) does not wait, and a replica may not yet
// have applied a write; local waits until the replica has applied this
// connection's latest write; global until it has applied the pool's latest
// write. The replica waits for the write's GTID position (MariaDB
// MASTER_GTID_WAIT, MySQL WAIT_FOR_EXECUTED_GTID_SET, so the servers need
// GTIDs) at most causalReadsTimeout; then the read runs on the active host.
// local and global need replicaReads=true. MaxScale's other modes (fast,
// fast_global, universal, fast_universal) are not offered: naming one is an
// error that lists the values.
//
// allowSourceDownConnections keeps read/write splitting answering while no
// writer does (the primary died, nothing was promoted yet): true, the
// default, opens a new connection without a session on the pool's writer
// while a replica qualifies (the session opens with the connection's first
// statement that needs it: a read must never wait for a writer that died a
// moment ago or hangs), and keeps a pooled connection whose writer session
// died valid on its replica sessions; its read-intent statements run on the
// replicas, and a write (or a statement without intent) looks for the writer
// as always, failing as it would without replicas. false opens every
// connection on the writer, or fails. The name and meaning are Connector/J's
// (allowMasterDownConnections before 8.0.23, accepted as an alias), whose
// default is false; here it is true for the reason readFromSourceWhenNoReplicas
// is: a service that must keep answering should not fail reads that a replica
// serves. It is ignored without replicaReads.
//
// causalReadsTimeout is that bound, > 0 (0 is an error), 1s by default:
// shorter than MaxScale's causal_reads_timeout (10s), as the fall-back, the
// active host, answers at once.
//
// cluster says what kind of cluster the hosts form, which decides how the
// driver reads whether a host is ready for application use (package failover,
// Readiness, has the rules): auto, the default, lets the servers say (the
// first connection of a pool of several hosts reads it once, in the role
// query; a refusal such as Galera's 1047 says it too); replication (primary
// and replicas, or single servers: nothing more is read), galera (MariaDB
// Galera Cluster, Percona XtraDB Cluster) and group (MySQL Group Replication,
// InnoDB Cluster) name it, and a host whose server is not of that type is not
// ready, with a reason that names the option. Values are case-sensitive; a
// typo, or a product name ("pxc", "group_replication"), is an error that says
// what was meant.
//
// # Transaction replay
//
// transactionReplay=true (off by default) makes the driver run a transaction
// again on the new session when its connection fails inside it, comparing
// each result with what the application saw (package mysqlfailover,
// Transaction replay, has what is recorded, compared and never replayed).
// MaxScale's transaction_replay and MariaDB Connector/J's transactionReplay are
// the references.
//
// transactionReplayMaxSize bounds what one transaction records: the text of
// its statements, their arguments, and 64 bytes per statement, > 0 with
// replay, 1 MiB by default (MaxScale's default; per connection, so a pool of
// N connections may hold N times that); a larger transaction is not replayed.
// transactionReplayAttempts is how many replays one transaction may have (a
// replay that fails for its connection counts, and the next host gets the
// next one), > 0 with replay, 5 by default. transactionReplayTimeout bounds
// the time from the first failure to the end of the last replay, 30s by
// default, 0 for no bound; the caller's context bounds it too.
//
// # Unknown and misspelled keys
//
// A key that differs from one of the options above only in case ("localdc",
// DataStax's "usedHostsPerRemoteDc") or, for keys of 8 characters or more, by
// one or two letters ("retriesAllDwn", libpq's "target_session_attrs"), or
// from one of go-sql-driver's own keys in case ("readtimeout"), is an error
// that names the key that was meant, wrapping ErrInvalidOption. Without this
// check go-sql-driver would send it to the server as a system variable (SET
// retriesalldown=...), where the typo fails late and obscurely. Validate
// likewise rejects an option hidden in Config.MySQL.Params under any spelling.
// go-sql-driver's removed strict parameter is an error (ErrSyntax).
//
// # What goes to go-sql-driver
//
// Every other parameter (tls, timeout, readTimeout, writeTimeout, parseTime,
// loc, charset, collation, system variables such as sql_mode and time_zone,
// and so on) goes to mysql.ParseDSN unchanged, escaping included, together
// with the user, password, net, database and the primary as the address, and
// applies to every host. The resulting *mysql.Config is Config.MySQL. Do not
// set go-sql-driver's rejectReadOnly unless you want its behaviour: it turns
// read-only rejections into driver.ErrBadConn, which the driver then treats as
// a failed host.
//
// # Passwords
//
// Errors from Parse and Validate never contain the password, hostsToken or
// the whole DSN: they name the offending host entry, key or value only (a
// hostsToken value is "(not shown)", and so is a hostsURL that may hold user
// info). Config.String and GoString (%v, %s, %#v of a *Config) print the DSN
// with the password and hostsToken replaced by "xxxxx"; only FormatDSN, meant
// for machines, includes them. Formatting a Config value (not a pointer) with
// fmt prints its fields, HostsToken included, and so does formatting
// Config.MySQL, go-sql-driver's struct, with %+v (its Passwd field): log the
// *Config, never its parts.
package dsn
