package galera

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// discoverInterval is the discovery scenario's checkInterval: one read of the cluster's
// members per round.
const discoverInterval = 300 * time.Millisecond

// probeRounds returns how many probe rounds of host (two passed probes per round: the
// pool's host is probed twice per checkInterval) p recorded between from and to.
func (p *pool) probeRounds(host string, from, to time.Time) float64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, e := range p.ev {
		if e.Kind == failover.EventProbePassed && e.Host == host && !e.Time.Before(from) && !e.Time.After(to) {
			n++
		}
	}
	return float64(n) / 2
}

// hostStats returns addr's entry of the pool's Stats, and whether the list has it.
func (p *pool) hostStats(addr string) (failover.HostStats, bool) {
	for _, h := range p.cn.Stats().Hosts {
		if h.Addr == addr {
			return h, true
		}
	}
	return failover.HostStats{}, false
}

// incoming returns what node i reports as its cluster's members' client addresses
// (wsrep_incoming_addresses), as root.
func incoming(ctx context.Context, db *sql.DB) string {
	var name, v string
	_ = db.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'wsrep_incoming_addresses'").Scan(&name, &v)
	return v
}

// TestDiscoverGaleraNode: a fourth node that joins the running cluster joins the pool's
// host list (its wsrep_node_incoming_address its proxy's: the DSN's nodes report AUTO,
// MDEV-20627, and the app user may not read mysql.wsrep_cluster_members, so the pool reads
// wsrep_incoming_addresses and takes the AUTO entries for its own nodes); while it refuses
// queries (wsrep_reject_queries=ALL: not ready) no read is sent there, and once it takes
// them it serves read-intent statements within two probe rounds; once it leaves the cluster
// (a clean shutdown) it leaves the list within DefaultDiscoverMisses rounds of the cluster
// no longer reporting it.
func TestDiscoverGaleraNode(t *testing.T) {
	c := harness.Start(t, 3, harness.WithGalera())
	ctx := ctxT(t, 2*time.Minute)
	p := open(t, c, "discoverHosts=true&replicaReads=true&checkInterval="+discoverInterval.String())
	writer := c.Node(1).ProxyAddr()
	reads := func(d time.Duration, stop func(int) bool) (time.Time, []int) {
		var nodes []int
		end := time.Now().Add(d)
		for time.Now().Before(end) {
			n, err := nodeOf(mysqlfailover.WithReadIntent(ctx, ""), c, p.db)
			must(t, err)
			nodes = append(nodes, n)
			if stop(n) {
				return time.Now(), nodes
			}
			time.Sleep(5 * time.Millisecond)
		}
		return time.Time{}, nodes
	}
	if at, nodes := reads(10*time.Second, func(n int) bool { return n == 3 }); at.IsZero() {
		t.Fatalf("node 3 served no read: %v", nodes)
	}

	n4, err := c.AddNode(ctx, "--wsrep-reject-queries=ALL")
	must(t, err)
	addr4 := n4.ProxyAddr()
	if v := incoming(ctx, c.Node(1).Admin()); !strings.Contains(v, addr4) {
		t.Fatalf("node 1 reports wsrep_incoming_addresses %q, without node 4's %s", v, addr4)
	}
	var h4 failover.HostStats
	if !waitFor(5*time.Second, func() bool { h4, _ = p.hostStats(addr4); return h4.State == failover.HostNotReady }) {
		t.Fatalf("node 4 in Stats: %+v; want discovered, not ready", h4)
	}
	if h4.Origin != failover.OriginDiscovered || h4.Discovered.IsZero() || !strings.Contains(h4.LastError.Error(), "wsrep_reject_queries") {
		t.Errorf("node 4: origin %v discovered %v error %v, want discovered, not ready for wsrep_reject_queries", h4.Origin, h4.Discovered, h4.LastError)
	}
	if _, nodes := reads(4*discoverInterval, func(int) bool { return false }); slices.Contains(nodes, 4) {
		t.Fatalf("a read ran on node 4 while it refused queries: %v", nodes)
	}
	if note := p.cn.Stats().Discovery; note != "" {
		t.Errorf("Stats.Discovery %q, want none: the AUTO entries are the DSN's nodes", note)
	}
	if got := len(p.cn.Stats().Hosts); got != 4 {
		t.Errorf("%d hosts in the list, want 4: %+v", got, p.cn.Stats().Hosts)
	}

	ready := time.Now()
	must(t, c.Node(4).RejectQueries(ctx, harness.RejectNone))
	served, nodes := reads(10*time.Second, func(n int) bool { return n == 4 })
	if served.IsZero() {
		t.Fatalf("node 4 served no read after it took queries again: %v, %+v", nodes, p.cn.Stats().Hosts)
	}
	rounds := p.probeRounds(writer, ready, served)
	t.Logf("FIGURE discover-galera-join ready->serving %v (%.1f rounds of %v)", served.Sub(ready).Round(time.Millisecond), rounds, discoverInterval)
	if rounds > 2 {
		t.Errorf("node 4 served its first read %.1f probe rounds after it was ready, want at most 2", rounds)
	}

	left := time.Now()
	must(t, c.Node(4).Stop(ctx))
	var gone time.Time
	if !waitFor(20*time.Second, func() bool {
		gone = time.Now()
		return !strings.Contains(incoming(ctx, c.Node(1).Admin()), addr4)
	}) {
		t.Fatal("node 1 still reports node 4 20 s after it left")
	}
	var dropped time.Time
	if !waitFor(10*time.Second, func() bool { _, ok := p.hostStats(addr4); dropped = time.Now(); return !ok }) {
		t.Fatalf("node 4 still in the list 10 s after the cluster stopped reporting it")
	}
	rounds = p.probeRounds(writer, gone, dropped)
	t.Logf("FIGURE discover-galera-leave left->unreported %v, unreported->dropped %v (%.1f rounds)",
		gone.Sub(left).Round(time.Millisecond), dropped.Sub(gone).Round(time.Millisecond), rounds)
	if rounds > cluster.DefaultDiscoverMisses+1 {
		t.Errorf("node 4 left the list %.1f rounds after the cluster stopped reporting it, want at most %d", rounds, cluster.DefaultDiscoverMisses+1)
	}
	if got := len(p.cn.Stats().Hosts); got != 3 {
		t.Errorf("%d hosts in the list after node 4 left, want the DSN's 3", got)
	}
}
