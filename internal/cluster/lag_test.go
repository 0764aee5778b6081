package cluster_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

var mockSeq atomic.Int64

// mockConn is one go-sqlmock connection as a driver.Conn, as fake.Net dials them, with
// queries matched exactly and in order; the test fails if an expectation is left unmet.
func mockConn(t *testing.T) (driver.Conn, sqlmock.Sqlmock) {
	t.Helper()
	dsn := fmt.Sprintf("lag-%d", mockSeq.Add(1))
	db, mock, err := sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual))
	if err != nil {
		t.Fatal(err)
	}
	conn, err := db.Driver().Open(dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := mock.ExpectationsWereMet(); err != nil {
			t.Error(err)
		}
		_ = conn.Close()
		_ = db.Close()
	})
	return conn, mock
}

// Server errors as go-sql-driver returns them (messages of MariaDB 10.11 and MySQL 8).
var (
	errParse = &mysql.MySQLError{Number: 1064, SQLState: [5]byte{'4', '2', '0', '0', '0'},
		Message: "You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near 'REPLICA STATUS' at line 1"}
	errDenied = &mysql.MySQLError{Number: 1227, SQLState: [5]byte{'4', '2', '0', '0', '0'},
		Message: "Access denied; you need (at least one of) the SUPER, SLAVE MONITOR privilege(s) for this operation"}
	errNoVar = &mysql.MySQLError{Number: 1193, SQLState: [5]byte{'H', 'Y', '0', '0', '0'},
		Message: "Unknown system variable 'last_gtid'"}
	errNoTable = &mysql.MySQLError{Number: 1146, SQLState: [5]byte{'4', '2', 'S', '0', '2'},
		Message: "Table 'x.y' doesn't exist"}
)

// statusCols is the part of SHOW REPLICA STATUS that ReadLag looks at, MariaDB's names
// (MySQL 8.0.22+ says Replica_* and Seconds_Behind_Source), with a column around them.
var statusCols = []string{"Slave_IO_State", "Slave_IO_Running", "Slave_SQL_Running", "Last_IO_Errno",
	"Last_SQL_Errno", "Seconds_Behind_Master", "Connection_name"}

func statusRow(io, sqlRunning string, ioErr, sqlErr int64, lag driver.Value) []driver.Value {
	return []driver.Value{[]byte("Waiting for master to send event"), []byte(io), []byte(sqlRunning), ioErr, sqlErr, lag, []byte("")}
}

