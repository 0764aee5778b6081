package cluster_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

func TestPositionQuery(t *testing.T) {
	for _, tc := range []struct {
		f      cluster.Flavour
		global bool
		want   string
	}{
		{cluster.FlavourUnknown, false, "SELECT @@last_gtid"},
		{cluster.FlavourUnknown, true, "SELECT @@global.gtid_binlog_pos"},
		{cluster.FlavourMariaDB, false, "SELECT @@last_gtid"},
		{cluster.FlavourMariaDB, true, "SELECT @@global.gtid_binlog_pos"},
		{cluster.FlavourMySQL, false, "SELECT @@global.gtid_executed"},
		{cluster.FlavourMySQL, true, "SELECT @@global.gtid_executed"},
	} {
		if got := cluster.PositionQuery(tc.f, tc.global); got != tc.want {
			t.Errorf("PositionQuery(%v, %v) = %q, want %q", tc.f, tc.global, got, tc.want)
		}
	}
	for f, want := range map[cluster.Flavour]string{cluster.FlavourUnknown: "unknown", cluster.FlavourMariaDB: "MariaDB", cluster.FlavourMySQL: "MySQL"} {
		if f.String() != want {
			t.Errorf("%d.String() = %q, want %q", f, f.String(), want)
		}
	}
}

const mysqlExecuted = "3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7,\n4a6f2f4e-0b1c-11ee-9b9c-0242ac120002:1-100"

func TestReadPosition(t *testing.T) {
	const (
		local  = "SELECT @@last_gtid"
		global = "SELECT @@global.gtid_binlog_pos"
		mysqlQ = "SELECT @@global.gtid_executed"
	)
	type step struct {
		query string
		val   driver.Value // returned as one row, unless noRow or err
		noRow bool
		err   error
	}
	for _, tc := range []struct {
		name    string
		f       cluster.Flavour
		global  bool
		steps   []step
		pos     string
		found   cluster.Flavour
		wantErr error  // exact
		errText string // or an error containing it
	}{
		{name: "MariaDB local", f: cluster.FlavourUnknown,
			steps: []step{{query: local, val: []byte("0-1-8")}}, pos: "0-1-8", found: cluster.FlavourMariaDB},
		{name: "MariaDB global", f: cluster.FlavourMariaDB, global: true,
			steps: []step{{query: global, val: []byte("0-1-8,1-2-7")}}, pos: "0-1-8,1-2-7", found: cluster.FlavourMariaDB},
		{name: "MariaDB before the session wrote", f: cluster.FlavourMariaDB,
			steps: []step{{query: local, val: []byte("")}}, pos: "", found: cluster.FlavourMariaDB},
		{name: "MySQL found from 1193", f: cluster.FlavourUnknown,
			steps: []step{{query: local, err: errNoVar}, {query: mysqlQ, val: []byte(mysqlExecuted)}},
			pos:   mysqlExecuted, found: cluster.FlavourMySQL},
		{name: "MySQL found from 1193 (global)", f: cluster.FlavourUnknown, global: true,
			steps: []step{{query: global, err: errNoVar}, {query: mysqlQ, val: []byte(mysqlExecuted)}},
			pos:   mysqlExecuted, found: cluster.FlavourMySQL},
		{name: "a MariaDB host replaced by MySQL", f: cluster.FlavourMariaDB,
			steps: []step{{query: local, err: errNoVar}, {query: mysqlQ, val: []byte("")}},
			pos:   "", found: cluster.FlavourMySQL},
		{name: "MySQL known", f: cluster.FlavourMySQL,
			steps: []step{{query: mysqlQ, val: []byte(mysqlExecuted)}}, pos: mysqlExecuted, found: cluster.FlavourMySQL},
		{name: "MySQL without the variable either", f: cluster.FlavourMySQL,
			steps: []step{{query: mysqlQ, err: errNoVar}}, found: cluster.FlavourMySQL, wantErr: errNoVar},
		{name: "neither", f: cluster.FlavourUnknown,
			steps: []step{{query: local, err: errNoVar}, {query: mysqlQ, err: errNoVar}}, found: cluster.FlavourMySQL, wantErr: errNoVar},
		{name: "NULL", f: cluster.FlavourMySQL,
			steps: []step{{query: mysqlQ, val: nil}}, pos: "", found: cluster.FlavourMySQL},
		{name: "string value", f: cluster.FlavourMariaDB,
			steps: []step{{query: local, val: "0-1-9"}}, pos: "0-1-9", found: cluster.FlavourMariaDB},
		{name: "broken connection", f: cluster.FlavourUnknown,
			steps: []step{{query: local, err: mysql.ErrInvalidConn}}, found: cluster.FlavourUnknown, wantErr: mysql.ErrInvalidConn},
		{name: "broken connection after 1193", f: cluster.FlavourUnknown,
			steps: []step{{query: local, err: errNoVar}, {query: mysqlQ, err: driver.ErrBadConn}}, found: cluster.FlavourMySQL, wantErr: driver.ErrBadConn},
		{name: "another server error", f: cluster.FlavourMariaDB,
			steps: []step{{query: local, err: errNoTable}}, found: cluster.FlavourMariaDB, wantErr: errNoTable},
		{name: "no row", f: cluster.FlavourMariaDB,
			steps: []step{{query: local, noRow: true}}, found: cluster.FlavourMariaDB, errText: "SELECT @@last_gtid returned no value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, mock := mockConn(t)
			for _, s := range tc.steps {
				e := mock.ExpectQuery(s.query)
				switch {
				case s.err != nil:
					e.WillReturnError(s.err)
				case s.noRow:
					e.WillReturnRows(sqlmock.NewRows([]string{"v"})).RowsWillBeClosed()
				default:
					e.WillReturnRows(sqlmock.NewRows([]string{"v"}).AddRow(s.val)).RowsWillBeClosed()
				}
			}
			pos, found, err := cluster.ReadPosition(context.Background(), conn, tc.f, tc.global)
			if pos != tc.pos || found != tc.found {
				t.Errorf("ReadPosition = %q, %v, %v; want %q, %v", pos, found, err, tc.pos, tc.found)
			}
			switch {
			case tc.errText != "":
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Errorf("error %v, want one containing %q", err, tc.errText)
				}
			case err != tc.wantErr:
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
		})
	}
}

