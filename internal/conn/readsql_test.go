package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// TestFailedReadMayRunAgain: a statement that was sent and failed with the host is a
// FailoverError with MaybeExecuted; it says Read when the statement was a plain SELECT
// outside any transaction (run directly, prepared, or failing while its rows are read),
// never for a write, a locking read, or a SELECT inside a transaction (which is lost:
// ErrTxLost).
func TestFailedReadMayRunAgain(t *testing.T) {
	const sel, lock, ins = "SELECT id FROM t", "SELECT id FROM t FOR UPDATE", "INSERT INTO t VALUES(1)"
	failedOn := func(t *testing.T, err error) *failover.FailoverError {
		t.Helper()
		fe := wantFailover(t, err, h1, h2, true)
		if errors.Is(err, failover.ErrTxLost) {
			t.Errorf("%v matches ErrTxLost outside a transaction", err)
		}
		return fe
	}
	queryFails := func(q string) step {
		return func(m sqlmock.Sqlmock) { m.ExpectQuery(q).WillReturnError(mysql.ErrInvalidConn) }
	}
	for _, tc := range []struct {
		name string
		q    string
		want bool
	}{{"a read", sel, true}, {"a locking read", lock, false}} {
		t.Run("query: "+tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			e.script(0, queryFails(tc.q))
			e.script(1, ok(setReadOnly))
			c := e.open(seqA)
			e.refuse(0)
			_, err := c.QueryContext(context.Background(), tc.q, nil)
			if fe := failedOn(t, err); fe.Read != tc.want {
				t.Errorf("%s: Read = %v, want %v", tc.q, fe.Read, tc.want)
			}
		})
	}
	t.Run("exec: a write", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, fails(ins, mysql.ErrInvalidConn))
		e.script(1, ok(setReadOnly))
		c := e.open(seqA)
		e.refuse(0)
		if fe := failedOn(t, exec(c, ins)); fe.Read {
			t.Errorf("%s: Read = true", ins)
		}
	})
	t.Run("prepared read", func(t *testing.T) {
		const q = "SELECT id FROM t WHERE id = ?"
		e := newEnv(t, 2)
		e.script(0, func(m sqlmock.Sqlmock) {
			m.ExpectPrepare(q).WillBeClosed().ExpectQuery().WithArgs(int64(1)).WillReturnError(mysql.ErrInvalidConn)
		})
		e.script(1, ok(setReadOnly))
		c := e.open(seqA)
		e.refuse(0)
		s := prepare(t, c, q)
		defer s.Close()
		_, err := s.(driver.StmtQueryContext).QueryContext(context.Background(), []driver.NamedValue{{Ordinal: 1, Value: int64(1)}})
		if fe := failedOn(t, err); !fe.Read {
			t.Errorf("prepared %s: Read = false", q)
		}
	})
	t.Run("rows of a read", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, query(sel, idRows(3, 1, mysql.ErrInvalidConn, nil)))
		e.script(1, ok(setReadOnly))
		c := e.open(seqA)
		e.refuse(0)
		rows := mustQuery(t, c, sel)
		dest := make([]driver.Value, 1)
		if err := rows.Next(dest); err != nil {
			t.Fatal(err)
		}
		err := rows.Next(dest)
		_ = rows.Close()
		if fe := failedOn(t, err); !fe.Read {
			t.Errorf("rows of %s: Read = false", sel)
		}
	})
	t.Run("a read inside a transaction", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(begin(), queryFails(sel)))
		e.script(1, ok(setReadOnly))
		c := e.open(seqA)
		e.refuse(0)
		if _, err := c.BeginTx(context.Background(), driver.TxOptions{}); err != nil {
			t.Fatal(err)
		}
		_, err := c.QueryContext(context.Background(), sel, nil)
		var fe *failover.FailoverError
		if !errors.Is(err, failover.ErrTxLost) || !errors.As(err, &fe) || fe.Read {
			t.Errorf("a read in a transaction: %v (Read %v), want ErrTxLost and Read false", err, fe != nil && fe.Read)
		}
	})
	t.Run("a read after a write with autocommit off", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(ok("SET autocommit = 0"), ok(ins), queryFails(sel)))
		e.script(1, all(ok(setReadOnly), ok("SET autocommit = 0")))
		c := e.open(seqA)
		e.refuse(0)
		mustExec(t, c, "SET autocommit = 0")
		mustExec(t, c, ins)
		_, err := c.QueryContext(context.Background(), sel, nil)
		var fe *failover.FailoverError
		if !errors.Is(err, failover.ErrTxLost) || !errors.As(err, &fe) || fe.Read {
			t.Errorf("a read after a write with autocommit off: %v, want ErrTxLost and Read false", err)
		}
	})
}
