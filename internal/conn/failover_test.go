package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// Invariants classify-then-judge and no-silent-rerun: a communication error closes the physical connection, moves to the
// next host and restores the session there, and only then returns a *FailoverError that
// wraps the cause and never matches driver.ErrBadConn. The statement is not run again.
func TestCommunicationErrorSwitchesThenReturnsFailoverError(t *testing.T) {
	const ins, next = "INSERT INTO t VALUES(1)", "INSERT INTO t VALUES(2)"
	for _, tc := range []struct {
		name  string
		cause error
	}{
		{"invalid connection", mysql.ErrInvalidConn},
		{"1053 server shutdown 08S01", &mysql.MySQLError{Number: 1053, SQLState: [5]byte{'0', '8', 'S', '0', '1'}, Message: "Server shutdown in progress"}},
		{"unexpected EOF", io.ErrUnexpectedEOF},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 3)
			e.script(0, fails(ins, tc.cause))
			e.script(1, all(ok(setReadOnly), ok(next), trap(ins)))
			c := e.open(seqA)
			e.refuse(0) // H1 is gone: the check of the host fails

			err := exec(c, ins)
			fe := wantFailover(t, err, h1, h2, true)
			if !errors.Is(err, tc.cause) {
				t.Errorf("errors.Is(err, cause) = false: %v", err)
			}
			if fe.Reconnect != nil {
				t.Errorf("Reconnect = %v, want nil", fe.Reconnect)
			}
			if n := e.phys(0, 0).Closes(); n != 1 {
				t.Errorf("H1 connection closed %d times, want 1", n)
			}
			if e.cl.Active() != 1 || !c.IsValid() {
				t.Errorf("Active() = %d, IsValid() = %v; want 1, true", e.cl.Active(), c.IsValid())
			}
			wantHost(t, c, h2)
			e.wantEvents(failover.EventHostFailed, h1, 1)
			e.wantEvents(failover.EventSwitch, h2, 1)

			mustExec(t, c, next) // the next statement runs on H2
			e.untouched(1, 0, ins)
			if err := e.phys(0, 0).Mock.ExpectationsWereMet(); err != nil {
				t.Error(err)
			}
			if e.dialed(0) != 1 || e.dialed(1) != 1 || e.dialed(2) != 0 {
				t.Errorf("dialed H1 %d, H2 %d, H3 %d times; want 1, 1, 0", e.dialed(0), e.dialed(1), e.dialed(2))
			}
		})
	}
}

// Invariant no-silent-rerun through database/sql: it does not run the statement again after a
// FailoverError (it would after driver.ErrBadConn), and a pinned *sql.Conn's next
// statement runs on the new host.
func TestDatabaseSQLDoesNotRerunAfterFailoverError(t *testing.T) {
	const ins, next = "INSERT INTO t VALUES(1)", "INSERT INTO t VALUES(2)"
	t.Run("pool", func(t *testing.T) {
		e := newEnv(t, 3)
		e.script(0, fails(ins, mysql.ErrInvalidConn))
		e.script(1, all(ok(setReadOnly), ok(next), trap(ins)))
		db := e.db(seqA, 1)
		if err := db.PingContext(context.Background()); err != nil {
			t.Fatal(err)
		}
		e.refuse(0)
		_, err := db.ExecContext(context.Background(), ins)
		wantFailover(t, err, h1, h2, true)
		if _, err := db.ExecContext(context.Background(), next); err != nil {
			t.Fatal(err)
		}
		e.untouched(1, 0, ins)
		if e.dialed(0) != 1 || e.dialed(1) != 1 || e.dialed(2) != 0 {
			t.Errorf("dialed H1 %d, H2 %d, H3 %d times; want 1, 1, 0", e.dialed(0), e.dialed(1), e.dialed(2))
		}
	})
	t.Run("pinned conn", func(t *testing.T) {
		e := newEnv(t, 3)
		e.script(0, fails(ins, mysql.ErrInvalidConn))
		e.script(1, all(ok(setReadOnly), ok(next), trap(ins)))
		db := e.db(seqA, 2)
		sc := sqlConn(t, db)
		defer sc.Close()
		e.refuse(0)
		_, err := sc.ExecContext(context.Background(), ins)
		wantFailover(t, err, h1, h2, true)
		if _, err := sc.ExecContext(context.Background(), next); err != nil {
			t.Fatal(err)
		}
		withProxy(t, sc, func(c *Conn) { wantHost(t, c, h2) })
		e.untouched(1, 0, ins)
		if e.dialed(1) != 1 {
			t.Errorf("dialed H2 %d times, want 1 (the pinned connection moved, no new one)", e.dialed(1))
		}
	})
}

