package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// Invariant one-host-per-transaction: a transaction opened by statements (however it was opened) is
// known, and treated as one opened by BeginTx.

var (
	deadlock   = &mysql.MySQLError{Number: 1213, SQLState: [5]byte{'4', '0', '0', '0', '1'}, Message: "Deadlock found"}
	noVariable = &mysql.MySQLError{Number: 1193, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "Unknown system variable 'in_transaction'"}
)

// execs scripts each of qs as a successful Exec.
func execs(qs ...string) step {
	steps := make([]step, len(qs))
	for i, q := range qs {
		steps[i] = ok(q)
	}
	return all(steps...)
}

func mustExecAll(t *testing.T, c *Conn, qs ...string) {
	t.Helper()
	for _, q := range qs {
		mustExec(t, c, q)
	}
}

// asked scripts the question resolve asks a MariaDB server, and its answer, typed as
// go-sql-driver returns it from MariaDB: @@autocommit BIGINT (int64), @@completion_type
// VARCHAR, @@in_transaction UNSIGNED BIGINT (uint64).
func asked(autocommit int64, completion string, inTransaction int64) step {
	return func(m sqlmock.Sqlmock) {
		m.ExpectQuery(askAll).WillReturnRows(sqlmock.NewRows([]string{"@@autocommit", "@@completion_type", "@@in_transaction"}).
			AddRow(autocommit, completion, uint64(inTransaction)))
	}
}

// askedMySQL scripts the questions resolve asks a MySQL server, which has no
// @@in_transaction, and its answer to the second.
func askedMySQL(autocommit int64, completion string) step {
	return func(m sqlmock.Sqlmock) {
		m.ExpectQuery(askAll).WillReturnError(noVariable)
		m.ExpectQuery(askNoInTrx).WillReturnRows(sqlmock.NewRows([]string{"@@autocommit", "@@completion_type"}).
			AddRow(autocommit, completion))
	}
}

// movePool makes b, the second logical connection opened (whose H1 session expects
// "B1" to fail), fail over to H2: the pool is on H2 from then on.
func movePool(t *testing.T, e *env, b *Conn) {
	t.Helper()
	e.refuse(0) // H1 takes no new connection: B's failure moves the pool (A's session lives on)
	wantFailover(t, exec(b, "B1"), h1, h2, true)
	if e.cl.Active() != 1 {
		t.Fatalf("Active() = %d after B's failover, want 1", e.cl.Active())
	}
}

// wantLost checks that err is a lost transaction's error for a statement that did not
// run: ErrTxLost, without a FailoverError, never ErrBadConn.
func wantLost(t *testing.T, what string, err error) {
	t.Helper()
	if !errors.Is(err, failover.ErrTxLost) || errors.As(err, new(*failover.FailoverError)) {
		t.Errorf("%s: %v, want ErrTxLost alone (it was not sent)", what, err)
	}
	notBadConn(t, err)
}

