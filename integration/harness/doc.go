// Package harness runs real MariaDB clusters for mysqlfailover's integration tests.
//
// Start(t, 3) brings up three servers: node 1 the primary, nodes 2 and 3 GTID replicas of
// it with read_only=ON, each behind its own toxiproxy proxy (in process, on loopback). The
// app user (AppUser, no SUPER) has the databases app and app2. Cluster.DSN lists the
// proxies in node order, so the driver sees A (primary), B, C; @@port on a server is its
// real port, and Cluster.NodeByPort maps it back to the node.
//
// Faults are real: Node.Kill (SIGKILL), Freeze/Thaw (SIGSTOP/SIGCONT), Stop (clean
// shutdown), Restart; on the proxy Disable/Enable (refused, open connections cut),
// Blackhole (no FIN, no RST), ResetPeer, Latency, ClearToxics; and SetReadOnly. Checks go
// through each node's admin connection (root, straight to the server, bypassing the
// proxy). Cluster.Switchover promotes a replica as an orchestrator does; a node it cannot
// reach (the old primary after Kill) rejoins as the new primary's read-only replica when
// it comes back (Node.Restart), rebuilt from the primary when it holds writes the
// primary never received; Node.ReturnUnfenced brings it back as a second writer instead.
//
// Start(t, 3, WithGalera()) brings up a MariaDB Galera cluster instead: every node a member
// and a writer (node 1 is Primary by convention), no replication, no read_only, the same
// app user, databases, proxies and DSN. Its faults: Node.Isolate/Unisolate (out of the
// Primary component: error 1047 on every statement that touches a table), SetDesync,
// RejectQueries, Resync (a full SST from a chosen donor), Kill then Restart (rejoins by
// IST), Stop then Restart, Freeze/Thaw; Cluster.LoseQuorum/RestoreQuorum, Bootstrap and
// WaitSynced; Node.GaleraStatus reads what a node says of itself (wsrep_ready,
// wsrep_cluster_status, wsrep_local_state, ...). See WithGalera.
//
// Members come and go on a running cluster: Cluster.AddNode starts one more (a replica of
// the primary reporting its proxy's address, or a Galera node that joins, local processes
// only), Node.Detach and Attach take a replica off its primary and back,
// Cluster.GrantDiscovery lets the app user list the members (the driver's discoverHosts).
//
// A Backend starts the servers; LocalBackend runs local mariadbd processes,
// ContainerBackend Docker containers (testcontainers-go), and the same scenarios run
// unchanged on both (MYSQLFAILOVER_BACKEND picks one for clusters started without
// WithBackend). The replication statements come from the servers' Flavour (MariaDB or
// MySQL 8). Everything is stopped when the
// test ends, also on failure or panic; on Linux the servers also die with the test
// process.
package harness
