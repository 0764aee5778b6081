package failovertest_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"

	"github.com/mysqlfailover/mysqlfailover/integration/failovertest"
)

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// count is the number of rows of orders on node alone (plain go-sql-driver).
func count(t *testing.T, c *failovertest.Cluster, node int) int {
	t.Helper()
	dsn, err := c.HostDSN(node, "")
	must(t, err)
	db, err := sql.Open("mysql", dsn)
	must(t, err)
	defer db.Close()
	var n int
	must(t, db.QueryRow("SELECT COUNT(*) FROM orders").Scan(&n))
	return n
}

// TestExample runs Example's steps, and every other fault, against real servers (the
// backend of MYSQLFAILOVER_BACKEND).
func TestExample(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c := failovertest.Start(t, 2)
	if c.Nodes() != 3 || c.Primary() != 1 {
		t.Fatalf("%d nodes, primary %d; want 3, 1", c.Nodes(), c.Primary())
	}
	db, err := sql.Open("mysqlfailover", c.DSN("targetSessionAttrs=read-write&readTimeout=2s"))
	must(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, "CREATE TABLE orders (id INT PRIMARY KEY)")
	must(t, err)
	_, err = db.ExecContext(ctx, "INSERT INTO orders VALUES (1)")
	must(t, err)
	must(t, c.WaitReplicated(ctx))

	// Partition: the primary takes writes, the replicas never see them until Heal.
	must(t, c.Partition(ctx, 1))
	_, err = db.ExecContext(ctx, "INSERT INTO orders VALUES (2)")
	must(t, err)
	time.Sleep(1500 * time.Millisecond)
	if n := count(t, c, 2); n != 1 {
		t.Errorf("node 2 has %d rows during the partition, want 1", n)
	}
	must(t, c.Heal(ctx, 1))
	must(t, c.WaitReplicated(ctx))
	if n := count(t, c, 2); n != 2 {
		t.Errorf("node 2 has %d rows after Heal, want 2", n)
	}

	// Promote: node 2 takes the writes, node 1 refuses them, everyone follows node 2.
	must(t, c.Promote(ctx, 2))
	if c.Primary() != 2 {
		t.Errorf("primary %d after Promote(2)", c.Primary())
	}
	// Node 1 replicates from node 2 and holds node 2's position, having written it:
	// caught up at once, though MASTER_GTID_WAIT would wait for it in vain.
	wctx, wcancel := context.WithTimeout(ctx, 5*time.Second)
	must(t, c.WaitReplicated(wctx))
	wcancel()
	_, err = db.ExecContext(ctx, "INSERT INTO orders VALUES (3)")
	must(t, err)
	dsn1, err := c.HostDSN(1, "")
	must(t, err)
	old, err := sql.Open("mysql", dsn1)
	must(t, err)
	defer old.Close()
	_, err = old.ExecContext(ctx, "INSERT INTO orders VALUES (4)")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1290 {
		t.Errorf("a write on the old primary: %v, want error 1290 (read_only)", err)
	}
	must(t, c.WaitReplicated(ctx))
	for node := 1; node <= 3; node++ {
		if n := count(t, c, node); n != 3 {
			t.Errorf("node %d has %d rows after the promotion, want 3", node, n)
		}
	}

	// Kill, Restart, Freeze, Thaw of a replica.
	must(t, c.Kill(3))
	must(t, c.Restart(ctx, 3))
	must(t, c.Freeze(3))
	must(t, c.Thaw(3))
	_, err = db.ExecContext(ctx, "INSERT INTO orders VALUES (5)")
	must(t, err)
	must(t, c.WaitReplicated(ctx))
	if n := count(t, c, 3); n != 4 {
		t.Errorf("node 3 has %d rows after its restart, want 4", n)
	}
	if err := c.Kill(4); err == nil {
		t.Error("Kill(4) of a 3-node cluster: no error")
	}
}

