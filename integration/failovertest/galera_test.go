package failovertest_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/integration/failovertest"
)

// TestGaleraFixture: StartGalera's cluster as a user gets it (the DSN, the app user on
// every node) and the fixture's Galera faults wired to the right node. The harness's own
// TestGaleraHarness covers every fault in depth.
func TestGaleraFixture(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := failovertest.StartGalera(t, 3)
	if c.Nodes() != 3 || c.Primary() != 1 {
		t.Fatalf("%d nodes, primary %d; want 3, 1", c.Nodes(), c.Primary())
	}
	for i := 1; i <= 3; i++ {
		s, err := c.Status(ctx, i)
		must(t, err)
		if !s.Synced() || s.ClusterSize != 3 {
			t.Errorf("node %d: %v, want Synced in a cluster of 3", i, s)
		}
	}
	db, err := sql.Open("mysqlfailover", c.DSN("readTimeout=2s"))
	must(t, err)
	defer db.Close()
	_, err = db.ExecContext(ctx, "CREATE TABLE orders (id INT PRIMARY KEY)")
	must(t, err)
	_, err = db.ExecContext(ctx, "INSERT INTO orders VALUES (1)")
	must(t, err)
	must(t, c.WaitReplicated(ctx))
	if n := count(t, c, 3); n != 1 {
		t.Errorf("node 3 has %d orders, want 1 (Galera replicates)", n)
	}

	// The app user on node 2 alone, through its proxy.
	dsn, err := c.HostDSN(2, "")
	must(t, err)
	node2, err := sql.Open("mysql", dsn)
	must(t, err)
	defer node2.Close()
	refused := func(what string) {
		t.Helper()
		_, err := node2.ExecContext(ctx, "INSERT INTO orders VALUES (2)")
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1047 {
			t.Errorf("%s: an INSERT on node 2 gave %v, want error 1047", what, err)
		}
	}

	must(t, c.RejectQueries(ctx, 2, failovertest.RejectAll))
	refused("reject queries")
	must(t, c.RejectQueries(ctx, 2, failovertest.RejectNone))

	must(t, c.Desync(ctx, 2, true))
	if s, err := c.Status(ctx, 2); err != nil || s.LocalStateComment != "Donor/Desynced" {
		t.Errorf("node 2 desynced: %v (%v)", s, err)
	}
	must(t, c.Desync(ctx, 2, false))

	must(t, c.Isolate(ctx, 2))
	refused("isolated")
	if s, err := c.Status(ctx, 1); err != nil || s.ClusterSize != 2 {
		t.Errorf("node 1 with node 2 isolated: %v (%v), want a cluster of 2", s, err)
	}
	must(t, c.Unisolate(ctx, 2))
	must(t, c.WaitSynced(ctx))

	if err := c.Promote(ctx, 2); err == nil || !strings.Contains(err.Error(), "Galera") {
		t.Errorf("Promote on a Galera cluster: %v, want an error", err)
	}
	if err := c.Isolate(ctx, 4); err == nil {
		t.Error("Isolate(4) of a 3-node cluster: no error")
	}
}

// TestGaleraOnReplicationCluster: the Galera faults refuse a primary with replicas.
func TestGaleraOnReplicationCluster(t *testing.T) {
	c := failovertest.Start(t, 0)
	ctx := context.Background()
	if err := c.Isolate(ctx, 1); err == nil || !strings.Contains(err.Error(), "WithGalera") {
		t.Errorf("Isolate on a replication cluster: %v, want an error saying it is not Galera", err)
	}
	if _, err := c.Status(ctx, 1); err == nil {
		t.Error("Status on a replication cluster: no error")
	}
}
