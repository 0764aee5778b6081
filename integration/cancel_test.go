package integration

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Case 02 (ctx-cancel-is-not-a-host-failure): the caller's own deadline closes the
// physical connection (go-sql-driver does), but the host is healthy: no failover, no
// event, no connection to a secondary; cancelled connections are replaced on the primary.

func TestCallerCancellation(t *testing.T) {
	const name = "TestCallerCancellation"
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	db, ev := openWithEvents(t, c.DSN("readTimeout=5s&secondsBeforeRetryMaster=30"))
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)

	if node, err := nodeOf(ctx, c, db); err != nil || node != 1 {
		t.Fatalf("before: node %d, %v; want node 1", node, err)
	}
	conns := map[int]int64{}
	for i := 2; i <= 3; i++ {
		n, err := c.Node(i).Connections(ctx)
		must(t, err)
		conns[i] = n
	}

	// 20 callers whose 100 ms deadline ends long before SLEEP(2).
	const callers = 20
	errs := make([]error, callers)
	took := make([]time.Duration, callers)
	var wg sync.WaitGroup
	gate := make(chan struct{})
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
			defer cancel()
			start := time.Now()
			rows, err := db.QueryContext(cctx, "SELECT SLEEP(2)")
			if err == nil {
				for rows.Next() {
				}
				err = rows.Err()
				if cerr := rows.Close(); err == nil {
					err = cerr
				}
				if err == nil {
					err = errors.New("SELECT SLEEP(2) finished within a 100 ms deadline")
				}
			}
			took[i] = time.Since(start)
			errs[i] = err
		}()
	}
	close(gate)
	wg.Wait()

	// Then 20 plain statements, concurrently too: the pool replaces its cancelled
	// connections, on node 1.
	nodes := make([]int, callers)
	nerrs := make([]error, callers)
	for i := range callers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			nodes[i], nerrs[i] = nodeOf(sctx, c, db)
		}()
	}
	wg.Wait()

	after := map[int]int64{}
	for i := 2; i <= 3; i++ {
		n, err := c.Node(i).Connections(ctx)
		must(t, err)
		after[i] = n
	}

	var maxTook time.Duration
	deadline := 0
	for i, err := range errs {
		maxTook = max(maxTook, took[i])
		if errors.Is(err, context.DeadlineExceeded) {
			deadline++
		}
	}
	onNode1 := 0
	for i := range nodes {
		if nerrs[i] == nil && nodes[i] == 1 {
			onNode1++
		}
	}
	kinds := map[failover.EventKind]int{}
	connectsOn := map[int]int{}
	failedConnects := 0
	for _, e := range ev.all() {
		kinds[e.Kind]++
		if e.Kind == failover.EventConnect {
			connectsOn[c.NodeByAddr(e.Host)]++
			if e.Err != nil {
				failedConnects++
			}
		}
	}

	t.Logf("FIGURE %s: cancelled_calls_with_deadline_exceeded=%d/%d", name, deadline, callers)
	t.Logf("FIGURE %s: cancelled_call_max_ms=%d", name, maxTook.Milliseconds())
	t.Logf("FIGURE %s: following_statements_on_node1=%d/%d", name, onNode1, callers)
	t.Logf("FIGURE %s: node1_connects=%d node2_connects=%d node3_connects=%d failed_connects=%d", name,
		connectsOn[1], connectsOn[2], connectsOn[3], failedConnects)
	t.Logf("FIGURE %s: node2_connections_delta=%d node3_connections_delta=%d", name, after[2]-conns[2], after[3]-conns[3])
	t.Logf("FIGURE %s: host_failed=%d switch=%d fall_back=%d fall_back_failed=%d", name,
		kinds[failover.EventHostFailed], kinds[failover.EventSwitch], kinds[failover.EventFallBack], kinds[failover.EventFallBackFailed])

	for i, err := range errs {
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("cancelled call %d: %v, want context.DeadlineExceeded", i, err)
		}
		var fe *failover.FailoverError
		if errors.As(err, &fe) {
			t.Errorf("cancelled call %d was treated as a host failure: %v", i, err)
		}
		if took[i] > 1500*time.Millisecond {
			t.Errorf("cancelled call %d returned after %v, want about 100 ms", i, took[i])
		}
	}
	for i := range nodes {
		if nerrs[i] != nil || nodes[i] != 1 {
			t.Errorf("statement %d after the cancellations: node %d, %v; want node 1", i, nodes[i], nerrs[i])
		}
	}
	for i := 2; i <= 3; i++ {
		if after[i] != conns[i] {
			t.Errorf("node %d's Connections counter went from %d to %d: a secondary was connected to", i, conns[i], after[i])
		}
		if connectsOn[i] != 0 {
			t.Errorf("%d connection attempts on node %d, want 0", connectsOn[i], i)
		}
	}
	if failedConnects != 0 {
		t.Errorf("%d failed connection attempts, want 0", failedConnects)
	}
	for _, k := range []failover.EventKind{failover.EventHostFailed, failover.EventSwitch, failover.EventFallBack, failover.EventFallBackFailed} {
		if kinds[k] != 0 {
			t.Errorf("%d %s events, want none", kinds[k], k)
		}
	}
}
