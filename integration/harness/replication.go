package harness

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
)

// BackendFromEnv returns the backend EnvBackend names: "process" or "" (LocalBackend),
// "container" (ContainerBackend, its image from EnvImage or scripts/build-image.sh).
// Another value is an error naming it.
func BackendFromEnv(logf func(format string, args ...any)) (Backend, error) {
	switch v := strings.TrimSpace(os.Getenv(EnvBackend)); v {
	case "", "process":
		return &LocalBackend{Logf: logf}, nil
	case "container":
		return &ContainerBackend{Logf: logf}, nil
	default:
		return nil, fmt.Errorf("harness: %s=%q: want process or container", EnvBackend, v)
	}
}

// replicateFrom points n at source and starts its replication. current: n starts from
// everything it has applied or written itself (a former primary); see replicaSource.
// On a backend without Partitioner and with WithReplicationLinks, the replication goes
// through n's own link proxy, whose upstream is source.
func (n *Node) replicateFrom(ctx context.Context, source *Node, current bool) error {
	host, port := source.inst.SourceAddr()
	if _, ok := source.inst.(Partitioner); !ok && n.c.links {
		addr, err := n.setLink(net.JoinHostPort(host, strconv.Itoa(port)), source)
		if err != nil {
			return err
		}
		h, p, _ := net.SplitHostPort(addr)
		host = h
		port, _ = strconv.Atoi(p)
	}
	for _, q := range n.flavour.pointReplica(replicaSource{host: host, port: port,
		user: replUser, password: replPassword, current: current}) {
		if err := n.Exec(ctx, q); err != nil {
			return err
		}
	}
	n.mu.Lock()
	n.source, n.unfenced = source, false
	n.mu.Unlock()
	return nil
}

// setLink makes n's link proxy forward to upstream and returns its address.
func (n *Node) setLink(upstream string, source *Node) (string, error) {
	if n.link == nil {
		n.link = toxiproxy.NewProxy(n.c.tox, "link"+strconv.Itoa(n.idx), "127.0.0.1:0", upstream)
	} else {
		n.link.Stop()
		n.link.Upstream = upstream
	}
	if n.Partitioned() || source.Partitioned() {
		return n.link.Listen, nil // started by Heal
	}
	if err := n.link.Start(); err != nil {
		return "", n.wrap("replication link", err)
	}
	return n.link.Listen, nil
}

// Partitioned reports whether Partition cut the node off (and Heal has not undone it).
func (n *Node) Partitioned() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.partitioned
}

// Partition cuts the node off from every other node of the cluster, replication both
// ways, while the test process (the driver through the node's proxy, the admin
// connection) still reaches it: on ContainerBackend the container leaves the cluster
// network (replication connections hang until slave_net_timeout, 10 s); elsewhere,
// with WithReplicationLinks, the link proxies to and from the node stop (the
// replication connections are closed and new ones refused). Without either it returns
// an error saying so. The replicas retry every second; Heal undoes it. A Galera node on
// ContainerBackend loses its group communication the same way (it goes non-Primary after
// about 2 s, as with Isolate, and rejoins by itself after Heal); on LocalBackend Partition
// refuses a Galera node: use Isolate.
func (n *Node) Partition(ctx context.Context) error { return n.partition(ctx, true) }

// Heal undoes Partition: replication to and from the node resumes within a second (a
// container's replicas may first wait out slave_net_timeout on the hung connection).
func (n *Node) Heal(ctx context.Context) error { return n.partition(ctx, false) }

func (n *Node) partition(ctx context.Context, cut bool) error {
	c := n.c
	c.topoMu.Lock()
	defer c.topoMu.Unlock()
	if p, ok := n.inst.(Partitioner); ok {
		var err error
		if cut {
			err = p.Partition(ctx)
		} else {
			err = p.Heal(ctx)
		}
		if err != nil {
			return n.wrap("partition", err)
		}
		n.mu.Lock()
		n.partitioned = cut
		n.mu.Unlock()
		return nil
	}
	if c.galera {
		return n.wrap("partition", errors.New("this backend cannot cut a Galera node's group communication: use Isolate"))
	}
	if !c.links {
		return n.wrap("partition", errors.New("this backend cannot cut replication: start the cluster WithReplicationLinks"))
	}
	n.mu.Lock()
	n.partitioned = cut
	n.mu.Unlock()
	return c.applyLinks()
}

