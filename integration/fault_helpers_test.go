package integration

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Helpers of the scenarios (faults of one session, full hosts, per-host connect
// failures, transactions opened in SQL): a pool with its connector and events, a
// background workload of autocommit writers on pinned connections, and the checks of
// where the pool is and of the rows on every node.

// faultPool is a mysqlfailover pool built with mysqlfailover.NewConnector, so that the
// test can read Connector.Stats and call SwitchTo, with its events recorded.
type faultPool struct {
	db *sql.DB
	cn *mysqlfailover.Connector
	ev *eventLog
}

// openFaultPool opens the pool on dsnStr and closes it when the test ends.
func openFaultPool(t testing.TB, dsnStr string) *faultPool {
	t.Helper()
	cfg, err := dsn.Parse(dsnStr)
	must(t, err)
	ev := &eventLog{}
	cn, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithEventHook(ev.hook))
	must(t, err)
	db := sql.OpenDB(cn)
	t.Cleanup(func() { db.Close() })
	return &faultPool{db: db, cn: cn, ev: ev}
}

// active is the node of Connector.Stats().Active (0 when it names no node).
func (p *faultPool) active(c *harness.Cluster) int { return c.NodeByAddr(p.cn.Stats().Active) }

// switches is the number of EventSwitch events recorded so far.
func (p *faultPool) switches() int { return p.ev.count(failover.EventSwitch, "") }

// session is what a pinned connection's session is: its server's node and thread id.
type session struct {
	node int
	id   int64
}

func sessionOf(ctx context.Context, c *harness.Cluster, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (session, error) {
	var port int
	var id int64
	if err := q.QueryRowContext(ctx, "SELECT @@port, CONNECTION_ID()").Scan(&port, &id); err != nil {
		return session{}, err
	}
	return session{node: c.NodeByPort(port), id: id}, nil
}

// errKind names an error for logs and figures.
func errKind(err error) string {
	var fe *failover.FailoverError
	var nh *failover.NoHostAvailableError
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, failover.ErrCommitOutcomeUnknown):
		return "commit-outcome-unknown"
	case errors.Is(err, failover.ErrTxLost):
		return "tx-lost"
	case errors.As(err, &fe):
		return "failover"
	case errors.As(err, &nh):
		return "nohost"
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return "context"
	case errors.As(err, &me):
		return fmt.Sprintf("mysql-%d", me.Number)
	case errors.Is(err, sqldriver.ErrBadConn):
		return "badconn"
	default:
		return "other"
	}
}

// wantSessionFault checks err as the error of a statement of pool p whose session died on
// a host that still answers: a *failover.FailoverError with Failed == Current == addr (the
// host as the DSN names it: a node's proxy address, or its real one with
// DirectClusterDSN), never driver.ErrBadConn, and an EventSessionEnded about addr. It
// returns the FailoverError (nil when err is not one).
func wantSessionFault(t *testing.T, c *harness.Cluster, p *faultPool, what string, err error, addr string) *failover.FailoverError {
	t.Helper()
	if p.ev.count(failover.EventSessionEnded, addr) == 0 {
		t.Errorf("%s: no %s event about %s", what, failover.EventSessionEnded, addr)
	}
	if errors.Is(err, sqldriver.ErrBadConn) {
		t.Errorf("%s: %v matches driver.ErrBadConn: database/sql would run it again", what, err)
	}
	var fe *failover.FailoverError
	if !errors.As(err, &fe) {
		t.Errorf("%s: %T %v, want a *failover.FailoverError", what, err, err)
		return nil
	}
	if fe.Failed != addr || fe.Current != addr {
		t.Errorf("%s: FailoverError Failed=%q (node %d) Current=%q (node %d), want both %q (node %d): the host answers, only the session died",
			what, fe.Failed, c.NodeByAddr(fe.Failed), fe.Current, c.NodeByAddr(fe.Current), addr, c.NodeByAddr(addr))
	}
	return fe
}

