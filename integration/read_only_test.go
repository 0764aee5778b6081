package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// readOnlyState is what the proxy and the server say about a pinned connection.
type readOnlyState struct {
	node       int  // SELECT @@port
	txReadOnly int  // @@session.tx_read_only
	proxyRO    bool // mysqlfailover.Conn.ReadOnly()
	proxyHost  int  // node of mysqlfailover.Conn.Host()
}

func readOnlyStateOf(ctx context.Context, c *harness.Cluster, conn *sql.Conn) (readOnlyState, error) {
	var s readOnlyState
	var port int
	if err := conn.QueryRowContext(ctx, "SELECT @@port, @@session.tx_read_only").Scan(&port, &s.txReadOnly); err != nil {
		return s, err
	}
	s.node = c.NodeByPort(port)
	err := conn.Raw(func(dc any) error {
		pc, ok := mysqlfailover.ConnOf(dc)
		if !ok {
			return fmt.Errorf("driver connection is %T, not a mysqlfailover connection", dc)
		}
		s.proxyRO = pc.ReadOnly()
		s.proxyHost = c.NodeByAddr(pc.Host())
		return nil
	})
	return s, err
}

// readOnlySetRO calls mysqlfailover.Conn.SetReadOnly through Raw.
func readOnlySetRO(ctx context.Context, conn *sql.Conn, ro bool) error {
	return conn.Raw(func(dc any) error {
		pc, ok := mysqlfailover.ConnOf(dc)
		if !ok {
			return fmt.Errorf("driver connection is %T, not a mysqlfailover connection", dc)
		}
		return pc.SetReadOnly(ctx, ro)
	})
}

// readOnlyRows counts the rows of app.ro_items with id on node i (admin).
func readOnlyRows(t *testing.T, ctx context.Context, c *harness.Cluster, i, id int) int64 {
	t.Helper()
	n, err := c.Node(i).QueryInt(ctx, "SELECT COUNT(*) FROM app.ro_items WHERE id = ?", id)
	must(t, err)
	return n
}

// readOnlyToNode2 disables node 1's proxy and moves the pinned connection to node 2: at
// most one statement may fail, with a *failover.FailoverError. It returns when the
// connection reports node 2.
func readOnlyToNode2(t *testing.T, ctx context.Context, c *harness.Cluster, conn *sql.Conn) (failovers int) {
	t.Helper()
	must(t, c.Node(1).Disable())
	for k := 0; k < 3; k++ {
		node, err := nodeOf(ctx, c, conn)
		var fe *failover.FailoverError
		switch {
		case err == nil && node == 2:
			return failovers
		case err == nil:
			t.Fatalf("statement after disabling node 1 ran on node %d, want 2", node)
		case errors.As(err, &fe):
			failovers++
			if failovers > 1 {
				t.Fatalf("a second failover error: %v", err)
			}
		default:
			t.Fatalf("statement after disabling node 1: %T %v, want success or a *failover.FailoverError", err, err)
		}
	}
	t.Fatalf("the connection did not reach node 2")
	return failovers
}

