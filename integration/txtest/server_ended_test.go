package txtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Invariant one-host-per-transaction: a transaction the server rolled back while its session
// lived on is over. Without the driver's refusal, code that carries on after a deadlock
// commits the statements after it one by one (the server runs them in autocommit mode)
// and Commit returns nil; code that follows "run the statement again" after a 1205 that
// rolled back the whole transaction (innodb_rollback_on_timeout=ON) commits the retried
// statement without the earlier ones. Both leave a partial transaction. Node 1 runs with
// innodb_rollback_on_timeout=ON; node 2 (a read-only replica, locking reads only) with the
// default OFF, where a 1205 rolls back the statement alone and the transaction goes on.

// txRunner is a transaction of the victim's, opened either way the driver knows.
type txRunner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// victim opens the transaction kind ("sql.Tx" or "BEGIN" on a pinned connection) and
// returns it with its end (commit true: Commit or COMMIT).
func victim(ctx context.Context, t *testing.T, db *sql.DB, kind string) (txRunner, func(commit bool) error) {
	t.Helper()
	if kind == "sql.Tx" {
		tx, err := db.BeginTx(ctx, nil)
		must(t, err)
		return tx, func(commit bool) error {
			if commit {
				return tx.Commit()
			}
			return tx.Rollback()
		}
	}
	sc, err := db.Conn(ctx)
	must(t, err)
	t.Cleanup(func() { sc.Close() })
	_, err = sc.ExecContext(ctx, "BEGIN")
	must(t, err)
	return sc, func(commit bool) error {
		q := "ROLLBACK"
		if commit {
			q = "COMMIT"
		}
		_, err := sc.ExecContext(ctx, q)
		return err
	}
}

// wantRolledBack checks that err is the driver's error for a transaction the server
// rolled back with errno, and that SafeToRetry says to run the transaction again.
func wantRolledBack(t *testing.T, what string, err error, errno uint16) {
	t.Helper()
	var me *mysql.MySQLError
	if !errors.Is(err, failover.ErrTxRolledBack) || !errors.Is(err, failover.ErrTxLost) || !errors.As(err, &me) || me.Number != errno {
		t.Errorf("%s: %v, want ErrTxRolledBack (and ErrTxLost) wrapping the server's %d", what, err, errno)
	}
	if r := mysqlfailover.SafeToRetry(err); r != mysqlfailover.RetryTransaction {
		t.Errorf("%s: SafeToRetry = %v, want transaction", what, r)
	}
	notBadConn(t, what, err)
}

