package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// WriteRefusals counts what says a write could not be served: the server's read-only
// refusals (1290, 1836, 1792), passed to the caller untouched, and a connection that
// found no host (after a failure, and for a new or joining connection); other data
// errors and a walk the caller's context ended before it tried anything are not counted.
func TestWriteRefusalsCounted(t *testing.T) {
	const ins = "INSERT INTO t VALUES(1)"
	e := newEnv(t, 3)
	readOnly := &mysql.MySQLError{Number: 1792, Message: "Cannot execute statement in a READ ONLY transaction."}
	optionPrevents := &mysql.MySQLError{Number: 1290, Message: "The MariaDB server is running with the --read-only option so it cannot execute this statement"}
	dup := &mysql.MySQLError{Number: 1062, Message: "Duplicate entry '1' for key 'PRIMARY'"}
	e.script(0, all(fails(ins, readOnly), fails(ins, optionPrevents), fails(ins, dup), fails(ins, &mysql.MySQLError{Number: 1836, Message: "Running in read-only mode"})))
	c := e.open(seqA)
	want := func(n int64, what string) {
		t.Helper()
		if got := e.cl.Stats().WriteRefusals; got != n {
			t.Fatalf("%s: WriteRefusals %d, want %d", what, got, n)
		}
	}
	want(0, "a new pool")
	for _, tc := range []struct {
		err   *mysql.MySQLError
		count int64
	}{{readOnly, 1}, {optionPrevents, 2}, {dup, 2}, {&mysql.MySQLError{Number: 1836}, 3}} {
		err := exec(c, ins)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != tc.err.Number {
			t.Fatalf("error %v, want the server's %d untouched", err, tc.err.Number)
		}
		want(tc.count, err.Error())
	}

	// No host: the connection's host fails and the walk finds none (1), the next
	// statement walks again (2), a new connection finds none (3).
	for i := 0; i < 3; i++ {
		e.net.Down(i)
	}
	if err := exec(c, ins); err == nil {
		t.Fatal("a write with every host down succeeded")
	}
	want(4, "a failover that found no host")
	var nh *failover.NoHostAvailableError
	if err := exec(c, ins); !errors.As(err, &nh) {
		t.Fatalf("next write: %v, want a *NoHostAvailableError", err)
	}
	want(5, "a statement whose connection found no host")
	if _, err := Open(context.Background(), e.cl, seqA); !errors.As(err, &nh) {
		t.Fatalf("Open: %v, want a *NoHostAvailableError", err)
	}
	want(6, "a new connection that found no host")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Open(ctx, e.cl, seqA); err == nil {
		t.Fatal("Open with an ended context succeeded")
	}
	want(6, "a walk the caller's context ended before it tried a host")
}

