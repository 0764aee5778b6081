// Package failovertest starts a real primary with replicas for the tests of a service
// that uses mysqlfailover, and breaks them on request: a fixture for `go test`.
//
//	func TestCheckoutSurvivesFailover(t *testing.T) {
//		c := failovertest.Start(t, 2) // node 1 the primary, nodes 2 and 3 replicas
//		db, err := sql.Open("mysqlfailover", c.DSN("targetSessionAttrs=read-write&readTimeout=2s"))
//		if err != nil {
//			t.Fatal(err)
//		}
//		defer db.Close()
//		ctx, stop := context.WithCancel(t.Context())
//		var service sync.WaitGroup
//		service.Go(func() { runCheckout(ctx, db) }) // your service, writing away until ctx ends
//		defer service.Wait()                        // it ends with the test, before db closes
//		defer stop()
//		if err := c.Promote(ctx, 2); err != nil { // node 2 the writer, node 1 read-only
//			t.Fatal(err)
//		}
//		// the service's writes go on, on node 2: stop(); service.Wait(); then assert on them
//	}
//
// (with the driver registered: import _ "github.com/mysqlfailover/mysqlfailover"). The
// service runs under the test's context and the test waits for it: a goroutine left
// running on context.Background() would outlive the test, write on a closed pool, and
// count in the next test's figures.
//
// What the fixture gives: the app user "app", password "apppw" (no SUPER, so read_only
// stops its writes with error 1290), the databases "app" and "app2", GTID replication.
// Cluster.DSN lists every node's proxy, node 1 first (app:apppw@tcp(...)/app?params);
// Cluster.HostDSN is one node's alone, for checks with the plain "mysql" driver. Root
// (no password) reaches each node straight, not through its proxy:
// c.Harness().Node(i).Admin() is a *sql.DB as root, c.Harness().Node(i).Addr() the
// address (root@tcp(ADDR)/).
//
// The nodes run as local mariadbd processes (the default; MariaDB must be installed:
// `apt-get install mariadb-server`, `brew install mariadb`) or as Docker containers
// (WithBackend("container"), or MYSQLFAILOVER_BACKEND=container; the image from
// WithImage, MYSQLFAILOVER_IMAGE, or scripts/build-image.sh of this repository). Without
// a server binary or image the test is skipped, or fails when CI=true; without a Docker
// engine a container cluster is always skipped.
//
// Each node sits behind a TCP proxy of its own (toxiproxy, in the test process); the
// DSN lists the proxies. Nodes are numbered from 1. Everything is removed when the test
// ends.
//
// # Galera
//
// StartGalera(t, 3) starts a MariaDB Galera cluster of three nodes instead (Debian's
// galera-4, `apt-get install mariadb-server galera-4`; the container image has it): every
// node a writer, no replicas, no read_only. The same app user (app, password apppw, no
// SUPER) has the databases app and app2 on every node, and DSN lists the nodes' proxies,
// node 1 first: "app:apppw@tcp(127.0.0.1:p1,127.0.0.1:p2,127.0.0.1:p3)/app?" + params.
//
//	func TestCheckoutSurvivesALostNode(t *testing.T) {
//		c := failovertest.StartGalera(t, 3)
//		db, err := sql.Open("mysqlfailover", c.DSN("readTimeout=2s"))
//		if err != nil {
//			t.Fatal(err)
//		}
//		defer db.Close()
//		ctx, stop := context.WithCancel(t.Context())
//		var service sync.WaitGroup
//		service.Go(func() { runCheckout(ctx, db) }) // your service, writing away until ctx ends
//		defer service.Wait()
//		defer stop()
//		if err := c.Isolate(ctx, 1); err != nil { // node 1 leaves the Primary component
//			t.Fatal(err)
//		}
//		// node 1 refuses work with error 1047; the service's writes go on elsewhere
//		if err := c.Unisolate(ctx, 1); err != nil { // back, Synced
//			t.Fatal(err)
//		}
//	}
//
// Until node 1 notices it is cut off, its commits wait for the group: about 2.4 s with
// the fixture's timeouts (evs.suspect_timeout=PT2S), 6.1 to 6.5 s with Galera's default
// PT5S (measured). A write that outlives its readTimeout or deadline meanwhile fails with
// its outcome unknown; then node 1 fails the commits it could not replicate with error
// 1180 "Not connected to Primary Component", which the service gets inside a
// *failover.FailoverError with MaybeExecuted (the other nodes may have committed the
// write: SafeToRetry says RetryNothing, read the data), and the writes go on elsewhere.
// With 6 writers on 2 s deadlines, 12 of about 1,100 writes failed, half each way.
//
// Its faults, each a method: Isolate/Unisolate (out of the Primary component: every
// statement on a table gets 1047 "WSREP has not yet prepared node for application use"),
// Desync, RejectQueries, Kill then Restart (rejoins by IST), Stop then Restart,
// Freeze/Thaw, LoseQuorum/RestoreQuorum, Bootstrap, Resync (a full SST from a chosen donor); Status
// reads what a node says of itself and WaitSynced waits until the cluster is whole.
//
// # Two writers
//
// ReturnUnfenced brings an old primary back as one comes back when the promotion's
// fencing failed: writable, replicating from no one. Kill(1), Promote(ctx, 2) and
// ReturnUnfenced(ctx, 1) leave node 1 taking writes node 2 and its replica never see;
// a pool with targetSessionAttrs=read-write keeps writing to node 2 and reports the two
// writers (failover.EventTwoWriters, Stats.Writers): see ExampleCluster_ReturnUnfenced.
// Restart(ctx, 1) in its place brings node 1 back fenced: read-only, node 2's replica.
//
// # Members that come and go
//
// AddNode adds a replica to the running primary (or a node to the running Galera
// cluster), reporting its own proxy's address as the one clients dial; RemoveNode
// detaches a replica (the primary lists it no more) or makes a Galera node leave. With
// GrantDiscovery (the app user may then list the replicas) a pool with
// discoverHosts=true finds a node added and drops a node removed, without a restart and
// without the node in its DSN: see ExampleCluster_AddNode.
//
// This package is a facade over package harness (the project's own integration
// harness): Cluster.Harness gives the rest (proxy faults such as latency or a
// blackhole, admin connections, server options).
package failovertest

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Option configures Start and StartCluster.
type Option func(*config)

