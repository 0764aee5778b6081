package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// The state a session holds that no other session can be given, as its statements tell:
// GET_LOCK counts one lock (whatever it returned), RELEASE_LOCK one less (never below 0),
// RELEASE_ALL_LOCKS none; a user variable named anywhere (outside quotes and comments)
// counts as set; a temporary table is held from CREATE TEMPORARY TABLE until a DROP
// [TEMPORARY] TABLE of its name, in the current database when the name gives none.
func TestHoldFollowsStatements(t *testing.T) {
	for _, tc := range []struct {
		name  string
		db    string
		qs    []string
		locks int
		temps []string
		vars  bool
	}{
		{name: "nothing", qs: []string{"SELECT 1", "INSERT INTO t VALUES ('a@b', 'get_lock(x)')", "SELECT @@port", "SELECT is_used_lock('a')"}},
		{name: "one lock", qs: []string{"SELECT GET_LOCK('a', 10)"}, locks: 1},
		{name: "a lock that timed out counts", qs: []string{"SELECT GET_LOCK('a', 0)", "SELECT GET_LOCK('a', 0)"}, locks: 2},
		{name: "released", qs: []string{"SELECT GET_LOCK('a', 1), GET_LOCK('b', 1)", "SELECT RELEASE_LOCK('a')", "do release_lock ('b')"}},
		{name: "released more than taken", qs: []string{"SELECT RELEASE_LOCK('a')", "SELECT GET_LOCK('a', 1)"}, locks: 1},
		{name: "release all, then one more", qs: []string{"SELECT GET_LOCK('a', 1), GET_LOCK('b', 1)", "SELECT RELEASE_ALL_LOCKS(), GET_LOCK('c', 1)"}, locks: 1},
		{name: "a user variable", qs: []string{"SELECT a INTO @v FROM t"}, vars: true},
		{name: "a user variable in an executable comment", qs: []string{"SELECT /*! @v := 1 */ 1"}, vars: true},
		{name: "a temporary table", db: "app", qs: []string{"CREATE TEMPORARY TABLE tmp (a INT)"}, temps: []string{"app.tmp"}},
		{name: "created twice, one name", db: "app", qs: []string{"create or replace temporary table `tmp` (a INT)",
			"CREATE TEMPORARY TABLE IF NOT EXISTS app.tmp LIKE t"}, temps: []string{"app.tmp"}},
		{name: "dropped", db: "app", qs: []string{"CREATE TEMPORARY TABLE tmp (a INT)", "DROP TEMPORARY TABLE IF EXISTS `app`.`tmp`"}},
		{name: "dropped by DROP TABLE", db: "app", qs: []string{"CREATE TEMPORARY TABLE t1 (a INT)", "CREATE TEMPORARY TABLE o.t2 AS SELECT 1",
			"DROP TABLE t1, o.t2, t3"}},
		{name: "another database's table of that name", db: "app", qs: []string{"CREATE TEMPORARY TABLE tmp (a INT)", "DROP TEMPORARY TABLE other.tmp"},
			temps: []string{"app.tmp"}},
		{name: "without a database", qs: []string{"CREATE TEMPORARY TABLE tmp (a INT)"}, temps: []string{".tmp"}},
		{name: "one of two dropped", db: "app", qs: []string{"CREATE TEMPORARY TABLE a (x INT)", "CREATE TEMPORARY TABLE b (x INT)", "DROP TEMPORARY TABLE a"},
			temps: []string{"app.b"}},
		{name: "a temporary sequence", db: "app", qs: []string{"CREATE TEMPORARY SEQUENCE s"}, temps: []string{"app.s"}},
		{name: "a name the driver cannot read", db: "app", qs: []string{"CREATE TEMPORARY TABLE (a INT)"},
			temps: []string{"(a temporary table the driver could not name)"}},
		{name: "CREATE TABLE is not temporary", db: "app", qs: []string{"CREATE TABLE t (a INT)", "CREATE TABLE tmp2 LIKE t"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var h hold
			for _, q := range tc.qs {
				k := dialect.Classify(q, false)
				if k.Flags()&dialect.Holds != 0 {
					dialect.ScanHeld(q, &h.Held)
				}
				if k.Flags()&dialect.Temp != 0 || k.Kind() == dialect.Implicit && len(h.temps) > 0 {
					h.tables(q, tc.db)
				}
			}
			if h.Locks != tc.locks || !slices.Equal(h.temps, tc.temps) || h.Vars != tc.vars {
				t.Errorf("after %q: locks %d, temporary tables %q, user variables %v; want %d, %q, %v",
					tc.qs, h.Locks, h.temps, h.Vars, tc.locks, tc.temps, tc.vars)
			}
			if h.any() != (tc.locks > 0 || len(tc.temps) > 0 || tc.vars) {
				t.Errorf("any() = %v", h.any())
			}
		})
	}
}