// Every way of opening a transaction by statements keeps the session on its host when
// the pool moves, for every statement until the transaction ends there; the next
// statement then joins the pool's host, and a new session gets the autocommit and
// completion_type a SET gave the old one.
func TestStatementTransactionStaysWhenThePoolMoves(t *testing.T) {
	for _, tc := range []struct {
		name   string
		cfg    Config
		open   []string // before the pool moves
		during []string // after it moved, still inside
		end    string
		setup  []string // what the new session on H2 gets before A3
	}{
		{name: "BEGIN", open: []string{"BEGIN", "A1"},
			during: []string{"A2", "SAVEPOINT s", "ROLLBACK TO SAVEPOINT s", "COMMIT AND CHAIN", "A2b"}, end: "COMMIT"},
		{name: "START TRANSACTION behind a comment", open: []string{"/* app */ start transaction read write", "A1"},
			during: []string{"A2", "CREATE TEMPORARY TABLE tmp (a INT)", "DROP TEMPORARY TABLE tmp"}, end: "ROLLBACK WORK"},
		{name: "implicit commit", open: []string{"BEGIN", "A1"}, during: []string{"A2"}, end: "CREATE TABLE t2 (a INT)"},
		{name: "autocommit=0 from the DSN", cfg: Config{Autocommit: "0"}, open: []string{"A1"},
			during: []string{"A2", "SELECT 2"}, end: "COMMIT"},
		{name: "autocommit=0 from the DSN, ended by SET autocommit=1", cfg: Config{Autocommit: "OFF"}, open: []string{"A1"},
			during: []string{"A2"}, end: "SET autocommit = 1", setup: []string{"SET autocommit = 1"}},
		{name: "SET autocommit=0", open: []string{"SET autocommit = 0", "A1"}, during: []string{"A2"},
			end: "COMMIT", setup: []string{"SET autocommit = 0"}},
		{name: "SET NAMES and autocommit=0 in one list", open: []string{"SET NAMES utf8mb4, autocommit = 0", "A1"},
			during: []string{"A2"}, end: "COMMIT", setup: []string{"SET autocommit = 0"}},
		{name: "autocommit=0 after CHARACTER SET and ROLE", open: []string{"SET CHARACTER SET utf8mb4, ROLE NONE, @@session.autocommit = OFF", "A1"},
			during: []string{"A2"}, end: "COMMIT", setup: []string{"SET autocommit = 0"}},
		{name: "SET autocommit=1 inside BEGIN leaves it open", open: []string{"BEGIN", "A1"},
			during: []string{"SET @@session.autocommit = ON", "A2"}, end: "COMMIT"},
		{name: "XA", open: []string{"XA START 'x'", "A1"}, during: []string{"A2", "XA END 'x'", "XA PREPARE 'x'"},
			end: "XA COMMIT 'x'"},
		{name: "LOCK TABLES", open: []string{"LOCK TABLES t WRITE", "A1"}, during: []string{"A2", "COMMIT"},
			end: "UNLOCK TABLES"},
		{name: "SET TRANSACTION", open: []string{"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE"},
			during: []string{"START TRANSACTION", "A2"}, end: "COMMIT"},
		{name: "completion_type=CHAIN from the DSN", cfg: Config{CompletionType: "CHAIN"}, open: []string{"BEGIN", "A1"},
			during: []string{"COMMIT", "A2"}, end: "COMMIT AND NO CHAIN"},
		{name: "SET completion_type=1", open: []string{"SET completion_type = 1", "BEGIN"},
			during: []string{"COMMIT", "A2"}, end: "ROLLBACK AND NO CHAIN", setup: []string{"SET completion_type = 1"}},
		{name: "multiStatements", cfg: Config{MultiStatements: true}, open: []string{"BEGIN; INSERT INTO t VALUES (1)"},
			during: []string{"A2; A2b"}, end: "SELECT 1; COMMIT"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			onH1 := append(append(append([]string{}, tc.open...), tc.during...), tc.end)
			e.script(0, execs(onH1...), fails("B1", mysql.ErrInvalidConn))
			e.script(1, nil, execs(append(tc.setup, "A3")...))
			a, b := e.open(tc.cfg), e.open(tc.cfg)
			mustExecAll(t, a, tc.open...)
			movePool(t, e, b)
			for _, q := range append(tc.during, tc.end) {
				mustExec(t, a, q)
				wantHost(t, a, h1)
			}
			mustExec(t, a, "A3")
			wantHost(t, a, h2)
			if n := e.phys(0, 0).Closes(); n != 1 {
				t.Errorf("A's H1 session closed %d times, want 1", n)
			}
			e.allMet()
		})
	}
}

// No fall-back inside a transaction opened by statements, whether the timer or the
// statement count makes it due; the statements inside count; the first statement after
// the end falls back.
func TestNoFallBackInsideStatementTransaction(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secs    int
		queries int
		advance time.Duration
	}{
		{"secondsBeforeRetryMaster", 30, 0, 31 * time.Second},
		{"queriesBeforeRetryMaster", 0, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, retryMaster(tc.secs, tc.queries))
			e.script(0, nil, ok("AFTER"))
			e.script(1, execs("BEGIN", "T1", "T2", "T3", "T4", "COMMIT"))
			c := e.open(seqB)
			failOverToH2(t, e, c, true)
			mustExec(t, c, "BEGIN")
			e.clock.Advance(tc.advance)
			for _, q := range []string{"T1", "T2", "T3", "T4", "COMMIT"} {
				mustExec(t, c, q)
				wantHost(t, c, h2)
			}
			if !e.cl.FallBackDue() {
				t.Fatal("fall-back not due")
			}
			e.wantEvents(failover.EventFallBack, "", 0)
			mustExec(t, c, "AFTER")
			wantHost(t, c, h1)
			e.wantEvents(failover.EventFallBack, h1, 1)
			e.allMet()
		})
	}
}

