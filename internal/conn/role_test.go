package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// writer is the conn.Config the driver builds for targetSessionAttrs read-write or
// primary: write intent, and failOverReadOnly off (a host that passed the role check is a
// writer wherever it is in the list).
var writer = Config{WriteIntent: true}

// target sets the cluster's targetSessionAttrs.
func target(t string) func(*dsn.Config) {
	return func(c *dsn.Config) { c.TargetSessionAttrs = t }
}

// eventsOf returns the recorded events of kind, in order.
func eventsOf(e *env, kind failover.EventKind) []failover.Event {
	e.ev.mu.Lock()
	defer e.ev.mu.Unlock()
	var out []failover.Event
	for _, ev := range e.ev.evs {
		if ev.Kind == kind {
			out = append(out, ev)
		}
	}
	return out
}

// wantRoleError checks that err wraps a *cluster.RoleError for role and wanted whose
// cause is a *mysql.MySQLError with the given number.
func wantRoleError(t *testing.T, err error, role failover.Role, wanted string, number uint16) {
	t.Helper()
	var re *cluster.RoleError
	if !errors.As(err, &re) {
		t.Fatalf("error %v (%T) does not wrap a *cluster.RoleError", err, err)
	}
	if re.Role != role || re.Wanted != wanted {
		t.Errorf("RoleError{Role: %v, Wanted: %q}, want {%v, %q}", re.Role, re.Wanted, role, wanted)
	}
	var me *mysql.MySQLError
	if !errors.As(re.Cause, &me) || me.Number != number {
		t.Errorf("RoleError.Cause = %v (%T), want a *mysql.MySQLError %d", re.Cause, re.Cause, number)
	}
	if !errors.As(err, &me) || me.Number != number {
		t.Errorf("errors.As(err, *mysql.MySQLError) does not reach the %d rejection: %v", number, err)
	}
}

func wantRoleChecks(t *testing.T, e *env, host, n int) {
	t.Helper()
	if got := e.net.RoleChecks(host); got != n {
		t.Errorf("H%d answered %d role queries, want %d", host+1, got, n)
	}
}

// look is the number of sessions a new pool with a write target opens to each other host
// at its first connection, to see which hosts are writable (one writer): the fake's
// hosts all are, H1 the one the others replicate from, so the pool stays on H1 and its
// own sessions to H2 and H3 come after that one.
const look = 1

// argHook is a sqlmock argument matcher that runs f when the statement reaches the
// server: it changes the fake network between the server's answer and the next call.
type argHook func()

func (f argHook) Match(driver.Value) bool { f(); return true }

var er1836 = &mysql.MySQLError{Number: 1836, SQLState: [5]byte{'H', 'Y', '0', '0', '0'},
	Message: "Running in read-only mode"}

// A primary demoted while a connection sits on it (read_only turned ON by an
// orchestrator): a write outside a transaction is rejected as read-only, the connection
// reads the host's role, finds a standby, reports the host failed with a
// *cluster.RoleError, moves to the writable H2, and runs the rejected write there,
// once: the caller sees success.
func TestDemotedPrimaryMovesAndRerunsWrite(t *testing.T) {
	const ins = "INSERT INTO t VALUES(1)"
	const ddl = "CREATE TABLE t2 (id INT)"
	for _, tc := range []struct {
		name   string
		target string
		q      string
		h1     step // H1's script (the fake itself rejects INSERTs with 1290)
		number uint16
	}{
		{"1290 read-write", attrs.ReadWrite, ins, nil, 1290},
		{"1290 primary", attrs.Primary, ins, nil, 1290},
		{"1836 read-write", attrs.ReadWrite, ddl, fails(ddl, er1836), 1836},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 3, target(tc.target))
			e.script(0, tc.h1)
			e.script(1, nil, ok(tc.q)) // exactly once: a second run would get sqlmock's error
			c := e.open(writer)
			wantRoleChecks(t, e, 0, 1) // the check after connecting
			e.net.SetReadOnly(0, true)

			if err := exec(c, tc.q); err != nil {
				t.Fatalf("%s: %v, want nil (re-run on H2)\nevents:\n%s", tc.q, err, e.ev)
			}
			wantHost(t, c, h2)
			if a := e.cl.Active(); a != 1 {
				t.Errorf("Active() = %d, want 1", a)
			}
			wantRoleChecks(t, e, 0, 2) // connect + the re-check after the rejection
			wantRoleChecks(t, e, 1, look+1)
			wantRoleChecks(t, e, 2, look)

			failed := eventsOf(e, failover.EventHostFailed)
			if len(failed) != 1 || failed[0].Host != h1 {
				t.Fatalf("host-failed events %v, want one for %s\nevents:\n%s", failed, h1, e.ev)
			}
			wantRoleError(t, failed[0].Err, failover.RoleStandby, tc.target, tc.number)
			sw := eventsOf(e, failover.EventSwitch)
			if len(sw) != 1 || sw[0].Host != h2 || sw[0].From != h1 {
				t.Fatalf("switch events %v, want one from %s to %s", sw, h1, h2)
			}
			e.wantEvents(failover.EventConnect, h1, 1) // the walk did not need to try H1 again
			if e.dialed(2) != look {
				t.Errorf("H3 dialed %d times, want %d (the look)", e.dialed(2), look)
			}
			e.closedExcept(e.phys(1, look))
			e.allMet()
		})
	}
}