func TestReadLag(t *testing.T) {
	mysql8 := []string{"Replica_IO_State", "Replica_IO_Running", "Replica_SQL_Running", "Seconds_Behind_Source", "Channel_Name"}
	type step struct {
		query string
		rows  *sqlmock.Rows // nil: err
		err   error
	}
	rows := func(cols []string, vals ...[]driver.Value) *sqlmock.Rows {
		return sqlmock.NewRows(cols).AddRows(vals...)
	}
	for _, tc := range []struct {
		name    string
		old     bool
		steps   []step
		lag     time.Duration
		reason  []string // substrings of the reason; nil: known
		notIn   string   // must not be in the reason
		useOld  bool
		wantErr error
	}{
		{name: "MariaDB replica, int64 as go-sql-driver 1.10 parses it",
			steps: []step{{query: cluster.ReplicaStatusQuery, rows: rows(statusCols, statusRow("Yes", "Yes", 0, 0, int64(12)))}},
			lag:   12 * time.Second},
		{name: "text protocol []byte",
			steps: []step{{query: cluster.ReplicaStatusQuery, rows: rows(statusCols, statusRow("Yes", "Yes", 0, 0, []byte("7")))}},
			lag:   7 * time.Second},
		{name: "MySQL 8 channels: the largest",
			steps: []step{{query: cluster.ReplicaStatusQuery, rows: rows(mysql8,
				[]driver.Value{[]byte("x"), []byte("Yes"), []byte("Yes"), int64(3), []byte("")},
				[]driver.Value{[]byte("x"), []byte("Yes"), []byte("Yes"), int64(40), []byte("a")},
				[]driver.Value{[]byte("x"), []byte("Yes"), []byte("Yes"), int64(5), []byte("b")})}},
			lag: 40 * time.Second},
		{name: "column name in other case, string and uint64 values",
			steps: []step{{query: cluster.ReplicaStatusQuery, rows: rows([]string{"SECONDS_BEHIND_MASTER"},
				[]driver.Value{"2"}, []driver.Value{uint64(9)})}},
			lag: 9 * time.Second},
		{name: "huge lag saturates",
			steps: []step{{query: cluster.ReplicaStatusQuery, rows: rows([]string{"Seconds_Behind_Master"},
				[]driver.Value{[]byte("99999999999999999")}, []driver.Value{int64(1)})}},
			lag: math.MaxInt64},
		{name: "zero lag",
			steps: []step{{query: cluster.ReplicaStatusQuery, rows: rows(statusCols, statusRow("Yes", "Yes", 0, 0, int64(0)))}},
			lag:   0},
		{name: "one channel stopped: unknown",
			steps: []step{{query: cluster.ReplicaStatusQuery, rows: rows(statusCols,
				statusRow("Yes", "Yes", 0, 0, int64(1)),
				statusRow("No", "Yes", 2003, 0, nil),
				statusRow("Yes", "No", 0, 1396, nil))}},
			lag:    cluster.LagUnknown,
			reason: []string{"replica lag unknown: replication is not running", "Seconds_Behind_Master is NULL", "Slave_IO_Running=No", "Slave_SQL_Running=Yes", "Last_IO_Errno=2003"},
			notIn:  "Last_SQL_Errno"},
		{name: "source gone: the IO thread reconnects, the SQL thread runs",
			steps:  []step{{query: cluster.ReplicaStatusQuery, rows: rows(statusCols, statusRow("Connecting", "Yes", 2003, 0, nil))}},
			lag:    cluster.LagUnknown,
			reason: []string{"replica lag unknown: replication is reconnecting to its source", "Slave_IO_Running=Connecting", "Last_IO_Errno=2003"}},
		{name: "reconnecting with the SQL thread stopped",
			steps:  []step{{query: cluster.ReplicaStatusQuery, rows: rows(statusCols, statusRow("Connecting", "No", 2003, 1062, nil))}},
			lag:    cluster.LagUnknown,
			reason: []string{"replica lag unknown: replication is not running", "Slave_SQL_Running=No"}},
		{name: "MySQL 8 stopped",
			steps: []step{{query: cluster.ReplicaStatusQuery, rows: rows(mysql8,
				[]driver.Value{[]byte(""), []byte("No"), []byte("No"), nil, []byte("")})}},
			lag:    cluster.LagUnknown,
			reason: []string{"Replica_IO_Running=No, Replica_SQL_Running=No)"}},
		{name: "not a replica",
			steps:  []step{{query: cluster.ReplicaStatusQuery, rows: rows(statusCols)}},
			lag:    cluster.LagUnknown,
			reason: []string{"replica lag unknown: not a replica (SHOW REPLICA STATUS returned no rows)"}},
		{name: "old server: 1064, then SHOW SLAVE STATUS",
			steps: []step{{query: cluster.ReplicaStatusQuery, err: errParse},
				{query: cluster.SlaveStatusQuery, rows: rows(statusCols, statusRow("Yes", "Yes", 0, 0, []byte("3")))}},
			lag: 3 * time.Second, useOld: true},
		{name: "old remembered",
			old:   true,
			steps: []step{{query: cluster.SlaveStatusQuery, rows: rows(statusCols, statusRow("Yes", "Yes", 0, 0, int64(4)))}},
			lag:   4 * time.Second, useOld: true},
		{name: "old remembered, server upgraded past SHOW SLAVE STATUS",
			old: true,
			steps: []step{{query: cluster.SlaveStatusQuery, err: errParse},
				{query: cluster.ReplicaStatusQuery, rows: rows(mysql8, []driver.Value{[]byte(""), []byte("Yes"), []byte("Yes"), int64(5), []byte("")})}},
			lag: 5 * time.Second},
		{name: "neither form",
			steps:  []step{{query: cluster.ReplicaStatusQuery, err: errParse}, {query: cluster.SlaveStatusQuery, err: errParse}},
			lag:    cluster.LagUnknown,
			reason: []string{"replica lag unknown: SHOW SLAVE STATUS: Error 1064"},
			useOld: true},
		{name: "no privilege",
			steps:  []step{{query: cluster.ReplicaStatusQuery, err: errDenied}},
			lag:    cluster.LagUnknown,
			reason: []string{"lacks the privilege", "REPLICA MONITOR", "SLAVE MONITOR", "MariaDB 10.5.9+", "REPLICATION SLAVE ADMIN", "REPLICATION CLIENT", "Error 1227"}},
		{name: "no privilege, old server",
			steps:  []step{{query: cluster.ReplicaStatusQuery, err: errParse}, {query: cluster.SlaveStatusQuery, err: errDenied}},
			lag:    cluster.LagUnknown,
			reason: []string{"lacks the privilege", "REPLICATION CLIENT"},
			useOld: true},
		{name: "another server error",
			steps:  []step{{query: cluster.ReplicaStatusQuery, err: errNoTable}},
			lag:    cluster.LagUnknown,
			reason: []string{"replica lag unknown: SHOW REPLICA STATUS: Error 1146 (42S02): Table 'x.y' doesn't exist"}},
		{name: "no lag column",
			steps:  []step{{query: cluster.ReplicaStatusQuery, rows: rows([]string{"Slave_IO_State"}, []driver.Value{[]byte("x")})}},
			lag:    cluster.LagUnknown,
			reason: []string{"no Seconds_Behind_Master or Seconds_Behind_Source column"}},
		{name: "not a number",
			steps:  []step{{query: cluster.ReplicaStatusQuery, rows: rows([]string{"Seconds_Behind_Master"}, []driver.Value{[]byte("soon")})}},
			lag:    cluster.LagUnknown,
			reason: []string{`not a number of seconds: "soon"`}},
		{name: "negative",
			steps:  []step{{query: cluster.ReplicaStatusQuery, rows: rows([]string{"Seconds_Behind_Master"}, []driver.Value{int64(-3)})}},
			lag:    cluster.LagUnknown,
			reason: []string{`not a number of seconds: "-3"`}},
		{name: "unexpected type",
			steps:  []step{{query: cluster.ReplicaStatusQuery, rows: rows([]string{"Seconds_Behind_Master"}, []driver.Value{1.5})}},
			lag:    cluster.LagUnknown,
			reason: []string{`not a number of seconds: "1.5"`}},
		{name: "broken connection: the error as is",
			steps:   []step{{query: cluster.ReplicaStatusQuery, err: mysql.ErrInvalidConn}},
			lag:     cluster.LagUnknown,
			wantErr: mysql.ErrInvalidConn},
		{name: "broken connection after 1064",
			steps:   []step{{query: cluster.ReplicaStatusQuery, err: errParse}, {query: cluster.SlaveStatusQuery, err: driver.ErrBadConn}},
			lag:     cluster.LagUnknown,
			useOld:  true,
			wantErr: driver.ErrBadConn},
		{name: "broken while reading rows",
			steps: []step{{query: cluster.ReplicaStatusQuery, rows: rows(statusCols,
				statusRow("Yes", "Yes", 0, 0, int64(1)), statusRow("Yes", "Yes", 0, 0, int64(2))).RowError(1, io.ErrUnexpectedEOF)}},
			lag:     cluster.LagUnknown,
			wantErr: io.ErrUnexpectedEOF},
		{name: "broken at close",
			steps: []step{{query: cluster.ReplicaStatusQuery, rows: rows(statusCols,
				statusRow("Yes", "Yes", 0, 0, int64(1))).CloseError(mysql.ErrInvalidConn)}},
			lag:     cluster.LagUnknown,
			wantErr: mysql.ErrInvalidConn},
		{name: "server error at close",
			steps: []step{{query: cluster.ReplicaStatusQuery, rows: rows(statusCols,
				statusRow("Yes", "Yes", 0, 0, int64(1))).CloseError(errNoTable)}},
			lag:    cluster.LagUnknown,
			reason: []string{"Error 1146"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, mock := mockConn(t)
			for _, s := range tc.steps {
				e := mock.ExpectQuery(s.query)
				if s.rows == nil {
					e.WillReturnError(s.err)
				} else {
					e.WillReturnRows(s.rows).RowsWillBeClosed()
				}
			}
			lag, reason, useOld, err := cluster.ReadLag(context.Background(), conn, tc.old)
			if lag != tc.lag || useOld != tc.useOld || err != tc.wantErr {
				t.Errorf("ReadLag = %v, %q, %v, %v; want %v, useOld %v, error %v", lag, reason, useOld, err, tc.lag, tc.useOld, tc.wantErr)
			}
			if (reason == "") != (tc.reason == nil) {
				t.Errorf("reason %q, want one containing %q", reason, tc.reason)
			}
			for _, s := range tc.reason {
				if !strings.Contains(reason, s) {
					t.Errorf("reason %q lacks %q", reason, s)
				}
			}
			if tc.notIn != "" && strings.Contains(reason, tc.notIn) {
				t.Errorf("reason %q has %q", reason, tc.notIn)
			}
			if err != nil && reason != "" {
				t.Errorf("both an error and a reason")
			}
		})
	}
}