// TestReturnUnfenced runs ExampleCluster_ReturnUnfenced's steps against real servers:
// after Kill(1), Promote(2) and ReturnUnfenced(1), node 1 is writable and replicates from
// no one, node 3 follows node 2, and a new read-write pool writes to node 2 only,
// reporting the two writers.
func TestReturnUnfenced(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := failovertest.Start(t, 2)
	must(t, c.Kill(1))
	must(t, c.Promote(ctx, 2))
	must(t, c.ReturnUnfenced(ctx, 1))
	if err := c.ReturnUnfenced(ctx, 2); err == nil {
		t.Error("ReturnUnfenced(2) of the primary: no error")
	}
	n1 := c.Harness().Node(1)
	if ro, err := n1.QueryInt(ctx, "SELECT @@global.read_only"); err != nil || ro != 0 {
		t.Fatalf("node 1 read_only %d, %v; want 0", ro, err)
	}
	if lag, err := n1.ReplicaLag(ctx); err != nil || lag != -1 {
		t.Errorf("node 1 replica lag %v, %v; want -1 (not a replica)", lag, err)
	}
	var events []failover.Event
	var mu sync.Mutex
	cfg, err := dsn.Parse(c.DSN("targetSessionAttrs=read-write&readTimeout=2s"))
	must(t, err)
	cn, err := mysqlfailover.NewConnector(cfg,
		mysqlfailover.WithEventHook(func(e failover.Event) {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}))
	must(t, err)
	db := sql.OpenDB(cn)
	defer db.Close()
	_, err = db.ExecContext(ctx, "CREATE TABLE orders (id INT PRIMARY KEY)")
	must(t, err)
	for i := 1; i <= 10; i++ {
		_, err = db.ExecContext(ctx, "INSERT INTO orders VALUES (?)", i)
		must(t, err)
	}
	must(t, c.WaitReplicated(ctx))
	if n := count(t, c, 3); n != 10 {
		t.Errorf("node 3 has %d rows, want 10 (it follows node 2)", n)
	}
	dsn1, err := c.HostDSN(1, "")
	must(t, err)
	old, err := sql.Open("mysql", dsn1)
	must(t, err)
	defer old.Close()
	var tables int
	must(t, old.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = 'app' AND table_name = 'orders'").Scan(&tables))
	if tables != 0 {
		t.Errorf("node 1 has the orders table: the pool wrote to it")
	}
	mu.Lock()
	defer mu.Unlock()
	found := false
	for _, e := range events {
		if e.Kind == failover.EventTwoWriters {
			found = true
			if c.NodeOf(e.Host) != 2 || c.NodeOf(e.From) != 1 {
				t.Errorf("two-writers event %v, want writer node 2, from node 1", e)
			}
		}
	}
	if !found {
		t.Errorf("no two-writers event; events: %v", events)
	}
}

// TestOldPrimaryRejoins runs the steps a user takes after a promotion: Kill(1),
// Promote(2), Restart(1). Node 1 comes back read-only as a replica of node 2:
// WaitReplicated returns at once (node 1 holds node 2's position, having written it
// itself), a write on node 2 reaches node 1, and WaitReplicated returns within seconds.
// Then a replica down during a promotion (Kill(3), Promote(1), Restart(3)) follows the
// new primary.
func TestOldPrimaryRejoins(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := failovertest.Start(t, 2)
	db, err := sql.Open("mysqlfailover", c.DSN("targetSessionAttrs=read-write&readTimeout=2s"))
	must(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, "CREATE TABLE orders (id INT PRIMARY KEY)")
	must(t, err)
	_, err = db.ExecContext(ctx, "INSERT INTO orders VALUES (1)")
	must(t, err)
	must(t, c.WaitReplicated(ctx))

	must(t, c.Kill(1))
	must(t, c.Promote(ctx, 2))
	must(t, c.Restart(ctx, 1))
	waitReplicated := func(what string) {
		t.Helper()
		wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
		defer wcancel()
		begin := time.Now()
		err := c.WaitReplicated(wctx)
		took := time.Since(begin)
		t.Logf("WaitReplicated %s: %v, %v", what, took.Round(time.Millisecond), err)
		if err != nil || took > 5*time.Second {
			t.Fatalf("WaitReplicated %s: %v after %v; want nil within 5 s", what, err, took.Round(time.Millisecond))
		}
	}
	waitReplicated("after the restart")
	_, err = db.ExecContext(ctx, "INSERT INTO orders VALUES (2)")
	must(t, err)
	waitReplicated("after a write on node 2")
	for node := 1; node <= 3; node++ {
		if n := count(t, c, node); n != 2 {
			t.Errorf("node %d has %d rows, want 2", node, n)
		}
	}
	n1 := c.Harness().Node(1)
	if ro, err := n1.QueryInt(ctx, "SELECT @@global.read_only"); err != nil || ro != 1 {
		t.Errorf("node 1 read_only %d, %v; want 1", ro, err)
	}
	if lag, err := n1.ReplicaLag(ctx); err != nil || lag < 0 {
		t.Errorf("node 1 replica lag %v, %v; want a replica's (0 or more)", lag, err)
	}

	must(t, c.Kill(3))
	must(t, c.Promote(ctx, 1))
	_, err = db.ExecContext(ctx, "INSERT INTO orders VALUES (3)")
	must(t, err)
	must(t, c.Restart(ctx, 3))
	waitReplicated("after node 3's restart")
	for node := 1; node <= 3; node++ {
		if n := count(t, c, node); n != 3 {
			t.Errorf("node %d has %d rows, want 3", node, n)
		}
	}
}

// rowsOf is node's rows of app.orders as "<id><who>" strings, in id order, read as root.
func rowsOf(t *testing.T, ctx context.Context, c *failovertest.Cluster, node int) string {
	t.Helper()
	var rows []string
	r, err := c.Harness().Node(node).Admin().QueryContext(ctx, "SELECT CONCAT(id, who) FROM app.orders ORDER BY id")
	must(t, err)
	defer r.Close()
	for r.Next() {
		var s string
		must(t, r.Scan(&s))
		rows = append(rows, s)
	}
	must(t, r.Err())
	return strings.Join(rows, " ")
}

// TestOldPrimaryRejoinsAfterLostWrites: writes node 1 acknowledged that node 2 never
// received are lost in the promotion of node 2, which then takes another row under the
// same key. A node that holds them is rebuilt from node 2 and replicates from it, its rows
// node 2's: node 1 (partitioned when it took the write, then killed) on its Restart; node
// 3 (it received the write while node 2 was cut off) during the Promote; node 1 partitioned
// and never killed (two writers while the partition lasts) on its Heal.
func TestOldPrimaryRejoinsAfterLostWrites(t *testing.T) {
	for _, tc := range []struct {
		name string
		cut  int  // the node partitioned while node 1 takes the write
		kill bool // node 1 killed before the promotion, restarted after it
	}{
		{"node 1 killed", 1, true},
		{"node 3 ahead", 2, true},
		{"node 1 partitioned", 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			c := failovertest.Start(t, 2)
			db, err := sql.Open("mysqlfailover", c.DSN("targetSessionAttrs=read-write&readTimeout=2s"))
			must(t, err)
			defer db.Close()
			dsn2, err := c.HostDSN(2, "")
			must(t, err)
			db2, err := sql.Open("mysql", dsn2) // node 2 alone: with node 1 partitioned, both write
			must(t, err)
			defer db2.Close()
			_, err = db.ExecContext(ctx, "CREATE TABLE orders (id INT PRIMARY KEY, who VARCHAR(10))")
			must(t, err)
			_, err = db.ExecContext(ctx, "INSERT INTO orders VALUES (1, 'node1')")
			must(t, err)
			must(t, c.WaitReplicated(ctx))

			must(t, c.Partition(ctx, tc.cut))
			_, err = db.ExecContext(ctx, "INSERT INTO orders VALUES (2, 'lost')") // acknowledged by node 1
			must(t, err)
			if tc.cut == 2 {
				waitRows(t, ctx, c, 3, "1node1 2lost")
			}
			if tc.kill {
				must(t, c.Kill(1))
				must(t, c.Heal(ctx, tc.cut))
			}
			must(t, c.Promote(ctx, 2))
			_, err = db2.ExecContext(ctx, "INSERT INTO orders VALUES (2, 'node2')")
			must(t, err)
			if tc.kill {
				must(t, c.Restart(ctx, 1))
			} else {
				must(t, c.Heal(ctx, 1))
			}
			_, err = db2.ExecContext(ctx, "INSERT INTO orders VALUES (3, 'node2')")
			must(t, err)
			wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
			defer wcancel()
			begin := time.Now()
			err = c.WaitReplicated(wctx)
			took := time.Since(begin)
			if err != nil || took > 5*time.Second {
				t.Fatalf("WaitReplicated: %v after %v; want nil within 5 s", err, took.Round(time.Millisecond))
			}
			for node := 1; node <= 3; node++ {
				if got, want := rowsOf(t, ctx, c, node), "1node1 2node2 3node2"; got != want {
					t.Errorf("node %d has rows %q, want node 2's %q", node, got, want)
				}
			}
			if ro, err := c.Harness().Node(1).QueryInt(ctx, "SELECT @@global.read_only"); err != nil || ro != 1 {
				t.Errorf("node 1 read_only %d, %v; want 1", ro, err)
			}
		})
	}
}