func TestReadPositionRows(t *testing.T) {
	// The value survives the driver reusing its buffer, every row is read, rows closed.
	r := &stubRows{cols: []string{"@@last_gtid"}, vals: [][]driver.Value{{[]byte("0-1-42")}, {[]byte("9-9-9")}}, shared: true}
	c := &stubConn{rows: r}
	pos, f, err := cluster.ReadPosition(context.Background(), c, cluster.FlavourMariaDB, false)
	if pos != "0-1-42" || f != cluster.FlavourMariaDB || err != nil {
		t.Errorf("ReadPosition = %q, %v, %v; want 0-1-42", pos, f, err)
	}
	if r.nexts != 3 || r.closes != 1 {
		t.Errorf("Next called %d times, Close %d; want 3 and 1", r.nexts, r.closes)
	}
	// A result without columns has no value.
	if _, _, err := cluster.ReadPosition(context.Background(), &stubConn{rows: &stubRows{vals: [][]driver.Value{{}}}}, cluster.FlavourMariaDB, false); err == nil {
		t.Error("a row without columns: no error")
	}
	// Errors while reading.
	conn, mock := mockConn(t)
	mock.ExpectQuery("SELECT @@last_gtid").WillReturnRows(sqlmock.NewRows([]string{"v"}).AddRow("0-1-1").RowError(0, io.EOF).CloseError(nil))
	mock.ExpectQuery("SELECT @@last_gtid").WillReturnRows(sqlmock.NewRows([]string{"v"}).AddRow("0-1-1").RowError(0, mysql.ErrInvalidConn))
	mock.ExpectQuery("SELECT @@last_gtid").WillReturnRows(sqlmock.NewRows([]string{"v"}).AddRow("0-1-1").CloseError(mysql.ErrInvalidConn))
	if _, _, err := cluster.ReadPosition(context.Background(), conn, cluster.FlavourMariaDB, false); err == nil || !strings.Contains(err.Error(), "no value") {
		t.Errorf("EOF at once: %v, want no value", err)
	}
	for i := 0; i < 2; i++ {
		if _, _, err := cluster.ReadPosition(context.Background(), conn, cluster.FlavourMariaDB, false); err != mysql.ErrInvalidConn {
			t.Errorf("broken while reading (%d): %v, want mysql.ErrInvalidConn as is", i, err)
		}
	}
	if _, f, err := cluster.ReadPosition(context.Background(), struct{ driver.Conn }{}, cluster.FlavourMySQL, false); err == nil || f != cluster.FlavourMySQL {
		t.Errorf("no QueryerContext: %v, %v", f, err)
	}
}