// wantStateLost checks that err matches failover.ErrSessionStateLost with a
// *failover.SessionStateError that names host and what was lost, and never
// driver.ErrBadConn.
func wantStateLost(t *testing.T, err error, host string, want failover.SessionStateError) *failover.SessionStateError {
	t.Helper()
	var se *failover.SessionStateError
	if !errors.Is(err, failover.ErrSessionStateLost) || !errors.As(err, &se) {
		t.Fatalf("error %v (%T), want one matching failover.ErrSessionStateLost", err, err)
	}
	if se.Host != host || se.NamedLocks != want.NamedLocks || !slices.Equal(se.TempTables, want.TempTables) ||
		se.UserVariables != want.UserVariables || se.Reads != want.Reads {
		t.Errorf("SessionStateError{Host: %q, NamedLocks: %d, TempTables: %q, UserVariables: %v, Reads: %q}, want {%q, %d, %q, %v, %q}",
			se.Host, se.NamedLocks, se.TempTables, se.UserVariables, se.Reads,
			host, want.NamedLocks, want.TempTables, want.UserVariables, want.Reads)
	}
	notBadConn(t, err)
	return se
}

// heldCases are the ways a session holds state the driver cannot carry, and what the
// error says of each when it is lost; next is a statement that reads nothing of it.
var heldCases = []struct {
	name string
	hold []string // on the first session
	next string   // the call after the session ended
	want *failover.SessionStateError
}{
	{name: "GET_LOCK", hold: []string{"SELECT GET_LOCK('a', 10)"}, next: "UPDATE t SET n = 1",
		want: &failover.SessionStateError{NamedLocks: 1}},
	{name: "temporary table", hold: []string{"CREATE TEMPORARY TABLE tmp (id INT)"}, next: "INSERT INTO tmp VALUES (1)",
		want: &failover.SessionStateError{TempTables: []string{"app.tmp"}}},
	{name: "user variable", hold: []string{"SET @x = 1"}, next: "UPDATE t SET n = 1",
		want: &failover.SessionStateError{UserVariables: true}},
	{name: "LAST_INSERT_ID", hold: []string{"INSERT INTO t (v) VALUES (1)"}, next: "SELECT LAST_INSERT_ID()",
		want: &failover.SessionStateError{Reads: "LAST_INSERT_ID()"}},
	{name: "ROW_COUNT and FOUND_ROWS", hold: []string{"UPDATE t SET n = 2"}, next: "SELECT ROW_COUNT(), FOUND_ROWS()",
		want: &failover.SessionStateError{Reads: "ROW_COUNT(), FOUND_ROWS()"}},
	{name: "all of them", hold: []string{"SELECT GET_LOCK('a', 1), GET_LOCK('b', 1), @x := 2", "CREATE TEMPORARY TABLE t1 (a INT)",
		"CREATE TEMPORARY TABLE t2 (a INT)"}, next: "SELECT LAST_INSERT_ID()",
		want: &failover.SessionStateError{NamedLocks: 2, TempTables: []string{"app.t1", "app.t2"}, UserVariables: true, Reads: "LAST_INSERT_ID()"}},
	{name: "released and dropped", hold: []string{"SELECT GET_LOCK('a', 10)", "CREATE TEMPORARY TABLE tmp (id INT)",
		"SELECT RELEASE_LOCK('a')", "DROP TEMPORARY TABLE tmp"}, next: "UPDATE t SET n = 1"},
	{name: "nothing", hold: []string{"INSERT INTO t (v) VALUES (1)"}, next: "UPDATE t SET n = 1"},
}

