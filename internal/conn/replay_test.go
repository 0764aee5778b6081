package conn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// Transaction replay (transactionReplay=true).

var replayCfg = Config{Replay: true, ReplayMaxSize: 1 << 20, ReplayAttempts: 5, ReplayTimeout: 30 * time.Second}

// rowsOf scripts q returning one column a with the values.
func rowsOf(q string, vals ...any) step {
	return func(m sqlmock.Sqlmock) {
		r := sqlmock.NewRows([]string{"a"})
		for _, v := range vals {
			r.AddRow(v)
		}
		m.ExpectQuery(q).WillReturnRows(r)
	}
}

// result scripts q returning insert id and rows affected.
func result(q string, id, affected int64) step {
	return func(m sqlmock.Sqlmock) { m.ExpectExec(q).WillReturnResult(sqlmock.NewResult(id, affected)) }
}

// txBody runs, in tx, the INSERT (reading its insert id when readID) and the SELECT
// (reading every row) that the scripts below expect, and returns what it read.
func txBody(t *testing.T, tx *sql.Tx, readID bool) (int64, []int64) {
	t.Helper()
	res, err := tx.Exec("INSERT INTO t VALUES (1)")
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if readID {
		if id, err = res.LastInsertId(); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := tx.Query("SELECT a FROM t")
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	for rows.Next() {
		var a int64
		if err := rows.Scan(&a); err != nil {
			t.Fatal(err)
		}
		got = append(got, a)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	return id, got
}

// The host dies inside a Tx: the transaction runs again on H2 (BEGIN, the INSERT, the
// SELECT: same insert id, same rows), the interrupted UPDATE runs there and its result
// goes to the caller, and Commit commits on H2. An autocommit statement run before the
// transaction is not part of it and never reaches H2.
func TestReplayTx(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 2)
	e.script(0, all(ok("INSERT INTO log VALUES (0)"), begin(), result("INSERT INTO t VALUES (1)", 7, 1), rowsOf("SELECT a FROM t", 1, 2)))
	e.script(1, all(begin(), result("INSERT INTO t VALUES (1)", 7, 1), rowsOf("SELECT a FROM t", 1, 2),
		result("UPDATE t SET a = 3", 0, 2), commit(nil), trap("INSERT INTO log VALUES (0)")))
	db := e.db(replayCfg, 1)
	if _, err := db.Exec("INSERT INTO log VALUES (0)"); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if id, rows := txBody(t, tx, true); id != 7 || len(rows) != 2 {
		t.Fatalf("id %d, rows %v", id, rows)
	}
	e.net.Down(0)
	res, err := tx.Exec("UPDATE t SET a = 3")
	if err != nil {
		t.Fatalf("UPDATE after the failure: %v, want it replayed", err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Errorf("UPDATE: %d rows affected, want H2's 2", n)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit on H2: %v", err)
	}
	if s := e.cl.Stats(); s.TxReplays != 1 || s.TxReplayMismatches != 0 {
		t.Errorf("TxReplays %d, TxReplayMismatches %d; want 1, 0", s.TxReplays, s.TxReplayMismatches)
	}
	e.wantEvents(failover.EventTxReplay, h2, 1)
	e.untouched(1, 0, "INSERT INTO log VALUES (0)")
}

// A transaction opened by BEGIN as a statement, with autocommit off from the DSN, and
// one through prepared statements: replayed the same way (a prepared statement is
// prepared again on the new session).
func TestReplayStatementTransaction(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   Config
		begin []string
	}{
		{"BEGIN", replayCfg, []string{"BEGIN"}},
		{"autocommit=0", func() Config { c := replayCfg; c.Autocommit = "0"; return c }(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			setup := []string(nil)
			if tc.cfg.Autocommit == "0" {
				setup = nil // go-sql-driver sends the DSN's autocommit itself (sqlmock: nothing)
			}
			e.script(0, all(execs(tc.begin...), ok("INSERT INTO t VALUES (1)"), prepared("UPDATE t SET a = ?", 5, nil)))
			e.script(1, all(execs(setup...), execs(tc.begin...), ok("INSERT INTO t VALUES (1)"), prepared("UPDATE t SET a = ?", 5, nil),
				ok("DELETE FROM t WHERE a = 0"), ok("COMMIT")))
			c := e.open(tc.cfg)
			mustExecAll(t, c, tc.begin...)
			mustExec(t, c, "INSERT INTO t VALUES (1)")
			s := prepare(t, c, "UPDATE t SET a = ?")
			if err := execStmt(s, 5); err != nil {
				t.Fatal(err)
			}
			_ = s.Close()
			e.net.Down(0)
			if err := exec(c, "DELETE FROM t WHERE a = 0"); err != nil {
				t.Fatalf("DELETE after the failure: %v, want it replayed", err)
			}
			mustExec(t, c, "COMMIT")
			wantHost(t, c, h2)
			e.allMet()
		})
	}
}

// What the application saw differs on the new session: a value it read (NOW(),
// @@server_id, UUID()), the insert id it asked for, the rows affected it asked for, an
// error instead of a result. The replay rolls back, the statement gets ErrTxLost with an
// error naming the statement, the Tx is lost (Commit: ErrTxLost), and the mismatch is
// counted. An insert id the application never asked for may differ: the replay goes
// on, and the result then answers with the new id.
func TestReplayMismatch(t *testing.T) {
	dup := &mysql.MySQLError{Number: 1062, SQLState: [5]byte{'2', '3', '0', '0', '0'}, Message: "Duplicate entry"}
	for _, tc := range []struct {
		name   string
		readID bool
		onH2   step // what H2 answers to the INSERT and SELECT
		stmt   int  // the statement named, 0: no mismatch
	}{
		{"rows differ", true, all(result("INSERT INTO t VALUES (1)", 7, 1), rowsOf("SELECT a FROM t", 1, 3)), 2},
		{"fewer rows", true, all(result("INSERT INTO t VALUES (1)", 7, 1), rowsOf("SELECT a FROM t", 1)), 2},
		{"more rows after the end", true, all(result("INSERT INTO t VALUES (1)", 7, 1), rowsOf("SELECT a FROM t", 1, 2, 3)), 2},
		{"insert id read", true, result("INSERT INTO t VALUES (1)", 8, 1), 1},
		{"insert id not read", false, all(result("INSERT INTO t VALUES (1)", 8, 1), rowsOf("SELECT a FROM t", 1, 2),
			result("UPDATE t SET a = 3", 0, 1), commit(nil)), 0},
		{"an error on replay", true, func(m sqlmock.Sqlmock) { m.ExpectExec("INSERT INTO t VALUES (1)").WillReturnError(dup) }, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, 2)
			e.script(0, all(begin(), result("INSERT INTO t VALUES (1)", 7, 1), rowsOf("SELECT a FROM t", 1, 2)))
			h2steps := all(begin(), tc.onH2)
			if tc.stmt != 0 {
				h2steps = all(h2steps, rollback(), trap("UPDATE t SET a = 3"))
			}
			e.script(1, h2steps)
			db := e.db(replayCfg, 1)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := tx.Exec("INSERT INTO t VALUES (1)")
			if err != nil {
				t.Fatal(err)
			}
			if tc.readID {
				_, _ = res.LastInsertId()
			}
			rows, err := tx.Query("SELECT a FROM t")
			if err != nil {
				t.Fatal(err)
			}
			for rows.Next() {
			}
			_ = rows.Close()
			e.net.Down(0)
			_, err = tx.Exec("UPDATE t SET a = 3")
			if tc.stmt == 0 {
				if err != nil {
					t.Fatalf("UPDATE: %v, want it replayed", err)
				}
				if id, _ := res.LastInsertId(); id != 8 {
					t.Errorf("the INSERT's result answers insert id %d after the replay, want H2's 8", id)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				e.allMet()
				return
			}
			var re *replayError
			if !errors.Is(err, failover.ErrTxLost) || !errors.As(err, &re) || re.n != tc.stmt || re.host != h2 {
				t.Fatalf("UPDATE: %v, want ErrTxLost naming statement %d on H2", err, tc.stmt)
			}
			wantFailover(t, err, h1, h2, true)
			if err := tx.Commit(); !errors.Is(err, failover.ErrTxLost) {
				t.Errorf("Commit: %v, want ErrTxLost", err)
			}
			if s := e.cl.Stats(); s.TxReplayMismatches != 1 || s.TxReplays != 0 {
				t.Errorf("TxReplayMismatches %d, TxReplays %d; want 1, 0", s.TxReplayMismatches, s.TxReplays)
			}
			e.untouched(1, 0, "UPDATE t SET a = 3")
		})
	}
}