// The demoted primary stays out after the move: when fall-back falls due the probe of
// H1 fails on its role (a connect event with a *cluster.RoleError, a fall-back-failed
// event), silently, and the statement runs on H2.
func TestFallBackToDemotedPrimaryFailsOnRole(t *testing.T) {
	const ins, next = "INSERT INTO t VALUES(1)", "INSERT INTO t VALUES(2)"
	e := newEnv(t, 2, target(attrs.ReadWrite))
	e.script(1, nil, all(ok(ins), ok(next)))
	c := e.open(writer)
	e.net.SetReadOnly(0, true)
	mustExec(t, c, ins)
	wantHost(t, c, h2)

	e.clock.Advance(31 * time.Second) // secondsBeforeRetryMaster is 30
	mustExec(t, c, next)
	wantHost(t, c, h2)
	wantRoleChecks(t, e, 0, 3) // connect, re-check, fall-back probe
	fb := eventsOf(e, failover.EventFallBackFailed)
	if len(fb) != 1 {
		t.Fatalf("%d fall-back-failed events, want 1\nevents:\n%s", len(fb), e.ev)
	}
	var re *cluster.RoleError
	if !errors.As(fb[0].Err, &re) || re.Role != failover.RoleStandby || re.Cause != nil {
		t.Errorf("fall-back-failed error %v, want a *cluster.RoleError (standby, no cause)", fb[0].Err)
	}
	e.wantEvents(failover.EventFallBack, "", 0)
	if e.cl.Active() != 1 {
		t.Errorf("Active() = %d, want 1", e.cl.Active())
	}
	e.closedExcept(e.phys(1, look))
	e.allMet()
}

// Inside a transaction a demoted primary loses the transaction: the rejected write
// returns ErrTxLost with a *failover.FailoverError (nothing ran: MaybeExecuted false)
// whose cause is the RoleError and the 1290; the connection has moved already; later
// statements of the transaction run nowhere, Rollback returns nil, and the next statement
// runs on H2.
func TestDemotedPrimaryInsideTransactionLosesIt(t *testing.T) {
	const ins, ins2, next = "INSERT INTO t VALUES(1)", "INSERT INTO t VALUES(2)", "INSERT INTO t VALUES(3)"
	e := newEnv(t, 2, target(attrs.ReadWrite))
	e.script(0, begin())
	e.script(1, nil, all(ok(next), trap(ins2)))
	c := e.open(writer)
	tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	e.net.SetReadOnly(0, true)

	err = exec(c, ins)
	if !errors.Is(err, failover.ErrTxLost) {
		t.Errorf("error %v does not match ErrTxLost", err)
	}
	fe := wantFailover(t, err, h1, h2, false)
	wantRoleError(t, fe.Err, failover.RoleStandby, attrs.ReadWrite, 1290)
	wantRoleError(t, err, failover.RoleStandby, attrs.ReadWrite, 1290)
	wantHost(t, c, h2)
	wantRoleChecks(t, e, 0, 2)

	err = exec(c, ins2)
	if !errors.Is(err, failover.ErrTxLost) {
		t.Errorf("next statement of the lost transaction: %v, want ErrTxLost", err)
	}
	notBadConn(t, err)
	if err := tx.Rollback(); err != nil {
		t.Errorf("Rollback: %v, want nil", err)
	}
	mustExec(t, c, next)
	wantHost(t, c, h2)
	e.untouched(1, look, ins2)
	if err := e.phys(0, 0).Mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
	e.wantEvents(failover.EventHostFailed, h1, 1)
	e.wantEvents(failover.EventSwitch, h2, 1)
	e.closedExcept(e.phys(1, look))
}

