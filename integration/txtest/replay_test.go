package txtest

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Transaction replay (transactionReplay=true) against real servers.
// Nodes 2 and 3 are writable islands (read_only OFF, replication stopped after the
// tables were created), so a row can be on them only if the driver wrote it there, and a
// replay that repeated too much (an autocommit row, a COMMIT) would show. Node 1's proxy
// is disabled (refused, open connections cut) for the failures, killed for the last.
func TestTransactionReplay(t *testing.T) {
	mysql.RegisterReaderHandler("txtest", func() io.Reader { return strings.NewReader("1\n2\n") })
	t.Cleanup(func() { mysql.DeregisterReaderHandler("txtest") })
	c := harness.Start(t, 3)
	ctx := ctxT(t, 3*time.Minute)
	n1, n2, n3 := c.Node(1), c.Node(2), c.Node(3)
	for _, q := range []string{
		"CREATE TABLE app.r (id INT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL, v VARCHAR(64))",
		"CREATE TABLE app.t (id INT PRIMARY KEY, a INT NOT NULL)",
		"INSERT INTO app.t SELECT seq, 0 FROM app.seq_1_to_10",
		"CREATE TABLE app.blobs (id INT PRIMARY KEY, b LONGBLOB)",
		"CREATE PROCEDURE app.p() SELECT 1",
	} {
		must(t, n1.Exec(ctx, q))
	}
	must(t, c.WaitReplicasCaughtUp(ctx))
	for _, n := range []*harness.Node{n2, n3} {
		must(t, n.SetReadOnly(ctx, false))
		must(t, n.Exec(ctx, "STOP SLAVE"))
	}
	const base = "failOverReadOnly=false&readTimeout=2s&hostTimeout=1s&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0&transactionReplay=true"
	open := func(t *testing.T, extra string) *pool {
		p := openPool(t, c.DSN(base+extra))
		p.db.SetMaxOpenConns(1)
		return p
	}
	var key atomic.Int32
	key.Store(1000)
	nextKey := func() int { return int(key.Add(1)) }
	rowsOn := func(n *harness.Node, k int) int64 { return count(ctx, t, n, fmt.Sprintf("r WHERE k = %d", k)) }
	// cut makes node 1 go away (its proxy refuses, open connections are cut) until the
	// subtest ends.
	cut := func(t *testing.T, n *harness.Node) {
		must(t, n.Disable())
		t.Cleanup(func() { _ = n.Enable() })
	}
	wantLost := func(t *testing.T, what string, err error, says string) {
		t.Helper()
		if !errors.Is(err, failover.ErrTxLost) || !strings.Contains(err.Error(), says) {
			t.Errorf("%s: %v, want ErrTxLost saying %q", what, err, says)
		}
		notBadConn(t, what, err)
	}

	// Equal results on node 2: the transaction goes on there, once.
	t.Run("replayed", func(t *testing.T) {
		p := open(t, "")
		k := nextKey()
		tx, err := p.db.BeginTx(ctx, nil)
		must(t, err)
		_, err = tx.ExecContext(ctx, "INSERT INTO r (k, v) VALUES (?, 'first')", k)
		must(t, err)
		var sum int
		must(t, tx.QueryRowContext(ctx, "SELECT SUM(a) FROM t").Scan(&sum))
		cut(t, n1)
		_, err = tx.ExecContext(ctx, "INSERT INTO r (k, v) VALUES (?, 'after')", k)
		must(t, err)
		must(t, tx.Commit())
		if got := rowsOn(n2, k); got != 2 {
			t.Errorf("node 2 has %d rows of key %d, want 2 (the replayed INSERT and the one after)", got, k)
		}
		if s := p.cn.Stats(); s.TxReplays != 1 || p.events(failover.EventTxReplay) != 1 {
			t.Errorf("TxReplays %d, %d EventTxReplay; want 1, 1", s.TxReplays, p.events(failover.EventTxReplay))
		}
	})

	// The reply to COMMIT is lost (node 1 committed): never replayed, whatever the
	// spelling; the caller gets ErrCommitOutcomeUnknown; the row is on node 1 once, and on
	// node 2 not at all.
	for _, end := range []string{"Tx.Commit", "commit", "COMMIT WORK", "prepared COMMIT", "CREATE TABLE"} {
		t.Run("interrupted-commit/"+end, func(t *testing.T) {
			p := open(t, "")
			k := nextKey()
			var err error
			if end == "Tx.Commit" {
				tx, berr := p.db.BeginTx(ctx, nil)
				must(t, berr)
				_, berr = tx.ExecContext(ctx, "INSERT INTO r (k) VALUES (?)", k)
				must(t, berr)
				must(t, n1.ResetPeer(false))
				err = tx.Commit()
			} else {
				sc, cerr := p.db.Conn(ctx)
				must(t, cerr)
				defer sc.Close()
				_, cerr = sc.ExecContext(ctx, "BEGIN")
				must(t, cerr)
				_, cerr = sc.ExecContext(ctx, "INSERT INTO r (k) VALUES (?)", k)
				must(t, cerr)
				var st *sql.Stmt
				if end == "prepared COMMIT" {
					st, cerr = sc.PrepareContext(ctx, "COMMIT")
					must(t, cerr)
					defer st.Close()
				}
				must(t, n1.ResetPeer(false))
				switch end {
				case "prepared COMMIT":
					_, err = st.ExecContext(ctx)
				case "CREATE TABLE":
					_, err = sc.ExecContext(ctx, fmt.Sprintf("CREATE TABLE app.c%d (a INT)", k))
				default:
					_, err = sc.ExecContext(ctx, end)
				}
			}
			must(t, n1.ClearToxics())
			if !errors.Is(err, failover.ErrCommitOutcomeUnknown) {
				t.Errorf("%s: %v, want ErrCommitOutcomeUnknown", end, err)
			}
			if a, b := rowsOn(n1, k), rowsOn(n2, k); a != 1 || b != 0 {
				t.Errorf("key %d: %d rows on node 1, %d on node 2; want 1, 0", k, a, b)
			}
			if s := p.cn.Stats(); s.TxReplays != 0 {
				t.Errorf("TxReplays %d, want 0", s.TxReplays)
			}
		})
	}

	// What the application read differs on node 2: the replay stops at that statement,
	// rolls back, and the caller gets ErrTxLost naming it; node 2 keeps nothing.
	for _, tc := range []struct{ name, read string }{
		{"NOW()", "SELECT NOW(6)"}, {"UUID()", "SELECT UUID()"}, {"@@server_id", "SELECT @@server_id"},
	} {
		t.Run("mismatch/"+tc.name, func(t *testing.T) {
			p := open(t, "")
			k := nextKey()
			tx, err := p.db.BeginTx(ctx, nil)
			must(t, err)
			defer tx.Rollback()
			_, err = tx.ExecContext(ctx, "INSERT INTO r (k) VALUES (?)", k)
			must(t, err)
			var v string
			must(t, tx.QueryRowContext(ctx, tc.read).Scan(&v))
			cut(t, n1)
			_, err = tx.ExecContext(ctx, "UPDATE t SET a = a + 1 WHERE id = 1")
			wantLost(t, "the UPDATE", err, "differed at statement 2 ("+tc.read+")")
			if got := rowsOn(n2, k); got != 0 {
				t.Errorf("node 2 has %d rows of key %d, want 0", got, k)
			}
			if s := p.cn.Stats(); s.TxReplayMismatches != 1 {
				t.Errorf("TxReplayMismatches %d, want 1", s.TxReplayMismatches)
			}
		})
	}
	t.Run("mismatch/auto-increment", func(t *testing.T) {
		// An id burnt on node 1 only (a rolled-back insert) puts node 1's counter ahead.
		must(t, n1.Exec(ctx, "BEGIN NOT ATOMIC START TRANSACTION; INSERT INTO app.r (k) VALUES (0); ROLLBACK; END"))
		p := open(t, "")
		k := nextKey()
		tx, err := p.db.BeginTx(ctx, nil)
		must(t, err)
		defer tx.Rollback()
		res, err := tx.ExecContext(ctx, "INSERT INTO r (k) VALUES (?)", k)
		must(t, err)
		id, err := res.LastInsertId()
		must(t, err)
		cut(t, n1)
		_, err = tx.ExecContext(ctx, "UPDATE r SET v = 'x' WHERE id = ?", id)
		wantLost(t, "the UPDATE", err, "insert id")
	})

	// A replay abandoned after it switched the session to the transaction's first
	// database: the transaction began in app and ran USE app2; the replay on node 2 runs
	// USE app and differs at SELECT UUID(), before the record's own USE app2. After
	// ROLLBACK the connection's statements run in app2, where they ran on node 1.
	t.Run("mismatch/after-use", func(t *testing.T) {
		p := open(t, "")
		k := nextKey()
		sc, err := p.db.Conn(ctx)
		must(t, err)
		defer sc.Close()
		for _, q := range []string{"BEGIN", fmt.Sprintf("INSERT INTO r (k) VALUES (%d)", k)} {
			_, err := sc.ExecContext(ctx, q)
			must(t, err)
		}
		var v string
		must(t, sc.QueryRowContext(ctx, "SELECT UUID()").Scan(&v))
		_, err = sc.ExecContext(ctx, "USE "+harness.AppDB2)
		must(t, err)
		cut(t, n1)
		_, err = sc.ExecContext(ctx, "SELECT 1")
		wantLost(t, "SELECT 1", err, "differed at statement 3 (SELECT UUID())")
		_, err = sc.ExecContext(ctx, "ROLLBACK")
		must(t, err)
		var db string
		must(t, sc.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&db))
		if db != harness.AppDB2 {
			t.Errorf("after the abandoned replay and ROLLBACK the connection's statements run in %q, want %q", db, harness.AppDB2)
		}
		if got := rowsOn(n2, k); got != 0 {
			t.Errorf("node 2 has %d rows of key %d, want 0", got, k)
		}
		if s := p.cn.Stats(); s.TxReplayMismatches != 1 {
			t.Errorf("TxReplayMismatches %d, want 1", s.TxReplayMismatches)
		}
	})

	// What a replay cannot carry: ErrTxLost with the reason; node 2 gets nothing.
	for _, tc := range []struct {
		name, extra string
		before      []string // on the pinned connection, before BEGIN
		in          []string // inside the transaction
		why         string
	}{
		{name: "user variable", before: []string{"SET @x = 7"}, in: []string{"INSERT INTO r (k, v) VALUES (%d, @x)"}, why: "user variable (@x)"},
		{name: "temporary table", before: []string{"CREATE TEMPORARY TABLE tmp (a INT)"}, in: []string{"INSERT INTO tmp VALUES (1)", "INSERT INTO r (k) VALUES (%d)"}, why: "temporary table"},
		{name: "GET_LOCK", in: []string{"INSERT INTO r (k) VALUES (%d)", "SELECT GET_LOCK('replay', 0)"}, why: "GET_LOCK"},
		{name: "CALL", in: []string{"INSERT INTO r (k) VALUES (%d)", "CALL p()"}, why: "CALL"},
		{name: "multi-statement batch", extra: "&multiStatements=true", in: []string{"INSERT INTO r (k) VALUES (%d); INSERT INTO r (k) VALUES (%[1]d)"}, why: "multi-statement batch"},
		{name: "LOCK TABLES", before: []string{"SET autocommit = 0"}, in: []string{"LOCK TABLES r WRITE", "INSERT INTO r (k) VALUES (%d)"}, why: "table locks"},
		{name: "XA", in: []string{"XA START 'replay'", "INSERT INTO r (k) VALUES (%d)"}, why: "XA"},
		{name: "LOAD DATA LOCAL", in: []string{"INSERT INTO r (k) VALUES (%d)", "LOAD DATA LOCAL INFILE 'Reader::txtest' INTO TABLE r (k)"}, why: "LOAD DATA"},
		{name: "over transactionReplayMaxSize", extra: "&transactionReplayMaxSize=1KiB", in: []string{"INSERT INTO r (k, v) VALUES (%d, REPEAT('x', 60))", "SELECT '" + strings.Repeat("y", 1100) + "'"}, why: "transactionReplayMaxSize"},
	} {
		t.Run("refused/"+tc.name, func(t *testing.T) {
			p := open(t, tc.extra)
			k := nextKey()
			sc, err := p.db.Conn(ctx)
			must(t, err)
			defer sc.Close()
			for _, q := range tc.before {
				_, err := sc.ExecContext(ctx, q)
				must(t, err)
			}
			if !strings.HasPrefix(tc.in[0], "XA") && !strings.HasPrefix(tc.in[0], "LOCK") {
				_, err = sc.ExecContext(ctx, "BEGIN")
				must(t, err)
			}
			for _, q := range tc.in {
				if strings.Contains(q, "%") {
					q = fmt.Sprintf(q, k)
				}
				if strings.HasPrefix(q, "LOAD") {
					_, err := sc.ExecContext(ctx, q)
					must(t, err)
					continue
				}
				rows, err := sc.QueryContext(ctx, q)
				must(t, err)
				for rows.Next() {
				}
				must(t, rows.Close())
			}
			cut(t, n1)
			_, err = sc.ExecContext(ctx, "UPDATE t SET a = a + 1 WHERE id = 2")
			afterCall := tc.name == "CALL"
			if afterCall {
				// The procedure may have ended the transaction (a COMMIT in it): the UPDATE
				// may then have run as a transaction of its own and committed. Its outcome
				// is unknown, and no replay is tried.
				if !errors.Is(err, failover.ErrTxLost) || !errors.Is(err, failover.ErrCommitOutcomeUnknown) {
					t.Errorf("the UPDATE after CALL: %v, want ErrTxLost and ErrCommitOutcomeUnknown", err)
				}
			} else {
				wantLost(t, "the UPDATE", err, "not replayed: ")
				wantLost(t, "the UPDATE", err, tc.why)
			}
			_, _ = sc.ExecContext(ctx, "ROLLBACK") // answered: lost
			if got := rowsOn(n2, k); got != 0 {
				t.Errorf("node 2 has %d rows of key %d, want 0", got, k)
			}
			s := p.cn.Stats()
			if afterCall {
				if s.TxReplays != 0 {
					t.Errorf("TxReplays %d, want 0", s.TxReplays)
				}
			} else if s.TxReplayUnsafe+s.TxReplayTooBig != 1 || s.TxReplays != 0 {
				t.Errorf("TxReplayUnsafe %d, TxReplayTooBig %d, TxReplays %d; want one refusal", s.TxReplayUnsafe, s.TxReplayTooBig, s.TxReplays)
			}
		})
	}

	// A 512 KiB argument arrives on node 2 byte for byte.
	t.Run("blob", func(t *testing.T) {
		p := open(t, "")
		blob := make([]byte, 512<<10)
		for i := range blob {
			blob[i] = byte(i*31 + i>>9)
		}
		sum := sha256.Sum256(blob)
		tx, err := p.db.BeginTx(ctx, nil)
		must(t, err)
		_, err = tx.ExecContext(ctx, "INSERT INTO blobs VALUES (1, ?)", blob)
		must(t, err)
		for i := range blob {
			blob[i] = 0 // the application reuses its buffer
		}
		cut(t, n1)
		_, err = tx.ExecContext(ctx, "UPDATE t SET a = a + 1 WHERE id = 3")
		must(t, err)
		must(t, tx.Commit())
		got, err := n2.QueryString(ctx, "SELECT SHA2(b, 256) FROM app.blobs WHERE id = 1")
		must(t, err)
		if got != hex.EncodeToString(sum[:]) {
			t.Errorf("node 2's blob has SHA-256 %s, want %x", got, sum)
		}
	})

	// Node 2 goes too while the replay runs there (in a SELECT SLEEP): the replay runs
	// again on node 3; with transactionReplayAttempts=1 the transaction is lost instead.
	for _, attempts := range []int{5, 1} {
		t.Run(fmt.Sprintf("second-failure/attempts=%d", attempts), func(t *testing.T) {
			p := open(t, fmt.Sprintf("&transactionReplayAttempts=%d", attempts))
			k := nextKey()
			tx, err := p.db.BeginTx(ctx, nil)
			must(t, err)
			defer tx.Rollback()
			_, err = tx.ExecContext(ctx, "INSERT INTO r (k) VALUES (?)", k)
			must(t, err)
			var z int
			must(t, tx.QueryRowContext(ctx, "SELECT SLEEP(0.3)").Scan(&z))
			cut(t, n1)
			go func() {
				waitRunning(ctx, t, n2, "SELECT SLEEP")
				_ = n2.Disable()
			}()
			t.Cleanup(func() { _ = n2.Enable() })
			_, err = tx.ExecContext(ctx, "UPDATE t SET a = a + 1 WHERE id = 4")
			if attempts == 1 {
				wantLost(t, "the UPDATE", err, "1 replays already")
				if got := rowsOn(n3, k); got != 0 {
					t.Errorf("node 3 has %d rows of key %d, want 0", got, k)
				}
				return
			}
			must(t, err)
			must(t, tx.Commit())
			if a, b := rowsOn(n2, k), rowsOn(n3, k); a != 0 || b != 1 {
				t.Errorf("key %d: %d rows on node 2, %d on node 3; want 0, 1", k, a, b)
			}
		})
	}

	// The limits in time: the caller's deadline, and transactionReplayTimeout. The
	// replay would take 0.5 s (a SELECT SLEEP the application ran); both bounds are
	// shorter, and the transaction is lost.
	for _, tc := range []struct{ name, extra string }{{"caller's deadline", ""}, {"transactionReplayTimeout", "&transactionReplayTimeout=200ms"}} {
		t.Run("time/"+tc.name, func(t *testing.T) {
			p := open(t, tc.extra)
			tx, err := p.db.BeginTx(ctx, nil)
			must(t, err)
			defer tx.Rollback()
			var z int
			must(t, tx.QueryRowContext(ctx, "SELECT SLEEP(0.5)").Scan(&z))
			cut(t, n1)
			sctx := ctx
			if tc.extra == "" {
				var cancel context.CancelFunc
				sctx, cancel = context.WithTimeout(ctx, 200*time.Millisecond)
				defer cancel()
			}
			start := time.Now()
			_, err = tx.ExecContext(sctx, "UPDATE t SET a = a + 1 WHERE id = 5")
			t.Logf("FIGURE %s: stopped_after_ms=%d", t.Name(), time.Since(start).Milliseconds())
			if err == nil || errors.Is(err, failover.ErrCommitOutcomeUnknown) {
				t.Fatalf("the UPDATE: %v, want the transaction lost", err)
			}
			if tc.extra != "" {
				wantLost(t, "the UPDATE", err, "ran out of time")
			}
		})
	}

	// Node 1 killed mid-transaction: replayed once on node 2; the autocommit row written
	// just before the transaction is on node 1 only (never replayed); node 1, restarted,
	// has nothing of the transaction.
	t.Run("kill", func(t *testing.T) {
		p := open(t, "")
		k := nextKey()
		_, err := p.db.ExecContext(ctx, "INSERT INTO r (k, v) VALUES (?, 'autocommit')", k)
		must(t, err)
		tx, err := p.db.BeginTx(ctx, nil)
		must(t, err)
		_, err = tx.ExecContext(ctx, "INSERT INTO r (k, v) VALUES (?, 'tx')", k)
		must(t, err)
		must(t, n1.Kill())
		_, err = tx.ExecContext(ctx, "UPDATE t SET a = a + 1 WHERE id = 6")
		must(t, err)
		must(t, tx.Commit())
		if got := count(ctx, t, n2, fmt.Sprintf("r WHERE k = %d AND v = 'tx'", k)); got != 1 {
			t.Errorf("node 2 has %d of the transaction's rows, want 1", got)
		}
		if got := count(ctx, t, n2, fmt.Sprintf("r WHERE k = %d AND v = 'autocommit'", k)); got != 0 {
			t.Errorf("node 2 has %d of the autocommit rows, want 0: it was replayed", got)
		}
		must(t, n1.Restart(ctx))
		if a, b := count(ctx, t, n1, fmt.Sprintf("r WHERE k = %d AND v = 'autocommit'", k)), count(ctx, t, n1, fmt.Sprintf("r WHERE k = %d AND v = 'tx'", k)); a != 1 || b != 0 {
			t.Errorf("node 1 after its restart: %d autocommit rows, %d of the transaction's; want 1, 0", a, b)
		}
		if s := p.cn.Stats(); s.TxReplays != 1 {
			t.Errorf("TxReplays %d, want 1", s.TxReplays)
		}
	})
}
