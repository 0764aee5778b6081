package integration

// The server sessions a read/write-splitting pool holds: the replica sessions
// are the pool's, shared, so that those open on a replica follow the concurrent reads.

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// TestReplicaSessionsFollowLoad: a pool of 64 connections over a primary and two
// replicas, every connection busy, 64 workers, each running one read-intent SELECT in
// four and the others on the primary, for 2 s; then a pool of 32 the same way. Sampled
// every 50 ms on the servers (information_schema.PROCESSLIST, the application user:
// the probe connections included), and the process's goroutines in go-sql-driver's code
// at the end of the load. Asserted: in the pool
// of 32, at most 16 sessions (half the pool) on each replica at any sample, and every
// statement ran where its intent says. Reported: the most sessions on each node and
// go-sql-driver's goroutines (one per open session) under load, and once the pool is
// idle.
func TestReplicaSessionsFollowLoad(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, 2*time.Minute)
	fig := func(name, k string, v any) { t.Logf("FIGURE %s: %s=%v", name, k, v) }
	sessions := func(i int) int {
		v, err := c.Node(i).AppSessions(ctx)
		must(t, err)
		return int(v)
	}
	for _, size := range []int{64, 32} {
		name := fmt.Sprintf("pool=%d", size)
		p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=2s"))
		p.db.SetMaxOpenConns(size)
		p.db.SetMaxIdleConns(size)
		waitReplicasServe(t, ctx, c, p, 2, 3)

		stop := make(chan struct{})
		var wrong, failed, reads, others atomic.Int64
		var wg sync.WaitGroup
		for w := range size {
			wg.Add(1)
			go func() {
				defer wg.Done()
				// From the worker's index: one statement in four a read among those
				// running at once, from the start (connections open without a walk now,
				// so every worker's first statement would run at the same moment).
				for i := w; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					qctx := ctx
					if i%4 == 0 {
						qctx = readIntent(ctx)
					}
					n, err := nodeOf(qctx, c, p.db)
					switch {
					case err != nil:
						failed.Add(1)
					case i%4 == 0 && n == 1, i%4 != 0 && n != 1:
						wrong.Add(1)
					case i%4 == 0:
						reads.Add(1)
					default:
						others.Add(1)
					}
				}
			}()
		}
		var most [4]int
		for end := time.Now().Add(2 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			for i := 1; i <= 3; i++ {
				most[i] = max(most[i], sessions(i))
			}
		}
		loaded := driverGoroutines()
		close(stop)
		wg.Wait()
		fig(name, "reads_and_others", fmt.Sprintf("%d %d", reads.Load(), others.Load()))
		fig(name, "most_sessions_under_load", fmt.Sprintf("node1=%d node2=%d node3=%d", most[1], most[2], most[3]))
		fig(name, "driver_goroutines_under_load", loaded)
		time.Sleep(100 * time.Millisecond) // the last reads' sessions given back
		fig(name, "sessions_idle", fmt.Sprintf("node1=%d node2=%d node3=%d", sessions(1), sessions(2), sessions(3)))
		fig(name, "driver_goroutines_idle", driverGoroutines())
		if failed.Load() != 0 || wrong.Load() != 0 {
			t.Errorf("%s: %d statements failed, %d ran where their intent does not say", name, failed.Load(), wrong.Load())
		}
		if reads.Load() == 0 {
			t.Errorf("%s: no read served", name)
		}
		if size == 32 && (most[2] > size/2 || most[3] > size/2) {
			t.Errorf("%s, one statement in four a read: up to %d and %d sessions on the replicas, want at most %d (half the pool)", name, most[2], most[3], size/2)
		}
		must(t, p.db.Close())
		if !waitFor(5*time.Second, func() bool { return sessions(1)+sessions(2)+sessions(3) == 0 }) {
			t.Errorf("%s: sessions left after the pool's Close: node1=%d node2=%d node3=%d", name, sessions(1), sessions(2), sessions(3))
		}
	}
}

// driverGoroutines counts go-sql-driver's goroutines: the context watcher each open
// connection has (not the harness's toxiproxy goroutines, nor the workers).
func driverGoroutines() int {
	buf := make([]byte, 16<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "github.com/go-sql-driver/mysql.(*mysqlConn).startWatcher") {
			n++
		}
	}
	return n
}