// waitRows waits up to 5 s until node's rows of app.orders are want.
func waitRows(t *testing.T, ctx context.Context, c *failovertest.Cluster, node int, want string) {
	t.Helper()
	var got string
	for end := time.Now().Add(5 * time.Second); time.Now().Before(end); time.Sleep(20 * time.Millisecond) {
		if got = rowsOf(t, ctx, c, node); got == want {
			return
		}
	}
	t.Fatalf("node %d has rows %q, want %q", node, got, want)
}

// TestWaitReplicatedNotAReplica: a node that replicates from no one, or whose replication
// is stopped, fails WaitReplicated at once, naming the node and why, instead of a wait of
// 30 s for a position it can never reach.
func TestWaitReplicatedNotAReplica(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := failovertest.Start(t, 2)
	n2, n3 := c.Harness().Node(2), c.Harness().Node(3)
	must(t, n3.Exec(ctx, "STOP SLAVE"))
	must(t, n3.Exec(ctx, "RESET SLAVE ALL"))
	must(t, n2.Exec(ctx, "STOP SLAVE"))
	must(t, c.Harness().Node(1).Exec(ctx, "CREATE TABLE app.t (id INT PRIMARY KEY)"))
	wctx, wcancel := context.WithTimeout(ctx, 20*time.Second)
	defer wcancel()
	begin := time.Now()
	err := c.WaitReplicated(wctx)
	took := time.Since(begin)
	t.Logf("WaitReplicated: %v after %v", err, took.Round(time.Millisecond))
	if took > 3*time.Second {
		t.Errorf("WaitReplicated took %v, want a failure at once", took.Round(time.Millisecond))
	}
	if err == nil {
		t.Fatal("WaitReplicated: nil; want errors for nodes 2 and 3")
	}
	for _, want := range []string{"node 3 is not a replica: it replicates from no one", "node 2's replication is stopped"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("WaitReplicated: %v; want it to say %q", err, want)
		}
	}
}