// Invariant classify-then-judge: data errors come from a healthy connection: they pass through untouched
// (the same value), nothing switches, and the connection stays usable on H1.
func TestDataErrorsPassThroughUntouched(t *testing.T) {
	const bad, next = "INSERT INTO t VALUES(1)", "SELECT 1"
	for _, me := range []*mysql.MySQLError{
		{Number: 1062, SQLState: [5]byte{'2', '3', '0', '0', '0'}, Message: "Duplicate entry '1' for key 'PRIMARY'"},
		{Number: 1064, SQLState: [5]byte{'4', '2', '0', '0', '0'}, Message: "You have an error in your SQL syntax"},
		{Number: 1213, SQLState: [5]byte{'4', '0', '0', '0', '1'}, Message: "Deadlock found when trying to get lock"},
		{Number: 1045, SQLState: [5]byte{'2', '8', '0', '0', '0'}, Message: "Access denied for user"},
		{Number: 1290, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "The MySQL server is running with the --read-only option"},
		{Number: 1792, SQLState: [5]byte{'2', '5', '0', '0', '6'}, Message: "Cannot execute statement in a READ ONLY transaction."},
	} {
		t.Run(me.Error(), func(t *testing.T) {
			e := newEnv(t, 2)
			e.script(0, all(fails(bad, me), ok(next)))
			c := e.open(seqA)
			err := exec(c, bad)
			if err != error(me) {
				t.Fatalf("error %v (%T), want the driver's *mysql.MySQLError itself", err, err)
			}
			mustExec(t, c, next)
			wantHost(t, c, h1)
			e.noHostEvents()
			if e.dialed(0) != 1 || e.dialed(1) != 0 || e.phys(0, 0).Closes() != 0 || !c.IsValid() {
				t.Errorf("dialed H1 %d, H2 %d; H1 closes %d; valid %v: want 1, 0, 0, true",
					e.dialed(0), e.dialed(1), e.phys(0, 0).Closes(), c.IsValid())
			}
			e.allMet()
		})
	}
}

