package conn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// Case 03 (mid-transaction-host-switch), invariant one-host-per-transaction, through database/sql: the statement
// that hits the failure reports it and loses the transaction; the next one fails without
// reaching any host; Commit fails with ErrTxLost (Rollback returns nil and sends
// nothing); the next autocommit statement runs on H2.
func TestMidTransactionFailureLosesTransaction(t *testing.T) {
	const ins1, ins2, ins3, ins4 = "INSERT INTO t VALUES(1)", "INSERT INTO t VALUES(2)", "INSERT INTO t VALUES(3)", "INSERT INTO t VALUES(4)"
	for _, end := range []string{"commit", "rollback"} {
		t.Run(end, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, 2)
			e.script(0, all(begin(), ok(ins1)))
			e.script(1, all(ok(ins4), trap(ins3)))
			db := e.db(seqB, 1)

			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, ins1); err != nil {
				t.Fatal(err)
			}
			e.net.Down(0)

			_, err2 := tx.ExecContext(ctx, ins2)
			if !errors.Is(err2, failover.ErrTxLost) {
				t.Errorf("insert 2: %v, want ErrTxLost", err2)
			}
			wantFailover(t, err2, h1, h2, true)

			_, err3 := tx.ExecContext(ctx, ins3)
			if !errors.Is(err3, failover.ErrTxLost) {
				t.Errorf("insert 3: %v, want ErrTxLost", err3)
			}
			notBadConn(t, err3)

			if end == "commit" {
				err := tx.Commit()
				if err == nil || !errors.Is(err, failover.ErrTxLost) || errors.Is(err, failover.ErrCommitOutcomeUnknown) || errors.Is(err, sql.ErrTxDone) {
					t.Errorf("Commit: %v, want ErrTxLost (not nil, not ErrCommitOutcomeUnknown, not sql.ErrTxDone)", err)
				}
				notBadConn(t, err)
			} else if err := tx.Rollback(); err != nil {
				t.Errorf("Rollback of a lost transaction: %v, want nil", err)
			}

			e.net.Up(0)
			if _, err := db.ExecContext(ctx, ins4); err != nil {
				t.Fatalf("insert 4: %v", err)
			}
			e.untouched(1, 0, ins3)
			if err := e.phys(0, 0).Mock.ExpectationsWereMet(); err != nil {
				t.Error(err)
			}
			if e.dialed(0) != 1 || e.dialed(1) != 1 {
				t.Errorf("dialed H1 %d, H2 %d times; want 1, 1", e.dialed(0), e.dialed(1))
			}
		})
	}
}

// Invariant one-host-per-transaction at the driver level: every statement kind of a lost transaction fails with
// ErrTxLost without reaching a host.
func TestLostTransactionRefusesEveryStatement(t *testing.T) {
	const ins = "INSERT INTO t VALUES(1)"
	e := newEnv(t, 2)
	e.script(0, all(begin(), fails(ins, mysql.ErrInvalidConn)))
	c := e.open(seqB) // H2 expects nothing at all
	tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.refuse(0)
	lost := exec(c, ins)
	wantFailover(t, lost, h1, h2, true)
	if !errors.Is(lost, failover.ErrTxLost) {
		t.Errorf("the failing statement's error %v does not match ErrTxLost", lost)
	}
	var later error // what every later call of the transaction returns
	ctx := context.Background()
	for name, call := range map[string]func() error{
		"exec":    func() error { return exec(c, ins) },
		"query":   func() error { _, err := c.QueryContext(ctx, "SELECT 1", nil); return err },
		"prepare": func() error { _, err := c.PrepareContext(ctx, "SELECT 1"); return err },
		"begin":   func() error { _, err := c.BeginTx(ctx, driver.TxOptions{}); return err },
		"ping":    func() error { return c.Ping(ctx) },
	} {
		err := call()
		if name == "begin" {
			if err == nil {
				t.Errorf("%s inside the open transaction succeeded", name)
			}
			continue
		}
		if !errors.Is(err, failover.ErrTxLost) || errors.As(err, new(*failover.FailoverError)) {
			t.Errorf("%s: %v, want ErrTxLost and no FailoverError (it did not run)", name, err)
		}
		if later == nil {
			later = err
		} else if err != later {
			t.Errorf("%s: %v, want the transaction's stored error %v", name, err, later)
		}
	}
	if err := tx.Commit(); err != later {
		t.Errorf("Commit: %v, want %v", err, later)
	}
	e.allMet()
}

