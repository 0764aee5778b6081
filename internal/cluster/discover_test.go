package cluster_test

import (
	"context"
	"database/sql/driver"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// Discovery (discoverHosts): the members a cluster reports join the host list after the
// DSN's hosts, are used only once their probes found them fit, and leave once the
// cluster has stopped reporting them for DefaultDiscoverMisses reads; a DSN host never
// leaves, a member that is a listed host under another address is that host, and a read
// the server refuses leaves the pool on the DSN's hosts.

// discRig is a monitor rig over net hosts H1..Hn of which the DSN lists the first
// listed, with discoverHosts and replicaReads on, dialling by address (the ids of hosts
// discovery adds are not the Net's).
func discRig(t *testing.T, hosts, listed int, set func(*rigOpts)) *rig {
	t.Helper()
	var r *rig
	r, _ = monRig(t, hosts, func(o *rigOpts) {
		o.Hosts = o.Hosts[:listed]
		o.DiscoverHosts, o.ReplicaReads = true, true
		o.Dial = func(ctx context.Context, id int) (driver.Conn, error) { return r.net.DialAddr(ctx, r.cl.Host(id)) }
		if set != nil {
			set(o)
		}
	})
	return r
}

// listAddrs returns the addresses of the host list, in order.
func (r *rig) listAddrs() []string { return statAddrs(r.cl.Stats()) }

// statOf returns the Stats entry of addr, and whether the list has it.
func (r *rig) statOf(addr string) (failover.HostStats, bool) {
	for _, h := range r.cl.Stats().Hosts {
		if h.Addr == addr {
			return h, true
		}
	}
	return failover.HostStats{}, false
}

// serves reports whether addr serves read-intent statements now: among 20 choices of a
// replica, one is it.
func (r *rig) serves(addr string) bool {
	for range 20 {
		if id := r.cl.Replicas().Pick("", false, 0); id >= 0 && r.cl.Host(id) == addr {
			return true
		}
	}
	return false
}

// roundsUntil runs monitor rounds (a checkInterval apart) until cond holds, at most max,
// and returns how many it took (max+1: never).
func (r *rig) roundsUntil(max int, cond func() bool) int {
	for n := 1; n <= max; n++ {
		r.tick(monInterval)
		if cond() {
			return n
		}
	}
	return max + 1
}

// discoveries returns the EventDiscovery events of addr ("" for the reads' notes).
func (r *rig) discoveries(addr string) []failover.Event {
	var out []failover.Event
	for _, e := range r.events(failover.EventDiscovery) {
		if e.Host == addr {
			out = append(out, e)
		}
	}
	return out
}

// TestDiscoverReplicaJoinsAndLeaves: a replica attached to the primary (its report_host
// and report_port) joins the list after the DSN's hosts, probed at once, and serves
// read-intent statements within two rounds; Stats says it was discovered, and since
// when. A read that misses it once leaves it in place; once detached, it leaves after
// DefaultDiscoverMisses reads, with an event, and serves no more.
func TestDiscoverReplicaJoinsAndLeaves(t *testing.T) {
	r := discRig(t, 3, 2, nil)
	replicas(r.net, 3)
	r.net.Follow(2, -1) // H3 not attached yet
	r.cl.Check(context.Background())
	r.tick(monInterval)
	if got := r.listAddrs(); !slices.Equal(got, []string{"H1:3306", "H2:3306"}) {
		t.Fatalf("list %v before H3 is attached, want the DSN's", got)
	}

	r.net.Follow(2, 0) // attached: H1 lists it among its replicas
	attached := r.clock.Now()
	n := r.roundsUntil(5, func() bool { return r.serves("H3:3306") })
	if n > 2 {
		t.Fatalf("H3 served no read %d rounds after it was attached (list %v, events %v), want within 2", n, r.listAddrs(), r.discoveries("H3:3306"))
	}
	t.Logf("FIGURE discover-unit replica attached -> serving: %d rounds", n)
	if got := r.listAddrs(); !slices.Equal(got, []string{"H1:3306", "H2:3306", "H3:3306"}) {
		t.Fatalf("list %v, want H3 after the DSN's hosts", got)
	}
	for _, h := range []string{"H1:3306", "H2:3306"} {
		if s, _ := r.statOf(h); s.Origin != failover.OriginDSN || !s.Discovered.IsZero() {
			t.Errorf("%s origin %v discovered %v, want dsn, zero", h, s.Origin, s.Discovered)
		}
	}
	s, _ := r.statOf("H3:3306")
	if s.Origin != failover.OriginDiscovered || s.Discovered.Before(attached) || s.Discovered.After(attached.Add(monInterval)) {
		t.Errorf("H3 origin %v discovered %v, want discovered in the round after %v", s.Origin, s.Discovered, attached)
	}
	if e := r.discoveries("H3:3306"); len(e) != 1 || e[0].Err != nil {
		t.Errorf("H3 events %v, want one (found)", e)
	}

	// One read that misses it (a view that changes, a replica reconnecting): it stays.
	r.net.Follow(2, -1)
	r.tick(monInterval)
	r.net.Follow(2, 0)
	for range cluster.DefaultDiscoverMisses + 1 {
		r.tick(monInterval)
	}
	if _, ok := r.statOf("H3:3306"); !ok || !r.serves("H3:3306") {
		t.Fatalf("H3 left the list after one read that missed it: %v", r.listAddrs())
	}

	r.net.Follow(2, -1) // detached
	n = r.roundsUntil(cluster.DefaultDiscoverMisses+2, func() bool { _, ok := r.statOf("H3:3306"); return !ok })
	if n != cluster.DefaultDiscoverMisses {
		t.Fatalf("H3 left the list %d rounds after it was detached, want %d", n, cluster.DefaultDiscoverMisses)
	}
	if r.serves("H3:3306") {
		t.Fatal("H3 serves reads after it left the list")
	}
	if e := r.discoveries("H3:3306"); len(e) != 2 || e[1].Err == nil || !strings.Contains(e[1].Err.Error(), "has not reported it") {
		t.Errorf("H3 events %v, want found then dropped", e)
	}
	if got := r.listAddrs(); !slices.Equal(got, []string{"H1:3306", "H2:3306"}) {
		t.Fatalf("list %v, want the DSN's", got)
	}
}

// TestDiscoverNeverDropsDSNHost: a replica the DSN lists stays in the list however long
// the primary does not report it (detached, or stopped): discovery adds, and removes
// only what it added.
func TestDiscoverNeverDropsDSNHost(t *testing.T) {
	r := discRig(t, 3, 3, nil)
	replicas(r.net, 3)
	r.net.Follow(2, -1)
	for range 3 * cluster.DefaultDiscoverMisses {
		r.tick(monInterval)
	}
	if got := r.listAddrs(); !slices.Equal(got, []string{"H1:3306", "H2:3306", "H3:3306"}) {
		t.Fatalf("list %v, want every DSN host", got)
	}
	if e := r.events(failover.EventDiscovery); len(e) != 0 {
		t.Errorf("discovery events %v, want none", e)
	}
}

// TestDiscoverUnfitNeverChosen: a member found that its probes find not ready (offline
// mode) or writable (no replica) is in the list and never chosen: no replica read, no
// walk; Stats says why.
func TestDiscoverUnfitNeverChosen(t *testing.T) {
	for _, tc := range []struct {
		name  string
		unfit func(n *fake.Net)
		state failover.HostState
	}{
		{"not ready", func(n *fake.Net) { n.SetVars(2, "offline_mode", "ON") }, failover.HostNotReady},
		{"writable", func(n *fake.Net) { n.SetReadOnly(2, false) }, failover.HostUp},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := discRig(t, 3, 2, func(o *rigOpts) { o.TargetSessionAttrs = "read-write" })
			replicas(r.net, 3)
			tc.unfit(r.net)
			for range 4 {
				r.tick(monInterval)
			}
			s, ok := r.statOf("H3:3306")
			if !ok || s.Origin != failover.OriginDiscovered || s.State != tc.state {
				t.Fatalf("H3 listed %v, %+v; want discovered, %v", ok, s, tc.state)
			}
			if r.serves("H3:3306") {
				t.Fatalf("H3 (%s) serves reads", tc.name)
			}
			if !strings.Contains(s.ReplicaSkip, "offline_mode") && !strings.Contains(s.ReplicaSkip, "writable") {
				t.Errorf("H3 replica skip %q, want why", s.ReplicaSkip)
			}
			// The writer dies: the walk takes no unfit member for a write.
			r.net.Kill(0)
			r.net.SetReadOnly(1, false) // H2 promoted
			for range 8 {
				r.tick(monInterval)
			}
			if a := r.cl.Host(r.cl.Active()); a != "H2:3306" {
				t.Fatalf("pool on %s after H1 died, want H2 (the promoted DSN host)", a)
			}
		})
	}
}