// stubConn answers every query with its rows or err, and counts the queries.
type stubConn struct {
	driver.Conn
	rows    *stubRows
	err     error
	queries []string
	ctx     context.Context
}

func (c *stubConn) QueryContext(ctx context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	c.queries = append(c.queries, q)
	c.ctx = ctx
	if c.err != nil {
		return nil, c.err
	}
	return c.rows, nil
}

// stubRows returns its rows, counts the calls to Next and Close, and (shared) writes
// every []byte value into one buffer, reused by the next call of Next, as go-sql-driver
// reuses its read buffer.
type stubRows struct {
	cols   []string
	vals   [][]driver.Value
	shared bool
	buf    []byte
	nexts  int
	closes int
}

func (r *stubRows) Columns() []string { return r.cols }
func (r *stubRows) Close() error      { r.closes++; return nil }
func (r *stubRows) Next(dest []driver.Value) error {
	r.nexts++
	if r.shared {
		for i := range r.buf {
			r.buf[i] = '#'
		}
	}
	if r.nexts > len(r.vals) {
		return io.EOF
	}
	copy(dest, r.vals[r.nexts-1])
	for i, v := range dest {
		if b, ok := v.([]byte); ok && r.shared {
			r.buf = append(r.buf[:0], b...)
			dest[i] = r.buf
		}
	}
	return nil
}