// Case 07 (commit-outcome-unknown), invariant one-host-per-transaction: a COMMIT that may have reached the server
// is reported as ErrCommitOutcomeUnknown (with the FailoverError: the connection has
// moved), one provably never sent as ErrTxLost, and a data error passes through. Nothing
// of the transaction is replayed on H2.
func TestCommitFailure(t *testing.T) {
	const ins, next = "INSERT INTO t VALUES(10)", "SELECT 1"
	deadlock := &mysql.MySQLError{Number: 1213, SQLState: [5]byte{'4', '0', '0', '0', '1'}, Message: "Deadlock found"}
	for _, tc := range []struct {
		name    string
		err     error // what COMMIT returns
		down    bool  // H1 goes down before COMMIT instead
		unknown bool  // ErrCommitOutcomeUnknown, else ErrTxLost
		data    bool  // the error passes through, the connection stays on H1
	}{
		{name: "invalid connection after COMMIT was sent", err: mysql.ErrInvalidConn, unknown: true},
		{name: "host down", down: true, unknown: true},
		{name: "COMMIT never sent", err: driver.ErrBadConn},
		{name: "deadlock", err: deadlock, data: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			first := all(begin(), ok(ins))
			if !tc.down {
				first = all(first, commit(tc.err))
			}
			if tc.data {
				first = all(first, ok(next))
			}
			e.script(0, first)
			e.script(1, all(ok(setReadOnly), ok(next)))
			c := e.open(seqA)
			tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
			if err != nil {
				t.Fatal(err)
			}
			mustExec(t, c, ins)
			if tc.down {
				e.net.Down(0)
			}
			if tc.err == mysql.ErrInvalidConn || tc.err == driver.ErrBadConn {
				e.refuse(0) // the connection failed and H1 is gone too
			}

			err = tx.Commit()
			switch {
			case tc.data:
				if err != error(deadlock) {
					t.Fatalf("Commit: %v, want the deadlock error itself", err)
				}
				mustExec(t, c, next)
				wantHost(t, c, h1)
				e.noHostEvents()
				e.allMet()
				return
			case tc.unknown:
				if !errors.Is(err, failover.ErrCommitOutcomeUnknown) || errors.Is(err, failover.ErrTxLost) {
					t.Errorf("Commit: %v, want ErrCommitOutcomeUnknown and not ErrTxLost", err)
				}
				wantFailover(t, err, h1, h2, true)
			default:
				if !errors.Is(err, failover.ErrTxLost) || errors.Is(err, failover.ErrCommitOutcomeUnknown) {
					t.Errorf("Commit: %v, want ErrTxLost and not ErrCommitOutcomeUnknown", err)
				}
				wantFailover(t, err, h1, h2, false)
			}
			if !tc.down && tc.err != driver.ErrBadConn && !errors.Is(err, tc.err) {
				t.Errorf("Commit error does not wrap the cause %v: %v", tc.err, err)
			}
			wantHost(t, c, h2)
			mustExec(t, c, next) // autocommit, on H2; no BEGIN, INSERT or COMMIT replayed there
			e.allMet()
		})
	}
}

// Invariant one-host-per-transaction and case 12 (iii): no fall-back happens while a transaction is open, even
// when it is due; the first statement after Commit falls back.
func TestNoFallBackInsideTransaction(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, fails("Q0", mysql.ErrInvalidConn), ok("AFTER"))
	e.script(1, all(begin(), ok("T1"), ok("T2"), commit(nil)))
	c := e.open(seqB)
	e.refuse(0)
	wantFailover(t, exec(c, "Q0"), h1, h2, true)
	e.net.Up(0)

	tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(31 * time.Second)
	if !e.cl.FallBackDue() {
		t.Fatal("fall-back not due after 31 s")
	}
	mustExec(t, c, "T1")
	mustExec(t, c, "T2")
	wantHost(t, c, h2)
	// The first connection, and the refused check after Q0 failed; none inside the
	// transaction.
	if e.dialed(0) != 1 || e.ev.count(failover.EventConnect, h1) != 2 {
		t.Errorf("H1 dialed %d times (%d connect events) inside the transaction, want only the first and the check",
			e.dialed(0), e.ev.count(failover.EventConnect, h1))
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	e.wantEvents(failover.EventFallBack, "", 0)

	mustExec(t, c, "AFTER")
	wantHost(t, c, h1)
	e.wantEvents(failover.EventFallBack, h1, 1)
	e.closedExcept(e.phys(0, 1))
	e.allMet()
}

// Invariant one-host-per-transaction: when another connection moves the pool, a connection inside a transaction
// stays on its host until the transaction ends, then joins the pool.
func TestNoSwitchInsideTransactionWhenThePoolMoves(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, all(begin(), ok("A1"), ok("A2"), commit(nil)), fails("B1", mysql.ErrInvalidConn))
	e.script(1, nil, ok("A3"))
	a, b := e.open(seqB), e.open(seqB)

	tx, err := a.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, a, "A1")
	e.refuse(0) // new connections to H1 are refused; A's open one still works
	wantFailover(t, exec(b, "B1"), h1, h2, true)
	if e.cl.Active() != 1 {
		t.Fatalf("Active() = %d after B's failover, want 1", e.cl.Active())
	}
	mustExec(t, a, "A2")
	wantHost(t, a, h1)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	mustExec(t, a, "A3")
	wantHost(t, a, h2)
	if n := e.phys(0, 0).Closes(); n != 1 {
		t.Errorf("A's H1 connection closed %d times, want 1", n)
	}
	e.allMet()
}
