package cluster

// Discovery (discoverHosts): the members a cluster reports join the host list, after the
// hosts of the DSN or of the provider's last list (the base). One read per checkInterval,
// on the pool's host, over its probe connection (probeDiscover): the replicas registered
// with the primary (SHOW REPLICA HOSTS, the replicas' report_host and report_port), a
// Galera node's view of its cluster (mysql.wsrep_cluster_members, or
// wsrep_incoming_addresses where the table may not be read), a Group Replication
// member's (performance_schema.replication_group_members). A member is named by the
// address it reports (mapped by Env.MapAddr when set) and by its identity (State.Ident):
// a member whose address or identity is a listed host's is that host, never a second
// one. A member found joins the list when the monitor next takes the list (the end of
// the probe, or of Check) and is probed at once; like any host it is used only once its
// probes found it ready and of the role wanted. A member the reads stop reporting leaves
// after DefaultDiscoverMisses reads; a base host never does. A read the server refuses
// (a missing privilege) drops every member found, until a read works again: the pool
// works on the base, and Stats.Discovery says why.
//
// Lock order: discovery.apply (one change of the list at a time) is taken before
// Cluster.mu (hostLists.put); discovery.mu is taken alone, or after a hostState's mu is
// released, never while another lock is held.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// The queries of discovery, besides ReplicaHostsQuery (SlaveHostsQuery on servers that
// answer it with 1064), which needs REPLICATION MASTER ADMIN on MariaDB 10.5.2+ and
// REPLICATION SLAVE on MySQL. GaleraMembersQuery (MariaDB 10.4+) needs SELECT on
// mysql.wsrep_cluster_members; where it is refused, or the table is missing,
// GaleraAddressesQuery, which needs no privilege but gives no identity, takes its place
// for the pool's life. GroupMembersQuery needs SELECT on performance_schema.
const (
	GaleraMembersQuery   = "SELECT node_uuid, node_incoming_address FROM mysql.wsrep_cluster_members"
	GaleraAddressesQuery = "SHOW GLOBAL STATUS LIKE 'wsrep_incoming_addresses'"
	GroupMembersQuery    = "SELECT MEMBER_ID, MEMBER_HOST, MEMBER_PORT FROM performance_schema.replication_group_members"
)

// galeraAuto is the address a Galera node reports while its wsrep_node_incoming_address
// is unset (MDEV-20627): it cannot be dialled, and the node is found by its identity or
// not at all.
const galeraAuto = "AUTO"

// Member is one member a cluster reported (ReadMembers).
type Member struct {
	// Ident is its identity, as State.Ident names a server; "" when the report gives
	// none (wsrep_incoming_addresses).
	Ident string
	// Addr is host:port as reported (port 3306 added when it gave none); "" or "AUTO"
	// (a Galera node whose wsrep_node_incoming_address is unset) when none that can be
	// dialled.
	Addr string
}

// discovery is the Cluster's discovery state (Cluster.disc).
type discovery struct {
	cfg     settings
	mapAddr func(reported string) string // Env.MapAddr

	apply sync.Mutex // one change of the host list at a time (hostLists.apply)

	mu       sync.Mutex
	base     []failover.ProvidedHost // the DSN's hosts, or the provider's last good list
	baseFrom failover.HostOrigin
	found    []*foundHost      // the members found, in the order found
	aliases  map[string]string // address key -> the listed host it reaches (not added)
	next     time.Time         // when the next read is due (zero: at the next probe)
	statusOK bool              // Galera: GaleraAddressesQuery, the members table being refused
	note     string            // Stats.Discovery
	told     string            // the note last reported (EventDiscovery)
	changed  bool              // found changed since the list was last taken
	evs      []failover.Event  // the changes' events, reported once the list is taken
}

// foundHost is one member discovery found and keeps in the list.
type foundHost struct {
	addr   string
	key    string // hostAddrKey(addr)
	ident  string // what the report said of it ("" none)
	since  time.Time
	missed int // consecutive reads that did not report it
}