// A pinned connection (no ResetSession between its calls) whose session the server
// closed while it sat idle (a KILL, wait_timeout) while it held a named lock, a
// temporary table or user variables, or whose next call reads LAST_INSERT_ID() or
// ROW_COUNT() of its last statement. The next call fails, unsent,
// with the error that names what was lost and where, once; the call after it runs on a
// new session on the same host. The pool stays. A session that held nothing (or had
// released and dropped it all) is replaced without a word, as before.
func TestHeldStateLostWhileIdle(t *testing.T) {
	for _, tc := range heldCases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			e.script(0, all(execs(tc.hold...), trap(tc.next)), ok(tc.next))
			c := e.open(Config{DBName: "app"})
			mustExecAll(t, c, tc.hold...)
			e.phys(0, 0).ResetErr.Store(driver.ErrBadConn) // KILLed, or wait_timeout
			e.clock.Advance(2 * cluster.DefaultIdleCheck)

			err := exec(c, tc.next)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("%s after the idle session was closed: %v, want nil", tc.next, err)
				}
			} else {
				se := wantStateLost(t, err, h1, *tc.want)
				if errors.As(err, new(*failover.FailoverError)) || !strings.Contains(se.Error(), "was not sent") {
					t.Errorf("error %q: want no FailoverError, and that the statement was not sent", err)
				}
				if err := exec(c, tc.next); err != nil { // once: then the connection carries on
					t.Fatalf("%s again: %v, want nil", tc.next, err)
				}
			}
			wantHost(t, c, h1)
			e.untouched(0, 0, tc.next)
			if err := e.phys(0, 1).Mock.ExpectationsWereMet(); err != nil {
				t.Error(err)
			}
			e.noHostEvents()
		})
	}
}

// The host dies under a session that holds such state: the failing call gets the
// FailoverError and, with it, ErrSessionStateLost naming what was lost, also when the
// call was provably not sent (go-sql-driver's driver.ErrBadConn), which without state
// runs again on the new host unseen: here it does not run there. Once: the next call runs
// on the new host.
func TestHeldStateLostWithItsHost(t *testing.T) {
	for _, notSent := range []bool{false, true} {
		for _, tc := range heldCases {
			t.Run(map[bool]string{false: "sent", true: "not sent"}[notSent]+"/"+tc.name, func(t *testing.T) {
				failure := error(mysql.ErrInvalidConn)
				if notSent {
					failure = driver.ErrBadConn
				}
				e := newEnv(t, 2)
				e.script(0, all(execs(tc.hold...), fails(tc.next, failure)))
				if tc.want != nil || !notSent {
					e.script(1, all(ok(setReadOnly), ok("AFTER"), trap(tc.next)))
				} else {
					e.script(1, all(ok(setReadOnly), ok(tc.next), ok("AFTER")))
				}
				c := e.open(Config{DBName: "app", FailOverReadOnly: true})
				mustExecAll(t, c, tc.hold...)
				e.refuse(0)
				err := exec(c, tc.next)
				switch {
				case tc.want != nil:
					wantFailover(t, err, h1, h2, !notSent)
					wantStateLost(t, err, h1, *tc.want)
				case notSent:
					if err != nil {
						t.Fatalf("%s: %v, want it run again on H2", tc.next, err)
					}
				default:
					wantFailover(t, err, h1, h2, true)
					if errors.Is(err, failover.ErrSessionStateLost) {
						t.Errorf("error %v matches ErrSessionStateLost: the session held nothing", err)
					}
				}
				mustExec(t, c, "AFTER")
				wantHost(t, c, h2)
				if tc.want != nil || !notSent {
					e.untouched(1, 0, tc.next) // the failed call did not run on H2
				}
			})
		}
	}
}