// CallerErrors counts what reached a caller, not the attempts: a write a demoted
// primary refused and the driver ran on the new writer counts as a write refusal and
// not as a caller's error; a statement provably not sent and run again on the new host
// counts nothing; a statement that failed with its host (a FailoverError), the read-only
// refusal a caller got, every statement of a lost transaction and its Commit count one
// each; a data error, a deadlock and the caller's own context count none.
func TestCallerErrorsCounted(t *testing.T) {
	const ins = "INSERT INTO t VALUES(1)"
	want := func(t *testing.T, e *env, callers, refusals int64, what string) {
		t.Helper()
		if s := e.cl.Stats(); s.CallerErrors != callers || s.WriteRefusals != refusals {
			t.Fatalf("%s: CallerErrors %d, WriteRefusals %d; want %d, %d", what, s.CallerErrors, s.WriteRefusals, callers, refusals)
		}
	}
	t.Run("a demoted primary's refusal the driver absorbed", func(t *testing.T) {
		e := newEnv(t, 3, target("read-write"))
		e.script(1, nil, ok(ins)) // its first session is the new pool's look at the writers
		c := e.open(writer)
		e.net.SetReadOnly(0, true)
		if err := exec(c, ins); err != nil {
			t.Fatalf("%s: %v, want nil (run on H2)", ins, err)
		}
		want(t, e, 0, 1, "a write refused by the demoted H1, run on H2")
	})
	t.Run("a prepared statement and its rows", func(t *testing.T) {
		const q, sel = "INSERT INTO t VALUES(?)", "SELECT id FROM t"
		e := newEnv(t, 2)
		e.script(0, all(prepared(q, 1, mysql.ErrInvalidConn)))
		e.script(1, all(ok(setReadOnly), query(sel, idRows(2, 1, mysql.ErrInvalidConn, nil))), ok(setReadOnly))
		c := e.open(seqA)
		e.refuse(0)
		s := prepare(t, c, q)
		defer s.Close()
		if err := execStmt(s, 1); err == nil {
			t.Fatal("the prepared statement's run succeeded")
		}
		want(t, e, 1, 0, "a prepared statement whose host failed")
		rows := mustQuery(t, c, sel)
		dest := make([]driver.Value, 1)
		_ = rows.Next(dest)
		if err := rows.Next(dest); err == nil {
			t.Fatal("the second row was read")
		}
		_ = rows.Close()
		want(t, e, 2, 0, "rows whose session failed")
	})
	t.Run("statements", func(t *testing.T) {
		e := newEnv(t, 3)
		dup := &mysql.MySQLError{Number: 1062, Message: "Duplicate entry '1' for key 'PRIMARY'"}
		deadlock := &mysql.MySQLError{Number: 1213, Message: "Deadlock found when trying to get lock"}
		optionPrevents := &mysql.MySQLError{Number: 1290, Message: "The MariaDB server is running with the --read-only option so it cannot execute this statement"}
		e.script(0, all(fails(ins, dup), fails(ins, deadlock), fails(ins, optionPrevents), fails(ins, driver.ErrBadConn)))
		e.script(1, all(ok(setReadOnly), ok(ins), begin(), ok(ins), fails(ins, mysql.ErrInvalidConn)),
			all(ok(setReadOnly), fails(ins, mysql.ErrInvalidConn)), ok(setReadOnly))
		c := e.open(seqA)
		for _, q := range []string{"a duplicate key", "a deadlock outside a transaction"} {
			if err := exec(c, ins); err == nil {
				t.Fatalf("%s: no error", q)
			}
			want(t, e, 0, 0, q)
		}
		if err := exec(c, ins); err == nil {
			t.Fatal("1290: no error")
		}
		want(t, e, 1, 1, "a read-only refusal the caller got")
		e.refuse(0)
		if err := exec(c, ins); err != nil {
			t.Fatalf("a statement not sent: %v, want nil (run on H2)", err)
		}
		want(t, e, 1, 1, "a statement not sent, run again on H2")
		tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, c, ins)
		if err := exec(c, ins); !errors.Is(err, failover.ErrTxLost) {
			t.Fatalf("a failure inside the transaction: %v, want ErrTxLost", err)
		}
		want(t, e, 2, 1, "the statement that lost the transaction")
		if err := exec(c, ins); !errors.Is(err, failover.ErrTxLost) {
			t.Fatalf("the next statement: %v, want ErrTxLost", err)
		}
		if err := tx.Commit(); !errors.Is(err, failover.ErrTxLost) {
			t.Fatalf("Commit: %v, want ErrTxLost", err)
		}
		want(t, e, 4, 1, "a later statement and the Commit of the lost transaction")
		var fe *failover.FailoverError
		if err := exec(c, ins); !errors.As(err, &fe) || errors.Is(err, failover.ErrTxLost) {
			t.Fatalf("a statement whose session failed: %v, want a FailoverError", err)
		}
		want(t, e, 5, 1, "a FailoverError outside a transaction")
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := c.ExecContext(ctx, ins, nil); err == nil {
			t.Fatal("a statement with an ended context succeeded")
		}
		want(t, e, 5, 1, "the caller's own context")
	})
}