// A communication failure inside a transaction opened by statements loses it, as inside
// a Tx: the failing statement gets ErrTxLost with the FailoverError; every later call
// of it (Exec, Query, Prepare, a prepared statement, Ping, BeginTx) gets ErrTxLost
// without reaching any host, and the connection is not valid for the pool; COMMIT
// returns the same error and ROLLBACK nil, ending the lost state. The next statement
// runs on H2. SetReadOnly keeps working.
func TestStatementTransactionFailureIsLost(t *testing.T) {
	for _, tc := range []struct {
		name string
		cfg  Config
		open []string
		end  string
	}{
		{name: "BEGIN, COMMIT", open: []string{"BEGIN", "A1"}, end: "COMMIT"},
		{name: "BEGIN, ROLLBACK", open: []string{"BEGIN", "A1"}, end: "ROLLBACK"},
		{name: "autocommit=0, COMMIT", cfg: Config{Autocommit: "0"}, open: []string{"A1"}, end: "commit work"},
		{name: "autocommit=0, ROLLBACK", cfg: Config{Autocommit: "0"}, open: []string{"A1"}, end: "/* undo */ ROLLBACK"},
		{name: "CALL: unknown counts as open", open: []string{"CALL p()"}, end: "ROLLBACK"},
		{name: "XA", open: []string{"XA START 'x'", "A1"}, end: "XA ROLLBACK 'x'"},
		{name: "LOCK TABLES", open: []string{"LOCK TABLES t WRITE"}, end: "UNLOCK TABLES"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, 2)
			e.script(0, all(execs(tc.open...), fails("A2", mysql.ErrInvalidConn)))
			var onH2 step = execs(setReadOnly, setReadWrite, "A4")
			if tc.cfg.Autocommit == "0" {
				onH2 = execs(setReadOnly, setReadWrite, "A4", "COMMIT")
			}
			e.script(1, all(onH2, trap("A3")))
			c := e.open(tc.cfg)
			mustExecAll(t, c, tc.open...)
			prepared := prepareOK(t, e, c, "A3")
			if !c.IsValid() {
				t.Error("IsValid() = false inside an open transaction: closing it would roll it back")
			}

			e.refuse(0) // H1 is gone
			err := exec(c, "A2")
			wantFailover(t, err, h1, h2, true)
			if !errors.Is(err, failover.ErrTxLost) {
				t.Errorf("the failing statement: %v, want ErrTxLost", err)
			}
			// Under table locks or an unknown state with autocommit on, the statement may
			// have been a transaction of its own: it may have committed, and must not be
			// run again (SafeToRetry: RetryNothing).
			autocommits := tc.name == "LOCK TABLES" || strings.HasPrefix(tc.name, "CALL")
			if got := errors.Is(err, failover.ErrCommitOutcomeUnknown); got != autocommits {
				t.Errorf("the failing statement: %v; ErrCommitOutcomeUnknown %v, want %v", err, got, autocommits)
			}
			later := exec(c, "A3")
			wantLost(t, "exec", later)
			if !strings.Contains(later.Error(), "on "+h1) || strings.Count(later.Error(), "lost") != 1 {
				t.Errorf("lost error %q: want the host once, and its cause said once", later)
			}
			for name, call := range map[string]func() error{
				"query":             func() error { _, err := c.QueryContext(ctx, "A3", nil); return err },
				"prepare":           func() error { _, err := c.PrepareContext(ctx, "A3"); return err },
				"prepared":          func() error { _, err := prepared.(driver.StmtExecContext).ExecContext(ctx, nil); return err },
				"ping":              func() error { return c.Ping(ctx) },
				"begin":             func() error { _, err := c.BeginTx(ctx, driver.TxOptions{}); return err },
				"savepoint":         func() error { return exec(c, "ROLLBACK TO SAVEPOINT s") },
				"SET autocommit=1":  func() error { return exec(c, "SET autocommit = 1") },
				"ROLLBACK; A3":      func() error { return exec(c, "ROLLBACK; A3") },
				"DDL (not the end)": func() error { return exec(c, "CREATE TABLE t2 (a INT)") },
			} {
				err := call()
				wantLost(t, name, err)
				if err != later {
					t.Errorf("%s: %v, want the stored error %v", name, err, later)
				}
			}
			if c.IsValid() {
				t.Error("IsValid() = true while the transaction is lost: the pool would hand the lost state on")
			}
			if err := c.SetReadOnly(ctx, true); err != nil {
				t.Errorf("SetReadOnly while lost: %v", err)
			}
			if err := c.SetReadOnly(ctx, false); err != nil {
				t.Errorf("SetReadOnly while lost: %v", err)
			}

			err = exec(c, tc.end)
			if strings.Contains(strings.ToUpper(tc.end), "ROLLBACK") {
				if err != nil {
					t.Errorf("%s of the lost transaction: %v, want nil (the server rolled it back)", tc.end, err)
				}
			} else if err != later {
				t.Errorf("%s of the lost transaction: %v, want the stored error %v", tc.end, err, later)
			}
			if !c.IsValid() {
				t.Error("IsValid() = false after the lost transaction ended")
			}
			mustExec(t, c, "A4")
			wantHost(t, c, h2)
			if tc.cfg.Autocommit == "0" {
				mustExec(t, c, "COMMIT") // autocommit stays off on H2 (from the DSN): this one is real
			}
			e.untouched(1, 0, "A3")
		})
	}
}

