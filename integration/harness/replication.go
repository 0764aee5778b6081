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
// A node a promotion left behind then rejoins the cluster, when it runs, as Restart
// describes.
func (n *Node) Heal(ctx context.Context) error {
	if err := n.partition(ctx, false); err != nil {
		return err
	}
	return n.rejoin(ctx)
}

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
// auto-positioning). Primary and WaitReplicasCaughtUp follow node to from then on.
// Writes to the old primary fail with 1290 (read_only) from the first step on; with
// targetSessionAttrs=read-write the driver finds node to.
//
// When the old primary is down, frozen or partitioned, node to and the running replicas
// first apply what they had received from it (their relay logs), and node to takes over
// from there. Writes the old primary acknowledged that node to never received are lost,
// as in any asynchronous cluster. A running replica that holds some of them (it received
// more than node to) is rebuilt from node to (see Node.Restart).
//
// Every node Switchover cannot reach (down, frozen or partitioned: the old primary, or a
// replica) is left behind, marked read-only, and rejoins when it comes back (Restart,
// Thaw, or Heal when it runs): as a read-only replica of the primary of that moment,
// from where it stopped when it holds nothing the new primary lacked at the promotion;
// when it does (writes the old primary acknowledged that never reached node to: a
// divergence a real cluster would face, where an operator rebuilds the node), its data are
// replaced by the primary's: it forgets its own binary log and GTID position, every
// database and account its template did not have is dropped, and it replays the
// primary's binary log from the start (its proxy disabled until it has caught up). The
// discarded writes are logged. MySQL: such a node is left read-only, following no one,
// and the rejoin fails.
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
		if err := nw.applyReceived(ctx, old); err != nil {
			return err
		}
	}
	for _, q := range nw.flavour.stopReplica(true) {
		if err := nw.Exec(ctx, q); err != nil {
			return err
		}
	}
	at, err := nw.GTIDPos(ctx) // all the cluster keeps of the old primary's writes
	if err != nil {
		return err
	}
	if err := nw.SetReadOnly(ctx, false); err != nil {
		return err
	}
	nw.mu.Lock()
	nw.source, nw.behind, nw.unfenced = nil, false, false
	if nw.link != nil {
		nw.link.Stop()
	}
	nw.mu.Unlock()
	c.primary.Store(int32(to))
	for _, r := range c.list() {
		if r == nw || r == old || r.Unfenced() || r.Detached() {
			continue // an unfenced or detached node follows no one, whoever the primary is
		}
		if r.State() != Running || r.Partitioned() {
			r.leaveBehind(at)
			continue
		}
		if oldUp {
			if err := r.CatchUp(ctx, old); err != nil {
				return err
			}
		} else if err := r.applyReceived(ctx, old); err != nil {
			return err
		}
		if err := r.follow(ctx, nw, at); err != nil {
			return err
		}
	}
	if oldUp {
		return old.replicateFrom(ctx, nw, true)
	}
	old.leaveBehind(at)
	return nil
}

// applyReceived waits until replica n has applied every transaction it received from
// source (its relay log), as an orchestrator lets a replica do before promoting it or
// re-pointing it. A replica whose SQL thread StopReplicaSQL stopped is left as it is.
func (n *Node) applyReceived(ctx context.Context, source *Node) error {
	if n.ReplicaSQLStopped() {
		return nil
	}
	st, err := n.replicaState(ctx)
	if err != nil || !st.replica || st.received == "" {
		return err
	}
	return n.waitApplied(ctx, source, st.received)
}

// leaveBehind marks n as left behind by a promotion whose new primary was at position
// at: it rejoins when it comes back. A node already behind keeps its first mark, the
// last position of the history it shares with the cluster.
func (n *Node) leaveBehind(at string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.readOnly = true
	if !n.behind {
		n.behind, n.behindAt = true, at
	}
}

// rejoin brings n back into the cluster when a promotion left it behind and it runs
// again, unpartitioned: read-only, replicating from the primary (see Switchover). It
// does nothing for any other node.
func (n *Node) rejoin(ctx context.Context) error {
	c := n.c
	if c.galera {
		return nil
	}
	c.topoMu.Lock()
	defer c.topoMu.Unlock()
	n.mu.Lock()
	behind, at := n.behind, n.behindAt
	n.mu.Unlock()
	primary := c.Primary()
	if !behind || n == primary || n.Unfenced() || n.State() != Running || n.Partitioned() || primary.Partitioned() {
		return nil
	}
	if err := n.SetReadOnly(ctx, true); err != nil {
		return err
	}
	if err := n.follow(ctx, primary, at); err != nil {
		return err
	}
	n.mu.Lock()
	n.behind = false
	n.mu.Unlock()
	return nil
}