// 1290 is also --secure-file-priv (and other options): on a host whose role still
// qualifies the rejection is an ordinary data error, returned untouched after one role
// check; nothing moves.
func TestOptionRejectionOnWritableHostPassesThrough(t *testing.T) {
	const outfile, next = "SELECT 1 INTO OUTFILE '/x'", "INSERT INTO t VALUES(1)"
	e := newEnv(t, 2, target(attrs.ReadWrite))
	e.script(0, all(fails(outfile, fake.ReadOnlyError), ok(next)))
	c := e.open(writer)

	err := exec(c, outfile)
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1290 || err != error(fake.ReadOnlyError) {
		t.Fatalf("error %v (%T), want the driver's 1290 itself", err, err)
	}
	var fe *failover.FailoverError
	if errors.As(err, &fe) {
		t.Errorf("error is a FailoverError: %v", err)
	}
	wantRoleChecks(t, e, 0, 2)
	wantHost(t, c, h1)
	e.noHostEvents()
	mustExec(t, c, next)
	wantHost(t, c, h1)
	wantRoleChecks(t, e, 0, 2)
	if e.dialed(1) != look || e.phys(0, 0).Closes() != 0 {
		t.Errorf("H2 dialed %d times, H1 connection closed %d times; want %d (the look), 0", e.dialed(1), e.phys(0, 0).Closes(), look)
	}
	e.allMet()
}

// Without write intent (targetSessionAttrs any, the default) a read-only rejection is an
// ordinary data error: no role query for it, nothing moves.
func TestReadOnlyRejectionWithoutWriteIntentPassesThrough(t *testing.T) {
	const ins, next = "INSERT INTO t VALUES(1)", "DO 1"
	for _, tc := range []struct {
		name string
		opts []func(*dsn.Config)
	}{
		{"no target", nil},
		{"any", []func(*dsn.Config){target(attrs.Any)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, tc.opts...)
			e.script(0, ok(next))
			c := e.open(seqA)             // what the driver builds for any: failOverReadOnly, no write intent
			opened := e.net.RoleChecks(0) // cluster=auto: the first session read the cluster type
			e.net.SetReadOnly(0, true)

			err := exec(c, ins)
			if err != error(fake.ReadOnlyError) {
				t.Fatalf("error %v (%T), want the driver's 1290 itself", err, err)
			}
			wantRoleChecks(t, e, 0, opened)
			e.noHostEvents()
			wantHost(t, c, h1)
			mustExec(t, c, next)
			if e.dialed(1) != 0 {
				t.Errorf("H2 dialed %d times", e.dialed(1))
			}
			e.allMet()
		})
	}
}

// 1792 (a write in a READ ONLY transaction, SQLSTATE 25006) is the session's own doing,
// not the server's role: it passes through untouched, with no role check, even with
// write intent.
func TestReadOnlyTransactionErrorPassesThrough(t *testing.T) {
	const ins, next = "INSERT INTO t VALUES(1)", "DO 1"
	er1792 := &mysql.MySQLError{Number: 1792, SQLState: [5]byte{'2', '5', '0', '0', '6'},
		Message: "Cannot execute statement in a READ ONLY transaction."}
	e := newEnv(t, 2, target(attrs.ReadWrite))
	e.script(0, all(fails(ins, er1792), ok(next)))
	c := e.open(writer)

	if err := exec(c, ins); err != error(er1792) {
		t.Fatalf("error %v (%T), want the driver's 1792 itself", err, err)
	}
	wantRoleChecks(t, e, 0, 1) // the check after connecting only
	e.noHostEvents()
	wantHost(t, c, h1)
	mustExec(t, c, next)
	e.allMet()
}

