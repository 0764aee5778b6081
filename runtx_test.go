package mysqlfailover_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// RunInTx runs the function again in a fresh transaction when nothing of
// the last one committed, within its attempts and the caller's context, with jittered
// backoff; after ErrCommitOutcomeUnknown only with a commit check.

var (
	rtDeadlock = &mysql.MySQLError{Number: 1213, SQLState: [5]byte{'4', '0', '0', '0', '1'}, Message: "Deadlock found when trying to get lock; try restarting transaction"}
	rtDup      = &mysql.MySQLError{Number: 1062, SQLState: [5]byte{'2', '3', '0', '0', '0'}, Message: "Duplicate entry '1' for key 'PRIMARY'"}
)

// rtPool is a pool over fake hosts whose scripts the test gives per host and physical
// connection, on newPool's fake clock: RunInTx's waits take no time.
type rtPool struct{ *pool }

// A test that reaches H2 sets failOverReadOnly=false: no SET SESSION TRANSACTION READ ONLY
// is scripted.
func newRTPool(t *testing.T, hosts int, params string, scripts ...func(host, seq int, m sqlmock.Sqlmock)) *rtPool {
	t.Helper()
	p := newPool(t, hosts, params)
	for h := 0; h < hosts; h++ {
		p.net.Script(h, func(seq int, m sqlmock.Sqlmock) {
			for _, s := range scripts {
				s(h, seq, m)
			}
		})
	}
	return &rtPool{pool: p}
}

// runs counts fn's runs and scripts nothing: the scripts above decide what each run gets.
type runs struct{ n int }

func (r *runs) fn(q string) func(tx *sql.Tx) error {
	return func(tx *sql.Tx) error {
		r.n++
		_, err := tx.Exec(q)
		return err
	}
}

func (p *rtPool) stats() failover.Stats { return p.c.Stats() }

func (p *rtPool) reruns() []failover.Event {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []failover.Event
	for _, e := range p.evs {
		if e.Kind == failover.EventTxRerun {
			out = append(out, e)
		}
	}
	return out
}

func TestRunInTxCommitsOnce(t *testing.T) {
	p := newRTPool(t, 2, "", func(h, seq int, m sqlmock.Sqlmock) {
		if h == 0 {
			m.ExpectBegin()
			m.ExpectExec("INSERT INTO t VALUES (1)").WillReturnResult(sqlmock.NewResult(1, 1))
			m.ExpectCommit()
		}
	})
	var r runs
	if err := mysqlfailover.RunInTx(context.Background(), p.db, nil, r.fn("INSERT INTO t VALUES (1)")); err != nil {
		t.Fatal(err)
	}
	if r.n != 1 || p.stats().TxReruns != 0 || len(p.reruns()) != 0 {
		t.Errorf("%d runs, %d reruns counted, %d events; want 1, 0, 0", r.n, p.stats().TxReruns, len(p.reruns()))
	}
}

// A deadlock in the first run, then success: two runs, each in its own transaction,
// one rerun counted and reported with its cause and wait; the wait is the jittered
// backoff, on the connector's clock.
func TestRunInTxRerunsAfterDeadlock(t *testing.T) {
	p := newRTPool(t, 2, "", func(h, seq int, m sqlmock.Sqlmock) {
		if h == 0 {
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET a = 1").WillReturnError(rtDeadlock)
			m.ExpectRollback()
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET a = 1").WillReturnResult(sqlmock.NewResult(0, 1))
			m.ExpectCommit()
		}
	})
	var r runs
	opts := &mysqlfailover.RunOptions{Backoff: 40 * time.Millisecond}
	if err := mysqlfailover.RunInTx(context.Background(), p.db, opts, r.fn("UPDATE t SET a = 1")); err != nil {
		t.Fatal(err)
	}
	if r.n != 2 {
		t.Errorf("%d runs, want 2", r.n)
	}
	evs := p.reruns()
	if s := p.stats(); s.TxReruns != 1 || len(evs) != 1 || !errors.Is(evs[0].Err, rtDeadlock) {
		t.Fatalf("TxReruns %d, events %v; want 1 rerun reported with the deadlock", s.TxReruns, evs)
	}
	if d := evs[0].Duration; d < 20*time.Millisecond || d > 40*time.Millisecond {
		t.Errorf("wait %v, want between half the backoff (20ms) and all of it (40ms)", d)
	}
	if err := p.net.Conns(0)[0].Mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
}