// TestDiscoverSameServerIsThatHost: a member reported under another address than the
// DSN's (MariaDB lists a replica without report_host by the address it connected from
// and its own port: behind a proxy or NAT, not the one the client dials) is the DSN's
// host when its server_id is that host's, and never a second one.
func TestDiscoverSameServerIsThatHost(t *testing.T) {
	r := discRig(t, 3, 3, nil)
	replicas(r.net, 3)
	r.net.Report(1, "10.0.0.2:3307")
	r.net.Report(2, "10.0.0.3:3307")
	for range 4 {
		r.tick(monInterval)
	}
	if got := r.listAddrs(); !slices.Equal(got, []string{"H1:3306", "H2:3306", "H3:3306"}) {
		t.Fatalf("list %v, want the DSN's alone", got)
	}
	if e := r.events(failover.EventDiscovery); len(e) != 0 {
		t.Errorf("discovery events %v, want none", e)
	}
}

// TestDiscoverSameServerFoundFirst: a DSN host that was down when the member was found
// under its other address, and comes back (while the other address fails): its probe
// reads the same server_id as the member's, and the member leaves; the DSN's host stays
// and serves.
func TestDiscoverSameServerFoundFirst(t *testing.T) {
	var r *rig
	var proxyDown, directDown atomic.Bool // H2's proxy (the DSN's address of H2), and the way around it
	var direct []*fake.Conn               // the connections the way around (probes only: one at a time)
	r = discRig(t, 3, 2, func(o *rigOpts) {
		o.Dial = func(ctx context.Context, id int) (driver.Conn, error) {
			switch a := r.cl.Host(id); a {
			case "10.0.0.2:3307": // the server H2 itself, not through its proxy
				if directDown.Load() {
					return nil, fake.Refused(a)
				}
				c, err := r.net.Dial(ctx, 1)
				if err == nil {
					direct = append(direct, c.(*fake.Conn))
				}
				return c, err
			case "H2:3306":
				if proxyDown.Load() {
					return nil, fake.Refused(a)
				}
				fallthrough
			default:
				return r.net.DialAddr(ctx, a)
			}
		}
	})
	replicas(r.net, 3)
	r.net.Follow(2, -1)
	r.net.Report(1, "10.0.0.2:3307")
	proxyDown.Store(true)
	n := r.roundsUntil(5, func() bool { return r.serves("10.0.0.2:3307") })
	if n > 5 {
		t.Fatalf("the member 10.0.0.2:3307 never served while H2's proxy was down: list %v", r.listAddrs())
	}
	proxyDown.Store(false)
	directDown.Store(true)
	for _, c := range direct {
		c.Broken.Store(true)
	}
	n = r.roundsUntil(10, func() bool { _, ok := r.statOf("10.0.0.2:3307"); return !ok && r.serves("H2:3306") })
	if n > 10 {
		s, _ := r.statOf("H2:3306")
		t.Fatalf("H2 back: list %v, H2 %+v; want 10.0.0.2:3307 gone and H2 serving", r.listAddrs(), s)
	}
	e := r.discoveries("10.0.0.2:3307")
	if len(e) != 2 || e[1].Err == nil || !strings.Contains(e[1].Err.Error(), "the same server as H2:3306") {
		t.Errorf("events of 10.0.0.2:3307: %v, want found then dropped as H2", e)
	}
	for range 2 * cluster.DefaultDiscoverMisses {
		r.tick(monInterval)
	}
	if got := r.listAddrs(); !slices.Equal(got, []string{"H1:3306", "H2:3306"}) {
		t.Fatalf("list %v: the member came back while H2 is listed", got)
	}
}