// A COMMIT in any spelling (Tx.Commit, COMMIT, commit work behind a comment, a prepared
// COMMIT) or a statement that commits implicitly is never replayed when its session
// fails: the caller gets ErrCommitOutcomeUnknown, and H2 gets nothing of the
// transaction.
func TestReplayNeverCommits(t *testing.T) {
	for _, end := range []string{"Tx.Commit", "COMMIT", "/* done */ commit work", "prepared COMMIT", "CREATE TABLE t2 (a INT)"} {
		t.Run(end, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, 2)
			e.script(0, all(begin(), execs("BEGIN"), ok("INSERT INTO t VALUES (1)"), func(m sqlmock.Sqlmock) {
				if end == "prepared COMMIT" {
					m.ExpectPrepare("COMMIT").WillBeClosed()
				}
			}))
			e.script(1, all(ok("SELECT 1"), trap("INSERT INTO t VALUES (1)")))
			var err error
			if end == "Tx.Commit" {
				db := e.db(replayCfg, 1)
				tx, berr := db.BeginTx(ctx, nil)
				if berr != nil {
					t.Fatal(berr)
				}
				if _, err := tx.Exec("INSERT INTO t VALUES (1)"); err != nil {
					t.Fatal(err)
				}
				e.net.Down(0)
				err = tx.Commit()
				e.net.Up(0)
				if _, serr := db.Exec("SELECT 1"); serr != nil {
					t.Fatal(serr)
				}
			} else {
				c := e.open(replayCfg)
				mustExecAll(t, c, "BEGIN", "INSERT INTO t VALUES (1)")
				var s driver.Stmt
				if end == "prepared COMMIT" {
					s = prepare(t, c, "COMMIT")
				}
				e.net.Down(0)
				if s != nil {
					_, err = s.(driver.StmtExecContext).ExecContext(ctx, nil)
				} else {
					err = exec(c, end)
				}
				mustExec(t, c, "SELECT 1")
			}
			if !errors.Is(err, failover.ErrCommitOutcomeUnknown) {
				t.Errorf("%s: %v, want ErrCommitOutcomeUnknown", end, err)
			}
			if s := e.cl.Stats(); s.TxReplays != 0 {
				t.Errorf("TxReplays %d, want 0", s.TxReplays)
			}
			e.untouched(1, 0, "INSERT INTO t VALUES (1)")
		})
	}
}

