package integration

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql" // "mysql": plain single-host connections for checks

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// openDB opens a sql.DB and closes it when the test ends.
func openDB(t testing.TB, driverName, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	must(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// portOf runs SELECT @@port on q and returns the node it ran on.
func nodeOf(ctx context.Context, c *harness.Cluster, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var port int
	if err := q.QueryRowContext(ctx, "SELECT @@port").Scan(&port); err != nil {
		return 0, err
	}
	return c.NodeByPort(port), nil
}

// eventLog records every failover.Event of one pool (the connector's event hook).
type eventLog struct {
	mu sync.Mutex
	ev []failover.Event
}

func (r *eventLog) hook(e failover.Event) {
	r.mu.Lock()
	r.ev = append(r.ev, e)
	r.mu.Unlock()
}

func (r *eventLog) all() []failover.Event {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]failover.Event(nil), r.ev...)
}

// of returns the events of kind about host (any host when "") at or after since.
func (r *eventLog) of(kind failover.EventKind, host string, since time.Time) []failover.Event {
	var out []failover.Event
	for _, e := range r.all() {
		if e.Kind == kind && (host == "" || e.Host == host) && !e.Time.Before(since) {
			out = append(out, e)
		}
	}
	return out
}

// count returns how many events of kind about host (any host when "") were recorded.
func (r *eventLog) count(kind failover.EventKind, host string) int {
	return len(r.of(kind, host, time.Time{}))
}

// connects returns the EventConnect events from index from on, and the new end.
func (r *eventLog) connects(from int) ([]failover.Event, int) {
	all := r.all()
	var out []failover.Event
	for _, e := range all[from:] {
		if e.Kind == failover.EventConnect {
			out = append(out, e)
		}
	}
	return out, len(all)
}

// openWithEvents opens a mysqlfailover pool on dsnStr through the connector API, with its
// events recorded, and closes it when the test ends.
func openWithEvents(t testing.TB, dsnStr string) (*sql.DB, *eventLog) {
	t.Helper()
	cfg, err := dsn.Parse(dsnStr)
	must(t, err)
	ev := &eventLog{}
	connector, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithEventHook(ev.hook))
	must(t, err)
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })
	return db, ev
}

// warmPool opens n connections on node 1 and puts them back in the pool idle.
func warmPool(t *testing.T, ctx context.Context, c *harness.Cluster, db *sql.DB, n int) {
	t.Helper()
	conns := make([]*sql.Conn, 0, n)
	for range n {
		conn, err := db.Conn(ctx)
		must(t, err)
		node, err := nodeOf(ctx, c, conn)
		must(t, err)
		if node != 1 {
			t.Fatalf("pooled connection on node %d, want 1", node)
		}
		conns = append(conns, conn)
	}
	for _, conn := range conns {
		must(t, conn.Close())
	}
}

// commErr reports whether err is a communication error as invariant classify-then-judge (docs/design.md) lists
// them, read from its values alone (errors.Is, errors.As), as a user can: a
// *mysql.MySQLError of SQLSTATE class 08, mysql.ErrInvalidConn, driver.ErrBadConn, io.EOF,
// io.ErrUnexpectedEOF, net.ErrClosed, a refused, reset or aborted connection, a broken
// pipe, any net.Error (timeouts included), and the driver's own *failover.FailoverError
// and *failover.NoHostAvailableError. The tests use it where they once called the
// engine's internal Classify.
func commErr(err error) bool {
	if err == nil {
		return false
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.SQLState[0] == '0' && me.SQLState[1] == '8'
	}
	var fe *failover.FailoverError
	var nh *failover.NoHostAvailableError
	var ne net.Error
	for _, target := range []error{mysql.ErrInvalidConn, sqldriver.ErrBadConn, io.EOF, io.ErrUnexpectedEOF, net.ErrClosed,
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE} {
		if errors.Is(err, target) {
			return true
		}
	}
	return errors.As(err, &fe) || errors.As(err, &nh) || errors.As(err, &ne)
}

// timeoutErr reports whether err is a net.Error whose Timeout() is true: how a host
// attempt cut by hostTimeout shows itself (it does not match context.DeadlineExceeded,
// which is kept for the caller's own context).
func timeoutErr(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