// With multiStatements a rejected batch is not run again after the move (its earlier
// statements may have run): the caller gets the *failover.FailoverError with
// MaybeExecuted true, and H2 never sees the batch.
func TestDemotedWriteNotRerunWithMultiStatements(t *testing.T) {
	const batch, next = "INSERT INTO t VALUES(1); INSERT INTO t VALUES(2)", "INSERT INTO t VALUES(3)"
	e := newEnv(t, 2, target(attrs.ReadWrite))
	e.script(1, nil, all(ok(next), trap(batch)))
	c := e.open(Config{WriteIntent: true, MultiStatements: true})
	e.net.SetReadOnly(0, true)

	err := exec(c, batch)
	fe := wantFailover(t, err, h1, h2, true)
	if fe.Reconnect != nil {
		t.Errorf("Reconnect = %v, want nil", fe.Reconnect)
	}
	if errors.Is(err, failover.ErrTxLost) {
		t.Errorf("error matches ErrTxLost outside a transaction: %v", err)
	}
	wantRoleError(t, err, failover.RoleStandby, attrs.ReadWrite, 1290)
	wantHost(t, c, h2)
	mustExec(t, c, next)
	e.untouched(1, look, batch)
	e.wantEvents(failover.EventHostFailed, h1, 1)
	e.wantEvents(failover.EventSwitch, h2, 1)
}

// A COMMIT refused because the host became read-only did not commit: Commit's error
// matches ErrTxLost, never ErrCommitOutcomeUnknown, and the connection has moved to H2.
func TestCommitRejectedByDemotedHostLosesTransaction(t *testing.T) {
	const ins, next = "INSERT INTO t VALUES(1)", "INSERT INTO t VALUES(2)"
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"write intent", writer},
		// COMMIT is never part of a batch: the refused COMMIT ran nothing whatever
		// multiStatements says.
		{"write intent, multiStatements", Config{WriteIntent: true, MultiStatements: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2, target(attrs.ReadWrite))
			e.script(0, all(begin(), ok(ins), commit(fake.ReadOnlyError)))
			e.script(1, nil, ok(next))
			c := e.open(tc.cfg)
			tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
			if err != nil {
				t.Fatal(err)
			}
			mustExec(t, c, ins)
			e.net.SetReadOnly(0, true)

			err = tx.Commit()
			if !errors.Is(err, failover.ErrTxLost) || errors.Is(err, failover.ErrCommitOutcomeUnknown) {
				t.Errorf("Commit: %v, want ErrTxLost and not ErrCommitOutcomeUnknown", err)
			}
			wantFailover(t, err, h1, h2, false)
			wantRoleError(t, err, failover.RoleStandby, attrs.ReadWrite, 1290)
			wantRoleChecks(t, e, 0, 2)
			wantHost(t, c, h2)
			mustExec(t, c, next) // autocommit on H2; nothing of the transaction replayed
			e.allMet()
		})
	}
}

// The other connections of the pool follow the one that found the demotion: their next
// statement joins H2 at the safe point (the pool's host changed), without an error and
// without a role query of their own on H1.
func TestPooledConnectionsFollowDemotion(t *testing.T) {
	const ins1, ins2 = "INSERT INTO t VALUES(1)", "INSERT INTO t VALUES(2)"
	e := newEnv(t, 2, target(attrs.ReadWrite))
	e.script(1, nil, ok(ins1), ok(ins2))
	c1 := e.open(writer)
	c2 := e.open(writer)
	wantRoleChecks(t, e, 0, 2)
	e.net.SetReadOnly(0, true)

	mustExec(t, c1, ins1)
	wantHost(t, c1, h2)
	wantRoleChecks(t, e, 0, 3)

	mustExec(t, c2, ins2)
	wantHost(t, c2, h2)
	wantRoleChecks(t, e, 0, 3)      // c2 did not run into the rejection itself
	wantRoleChecks(t, e, 1, look+2) // the look, and each connection's attempt on H2
	e.wantEvents(failover.EventHostFailed, "", 1)
	e.wantEvents(failover.EventSwitch, "", 1)
	e.wantEvents(failover.EventConnect, h1, 2) // c2 joined H2 directly
	for seq := 0; seq < 2; seq++ {
		if n := e.phys(0, seq).Closes(); n != 1 {
			t.Errorf("H1 connection %d closed %d times, want 1", seq, n)
		}
		if n := e.phys(1, look+seq).Closes(); n != 0 {
			t.Errorf("H2 connection %d closed %d times, want 0", seq, n)
		}
	}
	e.allMet()
}

