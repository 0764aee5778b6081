// Package galera runs mysqlfailover against a real MariaDB Galera cluster: the
// server's word about its readiness beats the socket. It is a package of its own so that
// `go test ./...` runs it beside the big integration package.
package galera

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

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

// pool is a mysqlfailover pool over the cluster with its connector and events.
type pool struct {
	db *sql.DB
	cn *mysqlfailover.Connector
	mu sync.Mutex
	ev []failover.Event
}

func open(t testing.TB, c *harness.Cluster, params string) *pool {
	t.Helper()
	cfg, err := dsn.Parse(c.DSN(params))
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

// active is the node the pool writes to.
func (p *pool) active(c *harness.Cluster) int { return c.NodeByAddr(p.cn.Stats().Active) }

// state is node i's HostState in the pool's Stats.
func (p *pool) state(c *harness.Cluster, i int) (failover.HostState, error) {
	for _, h := range p.cn.Stats().Hosts {
		if h.Addr == c.Node(i).ProxyAddr() {
			return h.State, h.LastError
		}
	}
	return failover.HostUnknown, nil
}

// nodeOf runs SELECT @@port on q and returns the node that answered.
func nodeOf(ctx context.Context, c *harness.Cluster, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var port int
	if err := q.QueryRowContext(ctx, "SELECT @@port").Scan(&port); err != nil {
		return 0, err
	}
	return c.NodeByPort(port), nil
}

func waitFor(d time.Duration, cond func() bool) bool {
	end := time.Now().Add(d)
	for time.Now().Before(end) {
		if cond() {
			return true
		}
		time.Sleep(20 * time.Millisecond)
	}
	return cond()
}

// load runs autocommit INSERTs of unique ids on p from n goroutines until stopped, and
// records which node took each (the INSERT returns @@port) with the time it was sent, and
// every error with the time it came back.
type load struct {
	once    sync.Once
	stop    chan struct{}
	wg      sync.WaitGroup
	next    atomic.Int64
	mu      sync.Mutex
	ok      int
	errs    []error
	errAt   []time.Time
	okAt    []time.Time // when each acknowledged write was sent
	okNode  []int
	written []int64
	lostIDs []int64 // writes that failed
}

func startLoad(t *testing.T, ctx context.Context, c *harness.Cluster, p *pool, table string, n int) *load {
	l := &load{stop: make(chan struct{})}
	for range n {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			conn, err := p.db.Conn(ctx)
			if err != nil {
				l.fail(err)
				return
			}
			defer conn.Close()
			for {
				select {
				case <-l.stop:
					return
				default:
				}
				id := l.next.Add(1)
				var port int
				sent := time.Now()
				err := conn.QueryRowContext(ctx, fmt.Sprintf("INSERT INTO %s (id) VALUES (%d) RETURNING @@port", table, id)).Scan(&port)
				if err != nil {
					l.fail(err)
					l.mu.Lock()
					l.lostIDs = append(l.lostIDs, id)
					l.mu.Unlock()
					time.Sleep(5 * time.Millisecond)
					continue
				}
				l.mu.Lock()
				l.ok++
				l.okAt = append(l.okAt, sent)
				l.okNode = append(l.okNode, c.NodeByPort(port))
				l.written = append(l.written, id)
				l.mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	return l
}

func (l *load) fail(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.errAt = append(l.errAt, time.Now())
	l.mu.Unlock()
}

func (l *load) halt() { l.once.Do(func() { close(l.stop) }); l.wg.Wait() }

// since returns the writes sent after at and the errors returned after at. A write is
// counted by when it was sent: one sent before a node began refusing may finish on it
// after (wsrep_reject_queries checks a statement when it starts).
func (l *load) since(at time.Time) (ok int, nodes map[int]int, errs []error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	nodes = map[int]int{}
	for i, t := range l.okAt {
		if t.After(at) {
			ok++
			nodes[l.okNode[i]]++
		}
	}
	for i, t := range l.errAt {
		if t.After(at) {
			errs = append(errs, l.errs[i])
		}
	}
	return ok, nodes, errs
}

// checkRows asserts that every acknowledged write is on node n exactly once.
func (l *load) checkRows(t *testing.T, ctx context.Context, n *harness.Node, table string) {
	t.Helper()
	l.mu.Lock()
	ids := append([]int64(nil), l.written...)
	l.mu.Unlock()
	var rows int
	must(t, n.Admin().QueryRowContext(ctx, "SELECT COUNT(*) FROM app."+table).Scan(&rows))
	var missing int
	for _, id := range ids {
		var k int
		must(t, n.Admin().QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM app.%s WHERE id = %d", table, id)).Scan(&k))
		if k != 1 {
			missing++
		}
	}
	if missing != 0 {
		t.Errorf("%d of %d acknowledged writes not on node %d exactly once", missing, len(ids), n.Index())
	}
}

// TestGalera runs the readiness scenarios on one 3-node Galera cluster, each leaving it
// whole again. The pool's DSN is the default one (cluster=auto: the first connection reads
// what the cluster is), with and without probing.
func TestGalera(t *testing.T) {
	c := harness.Start(t, 3, harness.WithGalera())
	ctx := ctxT(t, 5*time.Minute)
	fig := func(name, k string, v any) { t.Logf("FIGURE %s: %s=%v", name, k, v) }
	whole := func(t *testing.T) {
		t.Helper()
		must(t, c.WaitSynced(ctx))
	}
	table := 0
	newTable := func(t *testing.T) string {
		table++
		name := fmt.Sprintf("w%d", table)
		must(t, c.Node(1).Exec(ctx, "CREATE TABLE app."+name+" (id BIGINT PRIMARY KEY)"))
		return name
	}

	// A node outside the Primary component, first in the DSN and the pool's writer: its
	// handshake, SELECT 1 and role query still work; its refusals (1047) move the pool to
	// the next ready node and the statements run there unseen. The caller sees errors only
	// while the node has not yet noticed it is cut off (commits there wait for the group,
	// then fail): none once it says non-Primary.
	for _, probing := range []bool{false, true} {
		name := "non-Primary writer"
		params := "readTimeout=5s"
		if probing {
			name += " probing"
			params += "&checkInterval=100ms&failoverDelay=200ms&switchBackDelay=1s"
		}
		t.Run(name, func(t *testing.T) {
			tab := newTable(t)
			p := open(t, c, params)
			p.db.SetMaxOpenConns(4)
			l := startLoad(t, ctx, c, p, tab, 4)
			defer l.halt()
			if !waitFor(5*time.Second, func() bool { ok, _, _ := l.since(time.Time{}); return ok > 20 }) {
				t.Fatalf("the load does not run")
			}
			if p.active(c) != 1 {
				t.Fatalf("pool on node %d, want node 1", p.active(c))
			}
			isolated := time.Now()
			must(t, c.Node(1).Isolate(ctx)) // returns once node 1 says non-Primary
			nonPrimary := time.Now()
			var left time.Duration
			if !waitFor(10*time.Second, func() bool {
				if p.active(c) != 1 {
					left = time.Since(nonPrimary)
					return true
				}
				return false
			}) {
				st, why := p.state(c, 1)
				t.Fatalf("pool still on node 1 10 s after it left the Primary component (%v: %v)", st, why)
			}
			time.Sleep(time.Second)
			ok, nodes, errs := l.since(nonPrimary.Add(100 * time.Millisecond))
			if len(errs) != 0 {
				t.Errorf("%d writes failed after node 1 said non-Primary; first: %v", len(errs), errs[0])
			}
			if nodes[1] != 0 || ok == 0 {
				t.Errorf("writes after node 1 left the Primary component: %v (by node), want all on the others", nodes)
			}
			if st, _ := p.state(c, 1); st != failover.HostNotReady {
				t.Errorf("node 1 in Stats: %v, want not-ready", st)
			}
			_, _, during := l.since(isolated)
			fig(t.Name(), "pool_left_node1_after_nonprimary", left.Round(time.Millisecond))
			fig(t.Name(), "isolation_to_nonprimary", nonPrimary.Sub(isolated).Round(time.Millisecond))
			fig(t.Name(), "writes_failed_while_node1_noticed", len(during)-len(errs))
			for i, e := range during {
				if i < 4 {
					fig(t.Name(), fmt.Sprintf("failed_write_%d", i), fmt.Sprintf("%v (SafeToRetry %v)", e, mysqlfailover.SafeToRetry(e)))
				}
			}
			fig(t.Name(), "writes_after_nonprimary", fmt.Sprint(ok, nodes))
			// No fall-back to it while it is not ready, however long; then back once it is.
			must(t, c.Node(1).Unisolate(ctx))
			whole(t)
			if !waitFor(15*time.Second, func() bool { return p.active(c) == 1 }) {
				if probing {
					t.Errorf("pool never returned to node 1 once it was synced again (on node %d)", p.active(c))
				}
			}
			l.halt()
			l.checkRows(t, ctx, c.Node(2), tab)
			committed := 0
			for _, id := range l.lostIDs {
				var k int
				must(t, c.Node(2).Admin().QueryRowContext(ctx, fmt.Sprintf("SELECT COUNT(*) FROM app.%s WHERE id = %d", tab, id)).Scan(&k))
				committed += k
			}
			fig(t.Name(), "failed_writes_committed_anyway", fmt.Sprintf("%d of %d", committed, len(l.lostIDs)))
		})
	}

	// wsrep_reject_queries=ALL on the writer: its status still says ready, Primary and
	// Synced; its 1047 moves the pool, statements run elsewhere with no error.
	t.Run("reject queries", func(t *testing.T) {
		tab := newTable(t)
		p := open(t, c, "readTimeout=5s")
		l := startLoad(t, ctx, c, p, tab, 2)
		defer l.halt()
		waitFor(5*time.Second, func() bool { ok, _, _ := l.since(time.Time{}); return ok > 10 })
		must(t, c.Node(1).RejectQueries(ctx, harness.RejectAll))
		at := time.Now() // writes sent before the SET took effect may be on node 1
		if !waitFor(5*time.Second, func() bool { return p.active(c) != 1 }) {
			t.Fatalf("pool still on node 1 under wsrep_reject_queries=ALL")
		}
		time.Sleep(500 * time.Millisecond)
		ok, nodes, errs := l.since(at)
		if len(errs) != 0 || nodes[1] != 0 || ok == 0 {
			t.Errorf("under reject_queries: %d writes by node %v, %d errors (first %v); want all elsewhere, none failed", ok, nodes, len(errs), first(errs))
		}
		must(t, c.Node(1).RejectQueries(ctx, harness.RejectNone))
	})

	// A desynced writer still serves, but may fall behind: the probes read it and move
	// the pool at once; it returns after switchBackDelay of synced probes.
	t.Run("desync", func(t *testing.T) {
		p := open(t, c, "checkInterval=100ms&switchBackDelay=1s")
		must(t, p.db.PingContext(ctx))
		if !waitFor(5*time.Second, func() bool { st, _ := p.state(c, 1); return st == failover.HostUp && p.active(c) == 1 }) {
			t.Fatalf("the pool never settled on node 1")
		}
		at := time.Now()
		must(t, c.Node(1).SetDesync(ctx, true))
		if !waitFor(5*time.Second, func() bool { return p.active(c) != 1 }) {
			t.Fatalf("pool still on node 1 while it is desynced")
		}
		fig(t.Name(), "pool_left_desynced_node1_after", time.Since(at).Round(time.Millisecond))
		n, err := nodeOf(ctx, c, p.db)
		if err != nil || n == 1 {
			t.Errorf("a statement ran on node %d (%v), want another node", n, err)
		}
		must(t, c.Node(1).SetDesync(ctx, false))
		if !waitFor(10*time.Second, func() bool { return p.active(c) == 1 }) {
			t.Errorf("pool never returned to node 1 after it synced again")
		}
	})

	// Quorum lost: the survivor is non-Primary, like the isolated ones: no host is ready,
	// and a statement fails with a NoHostAvailableError that says why for each; once
	// the quorum is back, statements run again.
	t.Run("quorum lost and back", func(t *testing.T) {
		p := open(t, c, "readTimeout=3s&retriesAllDown=2")
		must(t, p.db.PingContext(ctx))
		must(t, c.LoseQuorum(ctx, 1))
		var nh *failover.NoHostAvailableError
		var err error
		if !waitFor(10*time.Second, func() bool {
			var x int
			err = p.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM app.w1").Scan(&x)
			return errors.As(err, &nh)
		}) {
			t.Fatalf("with no node in a Primary component: %v, want a *failover.NoHostAvailableError", err)
		}
		for _, h := range nh.Hosts {
			if h.Err == nil {
				continue
			}
			var nr interface{ Demoted() bool }
			if !errors.As(h.Err, &nr) {
				t.Errorf("%s: %v, want a not-ready reason", h.Host, h.Err)
			}
		}
		fig(t.Name(), "error", err)
		must(t, c.RestoreQuorum(ctx))
		whole(t)
		var last error
		if !waitFor(10*time.Second, func() bool {
			var x int
			last = p.db.QueryRowContext(ctx, "SELECT COUNT(*) FROM app.w1").Scan(&x)
			return last == nil
		}) {
			t.Fatalf("statements still fail after the quorum came back: %v; %+v", last, p.cn.Stats())
		}
	})

	// Two application instances with opposite DSN orders write the same row on two
	// nodes: one COMMIT gets Galera's certification failure, 1213; SafeToRetry says run
	// the transaction again, and neither pool moves.
	t.Run("certification conflict", func(t *testing.T) {
		must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.hot (id INT PRIMARY KEY, v INT)"))
		must(t, c.Node(1).Exec(ctx, "INSERT INTO app.hot VALUES (1, 0)"))
		whole(t)
		a := open(t, c, "")
		cfg, err := dsn.Parse(harnessDSNOrder(c, 2, 1, 3))
		must(t, err)
		cnB, err := mysqlfailover.NewConnector(cfg)
		must(t, err)
		b := sql.OpenDB(cnB)
		defer b.Close()
		var conflicts int
		var retry mysqlfailover.Retry
		for range 20 {
			ta, err := a.db.BeginTx(ctx, nil)
			must(t, err)
			tb, err := b.BeginTx(ctx, nil)
			must(t, err)
			_, err = ta.ExecContext(ctx, "UPDATE app.hot SET v = v + 1 WHERE id = 1")
			must(t, err)
			_, err = tb.ExecContext(ctx, "UPDATE app.hot SET v = v + 10 WHERE id = 1")
			must(t, err)
			var wg sync.WaitGroup
			var ea, eb error
			wg.Add(2)
			go func() { defer wg.Done(); ea = ta.Commit() }()
			go func() { defer wg.Done(); eb = tb.Commit() }()
			wg.Wait()
			for _, e := range []error{ea, eb} {
				if e != nil {
					conflicts++
					retry = mysqlfailover.SafeToRetry(e)
					if retry != mysqlfailover.RetryTransaction {
						t.Errorf("conflict %v: SafeToRetry %v, want transaction", e, retry)
					}
				}
			}
			if conflicts > 0 {
				break
			}
		}
		if conflicts == 0 {
			t.Skip("no certification conflict in 20 rounds: the commits did not overlap")
		}
		if a.active(c) != 1 || c.NodeByAddr(cnB.Stats().Active) != 2 {
			t.Errorf("after a conflict the pools are on nodes %d and %d, want 1 and 2", a.active(c), c.NodeByAddr(cnB.Stats().Active))
		}
		fig(t.Name(), "conflicts", conflicts)
	})

	// Replica reads over Galera nodes with causal reads: the writer node 1, reads on
	// nodes 2 and 3, never stale.
	t.Run("replica reads causal", func(t *testing.T) {
		must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.cr (id INT PRIMARY KEY)"))
		whole(t)
		p := open(t, c, "replicaReads=true&checkInterval=100ms&causalReads=local")
		conn, err := p.db.Conn(ctx)
		must(t, err)
		defer conn.Close()
		ri := mysqlfailover.WithReadIntent(ctx, "")
		if !waitFor(5*time.Second, func() bool {
			n, err := nodeOf(ri, c, conn)
			return err == nil && n != 1
		}) {
			t.Fatalf("no Galera node serves replica reads")
		}
		by := map[int]int{}
		stale := 0
		for id := 1; id <= 300; id++ {
			_, err := conn.ExecContext(ctx, fmt.Sprintf("INSERT INTO app.cr VALUES (%d)", id))
			must(t, err)
			var port int
			err = conn.QueryRowContext(ri, fmt.Sprintf("SELECT @@port FROM app.cr WHERE id = %d", id)).Scan(&port)
			if errors.Is(err, sql.ErrNoRows) {
				stale++
				continue
			}
			must(t, err)
			by[c.NodeByPort(port)]++
		}
		if stale != 0 {
			t.Errorf("%d of 300 causal reads were stale", stale)
		}
		if by[2] == 0 || by[3] == 0 {
			t.Errorf("reads by node %v, want nodes 2 and 3 both serving", by)
		}
		st := p.cn.Stats()
		fig(t.Name(), "reads_by_node", by)
		fig(t.Name(), "causal_waits", st.CausalWaits)
		fig(t.Name(), "causal_primary", st.CausalPrimary)
	})

	// The writer killed under load, then restarted (it rejoins by IST): the pool moves to
	// node 2 and comes back to node 1 once it is synced; every acknowledged write is there.
	t.Run("kill and rejoin", func(t *testing.T) {
		tab := newTable(t)
		p := open(t, c, "readTimeout=2s&checkInterval=100ms&switchBackDelay=1s")
		l := startLoad(t, ctx, c, p, tab, 4)
		defer l.halt()
		waitFor(5*time.Second, func() bool { ok, _, _ := l.since(time.Time{}); return ok > 20 })
		killed := time.Now()
		must(t, c.Node(1).Kill())
		if !waitFor(10*time.Second, func() bool { return p.active(c) != 1 }) {
			t.Fatalf("pool still on node 1 after its kill")
		}
		fig(t.Name(), "pool_left_killed_node1_after", time.Since(killed).Round(time.Millisecond))
		must(t, c.Node(1).Restart(ctx))
		whole(t)
		if !waitFor(15*time.Second, func() bool { return p.active(c) == 1 }) {
			t.Errorf("pool never returned to node 1 after it rejoined")
		}
		time.Sleep(300 * time.Millisecond)
		l.halt()
		ok, _, errs := l.since(killed)
		fig(t.Name(), "writes_after_kill", ok)
		fig(t.Name(), "errors_after_kill", len(errs))
		// A write whose commit was replicating when the view changed (node 1 evicted)
		// gets 1180 "Not connected to Primary Component" from its node: it may or may not
		// have committed, and SafeToRetry says nothing may be run again.
		viewChange := 0
		for _, e := range errs {
			var me *mysql.MySQLError
			switch {
			case errors.As(e, &me) && me.Number == 1180:
				viewChange++
			case mysqlfailover.SafeToRetry(e) == mysqlfailover.RetryNothing:
				var fe *failover.FailoverError
				if !errors.As(e, &fe) || !fe.MaybeExecuted {
					t.Errorf("a write failed with %v: want a FailoverError that may have run, or one safe to retry", e)
				}
			}
			if mysqlfailover.SafeToRetry(e) != mysqlfailover.RetryNothing && errors.As(e, &me) && me.Number == 1180 {
				t.Errorf("1180 during a view change: SafeToRetry %v, want nothing", mysqlfailover.SafeToRetry(e))
			}
		}
		fig(t.Name(), "errors_1180_view_change", viewChange)
		l.checkRows(t, ctx, c.Node(1), tab)
	})
}

func first(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return errs[0]
}

// harnessDSNOrder is the cluster's DSN with the nodes' proxies in the order given.
func harnessDSNOrder(c *harness.Cluster, nodes ...int) string {
	hosts := ""
	for i, n := range nodes {
		if i > 0 {
			hosts += ","
		}
		hosts += c.Node(n).ProxyAddr()
	}
	return harness.AppUser + ":" + harness.AppPassword + "@tcp(" + hosts + ")/" + harness.AppDB
}
