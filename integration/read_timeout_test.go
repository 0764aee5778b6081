package integration

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

// A fault of one session: a statement that runs longer than readTimeout on a live host.
// go-sql-driver's read times out and it closes the connection (mysql.ErrInvalidConn),
// exactly as for a hung host; but node 1 answers a new connection at once, so the caller
// gets a *failover.FailoverError with Failed == Current and MaybeExecuted (the statement
// goes on running on the server), the connection gets a new session on node 1, and the
// pool stays there with its writers unharmed. Neither statement is a read the driver
// may run again (SLEEP), so each is settled before the error returns: its thread is
// killed and gone, the error says Settled, and the INSERT's row, absent at once, never
// lands (it landed 2 s after the error while nothing settled it), on no node, and the
// INSERT was not run again.
func TestQueryLongerThanReadTimeout(t *testing.T) {
	c := harness.Start(t, 2)
	ctx := ctxT(t, time.Minute)
	n1 := c.Node(1)
	name := t.Name()
	must(t, n1.Exec(ctx, "CREATE TABLE app.rt (id INT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL)"))
	createWriteTable(t, ctx, c, "rt_load")
	// The driver kills a session's thread only on a server that has run since before the
	// session opened, read in whole seconds: a session opened in the server's first
	// second is only waited for.
	waitUptime(ctx, t, n1, 2*time.Second)

	p := openFaultPool(t, c.DSN("readTimeout=1s&hostTimeout=2s&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"))
	load := startWriters(t, ctx, p.db, "rt_load", 2, 20*time.Millisecond)
	sc, err := p.db.Conn(ctx)
	must(t, err)
	defer sc.Close()

	insertRan := false
	var atOnce int64 // the INSERT's rows on node 1 right after its error
	for _, step := range []struct{ name, query string }{
		{"select", "SELECT SLEEP(3)"},
		{"insert", "INSERT INTO app.rt (k) SELECT 7 FROM DUAL WHERE SLEEP(3) = 0"},
	} {
		before, err := sessionOf(ctx, c, sc)
		must(t, err)
		if before.node != 1 {
			t.Errorf("%s: pinned connection on node %d before the fault, want 1: step skipped", step.name, before.node)
			continue
		}
		insertRan = insertRan || step.name == "insert"
		begin := time.Now()
		_, callerErr := sc.ExecContext(ctx, step.query)
		took := time.Since(begin)
		t.Logf("%s: %s: %v after %v", step.name, step.query, callerErr, took.Round(time.Millisecond))
		if callerErr == nil {
			t.Errorf("%s: %s returned nil with readTimeout=1s", step.name, step.query)
		} else if fe := wantSessionFault(t, c, p, step.name, callerErr, n1.ProxyAddr()); fe != nil && (!fe.MaybeExecuted || !fe.Settled) {
			t.Errorf("%s: FailoverError MaybeExecuted=%v Settled=%v (%v), want both: a statement the server was running, its session confirmed gone",
				step.name, fe.MaybeExecuted, fe.Settled, fe.Unsettled)
		}
		if step.name == "insert" {
			atOnce, err = n1.QueryInt(ctx, "SELECT COUNT(*) FROM app.rt WHERE k = 7")
			must(t, err)
		}
		if took < 900*time.Millisecond || took > 1800*time.Millisecond {
			t.Errorf("%s: the caller waited %v, want about readTimeout (1 s), once", step.name, took)
		}
		after, aerr := sessionOf(ctx, c, sc)
		if aerr != nil || after.node != 1 || after.id == before.id {
			t.Errorf("%s: the connection after the read timeout: %+v, %v; want a new session on node 1 (was %d)", step.name, after, aerr, before.id)
		}
		t.Logf("FIGURE %s: %s_caller_error=%s", name, step.name, errKind(callerErr))
		t.Logf("FIGURE %s: %s_caller_error_ms=%d", name, step.name, took.Milliseconds())
		wantPoolOn(t, ctx, c, p, 1, step.name+": after the fault")
	}

	// Had the INSERT's session gone on on node 1, it would have committed after its
	// SLEEP(3), 2 s after the error.
	time.Sleep(2500 * time.Millisecond)
	if !load.waitMoreWrites(6, 3*time.Second) {
		t.Errorf("the writers did not make 6 more writes within 3 s after the fault")
	}
	wantPoolOn(t, ctx, c, p, 1, "after the workload ran on")
	t.Logf("FIGURE %s: pool_active_node=%d", name, p.active(c))
	t.Logf("FIGURE %s: switch_events=%d", name, p.switches())
	load.checkWrites(t, ctx, c, name) // waits for the replicas
	for i := 1; i <= c.N() && insertRan; i++ {
		v, err := c.Node(i).QueryInt(ctx, "SELECT COUNT(*) FROM app.rt WHERE k = 7")
		must(t, err)
		if v != atOnce || v > 1 {
			t.Errorf("node %d has the timed-out INSERT's row %d times, %d on node 1 right after the error: want what was read then (settled), at most once",
				i, v, atOnce)
		}
	}
}