// The connection breaks right after the rejection, before the role query answers: the
// rejected statement did not run, so it is run again wherever the connection lands.
func TestRoleCheckBrokenAfterRejection(t *testing.T) {
	const ins = "INSERT INTO t VALUES(?)"
	args := []driver.NamedValue{{Ordinal: 1, Value: int64(1)}}
	okArgs := func(m sqlmock.Sqlmock) {
		m.ExpectExec(ins).WithArgs(int64(1)).WillReturnResult(sqlmock.NewResult(0, 1))
	}
	rejectThen := func(f func()) step {
		return func(m sqlmock.Sqlmock) {
			m.ExpectExec(ins).WithArgs(argHook(f)).WillReturnError(fake.ReadOnlyError)
		}
	}

	t.Run("invalid connection: moves to H2", func(t *testing.T) {
		e := newEnv(t, 3, target(attrs.ReadWrite))
		e.script(0, rejectThen(func() { e.net.Set(0, nil, mysql.ErrInvalidConn) }))
		e.script(1, nil, okArgs)
		c := e.open(writer)
		if _, err := c.ExecContext(context.Background(), ins, args); err != nil {
			t.Fatalf("exec: %v, want nil (re-run on H2)\nevents:\n%s", err, e.ev)
		}
		wantHost(t, c, h2)
		wantRoleChecks(t, e, 0, 1) // the re-check never got an answer
		failed := eventsOf(e, failover.EventHostFailed)
		if len(failed) != 1 || failed[0].Host != h1 || !errors.Is(failed[0].Err, mysql.ErrInvalidConn) {
			t.Fatalf("host-failed events %v, want one for %s with mysql.ErrInvalidConn", failed, h1)
		}
		var re *cluster.RoleError
		if errors.As(failed[0].Err, &re) {
			t.Errorf("host-failed error is a RoleError, but the role was never read: %v", failed[0].Err)
		}
		e.wantEvents(failover.EventSwitch, h2, 1)
		e.closedExcept(e.phys(1, look))
		e.allMet()
	})

	// With multiStatements the rejected statement may be a batch whose first statements
	// ran before the rejection: a move after the broken re-read must not run it again.
	t.Run("invalid connection, multiStatements: moves to H2, batch not re-run", func(t *testing.T) {
		const batch = "INSERT INTO t VALUES(?); INSERT INTO t VALUES(2)"
		e := newEnv(t, 3, target(attrs.ReadWrite))
		e.script(0, func(m sqlmock.Sqlmock) {
			m.ExpectExec(batch).WithArgs(argHook(func() { e.net.Set(0, nil, mysql.ErrInvalidConn) })).
				WillReturnError(fake.ReadOnlyError)
		})
		e.script(1, nil, func(m sqlmock.Sqlmock) {
			m.ExpectExec(batch).WithArgs(int64(1)).WillReturnResult(sqlmock.NewResult(0, 2))
		})
		c := e.open(Config{WriteIntent: true, MultiStatements: true})
		_, err := c.ExecContext(context.Background(), batch, args)
		wantFailover(t, err, h1, h2, true)
		wantHost(t, c, h2)
		e.untouched(1, look, batch)
	})

	t.Run("session ended, host still writable: same host again", func(t *testing.T) {
		e := newEnv(t, 3, target(attrs.ReadWrite))
		e.script(0, rejectThen(func() { e.phys(0, 0).Broken.Store(true) }), okArgs)
		c := e.open(writer)
		if _, err := c.ExecContext(context.Background(), ins, args); err != nil {
			t.Fatalf("exec: %v, want nil (re-run on a new H1 session)\nevents:\n%s", err, e.ev)
		}
		wantHost(t, c, h1)
		wantRoleChecks(t, e, 0, 2) // connect, and the reconnect's check
		e.noHostEvents()
		if e.dialed(0) != 2 || e.dialed(1) != look {
			t.Errorf("dialed H1 %d, H2 %d times; want 2, %d (the look)", e.dialed(0), e.dialed(1), look)
		}
		e.closedExcept(e.phys(0, 1))
		e.allMet()
	})

	t.Run("session ended, host demoted: reconnect refused on role, moves to H2", func(t *testing.T) {
		e := newEnv(t, 3, target(attrs.ReadWrite))
		e.script(0, rejectThen(func() {
			e.phys(0, 0).Broken.Store(true)
			e.net.SetReadOnly(0, true)
		}))
		e.script(1, nil, okArgs)
		c := e.open(writer)
		if _, err := c.ExecContext(context.Background(), ins, args); err != nil {
			t.Fatalf("exec: %v, want nil (re-run on H2)\nevents:\n%s", err, e.ev)
		}
		wantHost(t, c, h2)
		wantRoleChecks(t, e, 0, 2) // connect, and the refused reconnect
		e.wantEvents(failover.EventHostFailed, h1, 1)
		e.wantEvents(failover.EventSwitch, h2, 1)
		if e.dialed(0) != 2 || e.dialed(2) != look {
			t.Errorf("dialed H1 %d, H3 %d times; want 2, %d (the look)", e.dialed(0), e.dialed(2), look)
		}
		e.closedExcept(e.phys(1, look))
		e.allMet()
	})
}

