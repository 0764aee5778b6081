package txtest

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// A COMMIT whose outcome is unknown is settled before anything acts on it. Node 1 runs
// semi-synchronous replication (rpl_semi_sync_master_enabled=ON, AFTER_SYNC) and no
// replica acknowledges, so every COMMIT waits semiSyncWait for an ack that never comes
// and then commits. With readTimeout=1s the COMMIT fails after 1 s with
// ErrCommitOutcomeUnknown while its server thread still waits: a commit check that ran
// at once would find nothing and run the function again (the counter of a version-column
// check moved twice; an idempotency key came back as 1062 although it committed once).
// The driver kills the old session's thread through a new session and waits until it has
// left the process list (a killed semi-synchronous wait commits); only then does RunInTx
// ask the check, which finds the commit: one run, one commit, and the error of the
// COMMIT said it was settled.
func TestSemiSyncCommitSettled(t *testing.T) {
	// A transaction (fn), its commit check (check), and what it moves by one (moved, read
	// on node 1).
	type settleCase struct {
		name  string
		fn    func(tx *sql.Tx) error
		check func(ctx context.Context) (bool, error)
		moved func() int64
	}
	const semiSyncWait = 10 * time.Second
	c := harness.Start(t, 3)
	ctx := ctxT(t, 2*time.Minute)
	n1 := c.Node(1)
	must(t, n1.Exec(ctx, "CREATE TABLE app.acct (id INT PRIMARY KEY, v INT NOT NULL, ver INT NOT NULL)"))
	must(t, n1.Exec(ctx, "INSERT INTO app.acct VALUES (1, 0, 0)"))
	must(t, n1.Exec(ctx, "CREATE TABLE app.runs (k INT PRIMARY KEY)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	// The driver kills a session's thread only on a server that has run since before the
	// session opened (a restarted one gives the id out anew), read from its uptime in
	// whole seconds: the pool's sessions open once node 1 has run 2 s.
	waitUptime(ctx, t, n1, 2*time.Second)
	p := openPool(t, c.DSN("targetSessionAttrs=read-write&readTimeout=1s"))
	db := p.db

	// semiSync turns semi-synchronous replication on afresh on node 1 (a wait that timed
	// out turns it off until a replica acknowledges) and off again when the test ends.
	semiSync := func(t *testing.T) {
		t.Helper()
		must(t, n1.Exec(ctx, "SET GLOBAL rpl_semi_sync_master_enabled = OFF"))
		must(t, n1.Exec(ctx, "SET GLOBAL rpl_semi_sync_master_wait_point = 'AFTER_SYNC'"))
		must(t, n1.Exec(ctx, "SET GLOBAL rpl_semi_sync_master_wait_no_slave = ON"))
		must(t, n1.Exec(ctx, "SET GLOBAL rpl_semi_sync_master_timeout = ?", semiSyncWait.Milliseconds()))
		must(t, n1.Exec(ctx, "SET GLOBAL rpl_semi_sync_master_enabled = ON"))
		t.Cleanup(func() { _ = n1.Exec(context.Background(), "SET GLOBAL rpl_semi_sync_master_enabled = OFF") })
		on, err := n1.QueryString(ctx, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'Rpl_semi_sync_master_status'")
		must(t, err)
		if on != "ON" {
			t.Fatalf("Rpl_semi_sync_master_status is %q, want ON", on)
		}
	}

	// A version column: the run reads ver and writes ver+1; the check reads whether ver
	// reached the run's version.
	var want int
	version := settleCase{
		name: "version-column",
		fn: func(tx *sql.Tx) error {
			var ver int
			if err := tx.QueryRowContext(ctx, "SELECT ver FROM acct WHERE id = 1 FOR UPDATE").Scan(&ver); err != nil {
				return err
			}
			want = ver + 1
			_, err := tx.ExecContext(ctx, "UPDATE acct SET v = v + 1, ver = ? WHERE id = 1", want)
			return err
		},
		check: func(ctx context.Context) (bool, error) {
			var ver int
			err := db.QueryRowContext(ctx, "SELECT ver FROM acct WHERE id = 1").Scan(&ver)
			return ver >= want, err
		},
		moved: func() int64 {
			v, err := n1.QueryInt(ctx, "SELECT v FROM app.acct WHERE id = 1")
			must(t, err)
			return v
		},
	}
	// An idempotency key: the run inserts it; the check looks for it.
	key := settleCase{
		name: "idempotency-key",
		fn: func(tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, "INSERT INTO runs VALUES (7)")
			return err
		},
		check: func(ctx context.Context) (bool, error) {
			var n int
			err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM runs WHERE k = 7").Scan(&n)
			return n == 1, err
		},
		moved: func() int64 { return count(ctx, t, n1, "runs WHERE k = 7") },
	}
	// Without a check: RunInTx returns the COMMIT's error, which says the outcome is
	// settled, and the data read at once shows the commit.
	noCheck := key
	noCheck.name, noCheck.check = "no-check", nil
	noCheck.fn = func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, "INSERT INTO runs VALUES (8)")
		return err
	}
	noCheck.moved = func() int64 { return count(ctx, t, n1, "runs WHERE k = 8") }
	for _, tc := range []settleCase{version, key, noCheck} {
		t.Run(tc.name, func(t *testing.T) {
			semiSync(t)
			before := tc.moved()
			checks := p.cn.Stats().TxCommitChecks
			runs := 0
			var last error // the last run's error, before RunInTx judged it
			start := time.Now()
			err := mysqlfailover.RunInTx(ctx, db, &mysqlfailover.RunOptions{Committed: tc.check}, func(tx *sql.Tx) error {
				runs++
				last = tc.fn(tx)
				return last
			})
			took := time.Since(start)
			moved := tc.moved() - before // at once: a settled outcome is what the data says
			t.Logf("FIGURE %s: runs=%d run_in_tx_ms=%d", t.Name(), runs, took.Milliseconds())
			// Whatever happened meanwhile, every COMMIT has landed once no session waits
			// for an acknowledgement.
			waitNoAckWait(ctx, t, n1, semiSyncWait+5*time.Second)
			later := tc.moved() - before
			wantChecks := int64(1)
			if tc.check == nil {
				wantChecks = 0
				var cu *failover.CommitUnknownError
				if !errors.As(err, &cu) || !cu.Settled || cu.Host != n1.ProxyAddr() || took > semiSyncWait/2 {
					t.Errorf("RunInTx: %v after %v, want a settled *failover.CommitUnknownError for %s well within the semi-sync wait (%v)",
						err, took, n1.ProxyAddr(), semiSyncWait)
				}
				err = nil
			}
			if err != nil || runs != 1 || moved != 1 || later != 1 {
				t.Errorf("RunInTx: %v after %d runs, moved by %d at once and %d later (the last run's own error: %v); want nil after 1 run, moved by exactly 1 at once",
					err, runs, moved, later, last)
			}
			if d := p.cn.Stats().TxCommitChecks - checks; d != wantChecks {
				t.Errorf("TxCommitChecks went up by %d, want %d", d, wantChecks)
			}
			notBadConn(t, "RunInTx", err)
		})
	}
}

// waitNoAckWait polls node n until no session of the app user waits for a
// semi-synchronous acknowledgement, for at most d.
func waitNoAckWait(ctx context.Context, t testing.TB, n *harness.Node, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		v, err := n.QueryInt(ctx, "SELECT COUNT(*) FROM information_schema.processlist WHERE user = ? AND state LIKE '%semi-sync%'", harness.AppUser)
		must(t, err)
		if v == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d: an app session still waits for a semi-sync acknowledgement after %v", n.Index(), d)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitUptime waits until node n's server has run for at least d (its Uptime, whole seconds).
func waitUptime(ctx context.Context, t testing.TB, n *harness.Node, d time.Duration) {
	t.Helper()
	for {
		up, err := n.QueryInt(ctx, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'")
		must(t, err)
		if time.Duration(up)*time.Second >= d {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
}