// TestDiscoverRefused: a user without the privilege to list the replicas (1227) keeps
// the pool on the DSN's hosts: no error, one event, a Stats note that names the
// privilege; the next read comes DefaultDiscoverRetry later, and members found before
// the privilege was revoked leave at once.
func TestDiscoverRefused(t *testing.T) {
	r := discRig(t, 3, 2, nil)
	replicas(r.net, 3)
	for range 3 {
		r.tick(monInterval)
	}
	if _, ok := r.statOf("H3:3306"); !ok {
		t.Fatalf("H3 not found: %v", r.listAddrs())
	}
	r.net.DenyReplicaHosts(0, true)
	reads := r.net.MemberReads(0)
	for range 10 {
		r.tick(monInterval)
	}
	if got := r.listAddrs(); !slices.Equal(got, []string{"H1:3306", "H2:3306"}) {
		t.Fatalf("list %v after the refusal, want the DSN's", got)
	}
	if n := r.net.MemberReads(0) - reads; n != 1 {
		t.Errorf("%d reads in 10 rounds after a refusal, want 1 (the next after %v)", n, cluster.DefaultDiscoverRetry)
	}
	note := r.cl.Stats().Discovery
	if !strings.Contains(note, "REPLICATION MASTER ADMIN") || !strings.Contains(note, "1227") {
		t.Errorf("Stats.Discovery %q, want the refusal and the privilege", note)
	}
	if e := r.discoveries(""); len(e) != 1 || e[0].Err == nil {
		t.Errorf("note events %v, want one", e)
	}
	if c := r.cl.Host(r.cl.Active()); c != "H1:3306" || !r.serves("H2:3306") {
		t.Errorf("pool on %s, H2 serving %v: want H1 and H2 as before", c, r.serves("H2:3306"))
	}
	r.net.DenyReplicaHosts(0, false) // granted
	r.clock.Advance(cluster.DefaultDiscoverRetry)
	n := r.roundsUntil(3, func() bool { return r.serves("H3:3306") })
	if n > 3 || r.cl.Stats().Discovery != "" {
		t.Fatalf("after the grant: H3 serving after %d rounds, note %q", n, r.cl.Stats().Discovery)
	}
}

