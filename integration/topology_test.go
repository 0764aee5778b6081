package integration

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	_ "github.com/mysqlfailover/mysqlfailover" // registers "mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// topoConnect opens n connections one after another, runs SELECT @@port on each and
// closes it. The pool must keep no idle connection (SetMaxIdleConns(0)), so every one is a
// new connection through the connector. It returns the count per node and the errors.
func topoConnect(ctx context.Context, c *harness.Cluster, db *sql.DB, n int) (map[int]int, []error) {
	nodes := map[int]int{}
	var errs []error
	for range n {
		conn, err := db.Conn(ctx)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		node, err := nodeOf(ctx, c, conn)
		if err != nil {
			errs = append(errs, err)
		} else {
			nodes[node]++
		}
		if err := conn.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	return nodes, errs
}

// topoCounters reads every node's Connections status counter over admin sessions pinned
// for the whole test, so that reading a counter never opens a connection that the counter
// would then count.
type topoCounters struct{ conns []*sql.Conn }

func topoCountersOf(t *testing.T, ctx context.Context, c *harness.Cluster) *topoCounters {
	t.Helper()
	k := &topoCounters{}
	for _, n := range c.Nodes() {
		conn, err := n.Admin().Conn(ctx)
		must(t, err)
		t.Cleanup(func() { conn.Close() })
		k.conns = append(k.conns, conn)
	}
	return k
}

// read returns the counters, indexed by node (index 0 unused).
func (k *topoCounters) read(t *testing.T, ctx context.Context) []int64 {
	t.Helper()
	out := make([]int64, len(k.conns)+1)
	for i, conn := range k.conns {
		var name string
		must(t, conn.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Connections'").Scan(&name, &out[i+1]))
	}
	return out
}

// topoAttempts counts connection attempts per node in events.
func topoAttempts(c *harness.Cluster, events []failover.Event) map[int]int {
	out := map[int]int{}
	for _, e := range events {
		if e.Kind == failover.EventConnect {
			out[c.NodeByAddr(e.Host)]++
		}
	}
	return out
}

// TestDCAware (case 23, local-dc-misconfigured): five nodes labelled dc1, dc1, dc2, dc2,
// dc3 with localDC=dc1&usedHostsPerRemoteDC=1: the dc1 hosts come first, then only the
// first host of each remote DC (node 3 for dc2, node 5 for dc3); node 4, the second dc2
// host, is never connected to.
//
//   - (1) 50 new connections all land on node 1.
//   - (2) nodes 1 and 2 disabled: 50 new connections, none failing, land on node 3 (and at
//     most on node 5).
//   - (2b) node 3 disabled as well: 20 new connections land on node 5, the one remote host
//     left that may be used, not on node 4, which is up.
//   - (2c) node 5 disabled too, on a second pool with retriesAllDown=1: Ping fails with a
//     *failover.NoHostAvailableError although node 4 is up, and the error lists node 4 as
//     not tried because of usedHostsPerRemoteDC (the cap is not applied silently).
//   - In every phase node 4 gets no attempt: no EventConnect for its proxy in either pool,
//     and its server's Connections counter does not move.
//   - (3) every proxy enabled: the pool falls back to node 1 (an EventFallBack to node 1)
//     within 10 s, and 50 new connections land on node 1.
//   - (4) localDC=dc9 and localDC=DC1 fail at dsn.Parse and at sql.Open with an error that
//     wraps dsn.ErrInvalidOption, names the DC given and lists the known "dc1, dc2, dc3";
//     for DC1 it also says labels are case-sensitive and suggests "dc1". No server sees a
//     connection.
func TestDCAware(t *testing.T) {
	const params = "localDC=dc1&usedHostsPerRemoteDC=1&secondsBeforeRetryMaster=1&queriesBeforeRetryMaster=0&readTimeout=2s"
	labels := []string{"dc1", "dc1", "dc2", "dc2", "dc3"}
	name := t.Name()
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", name, k, v) }

	c := harness.Start(t, 5)
	ctx := ctxT(t, time.Minute)
	counters := topoCountersOf(t, ctx, c)
	n4 := c.Node(4).ProxyAddr()

	db, ev := openWithEvents(t, c.LabelledDSN(labels, params))
	db.SetMaxIdleConns(0)
	n4Before := counters.read(t, ctx)[4]

	// checkPhase asserts no error and only nodes in allowed, and logs the figures.
	checkPhase := func(phase string, nodes map[int]int, errs []error, events []failover.Event, allowed ...int) {
		t.Helper()
		fig(phase+"_nodes", nodes)
		fig(phase+"_attempts_by_node", topoAttempts(c, events))
		fig(phase+"_errors", len(errs))
		for k, err := range errs {
			if k < 5 {
				t.Errorf("%s: %v", phase, err)
			}
		}
		ok := map[int]bool{}
		for _, n := range allowed {
			ok[n] = true
		}
		for n, cnt := range nodes {
			if !ok[n] {
				t.Errorf("%s: %d connections on node %d (%s), want only nodes %v", phase, cnt, n, labels[max(n-1, 0)], allowed)
			}
		}
	}

	// (1) Everything up.
	mark := 0
	before := counters.read(t, ctx)
	nodes, errs := topoConnect(ctx, c, db, 50)
	after := counters.read(t, ctx)
	events, mark := ev.connects(mark)
	checkPhase("phase1", nodes, errs, events, 1)
	fig("phase1_node1_server_connections", after[1]-before[1])
	if nodes[1] != 50 {
		t.Errorf("phase 1: %d of 50 connections on node 1", nodes[1])
	}
	if d := after[1] - before[1]; d < 50 {
		t.Errorf("phase 1: node 1's Connections counter rose by %d, want at least 50 (are the connections new?)", d)
	}

	// (2) dc1 down.
	must(t, c.Node(1).Disable())
	must(t, c.Node(2).Disable())
	defer c.Node(1).Enable()
	defer c.Node(2).Enable()
	nodes, errs = topoConnect(ctx, c, db, 50)
	events, mark = ev.connects(mark)
	checkPhase("phase2", nodes, errs, events, 3, 5)
	if nodes[3] == 0 {
		t.Errorf("phase 2: no connection on node 3, the first dc2 host")
	}

	// (2b) dc1 and the first dc2 host down.
	must(t, c.Node(3).Disable())
	defer c.Node(3).Enable()
	nodes, errs = topoConnect(ctx, c, db, 20)
	events, mark = ev.connects(mark)
	checkPhase("phase2b", nodes, errs, events, 5)
	if nodes[5] != 20 {
		t.Errorf("phase 2b: %d of 20 connections on node 5, the dc3 host", nodes[5])
	}

	// (2c) only node 4 up, which may not be used: a second pool with one pass.
	must(t, c.Node(5).Disable())
	defer c.Node(5).Enable()
	db2, ev2 := openWithEvents(t, c.LabelledDSN(labels, params+"&retriesAllDown=1"))
	pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	start := time.Now()
	err := db2.PingContext(pctx)
	took := time.Since(start)
	cancel()
	must(t, db2.Close())
	fig("phase2c_ping_s", took.Seconds())
	fig("phase2c_attempts_by_node", topoAttempts(c, ev2.all()))
	t.Logf("phase 2c: ping with only node 4 up: %v", err)
	var nh *failover.NoHostAvailableError
	if !errors.As(err, &nh) {
		t.Errorf("phase 2c: ping with only node 4 (dc2, beyond usedHostsPerRemoteDC) up: %v, want a *failover.NoHostAvailableError", err)
	} else {
		found := false
		for _, h := range nh.Hosts {
			if h.Host != n4 {
				continue
			}
			found = true
			t.Logf("phase 2c: node 4 in the error: %s", h.Error())
			if h.Err != nil || !strings.Contains(h.Error(), "usedHostsPerRemoteDC") {
				t.Errorf("phase 2c: node 4 in the error: %q (Err %v), want it not tried, naming usedHostsPerRemoteDC", h.Error(), h.Err)
			}
		}
		if !found {
			t.Errorf("phase 2c: the error does not list node 4 (%s): %v", n4, err)
		}
	}
	if n := ev2.count(failover.EventConnect, n4); n != 0 {
		t.Errorf("phase 2c: %d connection attempts on node 4", n)
	}

	// (3) Everything back: fall-back to node 1.
	for i := 1; i <= 5; i++ {
		must(t, c.Node(i).Enable())
	}
	enabled := time.Now()
	var back time.Time
	polls := 0
	var pollErrs []error
	for deadline := enabled.Add(10 * time.Second); time.Now().Before(deadline); {
		polls++
		node, err := nodeOf(ctx, c, db)
		if err != nil {
			pollErrs = append(pollErrs, err)
		} else if node == 1 {
			back = time.Now()
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	_, mark = ev.connects(mark)
	fig("phase3_enable_to_node1_s", back.Sub(enabled).Seconds())
	fig("phase3_polls", polls)
	fig("phase3_poll_errors", len(pollErrs))
	for k, err := range pollErrs {
		if k < 5 {
			t.Errorf("phase 3: statement while waiting for the fall-back: %v", err)
		}
	}
	if back.IsZero() {
		t.Errorf("phase 3: no new connection on node 1 within 10 s of enabling every proxy (%d polls)", polls)
	}
	fb := ev.of(failover.EventFallBack, "", enabled)
	if len(fb) == 0 || fb[0].Host != c.Node(1).ProxyAddr() {
		t.Errorf("phase 3: fall-back events %v, want one to node 1 (%s)", fb, c.Node(1).ProxyAddr())
	} else {
		fig("phase3_fallback_from_node", c.NodeByAddr(fb[0].From))
	}
	nodes, errs = topoConnect(ctx, c, db, 50)
	events, _ = ev.connects(mark)
	checkPhase("phase3", nodes, errs, events, 1)
	if nodes[1] != 50 {
		t.Errorf("phase 3: %d of 50 connections on node 1", nodes[1])
	}

	// Node 4 over phases 1-3.
	n4After := counters.read(t, ctx)[4]
	fig("node4_attempts", ev.count(failover.EventConnect, n4))
	fig("node4_server_connections_delta", n4After-n4Before)
	if n := ev.count(failover.EventConnect, n4); n != 0 {
		t.Errorf("%d connection attempts on node 4 (dc2 beyond usedHostsPerRemoteDC=1), want 0", n)
	}
	if n4After != n4Before {
		t.Errorf("node 4's Connections counter went from %d to %d, want unchanged", n4Before, n4After)
	}

	// (4) A local DC that no host has.
	before = counters.read(t, ctx)
	for _, tc := range []struct {
		localDC string
		want    []string
	}{
		{"dc9", []string{"dc9", "dc1, dc2, dc3"}},
		{"DC1", []string{"DC1", "dc1, dc2, dc3", "case-sensitive", `did you mean "dc1"`}},
	} {
		bad := c.LabelledDSN(labels, strings.Replace(params, "localDC=dc1", "localDC="+tc.localDC, 1))
		check := func(where string, err error) {
			t.Helper()
			t.Logf("phase 4: localDC=%s: %s: %v", tc.localDC, where, err)
			if err == nil {
				t.Errorf("phase 4: localDC=%s: %s returned no error", tc.localDC, where)
				return
			}
			if !errors.Is(err, dsn.ErrInvalidOption) {
				t.Errorf("phase 4: localDC=%s: %s: %v does not match dsn.ErrInvalidOption", tc.localDC, where, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("phase 4: localDC=%s: %s: %q does not say %q", tc.localDC, where, err.Error(), w)
				}
			}
			if strings.Contains(err.Error(), harness.AppPassword) {
				t.Errorf("phase 4: localDC=%s: %s: the error contains the password", tc.localDC, where)
			}
		}
		_, err := dsn.Parse(bad)
		check("dsn.Parse", err)
		start := time.Now()
		bdb, err := sql.Open("mysqlfailover", bad)
		took := time.Since(start)
		fig("phase4_open_"+tc.localDC+"_ms", took.Milliseconds())
		check("sql.Open", err)
		if bdb != nil {
			bdb.Close()
		}
	}
	after = counters.read(t, ctx)
	var phase4 int64
	for i := 1; i <= 5; i++ {
		phase4 += after[i] - before[i]
	}
	fig("phase4_server_connections", phase4)
	if phase4 != 0 {
		t.Errorf("phase 4: the servers' Connections counters rose by %d in all, want 0", phase4)
	}
}