func TestReadLagReadsAllRowsAndCloses(t *testing.T) {
	r := &stubRows{cols: []string{"Seconds_Behind_Master"},
		vals: [][]driver.Value{{nil}, {int64(1)}, {[]byte("x")}, {int64(3)}}}
	lag, reason, _, err := cluster.ReadLag(context.Background(), &stubConn{rows: r}, false)
	if lag != cluster.LagUnknown || !strings.Contains(reason, "NULL") || err != nil {
		t.Errorf("ReadLag = %v, %q, %v; want unknown for the NULL", lag, reason, err)
	}
	if r.nexts != 5 || r.closes != 1 {
		t.Errorf("Next called %d times, Close %d; want 5 (4 rows and EOF) and 1", r.nexts, r.closes)
	}
}

func TestReadLagNoQueryer(t *testing.T) {
	lag, reason, useOld, err := cluster.ReadLag(context.Background(), struct{ driver.Conn }{}, true)
	if lag != cluster.LagUnknown || !strings.Contains(reason, "cannot run queries") || !useOld || err != nil {
		t.Errorf("ReadLag = %v, %q, %v, %v", lag, reason, useOld, err)
	}
}

// The caller's context: a query that fails because it ended is returned as is (Classify
// calls it Canceled), and the context reaches the driver.
func TestReadLagCanceled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	c := &stubConn{err: context.Canceled}
	lag, reason, _, err := cluster.ReadLag(ctx, c, false)
	if lag != cluster.LagUnknown || reason != "" || !errors.Is(err, context.Canceled) || cluster.Classify(ctx, err) != cluster.Canceled {
		t.Errorf("ReadLag = %v, %q, %v", lag, reason, err)
	}
	if c.ctx != ctx || len(c.queries) != 1 {
		t.Errorf("the driver got %v (%d queries), want the caller's context once", c.ctx, len(c.queries))
	}
}

func TestReadLagUint64(t *testing.T) {
	for _, v := range []uint64{math.MaxUint64, 5} {
		want := time.Duration(math.MaxInt64)
		if v == 5 {
			want = 5 * time.Second
		}
		r := &stubRows{cols: []string{"Seconds_Behind_Source"}, vals: [][]driver.Value{{v}}}
		if lag, reason, _, err := cluster.ReadLag(context.Background(), &stubConn{rows: r}, false); lag != want || reason != "" || err != nil {
			t.Errorf("ReadLag(%d) = %v, %q, %v; want %v", v, lag, reason, err, want)
		}
	}
}