// prepareOK prepares q on c's current session (H1) and returns the statement.
func prepareOK(t *testing.T, e *env, c *Conn, q string) driver.Stmt {
	t.Helper()
	e.phys(0, 0).Mock.ExpectPrepare(q)
	s, err := c.PrepareContext(context.Background(), q)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// A statement that ends the transaction and fails: an interrupted COMMIT (or a statement
// that commits implicitly) is "outcome unknown", one provably not sent "lost", an
// interrupted ROLLBACK returns the failover error; none of them leaves the connection in
// the lost state (the transaction is over either way). A prepared XA transaction
// survives its session: outcome unknown, whatever was sent.
func TestStatementTransactionEndFails(t *testing.T) {
	for _, tc := range []struct {
		name    string
		open    []string
		end     string
		err     error
		unknown bool // ErrCommitOutcomeUnknown, else ErrTxLost or (rollback) neither
		lost    bool
	}{
		{name: "COMMIT interrupted", open: []string{"BEGIN", "A1"}, end: "COMMIT", err: mysql.ErrInvalidConn, unknown: true},
		{name: "COMMIT AND CHAIN interrupted", open: []string{"BEGIN", "A1"}, end: "COMMIT AND CHAIN", err: mysql.ErrInvalidConn, unknown: true},
		{name: "COMMIT not sent", open: []string{"BEGIN", "A1"}, end: "COMMIT", err: driver.ErrBadConn, lost: true},
		{name: "DDL interrupted", open: []string{"SET autocommit = 0", "A1"}, end: "DROP TABLE t", err: mysql.ErrInvalidConn, unknown: true},
		{name: "BEGIN interrupted inside a transaction", open: []string{"BEGIN", "A1"}, end: "BEGIN", err: mysql.ErrInvalidConn, unknown: true},
		{name: "ROLLBACK interrupted", open: []string{"BEGIN", "A1"}, end: "ROLLBACK", err: mysql.ErrInvalidConn},
		{name: "XA COMMIT of a prepared transaction not sent", open: []string{"XA START 'x'", "A1", "XA END 'x'", "XA PREPARE 'x'"},
			end: "XA COMMIT 'x'", err: driver.ErrBadConn, unknown: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			e.script(0, all(execs(tc.open...), fails(tc.end, tc.err)))
			var setup []string
			if tc.open[0] == "SET autocommit = 0" {
				setup = []string{"SET autocommit = 0"}
			}
			e.script(1, execs(append(setup, "NEXT")...))
			c := e.open(seqB)
			mustExecAll(t, c, tc.open...)
			e.refuse(0) // the session failed, and H1 is gone too
			err := exec(c, tc.end)
			wantFailover(t, err, h1, h2, tc.err != driver.ErrBadConn)
			if got := errors.Is(err, failover.ErrCommitOutcomeUnknown); got != tc.unknown {
				t.Errorf("%s: %v; ErrCommitOutcomeUnknown %v, want %v", tc.end, err, got, tc.unknown)
			}
			if got := errors.Is(err, failover.ErrTxLost); got != tc.lost {
				t.Errorf("%s: %v; ErrTxLost %v, want %v", tc.end, err, got, tc.lost)
			}
			mustExec(t, c, "NEXT") // not lost: the transaction is over
			wantHost(t, c, h2)
			e.allMet()
		})
	}
}

