package txtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// RunInTx commits the application's transaction exactly once through a
// deadlock, an interrupted COMMIT (the reply lost after the server committed, or the
// COMMIT lost before it: with and without a commit check) and a kill of the primary
// (node 2 promoted meanwhile). fn inserts its key into app.runs, and the check reads it
// back: the "idempotency key" of the issue. targetSessionAttrs=read-write, so that a
// write can only land on the writable node.
func TestRunInTx(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, 2*time.Minute)
	n1, n2 := c.Node(1), c.Node(2)
	must(t, n1.Exec(ctx, "CREATE TABLE app.runs (k INT PRIMARY KEY, port INT NOT NULL, at DATETIME(6) NOT NULL)"))
	must(t, n1.Exec(ctx, "CREATE TABLE app.acct (id INT PRIMARY KEY, v INT NOT NULL)"))
	must(t, n1.Exec(ctx, "INSERT INTO app.acct SELECT seq, 0 FROM app.seq_1_to_10"))
	must(t, n1.Exec(ctx, "CREATE TABLE app.pad (id INT PRIMARY KEY)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	p := openPool(t, c.DSN("targetSessionAttrs=read-write&readTimeout=1s&hostTimeout=1s"))
	db := p.db

	insert := func(tx *sql.Tx, k int) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO runs VALUES (?, @@port, NOW(6))", k)
		return err
	}
	rowsOf := func(n *harness.Node, k int) int64 { return count(ctx, t, n, fmt.Sprintf("runs WHERE k = %d", k)) }
	committed := func(k int) func(context.Context) (bool, error) {
		return func(ctx context.Context) (bool, error) {
			var n int
			err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM runs WHERE k = ?", k).Scan(&n)
			return n == 1, err
		}
	}
	rerunsBefore := func() int64 { return p.cn.Stats().TxReruns }

	t.Run("deadlock", func(t *testing.T) {
		const k = 1
		before := rerunsBefore()
		other, err := db.BeginTx(ctx, nil)
		must(t, err)
		_, err = other.ExecContext(ctx, "INSERT INTO pad SELECT seq FROM seq_1_to_20") // heavier: not the victim
		must(t, err)
		_, err = other.ExecContext(ctx, "UPDATE acct SET v = v + 1 WHERE id = 2")
		must(t, err)
		blocked := make(chan error, 1)
		runs := 0
		err = mysqlfailover.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
			runs++
			if err := insert(tx, k); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, "UPDATE acct SET v = v + 1 WHERE id = 1"); err != nil {
				return err
			}
			if runs == 1 {
				go func() {
					_, err := other.ExecContext(ctx, "UPDATE acct SET v = v + 1 WHERE id = 1")
					if err == nil {
						err = other.Commit()
					}
					blocked <- err
				}()
				waitRunning(ctx, t, n1, "UPDATE acct")
			}
			_, err := tx.ExecContext(ctx, "UPDATE acct SET v = v + 1 WHERE id = 2")
			return err
		})
		must(t, err)
		must(t, <-blocked)
		if runs != 2 || rowsOf(n1, k) != 1 {
			t.Errorf("%d runs, %d rows of key %d on node 1; want 2 runs, 1 row", runs, rowsOf(n1, k), k)
		}
		for id, want := range map[int]int64{1: 2, 2: 2} {
			if v, err := n1.QueryInt(ctx, "SELECT v FROM app.acct WHERE id = ?", id); err != nil || v != want {
				t.Errorf("acct %d: v = %d (%v), want %d: each transaction once", id, v, err, want)
			}
		}
		if d := rerunsBefore() - before; d != 1 {
			t.Errorf("Stats.TxReruns went up by %d, want 1", d)
		}
	})

	// The reply to COMMIT is lost (node 1 committed): without a check RunInTx returns
	// ErrCommitOutcomeUnknown and runs nothing again; with one it finds the key and
	// returns nil. COMMIT lost before node 1 saw it (blackhole): the check finds nothing
	// and fn runs again. Each time exactly one row.
	for _, tc := range []struct {
		name      string
		k         int
		blackhole bool
		check     bool
		runs      int
		err       error
	}{
		{name: "reply-lost/no-check", k: 11, runs: 1, err: failover.ErrCommitOutcomeUnknown},
		{name: "reply-lost/check", k: 12, check: true, runs: 1},
		{name: "commit-lost/check", k: 13, blackhole: true, check: true, runs: 2},
	} {
		t.Run("interrupted-commit/"+tc.name, func(t *testing.T) {
			opts := &mysqlfailover.RunOptions{}
			if tc.check {
				opts.Committed = committed(tc.k)
			}
			checks := p.cn.Stats().TxCommitChecks
			runs := 0
			var wait func()
			err := mysqlfailover.RunInTx(ctx, db, opts, func(tx *sql.Tx) error {
				runs++
				if err := insert(tx, tc.k); err != nil {
					return err
				}
				if runs == 1 { // the fault, for this attempt's COMMIT
					if tc.blackhole {
						must(t, n1.Blackhole())
					} else {
						must(t, n1.ResetPeer(false))
					}
					wait = clearOnFailedConnect(ctx, t, p, n1)
				}
				return nil
			})
			wait()
			if tc.err == nil && err != nil || tc.err != nil && !errors.Is(err, tc.err) {
				t.Fatalf("RunInTx: %v, want %v", err, tc.err)
			}
			if runs != tc.runs {
				t.Errorf("%d runs, want %d", runs, tc.runs)
			}
			if got := rowsOf(n1, tc.k); got != 1 {
				t.Errorf("node 1 has %d rows of key %d, want exactly 1", got, tc.k)
			}
			if d := p.cn.Stats().TxCommitChecks - checks; tc.check && d != 1 || !tc.check && d != 0 {
				t.Errorf("TxCommitChecks went up by %d", d)
			}
		})
	}

	// Node 1 killed inside the first run, node 2 promoted: the second run commits on
	// node 2; node 1, restarted, has nothing of the first.
	t.Run("kill-primary", func(t *testing.T) {
		const k = 21
		runs := 0
		var ports []int
		err := mysqlfailover.RunInTx(ctx, db, &mysqlfailover.RunOptions{Attempts: 10, Backoff: 100 * time.Millisecond}, func(tx *sql.Tx) error {
			runs++
			if err := insert(tx, k); err != nil {
				return err
			}
			var port int
			if err := tx.QueryRowContext(ctx, "SELECT @@port").Scan(&port); err != nil {
				return err
			}
			ports = append(ports, port)
			if runs == 1 {
				must(t, n1.Kill())
				must(t, n2.Promote(ctx, nil))
			}
			_, err := tx.ExecContext(ctx, "UPDATE acct SET v = v + 1 WHERE id = 3")
			return err
		})
		must(t, err)
		if runs < 2 || c.NodeByPort(ports[0]) != 1 || c.NodeByPort(ports[len(ports)-1]) != 2 {
			t.Errorf("%d runs on nodes %v, want the first on node 1 and the last on node 2", runs, ports)
		}
		if got := rowsOf(n2, k); got != 1 {
			t.Errorf("node 2 has %d rows of key %d, want 1", got, k)
		}
		must(t, n1.Restart(ctx))
		if got := rowsOf(n1, k); got != 0 {
			t.Errorf("node 1, restarted, has %d rows of key %d, want 0 (the first run never committed)", got, k)
		}
	})
}
