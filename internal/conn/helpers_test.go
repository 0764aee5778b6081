package conn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"go.uber.org/goleak"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const (
	h1 = "H1:3306"
	h2 = "H2:3306"
	h3 = "H3:3306"

	setReadOnly  = "SET SESSION TRANSACTION READ ONLY"
	setReadWrite = "SET SESSION TRANSACTION READ WRITE"
)

// The two Connector/J sequences: A is the DSN default (failOverReadOnly=true).
var (
	seqA = Config{FailOverReadOnly: true}
	seqB = Config{}
)

// recorder keeps the cluster's events.
type recorder struct {
	mu  sync.Mutex
	evs []failover.Event
}

func (r *recorder) add(e failover.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, e)
	r.mu.Unlock()
}

// count returns how many events of kind there were, about host ("" for any).
func (r *recorder) count(kind failover.EventKind, host string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, e := range r.evs {
		if e.Kind == kind && (host == "" || e.Host == host) {
			n++
		}
	}
	return n
}

func (r *recorder) String() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := make([]string, len(r.evs))
	for i, e := range r.evs {
		s[i] = e.String()
	}
	return strings.Join(s, "\n")
}

// env is a cluster over fake hosts H1..Hn with a fake clock and an event recorder.
type env struct {
	t     *testing.T
	net   *fake.Net
	clock *fake.Clock
	cl    *cluster.Cluster
	ev    *recorder
	opens atomic.Int32 // logical connections database/sql opened through e.db
}

// newEnv builds the cluster of the brief (retriesAllDown 2, secondsBeforeRetryMaster 30,
// queriesBeforeRetryMaster 50); opts change it.
func newEnv(t *testing.T, hosts int, opts ...func(*dsn.Config)) *env {
	t.Helper()
	e := &env{t: t, net: fake.NewNet(t, hosts), clock: fake.NewClock(), ev: &recorder{}}
	cfg := &dsn.Config{Hosts: e.net.Hosts(), RetriesAllDown: 2, SecondsBeforeRetryMaster: 30, QueriesBeforeRetryMaster: 50}
	for _, f := range opts {
		f(cfg)
	}
	cl, err := cluster.New(cfg, cluster.Env{Dial: e.net.Dial, Clock: e.clock, OnEvent: e.ev.add, Socket: e.net.Socket})
	if err != nil {
		t.Fatal(err)
	}
	e.cl = cl
	return e
}

// retryMaster sets secondsBeforeRetryMaster and queriesBeforeRetryMaster.
func retryMaster(secs, queries int) func(*dsn.Config) {
	return func(c *dsn.Config) { c.SecondsBeforeRetryMaster, c.QueriesBeforeRetryMaster = secs, queries }
}

// open opens a logical connection, closed at the end of the test.
func (e *env) open(cfg Config) *Conn {
	e.t.Helper()
	c, err := Open(context.Background(), e.cl, cfg)
	if err != nil {
		e.t.Fatalf("Open: %v", err)
	}
	e.t.Cleanup(func() { _ = c.Close() })
	return c
}

// step scripts part of what one physical connection expects.
type step func(m sqlmock.Sqlmock)

func ok(q string) step {
	return func(m sqlmock.Sqlmock) { m.ExpectExec(q).WillReturnResult(sqlmock.NewResult(0, 1)) }
}

func fails(q string, err error) step {
	return func(m sqlmock.Sqlmock) { m.ExpectExec(q).WillReturnError(err) }
}

func begin() step { return func(m sqlmock.Sqlmock) { m.ExpectBegin() } }

func commit(err error) step {
	return func(m sqlmock.Sqlmock) { m.ExpectCommit().WillReturnError(err) }
}

func all(steps ...step) step {
	return func(m sqlmock.Sqlmock) {
		for _, s := range steps {
			s(m)
		}
	}
}

// script makes the i-th physical connection opened to host expect perConn[i]; later
// connections expect nothing (any call fails with sqlmock's "not expected" error).
func (e *env) script(host int, perConn ...step) {
	e.net.Script(host, func(seq int, m sqlmock.Sqlmock) {
		if seq < len(perConn) && perConn[seq] != nil {
			perConn[seq](m)
		}
	})
}

// phys returns the seq-th physical connection opened to host.
func (e *env) phys(host, seq int) *fake.Conn {
	e.t.Helper()
	cs := e.net.Conns(host)
	if seq >= len(cs) {
		e.t.Fatalf("H%d has %d physical connections, want at least %d", host+1, len(cs), seq+1)
	}
	return cs[seq]
}

// dialed returns how many physical connections were opened to host.
func (e *env) dialed(host int) int { return len(e.net.Conns(host)) }

// allMet checks that every physical connection got exactly what its script expects.
func (e *env) allMet() {
	e.t.Helper()
	for _, c := range e.net.AllConns() {
		if err := c.Mock.ExpectationsWereMet(); err != nil {
			e.t.Errorf("H%d connection %d: %v", c.Host+1, c.Seq, err)
		}
	}
}