// Transactions a replay cannot carry are lost as without replay, with the reason, and
// counted; H2 gets nothing of them.
func TestReplayRefused(t *testing.T) {
	big := make([]byte, 1100<<10) // over the 1 MiB budget
	for _, tc := range []struct {
		name   string
		before []string // on the session, before BEGIN
		in     []string // inside, after BEGIN
		arg    any      // an argument for the prepared INSERT, nil: none
		why    string
		tooBig bool
		multi  bool // multiStatements
	}{
		{name: "user variable before", before: []string{"SET @x = 5"}, in: []string{"INSERT INTO t VALUES (@x)"}, why: "user variable (@x)"},
		{name: "user variable inside", in: []string{"SELECT @n := COUNT(*) FROM t"}, why: "user variable (@n)"},
		{name: "temporary table", before: []string{"CREATE TEMPORARY TABLE tmp (a INT)"}, in: []string{"INSERT INTO tmp VALUES (1)"}, why: "temporary table"},
		{name: "GET_LOCK", in: []string{"SELECT GET_LOCK('x', 1)"}, why: "GET_LOCK"},
		{name: "CALL", in: []string{"CALL p()"}, why: "CALL"},
		{name: "LOAD DATA", in: []string{"LOAD DATA LOCAL INFILE 'f' INTO TABLE t"}, why: "LOAD DATA"},
		{name: "XA", before: nil, in: []string{"XA START 'x'", "INSERT INTO t VALUES (2)"}, why: "XA"},
		{name: "multi-statement batch", in: []string{"INSERT INTO t VALUES (2); INSERT INTO t VALUES (3)"}, multi: true, why: "multi-statement batch"},
		{name: "too big", in: []string{"INSERT INTO t VALUES (2)"}, arg: big, tooBig: true, why: "transactionReplayMaxSize"},
		{name: "an argument that cannot be copied", in: []string{"INSERT INTO t VALUES (2)"}, arg: []int{1}, why: "argument of type []int"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			on1 := all(execs(tc.before...), execs("BEGIN"), execs(tc.in...))
			if tc.arg != nil {
				on1 = all(on1, func(m sqlmock.Sqlmock) {
					m.ExpectPrepare("INSERT INTO t VALUES (?)").WillBeClosed().ExpectExec().WillReturnResult(sqlmock.NewResult(0, 1))
				})
			}
			e.script(0, on1)
			e.script(1, all(ok("SELECT 1"), trap("BEGIN")))
			cfg := replayCfg
			cfg.MultiStatements = tc.multi
			c := e.open(cfg)
			mustExecAll(t, c, tc.before...)
			begin := "BEGIN"
			if strings.HasPrefix(tc.in[0], "XA") {
				begin = ""
			} else {
				mustExec(t, c, begin)
			}
			mustExecAll(t, c, tc.in...)
			if tc.arg != nil {
				s := prepare(t, c, "INSERT INTO t VALUES (?)")
				_, err := s.(driver.StmtExecContext).ExecContext(context.Background(), []driver.NamedValue{{Ordinal: 1, Value: tc.arg}})
				if err != nil {
					t.Fatal(err)
				}
				_ = s.Close()
			}
			e.net.Down(0)
			err := exec(c, "UPDATE t SET a = 1")
			if tc.name == "CALL" {
				// The procedure may have ended the transaction (a COMMIT inside it): the
				// UPDATE may then have run as a transaction of its own, and committed.
				// Its outcome is unknown, and nothing is replayed.
				if !errors.Is(err, failover.ErrTxLost) || !errors.Is(err, failover.ErrCommitOutcomeUnknown) {
					t.Errorf("UPDATE after CALL: %v, want ErrTxLost and ErrCommitOutcomeUnknown", err)
				}
			} else if !errors.Is(err, failover.ErrTxLost) || !strings.Contains(err.Error(), "not replayed") || !strings.Contains(err.Error(), tc.why) {
				t.Errorf("UPDATE: %v, want ErrTxLost saying it was not replayed for %q", err, tc.why)
			}
			mustExec(t, c, "ROLLBACK") // answered: lost
			mustExec(t, c, "SELECT 1")
			s := e.cl.Stats()
			if tc.name == "CALL" {
				// not counted: no replay was tried
			} else if tc.tooBig && s.TxReplayTooBig != 1 || !tc.tooBig && s.TxReplayUnsafe != 1 {
				t.Errorf("TxReplayTooBig %d, TxReplayUnsafe %d", s.TxReplayTooBig, s.TxReplayUnsafe)
			}
			e.untouched(1, 0, "BEGIN")
		})
	}
}

