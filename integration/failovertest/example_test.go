package failovertest_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"time"

	"github.com/mysqlfailover/mysqlfailover" // registers the "mysqlfailover" driver
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"

	"github.com/mysqlfailover/mysqlfailover/integration/failovertest"
)

// A service's writes survive a switchover: node 2 becomes the writer, node 1 read-only,
// and a pool with targetSessionAttrs=read-write moves its writes there. In a test, use
// failovertest.Start(t, 2) instead of StartCluster and Close; TestExample runs these
// steps against real servers.
func Example() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := failovertest.StartCluster(ctx, 2) // node 1 the primary, nodes 2 and 3 replicas
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	db, err := sql.Open("mysqlfailover", c.DSN("targetSessionAttrs=read-write&readTimeout=2s"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE orders (id INT PRIMARY KEY)"); err != nil {
		log.Fatal(err)
	}

	if err := c.Promote(ctx, 2); err != nil {
		log.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO orders VALUES (1)"); err != nil {
		log.Fatal(err) // the pool has found node 2
	}
	if err := c.WaitReplicated(ctx); err != nil { // nodes 1 and 3 follow node 2 now
		log.Fatal(err)
	}
	fmt.Println("writer: node", c.Primary())
}

// A service's writes go on when the node they use leaves the Galera cluster's Primary
// component: node 1 refuses work with error 1047 until it rejoins (writes in flight when
// it was cut off wait about 2.4 s, then may fail: see the package documentation). In a
// test, use failovertest.StartGalera(t, 3) instead of StartGaleraCluster and Close.
func ExampleStartGaleraCluster() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := failovertest.StartGaleraCluster(ctx, 3) // three Galera nodes, every one a writer
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()

	db, err := sql.Open("mysqlfailover", c.DSN("readTimeout=2s"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE orders (id INT PRIMARY KEY)"); err != nil {
		log.Fatal(err)
	}

	if err := c.Isolate(ctx, 1); err != nil { // node 1: non-Primary, wsrep_ready OFF
		log.Fatal(err)
	}
	s, err := c.Status(ctx, 1)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("node 1:", s.ClusterStatus, s.LocalStateComment)
	if err := c.Unisolate(ctx, 1); err != nil { // back and Synced
		log.Fatal(err)
	}
}

// An old primary that comes back writable after a promotion, its fencing failed: node 1
// killed, node 2 promoted (node 3 follows it), node 1 back with read_only=OFF following no
// one. A pool with targetSessionAttrs=read-write writes to node 2, the writer the
// replicas follow, never to node 1, and reports the two writers. In a test, use
// failovertest.Start(t, 2) instead of StartCluster and Close; TestReturnUnfenced runs
// these steps against real servers.
func ExampleCluster_ReturnUnfenced() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := failovertest.StartCluster(ctx, 2)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.Kill(1); err != nil {
		log.Fatal(err)
	}
	if err := c.Promote(ctx, 2); err != nil { // node 3 follows node 2
		log.Fatal(err)
	}
	if err := c.ReturnUnfenced(ctx, 1); err != nil { // node 1 writable, following no one
		log.Fatal(err)
	}

	twoWriters := make(chan failover.Event, 1)
	cfg, err := dsn.Parse(c.DSN("targetSessionAttrs=read-write&readTimeout=2s"))
	if err != nil {
		log.Fatal(err)
	}
	cn, err := mysqlfailover.NewConnector(cfg,
		mysqlfailover.WithEventHook(func(e failover.Event) {
			if e.Kind == failover.EventTwoWriters {
				select {
				case twoWriters <- e:
				default:
				}
			}
		}))
	if err != nil {
		log.Fatal(err)
	}
	db := sql.OpenDB(cn)
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE orders (id INT PRIMARY KEY)"); err != nil {
		log.Fatal(err) // on node 2: node 1 never sees it
	}
	e := <-twoWriters
	fmt.Println("writer: node", c.NodeOf(e.Host), "fence: node", c.NodeOf(e.From))
}

// A replica added to the running primary serves a pool's read-intent statements
// although the pool's DSN does not list it: discoverHosts finds it (the primary lists it
// in SHOW REPLICA HOSTS under its proxy's address), its probes check it, and the pool
// reads there within two checkIntervals; removed (detached), it leaves the pool's list.
// In a test, use failovertest.Start(t, 1) instead of StartCluster and Close;
// TestAddRemoveNode runs these steps against real servers (and a Galera node's).
func ExampleCluster_AddNode() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := failovertest.StartCluster(ctx, 1) // node 1 the primary, node 2 a replica
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	if err := c.GrantDiscovery(ctx); err != nil { // the app user may list the replicas
		log.Fatal(err)
	}
	db, err := sql.Open("mysqlfailover", c.DSN("discoverHosts=true&replicaReads=true&checkInterval=200ms"))
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	node, err := c.AddNode(ctx) // node 3: not in the pool's DSN
	if err != nil {
		log.Fatal(err)
	}
	for {
		var port int
		if err := db.QueryRowContext(mysqlfailover.WithReadIntent(ctx, ""), "SELECT @@port").Scan(&port); err != nil {
			log.Fatal(err)
		}
		if port == c.Harness().Node(node).Port() {
			break // node 3 serves the pool's reads
		}
	}
	if err := c.RemoveNode(ctx, node); err != nil { // detached: the pool drops it
		log.Fatal(err)
	}
	fmt.Println("node", node, "served reads, then was removed")
}