type config struct {
	backend string
	image   string
	h       []harness.Option
}

// WithBackend chooses where the servers run: "process" (local mariadbd processes) or
// "container" (Docker containers through testcontainers-go). Default: the
// MYSQLFAILOVER_BACKEND environment variable, else "process". Another name makes Start
// fail.
func WithBackend(name string) Option { return func(c *config) { c.backend = name } }

// WithImage is the server image of the container backend ("mariadb:11.4",
// "mysqlfailover-mariadb:<hash>"). Default: MYSQLFAILOVER_IMAGE, else the image
// scripts/build-image.sh builds. It implies WithBackend("container").
func WithImage(ref string) Option {
	return func(c *config) {
		c.image = ref
		if c.backend == "" {
			c.backend = "container"
		}
	}
}

// WithNodeArgs gives node (from 1) extra server options on every start, in mariadbd's
// syntax ("--max-connections=20"). On the container backend, absolute paths of files
// on this machine ("--ssl-cert=/tmp/certs/server.pem") are copied into the container.
func WithNodeArgs(node int, args ...string) Option {
	return func(c *config) { c.h = append(c.h, harness.WithNodeArgs(node, args...)) }
}

// WithTimeout bounds the bring-up (default 2 minutes; StartCluster uses its context).
func WithTimeout(d time.Duration) Option {
	return func(c *config) { c.h = append(c.h, harness.WithTimeout(d)) }
}

// Cluster is a primary and its replicas. Its methods are safe for concurrent use.
type Cluster struct {
	h *harness.Cluster
}

func (c *config) harnessOptions(logf func(string, ...any)) ([]harness.Option, error) {
	name := c.backend
	if name == "" {
		name = os.Getenv(harness.EnvBackend)
	}
	opts := append([]harness.Option{harness.WithReplicationLinks()}, c.h...)
	switch name {
	case "", "process":
		return append(opts, harness.WithBackend(&harness.LocalBackend{Logf: logf})), nil
	case "container":
		return append(opts, harness.WithBackend(&harness.ContainerBackend{Image: c.image, Logf: logf})), nil
	default:
		return nil, fmt.Errorf("failovertest: backend %q: want process or container", name)
	}
}