// The second host fails during the replay: the replay runs again on H3. The caller's
// 512 KiB argument, whose buffer it changed after the statement, arrives at H3 byte for
// byte as it was sent first.
func TestReplaySecondFailure(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 3)
	blob := make([]byte, 512<<10)
	for i := range blob {
		blob[i] = byte(i * 7)
	}
	sent := append([]byte(nil), blob...)
	// sqlmock runs a statement with arguments directly (go-sql-driver would answer
	// driver.ErrSkip, and database/sql would prepare it: TestReplayStatementTransaction).
	insert := func(m sqlmock.Sqlmock) {
		m.ExpectExec("INSERT INTO b VALUES (?)").WithArgs(sent).WillReturnResult(sqlmock.NewResult(0, 1))
	}
	e.script(0, all(begin(), insert))
	e.script(1, all(begin(), func(m sqlmock.Sqlmock) {
		m.ExpectExec("INSERT INTO b VALUES (?)").WithArgs(sent).WillReturnError(mysql.ErrInvalidConn)
	}))
	e.script(2, all(begin(), insert, ok("UPDATE t SET a = 1"), commit(nil)))
	db := e.db(replayCfg, 1)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec("INSERT INTO b VALUES (?)", blob); err != nil {
		t.Fatal(err)
	}
	for i := range blob {
		blob[i] = 0 // the application reuses its buffer
	}
	e.net.Down(0)
	e.net.AcceptOnly(1, 1) // H2 takes the first replay's session and fails it; no new session there
	if _, err := tx.Exec("UPDATE t SET a = 1"); err != nil {
		t.Fatalf("UPDATE: %v, want it replayed on H3", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if s := e.cl.Stats(); s.TxReplays != 1 {
		t.Errorf("TxReplays %d, want 1", s.TxReplays)
	}
	if err := e.phys(2, 0).Mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
}

// The limits: transactionReplayAttempts (1: the failure during the replay ends it) and
// the caller's context (ended: no replay, or one cut short).
func TestReplayLimits(t *testing.T) {
	t.Run("attempts", func(t *testing.T) {
		ctx := context.Background()
		e := newEnv(t, 3)
		e.script(0, all(begin(), ok("INSERT INTO t VALUES (1)")))
		e.script(1, all(begin(), fails("INSERT INTO t VALUES (1)", mysql.ErrInvalidConn)))
		e.script(2, all(ok("SELECT 1"), trap("INSERT INTO t VALUES (1)")))
		cfg := replayCfg
		cfg.ReplayAttempts = 1
		db := e.db(cfg, 1)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		e.net.Down(0)
		e.net.AcceptOnly(1, 1)
		_, err = tx.Exec("UPDATE t SET a = 1")
		if !errors.Is(err, failover.ErrTxLost) || !strings.Contains(err.Error(), "1 replays already") {
			t.Errorf("UPDATE: %v, want ErrTxLost after 1 replay", err)
		}
		_ = tx.Rollback()
		if _, err := db.Exec("SELECT 1"); err != nil {
			t.Fatal(err)
		}
		e.untouched(2, 0, "INSERT INTO t VALUES (1)")
	})
	t.Run("the caller's context", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(begin(), ok("INSERT INTO t VALUES (1)")))
		e.script(1, all(trap("BEGIN")))
		db := e.db(replayCfg, 1)
		ctx, cancel := context.WithCancel(context.Background())
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("INSERT INTO t VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		e.net.Down(0)
		cancel()
		_, err = tx.ExecContext(ctx, "UPDATE t SET a = 1")
		if err == nil || errors.Is(err, failover.ErrCommitOutcomeUnknown) {
			t.Errorf("UPDATE with the context cancelled: %v, want an error", err)
		}
		if s := e.cl.Stats(); s.TxReplays != 0 {
			t.Errorf("TxReplays %d, want 0", s.TxReplays)
		}
	})
}