// TestAddRemoveNode runs ExampleCluster_AddNode's steps, and a Galera node's: a pool with
// discoverHosts reads on a replica added to the running primary, and on a node added to
// the running Galera cluster, neither in its DSN, and drops each once it is removed.
func TestAddRemoveNode(t *testing.T) {
	for _, galera := range []bool{false, true} {
		name := "replica"
		if galera {
			name = "galera"
		}
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var c *failovertest.Cluster
			if galera {
				c = failovertest.StartGalera(t, 2)
			} else {
				c = failovertest.Start(t, 1)
				must(t, c.GrantDiscovery(ctx))
			}
			cfg, err := dsn.Parse(c.DSN("discoverHosts=true&replicaReads=true&checkInterval=200ms"))
			must(t, err)
			cn, err := mysqlfailover.NewConnector(cfg)
			must(t, err)
			db := sql.OpenDB(cn)
			defer db.Close()
			node, err := c.AddNode(ctx)
			must(t, err)
			if node != 3 || c.Nodes() != 3 {
				t.Fatalf("AddNode: node %d of %d, want 3 of 3", node, c.Nodes())
			}
			port := c.Harness().Node(node).Port()
			deadline := time.Now().Add(10 * time.Second)
			for served := false; !served; {
				if time.Now().After(deadline) {
					t.Fatalf("node 3 served no read: %+v", cn.Stats().Hosts)
				}
				var p int
				must(t, db.QueryRowContext(mysqlfailover.WithReadIntent(ctx, ""), "SELECT @@port").Scan(&p))
				served = p == port
			}
			must(t, c.RemoveNode(ctx, node))
			if !galera {
				// The primary notices the replica's closed connection at its next write.
				_, err = db.ExecContext(ctx, "CREATE TABLE removed (id INT)")
				must(t, err)
				_, err = db.ExecContext(ctx, "INSERT INTO removed VALUES (1)")
				must(t, err)
			}
			addr := c.Harness().Node(node).ProxyAddr()
			for listed := true; listed; {
				if time.Now().After(deadline.Add(10 * time.Second)) {
					t.Fatalf("node 3 still in the pool's list after RemoveNode: %+v", cn.Stats().Hosts)
				}
				listed = false
				for _, h := range cn.Stats().Hosts {
					listed = listed || h.Addr == addr
				}
				time.Sleep(20 * time.Millisecond)
			}
		})
	}
}
