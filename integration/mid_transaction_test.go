package integration

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Cases 03 (mid-transaction-host-switch) and 07 (commit-outcome-unknown): a transaction
// lives and dies on one host. Nothing of it is replayed on the secondary, whose read_only
// is turned off and whose replication is stopped so that a row could only appear there if
// the driver wrote it.

// midTxCounters are the statement counters of node 2 that a replay would move.
var midTxCounters = []string{"Com_begin", "Com_insert", "Com_commit", "Com_rollback"}

func midTxDiff(before, after map[string]int64) string {
	s := ""
	for _, k := range midTxCounters {
		if d := after[k] - before[k]; d != 0 {
			s += fmt.Sprintf(" %s+%d", k, d)
		}
	}
	return s
}

// midTxSetup starts a cluster with table app.t(id PK) everywhere, then makes node 2 a
// writable island: read_only OFF, replication stopped (started again when the test ends).
// It returns a MaxOpen=1 pool built with the event hook.
func midTxSetup(t *testing.T, params string) (*harness.Cluster, context.Context, *sql.DB, *eventLog) {
	t.Helper()
	c := harness.Start(t, 3)
	ctx := ctxT(t, 40*time.Second)
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.t (id INT PRIMARY KEY)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	n2 := c.Node(2)
	must(t, n2.SetReadOnly(ctx, false))
	must(t, n2.Exec(ctx, "STOP SLAVE"))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := n2.Exec(ctx, "START SLAVE"); err != nil {
			t.Errorf("START SLAVE on node 2: %v", err)
		}
	})
	db, ev := openWithEvents(t, c.DSN(params))
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	if node, err := nodeOf(ctx, c, db); err != nil || node != 1 {
		t.Fatalf("before the fault: node %d, %v; want node 1", node, err)
	}
	return c, ctx, db, ev
}

// midTxRows counts the rows of app.t with the given ids on node n (admin, no proxy).
func midTxRows(ctx context.Context, t *testing.T, n *harness.Node, ids string) int64 {
	t.Helper()
	v, err := n.QueryInt(ctx, "SELECT COUNT(*) FROM app.t WHERE id IN ("+ids+")")
	must(t, err)
	return v
}