// A session the server closed while the transaction sat idle (found before the next
// statement is sent) is replayed on a new session, and the statement runs there.
func TestReplayIdleSession(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, all(execs("BEGIN", "INSERT INTO t VALUES (1)")))
	e.script(0, all(execs("BEGIN", "INSERT INTO t VALUES (1)")), all(execs("BEGIN", "INSERT INTO t VALUES (1)", "UPDATE t SET a = 1", "COMMIT")))
	c := e.open(replayCfg)
	mustExecAll(t, c, "BEGIN", "INSERT INTO t VALUES (1)")
	e.phys(0, 0).ResetErr.Store(driver.ErrBadConn) // the server closed it meanwhile
	e.clock.Advance(2 * time.Second)
	mustExecAll(t, c, "UPDATE t SET a = 1", "COMMIT")
	if s := e.cl.Stats(); s.TxReplays != 1 {
		t.Errorf("TxReplays %d, want 1", s.TxReplays)
	}
	if err := e.phys(0, 1).Mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
}

// A statement that failed inside the transaction (a duplicate key the application
// handled) is replayed too, and must fail the same way; one that succeeds on the new
// session is a difference.
func TestReplayFailedStatement(t *testing.T) {
	dup := &mysql.MySQLError{Number: 1062, SQLState: [5]byte{'2', '3', '0', '0', '0'}, Message: "Duplicate entry '1' for key 'PRIMARY'"}
	for _, same := range []bool{true, false} {
		t.Run(map[bool]string{true: "same error", false: "succeeds on replay"}[same], func(t *testing.T) {
			e := newEnv(t, 2)
			e.script(0, all(execs("BEGIN"), fails("INSERT INTO t VALUES (1)", dup), ok("UPDATE t SET a = 1 WHERE id = 1")))
			h2 := all(execs("BEGIN"), fails("INSERT INTO t VALUES (1)", dup), ok("UPDATE t SET a = 1 WHERE id = 1"), ok("UPDATE t SET a = 2"))
			if !same {
				h2 = all(execs("BEGIN"), ok("INSERT INTO t VALUES (1)"), ok("ROLLBACK"), trap("UPDATE t SET a = 2"))
			}
			e.script(1, h2)
			c := e.open(replayCfg)
			mustExec(t, c, "BEGIN")
			if err := exec(c, "INSERT INTO t VALUES (1)"); err != error(dup) {
				t.Fatalf("INSERT: %v", err)
			}
			mustExec(t, c, "UPDATE t SET a = 1 WHERE id = 1") // the application's answer to the duplicate
			e.net.Down(0)
			err := exec(c, "UPDATE t SET a = 2")
			if same {
				if err != nil {
					t.Fatalf("UPDATE: %v, want it replayed", err)
				}
				e.allMet()
				return
			}
			var re *replayError
			if !errors.Is(err, failover.ErrTxLost) || !errors.As(err, &re) || re.n != 2 || !strings.Contains(re.why, "error 1062") {
				t.Fatalf("UPDATE: %v, want ErrTxLost naming statement 2 and the error the application saw", err)
			}
			e.untouched(1, 0, "UPDATE t SET a = 2")
		})
	}
}