// The host dies inside the first run (ErrTxLost): the second run gets a connection on
// H2 and commits there; nothing of the first commits anywhere.
func TestRunInTxRerunsAfterFailover(t *testing.T) {
	p := newRTPool(t, 2, "failOverReadOnly=false", func(h, seq int, m sqlmock.Sqlmock) {
		m.ExpectBegin()
		m.ExpectExec("INSERT INTO t VALUES (1)").WillReturnResult(sqlmock.NewResult(1, 1))
		m.ExpectCommit()
	})
	var r runs
	fn := func(tx *sql.Tx) error {
		r.n++
		if r.n == 1 {
			p.net.Down(0) // the host dies before the statement
		}
		_, err := tx.Exec("INSERT INTO t VALUES (1)")
		return err
	}
	if err := mysqlfailover.RunInTx(context.Background(), p.db, nil, fn); err != nil {
		t.Fatal(err)
	}
	if r.n != 2 || p.stats().Active != p.net.Addrs()[1] {
		t.Errorf("%d runs, pool on %s; want 2 runs, H2", r.n, p.stats().Active)
	}
	if evs := p.reruns(); len(evs) != 1 || !errors.Is(evs[0].Err, failover.ErrTxLost) {
		t.Errorf("rerun events %v, want one caused by ErrTxLost", evs)
	}
	if err := p.net.Conns(1)[0].Mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
}

// COMMIT's reply is lost (ErrCommitOutcomeUnknown): without a commit check RunInTx returns
// that error and never runs fn again; with one, it believes the check, but only once the
// driver has settled the outcome: the COMMIT's session killed on H1 through a new
// session and gone from its process list (a semi-synchronous COMMIT lands when its wait
// ends, killed or not). When H1 does not answer, or the thread lingers past the bound,
// the check is never asked and the error says the outcome is not settled.
func TestRunInTxCommitOutcomeUnknown(t *testing.T) {
	checkErr := errors.New("check: no connection")
	for _, tc := range []struct {
		name     string
		check    func(context.Context) (bool, error) // nil: no check
		gone     bool                                // H1 takes no new session: the pool moves to H2
		linger   int                                 // process-list reads that still show the killed thread
		runs     int
		wantErr  error // nil: RunInTx returns nil
		settled  bool  // the COMMIT's error says settled (when it is returned)
		noChecks bool  // the check must not be asked
	}{
		{name: "no check", runs: 1, wantErr: failover.ErrCommitOutcomeUnknown, settled: true},
		{name: "committed", check: func(context.Context) (bool, error) { return true, nil }, runs: 1},
		{name: "not committed", check: func(context.Context) (bool, error) { return false, nil }, runs: 2},
		{name: "the check fails", check: func(context.Context) (bool, error) { return false, checkErr }, runs: 1, wantErr: checkErr, settled: true},
		{name: "the thread ends late", linger: 3, check: func(context.Context) (bool, error) { return true, nil }, runs: 1},
		{name: "not settled: H1 gone", gone: true, check: func(context.Context) (bool, error) { return false, nil }, runs: 1,
			wantErr: failover.ErrCommitOutcomeUnknown, noChecks: true},
		{name: "not settled: the thread lingers", linger: 1 << 20, check: func(context.Context) (bool, error) { return false, nil }, runs: 1,
			wantErr: failover.ErrCommitOutcomeUnknown, noChecks: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newRTPool(t, 2, "failOverReadOnly=false", func(h, seq int, m sqlmock.Sqlmock) {
				m.ExpectBegin()
				m.ExpectExec("INSERT INTO t VALUES (1)").WillReturnResult(sqlmock.NewResult(1, 1))
				if h == 0 && seq == 0 {
					m.ExpectCommit().WillReturnError(mysql.ErrInvalidConn)
				} else {
					m.ExpectCommit()
				}
			})
			p.net.TrackSockets(nil)
			p.net.Linger(0, tc.linger)
			first := uint32(0) // the server thread of the first run's session
			var r runs
			fn := func(tx *sql.Tx) error {
				r.n++
				_, err := tx.Exec("INSERT INTO t VALUES (1)")
				if r.n == 1 {
					first, _ = p.net.Conns(0)[0].Sock.Thread()
					if tc.gone {
						p.net.Set(0, fake.Refused(p.net.Addrs()[0]), nil) // H1 takes no new session: the pool moves
					}
				}
				return err
			}
			var killsSeen []uint32
			opts := &mysqlfailover.RunOptions{}
			if tc.check != nil {
				opts.Committed = func(ctx context.Context) (bool, error) {
					if tc.noChecks {
						t.Error("the commit check was asked before the outcome was settled")
					}
					killsSeen = p.net.Kills(0)
					if reads := p.net.ProcessReads(0); reads != tc.linger+1 {
						t.Errorf("the check was asked after %d reads of the process list, want %d (until the thread was gone)", reads, tc.linger+1)
					}
					return tc.check(ctx)
				}
			}
			err := mysqlfailover.RunInTx(context.Background(), p.db, opts, fn)
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Fatalf("RunInTx: %v, want %v", err, tc.wantErr)
			}
			if tc.wantErr != nil {
				var cu *failover.CommitUnknownError
				if !errors.Is(err, failover.ErrCommitOutcomeUnknown) || !errors.As(err, &cu) || cu.Settled != tc.settled || cu.Host != p.net.Addrs()[0] ||
					(cu.Why == nil) != tc.settled {
					t.Errorf("RunInTx: %v, want a *failover.CommitUnknownError for H1 with Settled %v", err, tc.settled)
				}
			}
			if tc.check != nil && !tc.noChecks && (len(killsSeen) != 1 || killsSeen[0] != first) {
				t.Errorf("when the check was asked, H1 had been asked to kill %v, want the first session's thread %d", killsSeen, first)
			}
			if tc.gone && len(p.net.Kills(0)) != 0 {
				t.Errorf("H1, gone, was asked to kill %v", p.net.Kills(0))
			}
			if r.n != tc.runs {
				t.Errorf("%d runs, want %d", r.n, tc.runs)
			}
			wantChecks := int64(1)
			if tc.check == nil || tc.noChecks {
				wantChecks = 0
			}
			if s := p.stats(); s.TxCommitChecks != wantChecks || s.TxReruns != int64(tc.runs-1) {
				t.Errorf("TxCommitChecks %d, TxReruns %d; want %d, %d", s.TxCommitChecks, s.TxReruns, wantChecks, tc.runs-1)
			}
		})
	}
}