const (
	uuidA = "3E11FA47-71CA-11E1-9E33-C80AA9429562"
	uuidB = "4a6f2f4e-0b1c-11ee-9b9c-0242ac120002"
)

func TestWaitQuery(t *testing.T) {
	for _, tc := range []struct {
		f       cluster.Flavour
		pos     string
		timeout time.Duration
		want    string
	}{
		{cluster.FlavourMariaDB, "0-1-42,1-2-7", 250 * time.Millisecond, "SELECT MASTER_GTID_WAIT('0-1-42,1-2-7', 0.250)"},
		{cluster.FlavourMariaDB, "0-1-42", time.Second, "SELECT MASTER_GTID_WAIT('0-1-42', 1.000)"},
		{cluster.FlavourMariaDB, " 0-1-42 ,\n1-2-7\n", 1500 * time.Millisecond, "SELECT MASTER_GTID_WAIT('0-1-42,1-2-7', 1.500)"},
		{cluster.FlavourMariaDB, "4294967295-4294967295-18446744073709551615", time.Nanosecond, "SELECT MASTER_GTID_WAIT('4294967295-4294967295-18446744073709551615', 0.001)"},
		{cluster.FlavourMariaDB, "0-0-0", 1001 * time.Microsecond, "SELECT MASTER_GTID_WAIT('0-0-0', 0.002)"},
		{cluster.FlavourMariaDB, "0-1-2", 90 * time.Second, "SELECT MASTER_GTID_WAIT('0-1-2', 90.000)"},
		{cluster.FlavourMySQL, mysqlExecuted, 250 * time.Millisecond,
			"SELECT WAIT_FOR_EXECUTED_GTID_SET('" + uuidA + ":1-5:7," + uuidB + ":1-100', 0.250)"},
		{cluster.FlavourMySQL, uuidA + ":1", 10 * time.Millisecond, "SELECT WAIT_FOR_EXECUTED_GTID_SET('" + uuidA + ":1', 0.010)"},
		{cluster.FlavourMySQL, uuidA + ":1-9223372036854775807", time.Second, "SELECT WAIT_FOR_EXECUTED_GTID_SET('" + uuidA + ":1-9223372036854775807', 1.000)"},
		{cluster.FlavourMySQL, uuidA + ":tag_1:1-5:7", time.Second, "SELECT WAIT_FOR_EXECUTED_GTID_SET('" + uuidA + ":tag_1:1-5:7', 1.000)"},
		{cluster.FlavourMySQL, uuidA + ":1-3:_Tag:1-5,\n" + uuidB + ":" + strings.Repeat("t", 32) + ":4", time.Second,
			"SELECT WAIT_FOR_EXECUTED_GTID_SET('" + uuidA + ":1-3:_Tag:1-5," + uuidB + ":" + strings.Repeat("t", 32) + ":4', 1.000)"},
	} {
		got, err := cluster.WaitQuery(tc.f, tc.pos, tc.timeout)
		if got != tc.want || err != nil {
			t.Errorf("WaitQuery(%v, %q, %v) = %q, %v; want %q", tc.f, tc.pos, tc.timeout, got, err, tc.want)
		}
	}
}