// applyLinks starts each link proxy whose two ends are not partitioned and stops the
// others.
func (c *Cluster) applyLinks() error {
	var errs []error
	for _, r := range c.list() {
		r.mu.Lock()
		link, src, cut := r.link, r.source, r.partitioned
		r.mu.Unlock()
		if link == nil {
			continue
		}
		if cut || src == nil || src.Partitioned() {
			link.Stop()
			continue
		}
		if err := link.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
			errs = append(errs, r.wrap("replication link", err))
		}
	}
	return errors.Join(errs...)
}

// Switchover makes node to the primary, as an orchestrator does: the old primary
// becomes read-only (when it runs), node to catches up with it, stops replicating and
// turns read_only off; every other running, unpartitioned replica catches up with the
// old primary and is re-pointed at node to; the old primary, when it runs, replicates
// from node to from then on (MariaDB MASTER_USE_GTID=current_pos; MySQL
// auto-positioning). A down old primary is only marked read-only, for its next Restart;
// a down replica keeps its old source. Primary and WaitReplicasCaughtUp follow node to
// from then on. Writes to the old primary fail with 1290 (read_only) from the first
// step on; with targetSessionAttrs=read-write the driver finds node to.
func (c *Cluster) Switchover(ctx context.Context, to int) error {
	if c.galera {
		return errors.New("harness: switchover: a Galera cluster has no replication to switch (every node writes)")
	}
	c.topoMu.Lock()
	defer c.topoMu.Unlock()
	old, nw := c.Primary(), c.Node(to)
	if old == nw {
		return nil
	}
	oldUp := old.State() == Running && !old.Partitioned()
	if oldUp {
		if err := old.SetReadOnly(ctx, true); err != nil {
			return err
		}
		if err := nw.CatchUp(ctx, old); err != nil {
			return err
		}
	} else {
		old.mu.Lock()
		old.readOnly = true
		old.mu.Unlock()
	}
	for _, q := range nw.flavour.stopReplica(true) {
		if err := nw.Exec(ctx, q); err != nil {
			return err
		}
	}
	if err := nw.SetReadOnly(ctx, false); err != nil {
		return err
	}
	nw.mu.Lock()
	nw.source = nil
	if nw.link != nil {
		nw.link.Stop()
	}
	nw.mu.Unlock()
	c.primary.Store(int32(to))
	for _, r := range c.list() {
		if r == nw || r == old || r.State() != Running || r.Partitioned() {
			continue
		}
		if oldUp {
			if err := r.CatchUp(ctx, old); err != nil {
				return err
			}
		}
		for _, q := range r.flavour.stopReplica(false) {
			if err := r.Exec(ctx, q); err != nil {
				return err
			}
		}
		if err := r.replicateFrom(ctx, nw, false); err != nil {
			return err
		}
	}
	if oldUp {
		return old.replicateFrom(ctx, nw, true)
	}
	return nil
}

// ReturnUnfenced brings n back as an old primary comes back after a promotion whose
// fencing failed (a hook that did not run): started again when it is down (same port and
// data), its replication stopped and forgotten, and its global read_only turned OFF. Its
// data stop where they were when it went away; from then on it takes writes the cluster
// never sees and misses the cluster's: two writers, whose data diverge. Primary stays the
// node Switchover chose; a later Restart keeps n writable. It refuses a Galera node (every
// node writes) and the primary itself.
func (n *Node) ReturnUnfenced(ctx context.Context) error {
	if n.c.galera {
		return n.wrap("return unfenced", errors.New("a Galera node is a writer by design"))
	}
	if n == n.c.Primary() {
		return n.wrap("return unfenced", errors.New("the node is the primary: promote another first"))
	}
	if n.State() == Down {
		if err := n.Restart(ctx); err != nil {
			return err
		}
	}
	n.c.topoMu.Lock()
	defer n.c.topoMu.Unlock()
	for _, q := range n.flavour.stopReplica(true) {
		if err := n.Exec(ctx, q); err != nil {
			return err
		}
	}
	n.mu.Lock()
	n.source, n.unfenced = nil, true
	if n.link != nil {
		n.link.Stop()
	}
	n.mu.Unlock()
	return n.SetReadOnly(ctx, false)
}

// Unfenced reports whether ReturnUnfenced brought n back as a second writer (and nothing
// has pointed it at a source since).
func (n *Node) Unfenced() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.unfenced
}

