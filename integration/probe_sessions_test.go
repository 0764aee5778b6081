package integration

// The sessions the failover monitor costs each server (invariant fleet-is-the-unit-of-cost: a fleet is the unit
// of cost): none of its own on a host where the pool holds an idle session.

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// TestProbesBorrowPoolSessions: a pool of 4 (sql.Open's default shape, every connection
// opened and used twice) over a primary and two replicas, checkInterval=100ms, idle for
// a second. Sampled every 50 ms on the servers (information_schema.PROCESSLIST, the
// application user): the primary never holds more sessions than the pool (its probes
// borrow the pool's idle sessions: before, one more), and each replica holds one, its
// probe session (the pool holds none there). Then a fleet of 10 such pools: the primary
// holds no more than the pools' 40 sessions (before, 50). Reported: the most sessions on
// each node.
func TestProbesBorrowPoolSessions(t *testing.T) {
	const size = 4
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	p := openFaultPool(t, c.DSN("checkInterval=100ms"))
	p.db.SetMaxOpenConns(size)
	p.db.SetMaxIdleConns(size)
	warmProbePool(t, ctx, c, p.db, size) // every connection opened, then reset once: its session may be lent
	if !waitFor(5*time.Second, func() bool {
		h := hostStats(p.cn.Stats(), c, 1)
		return h.ProbesBorrowed > 0 && !h.ProbeSession
	}) {
		t.Fatalf("node 1: no probe borrowed a pooled session, or a probe session is kept: %+v", hostStats(p.cn.Stats(), c, 1))
	}
	sessions := func(i int) int {
		v, err := c.Node(i).AppSessions(ctx)
		must(t, err)
		return int(v)
	}
	var most, least [4]int
	for i := range least {
		least[i] = 1 << 30
	}
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		for i := 1; i <= 3; i++ {
			n := sessions(i)
			most[i], least[i] = max(most[i], n), min(least[i], n)
		}
	}
	s := p.cn.Stats()
	t.Logf("FIGURE TestProbesBorrowPoolSessions: most_sessions=node1=%d node2=%d node3=%d (pool of %d)", most[1], most[2], most[3], size)
	t.Logf("FIGURE TestProbesBorrowPoolSessions: probe_sessions=%d borrowed_node1=%d own_node1=%d own_node2=%d",
		s.ProbeSessions, hostStats(s, c, 1).ProbesBorrowed, hostStats(s, c, 1).ProbesOwn, hostStats(s, c, 2).ProbesOwn)
	if most[1] > size {
		t.Errorf("up to %d sessions on the primary, want at most %d (the pool's: no probe session)", most[1], size)
	}
	for i := 2; i <= 3; i++ {
		if least[i] < 1 || most[i] > 1 || !hostStats(s, c, i).ProbeSession {
			t.Errorf("node %d: %d to %d sessions, probe session %v; want 1, its probe session", i, least[i], most[i], hostStats(s, c, i).ProbeSession)
		}
	}
	if s.ProbeSessions != 2 {
		t.Errorf("Stats.ProbeSessions %d, want 2 (the replicas')", s.ProbeSessions)
	}
	if _, err := nodeOf(context.Background(), c, p.db); err != nil {
		t.Errorf("the pool after the probes: %v", err)
	}

	// A fleet: 9 more instances of the same pool (10 in all), each its own connector.
	const fleet = 10
	pools := []*faultPool{p}
	for range fleet - 1 {
		q := openFaultPool(t, c.DSN("checkInterval=100ms"))
		q.db.SetMaxOpenConns(size)
		q.db.SetMaxIdleConns(size)
		warmProbePool(t, ctx, c, q.db, size)
		pools = append(pools, q)
	}
	if !waitFor(5*time.Second, func() bool {
		for _, q := range pools {
			if h := hostStats(q.cn.Stats(), c, 1); h.ProbesBorrowed == 0 || h.ProbeSession {
				return false
			}
		}
		return true
	}) {
		t.Fatal("an instance of the fleet keeps a probe session on node 1")
	}
	var fleetMost [4]int
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		for i := 1; i <= 3; i++ {
			fleetMost[i] = max(fleetMost[i], sessions(i))
		}
	}
	t.Logf("FIGURE TestProbesBorrowPoolSessions: fleet_most_sessions=node1=%d node2=%d node3=%d (%d pools of %d)", fleetMost[1], fleetMost[2], fleetMost[3], fleet, size)
	if fleetMost[1] > fleet*size {
		t.Errorf("fleet: up to %d sessions on the primary, want at most %d (the pools')", fleetMost[1], fleet*size)
	}
}

// warmProbePool opens every connection of db's pool of size and uses each twice, so
// that each has been reset once and its idle session may be lent to the probes.
func warmProbePool(t *testing.T, ctx context.Context, c *harness.Cluster, db *sql.DB, size int) {
	t.Helper()
	for range 2 {
		var held []*sql.Conn
		for range size {
			cn, err := db.Conn(ctx)
			must(t, err)
			_, err = nodeOf(ctx, c, cn)
			must(t, err)
			held = append(held, cn)
		}
		for _, cn := range held {
			must(t, cn.Close())
		}
	}
}

// hostStats is node i's entry of s.
func hostStats(s failover.Stats, c *harness.Cluster, i int) failover.HostStats {
	for _, h := range s.Hosts {
		if h.Addr == c.Node(i).ProxyAddr() {
			return h
		}
	}
	panic(fmt.Sprintf("no Stats entry for node %d", i))
}
