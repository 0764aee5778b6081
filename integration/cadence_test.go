package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// The monitor's two cadences (calmCheckInterval, package dsn): an idle connector probes
// each host once per calmCheckInterval, and a statement that waits for a frozen host is
// the evidence that puts the host on the alert schedule.
//
//	MYSQLFAILOVER_IDLE_SECONDS=30   seconds of each measurement of TestIdleProbeRate (default 6)

// questions returns node n's Questions counter (every statement the server was sent),
// read over its admin connection (which counts the read itself).
func questions(ctx context.Context, t *testing.T, n *harness.Node) int64 {
	t.Helper()
	var name string
	var v int64
	must(t, n.Admin().QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Questions'").Scan(&name, &v))
	return v
}

// TestIdleProbeRate: the statements per second that one idle connector (a pool of 4,
// opened and then left alone) costs each of 3 nodes at checkInterval=100ms&
// failoverDelay=100ms&targetSessionAttrs=read-write, with every host on the fixed
// schedule (calmCheckInterval=0, the monitor before the cadences) and with the default
// calmCheckInterval (2s). Each rate is the node's Questions over the window, less the
// same node's Questions over a window of the same length with no connector open (the
// replication and the harness's own reads). Asserted: the calm connector costs each
// node less than the fixed schedule. Reported: the rates.
func TestIdleProbeRate(t *testing.T) {
	seconds := envInt(t, "MYSQLFAILOVER_IDLE_SECONDS", 6)
	window := time.Duration(seconds) * time.Second
	c := harness.Start(t, 3)
	ctx := ctxT(t, 4*window+2*time.Minute)
	nodes := c.Nodes()
	measure := func() []float64 {
		before := make([]int64, len(nodes))
		for i, n := range nodes {
			before[i] = questions(ctx, t, n)
		}
		time.Sleep(window)
		out := make([]float64, len(nodes))
		for i, n := range nodes {
			out[i] = float64(questions(ctx, t, n)-before[i]-1) / window.Seconds()
		}
		return out
	}
	base := measure()
	rates := map[string][]float64{}
	for _, mode := range []string{"calmCheckInterval=0", "calmCheckInterval=2s"} {
		db, _, ev := healthOpen(t, c.DSN(detectParams+"&targetSessionAttrs=read-write&"+mode))
		db.SetMaxOpenConns(4)
		db.SetMaxIdleConns(4)
		warmPool(t, ctx, c, db, 4)
		time.Sleep(4 * time.Second) // past the alert hold of the pool's opening
		r := measure()
		for i := range r {
			r[i] -= base[i]
		}
		rates[mode] = r
		if n := ev.count(failover.EventSwitch, ""); n != 0 {
			t.Errorf("%s: %d switches while idle", mode, n)
		}
		must(t, db.Close())
	}
	for i := range nodes {
		fixed, calm := rates["calmCheckInterval=0"][i], rates["calmCheckInterval=2s"][i]
		t.Logf("FIGURE %s: node%d_statements_per_s fixed=%.2f calm=%.2f (baseline %.2f)", t.Name(), i+1, fixed, calm, base[i])
		if calm >= fixed {
			t.Errorf("node %d: an idle calm connector costs %.2f statements/s, the fixed schedule %.2f: want less", i+1, calm, fixed)
		}
	}
}

// TestIdleStatementToFrozenPrimary: an idle connector (calm for seconds: its last probe
// of node 1 may be up to 2 s old) sends a read to node 1 just after node 1 froze
// (SIGSTOP). The read's wait puts node 1 on the alert schedule checkInterval/2 later, the
// probe fails, the pool leaves node 1 and closes its sockets, the read fails with a
// FailoverError, and it runs again on node 2 (mysqlfailover.SafeToRetry says a read may). Asserted: the read is answered by node 2, with
// no error. Reported: how long it took (the goal: within checkInterval + failoverDelay
// + 100 ms, 300 ms), over MYSQLFAILOVER_DETECT_REPEATS freezes.
func TestIdleStatementToFrozenPrimary(t *testing.T) {
	repeats := envInt(t, "MYSQLFAILOVER_DETECT_REPEATS", 1)
	c := harness.Start(t, 2)
	ctx := ctxT(t, time.Duration(repeats)*time.Minute+time.Minute)
	n1 := c.Node(1)
	db, connector, _ := healthOpen(t, c.DSN(detectParams))
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	var took []time.Duration
	within := 0
	warmPool(t, ctx, c, db, 4) // the monitor starts with the first connection
	for i := range repeats {
		if !healthPoll(15*time.Second, func() bool {
			st := connector.Stats()
			h, _ := healthHost(st, n1.ProxyAddr())
			return c.NodeByAddr(st.Active) == 1 && h.State == failover.HostUp
		}) {
			t.Fatalf("freeze %d: the pool is not back on node 1: %+v", i, connector.Stats())
		}
		time.Sleep(5 * time.Second) // calm: the pool's return held the hosts in alert for 3 s
		must(t, n1.Freeze())
		start := time.Now()
		call := freezeSelect(ctx, c, db, 10*time.Second)
		if call.err != nil && mysqlfailover.SafeToRetry(call.err) == mysqlfailover.RetryStatement {
			call = freezeSelect(ctx, c, db, 10*time.Second) // a read: run again, as the application would
		}
		call.took = time.Since(start)
		must(t, n1.Thaw())
		n1.Admin().SetMaxIdleConns(0) // as TestFreezePrimary: node 1's idle admin connections
		n1.Admin().SetMaxIdleConns(2)
		if call.err != nil || call.node != 2 {
			t.Fatalf("freeze %d: the read after node 1 froze: node %d, %v; want node 2, no error", i, call.node, call.err)
		}
		took = append(took, call.took)
		if call.took <= 300*time.Millisecond {
			within++
		}
	}
	t.Logf("FIGURE %s: params=%s", t.Name(), detectParams)
	t.Logf("FIGURE %s: loadavg=%v", t.Name(), harness.LoadAverage())
	t.Logf("FIGURE %s: read_answered_after=%s", t.Name(), durations(took))
	t.Logf("FIGURE %s: within_300ms=%s", t.Name(), fmt.Sprintf("%d/%d", within, len(took)))
}