// Characteristics that SET TRANSACTION gave the next transaction (READ ONLY, an
// isolation level) are not replayed: a Tx begun after them, like a transaction opened by
// BEGIN after them, is lost with the reason, and H2 gets nothing of it. A replay would
// begin read-write there, and the INSERT the READ ONLY original would have refused
// (1792) would run and commit.
func TestReplayRefusesPendingCharacteristics(t *testing.T) {
	for _, tc := range []struct {
		name, set string
		tx        bool // begun by BeginTx; else by a BEGIN statement
	}{
		{"READ ONLY, then BeginTx", "SET TRANSACTION READ ONLY", true},
		{"an isolation level, then BeginTx", "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", true},
		{"@@tx_isolation, then BeginTx", "SET @@tx_isolation = 'SERIALIZABLE'", true},
		{"READ ONLY, then BEGIN", "SET TRANSACTION READ ONLY", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, 2)
			open, reopen := begin(), begin()
			if !tc.tx {
				open, reopen = ok("BEGIN"), ok("BEGIN")
			}
			e.script(0, all(ok(tc.set), open, rowsOf("SELECT a FROM t", 1)))
			// What a replay would find on H2: the INSERT succeeds, and so does COMMIT.
			e.script(1, all(reopen, rowsOf("SELECT a FROM t", 1), ok("INSERT INTO t VALUES (2)"), commit(nil), ok("COMMIT")))
			var err error
			if tc.tx {
				db := e.db(replayCfg, 1)
				if _, err := db.ExecContext(ctx, tc.set); err != nil {
					t.Fatal(err)
				}
				tx, berr := db.BeginTx(ctx, nil)
				if berr != nil {
					t.Fatal(berr)
				}
				rows, qerr := tx.QueryContext(ctx, "SELECT a FROM t")
				if qerr != nil {
					t.Fatal(qerr)
				}
				for rows.Next() {
				}
				_ = rows.Close()
				e.net.Down(0)
				_, err = tx.ExecContext(ctx, "INSERT INTO t VALUES (2)")
				if cerr := tx.Commit(); !errors.Is(cerr, failover.ErrTxLost) {
					t.Errorf("Commit: %v, want ErrTxLost", cerr)
				}
			} else {
				c := e.open(replayCfg)
				mustExecAll(t, c, tc.set, "BEGIN")
				_ = mustQuery(t, c, "SELECT a FROM t").Close()
				e.net.Down(0)
				err = exec(c, "INSERT INTO t VALUES (2)")
				if cerr := exec(c, "COMMIT"); !errors.Is(cerr, failover.ErrTxLost) {
					t.Errorf("COMMIT: %v, want ErrTxLost", cerr)
				}
			}
			if !errors.Is(err, failover.ErrTxLost) || !strings.Contains(err.Error(), "not replayed") || !strings.Contains(err.Error(), "SET TRANSACTION") {
				t.Fatalf("INSERT: %v, want ErrTxLost saying it was not replayed for SET TRANSACTION", err)
			}
			if s := e.cl.Stats(); s.TxReplays != 0 || s.TxReplayUnsafe != 1 {
				t.Errorf("TxReplays %d, TxReplayUnsafe %d; want 0, 1", s.TxReplays, s.TxReplayUnsafe)
			}
			if err := e.phys(1, 0).Mock.ExpectationsWereMet(); err == nil || !strings.Contains(err.Error(), "BEGIN") && !strings.Contains(err.Error(), "Begin") {
				t.Errorf("H2: %v, want nothing of the transaction run there", err)
			}
		})
	}
}