// init sets the settings and the address map, and the base list to the DSN's hosts.
func (d *discovery) init(cfg settings, mapAddr func(string) string) {
	d.cfg, d.mapAddr = cfg, mapAddr
	for _, h := range cfg.Hosts {
		d.base = append(d.base, failover.ProvidedHost{Addr: h.Addr(), DC: h.DC})
	}
	d.baseFrom = failover.OriginDSN
}

// apply makes the host list the base (provided, when not nil, becomes it: the
// provider's list, valid) followed by the members found that the base does not list.
// A list the engine refuses (put: with localDC, no local host) changes nothing.
func (hl *hostLists) apply(provided []failover.ProvidedHost) error {
	d := &hl.c.disc
	d.apply.Lock()
	defer d.apply.Unlock()
	d.mu.Lock()
	base, from := d.base, d.baseFrom
	if provided != nil {
		base, from = provided, failover.OriginHostList
	}
	entries := make([]listEntry, 0, len(base)+len(d.found))
	listed := map[string]bool{}
	for _, h := range base {
		entries = append(entries, listEntry{ProvidedHost: h, from: hostFrom{origin: from}})
		if k, reason := hostAddrKey(h.Addr); reason == "" {
			listed[k] = true
		}
	}
	for _, f := range d.found {
		if !listed[f.key] {
			entries = append(entries, listEntry{ProvidedHost: failover.ProvidedHost{Addr: f.addr},
				from: hostFrom{origin: failover.OriginDiscovered, since: f.since}})
		}
	}
	evs := d.evs
	d.evs, d.changed = nil, false
	d.mu.Unlock()
	err := hl.put(entries, provided != nil)
	if err != nil {
		d.mu.Lock()
		d.evs = append(evs, d.evs...) // the members' changes are still to take, with the next read
		d.changed = d.changed || len(evs) > 0 || provided == nil
		d.mu.Unlock()
		return err
	}
	if provided != nil {
		d.mu.Lock()
		d.base, d.baseFrom = provided, failover.OriginHostList
		d.mu.Unlock()
	}
	for _, e := range evs {
		hl.c.emit(e)
	}
	return nil
}

// takeDiscovered applies the members found when they changed since the list was last
// taken. It must be called without c.inUse held (so that ids of hosts that left may be
// given to new ones).
func (mon *monitor) takeDiscovered() {
	if !mon.cfg.DiscoverHosts {
		return
	}
	mon.c.disc.mu.Lock()
	changed := mon.c.disc.changed
	mon.c.disc.mu.Unlock()
	if changed {
		_ = mon.c.lists.apply(nil)
	}
}

// probeDiscover reads the cluster's members over conn, the probe connection of host id,
// whose probe read st, when discovery is due and id is the host to read: the pool's
// host, ready, and in a replication cluster writable (the primary the replicas register
// with). A read the server refuses is recorded (discovery.refused); one that did not
// complete changes nothing. It reports false when conn broke or timed out.
func (mon *monitor) probeDiscover(ctx context.Context, id int, conn driver.Conn, st *State, wait time.Duration) bool {
	if !mon.cfg.DiscoverHosts || st == nil || st.NotReady != nil || id != mon.c.Active() ||
		st.Kind == KindUnknown || st.Kind == KindReplication && !writable(st.Role) {
		return true
	}
	now := mon.env.Clock.Now()
	// Once per checkInterval: the pool's host is probed twice per checkInterval, and a
	// read is due again three quarters of one later, so that the jitter of a probe's
	// round trip never skips a round (and a probe half a period later never reads).
	if !mon.c.disc.claim(now, mon.cfg.CheckInterval-mon.cfg.CheckInterval/4) {
		return true
	}
	rctx, cancel := withBudget(ctx, wait)
	defer cancel()
	members, query, err := mon.c.disc.readMembers(rctx, conn, st.Kind)
	if err != nil {
		if Classify(rctx, err) != Data {
			mon.c.disc.unclaim() // the next probe reads again
			return false
		}
		mon.c.disc.refused(mon.c.Host(id), query, st.Kind, err, now)
		return true
	}
	mon.c.disc.noteMembers(mon.c.topo().listed(), members, st.Galera.UUID, now)
	return true
}