// heldMoves are the ways a session holds state, each with what keeps it held and what
// releases it (end; "" when nothing does: user variables, until database/sql hands the
// connection to its next user).
var heldMoves = []struct {
	name   string
	hold   []string
	during []string // after the move is due: still held
	end    string
}{
	{name: "GET_LOCK", hold: []string{"SELECT GET_LOCK('a', 10)"},
		during: []string{"A2", "SELECT GET_LOCK('b', 1)", "SELECT RELEASE_LOCK('a')"}, end: "SELECT RELEASE_LOCK('b')"},
	{name: "RELEASE_ALL_LOCKS", hold: []string{"SELECT GET_LOCK('a', 10), GET_LOCK('b', 10)"},
		during: []string{"A2"}, end: "DO RELEASE_ALL_LOCKS()"},
	{name: "temporary table", hold: []string{"CREATE TEMPORARY TABLE tmp (a INT)"},
		during: []string{"INSERT INTO tmp VALUES (1)", "CREATE TEMPORARY TABLE IF NOT EXISTS app.tmp (a INT)"},
		end:    "DROP TEMPORARY TABLE IF EXISTS tmp"},
	{name: "temporary tables dropped by DROP TABLE", hold: []string{"CREATE TEMPORARY TABLE t1 (a INT)", "CREATE TEMPORARY TABLE t2 (a INT)"},
		during: []string{"DROP TEMPORARY TABLE t1"}, end: "DROP TABLE `t2`"},
	{name: "user variable", hold: []string{"SET @x = 1"}, during: []string{"SELECT @x", "A2"}},
	{name: "LAST_INSERT_ID", hold: []string{"INSERT INTO t (v) VALUES (1)"}, end: "SELECT LAST_INSERT_ID()"},
}

// When the pool moves (another connection's failover here; SwitchTo alike), a
// connection whose session holds a named lock, a temporary table or user variables
// stays on it, every call running there, until a call finds it holding none: after
// RELEASE_LOCK (RELEASE_ALL_LOCKS) of every lock, the DROP of every temporary table, or
// once database/sql has handed the connection to its next user (ResetSession), who has
// no claim on user variables. A statement that reads LAST_INSERT_ID() right after the
// move runs on the session that has it. The statement after that joins the pool's host,
// without an error.
func TestHeldStateStaysWhenThePoolMoves(t *testing.T) {
	for _, tc := range heldMoves {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			onH1 := append(append(append([]string{}, tc.hold...), tc.during...), tc.end)
			if tc.end == "" {
				onH1 = onH1[:len(onH1)-1]
			}
			e.script(0, execs(onH1...), fails("B1", mysql.ErrInvalidConn))
			e.script(1, nil, ok("A3"))
			a, b := e.open(Config{DBName: "app"}), e.open(Config{DBName: "app"})
			mustExecAll(t, a, tc.hold...)
			movePool(t, e, b)
			for _, q := range tc.during {
				mustExec(t, a, q)
				wantHost(t, a, h1)
			}
			if tc.end != "" {
				mustExec(t, a, tc.end)
				wantHost(t, a, h1)
			} else if err := a.ResetSession(context.Background()); err != nil { // the next user
				t.Fatal(err)
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

// The fall-back alike: due (secondsBeforeRetryMaster), it waits while the session on
// the secondary holds a named lock, a temporary table or user variables, without even
// trying the primary; the first call that finds it holding none falls back.
func TestHeldStateWaitsForTheFallBack(t *testing.T) {
	for _, tc := range heldMoves {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, retryMaster(2, 0))
			onH2 := append(append(append([]string{}, tc.hold...), tc.during...), tc.end)
			if tc.end == "" {
				onH2 = onH2[:len(onH2)-1]
			}
			e.script(0, nil, ok("BACK"))
			e.script(1, execs(onH2...))
			c := e.open(Config{DBName: "app"})
			failOverToH2(t, e, c, true)
			mustExecAll(t, c, tc.hold...)
			e.clock.Advance(3 * time.Second)
			if !e.cl.FallBackDue() {
				t.Fatal("fall-back not due")
			}
			for _, q := range tc.during {
				mustExec(t, c, q)
				wantHost(t, c, h2)
			}
			if tc.end != "" {
				mustExec(t, c, tc.end)
				wantHost(t, c, h2)
			} else if err := c.ResetSession(context.Background()); err != nil {
				t.Fatal(err)
			}
			if e.dialed(0) != 1 {
				t.Fatalf("H1 dialed %d times while the session held its state, want 1 (before the failover)", e.dialed(0))
			}
			mustExec(t, c, "BACK")
			wantHost(t, c, h1)
			e.wantEvents(failover.EventFallBack, h1, 1)
			e.allMet()
		})
	}
}

