package conn

import (
	"context"
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
