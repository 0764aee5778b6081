package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/integration/failovertest"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// The cluster scenarios written for the container backend. Partition and promotion
// run on both backends (the process backend cuts replication with per-replica proxies,
// harness.WithReplicationLinks); the stop/start cycles run on containers only
// (containerOnly), since they add 45 s to the process suite and
// TestKillRestartCyclesNoLeak covers processes.

// containerOnly skips t unless the cluster runs on containers (MYSQLFAILOVER_BACKEND).
func containerOnly(t *testing.T) {
	t.Helper()
	if os.Getenv(harness.EnvBackend) != "container" {
		t.Skipf("container-only scenario: run with %s=container", harness.EnvBackend)
	}
}

// cfWriteLoad is autocommit INSERTs on workers goroutines, each row keyed by its writer and
// sequence and recording the server's @@port.
type cfWriteLoad struct {
	ok, failed atomic.Int64
	mu         sync.Mutex
	failures   map[int]int // per writer
	firstErr   error
	okPerNode  map[int]int
	wg         sync.WaitGroup
	stop       context.CancelFunc
}

func cfStartWriteLoad(ctx context.Context, t *testing.T, c *harness.Cluster, exec func(context.Context, string, ...any) error, table string, workers int) *cfWriteLoad {
	wctx, stop := context.WithCancel(ctx)
	l := &cfWriteLoad{stop: stop, failures: map[int]int{}, okPerNode: map[int]int{}}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for seq := 0; wctx.Err() == nil; seq++ {
				// Not wctx: halt lets the statement in flight finish, so that every
				// write's outcome is known.
				sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				err := exec(sctx, "INSERT INTO "+table+" (w, seq, port) VALUES (?, ?, @@port)", w, seq)
				cancel()
				if err != nil {
					l.failed.Add(1)
					l.mu.Lock()
					l.failures[w]++
					if l.firstErr == nil {
						l.firstErr = err
					}
					l.mu.Unlock()
					time.Sleep(5 * time.Millisecond)
					continue
				}
				l.ok.Add(1)
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	return l
}

func (l *cfWriteLoad) halt() {
	l.stop()
	l.wg.Wait()
}

// cfRowsByPort counts table's rows on node by the @@port they recorded.
func cfRowsByPort(ctx context.Context, t *testing.T, c *harness.Cluster, node int, table string) (total int64, perNode map[int]int64) {
	t.Helper()
	rows, err := c.Node(node).Admin().QueryContext(ctx, "SELECT port, COUNT(*) FROM app."+table+" GROUP BY port")
	must(t, err)
	defer rows.Close()
	perNode = map[int]int64{}
	for rows.Next() {
		var port int
		var n int64
		must(t, rows.Scan(&port, &n))
		perNode[c.NodeByPort(port)] += n
		total += n
	}
	must(t, rows.Err())
	return total, perNode
}

// TestPartitionedPrimary: node 1 cut off from its replicas for 2 s under four
// autocommit writers through mysqlfailover (the client still reaches it). The pool stays
// on node 1 and not one write fails; the replicas receive nothing during the partition
// (their row count stays where it was); node 1 answers on its published port (admin) and
// through its proxy throughout. After Heal the replicas catch up: every acknowledged row
// is on every node.
func TestPartitionedPrimary(t *testing.T) {
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
	c := harness.Start(t, 3, harness.WithReplicationLinks())
	ctx := ctxT(t, 2*time.Minute)
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.part (w INT, seq INT, port INT, PRIMARY KEY (w, seq))"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	db := openDB(t, "mysqlfailover", c.DSN("readTimeout=2s"))
	exec := func(ctx context.Context, q string, args ...any) error {
		_, err := db.ExecContext(ctx, q, args...)
		return err
	}
	load := cfStartWriteLoad(ctx, t, c, exec, "part", 4)
	time.Sleep(300 * time.Millisecond)

	must(t, c.Node(1).Partition(ctx))
	cutAt := time.Now()
	okAtCut := load.ok.Load()
	time.Sleep(300 * time.Millisecond) // what was on the wire before the cut has arrived
	r2Start, _ := cfRowsByPort(ctx, t, c, 2, "part")
	for time.Since(cutAt) < 2*time.Second {
		if _, err := c.Node(1).QueryInt(ctx, "SELECT 1"); err != nil {
			t.Errorf("node 1's published port during the partition: %v", err)
		}
		time.Sleep(200 * time.Millisecond)
	}
	r2End, _ := cfRowsByPort(ctx, t, c, 2, "part")
	r3End, _ := cfRowsByPort(ctx, t, c, 3, "part")
	n1End, _ := cfRowsByPort(ctx, t, c, 1, "part")
	okDuring := load.ok.Load() - okAtCut
	if r2End != r2Start {
		t.Errorf("node 2 went from %d to %d rows during the partition, want no change", r2Start, r2End)
	}
	if okDuring == 0 {
		t.Error("no write succeeded during the partition")
	}

	must(t, c.Node(1).Heal(ctx))
	healAt := time.Now()
	load.halt()
	must(t, c.WaitReplicasCaughtUp(ctx))
	catchUp := time.Since(healAt)

	if f := load.failed.Load(); f != 0 {
		t.Errorf("%d writes failed (first: %v), want 0: the primary stayed reachable", f, load.firstErr)
	}
	total1, per1 := cfRowsByPort(ctx, t, c, 1, "part")
	if per1[1] != total1 || total1 != load.ok.Load() {
		t.Errorf("node 1: %d rows (%v by node), want the %d acknowledged, all written on node 1", total1, per1, load.ok.Load())
	}
	for node := 2; node <= 3; node++ {
		if n, _ := cfRowsByPort(ctx, t, c, node, "part"); n != total1 {
			t.Errorf("node %d has %d rows after Heal, node 1 %d", node, n, total1)
		}
	}
	fig("writes_ok_during_partition", okDuring)
	fig("failed_writes", load.failed.Load())
	fig("rows_behind_on_node2_at_heal", n1End-r2End)
	fig("rows_behind_on_node3_at_heal", n1End-r3End)
	fig("catch_up_after_heal_ms", catchUp.Milliseconds())
}

// TestPromotionUnderWriters: failovertest.Cluster.Promote(2) under four
// autocommit writers with targetSessionAttrs=read-write: node 1 turns read-only, node 2
// takes over, node 3 and node 1 replicate from node 2. No write fails beyond the one a
// writer may have in flight (none is expected: mysqlfailover re-runs a write refused
// with 1290 on the new writer); the writes after the promotion land on node 2; every
// acknowledged write is on every node exactly once.
func TestPromotionUnderWriters(t *testing.T) {
	const workers = 4
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
	fx := failovertest.Start(t, 2)
	c := fx.Harness()
	ctx := ctxT(t, 2*time.Minute)
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.promo (w INT, seq INT, port INT, PRIMARY KEY (w, seq))"))
	must(t, fx.WaitReplicated(ctx))
	db := openDB(t, "mysqlfailover", fx.DSN("targetSessionAttrs=read-write&readTimeout=2s"))
	exec := func(ctx context.Context, q string, args ...any) error {
		_, err := db.ExecContext(ctx, q, args...)
		return err
	}
	load := cfStartWriteLoad(ctx, t, c, exec, "promo", workers)
	time.Sleep(500 * time.Millisecond)

	begin := time.Now()
	must(t, fx.Promote(ctx, 2))
	promote := time.Since(begin)
	okAtPromote := load.ok.Load()
	time.Sleep(1500 * time.Millisecond)
	load.halt()
	okAfter := load.ok.Load() - okAtPromote
	must(t, fx.WaitReplicated(ctx))

	if fx.Primary() != 2 {
		t.Errorf("primary %d after Promote(2)", fx.Primary())
	}
	load.mu.Lock()
	for w, n := range load.failures {
		if n > 1 {
			t.Errorf("writer %d: %d failed writes, want at most the one in flight (first error: %v)", w, n, load.firstErr)
		}
	}
	firstErr := load.firstErr
	load.mu.Unlock()
	var me *mysql.MySQLError
	if errors.As(firstErr, &me) && me.Number == 1290 {
		t.Errorf("a bare 1290 reached the caller: %v", firstErr)
	}
	if okAfter == 0 {
		t.Error("no write succeeded after the promotion")
	}
	var per map[int]int64
	for node := 1; node <= 3; node++ {
		total, p := cfRowsByPort(ctx, t, c, node, "promo")
		if total != load.ok.Load() {
			t.Errorf("node %d has %d rows, want the %d acknowledged writes", node, total, load.ok.Load())
		}
		per = p
	}
	if per[2] == 0 || per[3] != 0 {
		t.Errorf("rows by the node that wrote them: %v, want node 1 then node 2 only", per)
	}
	fig("promote_ms", promote.Milliseconds())
	fig("writes_ok", load.ok.Load())
	fig("writes_ok_after_promotion", okAfter)
	fig("failed_writes", load.failed.Load())
	fig("rows_by_node", fmt.Sprintf("n1=%d n2=%d", per[1], per[2]))
}
