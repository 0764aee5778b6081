package harness

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"time"
)

// LabelledDSN is DSN with a data-centre label on each host, in node order:
// "app:apppw@tcp(pA;dc=dc1,pB;dc=dc1,pC;dc=dc2)/app?" + params. labels[i] labels node
// i+1; an empty label leaves that host unlabelled. It panics unless there is one label per
// node.
func (c *Cluster) LabelledDSN(labels []string, params string) string {
	if len(labels) != len(c.list()) {
		panic(fmt.Sprintf("harness: %d labels for %d nodes", len(labels), len(c.list())))
	}
	hosts := make([]string, len(c.list()))
	for k, n := range c.list() {
		hosts[k] = n.proxyAddr
		if labels[k] != "" {
			hosts[k] += ";dc=" + labels[k]
		}
	}
	return appDSN(strings.Join(hosts, ","), params)
}

// CatchUp waits until n has applied everything source has written so far
// (MASTER_GTID_WAIT on source's gtid_binlog_pos; MySQL: WAIT_FOR_EXECUTED_GTID_SET on its
// gtid_executed), within ctx.
func (n *Node) CatchUp(ctx context.Context, source *Node) error {
	pos, err := source.QueryString(ctx, source.flavour.gtidExecutedQuery())
	if err != nil {
		return n.wrap("catch up", err)
	}
	wait := 30 * time.Second
	if dl, ok := ctx.Deadline(); ok {
		wait = max(time.Until(dl), 100*time.Millisecond)
	}
	var res sql.NullInt64
	err = n.admin.QueryRowContext(ctx, n.flavour.waitGTIDQuery(), pos, wait.Seconds()).Scan(&res)
	if err == nil && res.Valid && res.Int64 == 0 {
		return nil
	}
	if err == nil {
		err = fmt.Errorf("timed out at %s", n.gtidPos(context.Background()))
	}
	return fmt.Errorf("harness: node %d did not reach node %d's %q: %w; %s", n.idx, source.idx, pos, err, n.replicationStatus())
}

// Demote makes n read-only (global read_only=ON), as an orchestrator does to the old
// primary of a planned switchover: the app user's writes there then fail with 1290.
// Restart re-applies it. n keeps its data and does not start replicating from anyone.
func (n *Node) Demote(ctx context.Context) error { return n.SetReadOnly(ctx, true) }

// Promote makes replica n a writable primary, as an orchestrator does in a switchover:
// when source is not nil it first waits until n has applied everything source has written
// (demote source first, so that this is final), then stops n's replication (STOP SLAVE)
// and sets its global read_only OFF. From then on n and source diverge: nothing n writes
// reaches source or the other replicas, which still follow node 1. Cluster.Switchover
// also re-points the others at n.
func (n *Node) Promote(ctx context.Context, source *Node) error {
	if source != nil {
		if err := n.CatchUp(ctx, source); err != nil {
			return err
		}
	}
	for _, q := range n.flavour.stopReplica(false) {
		if err := n.Exec(ctx, q); err != nil {
			return err
		}
	}
	return n.SetReadOnly(ctx, false)
}