// Errors that a rerun cannot cure go back at once: a data error, fn's own error, the
// caller's context.
func TestRunInTxNoRerun(t *testing.T) {
	own := errors.New("insufficient funds")
	for _, tc := range []struct {
		name string
		fn   func(tx *sql.Tx) error
		want error
	}{
		{"duplicate key", func(tx *sql.Tx) error { _, err := tx.Exec("INSERT INTO t VALUES (1)"); return err }, rtDup},
		{"fn's own error", func(tx *sql.Tx) error { return own }, own},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newRTPool(t, 2, "", func(h, seq int, m sqlmock.Sqlmock) {
				m.ExpectBegin()
				m.ExpectExec("INSERT INTO t VALUES (1)").WillReturnError(rtDup)
				m.ExpectRollback()
			})
			n := 0
			err := mysqlfailover.RunInTx(context.Background(), p.db, nil, func(tx *sql.Tx) error { n++; return tc.fn(tx) })
			if err != tc.want || n != 1 || p.stats().TxReruns != 0 {
				t.Errorf("RunInTx: %v after %d runs (%d reruns), want %v after 1", err, n, p.stats().TxReruns, tc.want)
			}
		})
	}
}

// Always a deadlock: ConflictAttempts runs, waits that double (each jittered between half
// and all of it, capped by MaxBackoff), then the last error wrapped with "gave up":
// errors.Is and SafeToRetry still see the deadlock.
func TestRunInTxGivesUp(t *testing.T) {
	p := newRTPool(t, 2, "", func(h, seq int, m sqlmock.Sqlmock) {
		for i := 0; i < 4; i++ {
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET a = 1").WillReturnError(rtDeadlock)
			m.ExpectRollback()
		}
	})
	var r runs
	opts := &mysqlfailover.RunOptions{ConflictAttempts: 4, Backoff: 40 * time.Millisecond, MaxBackoff: 100 * time.Millisecond}
	err := mysqlfailover.RunInTx(context.Background(), p.db, opts, r.fn("UPDATE t SET a = 1"))
	if !errors.Is(err, rtDeadlock) || !strings.Contains(err.Error(), "gave up after 4 attempts") ||
		mysqlfailover.SafeToRetry(err) != mysqlfailover.RetryTransaction {
		t.Fatalf("RunInTx: %v, want the deadlock wrapped with 'gave up after 4 attempts'", err)
	}
	if r.n != 4 {
		t.Errorf("%d runs, want 4", r.n)
	}
	evs := p.reruns()
	caps := []time.Duration{40 * time.Millisecond, 80 * time.Millisecond, 100 * time.Millisecond}
	if len(evs) != len(caps) {
		t.Fatalf("%d rerun events, want %d", len(evs), len(caps))
	}
	for i, e := range evs {
		if e.Duration < caps[i]/2 || e.Duration > caps[i] {
			t.Errorf("wait %d: %v, want in [%v, %v]", i+1, e.Duration, caps[i]/2, caps[i])
		}
	}
	if s := p.stats(); s.TxReruns != 3 || s.TxGaveUp != 1 {
		t.Errorf("TxReruns %d, TxGaveUp %d; want 3, 1", s.TxReruns, s.TxGaveUp)
	}
}