// Start starts a primary with replicas for t (replicas may be 0) and removes it when t
// ends. It returns once every replica has caught up. With no server binary, image or
// Docker engine the test is skipped (with CI=true a missing server or image fails it);
// any other failure to start fails the test.
func Start(t testing.TB, replicas int, opts ...Option) *Cluster {
	t.Helper()
	var c config
	for _, o := range opts {
		o(&c)
	}
	hopts, err := c.harnessOptions(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	return &Cluster{h: harness.Start(t, replicas+1, hopts...)}
}

// StartCluster is Start outside a test: the caller must Close the cluster. Errors
// match harness.ErrNoServer (no server binary or image) and harness.ErrNoDocker (no
// Docker engine) with errors.Is.
func StartCluster(ctx context.Context, replicas int, opts ...Option) (*Cluster, error) {
	return startCluster(ctx, replicas+1, opts)
}

func startCluster(ctx context.Context, n int, opts []Option, extra ...harness.Option) (*Cluster, error) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	hopts, err := c.harnessOptions(nil)
	if err != nil {
		return nil, err
	}
	h, err := harness.StartCluster(ctx, n, append(hopts, extra...)...)
	if err != nil {
		return nil, err
	}
	return &Cluster{h: h}, nil
}

// StartGalera starts a MariaDB Galera cluster of nodes nodes (3 is the usual size; at
// least 2) for t and removes it when t ends: every node a member and a writer, the app
// user and databases on all of them (see the package documentation), each node behind its
// own proxy. It returns once every node is Synced (about 1 s for 3 local processes, 6 s for
// 3 containers). Skips and failures as Start; a machine with MariaDB but without the
// Galera library (libgalera_smm.so) skips too, or fails when CI=true.
func StartGalera(t testing.TB, nodes int, opts ...Option) *Cluster {
	t.Helper()
	var c config
	for _, o := range opts {
		o(&c)
	}
	hopts, err := c.harnessOptions(t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	return &Cluster{h: harness.Start(t, nodes, append(hopts, harness.WithGalera())...)}
}

// StartGaleraCluster is StartGalera outside a test: the caller must Close the cluster.
// Errors as StartCluster's.
func StartGaleraCluster(ctx context.Context, nodes int, opts ...Option) (*Cluster, error) {
	return startCluster(ctx, nodes, opts, harness.WithGalera())
}

// Close stops and removes every server, proxy, container, network and volume. Start
// calls it when the test ends; it is safe to call more than once.
func (c *Cluster) Close() error { return c.h.Close() }

// DSN is a mysqlfailover DSN for the app user on database app, listing every node in
// order (node 1 first) through its proxy, with params appended:
// c.DSN("targetSessionAttrs=read-write&readTimeout=2s").
func (c *Cluster) DSN(params string) string { return c.h.DSN(params) }

// HostDSN is a DSN for node alone (through its proxy), for checks with the plain
// "mysql" driver or mysqlfailover.
func (c *Cluster) HostDSN(node int, params string) (string, error) {
	if err := c.check(node); err != nil {
		return "", err
	}
	return c.h.HostDSN(node, params), nil
}

// Nodes is the number of nodes (replicas + 1; a Galera cluster's size).
func (c *Cluster) Nodes() int { return c.h.N() }

// Primary is the node that takes writes now: 1, or the one Promote chose last. On a
// Galera cluster every node takes writes, and Primary is 1.
func (c *Cluster) Primary() int { return c.h.Primary().Index() }

// NodeOf returns the node whose proxy address is hostport, as mysqlfailover names hosts
// (mysqlfailover.Conn.Host, failover errors, Stats), or 0.
func (c *Cluster) NodeOf(hostport string) int { return c.h.NodeByAddr(hostport) }

func (c *Cluster) check(node int) error {
	if node < 1 || node > c.h.N() {
		return fmt.Errorf("failovertest: no node %d in a %d-node cluster", node, c.h.N())
	}
	return nil
}

// Kill ends node's server at once (SIGKILL; docker kill): its connections are closed
// by the kernel. Restart brings it back: as it was, or, when Promote ran meanwhile, as a
// read-only replica of the new primary (see Promote).
func (c *Cluster) Kill(node int) error {
	if err := c.check(node); err != nil {
		return err
	}
	return c.h.Node(node).Kill()
}

// Freeze suspends node (SIGSTOP; docker pause): its connections stay open and nothing
// answers, as a hung host. Thaw resumes it.
func (c *Cluster) Freeze(node int) error {
	if err := c.check(node); err != nil {
		return err
	}
	return c.h.Node(node).Freeze()
}

// Thaw resumes a frozen node. A node Promote left behind while it was frozen then
// rejoins the cluster as Restart describes.
func (c *Cluster) Thaw(node int) error {
	if err := c.check(node); err != nil {
		return err
	}
	return c.h.Node(node).Thaw()
}

// Restart starts node again on the same address and data (killing it first when it
// runs) and returns once it answers; a replica comes back read-only and resumes
// replicating from its source. A node Promote left behind (down, frozen or partitioned
// when it ran: the old primary after Kill(1) and Promote(ctx, 2), or a replica) comes
// back read-only as a replica of the primary: from where it stopped, or, when it held
// writes the primary never received, rebuilt from the primary first, and then Restart
// returns once it has caught up (see Promote). A node ReturnUnfenced brought back stays
// writable, following no one. A Galera node rejoins by IST (the write sets it missed) and Restart returns
// once it is Synced; with no Primary component to join (quorum lost) it fails: Bootstrap a
// survivor first.
func (c *Cluster) Restart(ctx context.Context, node int) error {
	if err := c.check(node); err != nil {
		return err
	}
	return c.h.Node(node).Restart(ctx)
}

// Stop shuts node's server down cleanly (SIGTERM; docker stop) and returns once it has
// exited: open connections get error 1053 or are closed; a Galera node announces its
// leave, so the others go on at once. Restart brings it back, as after Kill.
func (c *Cluster) Stop(ctx context.Context, node int) error {
	if err := c.check(node); err != nil {
		return err
	}
	return c.h.Node(node).Stop(ctx)
}

// Partition cuts node off from the other nodes (replication both ways) while the
// service still reaches it through the DSN: a primary that keeps taking writes its
// replicas never see. Heal undoes it. On a Galera cluster of containers it cuts the
// node's group communication (it goes non-Primary, as with Isolate); on local processes
// use Isolate.
func (c *Cluster) Partition(ctx context.Context, node int) error {
	if err := c.check(node); err != nil {
		return err
	}
	return c.h.Node(node).Partition(ctx)
}

// Heal reconnects a partitioned node; its replication resumes (within a second on the
// process backend; on containers a replica may first wait out the 10 s
// slave_net_timeout on its hung connection). A node Promote left behind while it was
// partitioned then rejoins the cluster as Restart describes (a running old primary is
// made read-only first).
func (c *Cluster) Heal(ctx context.Context, node int) error {
	if err := c.check(node); err != nil {
		return err
	}
	return c.h.Node(node).Heal(ctx)
}

// Promote makes node the writer, as an orchestrator does in a switchover: the primary
// is made read-only (its writes fail with 1290 from then on), node catches up with it,
// stops replicating and becomes writable, and the other replicas and the old primary
// replicate from node. A driver with targetSessionAttrs=read-write moves its writes to
// node.
//
// A node that is down, frozen or partitioned (the old primary after Kill, or a replica)
// is left behind: when it comes back (Restart, Thaw, or Heal when it runs) it rejoins as
// a read-only replica of the primary of that moment, as an orchestrator re-points a
// recovered old primary (a partitioned old primary, still running, takes writes until
// Heal). With the old primary gone, node and
// the replicas first apply what they had received from it. Writes the old primary
// acknowledged that never reached node are lost, as in any asynchronous cluster, but the
// old primary still holds them when it comes back: a divergence a real cluster faces,
// where an operator rebuilds the node. The fixture rebuilds it: its binary log and GTID
// position are forgotten, every database and user it did not start with is dropped, and
// it replays the primary's binary log from the start, its proxy refusing connections
// until it has caught up; its rows are then the primary's, and the test log says which
// positions diverged. A running replica that received more of them than node is
// rebuilt the same way during Promote. ReturnUnfenced is the exception: the old primary
// back writable, its data as they were, following no one.
func (c *Cluster) Promote(ctx context.Context, node int) error {
	if err := c.check(node); err != nil {
		return err
	}
	return c.h.Switchover(ctx, node)
}

// ReturnUnfenced brings node back as an old primary comes back after a promotion whose
// fencing failed (an orchestrator's hook that did not run): started again when it is down
// (Kill or Stop), its replication stopped, and read_only OFF. It then takes writes the
// cluster never sees: two writers. A driver with targetSessionAttrs=read-write keeps
// writing to the promoted node, which the replicas follow, and reports the two writers
// (failover.EventTwoWriters, Stats.Writers); `mysqlfailover check` names both. It fails
// on a Galera cluster and for the node that is the primary. ExampleCluster_ReturnUnfenced
// shows the steps: Kill(1), Promote(ctx, 2), then ReturnUnfenced(ctx, 1).
func (c *Cluster) ReturnUnfenced(ctx context.Context, node int) error {
	if err := c.check(node); err != nil {
		return err
	}
	return c.h.Node(node).ReturnUnfenced(ctx)
}

// AddNode adds one more member to the running cluster, as an operator does, and returns
// its number (Nodes() before the call, plus 1) once it serves: on a primary with replicas
// a replica of the primary (read_only, GTID replication), returned once it has caught
// up; on a Galera cluster (StartGalera) a node that joins the Primary component, returned
// once it is Synced (about 3 s on local processes; the container backend cannot add
// one). It sits behind a proxy of its own and reports that proxy's address as the one
// clients dial (report_host and report_port, which the primary lists in SHOW REPLICA
// HOSTS; wsrep_node_incoming_address), so that mysqlfailover's discoverHosts finds it
// and your test can break it like any node. DSN lists the nodes there are when it is
// called: take the DSN first to test discovery. args are extra server options for the
// new node, as WithNodeArgs. ExampleCluster_AddNode shows the steps: a DSN with
// discoverHosts taken first, GrantDiscovery, AddNode (within two checkIntervals the
// pool's read-intent statements reach the new replica), then RemoveNode (the pool drops
// it).
func (c *Cluster) AddNode(ctx context.Context, args ...string) (int, error) {
	n, err := c.h.AddNode(ctx, args...)
	if err != nil {
		return 0, err
	}
	return n.Index(), nil
}

// RemoveNode takes node out of the cluster, as an operator retires it: a replica stops
// replicating and forgets its primary (STOP SLAVE, RESET SLAVE ALL: the primary lists it
// no more once its replication connection has closed, at once while the primary writes,
// else within the 5 s heartbeat), and keeps running read-only with the data it had; a
// Galera node shuts down cleanly and leaves the cluster (Restart brings it back, rejoining
// by IST). It fails for the primary of a replication cluster.
func (c *Cluster) RemoveNode(ctx context.Context, node int) error {
	if err := c.check(node); err != nil {
		return err
	}
	if c.h.Galera() {
		return c.h.Node(node).Stop(ctx)
	}
	return c.h.Node(node).Detach(ctx)
}

// GrantDiscovery gives the app user what mysqlfailover's discoverHosts reads with: the
// privilege to list the replicas registered with the primary (REPLICATION MASTER ADMIN
// on MariaDB, REPLICATION SLAVE on MySQL), or on Galera SELECT on
// mysql.wsrep_cluster_members. The fixture's user starts without it, as most application
// users do: a pool with discoverHosts then works on the DSN's hosts and says why
// (failover.Stats.Discovery).
func (c *Cluster) GrantDiscovery(ctx context.Context) error { return c.h.GrantDiscovery(ctx) }

// WaitReplicated waits until every running, unpartitioned replica holds everything the
// primary has written so far, or ctx ends (30 s without a deadline). A replica that
// holds the primary's position, whoever wrote it, has caught up: an old primary
// rejoined after Promote holds what it wrote itself. A running node that cannot get there
// makes it fail at once, naming the node and why: one that replicates from no one ("node 3 is not a
// replica: it replicates from no one"), one whose replication is stopped (its threads'
// state and last errors). Left out: nodes killed, stopped, frozen or partitioned, and a
// node ReturnUnfenced made a second writer, and a replica RemoveNode took out. On a Galera cluster: until every node of the
// Primary component has applied the last write any of them took.
func (c *Cluster) WaitReplicated(ctx context.Context) error { return c.h.WaitReplicasCaughtUp(ctx) }

// Harness is the cluster of package harness behind this one: per-node proxy faults
// (Disable, Blackhole, Latency, ResetPeer), admin connections (Node(i).Exec,
// QueryInt), Stop.
func (c *Cluster) Harness() *harness.Cluster { return c.h }

// GaleraStatus is what a Galera node says of itself (Cluster.Status): wsrep_ready,
// wsrep_cluster_status, wsrep_local_state and its comment, wsrep_desync,
// wsrep_reject_queries, the cluster size, state UUID, local index and last committed seqno.
type GaleraStatus = harness.GaleraStatus

// RejectMode is a value of wsrep_reject_queries (Cluster.RejectQueries).
type RejectMode = harness.RejectMode

// The values of wsrep_reject_queries.
const (
	RejectNone    = harness.RejectNone    // take queries (the default)
	RejectAll     = harness.RejectAll     // refuse them with 1047; open sessions stay open
	RejectAllKill = harness.RejectAllKill // refuse them and close every other open session
)

// Status reads Galera node's wsrep status (as root, bypassing the proxy). It fails on a
// cluster that is not Galera.
func (c *Cluster) Status(ctx context.Context, node int) (GaleraStatus, error) {
	if err := c.check(node); err != nil {
		return GaleraStatus{}, err
	}
	return c.h.Node(node).GaleraStatus(ctx)
}

// Isolate cuts Galera node off from the others (gmcast.isolate=1) and returns once it is
// outside the Primary component (about 2.4 s, while its commits wait for the group and
// then fail with 1180 "Not connected to Primary Component"): it still accepts
// connections and answers
// SELECT 1, SET, USE, SHOW and reads of variables, and refuses every statement on a table,
// BEGIN, COMMIT and ROLLBACK with error 1047 (SQLSTATE 08S01) "WSREP has not yet prepared
// node for application use". Unisolate undoes it.
func (c *Cluster) Isolate(ctx context.Context, node int) error {
	if err := c.check(node); err != nil {
		return err
	}
	return c.h.Node(node).Isolate(ctx)
}

// Unisolate ends Isolate: the node rejoins by itself (IST) and Unisolate returns once it is
// Synced (about 3 s). After LoseQuorum use RestoreQuorum.
func (c *Cluster) Unisolate(ctx context.Context, node int) error {
	if err := c.check(node); err != nil {
		return err
	}
	return c.h.Node(node).Unisolate(ctx)
}

// Desync sets wsrep_desync on Galera node: on, it reports local state 2 "Donor/Desynced"
// and may fall behind while it still takes reads and writes; off, it is Synced again.
func (c *Cluster) Desync(ctx context.Context, node int, on bool) error {
	if err := c.check(node); err != nil {
		return err
	}
	return c.h.Node(node).SetDesync(ctx, on)
}

// RejectQueries sets wsrep_reject_queries on Galera node: RejectAll refuses what an
// isolated node refuses (error 1047) while its status still says Synced; RejectAllKill
// also closes every open session; RejectNone ends it.
func (c *Cluster) RejectQueries(ctx context.Context, node int, mode RejectMode) error {
	if err := c.check(node); err != nil {
		return err
	}
	return c.h.Node(node).RejectQueries(ctx, mode)
}

// LoseQuorum isolates every Galera node but survivor and returns once no node is in a
// Primary component (about 2 s): every node refuses work with 1047. RestoreQuorum undoes
// it.
func (c *Cluster) LoseQuorum(ctx context.Context, survivor int) error {
	if err := c.check(survivor); err != nil {
		return err
	}
	return c.h.LoseQuorum(ctx, survivor)
}

// RestoreQuorum ends every isolation at once and returns once the Galera cluster is whole
// again (WaitSynced; about 1 to 3 s).
func (c *Cluster) RestoreQuorum(ctx context.Context) error { return c.h.RestoreQuorum(ctx) }

// Bootstrap makes Galera node's component the Primary component (pc.bootstrap=YES), as
// an operator does when the others are lost: after Kill of every other node, node takes
// work again at once, and the killed nodes rejoin it by Restart.
func (c *Cluster) Bootstrap(ctx context.Context, node int) error {
	if err := c.check(node); err != nil {
		return err
	}
	return c.h.Bootstrap(ctx, node)
}

// Resync wipes Galera node's state and lets it rejoin by a full state transfer (rsync SST)
// from donor (0: any node): node is shut down, restarted and Synced when Resync returns,
// and donor reports local state 2 "Donor/Desynced" while it sends (about a second).
func (c *Cluster) Resync(ctx context.Context, node, donor int) error {
	if err := c.check(node); err != nil {
		return err
	}
	var d *harness.Node
	if donor != 0 {
		if err := c.check(donor); err != nil {
			return err
		}
		d = c.h.Node(donor)
	}
	return c.h.Node(node).Resync(ctx, d)
}

// WaitSynced waits until the Galera cluster is whole: every node Synced in one Primary
// component of all of them, with the same state and last committed write.
func (c *Cluster) WaitSynced(ctx context.Context) error { return c.h.WaitSynced(ctx) }
