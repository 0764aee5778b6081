package conn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

const ins = "INSERT INTO t VALUES(?)"

// A prepared statement outlives its physical connection: after the connection moved to
// H2 the same Stmt prepares itself again there (closing the H1 statement) and runs there.
func TestPreparedStatementSurvivesSwitch(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, all(prepared(ins, 1, nil), fails("MOVE", mysql.ErrInvalidConn)))
	e.script(1, all(ok(setReadOnly), prepared(ins, 2, nil)))
	c := e.open(seqA)
	s := prepare(t, c, ins)
	if err := execStmt(s, 1); err != nil {
		t.Fatal(err)
	}
	e.refuse(0)
	wantFailover(t, exec(c, "MOVE"), h1, h2, true)
	if err := execStmt(s, 2); err != nil {
		t.Fatalf("the statement on H2: %v", err)
	}
	wantHost(t, c, h2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	e.allMet() // both physical statements closed
}

// Invariants classify-then-judge and no-silent-rerun for statements: a communication error in Stmt.Exec returns a
// *FailoverError; the statement is not run again, and its next use runs on H2.
func TestStmtCommunicationErrorReturnsFailoverErrorAndIsNotRerun(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, prepared(ins, 1, mysql.ErrInvalidConn))
	e.script(1, all(ok(setReadOnly), prepared(ins, 2, nil))) // a re-run with 1 would not match
	c := e.open(seqA)
	s := prepare(t, c, ins)
	e.refuse(0)

	err := execStmt(s, 1)
	wantFailover(t, err, h1, h2, true)
	if !errors.Is(err, mysql.ErrInvalidConn) {
		t.Errorf("error does not wrap mysql.ErrInvalidConn: %v", err)
	}
	wantHost(t, c, h2)
	e.wantEvents(failover.EventSwitch, "", 1)
	if err := execStmt(s, 2); err != nil {
		t.Fatalf("next use: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	e.allMet()
}

// Invariant no-silent-rerun for statements: driver.ErrBadConn (nothing sent) outside a transaction is
// repeated once on the new host, prepared again there; the caller sees success.
func TestStmtBadConnIsRetriedOnNewHost(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, prepared(ins, 1, driver.ErrBadConn))
	e.script(1, all(ok(setReadOnly), prepared(ins, 1, nil)))
	c := e.open(seqA)
	s := prepare(t, c, ins)
	e.refuse(0) // H1 is gone for new sessions too
	if err := execStmt(s, 1); err != nil {
		t.Fatal(err)
	}
	wantHost(t, c, h2)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	e.allMet()
}

// A prepared statement whose PREPARE fails on the new host, after bytes of it were sent,
// still ran nowhere (PREPARE has no effect): the call moves on and runs on the next host,
// prepared there, whatever the error (Stmt.Attempt: RetryAlways for its PREPARE).
func TestStmtPrepareFailureOnNewHostRunsOnTheNext(t *testing.T) {
	e := newEnv(t, 3)
	e.script(0, all(prepared(ins, 1, nil), fails("MOVE", mysql.ErrInvalidConn)))
	e.script(1, all(ok(setReadOnly), func(m sqlmock.Sqlmock) { m.ExpectPrepare(ins).WillReturnError(mysql.ErrInvalidConn) }))
	e.script(2, all(ok(setReadOnly), prepared(ins, 2, nil)))
	c := e.open(seqA)
	s := prepare(t, c, ins)
	if err := execStmt(s, 1); err != nil {
		t.Fatal(err)
	}
	e.refuse(0)
	wantFailover(t, exec(c, "MOVE"), h1, h2, true)
	e.refuse(1)
	if err := execStmt(s, 2); err != nil {
		t.Fatalf("the statement after its PREPARE failed on H2: %v", err)
	}
	wantHost(t, c, h3)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	e.allMet()
}

// Invariant one-host-per-transaction for statements: a statement of a lost transaction fails with ErrTxLost and
// is neither prepared nor run anywhere.
func TestStmtOfLostTransactionNeverRuns(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, all(
		func(m sqlmock.Sqlmock) { m.ExpectBegin(); m.ExpectPrepare(ins).WillBeClosed() },
		fails("X", mysql.ErrInvalidConn)))
	e.script(1, ok(setReadOnly)) // nothing else
	c := e.open(seqA)
	tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := prepare(t, c, ins)
	lost := exec(c, "X")
	if !errors.Is(lost, failover.ErrTxLost) {
		t.Fatalf("X: %v, want ErrTxLost", lost)
	}
	if err := execStmt(s, 1); !errors.Is(err, failover.ErrTxLost) || errors.As(err, new(*failover.FailoverError)) {
		t.Errorf("statement of the lost transaction: %v, want ErrTxLost without a FailoverError (it did not run)", err)
	}
	if err := tx.Commit(); !errors.Is(err, failover.ErrTxLost) {
		t.Errorf("Commit: %v, want ErrTxLost", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	e.allMet()
}

// CheckNamedValue keeps go-sql-driver's value converter: the connection forwards to the
// physical connection, and a Stmt whose physical statement has no converter uses the
// connection's, as database/sql would. sql.Out is a value only the physical converter
// (sqlmock's here) accepts; database/sql's default rejects it.
func TestCheckNamedValueKeepsTheDriverConverter(t *testing.T) {
	const call = "CALL p(?)"
	out := sql.Out{Dest: new(int64)}
	if _, err := driver.DefaultParameterConverter.ConvertValue(out); err == nil {
		t.Fatal("the default converter accepts sql.Out: the test proves nothing")
	}

	t.Run("driver level", func(t *testing.T) {
		e := newEnv(t, 1)
		e.script(0, func(m sqlmock.Sqlmock) { m.ExpectPrepare(call) })
		c := e.open(seqA)
		nv := driver.NamedValue{Ordinal: 1, Value: out}
		if err := c.CheckNamedValue(&nv); err != nil {
			t.Errorf("Conn.CheckNamedValue(sql.Out): %v", err)
		}
		s := prepare(t, c, call)
		if err := s.(driver.NamedValueChecker).CheckNamedValue(&nv); err != nil {
			t.Errorf("Stmt.CheckNamedValue(sql.Out): %v", err)
		}
		if nv.Value != any(out) {
			t.Errorf("value changed to %v", nv.Value)
		}
	})

	t.Run("database/sql", func(t *testing.T) {
		e := newEnv(t, 1)
		e.script(0, func(m sqlmock.Sqlmock) {
			m.ExpectExec(call).WillReturnResult(sqlmock.NewResult(0, 0))
			m.ExpectPrepare(call).ExpectExec().WillReturnResult(sqlmock.NewResult(0, 0))
		})
		db := e.db(seqA, 1)
		ctx := context.Background()
		sc, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer sc.Close()
		if _, err := sc.ExecContext(ctx, call, out); err != nil {
			t.Errorf("Exec with sql.Out: %v", err)
		}
		st, err := sc.PrepareContext(ctx, call)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		if _, err := st.ExecContext(ctx, out); err != nil {
			t.Errorf("Stmt.Exec with sql.Out: %v", err)
		}
		e.allMet()
	})
}