// trap scripts a statement that must never reach the connection. Declare it last: then
// untouched returns an error only if it is the one expectation left unmet.
func trap(q string) step { return ok(q) }

// untouched checks that the trap q (scripted last) was never run on host's seq-th
// connection, and that everything scripted before it was.
func (e *env) untouched(host, seq int, q string) {
	e.t.Helper()
	err := e.phys(host, seq).Mock.ExpectationsWereMet()
	if err == nil || !strings.Contains(err.Error(), "'"+q+"'") {
		e.t.Errorf("H%d connection %d: want only the trap %q unmet (it must not have run), got: %v", host+1, seq, q, err)
	}
}

// closedExcept checks that every physical connection except cur (nil: none) was closed
// exactly once, and cur not at all.
func (e *env) closedExcept(cur *fake.Conn) {
	e.t.Helper()
	for _, c := range e.net.AllConns() {
		want := 1
		if c == cur {
			want = 0
		}
		if got := c.Closes(); got != want {
			e.t.Errorf("H%d connection %d closed %d times, want %d", c.Host+1, c.Seq, got, want)
		}
	}
}

// noHostEvents checks that no host was reported failed and the pool never moved.
func (e *env) noHostEvents() {
	e.t.Helper()
	for _, k := range []failover.EventKind{failover.EventHostFailed, failover.EventSwitch, failover.EventFallBack, failover.EventFallBackFailed} {
		if n := e.ev.count(k, ""); n != 0 {
			e.t.Errorf("%d %s events, want none; events:\n%s", n, k, e.ev)
		}
	}
	if a := e.cl.Active(); a != 0 {
		e.t.Errorf("cluster Active() = %d, want 0", a)
	}
}

func (e *env) wantEvents(kind failover.EventKind, host string, n int) {
	e.t.Helper()
	if got := e.ev.count(kind, host); got != n {
		e.t.Errorf("%d %s events for %q, want %d; events:\n%s", got, kind, host, n, e.ev)
	}
}

func exec(c *Conn, q string) error {
	_, err := c.ExecContext(context.Background(), q, nil)
	return err
}

func mustExec(t *testing.T, c *Conn, q string) {
	t.Helper()
	if err := exec(c, q); err != nil {
		t.Fatalf("%s: %v", q, err)
	}
}

func wantHost(t *testing.T, c *Conn, host string) {
	t.Helper()
	if got := c.Host(); got != host {
		t.Fatalf("connection on %q, want %q", got, host)
	}
}

// notBadConn: database/sql would run the statement again on any error that matches it.
func notBadConn(t *testing.T, err error) {
	t.Helper()
	if errors.Is(err, driver.ErrBadConn) {
		t.Errorf("error matches driver.ErrBadConn (database/sql would re-run the statement): %v", err)
	}
}

// wantFailover checks err is a *failover.FailoverError from failed to current.
func wantFailover(t *testing.T, err error, failed, current string, maybeExecuted bool) *failover.FailoverError {
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
	return fe
}

// testConnector opens logical connections for database/sql and counts them.
type testConnector struct {
	cl    *cluster.Cluster
	cfg   Config
	opens *atomic.Int32
}

func (tc testConnector) Connect(ctx context.Context) (driver.Conn, error) {
	tc.opens.Add(1)
	c, err := Open(ctx, tc.cl, tc.cfg)
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

// db is a *sql.DB over the cluster, with at most maxOpen connections.
func (e *env) db(cfg Config, maxOpen int) *sql.DB {
	db := fake.DB(e.t, testConnector{cl: e.cl, cfg: cfg, opens: &e.opens})
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxOpen)
	return db
}

// withProxy runs f on the proxy under a pinned *sql.Conn.
func withProxy(t *testing.T, sc *sql.Conn, f func(c *Conn)) {
	t.Helper()
	if err := sc.Raw(func(dc any) error { f(dc.(*Conn)); return nil }); err != nil {
		t.Fatal(err)
	}
}

func sqlConn(t *testing.T, db *sql.DB) *sql.Conn {
	t.Helper()
	sc, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// queryRows scripts q returning one id column with the given rows.
func queryRows(q string, ids ...int64) step {
	return func(m sqlmock.Sqlmock) {
		r := sqlmock.NewRows([]string{"id"})
		for _, id := range ids {
			r.AddRow(id)
		}
		m.ExpectQuery(q).WillReturnRows(r)
	}
}

func mustQuery(t *testing.T, c *Conn, q string) driver.Rows {
	t.Helper()
	rows, err := c.QueryContext(context.Background(), q, nil)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return rows
}

// refuse makes host refuse new connections (ECONNREFUSED) while its open ones keep
// following their scripts.
func (e *env) refuse(host int) { e.net.Set(host, fake.Refused(e.net.Addrs()[host]), nil) }

// The statement and rows proxies (package stmt) are tested here, through the
// connection that owns them.

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

func prepare(t *testing.T, c *Conn, q string) driver.Stmt {
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
