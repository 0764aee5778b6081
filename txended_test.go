package mysqlfailover_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
)

// A single-host DSN whose host has the wrong role returns the
// NoHostAvailableError, which names the host and its role, not a bare role error; nothing
// was sent, so SafeToRetry says RetryStatement.
func TestSingleHostWrongRole(t *testing.T) {
	p := newPool(t, 1, "targetSessionAttrs=read-write")
	p.net.SetReadOnly(0, true)
	_, err := p.db.ExecContext(context.Background(), "DO 1")
	var nh *failover.NoHostAvailableError
	if !errors.As(err, &nh) {
		t.Fatalf("Exec: %v (%T), want a *failover.NoHostAvailableError", err, err)
	}
	addr := p.net.Addrs()[0]
	if !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "role is") || !strings.Contains(err.Error(), "read-write") {
		t.Errorf("Exec: %q does not name the host %s, its role and the wanted one", err, addr)
	}
	if r := mysqlfailover.SafeToRetry(err); r != mysqlfailover.RetryStatement {
		t.Errorf("SafeToRetry = %v, want statement", r)
	}
	p.net.SetReadOnly(0, false)
	if _, err := p.db.ExecContext(context.Background(), "DO 1"); err != nil {
		t.Fatalf("Exec once the host is writable: %v", err)
	}
}

// Through the driver: SafeToRetry says RetryTransaction for the 1205 that
// rolled back the whole transaction and for the statements refused after it, and the
// errors reach the server's.
func TestServerEndedSafeToRetry(t *testing.T) {
	lockWait := &mysql.MySQLError{Number: 1205, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "Lock wait timeout exceeded; try restarting transaction"}
	p := newPool(t, 1, "")
	p.net.Script(0, func(_ int, m sqlmock.Sqlmock) {
		m.ExpectBegin()
		m.ExpectExec("INSERT INTO t VALUES (1)").WillReturnResult(sqlmock.NewResult(1, 1))
		m.ExpectExec("UPDATE t SET a = 2").WillReturnError(lockWait)
		m.ExpectQuery("SELECT @@in_transaction").WillReturnRows(sqlmock.NewRows([]string{"@@in_transaction"}).AddRow(int64(0)))
		m.ExpectRollback()
	})
	ctx := context.Background()
	tx, err := p.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO t VALUES (1)"); err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(ctx, "UPDATE t SET a = 2")
	var me *mysql.MySQLError
	if r := mysqlfailover.SafeToRetry(err); r != mysqlfailover.RetryTransaction || !errors.As(err, &me) || me.Number != 1205 {
		t.Errorf("UPDATE: %v: SafeToRetry = %v, want transaction and the 1205 inside", err, r)
	}
	_, err = tx.ExecContext(ctx, "UPDATE t SET a = 2") // following the old advice: refused
	if r := mysqlfailover.SafeToRetry(err); r != mysqlfailover.RetryTransaction || !errors.Is(err, failover.ErrTxRolledBack) {
		t.Errorf("UPDATE again: %v: SafeToRetry = %v, want transaction", err, r)
	}
	if err := tx.Commit(); mysqlfailover.SafeToRetry(err) != mysqlfailover.RetryTransaction {
		t.Errorf("Commit: %v, want an error, SafeToRetry transaction", err)
	}
	if err := p.net.Conns(0)[0].Mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
}
