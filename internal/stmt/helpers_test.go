package stmt_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"go.uber.org/goleak"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/conn"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	h1 = "H1:3306"
	h2 = "H2:3306"

	setReadOnly = "SET SESSION TRANSACTION READ ONLY"
)

// seqA is the DSN default: failOverReadOnly=true.
var seqA = conn.Config{FailOverReadOnly: true}

type recorder struct {
	mu  sync.Mutex
	evs []failover.Event
}

func (r *recorder) add(e failover.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
}

func (r *recorder) count(kind failover.EventKind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.evs {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// env is a cluster over fake hosts H1..Hn (retriesAllDown 2, secondsBeforeRetryMaster 30,
// queriesBeforeRetryMaster 50) with a fake clock and an event recorder.
type env struct {
	t     *testing.T
	net   *fake.Net
	clock *fake.Clock
	cl    *cluster.Cluster
	ev    *recorder
}

func newEnv(t *testing.T, hosts int) *env {
	t.Helper()
	e := &env{t: t, net: fake.NewNet(t, hosts), clock: fake.NewClock(), ev: &recorder{}}
	cl, err := cluster.NewCluster(cluster.Options{
		Hosts: e.net.Addrs(), Dial: e.net.Dial, Clock: e.clock,
		RetriesAllDown: 2, SecondsBeforeRetryMaster: 30, QueriesBeforeRetryMaster: 50,
		OnEvent: e.ev.add,
	})
	if err != nil {
		t.Fatal(err)
	}
	e.cl = cl
	return e
}

func (e *env) open(cfg conn.Config) *conn.Conn {
	e.t.Helper()
	c, err := conn.Open(context.Background(), e.cl, cfg)
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// step scripts part of what one physical connection expects.
type step func(m sqlmock.Sqlmock)

func all(steps ...step) step {
	return func(m sqlmock.Sqlmock) {
		for _, s := range steps {
			s(m)
		}
	}
}

func ok(q string) step {
	return func(m sqlmock.Sqlmock) { m.ExpectExec(q).WillReturnResult(sqlmock.NewResult(0, 1)) }
}

func fails(q string, err error) step {
	return func(m sqlmock.Sqlmock) { m.ExpectExec(q).WillReturnError(err) }
}

// prepared scripts PREPARE q, closed later, and one execution with arg that returns err
// (nil: success).
func prepared(q string, arg int64, err error) step {
	return func(m sqlmock.Sqlmock) {
		p := m.ExpectPrepare(q).WillBeClosed()
		x := p.ExpectExec().WithArgs(arg)
		if err != nil {
			x.WillReturnError(err)
		} else {
			x.WillReturnResult(sqlmock.NewResult(0, 1))
		}
	}
}

// idRows is a result with an id column holding 1..n; reading row errRow fails with err
// (if set), and closing it returns closeErr.
func idRows(n, errRow int, err, closeErr error) *sqlmock.Rows {
	r := sqlmock.NewRows([]string{"id"})
	for i := 0; i < n; i++ {
		r.AddRow(int64(i + 1))
	}
	if err != nil {
		r.RowError(errRow, err)
	}
	return r.CloseError(closeErr)
}

// query scripts q returning r, which must be closed.
func query(q string, r *sqlmock.Rows) step {
	return func(m sqlmock.Sqlmock) { m.ExpectQuery(q).WillReturnRows(r).RowsWillBeClosed() }
}

// preparedQuery scripts PREPARE q, closed later, and one query returning r.
func preparedQuery(q string, r *sqlmock.Rows) step {
	return func(m sqlmock.Sqlmock) {
		m.ExpectPrepare(q).WillBeClosed().ExpectQuery().WillReturnRows(r).RowsWillBeClosed()
	}
}

func (e *env) script(host int, perConn ...step) {
	e.net.Script(host, func(seq int, m sqlmock.Sqlmock) {
		if seq < len(perConn) && perConn[seq] != nil {
			perConn[seq](m)
		}
	})
}

func (e *env) phys(host, seq int) *fake.Conn {
	e.t.Helper()
	cs := e.net.Conns(host)
	if seq >= len(cs) {
		e.t.Fatalf("H%d has %d physical connections, want at least %d", host+1, len(cs), seq+1)
	}
	return cs[seq]
}

func (e *env) allMet() {
	e.t.Helper()
	for _, c := range e.net.AllConns() {
		if err := c.Mock.ExpectationsWereMet(); err != nil {
			e.t.Errorf("H%d connection %d: %v", c.Host+1, c.Seq, err)
		}
	}
}

// untouched checks that q, scripted last on host's seq-th connection, never ran there and
// that everything scripted before it did.
func (e *env) untouched(host, seq int, q string) {
	e.t.Helper()
	err := e.phys(host, seq).Mock.ExpectationsWereMet()
	if err == nil || !strings.Contains(err.Error(), "'"+q+"'") {
		e.t.Errorf("H%d connection %d: want only %q unmet (it must not have run), got: %v", host+1, seq, q, err)
	}
}

func (e *env) wantEvents(kind failover.EventKind, n int) {
	e.t.Helper()
	if got := e.ev.count(kind); got != n {
		e.t.Errorf("%d %s events, want %d", got, kind, n)
	}
}

func prepare(t *testing.T, c *conn.Conn, q string) driver.Stmt {
	t.Helper()
	s, err := c.PrepareContext(context.Background(), q)
	if err != nil {
		t.Fatalf("prepare %s: %v", q, err)
	}
	return s
}

func execStmt(s driver.Stmt, arg int64) error {
	_, err := s.(driver.StmtExecContext).ExecContext(context.Background(), []driver.NamedValue{{Ordinal: 1, Value: arg}})
	return err
}

func exec(c *conn.Conn, q string) error {
	_, err := c.ExecContext(context.Background(), q, nil)
	return err
}

func mustExec(t *testing.T, c *conn.Conn, q string) {
	t.Helper()
	if err := exec(c, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func wantHost(t *testing.T, c *conn.Conn, host string) {
	t.Helper()
	if got := c.Host(); got != host {
		t.Fatalf("connection on %q, want %q", got, host)
	}
}

func notBadConn(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, driver.ErrBadConn) {
		t.Errorf("error matches driver.ErrBadConn (database/sql would run the statement again): %v", err)
	}
}

func wantFailover(t *testing.T, err error, failed, current string, maybeExecuted bool) {
	t.Helper()
	var fe *failover.FailoverError
	if !errors.As(err, &fe) {
		t.Fatalf("error %v (%T) is not a *failover.FailoverError", err, err)
	}
	if fe.Failed != failed || fe.Current != current || fe.MaybeExecuted != maybeExecuted {
		t.Errorf("FailoverError{Failed: %q, Current: %q, MaybeExecuted: %v}, want {%q, %q, %v}",
			fe.Failed, fe.Current, fe.MaybeExecuted, failed, current, maybeExecuted)
	}
	notBadConn(t, err)
}

// testConnector opens logical connections for database/sql.
type testConnector struct {
	cl  *cluster.Cluster
	cfg conn.Config
}

func (tc testConnector) Connect(ctx context.Context) (driver.Conn, error) {
	c, err := conn.Open(ctx, tc.cl, tc.cfg)
	if err != nil {
		return nil, err
	}
	return c, nil
}

func (testConnector) Driver() driver.Driver { return testDriver{} }

type testDriver struct{}

func (testDriver) Open(string) (driver.Conn, error) {
	return nil, errors.New("testDriver: use the connector")
}

func (e *env) db(cfg conn.Config) *sql.DB {
	db := fake.DB(e.t, testConnector{cl: e.cl, cfg: cfg})
	db.SetMaxOpenConns(1)
	return db
}

// refuse makes host refuse new connections while its open ones follow their scripts.
func (e *env) refuse(host int) { e.net.Set(host, fake.Refused(e.net.Addrs()[host]), nil) }