func TestWaitQueryRejects(t *testing.T) {
	maria := []string{
		"", " ", ",", "0-1", "0-1-2-3", "a-1-2", "0-1-2,", ",0-1-2", "0-1-2,,1-1-1", "0-1-2;", "0-1-2'", "0-1-2\\",
		"0-1-2' OR '1", "0-1-2', 1); DROP TABLE t; --", "4294967296-1-1", "0-4294967296-1", "0-1-18446744073709551616",
		"-1-1", "0--1-1", "+0-1-1", "0 -1-2", "0-1-2 3", "0x1-1-1", "0-1-2\x00", "０-1-2", uuidA + ":1",
	}
	mysqlBad := []string{
		"", "\n", uuidA, uuidA + ":", uuidA + ":0", uuidA + ":5-3", uuidA + ":1-", uuidA + ":-1", uuidA + "::1",
		uuidA + ":1:", uuidA + ":tag", uuidA + ":1:tag", uuidA + ":tag:tag2:1", uuidA + ":1tag:1",
		uuidA + ":" + strings.Repeat("t", 33) + ":1", uuidA + ":ta-g:1", uuidA + ":1-9223372036854775808",
		uuidA + ":1,", "," + uuidA + ":1", uuidA + ":1;", uuidA + ":1'", uuidA + ":1\\", uuidA + ": 1",
		"3E11FA4771CA11E19E33C80AA9429562:1", "{" + uuidA + "}:1", "3E11FA47-71CA-11E1-9E33-C80AA942956G:1",
		"3E11FA47-71CA-11E1-9E33_C80AA9429562:1", "3E11FA47-71CA-11E1-9E33-C80AA94295621:1", "0-1-2",
		uuidA + ":1' OR '1'='1", uuidA + ":1 \n:2", uuidA + ":t'g:1", uuidA + ":t\\g:1", uuidA + ":t;g:1",
		uuidA + ":t g:1", uuidA + ":\n:1", "3E11FA47-71CA-11E1-9E33'C80AA9429562:1",
	}
	for _, pos := range maria {
		if q, err := cluster.WaitQuery(cluster.FlavourMariaDB, pos, time.Second); err == nil {
			t.Errorf("MariaDB %q accepted: %q", pos, q)
		}
	}
	for _, pos := range mysqlBad {
		if q, err := cluster.WaitQuery(cluster.FlavourMySQL, pos, time.Second); err == nil {
			t.Errorf("MySQL %q accepted: %q", pos, q)
		}
	}
	for _, tc := range []struct {
		f       cluster.Flavour
		timeout time.Duration
		err     string
	}{
		{cluster.FlavourUnknown, time.Second, "needs the server flavour"},
		{cluster.FlavourMariaDB, 0, "timeout > 0"},
		{cluster.FlavourMariaDB, -time.Second, "timeout > 0"},
	} {
		if q, err := cluster.WaitQuery(tc.f, "0-1-2", tc.timeout); err == nil || !strings.Contains(err.Error(), tc.err) {
			t.Errorf("WaitQuery(%v, 0-1-2, %v) = %q, %v; want an error containing %q", tc.f, tc.timeout, q, err, tc.err)
		}
	}
	// The error quotes the position in ASCII (a control character cannot reach a log raw).
	if _, err := cluster.WaitQuery(cluster.FlavourMariaDB, "0-1-2\x1b[0m", time.Second); err == nil || !strings.Contains(err.Error(), `"0-1-2\x1b[0m"`) {
		t.Errorf("error %v, want the position quoted", err)
	}
}

// Reference grammars, independent of the implementation: what the validator accepts
// must match them (the numbers' ranges aside).
var (
	mariaRE = regexp.MustCompile(`^[0-9]{1,10}-[0-9]{1,10}-[0-9]{1,20}(,[0-9]{1,10}-[0-9]{1,10}-[0-9]{1,20})*$`)
	mysqlRE = func() *regexp.Regexp {
		const uuid = `[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}`
		const item = `(:[A-Za-z_][A-Za-z0-9_]{0,31})?:[0-9]{1,19}(-[0-9]{1,19})?`
		return regexp.MustCompile(`^` + uuid + `(` + item + `)+(,` + uuid + `(` + item + `)+)*$`)
	}()
	waitRE = regexp.MustCompile(`^SELECT (MASTER_GTID_WAIT|WAIT_FOR_EXECUTED_GTID_SET)\('([^']*)', ([0-9]+\.[0-9]{3})\)$`)
)