// Invariant no-silent-rerun: driver.ErrBadConn proves nothing was sent: outside a transaction the proxy
// repeats the statement once on the new host and the caller sees success.
func TestBadConnOutsideTransactionIsRetriedOnceOnNewHost(t *testing.T) {
	const ins = "INSERT INTO t VALUES(1)"
	t.Run("retried on H2", func(t *testing.T) {
		e := newEnv(t, 3)
		e.script(0, fails(ins, driver.ErrBadConn))
		e.script(1, all(ok(setReadOnly), ok(ins)))
		c := e.open(seqA)
		e.refuse(0) // H1 is gone: the same-host attempt fails, the walk goes on
		mustExec(t, c, ins)
		wantHost(t, c, h2)
		e.wantEvents(failover.EventSwitch, h2, 1)
		if n := e.phys(0, 0).Closes(); n != 1 {
			t.Errorf("H1 connection closed %d times, want 1", n)
		}
		e.allMet()
	})
	t.Run("query retried on H2", func(t *testing.T) {
		const sel = "SELECT id FROM t"
		e := newEnv(t, 3)
		e.script(0, func(m sqlmock.Sqlmock) { m.ExpectQuery(sel).WillReturnError(driver.ErrBadConn) })
		e.script(1, all(ok(setReadOnly), func(m sqlmock.Sqlmock) {
			m.ExpectQuery(sel).WillReturnRows(sqlmock.NewRows([]string{"id"}).AddRow(7))
		}))
		c := e.open(seqA)
		e.refuse(0)
		rows, err := c.QueryContext(context.Background(), sel, nil)
		if err != nil {
			t.Fatal(err)
		}
		dest := make([]driver.Value, 1)
		if err := rows.Next(dest); err != nil || dest[0] != int64(7) {
			t.Fatalf("Next: %v %v, want 7 from H2", dest[0], err)
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
		wantHost(t, c, h2)
		e.allMet()
	})
	t.Run("only once", func(t *testing.T) {
		e := newEnv(t, 3)
		e.script(0, fails(ins, driver.ErrBadConn))
		e.script(1, all(ok(setReadOnly), fails(ins, driver.ErrBadConn)), ok(setReadOnly))
		e.script(2, all(ok(setReadOnly), trap(ins)))
		c := e.open(seqA)
		e.refuse(0)
		err := exec(c, ins)
		// The second failure is not retried: the connection only moves (H2 is up, so
		// to a new session on H2) and the statement is not run a third time.
		wantFailover(t, err, h2, h2, false)
		if e.dialed(2) != 0 {
			t.Errorf("H3 dialed %d times", e.dialed(2))
		}
	})
}

// Invariants no-silent-rerun and one-host-per-transaction: inside a transaction even a provably unsent statement is not
// repeated: the transaction is lost.
func TestBadConnInsideTransactionIsNotRetriedAndLosesTransaction(t *testing.T) {
	const ins = "INSERT INTO t VALUES(1)"
	e := newEnv(t, 2)
	e.script(0, all(begin(), fails(ins, driver.ErrBadConn)))
	e.script(1, all(ok(setReadOnly), trap(ins)))
	c := e.open(seqA)
	e.refuse(0)
	tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	err = exec(c, ins)
	if !errors.Is(err, failover.ErrTxLost) {
		t.Errorf("error %v does not match ErrTxLost", err)
	}
	wantFailover(t, err, h1, h2, false)
	if err := tx.Commit(); !errors.Is(err, failover.ErrTxLost) {
		t.Errorf("Commit: %v, want ErrTxLost", err)
	}
	e.untouched(1, 0, ins)
}

// breaks is a sqlmock argument matcher that marks a physical connection Broken when the
// statement reaches it: go-sql-driver closes its connection when the caller's context ends.
type breaks struct{ conn func() *fake.Conn }

func (b breaks) Match(driver.Value) bool { b.conn().Broken.Store(true); return true }

// ending is a caller's context that ends, with err, when end is called: in the middle of
// a statement, as a request deadline passes while the server works. Its Done channel is
// nil, so that sqlmock returns the scripted error (go-sql-driver's own answer) instead of
// racing it with an error of its own.
type ending struct {
	context.Context
	err   error
	ended atomic.Bool
}

func newEnding(err error) *ending { return &ending{Context: context.Background(), err: err} }

func (c *ending) end() { c.ended.Store(true) }

func (c *ending) Done() <-chan struct{} { return nil }

func (c *ending) Err() error {
	if c.ended.Load() {
		return c.err
	}
	return nil
}

// Case 02 (ctx-cancel-is-not-a-host-failure), invariant classify-then-judge: the caller's context ending is
// not a host failure: the error matches the context error (never ErrBadConn), no host is
// reported, the pool stays on H1, and a physical connection go-sql-driver closed is
// replaced on the same host by the next statement.
func TestCallerCancellationIsNotAHostFailure(t *testing.T) {
	const sleep, next = "SELECT SLEEP(?)", "SELECT 1"
	arg := []driver.NamedValue{{Ordinal: 1, Value: int64(2)}}
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), -1)
	defer cancel2()

	for _, tc := range []struct {
		name string
		ctx  context.Context
		// driverErr: the statement reaches the server and go-sql-driver answers with the
		// context error after closing its connection. Else the connection was already
		// closed by go-sql-driver's watcher and answers driver.ErrBadConn.
		driverErr error
		want      error
	}{
		// Whether the caller cancelled is read from its context, never from the error
		// (cluster.Classify): go-sql-driver returns the context's error once it ended,
		// here while the statement runs.
		{"driver returns context.Canceled", newEnding(context.Canceled), context.Canceled, context.Canceled},
		{"driver returns context.DeadlineExceeded", newEnding(context.DeadlineExceeded), context.DeadlineExceeded, context.DeadlineExceeded},
		{"ctx cancelled, connection closed by the driver", cancelled, nil, context.Canceled},
		{"deadline passed, connection closed by the driver", expired, nil, context.DeadlineExceeded},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			first := func(m sqlmock.Sqlmock) {
				if tc.driverErr != nil {
					m.ExpectExec(sleep).WithArgs(breaks{func() *fake.Conn {
						if end, ok := tc.ctx.(*ending); ok {
							end.end()
						}
						return e.phys(0, 0)
					}}).WillReturnError(tc.driverErr)
				}
			}
			e.script(0, first, ok(next))
			c := e.open(seqA)
			if tc.driverErr == nil {
				e.phys(0, 0).Broken.Store(true)
			}

			_, err := c.ExecContext(tc.ctx, sleep, arg)
			if !errors.Is(err, tc.want) {
				t.Fatalf("error %v, want %v", err, tc.want)
			}
			notBadConn(t, err)
			var fe *failover.FailoverError
			if errors.As(err, &fe) {
				t.Errorf("a cancelled statement returned a FailoverError: %v", err)
			}
			if c.IsValid() {
				t.Error("IsValid() = true with the closed physical connection")
			}
			e.noHostEvents()

			mustExec(t, c, next)
			wantHost(t, c, h1)
			e.noHostEvents()
			if e.dialed(0) != 2 || e.dialed(1) != 0 {
				t.Errorf("dialed H1 %d, H2 %d times; want 2 (replaced on the same host), 0", e.dialed(0), e.dialed(1))
			}
			e.closedExcept(e.phys(0, 1))
			e.allMet()
		})
	}
}