// claim reports whether a read is due at now, and if so makes the next one due every
// later.
func (d *discovery) claim(now time.Time, every time.Duration) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if now.Before(d.next) {
		return false
	}
	d.next = now.Add(every)
	return true
}

// unclaim makes a read due at the next probe: the claimed one did not complete.
func (d *discovery) unclaim() {
	d.mu.Lock()
	d.next = time.Time{}
	d.mu.Unlock()
}

// readMembers reads the members of a cluster of kind k over conn, as ReadMembers does,
// Galera's members table only until it is refused once (then the status, for the pool's
// life).
func (d *discovery) readMembers(ctx context.Context, conn driver.Conn, k Kind) ([]Member, string, error) {
	d.mu.Lock()
	status := d.statusOK
	d.mu.Unlock()
	members, status, query, err := readMembers(ctx, conn, k, status)
	if status {
		d.mu.Lock()
		d.statusOK = true
		d.mu.Unlock()
	}
	return members, query, err
}

// ReadMembers reads over conn the members of a cluster of kind k, as discoverHosts
// does: the replicas registered with the server (ReplicaHostsQuery, or SlaveHostsQuery
// where the server answers 1064), a Galera node's view (GaleraMembersQuery, or
// GaleraAddressesQuery where the table is refused or missing), a Group Replication
// member's (GroupMembersQuery). One query (Galera: two when the table is refused). The
// error is the driver's or the server's (a refusal: a missing privilege), with the query
// that failed.
func ReadMembers(ctx context.Context, conn driver.Conn, k Kind) ([]Member, string, error) {
	members, _, query, err := readMembers(ctx, conn, k, false)
	return members, query, err
}

// readMembers is ReadMembers; with status, Galera's members are read from
// GaleraAddressesQuery at once. It reports whether they were (the table refused).
func readMembers(ctx context.Context, conn driver.Conn, k Kind, status bool) ([]Member, bool, string, error) {
	switch k {
	case KindGalera:
		if !status {
			rows, err := queryRows(ctx, conn, GaleraMembersQuery)
			if err == nil {
				return galeraMembers(rows), false, "", nil
			}
			if Classify(ctx, err) != Data {
				return nil, false, GaleraMembersQuery, err
			}
			status = true // no privilege, or no table (before 10.4): the status has the addresses
		}
		vars, err := showRows(ctx, conn, GaleraAddressesQuery)
		if err != nil {
			return nil, status, GaleraAddressesQuery, err
		}
		return galeraAddresses(vars["wsrep_incoming_addresses"]), status, "", nil
	case KindGroup:
		rows, cols, err := queryColumns(ctx, conn, GroupMembersQuery)
		if err != nil {
			return nil, false, GroupMembersQuery, err
		}
		return groupMembers(rows, cols), false, "", nil
	}
	hosts, query, err := registeredReplicas(ctx, conn)
	if err != nil {
		return nil, false, query, err
	}
	out := make([]Member, 0, len(hosts))
	for _, h := range hosts {
		m := Member{Ident: identID + strconv.FormatInt(h.serverID, 10)}
		if h.host != "" && h.port > 0 {
			m.Addr = net.JoinHostPort(h.host, strconv.Itoa(h.port))
		}
		out = append(out, m)
	}
	return out, false, "", nil
}

// galeraMembers reads GaleraMembersQuery's rows: node_uuid, node_incoming_address.
func galeraMembers(rows [][]driver.Value) []Member {
	out := make([]Member, 0, len(rows))
	for _, r := range rows {
		if len(r) < 2 {
			continue
		}
		m := Member{Addr: withPort(strings.TrimSpace(dialect.Text(r[1])))}
		if u := strings.TrimSpace(dialect.Text(r[0])); u != "" {
			m.Ident = identGalera + strings.ToLower(u)
		}
		out = append(out, m)
	}
	return out
}

// galeraAddresses reads wsrep_incoming_addresses: the members' addresses, comma
// separated, without identities.
func galeraAddresses(v string) []Member {
	var out []Member
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, Member{Addr: withPort(a)})
		}
	}
	return out
}