// TestDiscoverOneReadPerRound: the cluster's members are read once per checkInterval, on
// the pool's host only, over its probe connection (no session of its own), however often
// the host is probed.
func TestDiscoverOneReadPerRound(t *testing.T) {
	r := discRig(t, 3, 2, nil)
	replicas(r.net, 3)
	for range 10 {
		r.tick(monInterval)
		r.cl.Check(context.Background()) // a second round at the same time: no second read
	}
	if n := r.net.MemberReads(0); n < 9 || n > 11 {
		t.Errorf("H1 answered %d member reads in 10 checkIntervals, want 10", n)
	}
	for i := 1; i < 3; i++ {
		if n := r.net.MemberReads(i); n != 0 {
			t.Errorf("H%d answered %d member reads, want 0 (only the pool's host is read)", i+1, n)
		}
	}
	if n := len(r.net.Conns(0)); n != 1 {
		t.Errorf("%d connections to H1, want its probe connection alone", n)
	}
}

// TestDiscoverMapAddr: an address the cluster reports and the client cannot dial is
// mapped by Env.MapAddr (WithDiscoveryMap); "" leaves the member out.
func TestDiscoverMapAddr(t *testing.T) {
	r := discRig(t, 4, 2, func(o *rigOpts) {
		o.MapAddr = func(a string) string {
			switch a {
			case "172.17.0.3:3306":
				return "H3:3306"
			}
			return ""
		}
	})
	replicas(r.net, 4)
	r.net.Report(2, "172.17.0.3:3306")
	r.net.Report(3, "172.17.0.4:3306")
	for range 3 {
		r.tick(monInterval)
	}
	if got := r.listAddrs(); !slices.Equal(got, []string{"H1:3306", "H2:3306", "H3:3306"}) {
		t.Fatalf("list %v, want H3 (mapped) and not H4 (left out)", got)
	}
}

// TestDiscoverWithHostList: discovery and the provider's list are one list: the
// provider's hosts first (origin host-list), the members found after them; a member the
// provider then lists is one host, of the provider's list.
func TestDiscoverWithHostList(t *testing.T) {
	p := &monProvider{}
	p.set(nil, "H1:3306", "H2:3306")
	r := discRig(t, 3, 1, func(o *rigOpts) { o.Provider = p })
	replicas(r.net, 3)
	for range 3 {
		r.tick(monInterval)
	}
	if got := r.listAddrs(); !slices.Equal(got, []string{"H1:3306", "H2:3306", "H3:3306"}) {
		t.Fatalf("list %v, want the provider's then H3", got)
	}
	if s, _ := r.statOf("H2:3306"); s.Origin != failover.OriginHostList {
		t.Errorf("H2 origin %v, want host-list", s.Origin)
	}
	p.set(nil, "H1:3306", "H3:3306")
	r.tick(monInterval)
	r.tick(monInterval)
	got := r.cl.Stats().Hosts
	if len(got) != 3 || got[1].Addr != "H3:3306" || got[1].Origin != failover.OriginHostList ||
		got[2].Addr != "H2:3306" || got[2].Origin != failover.OriginDiscovered {
		t.Fatalf("hosts %v, want H1 H3 (host list), H2 (discovered: a replica the list dropped)", statAddrs(r.cl.Stats()))
	}
}

