package failovertest_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	_ "github.com/mysqlfailover/mysqlfailover"

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