// groupMembers reads GroupMembersQuery's rows: MEMBER_ID (its server_uuid),
// MEMBER_HOST, MEMBER_PORT (report_host and report_port, or its host name and port).
func groupMembers(rows [][]driver.Value, cols []string) []Member {
	id, host, port := column(cols, "MEMBER_ID"), column(cols, "MEMBER_HOST"), column(cols, "MEMBER_PORT")
	if id < 0 || host < 0 || port < 0 {
		return nil
	}
	out := make([]Member, 0, len(rows))
	for _, r := range rows {
		m := Member{}
		if u := strings.TrimSpace(dialect.Text(r[id])); u != "" {
			m.Ident = identUUID + strings.ToLower(u)
		}
		if h, p := strings.TrimSpace(dialect.Text(r[host])), dialect.Text(r[port]); h != "" {
			if n, err := strconv.Atoi(p); err == nil && n > 0 {
				m.Addr = net.JoinHostPort(h, p)
			}
		}
		out = append(out, m)
	}
	return out
}

// withPort returns a reported address with MySQL's port 3306 added when it has none; ""
// and galeraAuto stay as they are.
func withPort(a string) string {
	if a == "" || strings.EqualFold(a, galeraAuto) {
		return a
	}
	if _, _, err := net.SplitHostPort(a); err != nil {
		return net.JoinHostPort(strings.Trim(a, "[]"), "3306")
	}
	return a
}

// listedHost is what discovery compares a member with: a host of the list.
type listedHost struct {
	addr, key, ident string
	galera           string // the Galera cluster history it was last read in ("" none)
	discovered       bool
	waiting          bool // a base host not read yet: its identity is not known
}

// listed returns the hosts of the list in force.
func (t *topo) listed() []listedHost {
	out := make([]listedHost, 0, len(t.list))
	for _, id := range t.list {
		h := t.hosts[id]
		h.mu.Lock()
		ident, state := h.ident, h.state
		h.mu.Unlock()
		key, _ := hostAddrKey(h.addr)
		g, _ := h.gal.get()
		disc := t.fromOf(id).origin == failover.OriginDiscovered
		out = append(out, listedHost{addr: h.addr, key: key, ident: ident, galera: g.UUID, discovered: disc,
			waiting: !disc && ident == "" && state == failover.HostUnknown})
	}
	return out
}

// noteMembers records what a read at now found (hosts: the list in force, topo.listed):
// members new to the list are found (unless a base host has not told its identity yet: the member may be it), members
// found before and reported again stay, and those missing from DefaultDiscoverMisses
// reads in a row leave. The list is taken later (takeDiscovered). history is the
// reader's Galera cluster history ("" for another kind): members that report no
// address nor identity (wsrep_incoming_addresses' AUTO) are taken for the listed nodes
// of that history that no reported address named, as long as there are enough of them.
func (d *discovery) noteMembers(hosts []listedHost, members []Member, history string, now time.Time) {
	waiting, byIdent, byKey := indexListed(hosts)
	d.mu.Lock()
	defer d.mu.Unlock()
	for k, to := range d.aliases { // an alias lasts while the host it reaches is listed
		if !byKey[mustKey(to)] {
			delete(d.aliases, k)
		}
	}
	seen := map[*foundHost]bool{}
	named := map[string]bool{} // the listed hosts a member's address names
	var unnamed, anonymous int
	for _, m := range members {
		if m.Ident != "" && byIdent[m.Ident] != "" {
			continue // a listed host, under whatever address
		}
		addr, key, ok := d.memberAddr(m)
		if !ok {
			unnamed++
			if m.Ident == "" {
				anonymous++
			}
			continue
		}
		named[key] = true
		if byKey[key] || d.aliases[key] != "" {
			continue
		}
		if f := d.meetLocked(addr, key, m.Ident, waiting, now); f != nil {
			seen[f] = true
		}
	}
	d.dropMissingLocked(seen)
	d.note = unnamedNote(hosts, history, named, unnamed, anonymous)
	d.tellLocked()
}