// START TRANSACTION READ ONLY run as a statement is the record's first statement: the
// replay runs it as it was written, so the replayed transaction is read-only too, and a
// write in it is refused on H2 as it would have been on H1.
func TestReplayStartTransactionReadOnly(t *testing.T) {
	readOnlyTx := &mysql.MySQLError{Number: 1792, SQLState: [5]byte{'2', '5', '0', '0', '6'}, Message: "Cannot execute statement in a READ ONLY transaction"}
	e := newEnv(t, 2)
	e.script(0, all(ok("START TRANSACTION READ ONLY"), rowsOf("SELECT a FROM t", 1)))
	e.script(1, all(ok("START TRANSACTION READ ONLY"), rowsOf("SELECT a FROM t", 1),
		fails("INSERT INTO t VALUES (2)", readOnlyTx), ok("ROLLBACK")))
	c := e.open(replayCfg)
	mustExec(t, c, "START TRANSACTION READ ONLY")
	_ = mustQuery(t, c, "SELECT a FROM t").Close()
	e.net.Down(0)
	if err := exec(c, "INSERT INTO t VALUES (2)"); err != error(readOnlyTx) {
		t.Fatalf("INSERT after the replay: %v, want H2's 1792", err)
	}
	mustExec(t, c, "ROLLBACK")
	if s := e.cl.Stats(); s.TxReplays != 1 {
		t.Errorf("TxReplays %d, want 1", s.TxReplays)
	}
	e.allMet()
}

