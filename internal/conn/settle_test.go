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
)

// No silent re-execution: whether a failed call may run again is decided by what was
// written to its socket, not by the error's name. go-sql-driver answers driver.ErrBadConn
// when writing a LOAD DATA LOCAL file packet fails, after the statement itself was sent;
// taken for "not sent", the statement ran again on the next host (the reader handed out
// twice, or the next host's 1290 returned bare). With the socket's count of bytes, a call
// that wrote anything gets a FailoverError with MaybeExecuted and never runs again,
// through every path (a statement, a query, a prepared statement, Commit); one that
// wrote nothing still runs on the new host without an error. With go-sql-driver's
// rejectReadOnly, driver.ErrBadConn after the server's whole answer was read (no write
// failed) is a write it refused as read-only: that runs on the new session, as
// database/sql would run it on another connection; not with multiStatements (a batch's
// earlier statements may have run), and not a LOAD DATA whose file packet failed.
func TestSentIsWhatTheSocketTook(t *testing.T) {
	const load, next = "LOAD DATA LOCAL INFILE 'Reader::f' INTO TABLE t (k)", "SELECT k FROM t"
	const batch = "INSERT INTO t VALUES(1); UPDATE t SET k = 2"
	reject := Config{RejectReadOnly: true}
	type call func(c *Conn) error
	execQ := func(q string) call { return func(c *Conn) error { return exec(c, q) } }
	for _, tc := range []struct {
		name    string
		first   step // H1's script, with the failing call last
		run     call
		written bool // the call wrote to its socket before driver.ErrBadConn (else nothing: Broken)
		retried step // what H2 expects when the call runs again there (written: a trap)
		trap    string
		cfg     Config
		failW   bool // a write of the call failed after its first bytes (a LOAD DATA file packet)
	}{
		{name: "LOAD DATA LOCAL cut mid-file", first: fails(load, driver.ErrBadConn), run: execQ(load), written: true, retried: trap(load), trap: load},
		{name: "nothing written", run: execQ(load), retried: ok(load)},
		{name: "query", first: func(m sqlmock.Sqlmock) { m.ExpectQuery(next).WillReturnError(driver.ErrBadConn) }, written: true,
			run: func(c *Conn) error {
				_, err := c.QueryContext(context.Background(), next, nil)
				return err
			},
			retried: func(m sqlmock.Sqlmock) { m.ExpectQuery(next).WillReturnRows(sqlmock.NewRows([]string{"k"}).AddRow(1)) }, trap: next},
		{name: "prepared statement", first: prepared("INSERT INTO t VALUES(?)", 1, driver.ErrBadConn), written: true,
			run: func(c *Conn) error {
				s, err := c.PrepareContext(context.Background(), "INSERT INTO t VALUES(?)")
				if err != nil {
					return err
				}
				defer s.Close()
				_, err = s.(driver.StmtExecContext).ExecContext(context.Background(), []driver.NamedValue{{Ordinal: 1, Value: int64(1)}})
				return err
			},
			retried: prepared("INSERT INTO t VALUES(?)", 1, nil), trap: "INSERT INTO t VALUES(?)"},
		{name: "rejectReadOnly: a refused write", cfg: reject, first: fails("DELETE FROM t", driver.ErrBadConn), run: execQ("DELETE FROM t"),
			retried: ok("DELETE FROM t")},
		{name: "rejectReadOnly: LOAD DATA LOCAL cut mid-file", cfg: reject, failW: true, first: fails(load, driver.ErrBadConn), run: execQ(load),
			written: true, retried: trap(load), trap: load},
		{name: "rejectReadOnly: a batch", cfg: Config{RejectReadOnly: true, MultiStatements: true}, first: fails(batch, driver.ErrBadConn),
			run: execQ(batch), written: true, retried: trap(batch), trap: batch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			e.net.TrackSockets(e.clock.Now)
			e.script(0, tc.first)
			e.script(1, tc.retried)
			c := e.open(tc.cfg)
			e.refuse(0) // H1 takes no new session: the connection moves to H2
			if !tc.written && !tc.cfg.RejectReadOnly {
				e.phys(0, 0).Broken.Store(true) // refused before a byte is written
			}
			e.phys(0, 0).FailWrite.Store(tc.failW)
			err := tc.run(c)
			switch {
			case tc.written:
				wantFailover(t, err, h1, h2, true)
				if tc.name == "LOAD DATA LOCAL cut mid-file" && !strings.Contains(err.Error(), "while the request was being sent") {
					t.Errorf("error %q does not say the connection broke while the request was being sent", err)
				}
				e.untouched(1, 0, tc.trap) // the call never ran on H2
			case err != nil:
				t.Fatalf("%v, want nil: nothing was written, so the call ran again on H2", err)
			default:
				e.allMet()
			}
			wantHost(t, c, h2)
		})
	}
}