// A transaction whose state the statements cannot tell (CALL) is counted as open until
// the server says otherwise, which is asked only when a move is due: MariaDB's
// @@in_transaction 0 lets the session move, 1 keeps it; a server without the variable
// (MySQL) keeps it, and is not asked again; a question that breaks loses the session,
// and the caller's statement was not sent.
func TestUnknownTransactionAsksTheServer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		answer step
		stays  bool
		last   string // the host of A3, after COMMIT
	}{
		{"in_transaction=0", asked(1, "NO_CHAIN", 0), false, h2},
		{"in_transaction=1", asked(1, "NO_CHAIN", 1), true, h2},
		{"MySQL", askedMySQL(1, "NO_CHAIN"), true, h2},
		// CALL may have changed autocommit too: unknown, it cannot be restored elsewhere
		{"no answer", func(m sqlmock.Sqlmock) { m.ExpectQuery(askAll).WillReturnError(deadlock) }, true, h1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			first := all(ok("CALL p()"), tc.answer)
			if tc.stays {
				first = all(first, execs("A2", "A2b", "COMMIT"))
				// asked once: the answer, or that there is none, is remembered
				first = all(first, func(m sqlmock.Sqlmock) { m.ExpectQuery(askAll).WillReturnError(noVariable) })
			}
			if tc.last == h1 {
				first = all(first, ok("A3"))
			}
			e.script(0, first, fails("B1", mysql.ErrInvalidConn))
			e.script(1, nil, execs("A3"))
			a, b := e.open(seqB), e.open(seqB)
			mustExec(t, a, "CALL p()")
			movePool(t, e, b)
			if tc.stays {
				mustExecAll(t, a, "A2", "A2b", "COMMIT") // asked once, before A2
				wantHost(t, a, h1)
			}
			mustExec(t, a, "A3")
			wantHost(t, a, tc.last)
			if tc.stays {
				e.untouched(0, 0, askAll)
				return
			}
			e.allMet()
		})
	}
	t.Run("no question on the hot path", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, execs("CALL p()", "A2")) // no question: the pool stays, nothing is due
		c := e.open(seqB)
		mustExecAll(t, c, "CALL p()", "A2")
		e.allMet()
	})
	t.Run("the question breaks", func(t *testing.T) {
		e := newEnv(t, 3)
		e.script(0, all(ok("CALL p()"), func(m sqlmock.Sqlmock) {
			m.ExpectQuery(askAll).WillReturnError(mysql.ErrInvalidConn)
		}, trap("A2")), fails("B1", mysql.ErrInvalidConn))
		e.script(1, nil, trap("A2"))
		a, b := e.open(seqB), e.open(seqB)
		mustExec(t, a, "CALL p()")
		movePool(t, e, b)
		err := exec(a, "A2")
		if !errors.Is(err, failover.ErrTxLost) {
			t.Errorf("A2 after the question broke: %v, want ErrTxLost", err)
		}
		wantFailover(t, err, h1, h2, false) // A2 itself was not sent
		wantLost(t, "A2 again", exec(a, "A2"))
		e.untouched(0, 0, "A2")
		e.untouched(1, 1, "A2")
	})
}

// A data error leaves the session: a failed COMMIT may or may not have ended the
// transaction (unknown: the server is asked before a move); any failed statement with
// autocommit off opens one. (A deadlock is not such an error: it ends the transaction,
// see txended_test.go.)
func TestDataErrorLeavesTheState(t *testing.T) {
	commitFailed := &mysql.MySQLError{Number: 1180, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "Got error 1 during COMMIT"}
	noTable := &mysql.MySQLError{Number: 1146, SQLState: [5]byte{'4', '2', 'S', '0', '2'}, Message: "Table 'x' doesn't exist"}
	t.Run("COMMIT fails", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(execs("BEGIN", "A1"), fails("COMMIT", commitFailed), asked(1, "NO_CHAIN", 0)), fails("B1", mysql.ErrInvalidConn))
		e.script(1, nil, execs("A3"))
		a, b := e.open(seqB), e.open(seqB)
		mustExecAll(t, a, "BEGIN", "A1")
		if err := exec(a, "COMMIT"); err != error(commitFailed) {
			t.Fatalf("COMMIT: %v, want the server's error itself", err)
		}
		movePool(t, e, b)
		mustExec(t, a, "A3")
		wantHost(t, a, h2)
		e.allMet()
	})
	t.Run("a failed SELECT with autocommit off", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(fails("SELECT x", noTable), execs("A2", "COMMIT")), fails("B1", mysql.ErrInvalidConn))
		e.script(1, nil, execs("A3"))
		a, b := e.open(Config{Autocommit: "0"}), e.open(Config{Autocommit: "0"})
		if err := exec(a, "SELECT x"); err != error(noTable) {
			t.Fatalf("SELECT: %v", err)
		}
		movePool(t, e, b)
		mustExecAll(t, a, "A2", "COMMIT")
		wantHost(t, a, h1)
		mustExec(t, a, "A3")
		wantHost(t, a, h2)
		e.allMet()
	})
}