// wantPoolOn checks that the pool is on node: Stats().Active, a statement on a pooled
// connection, and no switch event since the pool was opened.
func wantPoolOn(t *testing.T, ctx context.Context, c *harness.Cluster, p *faultPool, node int, when string) {
	t.Helper()
	if a := p.active(c); a != node {
		t.Errorf("%s: Connector.Stats().Active is node %d (%s), want node %d", when, a, p.cn.Stats().Active, node)
	}
	if n, err := nodeOf(ctx, c, p.db); err != nil || n != node {
		t.Errorf("%s: a pooled statement ran on node %d (%v), want node %d", when, n, err, node)
	}
	if sw := p.ev.of(failover.EventSwitch, "", time.Time{}); len(sw) != 0 {
		t.Errorf("%s: %d switch events, want none: %v", when, len(sw), sw)
	}
	if hf := p.ev.of(failover.EventHostFailed, "", time.Time{}); len(hf) != 0 {
		t.Errorf("%s: %d host-failed events, want none: %v", when, len(hf), hf)
	}
}

// writeLoad is a background workload of autocommit writers, each on its own pinned
// connection opened before the fault, writing rows with unique (w, k) keys into a table
// (id AUTO_INCREMENT, w, k, port). The row records @@port of the server that ran it.
type writeLoad struct {
	table string
	stop  atomic.Bool
	wg    sync.WaitGroup

	mu     sync.Mutex
	acked  map[[2]int]bool // INSERTs that returned nil
	failed []writeFail
	total  int
}

type writeFail struct {
	w, k int
	at   time.Time
	err  error
}

// createWriteTable creates table (in database app) on node 1 and waits until the replicas
// have it.
func createWriteTable(t *testing.T, ctx context.Context, c *harness.Cluster, table string) {
	t.Helper()
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app."+table+
		" (id INT AUTO_INCREMENT PRIMARY KEY, w INT NOT NULL, k INT NOT NULL, port INT NOT NULL, KEY (w, k))"))
	must(t, c.WaitReplicasCaughtUp(ctx))
}

// startWriters starts n writers on db, each on a connection it pins before starting, and
// returns once every writer has written its first row. pause is the time between two
// writes of one writer. Call stopWait (also on t.Fatal: it is registered as a clean-up).
func startWriters(t *testing.T, ctx context.Context, db *sql.DB, table string, n int, pause time.Duration) *writeLoad {
	t.Helper()
	l := &writeLoad{table: table, acked: map[[2]int]bool{}}
	started := make(chan error, n)
	for w := 1; w <= n; w++ {
		sc, err := db.Conn(ctx)
		must(t, err)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			defer sc.Close()
			for k := 1; !l.stop.Load() && ctx.Err() == nil; k++ {
				sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				_, err := sc.ExecContext(sctx, fmt.Sprintf("INSERT INTO app.%s (w, k, port) VALUES (%d, %d, @@port)", table, w, k))
				cancel()
				l.mu.Lock()
				l.total++
				if err == nil {
					l.acked[[2]int{w, k}] = true
				} else {
					l.failed = append(l.failed, writeFail{w: w, k: k, at: time.Now(), err: err})
				}
				l.mu.Unlock()
				if k == 1 {
					started <- err
				}
				time.Sleep(pause)
			}
		}()
	}
	t.Cleanup(l.stopWait)
	for range n {
		if err := <-started; err != nil {
			t.Fatalf("writer's first INSERT: %v", err)
		}
	}
	return l
}

// stopWait stops the writers and waits for them.
func (l *writeLoad) stopWait() {
	l.stop.Store(true)
	l.wg.Wait()
}

// counts returns the writes so far and the failed ones.
func (l *writeLoad) counts() (total int, failed []writeFail) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.total, append([]writeFail(nil), l.failed...)
}

// waitMoreWrites waits (at most d) until the writers have made n more writes than now,
// failed or not, so that the workload ran on after the fault.
func (l *writeLoad) waitMoreWrites(n int, d time.Duration) bool {
	total, _ := l.counts()
	return waitFor(d, func() bool {
		now, _ := l.counts()
		return now >= total+n
	})
}