// FuzzWaitQuery: any position, flavour and timeout gives either an error or a statement
// of the one shape, whose literal holds only digits, letters, '_', '-', ':' and ','
// (never a quote, a backslash, a semicolon, whitespace or a control character), matches
// the reference grammar of its flavour, and is accepted again unchanged.
func FuzzWaitQuery(f *testing.F) {
	for _, s := range []string{"0-1-42,1-2-7", mysqlExecuted, uuidA + ":tag:1-5", "0-1-2'", "0-1-2\\", "0-1-2;",
		uuidA + ":1',\n" + uuidB + ":1", " 0-1-2 ", "", "0-1-2,\n\t3-4-5", uuidA + ":t'g:1", uuidA + ":_t:1-2:u\\:3"} {
		f.Add(s, byte(1), int64(time.Second))
		f.Add(s, byte(2), int64(250*time.Millisecond))
	}
	f.Fuzz(func(t *testing.T, pos string, flavour byte, timeout int64) {
		fl := cluster.Flavour(flavour % 4)
		q, err := cluster.WaitQuery(fl, pos, time.Duration(timeout))
		if err != nil {
			if q != "" {
				t.Fatalf("WaitQuery(%q) = %q with error %v", pos, q, err)
			}
			return
		}
		m := waitRE.FindStringSubmatch(q)
		if m == nil {
			t.Fatalf("WaitQuery(%q) = %q: not the statement's shape", pos, q)
		}
		lit := m[2]
		if strings.ContainsAny(lit, "'\\;\"` \t\r\n\x00") || strings.IndexFunc(lit, func(r rune) bool {
			return !(r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || strings.ContainsRune("_-:,", r))
		}) >= 0 {
			t.Fatalf("WaitQuery(%q) = %q: literal has a character outside the GTID alphabet", pos, q)
		}
		switch fl {
		case cluster.FlavourMariaDB:
			if m[1] != "MASTER_GTID_WAIT" || !mariaRE.MatchString(lit) {
				t.Fatalf("MariaDB %q accepted as %q", pos, q)
			}
		case cluster.FlavourMySQL:
			if m[1] != "WAIT_FOR_EXECUTED_GTID_SET" || !mysqlRE.MatchString(lit) {
				t.Fatalf("MySQL %q accepted as %q", pos, q)
			}
		default:
			t.Fatalf("flavour %v accepted", fl)
		}
		if timeout <= 0 {
			t.Fatalf("timeout %d accepted", timeout)
		}
		if again, err := cluster.WaitQuery(fl, lit, time.Duration(timeout)); again != q || err != nil {
			t.Fatalf("the literal %q gives %q, %v; want %q", lit, again, err, q)
		}
	})
}