// ResetSession does not drop a session inside a transaction opened by statements when
// the pool moved (it did before: the transaction's COMMIT then ran on a new session on
// H2, committing nothing); after the end it does. A session that dies in the pool loses
// its transaction. Through database/sql with one connection and autocommit=0, the usage
// this guards: the lost connection is retired when it goes back to the pool, and the
// next statement gets a new one.
func TestResetSessionKeepsAnOpenSession(t *testing.T) {
	ctx := context.Background()
	t.Run("the pool moved", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, execs("BEGIN", "A2", "COMMIT"), fails("B1", mysql.ErrInvalidConn))
		e.script(1, nil, execs("A3"))
		a, b := e.open(seqB), e.open(seqB)
		mustExec(t, a, "BEGIN")
		movePool(t, e, b)
		if err := a.ResetSession(ctx); err != nil {
			t.Fatal(err)
		}
		wantHost(t, a, h1)
		mustExecAll(t, a, "A2", "COMMIT")
		if err := a.ResetSession(ctx); err != nil {
			t.Fatal(err)
		}
		mustExec(t, a, "A3")
		wantHost(t, a, h2)
		e.allMet()
	})
	t.Run("the session died in the pool", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, execs("BEGIN"), all(ok("A3"), trap("A2")))
		c := e.open(seqB)
		mustExec(t, c, "BEGIN")
		e.phys(0, 0).ResetErr.Store(driver.ErrBadConn)
		if err := c.ResetSession(ctx); err != nil {
			t.Fatal(err)
		}
		wantLost(t, "A2", exec(c, "A2"))
		if err := exec(c, "ROLLBACK"); err != nil {
			t.Fatal(err)
		}
		mustExec(t, c, "A3")
		wantHost(t, c, h1)
		e.noHostEvents()
		e.untouched(0, 1, "A2")
	})
	t.Run("database/sql, autocommit=0, one connection", func(t *testing.T) {
		cfg := Config{Autocommit: "0"}
		e := newEnv(t, 3)
		e.script(0, fails("B1", mysql.ErrInvalidConn), execs("A1", "A2", "COMMIT"))
		e.script(1, nil, all(ok("A3"), fails("A4", mysql.ErrInvalidConn)))
		e.script(2, nil, ok("A5"))
		b := e.open(cfg) // H1's first session
		db := e.db(cfg, 1)
		dbExec := func(q string) error { _, err := db.ExecContext(ctx, q); return err }
		if err := dbExec("A1"); err != nil { // opens a transaction (autocommit=0)
			t.Fatal(err)
		}
		movePool(t, e, b)
		for _, q := range []string{"A2", "COMMIT", "A3"} { // A3 after the real safe point: on H2
			if err := dbExec(q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		e.refuse(1)
		err := dbExec("A4") // inside A3's transaction: lost, the connection moves to H3
		if !errors.Is(err, failover.ErrTxLost) {
			t.Fatalf("A4: %v, want ErrTxLost", err)
		}
		if err := dbExec("A5"); err != nil { // a new logical connection: the lost one was retired
			t.Fatalf("A5: %v", err)
		}
		if n := e.opens.Load(); n != 2 {
			t.Errorf("%d logical connections, want 2 (the lost one retired by IsValid)", n)
		}
		if n := e.phys(2, 0).Closes(); n != 1 {
			t.Errorf("the lost connection's H3 session closed %d times, want 1", n)
		}
		e.allMet()
	})
}

// After a liveness check finds an idle pinned session dead, its transaction is lost, as a
// Tx's is; nothing is sent.
func TestIdleStatementTransactionIsLost(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, execs("BEGIN", "A1"), all(ok("A3"), trap("A2")))
	c := e.open(seqB)
	mustExecAll(t, c, "BEGIN", "A1")
	e.phys(0, 0).ResetErr.Store(driver.ErrBadConn)
	e.clock.Advance(2 * cluster.DefaultIdleCheck)
	wantLost(t, "A2", exec(c, "A2"))
	if err := exec(c, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "A3")
	e.noHostEvents()
	e.untouched(0, 1, "A2")
}

// A cancelled statement inside a transaction opened by statements: go-sql-driver closed
// the session, so the transaction is lost (the context error first, ErrTxLost after).
func TestCancelInsideStatementTransaction(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, execs("BEGIN"), all(ok("A3"), trap("A2")))
	c := e.open(seqB)
	mustExec(t, c, "BEGIN")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	e.phys(0, 0).Broken.Store(true)
	if _, err := c.ExecContext(ctx, "A1", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("A1: %v, want context.Canceled", err)
	}
	wantLost(t, "A2", exec(c, "A2"))
	if err := exec(c, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "A3")
	e.noHostEvents()
	e.untouched(0, 1, "A2")
}