// Case 02 through database/sql: the cancelled connection is retired, not failed over.
func TestCancelledConnectionIsReplacedOnSameHostThroughDatabaseSQL(t *testing.T) {
	const next = "SELECT 1"
	e := newEnv(t, 2)
	e.script(0, nil, ok(next))
	db := e.db(seqA, 1)
	sc := sqlConn(t, db)
	e.phys(0, 0).Broken.Store(true) // closed by go-sql-driver's context watcher
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sc.ExecContext(ctx, "SELECT SLEEP(2)"); !errors.Is(err, context.Canceled) || errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("error %v, want context.Canceled and not ErrBadConn", err)
	}
	_ = sc.Close()
	if _, err := db.ExecContext(context.Background(), next); err != nil {
		t.Fatal(err)
	}
	e.noHostEvents()
	if e.dialed(0) != 2 || e.dialed(1) != 0 || e.opens.Load() != 2 {
		t.Errorf("dialed H1 %d, H2 %d times, %d logical connections; want 2, 0, 2", e.dialed(0), e.dialed(1), e.opens.Load())
	}
	e.allMet()
}

// Invariant pool-moves-as-one: one failure moves the pool; another logical connection on the failed host
// moves before its next statement, with no error and nothing sent to the old host.
func TestPoolMovesAsOne(t *testing.T) {
	const a1, b1 = "INSERT INTO t VALUES('a')", "INSERT INTO t VALUES('b')"
	e := newEnv(t, 3)
	e.script(0, fails(a1, mysql.ErrInvalidConn), nil) // A, then B: B expects nothing on H1
	e.script(1, ok(setReadOnly), all(ok(setReadOnly), ok(b1)))
	a, b := e.open(seqA), e.open(seqA)
	e.refuse(0)

	wantFailover(t, exec(a, a1), h1, h2, true)
	mustExec(t, b, b1)
	wantHost(t, b, h2)
	if n := e.phys(0, 1).Closes(); n != 1 {
		t.Errorf("B's H1 connection closed %d times, want 1", n)
	}
	e.wantEvents(failover.EventHostFailed, "", 1)
	e.wantEvents(failover.EventSwitch, "", 1)
	e.allMet()
}

