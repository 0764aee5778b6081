package txtest

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"sync"
	"testing"
	"time"

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

// pool is a mysqlfailover pool built with NewConnector (for Stats), its events recorded.
type pool struct {
	db *sql.DB
	cn *mysqlfailover.Connector
	mu sync.Mutex
	ev []failover.Event
}

// openPool opens the pool on dsnStr and closes it when the test ends.
func openPool(t testing.TB, dsnStr string) *pool {
	t.Helper()
	cfg, err := dsn.Parse(dsnStr)
	must(t, err)
	p := &pool{}
	p.cn, err = mysqlfailover.NewConnector(cfg, mysqlfailover.WithEventHook(func(e failover.Event) {
		p.mu.Lock()
		p.ev = append(p.ev, e)
		p.mu.Unlock()
	}))
	must(t, err)
	p.db = sql.OpenDB(p.cn)
	t.Cleanup(func() { p.db.Close() })
	return p
}

// events returns how many events of kind were recorded.
func (p *pool) events(kind failover.EventKind) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.ev {
		if e.Kind == kind {
			n++
		}
	}
	return n
}

// count returns SELECT COUNT(*) FROM app.<where> on node n (admin, no proxy).
func count(ctx context.Context, t testing.TB, n *harness.Node, from string) int64 {
	t.Helper()
	v, err := n.QueryInt(ctx, "SELECT COUNT(*) FROM app."+from)
	must(t, err)
	return v
}

// notBadConn fails the test for an error database/sql would run again.
func notBadConn(t testing.TB, what string, err error) {
	t.Helper()
	if errors.Is(err, sqldriver.ErrBadConn) {
		t.Errorf("%s: %v matches driver.ErrBadConn", what, err)
	}
}

// waitRunning polls node n until a session of the app user runs a statement that
// starts with prefix (a statement waiting for a row lock, so that the next one closes a
// deadlock cycle). information_schema.processlist, because innodb_trx is a cache that
// is refreshed only after 100 ms without a read: a quick poll would never see it change.
func waitRunning(ctx context.Context, t testing.TB, n *harness.Node, prefix string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		v, err := n.QueryInt(ctx, "SELECT COUNT(*) FROM information_schema.processlist WHERE user = ? AND command IN ('Query', 'Execute') AND info LIKE CONCAT(?, '%')",
			harness.AppUser, prefix)
		must(t, err)
		if v > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("node %d: no app session runs %q within 10 s", n.Index(), prefix)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// failedConnects returns how many connection attempts to addr failed.
func (p *pool) failedConnects(addr string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.ev {
		if e.Kind == failover.EventConnect && e.Host == addr && e.Err != nil {
			n++
		}
	}
	return n
}

// clearOnFailedConnect clears node n's toxics once the pool has failed to connect to it
// (through its proxy) after the toxic the caller just added: the connection that hit
// the toxic then finds the node again at the walk's next pass. It returns a function
// that waits for that (and fails the test if it did not happen within 10 s).
func clearOnFailedConnect(ctx context.Context, t testing.TB, p *pool, n *harness.Node) (wait func()) {
	t.Helper()
	before := p.failedConnects(n.ProxyAddr())
	done := make(chan error, 1)
	go func() {
		deadline := time.Now().Add(10 * time.Second)
		for p.failedConnects(n.ProxyAddr()) == before {
			if time.Now().After(deadline) || ctx.Err() != nil {
				_ = n.ClearToxics()
				done <- errors.New("no failed connection attempt to the node within 10 s")
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
		done <- n.ClearToxics()
	}()
	return func() {
		t.Helper()
		must(t, <-done)
	}
}