// follow makes running node n a replica of primary, which was at position at when it
// took over: from where n stands when n holds nothing beyond at (a former primary
// starts from its own position, MASTER_USE_GTID=current_pos), otherwise by rebuild.
func (n *Node) follow(ctx context.Context, primary *Node, at string) error {
	have, err := n.GTIDPos(ctx)
	if err != nil {
		return err
	}
	ok, err := n.covers(ctx, at, have)
	if err != nil {
		return n.wrap("rejoin", err)
	}
	if !ok {
		n.c.logf("harness: node %d holds transactions node %d lacks (node %d at %q, node %d at %q when it took over): "+
			"writes acknowledged before the promotion and lost in it; node %d is rebuilt from node %d",
			n.idx, primary.idx, n.idx, have, primary.idx, at, n.idx, primary.idx)
		return n.rebuild(ctx, primary)
	}
	for _, q := range n.flavour.stopReplica(false) {
		if err := n.Exec(ctx, q); err != nil {
			return err
		}
	}
	return n.replicateFrom(ctx, primary, n.Source() == nil)
}

// rebuild replaces n's data with source's, as an operator rebuilds a node that diverged:
// with n's proxy disabled (the app user is gone for a while), n forgets its source,
// binary log and GTID position, drops every database and account its template did not
// have, and replays source's binary log from the start under a server_id of its own
// (n skips events that carry its own id, and the history holds its writes as a primary);
// it returns once n has caught up with source, its proxy as it was.
func (n *Node) rebuild(ctx context.Context, source *Node) (err error) {
	forget := n.flavour.forgetTransactions()
	if forget == nil {
		return n.wrap("rebuild", fmt.Errorf("it holds transactions node %d lacks, and the harness rebuilds %s nodes only", source.idx, MariaDB))
	}
	n.proxy.Lock()
	enabled := n.proxy.Enabled
	n.proxy.Unlock()
	if enabled {
		n.proxy.Stop()
		defer func() { err = errors.Join(err, n.Enable()) }()
	}
	var drop []string
	for _, q := range dropQueries {
		stmts, err := n.queryStrings(ctx, q)
		if err != nil {
			return err
		}
		for _, s := range stmts {
			if !n.c.base[s] {
				drop = append(drop, s)
			}
		}
	}
	steps := append(n.flavour.stopReplica(true), drop...)
	steps = append(steps, fmt.Sprintf("SET GLOBAL server_id = %d", rebuildServerID+n.idx))
	for _, q := range append(steps, forget...) {
		if err := n.Exec(ctx, q); err != nil {
			return n.wrap("rebuild", err)
		}
	}
	n.mu.Lock()
	n.source = nil
	n.mu.Unlock()
	if err := n.replicateFrom(ctx, source, false); err != nil {
		return n.wrap("rebuild", err)
	}
	if err := n.CatchUp(ctx, source); err != nil {
		return n.wrap("rebuild", err)
	}
	for _, q := range []string{n.flavour.stopReplica(false)[0], fmt.Sprintf("SET GLOBAL server_id = %d", n.serverID), n.flavour.startReplica()} {
		if err := n.Exec(ctx, q); err != nil {
			return n.wrap("rebuild", err)
		}
	}
	return nil
}

// dropQueries list, as statements, what Node.rebuild drops: every database and every
// account (user or role) but those the cluster's template has (Cluster.base). MariaDB's.
var dropQueries = []string{
	"SELECT CONCAT('DROP DATABASE `', REPLACE(SCHEMA_NAME, '`', '``'), '`') FROM information_schema.SCHEMATA",
	"SELECT IF(is_role = 'Y', CONCAT('DROP ROLE ', QUOTE(User)), CONCAT('DROP USER ', QUOTE(User), '@', QUOTE(Host))) FROM mysql.user",
}

// rebuildServerID plus a node's index is the server_id the node replays a binary log
// under while Node.rebuild runs: above any node's own.
const rebuildServerID = 1000

// queryStrings runs a query returning one string column as root.
func (n *Node) queryStrings(ctx context.Context, query string) ([]string, error) {
	rows, err := n.admin.QueryContext(ctx, query)
	if err != nil {
		return nil, n.wrap(query, err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, n.wrap(query, err)
		}
		out = append(out, s)
	}
	return out, n.wrap(query, rows.Err())
}

// ReturnUnfenced brings n back as an old primary comes back after a promotion whose
// fencing failed (a hook that did not run): started again when it is down (same port and
// data), its replication stopped and forgotten, and its global read_only turned OFF. Its
// data stop where they were when it went away; from then on it takes writes the cluster
// never sees and misses the cluster's: two writers, whose data diverge. Primary stays the
// node Switchover chose; a later Restart keeps n writable, and n never rejoins the
// cluster as a promotion's left-behind nodes do. It refuses a Galera node (every node
// writes) and the primary itself.
func (n *Node) ReturnUnfenced(ctx context.Context) error {
	if n.c.galera {
		return n.wrap("return unfenced", errors.New("a Galera node is a writer by design"))
	}
	if n == n.c.Primary() {
		return n.wrap("return unfenced", errors.New("the node is the primary: promote another first"))
	}
	if n.State() == Down {
		if err := n.restart(ctx); err != nil {
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
	n.source, n.unfenced, n.behind = nil, true, false
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