// Invariant pool-moves-as-one through database/sql: an idle connection on the host the pool left drops its
// physical connection in ResetSession and joins the pool's host before the caller's
// statement, which runs there without an error; database/sql opens no new connection.
func TestResetSessionMovesIdleConnectionOnLeftHost(t *testing.T) {
	const a1, b1 = "INSERT INTO t VALUES('a')", "INSERT INTO t VALUES('b')"
	e := newEnv(t, 3)
	e.script(0, fails(a1, mysql.ErrInvalidConn), nil)
	e.script(1, ok(setReadOnly), all(ok(setReadOnly), ok(b1)))
	db := e.db(seqA, 2)
	sa, sb := sqlConn(t, db), sqlConn(t, db)
	defer sa.Close()
	_ = sb.Close() // idle, on H1
	e.refuse(0)

	_, err := sa.ExecContext(context.Background(), a1)
	wantFailover(t, err, h1, h2, true)
	if _, err := db.ExecContext(context.Background(), b1); err != nil {
		t.Fatalf("statement on the retired connection's replacement: %v", err)
	}
	old := e.phys(0, 1)
	if old.Closes() != 1 || old.Resets() != 0 {
		t.Errorf("idle H1 connection: %d closes, %d forwarded resets; want 1, 0", old.Closes(), old.Resets())
	}
	if n := e.opens.Load(); n != 2 {
		t.Errorf("database/sql opened %d logical connections, want 2 (the idle one repaired in place)", n)
	}
	e.wantEvents(failover.EventHostFailed, "", 1)
	e.allMet()
}

// Case 09 (forwarded-reset-and-stale-idle-conns): ResetSession is forwarded to the
// physical connection, whose liveness check has a stale one replaced on the same host,
// without blaming the host.
func TestResetSessionIsForwardedAndReplacesStaleConnection(t *testing.T) {
	const q1, q2 = "INSERT INTO t VALUES(1)", "INSERT INTO t VALUES(2)"
	for _, tc := range []struct {
		name  string
		stale bool
	}{{"healthy", false}, {"stale", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			if tc.stale {
				e.script(0, ok(q1), ok(q2))
			} else {
				e.script(0, all(ok(q1), ok(q2)))
			}
			db := e.db(seqA, 1)
			if _, err := db.ExecContext(context.Background(), q1); err != nil {
				t.Fatal(err)
			}
			first := e.phys(0, 0)
			if tc.stale {
				first.ResetErr.Store(driver.ErrBadConn)
			}
			if _, err := db.ExecContext(context.Background(), q2); err != nil {
				t.Fatal(err)
			}
			if first.Resets() != 1 {
				t.Errorf("ResetSession forwarded %d times, want 1", first.Resets())
			}
			want := 1
			if tc.stale {
				want = 2
			}
			if e.dialed(0) != want || e.dialed(1) != 0 || e.opens.Load() != 1 {
				t.Errorf("dialed H1 %d, H2 %d times, %d logical connections; want %d, 0, 1", e.dialed(0), e.dialed(1), e.opens.Load(), want)
			}
			if tc.stale && first.Closes() != 1 {
				t.Errorf("stale connection closed %d times, want 1", first.Closes())
			}
			e.noHostEvents()
			e.allMet()
		})
	}
}

// Invariant pool-moves-as-one: IsValid reports false once the physical connection is gone, so that
// database/sql retires the connection instead of pooling it.
func TestIsValidFalseOnceThePhysicalConnectionIsGone(t *testing.T) {
	e := newEnv(t, 2)
	c := e.open(seqA)
	if !c.IsValid() {
		t.Fatal("IsValid() = false on a fresh connection")
	}
	e.phys(0, 0).Broken.Store(true)
	if c.IsValid() {
		t.Error("IsValid() = true over a broken physical connection")
	}
	e.phys(0, 0).Broken.Store(false)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if c.IsValid() {
		t.Error("IsValid() = true after Close")
	}
}

