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

// Transactions opened by statements (invariant one-host-per-transaction, cases 03, 12): every open transaction is known,
// however it was opened: START TRANSACTION or BEGIN run as statements on a pinned
// *sql.Conn, autocommit=0 from the DSN, SET autocommit=0. While one is open no fall-back
// and no pool move touches that connection: its statements stay in the same session until
// COMMIT, and only the statement after COMMIT moves to the pool's host (carrying a SET
// autocommit=0 to the new session). When the transaction's own host dies, the failing
// statement gets failover.ErrTxLost (wrapping the *failover.FailoverError), every later
// statement gets ErrTxLost without running anywhere until COMMIT (ErrTxLost) or ROLLBACK
// (nil). Otherwise the pool drops the session, the server rolls back the acknowledged
// writes, and the COMMIT "succeeds" on a fresh session: silent loss.
//
// Node 2 is made a writable island (read_only OFF, replication stopped, restarted at the
// end), so a row can be on node 2 only if the driver wrote it there; every row records the
// @@port of the server that ran its INSERT.

// sqlTxRows returns, for each id of app.sqltx on node n, the node whose server ran its
// INSERT.
func sqlTxRows(ctx context.Context, t *testing.T, c *harness.Cluster, n *harness.Node, from, to int) map[int]int {
	t.Helper()
	rows, err := n.Admin().QueryContext(ctx, "SELECT id, port FROM app.sqltx WHERE id BETWEEN ? AND ?", from, to)
	must(t, err)
	defer rows.Close()
	out := map[int]int{}
	for rows.Next() {
		var id, port int
		must(t, rows.Scan(&id, &port))
		out[id] = c.NodeByPort(port)
	}
	must(t, rows.Err())
	return out
}

// wantRows checks that node n has exactly the ids in want (each written on node n), of
// the range from..to.
func wantRows(ctx context.Context, t *testing.T, c *harness.Cluster, n int, from, to int, want ...int) {
	t.Helper()
	got := sqlTxRows(ctx, t, c, c.Node(n), from, to)
	ok := len(got) == len(want)
	for _, id := range want {
		ok = ok && got[id] == n
	}
	if !ok {
		t.Errorf("node %d has rows %v (id: node that ran the INSERT) of %d..%d, want %v written there", n, got, from, to, want)
	}
}

func sqlTxInsert(ctx context.Context, sc *sql.Conn, id int) error {
	_, err := sc.ExecContext(ctx, fmt.Sprintf("INSERT INTO app.sqltx (id, port) VALUES (%d, @@port)", id))
	return err
}

// wantNil fails the test for a non-nil error of a statement that must succeed.
func wantNil(t *testing.T, what string, err error) {
	t.Helper()
	if err != nil {
		t.Errorf("%s: %s %v, want nil", what, errKind(err), err)
	}
}