// checkWrites stops the workload and checks the rows of every node (admin connections,
// after the replicas caught up): every acknowledged write is on node 1, written there
// (port), exactly once; no write ran twice; nothing was written on another node directly.
// It logs the figures and fails the test for each failed write on these connections
// (the goal: only the statement that hit the fault errs).
func (l *writeLoad) checkWrites(t *testing.T, ctx context.Context, c *harness.Cluster, name string) {
	t.Helper()
	l.stopWait()
	must(t, c.WaitReplicasCaughtUp(ctx))
	total, failed := l.counts()
	kinds := map[string]int{}
	for _, f := range failed {
		kinds[errKind(f.err)]++
		if errors.Is(f.err, sqldriver.ErrBadConn) {
			t.Errorf("writer %d write %d: %v matches driver.ErrBadConn", f.w, f.k, f.err)
		}
	}
	t.Logf("FIGURE %s: workload_writes=%d", name, total)
	t.Logf("FIGURE %s: workload_failed_writes=%d", name, len(failed))
	for _, k := range sortedKeys(kinds) {
		t.Logf("FIGURE %s: workload_failed_%s=%d", name, k, kinds[k])
	}
	for k, f := range failed {
		if k < 5 {
			t.Errorf("a writer on another connection failed (writer %d, write %d): %s: %v", f.w, f.k, errKind(f.err), f.err)
		}
	}
	if len(failed) > 5 {
		t.Errorf("... %d failed writes on other connections in all, want 0", len(failed))
	}
	l.mu.Lock()
	acked := l.acked
	l.mu.Unlock()
	for _, n := range c.Nodes() {
		if n.State() != harness.Running {
			continue
		}
		rows, err := n.Admin().QueryContext(ctx, "SELECT w, k, port, COUNT(*) FROM app."+l.table+" GROUP BY w, k, port")
		must(t, err)
		seen := map[[2]int]int{}
		direct, twice := 0, 0
		for rows.Next() {
			var w, k, port, cnt int
			must(t, rows.Scan(&w, &k, &port, &cnt))
			seen[[2]int{w, k}] += cnt
			if port != c.Node(1).Port() {
				direct++
			}
		}
		must(t, rows.Err())
		rows.Close()
		for _, cnt := range seen {
			if cnt > 1 {
				twice++
			}
		}
		missing := 0
		for key := range acked {
			if seen[key] != 1 {
				missing++
			}
		}
		t.Logf("FIGURE %s: node%d_workload_rows=%d", name, n.Index(), len(seen))
		if missing > 0 {
			t.Errorf("node %d lacks %d of the %d acknowledged writes", n.Index(), missing, len(acked))
		}
		if twice > 0 {
			t.Errorf("node %d has %d writes that ran more than once", n.Index(), twice)
		}
		if direct > 0 {
			t.Errorf("node %d has %d rows written on a server other than node 1", n.Index(), direct)
		}
	}
}

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// waitFor polls cond every 10 ms until it holds or d passes; it reports whether it held.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitRunning waits until the server thread id on node n runs a statement containing
// marker (information_schema.PROCESSLIST), so a KILL hits it busy.
func waitRunning(t *testing.T, ctx context.Context, n *harness.Node, id int64, marker string) {
	t.Helper()
	ok := waitFor(5*time.Second, func() bool {
		info, err := n.QueryString(ctx, "SELECT COALESCE(INFO, '') FROM information_schema.PROCESSLIST WHERE ID = ?", id)
		return err == nil && strings.Contains(info, marker)
	})
	if !ok {
		t.Fatalf("session %d on node %d never ran %q", id, n.Index(), marker)
	}
}

// waitGone waits until the server thread id has left node n's processlist.
func waitGone(t *testing.T, ctx context.Context, n *harness.Node, id int64) {
	t.Helper()
	ok := waitFor(5*time.Second, func() bool {
		v, err := n.QueryInt(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", id)
		return err == nil && v == 0
	})
	if !ok {
		t.Fatalf("session %d still on node %d 5 s after it was killed", id, n.Index())
	}
}

// statusOf reads global status counters of node n.
func statusOf(ctx context.Context, t *testing.T, n *harness.Node, names ...string) map[string]int64 {
	t.Helper()
	q := "SHOW GLOBAL STATUS WHERE Variable_name IN ('" + strings.Join(names, "','") + "')"
	rows, err := n.Admin().QueryContext(ctx, q)
	must(t, err)
	defer rows.Close()
	out := map[string]int64{}
	for rows.Next() {
		var name string
		var v int64
		must(t, rows.Scan(&name, &v))
		out[name] = v
	}
	must(t, rows.Err())
	return out
}