// midTxWaitNoSessions waits (at most 5 s) until node n has no app session left, so that
// the server has rolled back whatever the lost session had open.
func midTxWaitNoSessions(ctx context.Context, t *testing.T, n *harness.Node) time.Duration {
	t.Helper()
	start := time.Now()
	for {
		s, err := n.AppSessions(ctx)
		must(t, err)
		if s == 0 {
			return time.Since(start)
		}
		if time.Since(start) > 5*time.Second {
			t.Fatalf("node %d still has %d app sessions 5 s after the fault", n.Index(), s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// midTxNode3CaughtUp waits until node 3 (still replicating) has applied everything node 1
// logged, so that a row node 1 committed would be visible there.
func midTxNode3CaughtUp(ctx context.Context, t *testing.T, c *harness.Cluster) {
	t.Helper()
	pos, err := c.Node(1).QueryString(ctx, "SELECT @@GLOBAL.gtid_binlog_pos")
	must(t, err)
	v, err := c.Node(3).QueryInt(ctx, "SELECT MASTER_GTID_WAIT(?, 5)", pos)
	must(t, err)
	if v != 0 {
		t.Fatalf("node 3 did not reach node 1's position %q within 5 s", pos)
	}
}

func TestMidTransactionFailure(t *testing.T) {
	for _, end := range []string{"commit", "rollback"} {
		t.Run(end, func(t *testing.T) {
			name := "TestMidTransactionFailure/" + end
			c, ctx, db, ev := midTxSetup(t, "failOverReadOnly=false&readTimeout=2s&hostTimeout=1s")
			n1, n2 := c.Node(1), c.Node(2)
			before := midTxStatus(ctx, t, n2)

			tx, err := db.BeginTx(ctx, nil)
			must(t, err)
			_, err = tx.ExecContext(ctx, "INSERT INTO t VALUES (1)")
			must(t, err)
			if node, err := nodeOf(ctx, c, tx); err != nil || node != 1 {
				t.Fatalf("transaction on node %d, %v; want node 1", node, err)
			}

			must(t, n1.Disable())

			start := time.Now()
			_, err2 := tx.ExecContext(ctx, "INSERT INTO t VALUES (2)")
			d2 := time.Since(start)
			t.Logf("INSERT 2: %v", err2)
			var fe *failover.FailoverError
			if !errors.As(err2, &fe) {
				t.Errorf("INSERT 2 after node 1 went away: %v, want a *failover.FailoverError", err2)
			} else {
				if c.NodeByAddr(fe.Failed) != 1 || c.NodeByAddr(fe.Current) != 2 {
					t.Errorf("FailoverError Failed=%q Current=%q, want node 1 and node 2", fe.Failed, fe.Current)
				}
			}
			if !errors.Is(err2, failover.ErrTxLost) {
				t.Errorf("INSERT 2: %v, want it to match failover.ErrTxLost", err2)
			}
			if errors.Is(err2, sqldriver.ErrBadConn) {
				t.Errorf("INSERT 2 matches driver.ErrBadConn: database/sql would re-run it")
			}
			afterFail := midTxStatus(ctx, t, n2)

			var d3 time.Duration
			var endErr error
			if end == "commit" {
				start = time.Now()
				_, err3 := tx.ExecContext(ctx, "INSERT INTO t VALUES (3)")
				d3 = time.Since(start)
				t.Logf("INSERT 3: %v", err3)
				if !errors.Is(err3, failover.ErrTxLost) {
					t.Errorf("INSERT 3 in the lost transaction: %v, want failover.ErrTxLost", err3)
				}
				endErr = tx.Commit()
				t.Logf("Commit: %v", endErr)
				if endErr == nil || errors.Is(endErr, sql.ErrTxDone) {
					t.Errorf("Commit of the lost transaction: %v, want an error other than sql.ErrTxDone", endErr)
				}
				if !errors.Is(endErr, failover.ErrTxLost) {
					t.Errorf("Commit: %v, want failover.ErrTxLost", endErr)
				}
				if errors.Is(endErr, failover.ErrCommitOutcomeUnknown) {
					t.Errorf("Commit of a transaction known to be lost says the outcome is unknown: %v", endErr)
				}
			} else {
				endErr = tx.Rollback()
				t.Logf("Rollback: %v", endErr)
				if endErr != nil && !commErr(endErr) {
					t.Errorf("Rollback of the lost transaction: %v, want nil or a connection error", endErr)
				}
			}
			afterEnd := midTxStatus(ctx, t, n2)
			must(t, n1.Enable())
			rolledBackIn := midTxWaitNoSessions(ctx, t, n1)
			midTxNode3CaughtUp(ctx, t, c)
			rows := map[int]int64{}
			for i := 1; i <= 3; i++ {
				rows[i] = midTxRows(ctx, t, c.Node(i), "1,2,3")
			}

			_, err4 := db.ExecContext(ctx, "INSERT INTO t VALUES (4)")
			// Control: the counters do see the driver's writes on node 2.
			control := midTxDiff(afterEnd, midTxStatus(ctx, t, n2))
			row4 := [4]int64{}
			for i := 1; i <= 3; i++ {
				row4[i] = midTxRows(ctx, t, c.Node(i), "4")
			}

			t.Logf("FIGURE %s: insert2_ms=%d", name, d2.Milliseconds())
			if end == "commit" {
				t.Logf("FIGURE %s: insert3_ms=%d", name, d3.Milliseconds())
			}
			t.Logf("FIGURE %s: %s_err_is_nil=%v", name, end, endErr == nil)
			t.Logf("FIGURE %s: node1_session_gone_ms=%d", name, rolledBackIn.Milliseconds())
			t.Logf("FIGURE %s: rows_1_3_on_nodes=%d,%d,%d", name, rows[1], rows[2], rows[3])
			t.Logf("FIGURE %s: node2_counters_delta_during_tx=%q", name, midTxDiff(before, afterEnd))
			t.Logf("FIGURE %s: row4_on_nodes=%d,%d,%d", name, row4[1], row4[2], row4[3])
			t.Logf("FIGURE %s: switch_events=%d host_failed_events=%d", name,
				ev.count(failover.EventSwitch, ""), ev.count(failover.EventHostFailed, n1.ProxyAddr()))

			if d := midTxDiff(before, afterFail); d != "" {
				t.Errorf("node 2 ran statements while INSERT 2 failed over:%s", d)
			}
			if d := midTxDiff(afterFail, afterEnd); d != "" {
				t.Errorf("node 2 ran statements of the lost transaction after INSERT 2 (INSERT 3 / %s):%s", end, d)
			}
			for i := 1; i <= 3; i++ {
				if rows[i] != 0 {
					t.Errorf("node %d has %d of the rows 1-3 of the lost transaction, want 0", i, rows[i])
				}
			}
			if err4 != nil {
				t.Errorf("autocommit INSERT 4 after the lost transaction: %v", err4)
			} else if control != " Com_insert+1" {
				t.Errorf("node 2's counters after INSERT 4 moved by %q, want \" Com_insert+1\" (the replay check would be blind)", control)
			}
			if row4[2] != 1 || row4[1] != 0 {
				t.Errorf("row 4 on nodes 1, 2: %d, %d; want it on node 2 only", row4[1], row4[2])
			}
			if n := ev.count(failover.EventSwitch, n2.ProxyAddr()); n != 1 {
				t.Errorf("%d switch events to node 2, want 1", n)
			}
		})
	}
}

func TestCommitOutcomeUnknown(t *testing.T) {
	// blackhole: the harness's Blackhole drops both directions, so COMMIT never reaches
	// node 1; the client only sees its read time out after readTimeout. reply-lost: a
	// downstream reset_peer, node 1 commits and the reply is lost. The client must get the
	// same error class in both.
	for _, fault := range []string{"blackhole", "reply-lost"} {
		t.Run(fault, func(t *testing.T) {
			name := "TestCommitOutcomeUnknown/" + fault
			c, ctx, db, ev := midTxSetup(t, "failOverReadOnly=false&readTimeout=2s&hostTimeout=1s")
			n1, n2 := c.Node(1), c.Node(2)
			before := midTxStatus(ctx, t, n2)

			tx, err := db.BeginTx(ctx, nil)
			must(t, err)
			_, err = tx.ExecContext(ctx, "INSERT INTO t VALUES (10)")
			must(t, err)
			if node, err := nodeOf(ctx, c, tx); err != nil || node != 1 {
				t.Fatalf("transaction on node %d, %v; want node 1", node, err)
			}
			if fault == "blackhole" {
				must(t, n1.Blackhole())
			} else {
				must(t, n1.ResetPeer(false))
			}
			start := time.Now()
			err = tx.Commit()
			took := time.Since(start)
			must(t, n1.ClearToxics())
			t.Logf("Commit: %v", err)
			afterCommit := midTxStatus(ctx, t, n2)
			sessGone := midTxWaitNoSessions(ctx, t, n1)
			midTxNode3CaughtUp(ctx, t, c)
			row10 := [4]int64{}
			for i := 1; i <= 3; i++ {
				row10[i] = midTxRows(ctx, t, c.Node(i), "10")
			}
			next, nextErr := nodeOf(ctx, c, db)

			t.Logf("FIGURE %s: commit_s=%.3f", name, took.Seconds())
			t.Logf("FIGURE %s: row10_on_nodes=%d,%d,%d", name, row10[1], row10[2], row10[3])
			t.Logf("FIGURE %s: node2_counters_delta=%q", name, midTxDiff(before, afterCommit))
			t.Logf("FIGURE %s: node1_session_gone_ms=%d", name, sessGone.Milliseconds())
			t.Logf("FIGURE %s: node_after_commit=%d", name, next)

			if err == nil {
				t.Fatalf("Commit through a %s returned nil", fault)
			}
			if !errors.Is(err, failover.ErrCommitOutcomeUnknown) {
				t.Errorf("Commit: %v, want failover.ErrCommitOutcomeUnknown", err)
			}
			if errors.Is(err, sqldriver.ErrBadConn) {
				t.Errorf("Commit error matches driver.ErrBadConn: %v", err)
			}
			if errors.Is(err, failover.ErrTxLost) || errors.Is(err, sql.ErrTxDone) {
				t.Errorf("Commit error says the transaction is lost / done, but its outcome is unknown: %v", err)
			}
			var fe *failover.FailoverError
			if !errors.As(err, &fe) {
				t.Errorf("Commit error is not a *failover.FailoverError: %v", err)
			} else if !fe.MaybeExecuted || c.NodeByAddr(fe.Failed) != 1 || c.NodeByAddr(fe.Current) != 2 {
				t.Errorf("FailoverError MaybeExecuted=%v Failed=%q Current=%q, want true, node 1, node 2", fe.MaybeExecuted, fe.Failed, fe.Current)
			}
			if fault == "blackhole" {
				if took < 1900*time.Millisecond || took > 4*time.Second {
					t.Errorf("Commit returned after %v, want about readTimeout (2 s)", took)
				}
			} else if took > time.Second {
				t.Errorf("Commit returned after %v with the reply reset, want at once", took)
			}
			if d := midTxDiff(before, afterCommit); d != "" {
				t.Errorf("node 2 ran statements during the commit failure (replay):%s", d)
			}
			if row10[2] != 0 {
				t.Errorf("row 10 on node 2: %d, want 0 (nothing replayed)", row10[2])
			}
			want := int64(0) // both directions blackholed: COMMIT never reached node 1
			if fault == "reply-lost" {
				want = 1 // node 1 committed; only the reply was lost
			}
			if row10[1] != want || row10[3] != want {
				t.Errorf("row 10 on node 1 / node 3: %d / %d, want %d", row10[1], row10[3], want)
			}
			if nextErr != nil || next != 2 {
				t.Errorf("statement after the failed Commit: node %d, %v; want node 2", next, nextErr)
			}
			if n := ev.count(failover.EventSwitch, n2.ProxyAddr()); n != 1 {
				t.Errorf("%d switch events to node 2, want 1", n)
			}
		})
	}
}

// midTxStatus reads the statement counters a lost transaction must leave unmoved on n.
func midTxStatus(ctx context.Context, t *testing.T, n *harness.Node) map[string]int64 {
	t.Helper()
	return statusOf(ctx, t, n, "Com_begin", "Com_insert", "Com_commit", "Com_rollback")
}