// TestReadOnlyOnSecondary (cases 13, 14): node 2's global read_only is off, so the only
// thing between the app and a write on node 2 is the session flag the proxy sets.
//
//   - failOverReadOnly=true (default), secondsBeforeRetryMaster=2: after node 1 fails, a
//     pinned connection on node 2 is read-only: INSERT fails with 1792 (a plain
//     *mysql.MySQLError, no switch), SELECT works, ReadOnly() is true and SetReadOnly(false)
//     does not change that, @@session.tx_read_only is 1. Once node 1 is back and 2 s have
//     passed, the same connection falls back to node 1 at a statement: writes work there,
//     ReadOnly() is false, tx_read_only 0.
//   - failOverReadOnly=false: on node 2 the INSERT succeeds and tx_read_only is 0.
func TestReadOnlyOnSecondary(t *testing.T) {
	c := harness.Start(t, 2)
	ctx := ctxT(t, time.Minute)
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.ro_items (id INT PRIMARY KEY, v INT NOT NULL)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	// With read_only ON MariaDB answers 1290 before it looks at the session flag.
	must(t, c.Node(2).SetReadOnly(ctx, false))
	defer c.Node(1).Enable()

	t.Run("failOverReadOnly=true", func(t *testing.T) {
		const retryMaster = 2 * time.Second
		name := t.Name()
		db := openDB(t, "mysqlfailover", c.DSN("readTimeout=2s&secondsBeforeRetryMaster=2&queriesBeforeRetryMaster=0"))
		defer db.Close()
		conn, err := db.Conn(ctx)
		must(t, err)
		defer conn.Close()

		s, err := readOnlyStateOf(ctx, c, conn)
		must(t, err)
		if s.node != 1 || s.proxyHost != 1 || s.proxyRO || s.txReadOnly != 0 {
			t.Fatalf("at the start: %+v, want node 1, read-write", s)
		}

		failovers := readOnlyToNode2(t, ctx, c, conn)
		onNode2 := time.Now()

		// INSERT on node 2: 1792 from the session flag, untouched, no switch.
		_, err = conn.ExecContext(ctx, "INSERT INTO ro_items (id, v) VALUES (201, 1)")
		var me *mysql.MySQLError
		var fe *failover.FailoverError
		if !errors.As(err, &me) || me.Number != 1792 {
			t.Errorf("INSERT on node 2: %v, want MySQL error 1792", err)
		}
		if errors.As(err, &fe) {
			t.Errorf("INSERT on node 2: a data error reported as a failover: %v", err)
		}
		var cnt int
		if err := conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM ro_items").Scan(&cnt); err != nil {
			t.Errorf("SELECT on node 2: %v", err)
		}
		s, err = readOnlyStateOf(ctx, c, conn)
		must(t, err)
		if s.node != 2 || s.proxyHost != 2 || !s.proxyRO || s.txReadOnly != 1 {
			t.Errorf("on node 2: %+v, want node 2, ReadOnly() true, tx_read_only 1", s)
		}

		// SetReadOnly(false) is recorded, not applied, while on the secondary.
		if err := readOnlySetRO(ctx, conn, false); err != nil {
			t.Errorf("SetReadOnly(false) on node 2: %v", err)
		}
		s, err = readOnlyStateOf(ctx, c, conn)
		must(t, err)
		if s.node != 2 || !s.proxyRO || s.txReadOnly != 1 {
			t.Errorf("after SetReadOnly(false) on node 2: %+v, want still read-only on node 2", s)
		}
		_, err = conn.ExecContext(ctx, "INSERT INTO ro_items (id, v) VALUES (202, 1)")
		if !errors.As(err, &me) || me.Number != 1792 {
			t.Errorf("INSERT on node 2 after SetReadOnly(false): %v, want MySQL error 1792", err)
		}
		if n := readOnlyRows(t, ctx, c, 2, 201) + readOnlyRows(t, ctx, c, 2, 202); n != 0 {
			t.Errorf("node 2 has %d of the rejected rows", n)
		}

		// Node 1 back; fall-back at a statement once 2 s have passed since the switch.
		must(t, c.Node(1).Enable())
		enabled := time.Now()
		var back time.Time
		polls := 0
		for deadline := time.Now().Add(8 * time.Second); time.Now().Before(deadline); {
			polls++
			node, err := nodeOf(ctx, c, conn)
			if err != nil {
				t.Fatalf("poll %d waiting for the fall-back: %v", polls, err)
			}
			if node == 1 {
				back = time.Now()
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if back.IsZero() {
			t.Fatalf("no fall-back to node 1 within 8 s of enabling it (%d polls)", polls)
		}
		if d := back.Sub(onNode2); d < retryMaster-100*time.Millisecond {
			t.Errorf("fell back %v after the switch, before secondsBeforeRetryMaster=2", d)
		}
		s, err = readOnlyStateOf(ctx, c, conn)
		must(t, err)
		if s.node != 1 || s.proxyHost != 1 || s.proxyRO || s.txReadOnly != 0 {
			t.Errorf("after the fall-back: %+v, want node 1, ReadOnly() false, tx_read_only 0", s)
		}
		if _, err := conn.ExecContext(ctx, "INSERT INTO ro_items (id, v) VALUES (101, 1)"); err != nil {
			t.Errorf("INSERT on node 1 after the fall-back: %v", err)
		}
		if n := readOnlyRows(t, ctx, c, 1, 101); n != 1 {
			t.Errorf("node 1 has %d rows with id 101, want 1", n)
		}

		t.Logf("FIGURE %s: failover_errors_on_switch=%d", name, failovers)
		t.Logf("FIGURE %s: switch_to_fallback=%v", name, back.Sub(onNode2).Round(time.Millisecond))
		t.Logf("FIGURE %s: enable_to_fallback=%v", name, back.Sub(enabled).Round(time.Millisecond))
		t.Logf("FIGURE %s: fallback_polls=%d", name, polls)
	})

	t.Run("failOverReadOnly=false", func(t *testing.T) {
		name := t.Name()
		db := openDB(t, "mysqlfailover", c.DSN("readTimeout=2s&failOverReadOnly=false&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"))
		defer db.Close()
		conn, err := db.Conn(ctx)
		must(t, err)
		defer conn.Close()
		s, err := readOnlyStateOf(ctx, c, conn)
		must(t, err)
		if s.node != 1 || s.proxyRO || s.txReadOnly != 0 {
			t.Fatalf("at the start: %+v, want node 1, read-write", s)
		}

		failovers := readOnlyToNode2(t, ctx, c, conn)
		defer func() { must(t, c.Node(1).Enable()) }()

		if _, err := conn.ExecContext(ctx, "INSERT INTO ro_items (id, v) VALUES (203, 1)"); err != nil {
			t.Errorf("INSERT on node 2 with failOverReadOnly=false: %v", err)
		}
		s, err = readOnlyStateOf(ctx, c, conn)
		must(t, err)
		if s.node != 2 || s.proxyHost != 2 || s.proxyRO || s.txReadOnly != 0 {
			t.Errorf("on node 2: %+v, want node 2, ReadOnly() false, tx_read_only 0", s)
		}
		if n := readOnlyRows(t, ctx, c, 2, 203); n != 1 {
			t.Errorf("node 2 has %d rows with id 203, want 1", n)
		}
		t.Logf("FIGURE %s: failover_errors_on_switch=%d", name, failovers)
	})
}