// Invariant bounded-waiting: when no host answers during a failover, the error is still a FailoverError
// (not ErrBadConn) whose Reconnect names every host; the connection is invalid and has no
// host until a later statement finds one.
func TestAllHostsDownDuringFailover(t *testing.T) {
	const ins, next = "INSERT INTO t VALUES(1)", "SELECT 1"
	e := newEnv(t, 3)
	e.script(1, all(ok(setReadOnly), ok(next)))
	c := e.open(seqA)
	for i := 0; i < 3; i++ {
		e.net.Down(i)
	}

	err := exec(c, ins)
	fe := wantFailover(t, err, h1, "", true)
	if !errors.Is(err, mysql.ErrInvalidConn) {
		t.Errorf("error does not wrap mysql.ErrInvalidConn: %v", err)
	}
	var nh *failover.NoHostAvailableError
	if !errors.As(fe.Reconnect, &nh) {
		t.Fatalf("Reconnect %v (%T) is not a *NoHostAvailableError", fe.Reconnect, fe.Reconnect)
	}
	if len(nh.Hosts) != 3 || nh.Passes != 2 {
		t.Fatalf("NoHostAvailableError with %d hosts after %d passes, want 3 and 2: %v", len(nh.Hosts), nh.Passes, nh)
	}
	for i, want := range []string{h1, h2, h3} {
		if nh.Hosts[i].Host != want || nh.Hosts[i].Err == nil {
			t.Errorf("Hosts[%d] = %q (%v), want %q with its dial error", i, nh.Hosts[i].Host, nh.Hosts[i].Err, want)
		}
	}
	if c.IsValid() {
		t.Error("IsValid() = true without a physical connection")
	}
	wantHost(t, c, "")
	e.closedExcept(nil)

	// Still all down: the next statement walks again and says so, never ErrBadConn.
	err = exec(c, next)
	if !errors.As(err, &nh) {
		t.Fatalf("next statement: %v, want a *NoHostAvailableError", err)
	}
	notBadConn(t, err)

	e.net.Up(1)
	mustExec(t, c, next)
	wantHost(t, c, h2)
	e.allMet()
}