// The same rule at COMMIT: driver.ErrBadConn after COMMIT was written is an unknown
// outcome (settled, as any), not a transaction lost before COMMIT was sent.
func TestCommitWrittenThenBadConn(t *testing.T) {
	const ins = "INSERT INTO t VALUES(10)"
	e := newEnv(t, 2)
	e.net.TrackSockets(e.clock.Now)
	e.script(0, all(begin(), ok(ins), commit(driver.ErrBadConn)))
	c := e.open(seqB)
	tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, ins)
	err = tx.Commit()
	if !errors.Is(err, failover.ErrCommitOutcomeUnknown) || errors.Is(err, failover.ErrTxLost) {
		t.Fatalf("Commit: %v, want ErrCommitOutcomeUnknown (COMMIT was written), not ErrTxLost", err)
	}
	wantFailover(t, err, h1, h1, true)
	var cu *failover.CommitUnknownError
	if !errors.As(err, &cu) || !cu.Settled {
		t.Errorf("Commit: %v, want a settled *failover.CommitUnknownError", err)
	}
}

// Invariant "a transaction lives and dies on one host": an outcome-unknown COMMIT is
// settled before the error returns. A semi-synchronous COMMIT whose socket failed while
// it waited for a replica's acknowledgement still commits when its wait ends, even when
// its session is killed; reading the data at once proves nothing. The driver kills the
// old session's server thread (the id its socket's greeting gave) through a new session
// on its host and reads the process list until the thread is gone, then says so
// (failover.CommitUnknownError.Settled); when that cannot be confirmed (the host does
// not answer, the thread lingers past the bound, KILL is refused, the id is unknown) the
// error says "not settled" and why. Through Tx.Commit and through a COMMIT statement.
// Before the KILL the server's uptime is read: a server that has not run since before the
// session opened may have started again meanwhile and given its id to another session,
// so nothing is killed, and the id is only waited for: gone at once after a restart
// (settled), or held by that other session until the wait runs out (not settled).
func TestCommitOutcomeSettled(t *testing.T) {
	const ins = "INSERT INTO t VALUES(10)"
	denied := &mysql.MySQLError{Number: 1095, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "You are not owner of thread 1000"}
	noThread := &mysql.MySQLError{Number: 1094, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "Unknown thread id: 1000"}
	for _, tc := range []struct {
		name      string
		statement bool // BEGIN ... COMMIT as statements, else BeginTx and Tx.Commit
		untracked bool // the connector's tracker does not see the socket
		down      bool // H1 is gone: the connection moves to H2
		killErr   error
		linger    int
		age       time.Duration // how long the session was open before COMMIT
		uptime    time.Duration // H1's uptime then (0: fake.DefaultUptime)
		noKill    bool          // settled without a KILL
		settled   bool
		why       string // in the error when not settled
	}{
		{name: "Tx.Commit", settled: true},
		{name: "COMMIT statement", statement: true, settled: true},
		{name: "the thread ended by itself", killErr: noThread, settled: true},
		{name: "the thread ends after 4 reads", linger: 4, settled: true},
		{name: "the host is gone", down: true, why: "did not answer a new session"},
		{name: "KILL refused", killErr: denied, why: "KILL CONNECTION"},
		{name: "the thread lingers", linger: 1 << 20, why: "still in the process list"},
		{name: "the session's id is unknown", untracked: true, why: "id on the server is not known"},
		{name: "the server restarted since", age: time.Minute, uptime: 59 * time.Second, noKill: true, settled: true},
		{name: "the id is another session's now", age: time.Minute, uptime: 10 * time.Second, linger: 1 << 20, noKill: true,
			why: "not killed: H1:3306 has run 10s, the session was opened 1m0s ago"},
		{name: "the server ran since before the session", age: time.Minute, uptime: time.Minute, settled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			if !tc.untracked {
				e.net.TrackSockets(e.clock.Now)
			}
			e.net.KillErr(0, tc.killErr)
			e.net.Linger(0, tc.linger)
			if tc.statement {
				e.script(0, all(ok("BEGIN"), ok(ins), fails("COMMIT", mysql.ErrInvalidConn)))
			} else {
				e.script(0, all(begin(), ok(ins), commit(mysql.ErrInvalidConn)))
			}
			c := e.open(seqB)
			thread, _ := e.phys(0, 0).Sock.Thread()
			var tx driver.Tx
			if tc.statement {
				mustExec(t, c, "BEGIN")
			} else {
				var err error
				if tx, err = c.BeginTx(context.Background(), driver.TxOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			mustExec(t, c, ins)
			e.clock.Advance(tc.age)
			if tc.uptime > 0 {
				e.net.SetUptime(0, tc.uptime)
			}
			if tc.down {
				e.refuse(0)
			}
			var err error
			if tc.statement {
				err = exec(c, "COMMIT")
			} else {
				err = tx.Commit()
			}
			var cu *failover.CommitUnknownError
			if !errors.Is(err, failover.ErrCommitOutcomeUnknown) || !errors.As(err, &cu) {
				t.Fatalf("COMMIT: %v, want a *failover.CommitUnknownError (ErrCommitOutcomeUnknown)", err)
			}
			if cu.Host != h1 || cu.Settled != tc.settled || (cu.Why == nil) != tc.settled {
				t.Errorf("CommitUnknownError{Host: %q, Settled: %v, Why: %v}, want {%q, %v}", cu.Host, cu.Settled, cu.Why, h1, tc.settled)
			}
			if !tc.settled && !strings.Contains(err.Error(), tc.why) {
				t.Errorf("error %q does not say why it is not settled (%q)", err, tc.why)
			}
			current := h1
			if tc.down {
				current = h2
			}
			if fe := wantFailover(t, err, h1, current, true); fe.Settled != tc.settled {
				t.Errorf("FailoverError.Settled = %v, want the CommitUnknownError's %v", fe.Settled, tc.settled)
			}
			kills := e.net.Kills(0)
			switch {
			case tc.down || tc.untracked || tc.killErr != nil || tc.noKill:
				if len(kills) != 0 {
					t.Errorf("H1 was asked to kill %v, want nothing", kills)
				}
			case len(kills) != 1 || kills[0] != thread:
				t.Errorf("H1 was asked to kill %v, want the COMMIT's session's thread %d", kills, thread)
			case e.net.UptimeReads(0) != 1:
				t.Errorf("H1's uptime was read %d times before the KILL, want once", e.net.UptimeReads(0))
			}
			if tc.settled && tc.killErr == nil && !tc.noKill {
				if reads := e.net.ProcessReads(0); reads != tc.linger+1 {
					t.Errorf("%d reads of the process list, want %d (until the thread was gone)", reads, tc.linger+1)
				}
			}
			// The new session on H1 (the check's) and the settling one are both closed
			// but the connection's own.
			for _, pc := range e.net.AllConns() {
				if pc.Host == 0 && pc.Seq == 2 && pc.Closes() != 1 {
					t.Errorf("the settling session was closed %d times, want 1", pc.Closes())
				}
			}
		})
	}
}

// An autocommit write is its own COMMIT: one past readTimeout on a host that still
// answers goes on running on its server thread (an UPDATE waiting for a row lock lands
// when it gets the lock), so the data read at once after the error proves nothing. Such
// a statement is settled before its FailoverError returns, as a COMMIT whose outcome is
// unknown is: its old session's thread is killed through a new session and the process
// list read until it is gone (FailoverError.Settled), or the error says why that was
// not confirmed (Unsettled). Only when it may have run (MaybeExecuted), is a statement,
// and the host answered the connection's new session (Current == Failed): a host that
// did not answer is not tried. A read that may run again (Read) is only killed, without
// the wait, so that the server stops work nobody waits for; a statement of a lost
// transaction is settled too (its thread holds the transaction's locks until it ends),
// and the transaction stays lost.
func TestStatementOutcomeSettled(t *testing.T) {
	const upd, sel, lock = "UPDATE t SET k = k - 10 WHERE id = 1", "SELECT k FROM t", "SELECT k FROM t WHERE id = 1 FOR UPDATE"
	denied := &mysql.MySQLError{Number: 1095, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "You are not owner of thread 1000"}
	tooBig := &mysql.MySQLError{Number: 1153, SQLState: [5]byte{'0', '8', 'S', '0', '1'}, Message: "Got a packet bigger than 'max_allowed_packet' bytes"}
	query := func(q string, err error) step {
		return func(m sqlmock.Sqlmock) { m.ExpectQuery(q).WillReturnError(err) }
	}
	runQuery := func(q string) func(c *Conn) error {
		return func(c *Conn) error {
			_, err := c.QueryContext(context.Background(), q, nil)
			return err
		}
	}
	runExec := func(q string) func(c *Conn) error { return func(c *Conn) error { return exec(c, q) } }
	for _, tc := range []struct {
		name      string
		first     step // H1's script for the connection's first session
		run       func(c *Conn) error
		tx        bool // the statement runs in a Tx (BeginTx)
		down      bool // H1 takes no new session: the connection moves to H2
		untracked bool
		killErr   error
		linger    int
		uptime    time.Duration // H1's uptime at the failure (0: fake.DefaultUptime)
		maybe     bool          // FailoverError.MaybeExecuted
		read      bool          // FailoverError.Read
		kill      bool          // H1 is asked to KILL the old session's thread
		wait      bool          // and its process list is read until the thread is gone
		settled   bool
		why       string // in Unsettled and the error, when a settling was tried and failed
		sessions  int    // sessions opened to H1: the first, the connection's new one, the settling one
	}{
		{name: "autocommit write", sessions: 3, first: fails(upd, mysql.ErrInvalidConn), run: runExec(upd), maybe: true, kill: true, wait: true, settled: true},
		{name: "the thread ends after 3 reads", sessions: 3, first: fails(upd, mysql.ErrInvalidConn), run: runExec(upd), linger: 3, maybe: true, kill: true, wait: true, settled: true},
		{name: "a locking read is a write", sessions: 3, first: query(lock, mysql.ErrInvalidConn), run: runQuery(lock), maybe: true, kill: true, wait: true, settled: true},
		{name: "the thread lingers", sessions: 3, first: fails(upd, mysql.ErrInvalidConn), run: runExec(upd), linger: 1 << 20, maybe: true, kill: true, wait: true,
			why: "still in the process list"},
		{name: "KILL refused", sessions: 3, first: fails(upd, mysql.ErrInvalidConn), run: runExec(upd), killErr: denied, maybe: true, why: "KILL CONNECTION"},
		{name: "the session's id is unknown", sessions: 2, first: fails(upd, mysql.ErrInvalidConn), run: runExec(upd), untracked: true, maybe: true,
			why: "id on the server is not known"},
		{name: "the host moved", sessions: 1, first: fails(upd, mysql.ErrInvalidConn), run: runExec(upd), down: true, maybe: true},
		{name: "a read", sessions: 3, first: query(sel, mysql.ErrInvalidConn), run: runQuery(sel), maybe: true, read: true, kill: true},
		{name: "a read on a server that restarted since", sessions: 3, first: query(sel, mysql.ErrInvalidConn), run: runQuery(sel), uptime: time.Second,
			maybe: true, read: true},
		{name: "a read, the host moved", sessions: 1, first: query(sel, mysql.ErrInvalidConn), run: runQuery(sel), down: true, maybe: true, read: true},
		{name: "refused unread (1153)", sessions: 2, first: fails(upd, tooBig), run: runExec(upd)},
		{name: "in a transaction", sessions: 3, first: all(begin(), fails(upd, mysql.ErrInvalidConn)), run: runExec(upd), tx: true, maybe: true, kill: true, wait: true,
			settled: true},
		{name: "Tx.Rollback, not a statement", sessions: 2, first: all(begin(), func(m sqlmock.Sqlmock) { m.ExpectRollback().WillReturnError(mysql.ErrInvalidConn) }),
			run: func(c *Conn) error {
				tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
				if err != nil {
					t.Fatal(err)
				}
				return tx.Rollback()
			}, maybe: true},
		{name: "in a transaction opened by BEGIN", sessions: 3, first: all(ok("BEGIN"), fails(upd, mysql.ErrInvalidConn)), run: func(c *Conn) error {
			mustExec(t, c, "BEGIN")
			return exec(c, upd)
		}, maybe: true, kill: true, wait: true, settled: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			if !tc.untracked {
				e.net.TrackSockets(e.clock.Now)
			}
			e.net.KillErr(0, tc.killErr)
			e.net.Linger(0, tc.linger)
			e.script(0, tc.first)
			c := e.open(seqB)
			thread, _ := e.phys(0, 0).Sock.Thread()
			if tc.tx {
				if _, err := c.BeginTx(context.Background(), driver.TxOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			e.clock.Advance(time.Minute) // the session's age when it fails
			if tc.uptime > 0 {
				e.net.SetUptime(0, tc.uptime)
			}
			if tc.down {
				e.refuse(0)
			}
			err := tc.run(c)
			current := h1
			if tc.down {
				current = h2
			}
			fe := wantFailover(t, err, h1, current, tc.maybe)
			inTx := tc.tx || strings.Contains(tc.name, "BEGIN")
			if inTx != errors.Is(err, failover.ErrTxLost) {
				t.Errorf("%v: matches failover.ErrTxLost %v, want %v", err, !inTx, inTx)
			}
			if fe.Read != tc.read || fe.Settled != tc.settled {
				t.Errorf("FailoverError{Read: %v, Settled: %v, Unsettled: %v}, want {%v, %v}", fe.Read, fe.Settled, fe.Unsettled, tc.read, tc.settled)
			}
			switch {
			case tc.why == "" && fe.Unsettled != nil:
				t.Errorf("FailoverError.Unsettled = %v, want nil: nothing was tried, or it was settled", fe.Unsettled)
			case tc.why != "" && (fe.Unsettled == nil || !strings.Contains(err.Error(), tc.why) || !strings.Contains(err.Error(), "may still")):
				t.Errorf("error %q (Unsettled %v) does not say the statement may still run and why it is not settled (%q)", err, fe.Unsettled, tc.why)
			case tc.settled && !strings.Contains(err.Error(), "the data there is final"):
				t.Errorf("error %q does not say the data is final", err)
			}
			kills := e.net.Kills(0)
			switch {
			case !tc.kill && len(kills) != 0:
				t.Errorf("H1 was asked to kill %v, want nothing", kills)
			case tc.kill && (len(kills) != 1 || kills[0] != thread):
				t.Errorf("H1 was asked to kill %v, want the failed session's thread %d", kills, thread)
			}
			reads := e.net.ProcessReads(0)
			switch {
			case !tc.wait && reads != 0:
				t.Errorf("%d reads of H1's process list, want none: nothing waits for the thread", reads)
			case tc.wait && tc.settled && reads != tc.linger+1:
				t.Errorf("%d reads of H1's process list, want %d (until the thread was gone)", reads, tc.linger+1)
			}
			if dialed := e.dialed(0); dialed != tc.sessions {
				t.Errorf("%d sessions opened to H1, want %d", dialed, tc.sessions)
			}
			for _, pc := range e.net.Conns(0) {
				if pc.Seq == 2 && pc.Closes() != 1 {
					t.Errorf("the settling session was closed %d times, want 1", pc.Closes())
				}
			}
		})
	}
}
