package failovertest_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"time"

	_ "github.com/mysqlfailover/mysqlfailover" // registers the "mysqlfailover" driver

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