// TestDiscoverGaleraNode: a fourth Galera node that joins the Primary component joins
// the list and serves reads within two rounds; one that leaves it (killed) leaves the
// list. The nodes' identities (the members table's node UUIDs) keep the DSN's nodes, which
// report other addresses, from being listed twice.
func TestDiscoverGaleraNode(t *testing.T) {
	for _, form := range []string{"members table", "wsrep_incoming_addresses"} {
		t.Run(form, func(t *testing.T) {
			r := discRig(t, 4, 3, nil)
			const uuid = "6a3b1b3c-aaaa-11ee-8000-000000000001"
			for i := range 3 {
				r.net.Galera(i, "synced", uuid, 3)
			}
			r.net.Galera(3, "synced", "another-history", 1)
			r.net.Down(3)
			if form == "members table" {
				r.net.Report(1, "10.1.0.2:3306") // a DSN node known by its UUID
				r.net.Report(2, galeraAuto)      // and one whose address is unset
			} else {
				// As MariaDB 10.11 answers a user without SELECT on the members table, with
				// wsrep_node_incoming_address unset on the DSN's nodes: "AUTO,AUTO,AUTO".
				r.net.DenyMembers(0, tableDenied)
				for i := range 3 {
					r.net.Report(i, galeraAuto)
				}
			}
			for range 3 {
				r.tick(monInterval)
			}
			if got := r.listAddrs(); !slices.Equal(got, []string{"H1:3306", "H2:3306", "H3:3306"}) {
				t.Fatalf("list %v, want the DSN's nodes alone", got)
			}
			if note := r.cl.Stats().Discovery; note != "" {
				t.Errorf("note %q, want none (the AUTO node is a listed one)", note)
			}
			r.net.Up(3)
			for i := range 4 {
				r.net.Galera(i, "synced", uuid, 4)
			}
			n := r.roundsUntil(5, func() bool { return r.serves("H4:3306") })
			if n > 2 {
				t.Fatalf("H4 served no read %d rounds after it joined (list %v)", n, r.listAddrs())
			}
			r.net.Kill(3)
			for i := range 3 {
				r.net.Galera(i, "synced", uuid, 3)
			}
			n = r.roundsUntil(6, func() bool { _, ok := r.statOf("H4:3306"); return !ok })
			if n > cluster.DefaultDiscoverMisses {
				t.Fatalf("H4 still listed %d rounds after it left: %v", n, r.listAddrs())
			}
		})
	}
}

// galeraAuto is what a Galera node reports while wsrep_node_incoming_address is unset.
const galeraAuto = "AUTO"

// tableDenied is MariaDB's answer to a SELECT on a table of mysql the user may not read.
var tableDenied = &mysql.MySQLError{Number: 1142, SQLState: [5]byte{'4', '2', '0', '0', '0'},
	Message: "SELECT command denied to user 'app'@'localhost' for table `mysql`.`wsrep_cluster_members`"}

// TestDiscoverGaleraAuto: a node that reports AUTO (wsrep_node_incoming_address unset)
// and is not listed cannot be dialled: it is left out and Stats says why. Without the
// members table's identities, AUTO entries are taken for the listed nodes no address
// named while there are enough of them.
func TestDiscoverGaleraAuto(t *testing.T) {
	for _, tc := range []struct {
		name  string
		deny  bool // the members table refused: wsrep_incoming_addresses
		autos []int
		note  bool
	}{
		{"members table, an unlisted node", false, []int{2}, true},
		{"members table, listed nodes", false, []int{0, 1}, false},
		{"incoming addresses, listed nodes", true, []int{0, 1}, false},
		{"incoming addresses, one more", true, []int{0, 1, 2}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := discRig(t, 3, 2, nil)
			for i := range 3 {
				r.net.Galera(i, "synced", "u1", 3)
			}
			for _, i := range tc.autos {
				r.net.Report(i, galeraAuto)
			}
			if tc.deny {
				r.net.DenyMembers(0, tableDenied)
			}
			for range 3 {
				r.tick(monInterval)
			}
			want := []string{"H1:3306", "H2:3306"}
			if !slices.Contains(tc.autos, 2) {
				want = append(want, "H3:3306")
			}
			if got := r.listAddrs(); !slices.Equal(got, want) {
				t.Fatalf("list %v, want %v", got, want)
			}
			if note := r.cl.Stats().Discovery; tc.note != strings.Contains(note, "AUTO") {
				t.Errorf("note %q, want one that says why a member was left out: %v", note, tc.note)
			}
		})
	}
}