// A prepared statement counts as its text: a prepared GET_LOCK that ran holds the
// session when the pool moves, until a prepared RELEASE_LOCK; a read of
// LAST_INSERT_ID() prepared then is prepared, and runs, on the session that has the
// value. The call after it joins the pool's host.
func TestPreparedHeldState(t *testing.T) {
	e := newEnv(t, 2)
	lastID := func(m sqlmock.Sqlmock) {
		m.ExpectPrepare("SELECT LAST_INSERT_ID()").WillBeClosed().ExpectExec().WillReturnResult(sqlmock.NewResult(0, 1))
	}
	e.script(0, all(prepared("SELECT GET_LOCK(?, 10)", 7, nil), ok("A2"), prepared("SELECT RELEASE_LOCK(?)", 7, nil), lastID),
		fails("B1", mysql.ErrInvalidConn))
	e.script(1, nil, ok("A3"))
	a, b := e.open(seqB), e.open(seqB)
	s := prepare(t, a, "SELECT GET_LOCK(?, 10)")
	if err := execStmt(s, 7); err != nil {
		t.Fatal(err)
	}
	movePool(t, e, b)
	mustExec(t, a, "A2")
	wantHost(t, a, h1)
	r := prepare(t, a, "SELECT RELEASE_LOCK(?)")
	if err := execStmt(r, 7); err != nil {
		t.Fatal(err)
	}
	wantHost(t, a, h1)
	l := prepare(t, a, "SELECT LAST_INSERT_ID()")
	if _, err := l.(driver.StmtExecContext).ExecContext(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	wantHost(t, a, h1)
	if err := errors.Join(s.Close(), r.Close(), l.Close()); err != nil {
		t.Fatal(err)
	}
	mustExec(t, a, "A3")
	wantHost(t, a, h2)
	e.allMet()
}

// A Tx that took such state and lost it with its session (the host died) fails with
// failover.ErrTxLost alone: running the transaction again takes the state again, so
// RunInTx may. State the session held before the Tx began is said as well.
func TestHeldStateLostWithATx(t *testing.T) {
	for _, before := range []bool{false, true} {
		t.Run(map[bool]string{false: "taken inside the Tx", true: "held before the Tx"}[before], func(t *testing.T) {
			e := newEnv(t, 2)
			h1Steps := all(begin(), ok("SELECT GET_LOCK('a', 10)"), fails("UPDATE t SET n = 1", mysql.ErrInvalidConn))
			if before {
				h1Steps = all(ok("CREATE TEMPORARY TABLE tmp (a INT)"), h1Steps)
			}
			e.script(0, h1Steps)
			e.script(1, all(ok(setReadOnly), ok("AFTER")))
			c := e.open(Config{DBName: "app", FailOverReadOnly: true})
			if before {
				mustExec(t, c, "CREATE TEMPORARY TABLE tmp (a INT)")
			}
			tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
			if err != nil {
				t.Fatal(err)
			}
			mustExec(t, c, "SELECT GET_LOCK('a', 10)")
			e.refuse(0)
			err = exec(c, "UPDATE t SET n = 1")
			if !errors.Is(err, failover.ErrTxLost) {
				t.Fatalf("statement that met the failure: %v, want ErrTxLost", err)
			}
			wantFailover(t, err, h1, h2, true)
			if before {
				wantStateLost(t, err, h1, failover.SessionStateError{NamedLocks: 1, TempTables: []string{"app.tmp"}})
			} else if errors.Is(err, failover.ErrSessionStateLost) {
				t.Errorf("error %v matches ErrSessionStateLost for state the lost Tx took itself", err)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			mustExec(t, c, "AFTER")
			wantHost(t, c, h2)
			e.allMet()
		})
	}
}

// A connection that database/sql hands to its next user (ResetSession) holds nothing
// for the driver: the user variables, temporary table and named lock the last user left
// do not keep it on its host when the pool moves later, and a session found dead in the
// pool tells no one, not even a call that reads LAST_INSERT_ID().
func TestResetSessionForgetsHeldState(t *testing.T) {
	ctx := context.Background()
	held := []string{"SET @x = 1", "CREATE TEMPORARY TABLE tmp (a INT)", "SELECT GET_LOCK('a', 1)"}
	e := newEnv(t, 2)
	e.script(0, execs(held...), fails("B1", mysql.ErrInvalidConn))
	e.script(1, nil, execs("SET @y = 2"), ok("SELECT LAST_INSERT_ID()"))
	db := e.db(Config{DBName: "app"}, 1)
	a := sqlConn(t, db)
	for _, q := range held {
		if _, err := a.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	_ = a.Close()
	a = sqlConn(t, db) // the next user, still on H1, where the pool is
	withProxy(t, a, func(c *Conn) { wantHost(t, c, h1) })
	movePool(t, e, e.open(Config{DBName: "app"}))
	if _, err := a.ExecContext(ctx, "SET @y = 2"); err != nil {
		t.Fatal(err)
	}
	withProxy(t, a, func(c *Conn) { wantHost(t, c, h2) })
	_ = a.Close()
	e.phys(1, 1).ResetErr.Store(driver.ErrBadConn) // its session dies idle in the pool
	a = sqlConn(t, db)
	defer a.Close()
	if _, err := a.ExecContext(ctx, "SELECT LAST_INSERT_ID()"); err != nil {
		t.Fatalf("first call of the next user after the session died in the pool: %v, want nil", err)
	}
	e.allMet()
}

// A temporary table keeps read intents on the primary session (a replica has not got
// it) only while the session holds one: after its DROP they go to the replicas again.
func TestDroppedTemporaryTableFreesReads(t *testing.T) {
	for _, drop := range []string{"DROP TEMPORARY TABLE tmp", "DROP TABLE IF EXISTS app.tmp"} {
		t.Run(drop, func(t *testing.T) {
			e := newEnv(t, 3, replicaReads)
			e.script(0, all(ok("CREATE TEMPORARY TABLE tmp (id INT)"), queryRows("SELECT id FROM tmp", 1), ok(drop)))
			e.script(2, replicaSession(queryRows("SELECT r", 3)))
			cfg := splitCfg
			cfg.DBName = "app"
			c := e.open(cfg)
			mustExec(t, c, "CREATE TEMPORARY TABLE tmp (id INT)")
			if got := readOne(t, c, read, "SELECT id FROM tmp"); got != 1 {
				t.Errorf("a read while the temporary table is held went to H%d, want the primary", got)
			}
			mustExec(t, c, drop)
			if got := readOne(t, c, read, "SELECT r"); got != 3 {
				t.Errorf("a read after %s went to H%d, want the replica H3", drop, got)
			}
			e.allMet()
		})
	}
}

// A read-only transaction (here after SetReadOnly(true)) stays on the primary session
// too while it holds a temporary table. Statements that name a user variable, take or
// release a named lock or read a value of the last statement run on the primary
// session whatever their intent: the state is the primary session's.
func TestHeldStateKeepsReadsOnThePrimary(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	e.script(0, all(ok("CREATE TEMPORARY TABLE tmp (id INT)"), ok(setReadOnly), begin(), queryRows("SELECT id FROM tmp", 1),
		commit(nil), ok(setReadWrite), ok("DROP TEMPORARY TABLE tmp"),
		queryRows("SELECT @x", 1), queryRows("SELECT GET_LOCK('a', 1)", 1), queryRows("SELECT RELEASE_LOCK('a')", 1),
		queryRows("SELECT LAST_INSERT_ID()", 1)))
	e.script(2, replicaSession(begin(), queryRows("SELECT r", 3), commit(nil)))
	c := e.open(splitCfg)
	ctx := context.Background()
	mustExec(t, c, "CREATE TEMPORARY TABLE tmp (id INT)")
	if err := c.SetReadOnly(ctx, true); err != nil {
		t.Fatal(err)
	}
	readTx := func(q string) int64 {
		tx, err := c.BeginTx(ctx, driver.TxOptions{ReadOnly: true})
		if err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		}()
		return readOne(t, c, ctx, q)
	}
	if got := readTx("SELECT id FROM tmp"); got != 1 {
		t.Errorf("a read-only transaction while the temporary table is held ran on H%d, want the primary", got)
	}
	if err := c.SetReadOnly(ctx, false); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "DROP TEMPORARY TABLE tmp")
	if got := readTx("SELECT r"); got != 3 {
		t.Errorf("a read-only transaction after DROP TEMPORARY TABLE ran on H%d, want the replica H3", got)
	}
	for _, q := range []string{"SELECT @x", "SELECT GET_LOCK('a', 1)", "SELECT RELEASE_LOCK('a')", "SELECT LAST_INSERT_ID()"} {
		if got := readOne(t, c, read, q); got != 1 {
			t.Errorf("%s with a read intent ran on H%d, want the primary", q, got)
		}
	}
	e.allMet()
}
