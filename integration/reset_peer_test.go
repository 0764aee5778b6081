package integration

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"
	"time"

	_ "github.com/mysqlfailover/mysqlfailover" // registers "mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// resetPeerCounter reads counters.n for id 1 on node i through its admin connection.
func resetPeerCounter(t *testing.T, ctx context.Context, c *harness.Cluster, i int) int64 {
	t.Helper()
	n, err := c.Node(i).QueryInt(ctx, "SELECT n FROM app.counters WHERE id = 1")
	must(t, err)
	return n
}

// TestResetPeerDuringUpdate (case 01): the connection under an autocommit
// `UPDATE counters SET n=n+1` is reset by the primary's proxy, either after the server ran
// it (reset_peer downstream: the reply is lost) or before (upstream: the request is lost).
// The caller gets a *failover.FailoverError that does not match driver.ErrBadConn, the
// statement ran on node 1 exactly once (downstream) or not at all (upstream), and it was
// never replayed: not by database/sql on another pooled connection (pool of 3), not by the
// proxy on node 2.
//
// To make a replay on node 2 visible, node 2 is made writable for the app user (global
// read_only off, failOverReadOnly=false) and its replication is stopped, so its n changes
// only if the app's UPDATE runs there. At the end replication is started again and node
// 2 must catch up to node 1 and equal it (a weak check: the harness replicates in ROW
// format, which copies node 1's values over node 2's; the per-run deltas on node 2 with
// replication stopped are the real test of "not replayed").
func TestResetPeerDuringUpdate(t *testing.T) {
	c := harness.Start(t, 2)
	ctx := ctxT(t, time.Minute)
	n1, n2 := c.Node(1), c.Node(2)

	must(t, n1.Exec(ctx, "CREATE TABLE app.counters (id INT PRIMARY KEY, n INT NOT NULL)"))
	must(t, n1.Exec(ctx, "INSERT INTO app.counters (id, n) VALUES (1, 0)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	must(t, n2.SetReadOnly(ctx, false))
	must(t, n2.Exec(ctx, "STOP SLAVE"))

	const dsnParams = "readTimeout=2s&failOverReadOnly=false&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"
	const update = "UPDATE counters SET n=n+1 WHERE id=1" // literal: no PREPARE in front of it

	run := func(t *testing.T, pool int, upstream bool) {
		name := t.Name()
		db := openDB(t, "mysqlfailover", c.DSN(dsnParams))
		defer db.Close()
		db.SetMaxOpenConns(pool)
		db.SetMaxIdleConns(pool)

		// Warm up: pool connections on node 1 (with 3, database/sql has other connections
		// it could re-run the statement on).
		conns := make([]*sql.Conn, 0, pool)
		for range pool {
			conn, err := db.Conn(ctx)
			must(t, err)
			var one int
			must(t, conn.QueryRowContext(ctx, "SELECT 1").Scan(&one))
			node, err := nodeOf(ctx, c, conn)
			must(t, err)
			if node != 1 {
				t.Fatalf("warm-up connection on node %d, want 1", node)
			}
			conns = append(conns, conn)
		}
		for _, conn := range conns {
			must(t, conn.Close())
		}
		sessions, err := n1.AppSessions(ctx)
		must(t, err)
		if sessions != int64(pool) {
			t.Fatalf("app sessions on node 1: %d, want %d", sessions, pool)
		}

		before1 := resetPeerCounter(t, ctx, c, 1)
		before2 := resetPeerCounter(t, ctx, c, 2)

		must(t, n1.ResetPeer(upstream))
		ectx, cancel := context.WithTimeout(ctx, 15*time.Second)
		start := time.Now()
		_, err = db.ExecContext(ectx, update)
		took := time.Since(start)
		cancel()
		must(t, n1.ClearToxics())

		after1 := resetPeerCounter(t, ctx, c, 1)
		after2 := resetPeerCounter(t, ctx, c, 2)
		t.Logf("UPDATE returned after %v: %v", took, err)

		want1 := before1 + 1 // downstream: the server ran it, the reply was lost
		if upstream {
			want1 = before1 // the request was lost
		}
		switch {
		case err == nil:
			t.Errorf("UPDATE returned no error, want a *failover.FailoverError")
		case errors.Is(err, driver.ErrBadConn):
			t.Errorf("UPDATE error matches driver.ErrBadConn (database/sql would re-run it): %v", err)
		}
		var fe *failover.FailoverError
		maybe := false
		if err != nil && !errors.As(err, &fe) {
			t.Errorf("UPDATE error %T is not a *failover.FailoverError: %v", err, err)
		} else if fe != nil {
			maybe = fe.MaybeExecuted
			if f, cur := c.NodeByAddr(fe.Failed), c.NodeByAddr(fe.Current); f != 1 || cur != 2 {
				t.Errorf("FailoverError: failed node %d, current node %d, want 1 and 2: %v", f, cur, fe)
			}
			if !fe.MaybeExecuted {
				t.Errorf("FailoverError.MaybeExecuted is false, but the request was written before the failure: %v", fe)
			}
		}
		if after1 != want1 {
			t.Errorf("node 1: n went from %d to %d, want %d (ran %d times there)", before1, after1, want1, after1-before1)
		}
		if after2 != before2 {
			t.Errorf("node 2: n went from %d to %d: the UPDATE was replayed on node 2", before2, after2)
		}

		// The pool has failed over: the next statement runs on node 2, and nothing
		// changes the counters afterwards (no delayed replay).
		node, err := nodeOf(ctx, c, db)
		if err != nil || node != 2 {
			t.Errorf("next statement: node %d, %v; want node 2", node, err)
		}
		if a1, a2 := resetPeerCounter(t, ctx, c, 1), resetPeerCounter(t, ctx, c, 2); a1 != after1 || a2 != after2 {
			t.Errorf("counters changed after the failed UPDATE returned: node 1 %d -> %d, node 2 %d -> %d", after1, a1, after2, a2)
		}

		t.Logf("FIGURE %s: update_error_after=%v", name, took.Round(time.Millisecond))
		t.Logf("FIGURE %s: node1_runs=%d", name, after1-before1)
		t.Logf("FIGURE %s: node2_runs=%d", name, after2-before2)
		t.Logf("FIGURE %s: maybe_executed=%v", name, maybe)
	}

	for _, pool := range []int{1, 3} {
		t.Run(fmt.Sprintf("pool=%d", pool), func(t *testing.T) {
			t.Run("downstream", func(t *testing.T) { run(t, pool, false) })
			t.Run("upstream", func(t *testing.T) { run(t, pool, true) })
		})
	}

	// Replication back on: node 2 catches up with node 1 and is then equal to it.
	must(t, n2.Exec(ctx, "START SLAVE"))
	wctx, cancel := context.WithTimeout(ctx, 15*time.Second)
	defer cancel()
	must(t, c.WaitReplicasCaughtUp(wctx))
	final1 := resetPeerCounter(t, ctx, c, 1)
	final2 := resetPeerCounter(t, ctx, c, 2)
	if final1 != 2 {
		t.Errorf("node 1: n = %d after two downstream runs and two upstream runs, want 2", final1)
	}
	if final2 != final1 {
		t.Errorf("node 2: n = %d after catching up, node 1: %d; want equal", final2, final1)
	}
	must(t, n2.SetReadOnly(ctx, true))
	t.Logf("FIGURE %s: node1_final_n=%d", t.Name(), final1)
	t.Logf("FIGURE %s: node2_final_n=%d", t.Name(), final2)
}
