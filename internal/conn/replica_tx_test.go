package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// A read-only transaction on a replica is judged by its own session only. Its
// connection's idle primary session dies meanwhile (a KILL, wait_timeout) and sits past
// the idle check: Ping during the transaction pings the transaction's replica session and
// returns nil, SetReadOnly(true) returns nil, the transaction's next statement runs on
// the replica and it commits; its session then goes back to the pool for the next
// connection's reads. The dead primary session is closed, and the connection's next
// statement without intent opens a new one.
func TestReplicaTxJudgedByItsOwnSession(t *testing.T) {
	e, r, keyed := poolEnv(t)
	e.script(0, ok("DO 1"), nil, queryRows("SELECT p", 1)) // c's, b's, c's next
	e.script(r, replicaSession(begin(), queryRows("SELECT a", 1), queryRows("SELECT b", 2), commit(nil), queryRows("SELECT c", 3)))
	c := e.open(splitCfg)
	mustExec(t, c, "DO 1")
	tx, err := c.BeginTx(keyed, driver.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := readOne(t, c, keyed, "SELECT a"); got != 1 {
		t.Fatalf("the transaction's first read: %d", got)
	}
	e.phys(0, 0).ResetErr.Store(driver.ErrBadConn) // the idle primary session is dead
	e.clock.Advance(2 * cluster.DefaultIdleCheck)
	if err := c.Ping(fake.Context(t)); err != nil {
		t.Errorf("Ping during the replica transaction, the primary session dead: %v, want nil", err)
	}
	if err := c.SetReadOnly(fake.Context(t), true); err != nil {
		t.Errorf("SetReadOnly(true) during the replica transaction: %v, want nil", err)
	}
	if got := readOne(t, c, context.Background(), "SELECT b"); got != 2 {
		t.Errorf("the transaction's read after Ping: %d, want 2 from its replica session", got)
	}
	if err := tx.Commit(); err != nil {
		t.Errorf("Commit: %v", err)
	}
	if n := e.idle(r); n != 1 {
		t.Errorf("%d idle sessions on H%d after the commit, want 1 (the transaction's, given back)", n, r+1)
	}
	b := e.open(splitCfg)
	if got := readOne(t, b, keyed, "SELECT c"); got != 3 {
		t.Errorf("another connection's read: %d, want 3 on the transaction's former session", got)
	}
	if err := c.SetReadOnly(fake.Context(t), false); err != nil {
		t.Fatal(err)
	}
	if got := readOne(t, c, context.Background(), "SELECT p"); got != 1 {
		t.Errorf("a read without intent: %d, want H1", got)
	}
	if e.dialed(0) != 3 || e.phys(0, 0).Closes() != 1 {
		t.Errorf("H1: %d sessions, the dead one closed %d times; want 3 (c's two, b's), 1", e.dialed(0), e.phys(0, 0).Closes())
	}
	e.allMet()
}

// A lost read-only transaction whose replica session lives on (lost by something other
// than that session's failure) never leaves a transaction open in a shared session:
// Rollback and Commit send ROLLBACK there (Rollback returns nil, Commit the loss), and the
// session goes back to the pool only when the ROLLBACK succeeded; when it failed, the
// session is closed.
func TestLostReplicaTxRolledBackBeforeSharing(t *testing.T) {
	for _, tc := range []struct {
		name     string
		commit   bool
		rollback error // the ROLLBACK's error
		idle     int   // sessions idle on the replica afterwards
	}{
		{"rollback", false, nil, 1},
		{"commit", true, nil, 1},
		{"rollback that fails", false, &mysql.MySQLError{Number: 1105, Message: "unknown error"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, r, keyed := poolEnv(t)
			e.script(r, replicaSession(begin(), queryRows("SELECT a", 1),
				func(m sqlmock.Sqlmock) { m.ExpectRollback().WillReturnError(tc.rollback) }))
			c := e.open(splitCfg)
			tx, err := c.BeginTx(keyed, driver.TxOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			readOne(t, c, keyed, "SELECT a")
			c.tx.lost = lost("lost elsewhere") // as a check of another session would have
			if tc.commit {
				if err := tx.Commit(); !errors.Is(err, failover.ErrTxLost) {
					t.Errorf("Commit of the lost transaction: %v, want ErrTxLost", err)
				}
			} else if err := tx.Rollback(); err != nil {
				t.Errorf("Rollback of the lost transaction: %v, want nil", err)
			}
			if n, closes := e.idle(r), e.phys(r, 0).Closes(); n != tc.idle || closes != 1-tc.idle {
				t.Errorf("after the lost transaction: %d idle sessions, its session closed %d times; want %d, %d", n, closes, tc.idle, 1-tc.idle)
			}
			e.allMet()
		})
	}
}

// A read-only transaction's session that one of its statements changed (USE, SET, a
// COMMIT or BEGIN run as a statement) is closed when the transaction ends, never given
// to another connection; one whose COMMIT failed is closed too (its state is not known).
// A transaction of plain reads gives its session back.
func TestReplicaTxSessionSharedOnlyClean(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stmt   step
		q      string
		commit error
		shared bool
	}{
		{"plain reads", queryRows("SELECT x", 1), "SELECT x", nil, true},
		{"USE", ok("USE other"), "USE other", nil, false},
		{"a user variable set", ok("SET @x = 1"), "SET @x = 1", nil, false},
		{"COMMIT as a statement", ok("COMMIT"), "COMMIT", nil, false},
		{"COMMIT failed", queryRows("SELECT x", 1), "SELECT x", &mysql.MySQLError{Number: 1180, Message: "Got error during COMMIT"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, r, keyed := poolEnv(t)
			e.script(r, replicaSession(begin(), tc.stmt, commit(tc.commit)))
			c := e.open(splitCfg)
			tx, err := c.BeginTx(keyed, driver.TxOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			if tc.q[0] == 'S' && tc.q[1] == 'E' && tc.q[2] == 'L' {
				readOne(t, c, keyed, tc.q)
			} else {
				mustExec(t, c, tc.q)
			}
			err = tx.Commit()
			if (err != nil) != (tc.commit != nil) {
				t.Errorf("Commit: %v", err)
			}
			want := 0
			if tc.shared {
				want = 1
			}
			if n, closes := e.idle(r), e.phys(r, 0).Closes(); n != want || closes != 1-want {
				t.Errorf("after the transaction: %d idle sessions on H%d, its session closed %d times; want %d, %d", n, r+1, closes, want, 1-want)
			}
			e.allMet()
		})
	}
}

// A read-intent statement that uses a user variable runs on the primary session: on a
// shared replica session it would leave the variable there for another connection (or
// read one the primary session set). A system variable (@@), or an '@' in a string, does
// not count. A prepared one keeps to the primary too; inside a read-only transaction on a
// replica it runs there, and the transaction's session is closed at its end, not shared.
func TestSessionBoundReadsNeverShared(t *testing.T) {
	e, r, keyed := poolEnv(t)
	bound := []string{"SELECT @a := 1", "SELECT id FROM t WHERE id = @last", "SELECT 1 INTO @x", "SELECT @`a b`"}
	var prim []step
	for _, q := range bound {
		prim = append(prim, queryRows(q, 1))
	}
	prim = append(prim, preparedQuery("SELECT @a + ?", sqlmock.NewRows([]string{"id"}).AddRow(int64(1))))
	e.script(0, all(prim...))
	e.script(r, replicaSession(queryRows("SELECT @@port", 9), queryRows("SELECT 'x@y' FROM t", 9),
		begin(), queryRows("SELECT @a := 2", 9), commit(nil)))
	c := e.open(splitCfg)
	for _, q := range bound {
		if got := readOne(t, c, keyed, q); got != 1 {
			t.Errorf("%s with read intent ran on H%d, want the primary", q, got)
		}
	}
	for _, q := range []string{"SELECT @@port", "SELECT 'x@y' FROM t"} {
		if got := readOne(t, c, keyed, q); got != 9 {
			t.Errorf("%s with read intent ran on H%d, want the replica", q, got)
		}
	}
	s, err := c.PrepareContext(keyed, "SELECT @a + ?")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.(driver.StmtQueryContext).QueryContext(keyed, []driver.NamedValue{{Ordinal: 1, Value: int64(1)}})
	if err != nil {
		t.Fatal(err)
	}
	_ = rows.Close()
	_ = s.Close()
	tx, err := c.BeginTx(keyed, driver.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := readOne(t, c, keyed, "SELECT @a := 2"); got != 9 {
		t.Errorf("a user variable set in the read-only transaction ran on H%d, want its replica", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n, closes := e.idle(r), e.phys(r, 0).Closes(); n != 0 || closes != 1 {
		t.Errorf("after the transaction that set a user variable: %d idle sessions, its session closed %d times; want 0, 1", n, closes)
	}
	e.allMet()
}

// A statement of a lost read-only transaction on a replica counts once in CallerErrors,
// a prepared one as a plain one: every error that leaves a call's loop is counted (saw).
func TestLostReplicaTxStatementsCounted(t *testing.T) {
	const q = "SELECT a"
	e, r, keyed := poolEnv(t)
	e.script(r, replicaSession(begin(), func(m sqlmock.Sqlmock) { m.ExpectPrepare(q).WillBeClosed(); m.ExpectRollback() }))
	c := e.open(splitCfg)
	tx, err := c.BeginTx(keyed, driver.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.PrepareContext(keyed, q)
	if err != nil {
		t.Fatal(err)
	}
	c.tx.lost = lost("lost elsewhere") // as a check of another session would have
	if _, err := c.QueryContext(keyed, q, nil); !errors.Is(err, failover.ErrTxLost) {
		t.Fatalf("a statement of the lost transaction: %v, want ErrTxLost", err)
	}
	if n := e.cl.Stats().CallerErrors; n != 1 {
		t.Errorf("CallerErrors %d after a statement of the lost transaction, want 1", n)
	}
	if _, err := s.(driver.StmtQueryContext).QueryContext(keyed, nil); !errors.Is(err, failover.ErrTxLost) {
		t.Fatalf("a prepared statement of the lost transaction: %v, want ErrTxLost", err)
	}
	if n := e.cl.Stats().CallerErrors; n != 2 {
		t.Errorf("CallerErrors %d after a prepared statement of the lost transaction, want 2", n)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	e.allMet()
}

// A read-only transaction that no replica can take (both refuse new sessions) begins on
// the primary session, with readFromSourceWhenNoReplicas: beginReplica's loop found
// none, which is not an error.
func TestReadOnlyTxOnPrimaryWhenNoReplica(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	e.script(0, all(begin(), queryRows("SELECT a", 1), commit(nil)))
	c := e.open(splitCfg)
	e.refuse(1)
	e.refuse(2)
	tx, err := c.BeginTx(read, driver.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatalf("BeginTx(ReadOnly) with no replica: %v, want it on the primary", err)
	}
	if c.tx == nil || c.tx.rs != nil {
		t.Fatal("the transaction is not on the primary session")
	}
	if got := readOne(t, c, read, "SELECT a"); got != 1 {
		t.Errorf("the transaction's read ran on H%d, want H1", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	e.allMet()
}