// A prepared write rejected by a demoted primary is prepared again on H2 and runs there.
// (The fake rejects only plain INSERTs by itself; the prepared execution is scripted.)
func TestDemotedPrimaryPreparedWriteReprepares(t *testing.T) {
	const ins = "INSERT INTO t VALUES(?)"
	arg := []driver.NamedValue{{Ordinal: 1, Value: int64(7)}}
	e := newEnv(t, 2, target(attrs.ReadWrite))
	e.script(0, func(m sqlmock.Sqlmock) {
		m.ExpectPrepare(ins).ExpectExec().WithArgs(int64(7)).WillReturnError(fake.ReadOnlyError)
	})
	e.script(1, nil, func(m sqlmock.Sqlmock) {
		m.ExpectPrepare(ins).ExpectExec().WithArgs(int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
	})
	c := e.open(writer)
	s, err := c.PrepareContext(context.Background(), ins)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	e.net.SetReadOnly(0, true)
	if _, err := s.(driver.StmtExecContext).ExecContext(context.Background(), arg); err != nil {
		t.Fatalf("exec: %v, want nil (re-prepared and run on H2)\nevents:\n%s", err, e.ev)
	}
	wantHost(t, c, h2)
	wantRoleChecks(t, e, 0, 2)
	failed := eventsOf(e, failover.EventHostFailed)
	if len(failed) != 1 {
		t.Fatalf("%d host-failed events, want 1\nevents:\n%s", len(failed), e.ev)
	}
	wantRoleError(t, failed[0].Err, failover.RoleStandby, attrs.ReadWrite, 1290)
	e.allMet()
}

// TestNoTransactionStartsOnAHostKnownDemoted: while the walk that followed a demotion is
// still looking for the writer (the pool's active host has not changed yet), another
// connection on the demoted host does not begin its transaction there: it joins the
// walk first, so its transaction runs on the writer and is not lost.
func TestNoTransactionStartsOnAHostKnownDemoted(t *testing.T) {
	const ins = "INSERT INTO t VALUES(1)"
	e := newEnv(t, 2, target(attrs.ReadWrite))
	e.script(1, nil, all(begin(), ok(ins), commit(nil)))
	c := e.open(writer)
	// Another connection has just read H1's role after a rejection; its walk has not
	// landed anywhere yet.
	e.net.SetReadOnly(0, true)
	if e.cl.NoteRole(0, failover.RoleStandby) || e.cl.Active() != 0 {
		t.Fatal("setup: want H1 unfit and still active")
	}
	tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantHost(t, c, h2)
	mustExec(t, c, ins)
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
	if n := e.phys(0, 0).Closes(); n != 1 {
		t.Errorf("H1 connection closed %d times, want 1", n)
	}
	e.allMet()
}
