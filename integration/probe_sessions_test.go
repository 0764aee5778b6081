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

// TestWaitForPromotionOnProbeSessions: a write whose primary died waits for a writer
// (targetSessionAttrs=read-write, checkInterval=100ms) while nothing is promoted for
// 1.5 s: its walk passes every 250 ms and, in between, reads the standbys' roles every
// 100 ms on the probes' idle sessions, giving each back. Asserted on the servers' own
// counters: node 3, the standby never promoted, takes at most 1 new session in that
// time (before, every pass closed the probes' session and the next pass or probe opened
// another: one or more a pass). Then node 2 is promoted: the write succeeds on it.
// Then, the pool idle on node 2, node 2 runs at most 12 SELECTs in 2 s: it is watched
// after the move, not on the alert schedule (before: about 40, every 50 ms). Reported:
// the new sessions on node 3 while the write waited, the time from the promotion to the
// write's end, and node 2's SELECTs.
func TestWaitForPromotionOnProbeSessions(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.promo (v INT PRIMARY KEY)"))
	p := openFaultPool(t, c.DSN("targetSessionAttrs=read-write&checkInterval=100ms&failoverDelay=100ms"))
	p.db.SetMaxOpenConns(1)
	p.db.SetMaxIdleConns(1)
	_, err := p.db.ExecContext(ctx, "INSERT INTO app.promo VALUES (1)")
	must(t, err)
	if !waitFor(10*time.Second, func() bool {
		s := p.cn.Stats()
		return hostStats(s, c, 2).ProbeSession && hostStats(s, c, 3).ProbeSession
	}) {
		t.Fatalf("the standbys have no probe sessions: %+v", p.cn.Stats().Hosts)
	}
	admin, err := c.Node(3).Admin().Conn(ctx) // one session, opened before the count starts
	must(t, err)
	defer admin.Close()
	connections := func() int64 { return statusOn(ctx, t, admin, "Connections") }
	before := connections()
	must(t, c.Node(1).Kill())
	done := make(chan error, 1)
	go func() {
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		_, err := p.db.ExecContext(wctx, "INSERT INTO app.promo VALUES (2)")
		done <- err
	}()
	time.Sleep(1500 * time.Millisecond) // the write waits: 6 passes, 12 peeks
	grown := connections() - before
	select {
	case err := <-done:
		t.Fatalf("the write ended before any promotion: %v", err)
	default:
	}
	must(t, c.Switchover(ctx, 2))
	promoted := time.Now()
	werr := <-done
	took := time.Since(promoted)
	if werr != nil {
		// The write was sent to node 1 as it died: it may have run there, and its error
		// says so; the pool is on node 2 all the same, and the next write works.
		t.Logf("the write after the kill: %v", werr)
		_, werr = p.db.ExecContext(ctx, "INSERT INTO app.promo VALUES (3)")
	}
	if werr != nil || p.active(c) != 2 {
		t.Fatalf("after node 2's promotion: write %v, the pool on node %d; want it written on node 2", werr, p.active(c))
	}
	// The pool, idle now, has just moved to node 2: every host is watched (every 500 ms)
	// for DefaultAlertHold, node 2 too; it is not probed at the alert rate (every 50 ms).
	a2, err := c.Node(2).Admin().Conn(ctx)
	must(t, err)
	defer a2.Close()
	selects := func() int64 { return statusOn(ctx, t, a2, "Com_select") }
	s0 := selects()
	time.Sleep(2 * time.Second)
	probes := selects() - s0
	t.Logf("FIGURE TestWaitForPromotionOnProbeSessions: node3_new_sessions_while_waiting_1500ms=%d write_end_after_promotion=%v node2_selects_in_2s_after_move=%d",
		grown, took.Round(time.Millisecond), probes)
	if grown > 1 {
		t.Errorf("node 3 took %d new sessions while the write waited 1.5 s for a writer, want at most 1 (the walk reads its role on the probes' session)", grown)
	}
	if probes > 12 {
		t.Errorf("node 2, the pool's new host, ran %d SELECTs in the 2 s after the move with the pool idle, want at most 12 (watched every 500 ms: a ping and a role read each; at the alert rate, about 40)", probes)
	}
}

// statusOn reads the global status counter name on conn, a session held for the count (a
// session opened for the read would count in Connections).
func statusOn(ctx context.Context, t *testing.T, conn *sql.Conn, name string) int64 {
	t.Helper()
	var k string
	var n int64
	must(t, conn.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &n)) // SHOW takes no placeholder
	return n
}