// indexListed returns what noteMembers needs of the list in force: whether a host has not
// told its identity yet (waiting), and the base hosts (not discovered ones) by identity
// (their addresses) and by address key.
func indexListed(hosts []listedHost) (waiting bool, byIdent map[string]string, byKey map[string]bool) {
	byIdent, byKey = map[string]string{}, map[string]bool{}
	for _, h := range hosts {
		waiting = waiting || h.waiting
		if !h.discovered {
			if h.ident != "" {
				byIdent[h.ident] = h.addr
			}
			byKey[h.key] = true
		}
	}
	return waiting, byIdent, byKey
}

// memberAddr returns the address member m is dialled at (mapped by Env.MapAddr) and its
// key; ok is false when m reported none that can be dialled (none, or Galera's AUTO).
func (d *discovery) memberAddr(m Member) (addr, key string, ok bool) {
	addr = m.Addr
	if addr != "" && !strings.EqualFold(addr, galeraAuto) && d.mapAddr != nil {
		addr = d.mapAddr(addr)
	}
	if addr == "" || strings.EqualFold(addr, galeraAuto) {
		return addr, "", false
	}
	key, reason := hostAddrKey(addr)
	return addr, key, reason == ""
}

// meetLocked records, under d.mu, that a read at now reported the member at addr (key,
// ident) that no listed host is: one found before is seen again, a new one is found (an
// event), unless a base host has not told its identity yet (waiting: the member may be
// it, under the address the server reports; the next read decides, and it returns nil).
func (d *discovery) meetLocked(addr, key, ident string, waiting bool, now time.Time) *foundHost {
	f := d.find(key, ident)
	switch {
	case f != nil:
		f.missed = 0
		if ident != "" {
			f.ident = ident
		}
		return f
	case waiting:
		return nil
	}
	f = &foundHost{addr: addr, key: key, ident: ident, since: now}
	d.found = append(d.found, f)
	d.changed = true
	d.evs = append(d.evs, failover.Event{Kind: failover.EventDiscovery, Host: addr})
	return f
}

// dropMissingLocked counts a missed read for every member found before that this read did
// not see, and drops those missing DefaultDiscoverMisses reads in a row (an event each).
func (d *discovery) dropMissingLocked(seen map[*foundHost]bool) {
	kept := d.found[:0]
	for _, f := range d.found {
		if !seen[f] {
			if f.missed++; f.missed >= DefaultDiscoverMisses {
				d.changed = true
				d.evs = append(d.evs, failover.Event{Kind: failover.EventDiscovery, Host: f.addr,
					Err: fmt.Errorf("the cluster has not reported it for %d reads: it leaves the host list", f.missed)})
				continue
			}
		}
		kept = append(kept, f)
	}
	clear(d.found[len(kept):])
	d.found = kept
}

// unnamedNote is Stats.Discovery's note on the members that reported no address that can
// be dialled ("" when none did): unnamed of them, anonymous with no identity either. On
// Galera (history, the reader's cluster history) the anonymous ones are taken for the
// listed nodes of that history that no member's address named (named), as many as there
// are.
func unnamedNote(hosts []listedHost, history string, named map[string]bool, unnamed, anonymous int) string {
	if history != "" && anonymous > 0 {
		others := 0 // listed nodes of the reader's cluster no address named: the anonymous may be them
		for _, h := range hosts {
			if h.galera == history && !named[h.key] {
				others++
			}
		}
		unnamed -= min(anonymous, others)
	}
	if unnamed <= 0 {
		return ""
	}
	return fmt.Sprintf("discoverHosts: %d member(s) of the cluster reported no address that can be dialled "+
		"(a Galera node with wsrep_node_incoming_address unset reports AUTO; a replica without report_host none): "+
		"set it on them, or map the address the cluster reports (WithDiscoveryMap)", unnamed)
}

// find returns the member found under key, or with ident, or nil.
func (d *discovery) find(key, ident string) *foundHost {
	for _, f := range d.found {
		if f.key == key || ident != "" && f.ident == ident {
			return f
		}
	}
	return nil
}

// tellLocked queues a new note's report (EventDiscovery, Host ""), once, for the next
// take of the list; d.mu is held.
func (d *discovery) tellLocked() {
	if d.note == d.told {
		return
	}
	d.told = d.note
	if d.note != "" {
		d.evs = append(d.evs, failover.Event{Kind: failover.EventDiscovery, Err: errors.New(d.note)})
		d.changed = true
	}
}