// A replay that is abandoned leaves no session in another database than the connection
// believes. The transaction began in shop and ran USE other: the new session on H2 is set
// up in other, the replay switches it to shop and finds the INSERT's insert id differs
// before it reaches the USE. That session is closed, not rolled back and kept: the next
// statement runs on a new session set up in other, as it would have on H1.
func TestReplayAbandonedLeavesNoOtherDatabase(t *testing.T) {
	cfg := replayCfg
	cfg.DBName = "shop"
	for _, tc := range []struct {
		name string
		tx   bool // a Tx; else a transaction opened by BEGIN
	}{{"Tx", true}, {"BEGIN", false}} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, 2)
			open, reopen, undo := begin(), begin(), rollback()
			if !tc.tx {
				open, reopen, undo = ok("BEGIN"), ok("BEGIN"), ok("ROLLBACK")
			}
			e.script(0, all(open, result("INSERT INTO t VALUES (1)", 7, 1), ok("USE other")))
			e.script(1,
				all(ok("USE `other`"), ok("USE `shop`"), reopen, result("INSERT INTO t VALUES (1)", 8, 1),
					undo, trap("SELECT 1")), // what keeping the session would do
				all(ok("USE `other`"), ok("SELECT 1")))
			var err error
			stmts := 1 // the INSERT is the record's first statement, after BeginTx
			if tc.tx {
				sc := sqlConn(t, e.db(cfg, 1)) // pinned: the same logical connection throughout
				defer sc.Close()
				tx, berr := sc.BeginTx(ctx, nil)
				if berr != nil {
					t.Fatal(berr)
				}
				res, xerr := tx.ExecContext(ctx, "INSERT INTO t VALUES (1)")
				if xerr != nil {
					t.Fatal(xerr)
				}
				_, _ = res.LastInsertId()
				if _, err := tx.ExecContext(ctx, "USE other"); err != nil {
					t.Fatal(err)
				}
				e.net.Down(0)
				_, err = tx.ExecContext(ctx, "UPDATE t SET a = 3")
				if rerr := tx.Rollback(); rerr != nil {
					t.Errorf("Rollback: %v", rerr)
				}
				if _, xerr := sc.ExecContext(ctx, "SELECT 1"); xerr != nil {
					t.Errorf("SELECT 1 after the abandoned replay: %v", xerr)
				}
			} else {
				stmts = 2 // after BEGIN
				c := e.open(cfg)
				mustExec(t, c, "BEGIN")
				res, xerr := c.ExecContext(ctx, "INSERT INTO t VALUES (1)", nil)
				if xerr != nil {
					t.Fatal(xerr)
				}
				_, _ = res.LastInsertId()
				mustExec(t, c, "USE other")
				e.net.Down(0)
				err = exec(c, "UPDATE t SET a = 3")
				mustExec(t, c, "ROLLBACK") // answered: lost
				mustExec(t, c, "SELECT 1")
			}
			var re *replayError
			if !errors.Is(err, failover.ErrTxLost) || !errors.As(err, &re) || re.n != stmts {
				t.Fatalf("UPDATE: %v, want ErrTxLost naming statement %d", err, stmts)
			}
			if n := e.phys(1, 0).Closes(); n != 1 {
				t.Errorf("the replay's session was closed %d times, want 1", n)
			}
			if err := e.phys(1, 1).Mock.ExpectationsWereMet(); err != nil {
				t.Errorf("the next session: %v", err)
			}
		})
	}
}

// The same for a setting the connection follows: the transaction set completion_type to
// CHAIN and back, so the new session on H2 is set up with NO_CHAIN; the replay sets CHAIN
// and then differs. Keeping that session would make the application's next COMMIT open a
// transaction the connection does not know of; it is closed instead, and the next
// statements run on a new session.
func TestReplayAbandonedLeavesNoOtherSetting(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, all(execs("BEGIN", "SET completion_type = 1"), result("INSERT INTO t VALUES (1)", 7, 1), ok("SET completion_type = 0")))
	e.script(1,
		all(execs("BEGIN", "SET completion_type = 1"), result("INSERT INTO t VALUES (1)", 8, 1), ok("ROLLBACK"),
			trap("SELECT 1")), // what keeping the session would do
		all(execs("SELECT 1", "COMMIT")))
	c := e.open(replayCfg)
	mustExecAll(t, c, "BEGIN", "SET completion_type = 1")
	res, err := c.ExecContext(context.Background(), "INSERT INTO t VALUES (1)", nil)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = res.LastInsertId()
	mustExec(t, c, "SET completion_type = 0")
	e.net.Down(0)
	var re *replayError
	if err := exec(c, "UPDATE t SET a = 3"); !errors.Is(err, failover.ErrTxLost) || !errors.As(err, &re) || re.n != 3 {
		t.Fatalf("UPDATE: %v, want ErrTxLost naming statement 3", err)
	}
	mustExecAll(t, c, "ROLLBACK", "SELECT 1", "COMMIT")
	if n := e.phys(1, 0).Closes(); n != 1 {
		t.Errorf("the replay's session was closed %d times, want 1", n)
	}
	if err := e.phys(1, 1).Mock.ExpectationsWereMet(); err != nil {
		t.Errorf("the next session: %v", err)
	}
	if c.st.txn != txnNone || c.st.ct != ctNoChain {
		t.Errorf("after COMMIT the connection believes txn %d, completion_type %d; want none, NO_CHAIN", c.st.txn, c.st.ct)
	}
}
