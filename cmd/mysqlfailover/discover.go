package main

// Discovery as the driver does it (discoverHosts): the members the cluster reports join
// the host list after the DSN's hosts. check reads them once, from the host the driver
// reads (the writable primary of a replication cluster; the first ready Galera node or
// group member), with the driver's own queries (cluster.ReadMembers), and checks the
// members the DSN does not list as it checks the DSN's: they are in the report and the
// plan, after the DSN's hosts, with where they came from.

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// rankDiscovery orders discovery's problems among the degraded ones: after the hosts'.
const rankDiscovery = 90

// discover reads the members the cluster reports, checks those the DSN does not list
// and adds them to r.Hosts (origin discovered), and returns cfg with them appended to
// its hosts, as the driver's list would be. A read that fails, or members without an
// address to dial, are problems of kind discovery.
func (r *report) discover(ctx context.Context, cfg *dsn.Config, timeout time.Duration) *dsn.Config {
	reader := -1
	for i, h := range r.Hosts {
		if h.Reachable && h.NotReady == "" && (h.Cluster == "galera" || h.Cluster == "group" || h.role == failover.RolePrimary) {
			reader = i
			break
		}
	}
	if reader < 0 {
		r.add(problem{Severity: sevDegraded, Kind: "discovery", rank: rankDiscovery, index: -1,
			Problem: "discoverHosts: no host to read the cluster's members from (the writable primary, a ready Galera node or group member)",
			Fix:     "bring the primary back: the driver reads the members from the host it writes to"})
		return cfg
	}
	rd := r.Hosts[reader]
	kind := kindOf(rd.Cluster)
	members, query, err := readMembersFrom(ctx, cfg, cfg.Hosts[reader], kind, timeout)
	if err != nil {
		r.add(problem{Severity: sevDegraded, Kind: "discovery", Host: rd.Host, rank: rankDiscovery, index: reader,
			Problem: fmt.Sprintf("discoverHosts: %s failed: %s; the driver then uses the DSN's hosts alone", query, describe(ctx, err, timeout)),
			Fix:     "grant " + cluster.DiscoveryPrivilege(kind) + " to the DSN's user"})
		return cfg
	}
	now := time.Now().UTC()
	idents, keys := map[string]bool{}, map[string]bool{}
	for _, h := range r.Hosts {
		if id := identOf(h); id != "" {
			idents[id] = true
		}
		keys[strings.ToLower(h.Host)] = true
	}
	var found []dsn.Host
	var reported []string
	named := map[string]bool{}
	unnamed, anonymous := 0, 0
	for _, m := range members {
		if m.Ident != "" && idents[m.Ident] {
			continue // a DSN host, under whatever address
		}
		name, port, ok := splitAddr(m.Addr)
		if !ok {
			unnamed++
			if m.Ident == "" {
				anonymous++
			}
			continue
		}
		key := strings.ToLower(m.Addr)
		named[key] = true
		if keys[key] {
			continue
		}
		keys[key] = true
		found = append(found, dsn.Host{Name: name, Port: port})
		reported = append(reported, m.Addr)
	}
	if kind == cluster.KindGalera && anonymous > 0 {
		others := 0 // DSN nodes of the reader's cluster no address named: the AUTO entries may be them
		for _, h := range r.Hosts {
			if h.Galera != nil && rd.Galera != nil && h.Galera.StateUUID == rd.Galera.StateUUID && !named[strings.ToLower(h.Host)] {
				others++
			}
		}
		unnamed -= min(anonymous, others)
	}
	if unnamed > 0 {
		r.add(problem{Severity: sevDegraded, Kind: "discovery", Host: rd.Host, rank: rankDiscovery, index: reader,
			Problem: fmt.Sprintf("discoverHosts: %d member(s) of the cluster report no address the driver can dial (a Galera node with wsrep_node_incoming_address unset reports AUTO; a replica without report_host none)", unnamed),
			Fix:     "set wsrep_node_incoming_address (report_host, report_port) on them to the address clients dial, or map the reported addresses with mysqlfailover.WithDiscoveryMap"})
	}
	if len(found) == 0 {
		return cfg
	}
	more := checkHosts(ctx, cfg, found, timeout)
	for k := range more {
		more[k].Origin = failover.OriginDiscovered.String()
		more[k].ReportedBy, more[k].Reported, more[k].DiscoveredAt = rd.Host, reported[k], &now
	}
	r.Hosts = append(r.Hosts, more...)
	out := cfg.Clone()
	out.Hosts = append(out.Hosts, found...)
	return out
}

// readMembersFrom reads, on a new connection to h, the members of a cluster of kind k.
func readMembersFrom(ctx context.Context, cfg *dsn.Config, h dsn.Host, k cluster.Kind, timeout time.Duration) ([]cluster.Member, string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	connector, err := mysql.NewConnector(hostConfig(cfg, h, timeout))
	if err != nil {
		return nil, "a connection", err
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, "a connection", err
	}
	defer conn.Close()
	var members []cluster.Member
	var query string
	err = conn.Raw(func(dc any) error {
		var err error
		members, query, err = cluster.ReadMembers(ctx, dc.(sqldriver.Conn), k)
		return err
	})
	return members, query, err
}

// kindOf is the cluster.Kind of hostReport.Cluster.
func kindOf(c string) cluster.Kind {
	switch c {
	case "galera":
		return cluster.KindGalera
	case "group":
		return cluster.KindGroup
	}
	return cluster.KindReplication
}

// identOf is the identity discovery's reports name h by (as cluster.State.Ident): the
// Galera node UUID, a group member's server_uuid, else the server_id; "" when not read.
func identOf(h hostReport) string {
	switch h.Cluster {
	case "galera":
		if h.Galera != nil && h.Galera.NodeUUID != "" {
			return "galera:" + strings.ToLower(h.Galera.NodeUUID)
		}
		return ""
	case "group":
		if u := h.vars["server_uuid"]; u != "" {
			return "uuid:" + strings.ToLower(u)
		}
		return ""
	}
	if h.ServerID != 0 {
		return "id:" + strconv.FormatInt(h.ServerID, 10)
	}
	return ""
}

// splitAddr splits a reported host:port; ok is false for none that can be dialled ("",
// AUTO).
func splitAddr(a string) (name string, port int, ok bool) {
	h, p, err := net.SplitHostPort(a)
	if err != nil || h == "" {
		return "", 0, false
	}
	n, err := strconv.Atoi(p)
	if err != nil || n <= 0 || n > 65535 {
		return "", 0, false
	}
	return h, n, true
}