// StopReplicaSQL stops n's SQL thread alone (MariaDB STOP SLAVE SQL_THREAD, MySQL STOP
// REPLICA SQL_THREAD): n still receives its source's binary log but applies none of it,
// so it stays at the position it had, falls behind with every write on the source, and
// reports its lag as unknown (Seconds_Behind_Master NULL; ReplicaLag -1), as a replica
// whose applier broke does. WaitReplicasCaughtUp leaves n out until StartReplicaSQL.
func (n *Node) StopReplicaSQL(ctx context.Context) error {
	if err := n.Exec(ctx, n.flavour.replicaSQLThread(false)); err != nil {
		return err
	}
	n.mu.Lock()
	n.sqlStopped = true
	n.mu.Unlock()
	return nil
}

// StartReplicaSQL starts n's SQL thread again after StopReplicaSQL (START SLAVE
// SQL_THREAD, START REPLICA SQL_THREAD): n applies what it received meanwhile and
// catches up (CatchUp or WaitReplicasCaughtUp waits for that).
func (n *Node) StartReplicaSQL(ctx context.Context) error {
	if err := n.Exec(ctx, n.flavour.replicaSQLThread(true)); err != nil {
		return err
	}
	n.mu.Lock()
	n.sqlStopped = false
	n.mu.Unlock()
	return nil
}

// SetReplicaDelay makes n apply each event no sooner than d (whole seconds) after its
// source wrote it (MariaDB MASTER_DELAY, MySQL SOURCE_DELAY), 0 to end the delay: while
// the source writes, n's lag (ReplicaLag) grows towards d and its data is that old. n's
// replication is stopped and started again around the change (one statement each).
func (n *Node) SetReplicaDelay(ctx context.Context, d time.Duration) error {
	for _, q := range n.flavour.replicaDelay(int(d / time.Second)) {
		if err := n.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// ReplicaSQLStopped reports whether StopReplicaSQL stopped n's SQL thread (and
// StartReplicaSQL has not started it again).
func (n *Node) ReplicaSQLStopped() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.sqlStopped
}

// ReplicaLag is n's replication lag as the server reports it (SHOW SLAVE STATUS
// Seconds_Behind_Master; MySQL SHOW REPLICA STATUS Seconds_Behind_Source), in whole
// seconds, read as root: -1 when it is NULL (a replication thread stopped, no
// connection to the source yet) or when n is no replica.
func (n *Node) ReplicaLag(ctx context.Context) (time.Duration, error) {
	query, _ := n.flavour.replicaStatus()
	rows, err := n.admin.QueryContext(ctx, query)
	if err != nil {
		return -1, n.wrap(query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return -1, n.wrap(query, err)
	}
	if !rows.Next() {
		return -1, n.wrap(query, rows.Err())
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for k := range vals {
		ptrs[k] = &vals[k]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return -1, n.wrap(query, err)
	}
	for k, c := range cols {
		if c != n.flavour.lagColumn() {
			continue
		}
		if !vals[k].Valid {
			return -1, nil
		}
		s, err := strconv.Atoi(vals[k].String)
		if err != nil {
			return -1, n.wrap(query, fmt.Errorf("%s=%q", c, vals[k].String))
		}
		return time.Duration(s) * time.Second, nil
	}
	return -1, n.wrap(query, fmt.Errorf("no column %s", n.flavour.lagColumn()))
}

// RevokeReplicaMonitor takes from the app user the one global privilege every cluster
// grants it, the one that reads a replica's status (MariaDB SLAVE MONITOR, MySQL
// REPLICATION CLIENT), on the primary (it replicates: WaitReplicasCaughtUp), for a test
// of probes that cannot read replica lag; GrantReplicaMonitor gives it back. Like every
// change of a global privilege it applies to sessions opened after it.
func (c *Cluster) RevokeReplicaMonitor(ctx context.Context) error {
	return c.Primary().Exec(ctx, c.flavour.monitorRevoke("'"+AppUser+"'@'%'"))
}

// GrantReplicaMonitor gives the app user back what RevokeReplicaMonitor took (every
// cluster starts with it).
func (c *Cluster) GrantReplicaMonitor(ctx context.Context) error {
	return c.Primary().Exec(ctx, c.flavour.monitorGrant("'"+AppUser+"'@'%'"))
}