// Invariant no-leaks: across a sequence of switches every physical connection but the current
// one is closed exactly once, and Close of the logical connection closes that one once.
func TestEveryPhysicalConnectionIsClosedExactlyOnce(t *testing.T) {
	e := newEnv(t, 3, retryMaster(2, 0))
	e.script(0, fails("Q1", mysql.ErrInvalidConn), ok("Q3"), ok("Q5"))
	e.script(1, fails("Q2", driver.ErrBadConn))
	e.script(2, ok("Q2"))
	c := e.open(seqB)
	e.refuse(0)

	wantFailover(t, exec(c, "Q1"), h1, h2, true) // H1 -> H2
	e.closedExcept(e.phys(1, 0))
	e.refuse(1)
	mustExec(t, c, "Q2") // H2 -> H3, retried there
	wantHost(t, c, h3)
	e.closedExcept(e.phys(2, 0))
	e.net.Up(0)
	e.clock.Advance(2 * time.Second)
	mustExec(t, c, "Q3") // falls back to H1
	wantHost(t, c, h1)
	e.closedExcept(e.phys(0, 1))

	e.phys(0, 1).Broken.Store(true) // cancelled: replaced on H1
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := c.ExecContext(ctx, "Q4", nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Q4: %v", err)
	}
	e.closedExcept(nil)
	mustExec(t, c, "Q5")
	e.closedExcept(e.phys(0, 2))

	for i := 0; i < 2; i++ {
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	e.closedExcept(nil)
	// Five of the pool's, and the session to H3 of the fall-back's look at the writable
	// hosts (H1 and H3 both are: it returns because H3 replicates from H1).
	if n := len(e.net.AllConns()); n != 6 {
		t.Errorf("%d physical connections, want 6", n)
	}
	e.allMet()
}

// Invariant no-leaks: a closed connection never dials again; its statements fail at once.
func TestClosedConnectionNeverReconnects(t *testing.T) {
	e := newEnv(t, 2)
	c := e.open(seqA)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := exec(c, "SELECT 1"); err == nil {
		t.Fatal("statement on a closed connection succeeded")
	}
	if err := c.ResetSession(context.Background()); !errors.Is(err, driver.ErrBadConn) {
		t.Errorf("ResetSession on a closed connection: %v, want driver.ErrBadConn", err)
	}
	if e.dialed(0) != 1 || e.dialed(1) != 0 {
		t.Errorf("dialed H1 %d, H2 %d times; want 1, 0", e.dialed(0), e.dialed(1))
	}
	e.closedExcept(nil)
}

// Case 09 and case 10 (b): a session the server ended (KILL CONNECTION 1927, MySQL's
// inactivity 4031) or a connection found dead before anything was sent (driver.ErrBadConn:
// wait_timeout, an idle KILL, a restart) says nothing bad about the host: the connection
// gets one new session on the same host before the host is blamed, and the pool stays.
func TestSessionEndedReconnectsSameHost(t *testing.T) {
	const ins, next = "INSERT INTO t VALUES(1)", "INSERT INTO t VALUES(2)"
	for _, tc := range []struct {
		name    string
		cause   error
		retried bool // nothing was sent: the statement runs on the new session
	}{
		{"1927 connection killed 70100", &mysql.MySQLError{Number: 1927, SQLState: [5]byte{'7', '0', '1', '0', '0'}, Message: "Connection was killed"}, false},
		{"4031 inactivity", &mysql.MySQLError{Number: 4031, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "disconnected by the server because of inactivity"}, false},
		{"stale connection, nothing sent", driver.ErrBadConn, true},
		// These prove only that the session died (a KILL of a busy query on
		// MariaDB 10.11 is a bare EOF, net_write_timeout and a query past readTimeout are
		// read failures, a packet over max_allowed_packet is 1153): H1 answers the check.
		{"invalid connection (KILL on MariaDB, net_write_timeout)", mysql.ErrInvalidConn, false},
		{"read timeout (a query longer than readTimeout)", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, false},
		{"1153 packet bigger than max_allowed_packet 08S01", &mysql.MySQLError{Number: 1153, SQLState: [5]byte{'0', '8', 'S', '0', '1'}, Message: "Got a packet bigger than 'max_allowed_packet' bytes"}, false},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 3)
			e.script(0, fails(ins, tc.cause), all(ok(ins), ok(next)))
			c := e.open(seqA)
			err := exec(c, ins)
			if tc.retried {
				if err != nil {
					t.Fatalf("statement: %v, want success on a new session on H1", err)
				}
			} else {
				// A packet the server refused for its size was not read: nothing ran.
				wantFailover(t, err, h1, h1, !strings.HasPrefix(tc.name, "1153"))
				mustExec(t, c, next)
			}
			wantHost(t, c, h1)
			if e.cl.Active() != 0 || e.dialed(1) != 0 || e.dialed(2) != 0 {
				t.Errorf("pool on H%d, H2 dialed %d, H3 dialed %d: the pool moved", e.cl.Active()+1, e.dialed(1), e.dialed(2))
			}
			e.wantEvents(failover.EventHostFailed, h1, 0)
			e.wantEvents(failover.EventSwitch, h2, 0)
			e.wantEvents(failover.EventSessionEnded, h1, 1)
			if n := e.phys(0, 0).Closes(); n != 1 {
				t.Errorf("first H1 connection closed %d times, want 1", n)
			}
		})
	}
	t.Run("same host refuses: the walk goes on", func(t *testing.T) {
		e := newEnv(t, 3)
		e.script(0, fails(ins, driver.ErrBadConn))
		e.script(1, all(ok(setReadOnly), ok(ins)))
		c := e.open(seqA)
		e.refuse(0)
		mustExec(t, c, ins)
		wantHost(t, c, h2)
		e.wantEvents(failover.EventHostFailed, h1, 1)
	})
}