// The caller's context ends during a run that failed: no further run, and the error
// reaches both the context's error and the run's.
func TestRunInTxContextEnds(t *testing.T) {
	p := newRTPool(t, 2, "", func(h, seq int, m sqlmock.Sqlmock) {
		m.ExpectBegin()
		m.ExpectExec("UPDATE t SET a = 1").WillReturnError(rtDeadlock)
		m.ExpectRollback()
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	n := 0
	err := mysqlfailover.RunInTx(ctx, p.db, nil, func(tx *sql.Tx) error {
		n++
		_, err := tx.Exec("UPDATE t SET a = 1")
		cancel()
		return err
	})
	if !errors.Is(err, context.Canceled) || !errors.Is(err, rtDeadlock) || n != 1 {
		t.Errorf("RunInTx: %v after %d runs, want context.Canceled and the deadlock after 1", err, n)
	}
	if s := p.stats(); s.TxGaveUp != 1 || s.TxReruns != 0 {
		t.Errorf("TxGaveUp %d, TxReruns %d; want 1, 0", s.TxGaveUp, s.TxReruns)
	}
}

// A panic in fn rolls the transaction back and goes on; the pool's connection is free
// again.
func TestRunInTxPanic(t *testing.T) {
	p := newRTPool(t, 2, "", func(h, seq int, m sqlmock.Sqlmock) {
		m.ExpectBegin()
		m.ExpectRollback()
		m.ExpectExec("DO 1").WillReturnResult(sqlmock.NewResult(0, 0))
	})
	p.db.SetMaxOpenConns(1)
	func() {
		defer func() {
			if recover() != "boom" {
				t.Error("the panic did not go on")
			}
		}()
		_ = mysqlfailover.RunInTx(context.Background(), p.db, nil, func(*sql.Tx) error { panic("boom") })
	}()
	if _, err := p.db.Exec("DO 1"); err != nil {
		t.Fatalf("the pool after the panic: %v", err)
	}
	if err := p.net.Conns(0)[0].Mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
}

// Any *sql.DB works: one of go-sql-driver's errors reruns as well, uncounted.
func TestRunInTxOtherDriver(t *testing.T) {
	db, m, err := sqlmock.New(sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	m.ExpectBegin()
	m.ExpectExec("UPDATE t SET a = 1").WillReturnError(rtDeadlock)
	m.ExpectRollback()
	m.ExpectBegin()
	m.ExpectExec("UPDATE t SET a = 1").WillReturnResult(sqlmock.NewResult(0, 1))
	m.ExpectCommit()
	var r runs
	if err := mysqlfailover.RunInTx(context.Background(), db, &mysqlfailover.RunOptions{Backoff: time.Nanosecond}, r.fn("UPDATE t SET a = 1")); err != nil {
		t.Fatal(err)
	}
	if r.n != 2 {
		t.Errorf("%d runs, want 2", r.n)
	}
	if err := m.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
}

// The waits are jittered: nine waits at the same backoff are not all the same.
func TestRunInTxJitter(t *testing.T) {
	p := newRTPool(t, 2, "", func(h, seq int, m sqlmock.Sqlmock) {
		for i := 0; i < 10; i++ {
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET a = 1").WillReturnError(rtDeadlock)
			m.ExpectRollback()
		}
	})
	var r runs
	opts := &mysqlfailover.RunOptions{ConflictAttempts: 10, Backoff: time.Second, MaxBackoff: time.Second}
	_ = mysqlfailover.RunInTx(context.Background(), p.db, opts, r.fn("UPDATE t SET a = 1"))
	seen := map[time.Duration]bool{}
	for _, e := range p.reruns() {
		if e.Duration < 500*time.Millisecond || e.Duration > time.Second {
			t.Errorf("wait %v, want in [500ms, 1s]", e.Duration)
		}
		seen[e.Duration] = true
	}
	if len(p.reruns()) != 9 || len(seen) < 2 {
		t.Errorf("%d waits, %d distinct; want 9 waits, not all equal", len(p.reruns()), len(seen))
	}
}

// Under contention deadlocks repeat: RunInTx reruns a transaction the server rolled back
// (a deadlock, a lock wait timeout, failover.ErrTxRolledBack) until it commits, within
// ConflictAttempts (50 by default), not Attempts (5), which keeps bounding the reruns
// after failures of the connection. 12 deadlocks, a lock wait timeout and a refused
// statement after a deadlock, then a commit: 15 runs and nil; 6 lost connections in a
// row: gave up after Attempts (5), the conflicts before them not counted.
func TestRunInTxConflictsRerunUntilCommit(t *testing.T) {
	lockWait := &mysql.MySQLError{Number: 1205, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "Lock wait timeout exceeded; try restarting transaction"}
	t.Run("conflicts", func(t *testing.T) {
		p := newRTPool(t, 2, "", func(h, seq int, m sqlmock.Sqlmock) {
			if h != 0 {
				return
			}
			for i := 0; i < 12; i++ {
				m.ExpectBegin()
				m.ExpectExec("UPDATE t SET a = 1").WillReturnError(rtDeadlock)
				m.ExpectRollback()
			}
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET a = 1").WillReturnError(lockWait)
			m.ExpectRollback()
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET a = 1").WillReturnResult(sqlmock.NewResult(0, 1))
			m.ExpectCommit()
		})
		var r runs
		if err := mysqlfailover.RunInTx(fake.Context(t), p.db, nil, r.fn("UPDATE t SET a = 1")); err != nil {
			t.Fatalf("RunInTx after %d runs: %v, want nil: a transaction the server rolled back for a conflict runs until it commits", r.n, err)
		}
		if r.n != 14 {
			t.Errorf("%d runs, want 14", r.n)
		}
		if s := p.stats(); s.TxReruns != 13 || s.TxGaveUp != 0 {
			t.Errorf("TxReruns %d, TxGaveUp %d; want 13, 0", s.TxReruns, s.TxGaveUp)
		}
		if err := p.net.Conns(0)[0].Mock.ExpectationsWereMet(); err != nil {
			t.Error(err)
		}
	})
	t.Run("the default bound", func(t *testing.T) {
		p := newRTPool(t, 2, "", func(h, seq int, m sqlmock.Sqlmock) {
			for i := 0; i < 60; i++ {
				m.ExpectBegin()
				m.ExpectExec("UPDATE t SET a = 1").WillReturnError(rtDeadlock)
				m.ExpectRollback()
			}
		})
		var r runs
		err := mysqlfailover.RunInTx(fake.Context(t), p.db, nil, r.fn("UPDATE t SET a = 1"))
		if !errors.Is(err, rtDeadlock) || !strings.Contains(err.Error(), "gave up after 50 attempts") || r.n != 50 {
			t.Fatalf("RunInTx after %d runs: %v; want the deadlock, 'gave up after 50 attempts'", r.n, err)
		}
	})
	t.Run("failovers keep their bound", func(t *testing.T) {
		p := newRTPool(t, 2, "failOverReadOnly=false", func(h, seq int, m sqlmock.Sqlmock) {
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET a = 1").WillReturnError(rtDeadlock)
			m.ExpectRollback()
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET a = 1").WillReturnError(rtDeadlock)
			m.ExpectRollback()
			m.ExpectBegin()
			m.ExpectExec("UPDATE t SET a = 1").WillReturnError(mysql.ErrInvalidConn) // the session dies: the transaction is lost
		})
		var r runs
		err := mysqlfailover.RunInTx(fake.Context(t), p.db, &mysqlfailover.RunOptions{Attempts: 3}, r.fn("UPDATE t SET a = 1"))
		// Per host connection: 2 deadlocks, then a lost transaction; the third lost one
		// ends the runs (Attempts 3), the deadlocks not counted towards it.
		if !errors.Is(err, failover.ErrTxLost) || !strings.Contains(err.Error(), "gave up after") {
			t.Fatalf("RunInTx after %d runs: %v, want ErrTxLost and 'gave up'", r.n, err)
		}
		if r.n != 9 {
			t.Errorf("%d runs, want 9 (3 lost transactions, each after 2 deadlocks)", r.n)
		}
	})
}
