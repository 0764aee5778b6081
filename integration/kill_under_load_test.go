package integration

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/mysqlfailover/mysqlfailover" // registers "mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// killLoadOp is one statement a load worker ran.
type killLoadOp struct {
	worker, seq int
	insert      bool // INSERT (else SELECT @@port)
	start, end  time.Time
	node        int // the node a SELECT ran on (0 for an INSERT or a failure)
	err         error
}

// TestKillPrimaryUnderLoad: 16 goroutines run SELECT @@port and autocommit INSERTs
// through an 8-connection pool while the primary is killed with SIGKILL. Only statements
// in flight at the kill may fail, each with a *failover.FailoverError naming node 1 as the
// failed host and node 2 as the current one; every statement started after the first
// failure was returned succeeds, on node 2. No failed INSERT ran on node 2 (not replayed),
// and every INSERT that succeeded after the kill is on node 2.
//
// Node 2 plays a promoted replica: its global read_only is off and the DSN has
// failOverReadOnly=false, so INSERTs succeed there and any failure is a failover failure.
func TestKillPrimaryUnderLoad(t *testing.T) {
	const (
		workers  = 16
		poolSize = 8
	)
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	name := t.Name()

	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.killload (w INT NOT NULL, k INT NOT NULL, port INT NOT NULL, PRIMARY KEY (w, k))"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	must(t, c.Node(2).SetReadOnly(ctx, false))

	db := openDB(t, "mysqlfailover", c.DSN("readTimeout=2s&failOverReadOnly=false&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"))
	db.SetMaxOpenConns(poolSize)
	db.SetMaxIdleConns(poolSize)

	var (
		stop        atomic.Bool
		firstNode2  atomic.Int64 // UnixNano of the end of the first successful SELECT on node 2
		killStarted atomic.Int64 // UnixNano, set just before Kill
		ops         = make([][]killLoadOp, workers)
		wg          sync.WaitGroup
	)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for seq := 0; !stop.Load() && ctx.Err() == nil; seq++ {
				op := killLoadOp{worker: w, seq: seq, insert: seq%2 == 1, start: time.Now()}
				sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
				if op.insert {
					_, op.err = db.ExecContext(sctx, fmt.Sprintf(
						"INSERT INTO killload (w, k, port) VALUES (%d, %d, @@port)", w, seq))
				} else {
					var port int
					op.err = db.QueryRowContext(sctx, "SELECT @@port").Scan(&port)
					if op.err == nil {
						op.node = c.NodeByPort(port)
					}
				}
				cancel()
				op.end = time.Now()
				if op.err == nil && op.node == 2 && killStarted.Load() != 0 {
					firstNode2.CompareAndSwap(0, op.end.UnixNano())
				}
				ops[w] = append(ops[w], op)
			}
		}()
	}
	stopLoad := func() {
		stop.Store(true)
		wg.Wait()
	}
	defer stopLoad() // on t.Fatal; a second call is harmless

	time.Sleep(500 * time.Millisecond) // load on node 1, the pool full
	killStart := time.Now()
	killStarted.Store(killStart.UnixNano())
	must(t, c.Node(1).Kill())
	killReturned := time.Now()

	// Keep the load on until it has run on node 2 for a second, and for a second after
	// Kill returned (a docker kill can take longer than the switch), or 10 s.
	deadline := killStart.Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if f := firstNode2.Load(); f != 0 && time.Since(later(time.Unix(0, f), killReturned)) > time.Second {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	stopLoad()

	var all []killLoadOp
	for _, w := range ops {
		all = append(all, w...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].start.Before(all[j].start) })

	// The first failure returned.
	var firstFail time.Time
	for _, op := range all {
		if op.err != nil && (firstFail.IsZero() || op.end.Before(firstFail)) {
			firstFail = op.end
		}
	}

	counts := map[string]int{}
	var ok, failed, maybeExecuted, inFlightAtKill, beforeKill, afterKill, afterFirstFail int
	var maxAfterKill time.Duration
	nodesAfter := map[int]int{} // SELECTs started after Kill returned, by node
	failedInserts := map[[2]int]bool{}
	okInsertsAfterKill := map[[2]int]bool{}
	reported := 0
	report := func(format string, args ...any) {
		if reported < 10 {
			t.Errorf(format, args...)
		}
		reported++
	}
	for _, op := range all {
		kind := errKind(op.err)
		counts[kind]++
		if op.start.Before(killStart) {
			beforeKill++
			if op.end.After(killStart) {
				inFlightAtKill++
			}
		} else {
			afterKill++
			if d := op.end.Sub(op.start); d > maxAfterKill {
				maxAfterKill = d
			}
		}
		if !firstFail.IsZero() && op.start.After(firstFail) {
			afterFirstFail++
		}
		key := [2]int{op.worker, op.seq}
		if op.err == nil {
			ok++
			if op.start.After(killReturned) {
				if op.insert {
					okInsertsAfterKill[key] = true
				} else {
					nodesAfter[op.node]++
					if op.node != 2 {
						report("SELECT started %v after the kill returned ran on node %d, want 2",
							op.start.Sub(killReturned), op.node)
					}
				}
			}
			continue
		}
		failed++
		if op.insert {
			failedInserts[key] = true
		}
		var fe *failover.FailoverError
		if !errors.As(op.err, &fe) {
			report("worker %d op %d (insert=%v, started %v after the kill): error %T is not a *failover.FailoverError: %v",
				op.worker, op.seq, op.insert, op.start.Sub(killStart), op.err, op.err)
			continue
		}
		if fe.MaybeExecuted {
			maybeExecuted++
		}
		if f, cur := c.NodeByAddr(fe.Failed), c.NodeByAddr(fe.Current); f != 1 || cur != 2 {
			report("FailoverError names failed node %d (%s) and current node %d (%s), want 1 and 2: %v",
				f, fe.Failed, cur, fe.Current, fe)
		}
		if op.start.After(firstFail) {
			report("worker %d op %d started %v after the first failure was returned and failed: %v",
				op.worker, op.seq, op.start.Sub(firstFail), op.err)
		}
		if op.end.Before(killStart) {
			report("worker %d op %d failed %v before the kill: %v",
				op.worker, op.seq, killStart.Sub(op.end), op.err)
		}
	}

	f2 := firstNode2.Load()
	if f2 == 0 {
		t.Errorf("no SELECT succeeded on node 2 within 10 s of the kill")
	}

	// The data on node 2 (node 1 is dead): failed INSERTs never ran there, successful ones
	// started after the kill all did.
	rows, err := c.Node(2).Admin().QueryContext(ctx, "SELECT w, k, port FROM app.killload")
	must(t, err)
	onNode2 := map[[2]int]int{} // key -> node it ran on (by port)
	for rows.Next() {
		var w, k, port int
		must(t, rows.Scan(&w, &k, &port))
		onNode2[[2]int{w, k}] = c.NodeByPort(port)
	}
	must(t, rows.Err())
	must(t, rows.Close())
	failedRanOnNode1 := 0
	for key := range failedInserts {
		switch onNode2[key] {
		case 2, 3:
			report("failed INSERT (w=%d, k=%d) ran on node %d: replayed after the failure", key[0], key[1], onNode2[key])
		case 1:
			failedRanOnNode1++ // ran on node 1 before it died, replicated: the ambiguous outcome
		}
	}
	for key := range okInsertsAfterKill {
		if n := onNode2[key]; n != 2 {
			report("INSERT (w=%d, k=%d) succeeded after the kill but its row is on node %d (0: missing), want 2", key[0], key[1], n)
		}
	}
	if reported > 10 {
		t.Errorf("... %d problems in all", reported)
	}

	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", name, k, v) }
	fig("statements", len(all))
	fig("statements_before_kill", beforeKill)
	fig("statements_after_kill", afterKill)
	fig("in_flight_at_kill", inFlightAtKill)
	fig("started_after_first_failure", afterFirstFail)
	fig("ok", ok)
	fig("failed", failed)
	for _, k := range []string{"failover", "nohost", "context", "other"} {
		fig("failed_"+k, counts[k])
	}
	for k, v := range counts {
		if len(k) > 6 && k[:6] == "mysql-" {
			fig("failed_"+k, v)
		}
	}
	fig("failed_maybe_executed", maybeExecuted)
	fig("failed_inserts", len(failedInserts))
	fig("failed_inserts_ran_on_node1", failedRanOnNode1)
	fig("ok_inserts_after_kill", len(okInsertsAfterKill))
	fig("selects_after_kill_node2", nodesAfter[2])
	fig("kill_call", killReturned.Sub(killStart).Round(time.Millisecond))
	if !firstFail.IsZero() {
		fig("kill_to_first_failure", firstFail.Sub(killStart).Round(time.Millisecond))
	}
	if f2 != 0 {
		fig("kill_to_first_success_node2", time.Unix(0, f2).Sub(killStart).Round(time.Millisecond))
	}
	fig("max_statement_after_kill", maxAfterKill.Round(time.Millisecond))
}