// A caller queued at MaxOpenConns is handed a connection straight from its releaser, and
// database/sql returns a driver.ErrBadConn from ResetSession to that caller as is: the
// connection must join the pool's host itself and the caller must see no error.
func TestQueuedCallerGetsNoBadConnAfterThePoolMoved(t *testing.T) {
	const q = "INSERT INTO t VALUES(1)"
	e := newEnv(t, 2)
	e.script(1, nil, all(ok(setReadOnly), ok(q))) // the first H2 connection is the reporter's
	db := e.db(seqA, 1)
	held := sqlConn(t, db) // the only connection, on H1
	done := make(chan error, 1)
	go func() {
		_, err := db.ExecContext(fake.Context(t), q) // queued behind held
		done <- err
	}()
	fake.WaitFor(t, "the caller queued at MaxOpenConns", func() bool { return db.Stats().WaitCount > 0 })
	// Another connection of the pool saw H1 fail: the pool is on H2 now.
	c, _, err := e.cl.Failover(context.Background(), 0, mysql.ErrInvalidConn, nil)
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	_ = held.Close() // handed to the queued caller
	if err := fake.Recv(t, "the queued caller's statement", done); err != nil {
		t.Fatalf("queued caller: %v (errors.Is ErrBadConn %v)", err, errors.Is(err, driver.ErrBadConn))
	}
	if e.opens.Load() != 1 {
		t.Errorf("%d logical connections, want 1", e.opens.Load())
	}
	e.allMet()
}

// A pinned connection (or a transaction) gets no ResetSession between its calls, so a
// session the server closed while it sat idle (wait_timeout, a KILL of a sleeping
// connection) is caught by the liveness check the proxy runs after cluster.DefaultIdleCheck: the
// statement runs on a new session on the same host, the host is not blamed, the pool
// stays. Inside a transaction the transaction is lost, and nothing is sent.
func TestIdleStaleConnectionIsReplacedBeforeSending(t *testing.T) {
	const q1, q2 = "INSERT INTO t VALUES(1)", "INSERT INTO t VALUES(2)"
	t.Run("autocommit", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, ok(q1), ok(q2))
		c := e.open(seqA)
		mustExec(t, c, q1)
		first := e.phys(0, 0)
		e.clock.Advance(cluster.DefaultIdleCheck / 2)
		first.ResetErr.Store(driver.ErrBadConn) // the server closed it meanwhile
		resets := first.Resets()
		e.clock.Advance(cluster.DefaultIdleCheck)
		mustExec(t, c, q2)
		wantHost(t, c, h1)
		if first.Resets() != resets+1 || first.Closes() != 1 {
			t.Errorf("stale connection: %d liveness checks, %d closes; want 1, 1", first.Resets()-resets, first.Closes())
		}
		e.noHostEvents()
		e.allMet()
	})
	t.Run("busy connection is not checked", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(ok(q1), ok(q2)))
		c := e.open(seqA)
		mustExec(t, c, q1)
		e.clock.Advance(cluster.DefaultIdleCheck / 2)
		mustExec(t, c, q2)
		if n := e.phys(0, 0).Resets(); n != 0 {
			t.Errorf("%d liveness checks on a busy connection, want 0", n)
		}
	})
	t.Run("inside a transaction", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(begin(), ok(q1)), nil)
		c := e.open(seqA)
		tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, c, q1)
		e.phys(0, 0).ResetErr.Store(driver.ErrBadConn)
		e.clock.Advance(2 * cluster.DefaultIdleCheck)
		err = exec(c, q2)
		if !errors.Is(err, failover.ErrTxLost) || errors.As(err, new(*failover.FailoverError)) {
			t.Fatalf("statement after the idle gap: %v, want ErrTxLost alone", err)
		}
		if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		e.noHostEvents()
		e.allMet()
	})
}
