package mysqlfailover_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// TestSafeToRetryAfterUnknownCommit (a second path beside TestSafeToRetry's table): the
// errors the driver itself returns when a commit's outcome is unknown, read by
// SafeToRetry as a user would, are never safe to run again, also where they say more
// than "outcome unknown": a multi-statement query with a COMMIT in it, whose transaction
// is lost too (failover.ErrTxLost: running the transaction again could commit it
// twice), and XA COMMIT after XA PREPARE whose request provably was not sent (no
// MaybeExecuted: the prepared transaction survives on the failed host, and commits
// there once XA COMMIT reaches it).
func TestSafeToRetryAfterUnknownCommit(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params string
		steps  []string // run on H1 before the failure
		commit string   // the statement that fails
		err    error    // how it fails: sent (mysql.ErrInvalidConn) or not (broken before it)
		lost   bool     // the error also matches failover.ErrTxLost
	}{
		{"a batch with COMMIT", "multiStatements=true", []string{"BEGIN"}, "UPDATE t SET v = 1; COMMIT", mysql.ErrInvalidConn, true},
		{"XA COMMIT not sent", "", []string{"XA START 'x'", "UPDATE t SET v = 1", "XA END 'x'", "XA PREPARE 'x'"}, "XA COMMIT 'x'", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			p := newPool(t, 2, tc.params)
			p.net.Script(0, func(seq int, m sqlmock.Sqlmock) {
				if seq > 0 {
					return // the same-host check's new session
				}
				for _, q := range tc.steps {
					m.ExpectExec(q).WillReturnResult(sqlmock.NewResult(0, 0))
				}
				if tc.err != nil {
					m.ExpectExec(tc.commit).WillReturnError(tc.err)
				}
			})
			sc, err := p.db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer sc.Close()
			for _, q := range tc.steps {
				if _, err := sc.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			if tc.err == nil {
				// go-sql-driver found the connection closed before it wrote anything
				// (its context watcher closed it): driver.ErrBadConn, nothing sent.
				p.net.Conns(0)[0].Broken.Store(true)
			}
			_, err = sc.ExecContext(ctx, tc.commit)
			if !errors.Is(err, failover.ErrCommitOutcomeUnknown) {
				t.Fatalf("%s failed with %v, want failover.ErrCommitOutcomeUnknown", tc.commit, err)
			}
			if got := errors.Is(err, failover.ErrTxLost); got != tc.lost {
				t.Fatalf("the error matches failover.ErrTxLost: %v, want %v (%v)", got, tc.lost, err)
			}
			var fe *failover.FailoverError
			if !errors.As(err, &fe) || fe.MaybeExecuted != (tc.err != nil) {
				t.Fatalf("%v: want a *failover.FailoverError with MaybeExecuted %v", err, tc.err != nil)
			}
			if r := mysqlfailover.SafeToRetry(err); r != mysqlfailover.RetryNothing {
				t.Fatalf("SafeToRetry(%v) = %v, want nothing: the commit may have happened", err, r)
			}
		})
	}
}

// TestSafeToRetryGaleraLostPrimary: through database/sql, as a user gets it, an autocommit
// INSERT whose commit a Galera node could not replicate because it left the Primary
// component (1180 "Not connected to Primary Component") returns a *failover.FailoverError
// that may have run, never the raw 1180: the other nodes may have committed it, so
// SafeToRetry says run nothing, and neither database/sql nor the driver ran it again.
// The connection has left the node: its next statement runs on the other one.
func TestSafeToRetryGaleraLostPrimary(t *testing.T) {
	const ins = "INSERT INTO t VALUES(1)"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	p := newPool(t, 2, "")
	for i := range 2 {
		p.net.Galera(i, "synced", "9c5d6b3e-1f0a-11ef-8e2b-5bd7a1c0d0a1", 2)
	}
	p.net.Script(0, func(seq int, m sqlmock.Sqlmock) {
		if seq == 0 {
			m.ExpectExec(ins).WillReturnError(fake.LostPrimaryError)
		}
	})
	p.net.Script(1, func(_ int, m sqlmock.Sqlmock) {
		m.ExpectQuery("SELECT @@port").WillReturnRows(sqlmock.NewRows([]string{"port"}).AddRow(3302))
	})
	sc, err := p.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	_, err = sc.ExecContext(ctx, ins)
	var fe *failover.FailoverError
	var me *mysql.MySQLError
	if !errors.As(err, &fe) || !fe.MaybeExecuted || !errors.As(err, &me) || me.Number != 1180 {
		t.Fatalf("INSERT failed with %v (%T), want a *failover.FailoverError that may have run, wrapping the 1180", err, err)
	}
	if r := mysqlfailover.SafeToRetry(err); r != mysqlfailover.RetryNothing {
		t.Errorf("SafeToRetry(%v) = %v, want nothing: the other nodes may have committed it", err, r)
	}
	if r := mysqlfailover.SafeToRetry(fake.LostPrimaryError); r != mysqlfailover.RetryNothing {
		t.Errorf("SafeToRetry(the raw 1180) = %v, want nothing", r)
	}
	if port, err := p.port(ctx, sc); err != nil || port != 3302 {
		t.Errorf("next statement on port %d (%v), want the second node's 3302", port, err)
	}
	if n := len(p.net.Conns(0)); n != 1 {
		t.Errorf("%d connections to the first node, want 1: nothing may run there again", n)
	}
}

// TestSafeToRetryAfterFailedRead: a statement sent before its connection failed may
// have run, so SafeToRetry says RetryNothing, except for a read (a plain SELECT outside
// a transaction), which changes nothing when it runs again: RetryStatement, from the
// error the driver returns through database/sql. A locking read and a write stay
// RetryNothing.
func TestSafeToRetryAfterFailedRead(t *testing.T) {
	for _, tc := range []struct {
		q     string
		query bool
		want  mysqlfailover.Retry
	}{
		{"SELECT id FROM t WHERE k = 1", true, mysqlfailover.RetryStatement},
		{"SELECT id FROM t WHERE k = 1 FOR UPDATE", true, mysqlfailover.RetryNothing},
		{"SELECT GET_LOCK('k', 1)", true, mysqlfailover.RetryNothing},
		{"UPDATE t SET v = 1", false, mysqlfailover.RetryNothing},
	} {
		t.Run(tc.q, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			p := newPool(t, 2, "")
			p.net.Script(0, func(seq int, m sqlmock.Sqlmock) {
				if seq > 0 {
					return // the same-host check's new session
				}
				if tc.query {
					m.ExpectQuery(tc.q).WillReturnError(mysql.ErrInvalidConn)
				} else {
					m.ExpectExec(tc.q).WillReturnError(mysql.ErrInvalidConn)
				}
			})
			var err error
			if tc.query {
				var id int
				err = p.db.QueryRowContext(ctx, tc.q).Scan(&id)
			} else {
				_, err = p.db.ExecContext(ctx, tc.q)
			}
			var fe *failover.FailoverError
			if !errors.As(err, &fe) || !fe.MaybeExecuted {
				t.Fatalf("%s: %v, want a *failover.FailoverError with MaybeExecuted", tc.q, err)
			}
			if r := mysqlfailover.SafeToRetry(err); r != tc.want {
				t.Errorf("SafeToRetry(%v) = %v, want %v", err, r, tc.want)
			}
		})
	}
}