// An autocommit write is its own COMMIT: when it outlives readTimeout on a host that
// still answers, its server thread goes on running it, and it may land seconds after the
// caller got the error (a *failover.FailoverError with MaybeExecuted, Failed == Current,
// which SafeToRetry answers with RetryNothing: read the data first). A caller that read
// at once saw no change and ran it again: it ran twice. The driver settles such a write
// before the error returns, as it settles a COMMIT whose outcome is unknown: it kills the
// old session's thread through a new session and waits until it has left the process
// list, and the error says Settled. The data read at once is then final: the row either
// changed or never will.
//
// The writes: an UPDATE that waits for a row lock an admin session holds (SELECT ... FOR
// UPDATE, committed 2.5 s later), and an INSERT ... SELECT whose SLEEP(2) outlives the
// 1 s readTimeout. A statement of a transaction past readTimeout is settled too: the
// transaction is lost (ErrTxLost) and its row locks go with the thread, so the row's next
// writer does not wait for them. A plain read past readTimeout (Read: SafeToRetry says
// RetryStatement) is only killed, without the wait: its result interests no one, and the
// server stops the work.
func TestWriteLongerThanReadTimeoutSettled(t *testing.T) {
	c := harness.Start(t, 2)
	ctx := ctxT(t, 2*time.Minute)
	n1 := c.Node(1)
	name := t.Name()
	must(t, n1.Exec(ctx, "CREATE TABLE app.acct (id INT PRIMARY KEY, bal INT NOT NULL)"))
	must(t, n1.Exec(ctx, "INSERT INTO app.acct VALUES (1, 100)"))
	must(t, n1.Exec(ctx, "CREATE TABLE app.ins (id INT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL)"))
	// The driver kills a session's thread only on a server that has run since before the
	// session opened (a restarted one gives ids out anew), read in whole seconds.
	waitUptime(ctx, t, n1, 2*time.Second)
	p := openFaultPool(t, c.DSN("readTimeout=1s&hostTimeout=2s&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"))
	// Kill whatever of the app's statements a failure leaves running when the test ends.
	t.Cleanup(func() {
		ids, _ := appThreads(context.Background(), n1, "")
		for _, id := range ids {
			_ = n1.Exec(context.Background(), "KILL ?", id)
		}
	})

	for _, tc := range []struct {
		name   string
		query  string
		marker string                    // in the statement's text: finds its thread in the process list
		hold   func(t *testing.T) func() // takes what makes the statement wait; returns a wait for its release
		value  func(t *testing.T) int64  // what the write changes, read on node 1
	}{
		{
			name:   "update behind a row lock",
			query:  "UPDATE acct SET bal = bal - 10 WHERE id = 1",
			marker: "bal = bal - 10",
			hold: func(t *testing.T) func() {
				ac, err := n1.Admin().Conn(ctx)
				must(t, err)
				must(t, execOn(ctx, ac, "BEGIN"))
				var bal int
				must(t, ac.QueryRowContext(ctx, "SELECT bal FROM app.acct WHERE id = 1 FOR UPDATE").Scan(&bal))
				done := make(chan struct{})
				go func() {
					defer close(done)
					defer ac.Close()
					time.Sleep(2500 * time.Millisecond)
					_ = execOn(context.Background(), ac, "COMMIT")
				}()
				return func() { <-done }
			},
			value: func(t *testing.T) int64 {
				v, err := n1.QueryInt(ctx, "SELECT bal FROM app.acct WHERE id = 1")
				must(t, err)
				return v
			},
		},
		{
			name:   "insert select sleep",
			query:  "INSERT INTO ins (k) SELECT 7 FROM DUAL WHERE SLEEP(2) = 0",
			marker: "SLEEP(2)",
			hold:   func(*testing.T) func() { return func() { time.Sleep(1500 * time.Millisecond) } },
			value: func(t *testing.T) int64 {
				v, err := n1.QueryInt(ctx, "SELECT COUNT(*) FROM app.ins WHERE k = 7")
				must(t, err)
				return v
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.value(t)
			release := tc.hold(t)
			start := time.Now()
			_, callerErr := p.db.ExecContext(ctx, tc.query)
			took := time.Since(start)
			atOnce := tc.value(t)
			t.Logf("%s: %v after %v; the value read at once: %d (before: %d)", tc.query, callerErr, took.Round(time.Millisecond), atOnce, before)
			release()
			// Whatever the driver did, the statement has ended on node 1 once its thread has
			// left the process list.
			if !waitFor(5*time.Second, func() bool {
				ids, err := appThreads(ctx, n1, tc.marker)
				return err == nil && len(ids) == 0
			}) {
				t.Errorf("the statement still runs on node 1 5 s after the lock was released")
			}
			later := tc.value(t)
			t.Logf("FIGURE %s/%s: caller_error_ms=%.1f value_before=%d at_once=%d later=%d", name, tc.name, float64(took.Microseconds())/1000, before, atOnce, later)
			fe := wantSessionFault(t, c, p, tc.name, callerErr, n1.ProxyAddr())
			if fe == nil {
				return
			}
			if !fe.MaybeExecuted || fe.Read {
				t.Errorf("FailoverError MaybeExecuted=%v Read=%v, want true, false: a write the server was running", fe.MaybeExecuted, fe.Read)
			}
			if r := mysqlfailover.SafeToRetry(callerErr); r != mysqlfailover.RetryNothing {
				t.Errorf("SafeToRetry: %v, want RetryNothing (read the data first)", r)
			}
			if later != atOnce {
				t.Errorf("the value read right after the error was %d and %d once the statement's thread was gone: the write landed after the caller was told to read the data (a caller who saw no change and ran it again paid twice)",
					atOnce, later)
			}
			if !fe.Settled {
				t.Errorf("FailoverError.Settled is false (%v): want the old session confirmed gone before the error returns", fe.Unsettled)
			}
			if took < 900*time.Millisecond || took > 1800*time.Millisecond {
				t.Errorf("the caller waited %v, want about readTimeout (1 s) and the settling", took)
			}
		})
	}

	// A statement of a transaction past readTimeout loses the transaction (ErrTxLost), and
	// its server thread, which goes on running it, holds the transaction's row locks until
	// it ends: it is settled too, so that the rerun the error invites meets no lock of it.
	t.Run("lost transaction", func(t *testing.T) {
		before, err := n1.QueryInt(ctx, "SELECT bal FROM app.acct WHERE id = 1")
		must(t, err)
		tx, err := p.db.BeginTx(ctx, nil)
		must(t, err)
		_, err = tx.ExecContext(ctx, "UPDATE acct SET bal = bal + 1 WHERE id = 1")
		must(t, err)
		start := time.Now()
		var slept int
		callerErr := tx.QueryRowContext(ctx, "SELECT SLEEP(3)").Scan(&slept)
		took := time.Since(start)
		_ = tx.Rollback()
		// At once, another session updates the row, waiting at most 1 s for its lock.
		ac, err := n1.Admin().Conn(ctx)
		must(t, err)
		defer ac.Close()
		must(t, execOn(ctx, ac, "SET SESSION innodb_lock_wait_timeout = 1"))
		lockStart := time.Now()
		lockErr := execOn(ctx, ac, "UPDATE app.acct SET bal = bal WHERE id = 1")
		lockWait := time.Since(lockStart)
		after, err := n1.QueryInt(ctx, "SELECT bal FROM app.acct WHERE id = 1")
		must(t, err)
		t.Logf("FIGURE %s/lost transaction: caller_error_ms=%.1f next_lock_ms=%.1f (%v)", name, float64(took.Microseconds())/1000,
			float64(lockWait.Microseconds())/1000, lockErr)
		if !errors.Is(callerErr, failover.ErrTxLost) {
			t.Errorf("SELECT SLEEP(3) in a transaction: %v, want failover.ErrTxLost", callerErr)
		}
		if fe := wantSessionFault(t, c, p, "lost transaction", callerErr, n1.ProxyAddr()); fe != nil && !fe.Settled {
			t.Errorf("FailoverError.Settled is false (%v): want the lost transaction's session confirmed gone", fe.Unsettled)
		}
		if lockErr != nil {
			t.Errorf("the row's next writer, right after the error: %v: the lost transaction's thread still held its lock", lockErr)
		}
		if after != before {
			t.Errorf("bal is %d, was %d: the lost transaction's UPDATE must have rolled back", after, before)
		}
	})

	// A plain read past readTimeout may simply run again (Read, RetryStatement); its
	// thread is killed so that the server stops the work, without waiting for it.
	t.Run("heavy read", func(t *testing.T) {
		const q = "SELECT COUNT(*) FROM seq_1_to_200000 a JOIN seq_1_to_200000 b ON a.seq % 7 = b.seq % 11"
		start := time.Now()
		var n int64
		callerErr := p.db.QueryRowContext(ctx, q).Scan(&n)
		took := time.Since(start)
		fe := wantSessionFault(t, c, p, "heavy read", callerErr, n1.ProxyAddr())
		if fe != nil && (!fe.Read || fe.Settled) {
			t.Errorf("FailoverError Read=%v Settled=%v, want a read (never settled: its outcome changes nothing)", fe.Read, fe.Settled)
		}
		if r := mysqlfailover.SafeToRetry(callerErr); r != mysqlfailover.RetryStatement {
			t.Errorf("SafeToRetry: %v, want RetryStatement", r)
		}
		var gone time.Duration
		if waitFor(500*time.Millisecond, func() bool {
			ids, err := appThreads(ctx, n1, "seq_1_to_200000")
			return err == nil && len(ids) == 0
		}) {
			gone = time.Since(start) - took
		} else {
			t.Errorf("the timed-out read still runs on node 1 500 ms after its error: nothing stopped it")
		}
		t.Logf("FIGURE %s/heavy read: caller_error_ms=%.1f thread_gone_after_error_ms=%.1f", name, float64(took.Microseconds())/1000, float64(gone.Microseconds())/1000)
		if took < 900*time.Millisecond || took > 1800*time.Millisecond {
			t.Errorf("the caller waited %v, want about readTimeout (1 s)", took)
		}
	})
}

// appThreads returns the ids of the app user's threads on node n running a statement
// that contains marker ("": any statement).
func appThreads(ctx context.Context, n *harness.Node, marker string) ([]int64, error) {
	rows, err := n.Admin().QueryContext(ctx, "SELECT ID FROM information_schema.PROCESSLIST WHERE USER = ? AND COMMAND = 'Query' AND INFO LIKE CONCAT('%', ?, '%')",
		harness.AppUser, marker)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// execOn runs query on the pinned connection ac.
func execOn(ctx context.Context, ac *sql.Conn, query string) error {
	_, err := ac.ExecContext(ctx, query)
	return err
}

// waitUptime waits until node n's server has run for at least d (its Uptime, whole seconds).
func waitUptime(ctx context.Context, t testing.TB, n *harness.Node, d time.Duration) {
	t.Helper()
	if !waitFor(time.Minute, func() bool {
		up, err := n.QueryInt(ctx, "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'UPTIME'")
		return err == nil && time.Duration(up)*time.Second >= d
	}) {
		t.Fatalf("node %d has not run %v within a minute", n.Index(), d)
	}
}