// TestDiscoverGroupMembers: a Group Replication group's members, from the server's real
// answer to the member list (MySQL 8.0's manual, "The replication_group_members Table":
// three ONLINE members example1..3 on ports 4410, 4420, 4430), join a list that names
// one of them; the DSN's member is known by its server_uuid.
func TestDiscoverGroupMembers(t *testing.T) {
	// The manual's answer to SELECT * FROM performance_schema.replication_group_members,
	// as the client prints it; the member list's columns are taken from it.
	const answer = `
| group_replication_applier | d391e9ee-2691-11ec-bf61-00059a3c7a00 | example1    |        4410 | ONLINE       | PRIMARY     | 8.0.27         | XCom                       |
| group_replication_applier | e059ce5c-2691-11ec-8632-00059a3c7a00 | example2    |        4420 | ONLINE       | SECONDARY   | 8.0.27         | XCom                       |
| group_replication_applier | ecd9ad06-2691-11ec-91c7-00059a3c7a00 | example3    |        4430 | ONLINE       | SECONDARY   | 8.0.27         | XCom                       |`
	var rows [][]driver.Value
	var uuids []string
	for _, line := range strings.Split(strings.TrimSpace(answer), "\n") {
		f := strings.Split(strings.Trim(line, "| "), "|")
		for k := range f {
			f[k] = strings.TrimSpace(f[k])
		}
		uuids = append(uuids, f[1])
		rows = append(rows, []driver.Value{[]byte(f[1]), []byte(f[2]), []byte(f[3])})
	}
	addrs := map[string]int{"example1:4410": 0, "example2:4420": 1, "example3:4430": 2}
	var r *rig
	r, _ = monRig(t, 3, func(o *rigOpts) {
		o.Hosts = o.Hosts[:1]
		o.Hosts[0].Name, o.Hosts[0].Port = "example1", 4410
		o.DiscoverHosts, o.ReplicaReads = true, true
		o.Dial = func(ctx context.Context, id int) (driver.Conn, error) {
			if i, ok := addrs[r.cl.Host(id)]; ok {
				return r.net.Dial(ctx, i)
			}
			return nil, fake.Refused(r.cl.Host(id))
		}
	})
	for i := range 3 {
		r.net.GroupMember(i, "ONLINE", 3, 0, i == 0)
		r.net.SetVars(i, "server_uuid", uuids[i])
		r.net.GroupMembers(i, []string{"MEMBER_ID", "MEMBER_HOST", "MEMBER_PORT"}, rows)
	}
	for range 3 {
		r.tick(monInterval)
	}
	if got := r.listAddrs(); !slices.Equal(got, []string{"example1:4410", "example2:4420", "example3:4430"}) {
		t.Fatalf("list %v, want the group's three members, example1 once", got)
	}
	if !r.serves("example2:4420") || !r.serves("example3:4430") {
		t.Errorf("the secondaries serve no reads: %+v", r.cl.Stats().Hosts)
	}
}

// TestDiscoverKeepsSwitchTo: a member found does not undo an operator's SwitchTo (the
// host the pool returns to stays the one chosen).
func TestDiscoverKeepsSwitchTo(t *testing.T) {
	r := discRig(t, 3, 2, nil)
	replicas(r.net, 3)
	r.net.Follow(2, -1)
	r.tick(monInterval)
	if err := r.cl.SwitchTo(context.Background(), "H2:3306"); err != nil {
		t.Fatal(err)
	}
	r.net.Follow(2, 1)
	r.net.SetReadOnly(1, false)
	r.net.SetReadOnly(0, true)
	for range 3 {
		r.tick(monInterval)
	}
	if _, ok := r.statOf("H3:3306"); !ok {
		t.Fatalf("H3 not found: %v", r.listAddrs())
	}
	if p := r.cl.Host(r.cl.Primary()); p != "H2:3306" {
		t.Fatalf("primary %s after discovery, want H2 (SwitchTo)", p)
	}
}