// DiscoveryPrivilege names what a user needs to list the members of a cluster of kind k
// (discoverHosts; `mysqlfailover check` gives it as the fix).
func DiscoveryPrivilege(k Kind) string {
	switch k {
	case KindGalera:
		return "SELECT on mysql.wsrep_cluster_members (or nothing: wsrep_incoming_addresses needs no privilege)"
	case KindGroup:
		return "SELECT on performance_schema.replication_group_members"
	}
	return "REPLICATION MASTER ADMIN (MariaDB 10.5.2+; REPLICATION SLAVE on MySQL)"
}

// refused records that host refused query, a read of the members of a cluster
// of kind k, with err (a missing privilege): every member found leaves the list (the
// pool works on the base), Stats.Discovery says why, and the next read is in
// DefaultDiscoverRetry (a grant may come).
func (d *discovery) refused(host, query string, k Kind, err error, now time.Time) {
	need := "the privilege to run it"
	if k == KindReplication || k == KindGroup {
		need = DiscoveryPrivilege(k)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.next = now.Add(DefaultDiscoverRetry)
	for _, f := range d.found {
		d.evs = append(d.evs, failover.Event{Kind: failover.EventDiscovery, Host: f.addr,
			Err: errors.New("the cluster's members cannot be read: it leaves the host list")})
	}
	if len(d.found) > 0 {
		d.found, d.changed = nil, true
	}
	d.note = fmt.Sprintf("discoverHosts: %s refused on %s: %v; grant %s to the pool's user. Meanwhile the pool uses the hosts of the DSN or host list",
		query, host, err, need)
	d.tellLocked()
}

// stats is Stats.Discovery.
func (d *discovery) stats() string {
	if !d.cfg.DiscoverHosts {
		return ""
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.note
}

// noteIdent records ident, the identity a read of host id's state found, and returns
// why the host is not one to use when it is a member found by discovery and another
// listed host has the same identity (the same server, reported under another address:
// a proxy, NAT): the list drops it when it is next taken. When id is the base host and
// a member found has its identity, that one is dropped instead (and made unfit now).
func (rc *recorder) noteIdent(id int, ident string) *NotReadyError {
	t := rc.c.topo()
	h := t.host(id)
	if h == nil {
		return nil
	}
	h.mu.Lock()
	h.ident = ident
	h.mu.Unlock()
	if !rc.cfg.DiscoverHosts || ident == "" || !t.member[id] {
		return nil
	}
	mine := t.fromOf(id).origin == failover.OriginDiscovered
	for _, o := range t.list {
		if o == id {
			continue
		}
		oh := t.hosts[o]
		oh.mu.Lock()
		same := oh.ident == ident
		oh.mu.Unlock()
		theirs := t.fromOf(o).origin == failover.OriginDiscovered
		if !same || !mine && !theirs {
			continue
		}
		drop, keep := id, o
		if !mine {
			drop, keep = o, id
		}
		nr := &NotReadyError{Kind: rc.c.Kind(), Reason: fmt.Sprintf(
			"the same server as %s (%s), reported under another address: not a second host", t.hosts[keep].addr, ident)}
		rc.c.disc.alias(t.hosts[drop].addr, t.hosts[keep].addr)
		if drop == id {
			return nr
		}
		rc.setReady(drop, nr)
		return nil
	}
	return nil
}

// alias records that addr, a member found, reaches the listed host to: it leaves the
// list, and is not found again while to is listed.
func (d *discovery) alias(addr, to string) {
	key := mustKey(addr)
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.aliases == nil {
		d.aliases = map[string]string{}
	}
	d.aliases[key] = to
	for k, f := range d.found {
		if f.key == key {
			d.found = append(d.found[:k:k], d.found[k+1:]...)
			d.changed = true
			d.evs = append(d.evs, failover.Event{Kind: failover.EventDiscovery, Host: addr,
				Err: fmt.Errorf("the same server as %s: it leaves the host list", to)})
			break
		}
	}
}

// mustKey is hostAddrKey of an address already validated ("" when it is not).
func mustKey(addr string) string {
	k, _ := hostAddrKey(addr)
	return k
}
