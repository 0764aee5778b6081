package integration

import (
	"context"
	"database/sql"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// Discovery (discoverHosts) on real replicas: the replicas registered with the primary
// join the pool's host list, are used once their probes found them fit, and leave once
// the primary stops listing them; the DSN's replicas, which MariaDB lists by their own
// port (no report_host) and not by the proxy address the DSN dials, are known by their
// server_id. Rounds are counted from the pool's own probes of its host (two per
// checkInterval), so that a loaded machine does not turn a count into a timing; times are
// FIGURE lines.

// discoverInterval is the scenarios' checkInterval: one discovery read per round.
const discoverInterval = 300 * time.Millisecond

// listing watches, as root, what a server lists of its cluster's members (query; each
// row's text, "|v1|v2|...|", is matched against want) and records when want first appears and, after
// that, when it goes. It stops when the test ends.
type listing struct {
	mu            sync.Mutex
	listed, gone  time.Time
	stop          context.CancelFunc
	done          chan struct{}
	query, wanted string
}

func watchListing(t *testing.T, db *sql.DB, query, want string) *listing {
	ctx, cancel := context.WithCancel(context.Background())
	l := &listing{stop: cancel, done: make(chan struct{}), query: query, wanted: want}
	go func() {
		defer close(l.done)
		for ctx.Err() == nil {
			has := false
			if rows, err := db.QueryContext(ctx, query); err == nil {
				cols, _ := rows.Columns()
				vals := make([]sql.RawBytes, len(cols))
				ptrs := make([]any, len(cols))
				for i := range vals {
					ptrs[i] = &vals[i]
				}
				for rows.Next() {
					if rows.Scan(ptrs...) == nil {
						var b strings.Builder
						b.WriteByte('|')
						for _, v := range vals {
							b.Write(v)
							b.WriteByte('|')
						}
						has = has || strings.Contains(b.String(), want)
					}
				}
				rows.Close()
				now := time.Now()
				l.mu.Lock()
				switch {
				case has && l.listed.IsZero():
					l.listed = now
				case !has && !l.listed.IsZero() && l.gone.IsZero():
					l.gone = now
				}
				l.mu.Unlock()
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { l.stop(); <-l.done })
	return l
}

func (l *listing) times() (listed, gone time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.listed, l.gone
}

// discoverPool is a pool with discoverHosts and replica reads over the DSN dsnStr, its
// connector and its events.
type discoverPool struct {
	db *sql.DB
	cn *mysqlfailover.Connector
	ev *eventLog
}

func openDiscover(t *testing.T, dsnStr string) *discoverPool {
	t.Helper()
	db, ev := openWithEvents(t, dsnStr)
	cn, err := mysqlfailover.ConnectorOf(context.Background(), db)
	must(t, err)
	return &discoverPool{db: db, cn: cn, ev: ev}
}

// host returns the pool's Stats entry of addr, and whether its list has it.
func (p *discoverPool) host(addr string) (failover.HostStats, bool) {
	for _, h := range p.cn.Stats().Hosts {
		if h.Addr == addr {
			return h, true
		}
	}
	return failover.HostStats{}, false
}

// addrs returns the pool's host list.
func (p *discoverPool) addrs() []string {
	var out []string
	for _, h := range p.cn.Stats().Hosts {
		out = append(out, h.Addr)
	}
	return out
}

// rounds returns how many probe rounds of the pool's host (two passed probes of host per
// round) ended between from and to.
func (p *discoverPool) rounds(host string, from, to time.Time) float64 {
	n := 0
	for _, e := range p.ev.of(failover.EventProbePassed, host, from) {
		if !e.Time.After(to) {
			n++
		}
	}
	return float64(n) / 2
}

// readsUntil runs read-intent reads (SELECT @@port) on p until cond(node) holds for the
// node one ran on, for at most d, and returns when it did (zero: never) and the nodes each
// read ran on, in order.
func (p *discoverPool) readsUntil(t *testing.T, ctx context.Context, c *harness.Cluster, d time.Duration, cond func(node int) bool) (time.Time, []int) {
	t.Helper()
	var nodes []int
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		n, err := nodeOf(readIntent(ctx), c, p.db)
		if err != nil {
			t.Fatalf("read-intent read: %v", err)
		}
		nodes = append(nodes, n)
		if cond(n) {
			return time.Now(), nodes
		}
		time.Sleep(5 * time.Millisecond)
	}
	return time.Time{}, nodes
}

// TestDiscoverReplicaAttachDetach: a replica added to the running primary (report_host and
// report_port its proxy's address) serves read-intent statements within two probe rounds
// of the primary listing it, without a restart of the pool; once detached it leaves the
// list within DefaultDiscoverMisses rounds of the primary no longer listing it, and serves
// no more. The DSN's replicas, listed by the primary under their own ports, are not
// listed twice; a DSN replica detached stays in the list.
func TestDiscoverReplicaAttachDetach(t *testing.T) {
	c := harness.Start(t, 3, harness.WithReplicationLinks())
	ctx := ctxT(t, 90*time.Second)
	must(t, c.GrantDiscovery(ctx))
	p := openDiscover(t, c.DSN("discoverHosts=true&replicaReads=true&checkInterval="+discoverInterval.String()))
	primary := c.Node(1).ProxyAddr()
	if at, _ := p.readsUntil(t, ctx, c, 10*time.Second, func(n int) bool { return n == 3 }); at.IsZero() {
		t.Fatalf("node 3 served no read: %+v", p.cn.Stats().Hosts)
	}
	time.Sleep(2 * discoverInterval) // two discovery reads: nodes 2 and 3 known by their server_id
	dsnHosts := []string{c.Node(1).ProxyAddr(), c.Node(2).ProxyAddr(), c.Node(3).ProxyAddr()}
	if got := p.addrs(); !slices.Equal(got, dsnHosts) {
		t.Fatalf("host list %v, want the DSN's %v alone (the primary lists nodes 2 and 3 by their own ports)", got, dsnHosts)
	}
	for _, i := range []int{2, 3} {
		if e := p.ev.of(failover.EventDiscovery, c.Node(i).Addr(), time.Time{}); len(e) != 0 {
			t.Errorf("node %d, listed by the primary under its own address %s, was found as a new host: %v", i, c.Node(i).Addr(), e)
		}
	}

	// Attach: node 4, a new replica of node 1, reported as its proxy's address.
	w := watchListing(t, c.Node(1).Admin(), "SHOW REPLICA HOSTS", "|4|")
	n4, err := c.AddNode(ctx)
	must(t, err)
	addr4 := n4.ProxyAddr()
	served, _ := p.readsUntil(t, ctx, c, 10*time.Second, func(n int) bool { return n == 4 })
	listed, _ := w.times()
	if served.IsZero() || listed.IsZero() {
		t.Fatalf("node 4 listed at %v, served at %v: list %v, discovery events %v", listed, served, p.addrs(), p.ev.of(failover.EventDiscovery, "", time.Time{}))
	}
	rounds := p.rounds(primary, listed, served)
	t.Logf("FIGURE discover-replica-attach listed->serving %v (%.1f rounds of %v)", served.Sub(listed).Round(time.Millisecond), rounds, discoverInterval)
	if rounds > 2 {
		t.Errorf("node 4 served its first read %.1f probe rounds after the primary listed it, want at most 2", rounds)
	}
	h4, ok := p.host(addr4)
	if !ok || h4.Origin != failover.OriginDiscovered || h4.Discovered.Before(listed) || h4.Discovered.After(served) {
		t.Errorf("node 4 in Stats %v: %+v, want discovered between %v and %v", ok, h4, listed, served)
	}
	for _, a := range dsnHosts {
		if h, _ := p.host(a); h.Origin != failover.OriginDSN {
			t.Errorf("%s origin %v, want dsn", a, h.Origin)
		}
	}

	// Detach: the primary lists it no more once its replication connection has closed,
	// which the writes of a busy primary make it notice at once (an idle one, at its
	// next heartbeat: 5 s).
	detached := time.Now()
	must(t, c.Node(4).Detach(ctx))
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.discover_detach (id INT)"))
	var gone time.Time
	if !waitFor(10*time.Second, func() bool {
		must(t, c.Node(1).Exec(ctx, "INSERT INTO app.discover_detach VALUES (1)"))
		_, gone = w.times()
		return !gone.IsZero()
	}) {
		t.Fatal("the primary still lists node 4 10 s after it was detached")
	}
	t.Logf("FIGURE discover-replica-detach detached->unlisted by the primary %v (writes after the detach)", gone.Sub(detached).Round(time.Millisecond))
	var left time.Time
	if !waitFor(10*time.Second, func() bool { _, ok := p.host(addr4); left = time.Now(); return !ok }) {
		t.Fatalf("node 4 still in the list 10 s after the primary stopped listing it: %v", p.addrs())
	}
	rounds = p.rounds(primary, gone, left)
	t.Logf("FIGURE discover-replica-detach unlisted->dropped %v (%.1f rounds)", left.Sub(gone).Round(time.Millisecond), rounds)
	if rounds > cluster.DefaultDiscoverMisses+1 {
		t.Errorf("node 4 left %.1f rounds after the primary stopped listing it, want at most %d", rounds, cluster.DefaultDiscoverMisses+1)
	}
	if e := p.ev.of(failover.EventDiscovery, addr4, time.Time{}); len(e) != 2 || e[0].Err != nil || e[1].Err == nil {
		t.Errorf("node 4 discovery events %v, want found, then dropped", e)
	}
	if _, nodes := p.readsUntil(t, ctx, c, 20*discoverInterval/10, func(n int) bool { return n == 4 }); slices.Contains(nodes, 4) {
		t.Errorf("a read ran on node 4 after it left the list: %v", nodes)
	}

	// A DSN replica detached stays: discovery removes only what it added.
	must(t, c.Node(3).Detach(ctx))
	time.Sleep(time.Duration(cluster.DefaultDiscoverMisses+2) * discoverInterval)
	if got := p.addrs(); !slices.Equal(got, dsnHosts) {
		t.Fatalf("host list %v after node 3 (a DSN host) was detached, want %v", got, dsnHosts)
	}
}

// TestDiscoverRefusedKeepsDSN: a user that may not list the replicas (the fixture's app
// user has no REPLICATION MASTER ADMIN): the pool works on the DSN's hosts, says why once
// (EventDiscovery, Stats.Discovery), and never fails a statement for it.
func TestDiscoverRefusedKeepsDSN(t *testing.T) {
	c := harness.Start(t, 3, harness.WithReplicationLinks())
	ctx := ctxT(t, 60*time.Second)
	hosts := c.Node(1).ProxyAddr() + "," + c.Node(2).ProxyAddr()
	p := openDiscover(t, "app:apppw@tcp("+hosts+")/app?discoverHosts=true&replicaReads=true&checkInterval="+discoverInterval.String())
	_, nodes := p.readsUntil(t, ctx, c, 5*discoverInterval, func(int) bool { return false })
	if slices.Contains(nodes, 3) || !slices.Contains(nodes, 2) {
		t.Errorf("reads ran on nodes %v, want on node 2 and never on node 3 (not in the DSN)", nodes)
	}
	if got := p.addrs(); len(got) != 2 {
		t.Errorf("host list %v, want the DSN's two", got)
	}
	note := p.cn.Stats().Discovery
	if !strings.Contains(note, "1227") || !strings.Contains(note, "REPLICATION MASTER ADMIN") {
		t.Errorf("Stats.Discovery %q, want the refusal and the privilege to grant", note)
	}
	if e := p.ev.of(failover.EventDiscovery, "", time.Time{}); len(e) != 1 || e[0].Err == nil {
		t.Errorf("discovery events %v, want one, the refusal", e)
	}
	t.Logf("FIGURE discover-refused note: %s", note)
}

// TestCheckDiscovery: `mysqlfailover check` with discoverHosts reads the members as the
// driver does and says where each host came from: the DSN's two nodes (node 2 listed by
// the primary under its own port, known by its server_id), node 3 discovered, reported by
// node 1, checked and in the plan after them. A user that may not list the replicas gets
// a discovery problem naming the privilege.
func TestCheckDiscovery(t *testing.T) {
	bin := buildCheck(t)
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	must(t, c.WaitReplicasCaughtUp(ctx))
	n1, n2 := c.Node(1).ProxyAddr(), c.Node(2).ProxyAddr()
	dsnStr := "app:apppw@tcp(" + n1 + "," + n2 + ")/app?readTimeout=2s&checkInterval=1s&discoverHosts=true"

	code, text, r := checkBoth(t, bin, dsnStr)
	if code != 1 || !r.hasProblem("REPLICATION MASTER ADMIN") || len(r.Hosts) != 2 {
		t.Fatalf("without the privilege: exit %d, %d hosts, problems %v, want 1, 2, a discovery problem:\n%s", code, len(r.Hosts), r.kinds(c), text)
	}
	t.Logf("check, discoverHosts without the privilege:\n%s", text)

	must(t, c.GrantDiscovery(ctx))
	code, text, r = checkBoth(t, bin, dsnStr)
	if code != 0 || len(r.Hosts) != 3 {
		t.Fatalf("with the privilege: exit %d, %d hosts, want 0 and 3:\n%s", code, len(r.Hosts), text)
	}
	_, jtext, _ := runCheck(t, bin, "--json", dsnStr)
	for _, want := range []string{`"origin": "dsn"`, `"origin": "discovered"`, `"reported_by": "` + n1 + `"`, `"discovered_at"`} {
		if !strings.Contains(jtext, want) {
			t.Errorf("check --json lacks %s:\n%s", want, jtext)
		}
	}
	if h := r.Hosts[2]; c.NodeByAddr(h.Host) != 3 || !h.Reachable || h.Role != "standby" {
		t.Errorf("host 3 of the report: %+v, want node 3 (its own address, reported by node 1), reachable, standby", h)
	}
	if !strings.Contains(text, "origin       discovered: "+n1+" reports it as "+c.Node(3).Addr()) {
		t.Errorf("the text does not say where node 3 came from:\n%s", text)
	}
	t.Logf("check, discoverHosts:\n%s", text)
}

// TestDiscoverMapped: the replicas report addresses the client is not to dial (no
// report_host: the primary lists them by their own ports, where the DSN reaches them
// through proxies), and WithDiscoveryMap maps them to the proxies: a pool whose DSN lists
// node 1 alone finds nodes 2 and 3 under the mapped addresses and reads there.
func TestDiscoverMapped(t *testing.T) {
	c := harness.Start(t, 3, harness.WithReplicationLinks())
	ctx := ctxT(t, 60*time.Second)
	must(t, c.GrantDiscovery(ctx))
	proxies := map[string]string{}
	for _, n := range c.Nodes() {
		proxies[n.Addr()] = n.ProxyAddr()
	}
	cfg, err := dsn.Parse(c.HostDSN(1, "discoverHosts=true&replicaReads=true&checkInterval="+discoverInterval.String()))
	must(t, err)
	var mapped sync.Map
	cn, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithDiscoveryMap(func(reported string) string {
		mapped.Store(reported, true)
		return proxies[reported] // "" for any other: left out
	}))
	must(t, err)
	db := sql.OpenDB(cn)
	defer db.Close()
	seen := map[int]bool{}
	if !waitFor(10*time.Second, func() bool {
		n, err := nodeOf(readIntent(ctx), c, db)
		must(t, err)
		seen[n] = true
		return seen[2] && seen[3]
	}) {
		t.Fatalf("reads ran on %v, want nodes 2 and 3 too: %+v", seen, cn.Stats().Hosts)
	}
	var got []string
	for _, h := range cn.Stats().Hosts {
		got = append(got, h.Addr)
	}
	want := []string{c.Node(1).ProxyAddr(), c.Node(2).ProxyAddr(), c.Node(3).ProxyAddr()}
	slices.Sort(got[1:])
	slices.Sort(want[1:])
	if !slices.Equal(got, want) {
		t.Errorf("host list %v, want node 1 and the mapped proxies of nodes 2 and 3 %v", got, want)
	}
	if _, ok := mapped.Load(c.Node(2).Addr()); !ok {
		t.Errorf("the map was not asked for node 2's reported address %s", c.Node(2).Addr())
	}
}
