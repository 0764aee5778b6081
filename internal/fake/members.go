package fake

import (
	"context"
	"database/sql/driver"
	"net"
	"strconv"
	"strings"
)

// What a cluster reports of its members, for discovery (discoverHosts): the replicas
// registered with a primary (SHOW REPLICA HOSTS), a Galera node's view of its cluster
// (mysql.wsrep_cluster_members, wsrep_incoming_addresses), a Group Replication member's
// (performance_schema.replication_group_members).

// Report sets the address host i reports of itself, host:port ("" for none): what a
// primary lists for it when it replicates (SHOW REPLICA HOSTS: report_host and
// report_port; "10.0.0.7:3307" as MariaDB lists a replica without report_host, by the
// address it connected from and its own port), and its Galera incoming address ("AUTO":
// wsrep_node_incoming_address unset). By default a host reports its own address.
func (n *Net) Report(i int, addr string) {
	n.mu.Lock()
	n.hosts[i].report, n.hosts[i].reportSet = addr, true
	n.mu.Unlock()
}

// DenyMembers makes host i answer err to the queries that list the cluster's members
// (the Galera members table: 1142, as to a user without SELECT on it; the Group
// Replication member list), nil to answer them again. SHOW REPLICA HOSTS has
// DenyReplicaHosts.
func (n *Net) DenyMembers(i int, err error) {
	n.mu.Lock()
	n.hosts[i].membersErr = err
	n.mu.Unlock()
}

// GroupMembers sets what host i answers to the Group Replication member list
// (cluster.GroupMembersQuery): the columns and the rows as a MySQL server sends them
// (text protocol: every value []byte, NULL nil).
func (n *Net) GroupMembers(i int, cols []string, rows [][]driver.Value) {
	n.mu.Lock()
	n.hosts[i].groupCols, n.hosts[i].groupRows = cols, rows
	n.mu.Unlock()
}

// MemberReads returns how many member lists host i answered (SHOW REPLICA HOSTS and
// the Galera and Group Replication member queries; refusals included).
func (n *Net) MemberReads(i int) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hosts[i].memberReads
}

// DialAddr dials the host whose address is addr (case-insensitive), as a cluster.DialFunc
// does by id; an address of no host is refused. For a cluster whose ids are not the
// Net's (hosts discovered, or from a host list): func(ctx, id) { n.DialAddr(ctx, cl.Host(id)) }.
func (n *Net) DialAddr(ctx context.Context, addr string) (driver.Conn, error) {
	n.mu.Lock()
	idx := -1
	for i, h := range n.hosts {
		if strings.EqualFold(h.addr, addr) {
			idx = i
		}
	}
	n.mu.Unlock()
	if idx < 0 {
		return nil, Refused(addr)
	}
	return n.Dial(ctx, idx)
}

// reportOf is host h's reported address (n.mu held).
func (h *host) reportOf() string {
	if h.reportSet {
		return h.report
	}
	return h.addr
}

// galeraNode is the Galera node UUID (wsrep_gcomm_uuid) of host i.
func galeraNode(i int) string {
	return "0000000" + strconv.Itoa(i+1) + "-aaaa-11ee-8000-00000000000" + strconv.Itoa(i+1)
}

// memberAnswer answers the member lists; ok is false for other queries. n.mu is held.
func (c *Conn) memberAnswer(h *host, query string) (driver.Rows, error, bool) {
	switch {
	case query == "SHOW REPLICA HOSTS" || query == "SHOW SLAVE HOSTS":
		h.memberReads++
		if h.hostsDenied {
			return nil, ReplicaHostsDenied, true
		}
		r := &rows{cols: []string{"Server_id", "Host", "Port", "Master_id"}}
		for i, o := range c.net.hosts {
			if o.source != c.Host || i == c.Host {
				continue
			}
			host, port := "", int64(0)
			if a := o.reportOf(); a != "" {
				hs, ps, _ := net.SplitHostPort(a)
				p, _ := strconv.Atoi(ps)
				host, port = hs, int64(p)
			}
			r.vals = append(r.vals, []driver.Value{int64(i + 1), []byte(host), port, int64(c.Host + 1)})
		}
		return r, nil, true
	case strings.Contains(query, "mysql.wsrep_cluster_members"):
		h.memberReads++
		if h.membersErr != nil {
			return nil, h.membersErr, true
		}
		r := &rows{cols: []string{"node_uuid", "node_incoming_address"}}
		for _, i := range c.net.galeraPeers(c.Host) {
			r.vals = append(r.vals, []driver.Value{[]byte(galeraNode(i)), []byte(c.net.hosts[i].reportOf())})
		}
		return r, nil, true
	case query == "SHOW GLOBAL STATUS LIKE 'wsrep_incoming_addresses'":
		h.memberReads++
		var addrs []string
		for _, i := range c.net.galeraPeers(c.Host) {
			addrs = append(addrs, c.net.hosts[i].reportOf())
		}
		return &rows{vals: [][]driver.Value{{[]byte("wsrep_incoming_addresses"), []byte(strings.Join(addrs, ","))}}}, nil, true
	case strings.HasPrefix(query, "SELECT MEMBER_ID, MEMBER_HOST, MEMBER_PORT"):
		h.memberReads++
		if h.membersErr != nil {
			return nil, h.membersErr, true
		}
		return &rows{cols: h.groupCols, vals: h.groupRows}, nil, true
	}
	return nil, nil, false
}

// galeraPeers returns the hosts of host i's Galera cluster as i sees it: the Galera
// nodes (wsrep_on) in the Primary component of i's cluster state UUID, i among them.
// n.mu is held.
func (n *Net) galeraPeers(i int) []int {
	uuid := n.hosts[i].status["wsrep_cluster_state_uuid"]
	var out []int
	for k, h := range n.hosts {
		if h.vars["wsrep_on"] == "ON" && h.status["wsrep_cluster_status"] == "Primary" &&
			h.status["wsrep_cluster_state_uuid"] == uuid && h.dialErr == nil {
			out = append(out, k)
		}
	}
	return out
}