func TestSQLTransaction(t *testing.T) {
	c := harness.Start(t, 2)
	ctx := ctxT(t, time.Minute)
	n1, n2 := c.Node(1), c.Node(2)
	must(t, n1.Exec(ctx, "CREATE TABLE app.sqltx (id INT PRIMARY KEY, port INT NOT NULL)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	must(t, n2.SetReadOnly(ctx, false))
	must(t, n2.Exec(ctx, "STOP SLAVE"))
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := n2.Exec(ctx, "START SLAVE"); err != nil {
			t.Errorf("START SLAVE on node 2: %v", err)
		}
	})
	const noFallBack = "failOverReadOnly=false&readTimeout=2s&hostTimeout=1s&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"

	// pinned opens a pool and a pinned connection on node 1.
	pinned := func(t *testing.T, params string) (*faultPool, *sql.Conn, session) {
		p := openFaultPool(t, c.DSN(params))
		sc, err := p.db.Conn(ctx)
		must(t, err)
		t.Cleanup(func() { sc.Close() })
		s, err := sessionOf(ctx, c, sc)
		must(t, err)
		if s.node != 1 {
			t.Fatalf("pinned connection on node %d, want 1", s.node)
		}
		return p, sc, s
	}
	// sameSession checks that sc is still in session s.
	sameSession := func(t *testing.T, sc *sql.Conn, s session, when string) {
		now, err := sessionOf(ctx, c, sc)
		if err != nil || now != s {
			t.Errorf("%s: the connection is in session %+v (%v), want the transaction's %+v", when, now, err, s)
		}
	}

	// START TRANSACTION on a pinned connection on node 2 while the fall-back to node 1
	// comes due: the transaction stays on node 2 and commits there; the statement after
	// COMMIT falls back.
	t.Run("start-transaction-across-fallback", func(t *testing.T) {
		name := t.Name()
		p, sc, _ := pinned(t, "secondsBeforeRetryMaster=1&queriesBeforeRetryMaster=0&failOverReadOnly=false&readTimeout=2s&hostTimeout=1s")
		must(t, n1.Disable())
		var s session
		var err error
		for k := 0; ; k++ {
			if s, err = sessionOf(ctx, c, sc); err == nil {
				break
			}
			var fe *failover.FailoverError
			if !errors.As(err, &fe) || k > 0 {
				must(t, n1.Enable())
				t.Fatalf("statement %d after node 1 was disabled: %v, want at most one *failover.FailoverError", k+1, err)
			}
		}
		switched := time.Now()
		must(t, n1.Enable())
		if s.node != 2 {
			t.Fatalf("after node 1 was disabled the connection is on node %d, want 2", s.node)
		}
		wantNil(t, "START TRANSACTION", execErr(sc.ExecContext(ctx, "START TRANSACTION")))
		wantNil(t, "INSERT 101", sqlTxInsert(ctx, sc, 101))
		opened := time.Since(switched)
		if opened > 700*time.Millisecond {
			t.Fatalf("the transaction opened %v after the switch: too close to the 1 s fall-back to test it", opened)
		}
		sameSession(t, sc, s, "after INSERT 101")
		time.Sleep(time.Until(switched.Add(1500 * time.Millisecond))) // past the fall-back's due time: time is the point here
		wantNil(t, "INSERT 102 after the fall-back came due", sqlTxInsert(ctx, sc, 102))
		sameSession(t, sc, s, "after INSERT 102")
		commitErr := execErr(sc.ExecContext(ctx, "COMMIT"))
		wantNil(t, "COMMIT", commitErr)
		committed := time.Now()
		after, err := sessionOf(ctx, c, sc)
		if err != nil || after.node != 1 {
			t.Errorf("the statement after COMMIT ran on node %d (%v), want node 1 (fall-back due)", after.node, err)
		}
		fb := p.ev.of(failover.EventFallBack, "", switched)
		if len(fb) != 1 || fb[0].Time.Before(committed) {
			t.Errorf("fall-back events %v, want one, after COMMIT", fb)
		}
		if a := p.active(c); a != 1 {
			t.Errorf("Connector.Stats().Active is node %d after the fall-back, want 1", a)
		}
		wantRows(ctx, t, c, 2, 101, 102, 101, 102)
		wantRows(ctx, t, c, 1, 101, 102)
		t.Logf("FIGURE %s: tx_opened_after_switch_ms=%d", name, opened.Milliseconds())
		t.Logf("FIGURE %s: commit_error=%s", name, errKind(commitErr))
		t.Logf("FIGURE %s: node_after_commit=%d", name, after.node)
		t.Logf("FIGURE %s: rows_on_node2=%v rows_on_node1=%v", name,
			sqlTxRows(ctx, t, c, n2, 101, 102), sqlTxRows(ctx, t, c, n1, 101, 102))
	})

	// The pool moves (an operator's SwitchTo) while a transaction opened by the DSN's
	// autocommit=0 or by SET autocommit=0 (also after SET NAMES in the same list) is open:
	// it stays on node 1 until COMMIT; the next statement moves to node 2, and a SET
	// autocommit=0 goes with it.
	for _, tc := range []struct {
		name, params, set string
		base              int
	}{
		{"autocommit0-dsn-pool-moves", "autocommit=0&" + noFallBack, "", 200},
		{"set-autocommit0-pool-moves", noFallBack, "SET autocommit=0", 400},
		{"set-names-autocommit0-pool-moves", noFallBack, "SET NAMES utf8mb4, autocommit = 0", 450},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := t.Name()
			p, sc, s := pinned(t, tc.params)
			if tc.set != "" {
				wantNil(t, tc.set, execErr(sc.ExecContext(ctx, tc.set)))
			}
			wantNil(t, "INSERT 1", sqlTxInsert(ctx, sc, tc.base+1))
			must(t, p.cn.SwitchTo(ctx, n2.ProxyAddr()))
			if a := p.active(c); a != 2 {
				t.Errorf("Connector.Stats().Active is node %d after SwitchTo, want 2", a)
			}
			if other, err := nodeOf(ctx, c, p.db); err != nil || other != 2 {
				t.Errorf("another connection's statement after SwitchTo ran on node %d (%v), want node 2", other, err)
			}
			wantNil(t, "INSERT 2 after the pool moved", sqlTxInsert(ctx, sc, tc.base+2))
			sameSession(t, sc, s, "after INSERT 2")
			commitErr := execErr(sc.ExecContext(ctx, "COMMIT"))
			wantNil(t, "COMMIT", commitErr)
			after, err := sessionOf(ctx, c, sc)
			if err != nil || after.node != 2 {
				t.Errorf("the statement after COMMIT ran on node %d (%v), want node 2", after.node, err)
			}
			var ac int
			if err := sc.QueryRowContext(ctx, "SELECT @@autocommit").Scan(&ac); err != nil || ac != 0 {
				t.Errorf("@@autocommit on the new session: %d (%v), want 0", ac, err)
			}
			_, _ = sc.ExecContext(ctx, "ROLLBACK") // the statements above opened one on node 2
			wantRows(ctx, t, c, 1, tc.base+1, tc.base+9, tc.base+1, tc.base+2)
			wantRows(ctx, t, c, 2, tc.base+1, tc.base+9)
			t.Logf("FIGURE %s: commit_error=%s", name, errKind(commitErr))
			t.Logf("FIGURE %s: node_after_commit=%d autocommit_after_move=%d", name, after.node, ac)
			t.Logf("FIGURE %s: rows_on_node1=%v rows_on_node2=%v", name,
				sqlTxRows(ctx, t, c, n1, tc.base+1, tc.base+9), sqlTxRows(ctx, t, c, n2, tc.base+1, tc.base+9))
		})
	}

	// An XA transaction while the pool moves: it stays in its session on node 1 through XA
	// END, XA PREPARE and XA COMMIT (between END and COMMIT it is still open); the next
	// statement moves to node 2.
	t.Run("xa-pool-moves", func(t *testing.T) {
		name := t.Name()
		p, sc, s := pinned(t, noFallBack)
		wantNil(t, "XA START", execErr(sc.ExecContext(ctx, "XA START 'mf601'")))
		wantNil(t, "INSERT 601", sqlTxInsert(ctx, sc, 601))
		must(t, p.cn.SwitchTo(ctx, n2.ProxyAddr()))
		wantNil(t, "INSERT 602 after the pool moved", sqlTxInsert(ctx, sc, 602))
		wantNil(t, "XA END", execErr(sc.ExecContext(ctx, "XA END 'mf601'")))
		wantNil(t, "XA PREPARE", execErr(sc.ExecContext(ctx, "XA PREPARE 'mf601'")))
		sameSession(t, sc, s, "after XA PREPARE")
		commitErr := execErr(sc.ExecContext(ctx, "XA COMMIT 'mf601'"))
		wantNil(t, "XA COMMIT", commitErr)
		after, err := sessionOf(ctx, c, sc)
		if err != nil || after.node != 2 {
			t.Errorf("the statement after XA COMMIT ran on node %d (%v), want node 2", after.node, err)
		}
		wantRows(ctx, t, c, 1, 601, 609, 601, 602)
		wantRows(ctx, t, c, 2, 601, 609)
		t.Logf("FIGURE %s: commit_error=%s node_after_commit=%d", name, errKind(commitErr), after.node)
		t.Logf("FIGURE %s: rows_on_node1=%v rows_on_node2=%v", name,
			sqlTxRows(ctx, t, c, n1, 601, 609), sqlTxRows(ctx, t, c, n2, 601, 609))
	})

	// The transaction's own host goes away (node 1's proxy disabled): the failing
	// statement gets ErrTxLost and the FailoverError, the next ones ErrTxLost without
	// being sent anywhere, COMMIT ErrTxLost, ROLLBACK nil; then the connection works on
	// node 2.
	for _, tc := range []struct {
		name, params, open, end string
		base                    int
	}{
		{"autocommit0-dsn-host-dies-commit", "autocommit=0&" + noFallBack, "", "COMMIT", 300},
		{"begin-host-dies-rollback", noFallBack, "BEGIN", "ROLLBACK", 350},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := t.Name()
			p, sc, _ := pinned(t, tc.params)
			if tc.open != "" {
				wantNil(t, tc.open, execErr(sc.ExecContext(ctx, tc.open)))
			}
			wantNil(t, "INSERT 1", sqlTxInsert(ctx, sc, tc.base+1))
			before := midTxStatus(ctx, t, n2)
			must(t, n1.Disable())
			defer n1.Enable()

			err2 := sqlTxInsert(ctx, sc, tc.base+2)
			t.Logf("INSERT 2 after node 1 went away: %v", err2)
			if !errors.Is(err2, failover.ErrTxLost) {
				t.Errorf("INSERT 2: %s %v, want failover.ErrTxLost", errKind(err2), err2)
			}
			var fe *failover.FailoverError
			if !errors.As(err2, &fe) || c.NodeByAddr(fe.Failed) != 1 || c.NodeByAddr(fe.Current) != 2 {
				t.Errorf("INSERT 2: %v, want a *failover.FailoverError from node 1 to node 2", err2)
			}
			afterFail := midTxStatus(ctx, t, n2)
			err3 := sqlTxInsert(ctx, sc, tc.base+3)
			var one int
			errSel := sc.QueryRowContext(ctx, "SELECT 1").Scan(&one)
			endErr := execErr(sc.ExecContext(ctx, tc.end))
			afterEnd := midTxStatus(ctx, t, n2)
			t.Logf("INSERT 3: %v; SELECT 1: %v; %s: %v", err3, errSel, tc.end, endErr)
			for _, e := range []struct {
				what string
				err  error
			}{{"INSERT 3", err3}, {"SELECT 1", errSel}} {
				if !errors.Is(e.err, failover.ErrTxLost) {
					t.Errorf("%s in the lost transaction: %s %v, want failover.ErrTxLost", e.what, errKind(e.err), e.err)
				}
			}
			if tc.end == "COMMIT" {
				if !errors.Is(endErr, failover.ErrTxLost) || errors.Is(endErr, failover.ErrCommitOutcomeUnknown) {
					t.Errorf("COMMIT of the lost transaction: %s %v, want failover.ErrTxLost", errKind(endErr), endErr)
				}
			} else {
				wantNil(t, "ROLLBACK of the lost transaction", endErr)
			}
			for _, e := range []error{err2, err3, errSel, endErr} {
				if errors.Is(e, sqldriver.ErrBadConn) {
					t.Errorf("%v matches driver.ErrBadConn", e)
				}
			}
			if d := midTxDiff(before, afterFail); d != "" {
				t.Errorf("node 2 ran statements while INSERT 2 failed over:%s", d)
			}
			if d := midTxDiff(afterFail, afterEnd); d != "" {
				t.Errorf("node 2 ran statements of the lost transaction (INSERT 3, SELECT 1, %s):%s", tc.end, d)
			}

			must(t, n1.Enable())
			midTxWaitNoSessions(ctx, t, n1) // the server rolled back the lost session
			// The connection works on node 2 now; the counters see it (the check above
			// is not blind).
			wantNil(t, "INSERT 4 after the lost transaction", sqlTxInsert(ctx, sc, tc.base+4))
			wantNil(t, "COMMIT of INSERT 4", execErr(sc.ExecContext(ctx, "COMMIT")))
			control := midTxDiff(afterEnd, midTxStatus(ctx, t, n2))
			if control == "" {
				t.Errorf("node 2's counters did not move for INSERT 4: the replay check is blind")
			}
			if s, err := sessionOf(ctx, c, sc); err != nil || s.node != 2 {
				t.Errorf("after the lost transaction the connection is on node %d (%v), want 2", s.node, err)
			}
			wantRows(ctx, t, c, 1, tc.base+1, tc.base+9)
			wantRows(ctx, t, c, 2, tc.base+1, tc.base+9, tc.base+4)
			t.Logf("FIGURE %s: insert2_error=%s insert3_error=%s select_error=%s end_error=%s", name,
				errKind(err2), errKind(err3), errKind(errSel), errKind(endErr))
			t.Logf("FIGURE %s: node2_counters_during_lost_tx=%q control_after=%q", name, midTxDiff(before, afterEnd), control)
			t.Logf("FIGURE %s: rows_on_node1=%v rows_on_node2=%v", name,
				sqlTxRows(ctx, t, c, n1, tc.base+1, tc.base+9), sqlTxRows(ctx, t, c, n2, tc.base+1, tc.base+9))
			t.Logf("FIGURE %s: switch_events=%d", name, p.switches())
		})
	}

	// The COMMIT statement of a transaction opened with START TRANSACTION is interrupted:
	// node 1 commits and the reply is lost (a downstream reset_peer). The caller gets
	// ErrCommitOutcomeUnknown (not ErrTxLost: it may be committed), and the row is on
	// node 1 exactly once, nothing on node 2.
	t.Run("start-transaction-commit-interrupted", func(t *testing.T) {
		name := t.Name()
		p, sc, _ := pinned(t, noFallBack)
		wantNil(t, "START TRANSACTION", execErr(sc.ExecContext(ctx, "START TRANSACTION")))
		wantNil(t, "INSERT 501", sqlTxInsert(ctx, sc, 501))
		before := midTxStatus(ctx, t, n2)
		must(t, n1.ResetPeer(false))
		commitErr := execErr(sc.ExecContext(ctx, "COMMIT"))
		must(t, n1.ClearToxics())
		afterCommit := midTxStatus(ctx, t, n2)
		t.Logf("COMMIT with its reply lost: %v", commitErr)
		if !errors.Is(commitErr, failover.ErrCommitOutcomeUnknown) {
			t.Errorf("COMMIT: %s %v, want failover.ErrCommitOutcomeUnknown", errKind(commitErr), commitErr)
		}
		if errors.Is(commitErr, failover.ErrTxLost) || errors.Is(commitErr, sqldriver.ErrBadConn) {
			t.Errorf("COMMIT: %v says the transaction is lost, or matches driver.ErrBadConn; its outcome is unknown", commitErr)
		}
		var fe *failover.FailoverError
		if !errors.As(commitErr, &fe) || !fe.MaybeExecuted || c.NodeByAddr(fe.Failed) != 1 {
			t.Errorf("COMMIT: %v, want a *failover.FailoverError from node 1 with MaybeExecuted", commitErr)
		}
		if d := midTxDiff(before, afterCommit); d != "" {
			t.Errorf("node 2 ran statements while the COMMIT failed (a replay):%s", d)
		}
		wantRows(ctx, t, c, 1, 501, 509, 501)
		wantRows(ctx, t, c, 2, 501, 509)
		next, err := sessionOf(ctx, c, sc)
		if err != nil {
			t.Errorf("the statement after the interrupted COMMIT: %v", err)
		}
		t.Logf("FIGURE %s: commit_error=%s", name, errKind(commitErr))
		t.Logf("FIGURE %s: node_after_commit=%d switch_events=%d", name, next.node, p.switches())
	})
}

// execErr drops an Exec's result.
func execErr(_ sql.Result, err error) error { return err }