func TestServerEndedTransaction(t *testing.T) {
	c := harness.Start(t, 3, harness.WithNodeArgs(1, "--innodb-rollback-on-timeout=ON"))
	ctx := ctxT(t, 2*time.Minute)
	n1, n2 := c.Node(1), c.Node(2)
	must(t, n1.Exec(ctx, "CREATE TABLE app.acct (id INT PRIMARY KEY, v INT NOT NULL)"))
	must(t, n1.Exec(ctx, "CREATE TABLE app.log (id INT PRIMARY KEY)"))
	must(t, n1.Exec(ctx, "INSERT INTO app.acct SELECT seq, 0 FROM app.seq_1_to_100"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	db := openPool(t, c.DSN("readTimeout=10s&innodb_lock_wait_timeout=1")).db
	base := 0

	// The carry-on case: the victim of a deadlock goes on in the same transaction.
	for _, kind := range []string{"sql.Tx", "BEGIN"} {
		t.Run("deadlock-carry-on/"+kind, func(t *testing.T) {
			base += 1000
			a, b := base/1000, base/1000+50 // two rows of acct
			v, end := victim(ctx, t, db, kind)
			_, err := v.ExecContext(ctx, fmt.Sprintf("INSERT INTO log VALUES (%d)", base+1))
			must(t, err)
			_, err = v.ExecContext(ctx, "UPDATE acct SET v = v + 1 WHERE id = ?", a)
			must(t, err)

			// The other transaction is the heavier one: InnoDB rolls back the
			// transaction that changed fewer rows, the victim.
			other, err := db.BeginTx(ctx, nil)
			must(t, err)
			_, err = other.ExecContext(ctx, fmt.Sprintf("INSERT INTO log SELECT %d + seq FROM seq_100_to_119", base))
			must(t, err)
			_, err = other.ExecContext(ctx, "UPDATE acct SET v = v + 1 WHERE id = ?", b)
			must(t, err)
			blocked := make(chan error, 1)
			go func() {
				_, err := other.ExecContext(ctx, "UPDATE acct SET v = v + 1 WHERE id = ?", a)
				blocked <- err
			}()
			waitRunning(ctx, t, n1, "UPDATE acct")

			_, err = v.ExecContext(ctx, "UPDATE acct SET v = v + 1 WHERE id = ?", b)
			if me, ok := err.(*mysql.MySQLError); !ok || me.Number != 1213 {
				t.Fatalf("the victim's UPDATE: %v (%T), want go-sql-driver's deadlock error itself", err, err)
			}
			if r := mysqlfailover.SafeToRetry(err); r != mysqlfailover.RetryTransaction {
				t.Errorf("deadlock: SafeToRetry = %v, want transaction", r)
			}
			must(t, <-blocked)
			must(t, other.Commit())

			// Carrying on: refused, unsent; COMMIT returns the error, never nil.
			_, err = v.ExecContext(ctx, fmt.Sprintf("INSERT INTO log VALUES (%d)", base+2))
			wantRolledBack(t, "INSERT after the deadlock", err, 1213)
			wantRolledBack(t, "COMMIT after the deadlock", end(true), 1213)
			if got := count(ctx, t, n1, fmt.Sprintf("log WHERE id IN (%d, %d)", base+1, base+2)); got != 0 {
				t.Errorf("node 1 has %d of the victim's log rows, want 0: a partial transaction committed", got)
			}
			if va, err := n1.QueryInt(ctx, "SELECT v FROM app.acct WHERE id = ?", a); err != nil || va != 1 {
				t.Errorf("acct %d: v = %d (%v), want 1 (the other transaction's UPDATE alone)", a, va, err)
			}
			// The connection is fine for the next transaction, on the same session.
			_, err = v.ExecContext(ctx, "SELECT 1")
			if kind == "BEGIN" {
				must(t, err)
			}
		})
	}

	// The partial-transaction case: a 1205 under innodb_rollback_on_timeout=ON rolled the
	// whole transaction back; "run the statement again" must not commit it alone.
	for _, kind := range []string{"sql.Tx", "BEGIN"} {
		t.Run("lock-wait-timeout-whole-transaction/"+kind, func(t *testing.T) {
			base += 1000
			row := base/1000 + 20
			holder, err := db.BeginTx(ctx, nil)
			must(t, err)
			_, err = holder.ExecContext(ctx, "UPDATE acct SET v = v + 1 WHERE id = ?", row)
			must(t, err)

			v, end := victim(ctx, t, db, kind)
			_, err = v.ExecContext(ctx, fmt.Sprintf("INSERT INTO log VALUES (%d)", base+1))
			must(t, err)
			const upd = "UPDATE acct SET v = v + 10 WHERE id = ?"
			_, err = v.ExecContext(ctx, upd, row)
			wantRolledBack(t, "the UPDATE that timed out", err, 1205)
			must(t, holder.Rollback())

			// The old advice (RetryStatement): run the UPDATE again, then commit.
			_, err = v.ExecContext(ctx, upd, row)
			wantRolledBack(t, "the UPDATE again", err, 1205)
			wantRolledBack(t, "COMMIT", end(true), 1205)
			if got := count(ctx, t, n1, fmt.Sprintf("log WHERE id = %d", base+1)); got != 0 {
				t.Errorf("node 1 has the INSERT before the timeout (%d rows), want none", got)
			}
			if val, err := n1.QueryInt(ctx, "SELECT v FROM app.acct WHERE id = ?", row); err != nil || val != 0 {
				t.Errorf("acct %d: v = %d (%v), want 0: the retried UPDATE committed alone", row, val, err)
			}
		})
	}

	// innodb_rollback_on_timeout=OFF (node 2): the 1205 rolled back the statement alone;
	// it passes through as go-sql-driver returns it and the transaction goes on.
	// A table of node 2's own (replication does not know it), written there while its
	// read_only is off.
	t.Run("lock-wait-timeout-statement-only", func(t *testing.T) {
		must(t, n2.SetReadOnly(ctx, false))
		defer func() { must(t, n2.SetReadOnly(ctx, true)) }()
		must(t, n2.Exec(ctx, "CREATE TABLE app.own (id INT PRIMARY KEY, v INT NOT NULL)"))
		must(t, n2.Exec(ctx, "INSERT INTO app.own SELECT seq, 0 FROM app.seq_1_to_10"))
		db2 := openPool(t, c.HostDSN(2, "readTimeout=10s&innodb_lock_wait_timeout=1")).db
		holder, err := db2.BeginTx(ctx, nil)
		must(t, err)
		defer holder.Rollback()
		_, err = holder.ExecContext(ctx, "UPDATE own SET v = 1 WHERE id = 5")
		must(t, err)
		tx, err := db2.BeginTx(ctx, nil)
		must(t, err)
		_, err = tx.ExecContext(ctx, "UPDATE own SET v = 2 WHERE id = 6")
		must(t, err)
		_, err = tx.ExecContext(ctx, "UPDATE own SET v = 2 WHERE id = 5")
		if me, ok := err.(*mysql.MySQLError); !ok || me.Number != 1205 {
			t.Fatalf("the locked UPDATE: %v (%T), want the 1205 itself", err, err)
		}
		if r := mysqlfailover.SafeToRetry(err); r != mysqlfailover.RetryStatement {
			t.Errorf("SafeToRetry = %v, want statement", r)
		}
		_, err = tx.ExecContext(ctx, "UPDATE own SET v = 2 WHERE id = 7")
		must(t, err)
		must(t, tx.Commit())
		if v, err := n2.QueryInt(ctx, "SELECT SUM(v) FROM app.own"); err != nil || v != 4 {
			t.Errorf("node 2: SUM(v) = %d (%v), want 4: both UPDATEs around the timeout committed", v, err)
		}
	})
}