// Prepared statements count as statements: a prepared BEGIN opens the transaction, a
// prepared COMMIT ends it; while lost a prepared statement does not run (a prepared
// ROLLBACK ends the lost state without running).
func TestPreparedStatementTransaction(t *testing.T) {
	ctx := context.Background()
	run := func(t *testing.T, s driver.Stmt) error {
		t.Helper()
		_, err := s.(driver.StmtExecContext).ExecContext(ctx, nil)
		return err
	}
	t.Run("BEGIN and COMMIT", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(func(m sqlmock.Sqlmock) {
			m.ExpectPrepare("BEGIN").ExpectExec().WillReturnResult(sqlmock.NewResult(0, 0))
			m.ExpectPrepare("COMMIT").ExpectExec().WillReturnResult(sqlmock.NewResult(0, 0))
		}, ok("A2")), fails("B1", mysql.ErrInvalidConn))
		e.script(1, nil, execs("A3"))
		a, b := e.open(seqB), e.open(seqB)
		begin, err := a.PrepareContext(ctx, "BEGIN")
		if err != nil {
			t.Fatal(err)
		}
		commit, err := a.PrepareContext(ctx, "COMMIT")
		if err != nil {
			t.Fatal(err)
		}
		if err := run(t, begin); err != nil {
			t.Fatal(err)
		}
		movePool(t, e, b)
		mustExec(t, a, "A2")
		wantHost(t, a, h1)
		if err := run(t, commit); err != nil {
			t.Fatal(err)
		}
		mustExec(t, a, "A3")
		wantHost(t, a, h2)
		e.allMet()
	})
	t.Run("lost", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(execs("BEGIN"), func(m sqlmock.Sqlmock) {
			m.ExpectPrepare("INSERT INTO t VALUES (1)")
		}, fails("A1", mysql.ErrInvalidConn)))
		e.script(1, all(func(m sqlmock.Sqlmock) { m.ExpectPrepare("ROLLBACK") }, ok("A3")))
		c := e.open(seqB)
		mustExec(t, c, "BEGIN")
		ins, err := c.PrepareContext(ctx, "INSERT INTO t VALUES (1)")
		if err != nil {
			t.Fatal(err)
		}
		e.refuse(0)
		if err := exec(c, "A1"); !errors.Is(err, failover.ErrTxLost) {
			t.Fatalf("A1: %v, want ErrTxLost", err)
		}
		wantLost(t, "prepared INSERT", run(t, ins)) // not prepared again on H2
		rb, err := c.PrepareContext(ctx, "ROLLBACK")
		if err != nil {
			t.Fatalf("preparing ROLLBACK while lost: %v", err)
		}
		if err := run(t, rb); err != nil {
			t.Fatalf("prepared ROLLBACK of the lost transaction: %v, want nil", err)
		}
		mustExec(t, c, "A3")
		e.allMet()
	})
}

// COMMIT ... RELEASE closes the session on the server: the driver drops it without
// blaming the host, and the next statement gets a new session on the same host. With
// completion_type=RELEASE a plain COMMIT does the same.
func TestCommitReleaseDropsTheSession(t *testing.T) {
	for _, tc := range []struct {
		name, end string
		cfg       Config
	}{
		{"COMMIT RELEASE", "COMMIT RELEASE", seqB},
		{"ROLLBACK RELEASE", "ROLLBACK WORK RELEASE", seqB},
		{"completion_type=2", "COMMIT", Config{CompletionType: "2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			e.script(0, execs("BEGIN", tc.end), execs("NEXT"))
			c := e.open(tc.cfg)
			mustExecAll(t, c, "BEGIN", tc.end)
			if n := e.phys(0, 0).Closes(); n != 1 {
				t.Errorf("the released session closed %d times, want 1", n)
			}
			mustExec(t, c, "NEXT")
			wantHost(t, c, h1)
			e.noHostEvents()
			e.allMet()
		})
	}
}

// SetReadOnly works inside a transaction opened by statements, on the same session
// (SET SESSION TRANSACTION is allowed there), also when the pool has moved.
func TestSetReadOnlyInsideStatementTransaction(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, execs("BEGIN", setReadOnly, "COMMIT"), fails("B1", mysql.ErrInvalidConn))
	e.script(1, nil, execs(setReadOnly, "A3"))
	a, b := e.open(seqB), e.open(seqB)
	mustExec(t, a, "BEGIN")
	movePool(t, e, b)
	if err := a.SetReadOnly(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	wantHost(t, a, h1)
	mustExec(t, a, "COMMIT")
	mustExec(t, a, "A3")
	wantHost(t, a, h2)
	e.allMet()
}

// With multiStatements, a batch is judged statement by statement: one that opens a
// transaction and works in it loses it when it fails; one that commits inside an open
// transaction may have committed, and may have lost what came after.
func TestBatchFailure(t *testing.T) {
	cfg := Config{MultiStatements: true}
	for _, tc := range []struct {
		name          string
		open, batch   string
		lost, unknown bool
	}{
		{name: "BEGIN and work", batch: "BEGIN; INSERT INTO t VALUES (1)", lost: true},
		{name: "work and COMMIT", open: "BEGIN", batch: "INSERT INTO t VALUES (1); COMMIT", lost: true, unknown: true},
		{name: "plain, outside a transaction", batch: "SELECT 1; SELECT 2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			first := fails(tc.batch, mysql.ErrInvalidConn)
			if tc.open != "" {
				first = all(ok(tc.open), first)
			}
			e.script(0, first)
			e.script(1, all(ok("ROLLBACK"), ok("NEXT")))
			c := e.open(cfg)
			if tc.open != "" {
				mustExec(t, c, tc.open)
			}
			e.refuse(0)
			err := exec(c, tc.batch)
			wantFailover(t, err, h1, h2, true)
			if errors.Is(err, failover.ErrTxLost) != tc.lost || errors.Is(err, failover.ErrCommitOutcomeUnknown) != tc.unknown {
				t.Errorf("%v: want ErrTxLost %v, ErrCommitOutcomeUnknown %v", err, tc.lost, tc.unknown)
			}
			if tc.lost {
				wantLost(t, "NEXT", exec(c, "NEXT"))
				if err := exec(c, "ROLLBACK"); err != nil {
					t.Fatal(err)
				}
			} else {
				mustExec(t, c, "ROLLBACK") // sent: nothing was lost
			}
			mustExec(t, c, "NEXT")
		})
	}
}