func TestWaitReplica(t *testing.T) {
	const (
		mq = "SELECT MASTER_GTID_WAIT('0-1-8', 0.250)"
		yq = "SELECT WAIT_FOR_EXECUTED_GTID_SET('" + uuidA + ":1-5', 0.250)"
	)
	errNoFunc := &mysql.MySQLError{Number: 1305, SQLState: [5]byte{'4', '2', '0', '0', '0'}, Message: "FUNCTION WAIT_FOR_EXECUTED_GTID_SET does not exist"}
	for _, tc := range []struct {
		name    string
		f       cluster.Flavour
		query   string
		val     driver.Value
		err     error
		reached bool
		errText string
	}{
		{name: "MariaDB reached", f: cluster.FlavourMariaDB, query: mq, val: int64(0), reached: true},
		{name: "MariaDB reached, text", f: cluster.FlavourMariaDB, query: mq, val: []byte("0"), reached: true},
		{name: "MariaDB timeout", f: cluster.FlavourMariaDB, query: mq, val: int64(-1)},
		{name: "MariaDB timeout, text", f: cluster.FlavourMariaDB, query: mq, val: []byte("-1")},
		{name: "MariaDB NULL", f: cluster.FlavourMariaDB, query: mq, val: nil},
		{name: "MariaDB 1 is not an answer", f: cluster.FlavourMariaDB, query: mq, val: int64(1), errText: `unexpected answer of the causal read wait: "1"`},
		{name: "MySQL reached", f: cluster.FlavourMySQL, query: yq, val: int64(0), reached: true},
		{name: "MySQL timeout", f: cluster.FlavourMySQL, query: yq, val: []byte("1")},
		{name: "MySQL NULL", f: cluster.FlavourMySQL, query: yq, val: nil},
		{name: "MySQL -1 is not an answer", f: cluster.FlavourMySQL, query: yq, val: int64(-1), errText: `"-1"`},
		{name: "not a number", f: cluster.FlavourMySQL, query: yq, val: []byte("yes"), errText: `"yes"`},
		{name: "float", f: cluster.FlavourMySQL, query: yq, val: 0.0, errText: `"0"`},
		{name: "broken connection", f: cluster.FlavourMariaDB, query: mq, err: mysql.ErrInvalidConn},
		{name: "no such function", f: cluster.FlavourMySQL, query: yq, err: errNoFunc},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, mock := mockConn(t)
			e := mock.ExpectQuery(tc.query)
			if tc.err != nil {
				e.WillReturnError(tc.err)
			} else {
				e.WillReturnRows(sqlmock.NewRows([]string{"w"}).AddRow(tc.val)).RowsWillBeClosed()
			}
			pos := "0-1-8"
			if tc.f == cluster.FlavourMySQL {
				pos = uuidA + ":1-5"
			}
			reached, err := cluster.WaitReplica(context.Background(), conn, tc.f, pos, 250*time.Millisecond)
			if reached != tc.reached {
				t.Errorf("reached %v, want %v (error %v)", reached, tc.reached, err)
			}
			switch {
			case tc.errText != "":
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Errorf("error %v, want one containing %q", err, tc.errText)
				}
			case err != tc.err:
				t.Errorf("error %v, want %v", err, tc.err)
			}
		})
	}
}

func TestWaitReplicaSendsNothingInvalid(t *testing.T) {
	c := &stubConn{err: errors.New("must not be called")}
	for _, tc := range []struct {
		f   cluster.Flavour
		pos string
		d   time.Duration
	}{
		{cluster.FlavourMariaDB, "0-1-8'); DO SLEEP(10); --", time.Second},
		{cluster.FlavourMySQL, "0-1-8", time.Second},
		{cluster.FlavourUnknown, "0-1-8", time.Second},
		{cluster.FlavourMariaDB, "0-1-8", 0},
		{cluster.FlavourMariaDB, "", time.Second},
	} {
		if reached, err := cluster.WaitReplica(context.Background(), c, tc.f, tc.pos, tc.d); reached || err == nil {
			t.Errorf("WaitReplica(%v, %q, %v) = %v, %v; want an error", tc.f, tc.pos, tc.d, reached, err)
		}
	}
	if len(c.queries) != 0 {
		t.Errorf("queries sent: %q", c.queries)
	}
	if _, err := cluster.WaitReplica(context.Background(), struct{ driver.Conn }{}, cluster.FlavourMariaDB, "0-1-8", time.Second); err == nil {
		t.Error("no QueryerContext: no error")
	}
}

// The caller's context bounds the wait: it reaches the driver (sqlmock returns
// ErrCancelled for a query whose context ends before its delay).
func TestWaitReplicaContext(t *testing.T) {
	conn, mock := mockConn(t)
	mock.ExpectQuery("SELECT MASTER_GTID_WAIT('0-1-8', 1.000)").WillDelayFor(time.Hour).
		WillReturnRows(sqlmock.NewRows([]string{"w"}).AddRow(int64(0)))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	reached, err := cluster.WaitReplica(ctx, conn, cluster.FlavourMariaDB, "0-1-8", time.Second)
	if reached || err != sqlmock.ErrCancelled {
		t.Errorf("WaitReplica with an ended context = %v, %v; want sqlmock.ErrCancelled", reached, err)
	}
}
