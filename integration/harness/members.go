package harness

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"
)

// Members that come and go while the cluster runs, as an operator adds a replica or a
// Galera node: AddNode starts one more, Node.Detach and Node.Attach take a replica off
// its primary and put it back, Node.Stop makes a Galera node leave.

// AddNode starts one more node, numbered N()+1, as a member of the running cluster, and
// returns it once it serves: on a replication cluster a replica of the primary as the
// others are (read_only=ON, GTID replication replaying the primary's whole binary log),
// returned once it has caught up; on a Galera cluster a node that joins the Primary
// component (IST from a running node, or a full state transfer), returned once it is
// Synced. It sits behind a proxy of its own, and reports that proxy's address as the one
// clients dial: report_host and report_port (the primary lists it so, SHOW REPLICA
// HOSTS), or wsrep_node_incoming_address. args are extra server options for it, as
// WithNodeArgs. The container backend cannot add a Galera node. AddNode must not run
// concurrently with another AddNode; the Cluster's other methods may.
func (c *Cluster) AddNode(ctx context.Context, args ...string) (*Node, error) {
	c.topoMu.Lock()
	defer c.topoMu.Unlock()
	idx := len(c.list()) + 1
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	listen := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	spec := NodeSpec{Index: idx, ServerID: idx}
	if c.galera {
		g := *c.gspec
		g.Nodes = idx
		spec.Galera, spec.Join = &g, true
		spec.Args = append([]string{"--wsrep-node-incoming-address=" + listen}, args...)
	} else {
		spec.Args = append([]string{"--report-host=127.0.0.1", "--report-port=" + strconv.Itoa(port)}, args...)
	}
	begin := time.Now()
	n, err := c.newNode(ctx, spec, listen, func(n *Node) {
		c.nodesMu.Lock()
		c.nodes = append(c.nodes[:len(c.nodes):len(c.nodes)], n) // a new slice: list()'s callers keep theirs
		c.nodesMu.Unlock()
	})
	if err != nil {
		return nil, err
	}
	if c.galera {
		if _, err := n.WaitStatus(ctx, "Synced", GaleraStatus.Synced); err != nil {
			return nil, err
		}
		c.logf("harness: node %d joined the Galera cluster in %v (proxy %s)", idx, time.Since(begin).Round(time.Millisecond), n.proxyAddr)
		return n, nil
	}
	n.readOnly = true
	if err := n.Exec(ctx, c.flavour.setReadOnly(true)); err != nil {
		return nil, err
	}
	if err := n.replicateFrom(ctx, c.Primary(), false); err != nil {
		return nil, err
	}
	if err := n.CatchUp(ctx, c.Primary()); err != nil {
		return nil, err
	}
	c.logf("harness: node %d replicates from node %d, caught up in %v (proxy %s, reported as it)", idx, c.Primary().idx,
		time.Since(begin).Round(time.Millisecond), n.proxyAddr)
	return n, nil
}

// GrantDiscovery gives the app user what a driver's discovery of the cluster's members
// needs (mysqlfailover's discoverHosts): on a replication cluster the privilege to list
// the replicas registered with the primary (SHOW REPLICA HOSTS: REPLICATION MASTER ADMIN
// on MariaDB 10.5.2+, REPLICATION SLAVE on MySQL), on a Galera cluster SELECT on
// mysql.wsrep_cluster_members (the members' node UUIDs; without it the driver reads
// wsrep_incoming_addresses). Neither bypasses read_only. Every cluster starts without
// them; like every change of a global privilege it applies to sessions opened after it.
func (c *Cluster) GrantDiscovery(ctx context.Context) error {
	user := "'" + AppUser + "'@'%'"
	grant := "GRANT REPLICATION MASTER ADMIN ON *.* TO " + user
	switch {
	case c.galera:
		grant = "GRANT SELECT ON mysql.wsrep_cluster_members TO " + user
	case c.flavour == MySQL:
		grant = "GRANT REPLICATION SLAVE ON *.* TO " + user
	}
	return c.Primary().Exec(ctx, grant)
}

// Detach takes replica n off its primary, as an operator retires it: its replication
// stops and forgets its source (STOP SLAVE, RESET SLAVE ALL; MySQL STOP REPLICA, RESET
// REPLICA ALL), so the primary lists it no more (SHOW REPLICA HOSTS). The server keeps
// running, read-only, with the data it had. Attach points it at the primary again.
func (n *Node) Detach(ctx context.Context) error {
	if n.c.galera {
		return errors.New("harness: Detach is for replicas: a Galera node leaves by Stop")
	}
	if n == n.c.Primary() {
		return fmt.Errorf("harness: node %d is the primary", n.idx)
	}
	for _, q := range n.flavour.stopReplica(true) {
		if err := n.Exec(ctx, q); err != nil {
			return err
		}
	}
	n.mu.Lock()
	n.source, n.detached = nil, true
	n.mu.Unlock()
	return nil
}

// Detached reports whether Detach took n out of the cluster (and Attach has not put it
// back): WaitReplicasCaughtUp and Switchover leave it alone.
func (n *Node) Detached() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.detached
}

// Attach points replica n at the primary again after Detach (from where it stopped),
// and returns once it has caught up.
func (n *Node) Attach(ctx context.Context) error {
	if n.c.galera {
		return errors.New("harness: Attach is for replicas: a Galera node rejoins by Restart")
	}
	p := n.c.Primary()
	if n == p {
		return fmt.Errorf("harness: node %d is the primary", n.idx)
	}
	if err := n.replicateFrom(ctx, p, true); err != nil {
		return err
	}
	n.mu.Lock()
	n.detached = false
	n.mu.Unlock()
	return n.CatchUp(ctx, p)
}

// freePort returns a loopback port free now, for a proxy whose address must be known
// before its node starts (AddNode's report_port). A server's own port comes from
// reservePorts instead, below the ephemeral range this one is taken from.
func freePort() (int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("harness: free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		// The kernel may hand the same port to two callers at once (it is free again
		// once probed): a port is handed out once per process.
		if !portsGiven[port] {
			portsGiven[port] = true
			return port, nil
		}
	}
	return 0, errors.New("harness: free port: every port the kernel offered was handed out already")
}

var (
	portsMu    sync.Mutex
	portsGiven = map[int]bool{}
)