// With multiStatements a query's later statements run while the caller reads the first
// result: until the state is asked for, the transaction may be open or not (unknown).
func TestMultiStatementQueryMayStillRun(t *testing.T) {
	cfg := Config{MultiStatements: true}
	const q = "SELECT 1; COMMIT"
	e := newEnv(t, 2)
	e.script(0, all(ok("BEGIN"), queryRows(q, 1), asked(1, "NO_CHAIN", 0)), fails("B1", mysql.ErrInvalidConn))
	e.script(1, nil, ok("A3"))
	a, b := e.open(cfg), e.open(cfg)
	mustExec(t, a, "BEGIN")
	rows := mustQuery(t, a, q)
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	movePool(t, e, b)
	mustExec(t, a, "A3") // after the server said no transaction is open
	wantHost(t, a, h2)
	e.allMet()
}

// The case through database/sql: BEGIN on a pinned *sql.Conn, the pool moves;
// the transaction's statements and its COMMIT run on H1 (before, they ran on a new
// session on H2, and COMMIT returned nil with the writes gone), the next one on H2.
func TestPinnedConnBeginThroughDatabaseSQL(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 2)
	e.script(0, fails("B1", mysql.ErrInvalidConn), execs("BEGIN", "INSERT INTO t VALUES (1)", "COMMIT"))
	e.script(1, nil, execs("A3"))
	b := e.open(seqB)
	sc := sqlConn(t, e.db(seqB, 2))
	defer sc.Close()
	host := func() (h string) { withProxy(t, sc, func(c *Conn) { h = c.Host() }); return h }
	if _, err := sc.ExecContext(ctx, "BEGIN"); err != nil {
		t.Fatal(err)
	}
	movePool(t, e, b)
	for _, q := range []string{"INSERT INTO t VALUES (1)", "COMMIT"} {
		if _, err := sc.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
		if h := host(); h != h1 {
			t.Fatalf("%s ran on %s, want %s", q, h, h1)
		}
	}
	if _, err := sc.ExecContext(ctx, "A3"); err != nil {
		t.Fatal(err)
	}
	if h := host(); h != h2 {
		t.Errorf("after COMMIT on %s, want %s", h, h2)
	}
	e.allMet()
}

// A session that dies inside a transaction opened by statements while its host still
// answers: the transaction is lost all the same (ErrTxLost, the FailoverError naming the
// same host), later statements are refused until ROLLBACK, and the pool stays; the
// connection's new session is on H1.
func TestStatementTransactionLostOnALiveHost(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, all(execs("BEGIN", "A1"), fails("A2", mysql.ErrInvalidConn)), all(ok("A4"), trap("A3")))
	c := e.open(seqB)
	mustExecAll(t, c, "BEGIN", "A1")
	err := exec(c, "A2")
	wantFailover(t, err, h1, h1, true)
	if !errors.Is(err, failover.ErrTxLost) {
		t.Fatalf("A2: %v, want ErrTxLost", err)
	}
	wantLost(t, "A3", exec(c, "A3"))
	if err := exec(c, "ROLLBACK"); err != nil {
		t.Fatalf("ROLLBACK of the lost transaction: %v, want nil", err)
	}
	mustExec(t, c, "A4")
	wantHost(t, c, h1)
	e.noHostEvents()
	e.wantEvents(failover.EventSessionEnded, h1, 1)
	e.untouched(0, 1, "A3")
}

// The DSN's autocommit and completion_type as go-sql-driver sends them.
func TestDSNValues(t *testing.T) {
	for v, want := range map[string]uint8{"": acOn, "1": acOn, "ON": acOn, "true": acOn, "'on'": acOn,
		"0": acOff, "OFF": acOff, "false": acOff, "'OFF'": acOff, "DEFAULT": acUnknown, "2": acUnknown, "@x": acUnknown} {
		if got := autocommitOf(v); got != want {
			t.Errorf("autocommitOf(%q) = %d, want %d", v, got, want)
		}
	}
	for v, want := range map[string]uint8{"": ctNoChain, "0": ctNoChain, "NO_CHAIN": ctNoChain, "1": ctChain,
		"'CHAIN'": ctChain, "2": ctRelease, "release": ctRelease, "3": ctUnknown} {
		if got := completionOf(v); got != want {
			t.Errorf("completionOf(%q) = %d, want %d", v, got, want)
		}
	}
}
