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

// CatchUp waits until n has applied everything source has written so far (source's
// gtid_binlog_pos; MySQL: its gtid_executed), within ctx or 30 s. It returns at once when
// n's own position already holds it (a former primary holds what it wrote itself), and
// fails at once when n cannot get there: n replicates from no one, its replication stays
// stopped, or it replicates from another node that is down.
func (n *Node) CatchUp(ctx context.Context, source *Node) error {
	pos, err := source.QueryString(ctx, source.flavour.gtidExecutedQuery())
	if err != nil {
		return n.wrap("catch up", err)
	}
	return n.waitApplied(ctx, source, pos)
}

// waitApplied waits until n holds every transaction of pos, source's position, within ctx
// or 30 s. Each round reads n's replication and its own position: a node that holds pos
// already is done (MASTER_GTID_WAIT reads gtid_slave_pos alone and would wait in vain
// for what the node wrote itself as a primary); one that has no source, whose replication
// is stopped on two reads 250 ms apart, or whose source is another node that is down
// fails at once; otherwise MASTER_GTID_WAIT (WAIT_FOR_EXECUTED_GTID_SET) waits at most a
// second and the round begins again.
func (n *Node) waitApplied(ctx context.Context, source *Node, pos string) error {
	deadline := time.Now().Add(30 * time.Second)
	if dl, ok := ctx.Deadline(); ok {
		deadline = dl
	}
	where := func(have string) string {
		return fmt.Sprintf("it is at %q, node %d at %q", have, source.idx, pos)
	}
	stopped := false
	for {
		st, err := n.replicaState(ctx)
		if err != nil {
			return fmt.Errorf("harness: node %d did not reach node %d's %q: %w", n.idx, source.idx, pos, err)
		}
		have, done, err := n.holds(ctx, pos)
		if err != nil {
			return fmt.Errorf("harness: node %d did not reach node %d's %q: %w", n.idx, source.idx, pos, err)
		}
		switch {
		case !st.replica:
			return fmt.Errorf("harness: node %d is not a replica: it replicates from no one (%s)", n.idx, where(have))
		case done:
			return nil
		case st.stopped() && stopped:
			return fmt.Errorf("harness: node %d's replication is stopped (%s): %s", n.idx, st.summary, where(have))
		}
		if from := n.Source(); from != nil && from != source && from.State() == Down {
			return fmt.Errorf("harness: node %d replicates from node %d, which is down: %s", n.idx, from.idx, where(have))
		}
		wait := min(time.Until(deadline), time.Second)
		if wait <= 0 {
			return fmt.Errorf("harness: node %d did not reach node %d's %q in time: it is at %q; %s", n.idx, source.idx, pos, have, st.summary)
		}
		if stopped = st.stopped(); stopped {
			// A thread may read No for a moment as it starts: look again before failing.
			wait = min(wait, 250*time.Millisecond)
			select {
			case <-ctx.Done():
			case <-time.After(wait):
			}
			if ctx.Err() != nil {
				return fmt.Errorf("harness: node %d did not reach node %d's %q: %w; it is at %q; %s", n.idx, source.idx, pos, ctx.Err(), have, st.summary)
			}
			continue
		}
		var res sql.NullInt64
		err = n.admin.QueryRowContext(ctx, n.flavour.waitGTIDQuery(), pos, wait.Seconds()).Scan(&res)
		if err != nil {
			return fmt.Errorf("harness: node %d did not reach node %d's %q: %w; it is at %q; %s", n.idx, source.idx, pos, err, n.gtidPosOr(have), n.replicationStatus())
		}
		if res.Valid && res.Int64 == 0 {
			return nil
		}
	}
}

// holds reports whether n holds every transaction of pos, written or applied, and n's
// own position (MariaDB gtid_current_pos, MySQL gtid_executed).
func (n *Node) holds(ctx context.Context, pos string) (have string, ok bool, err error) {
	if have, err = n.GTIDPos(ctx); err != nil {
		return "", false, err
	}
	ok, err = n.covers(ctx, have, pos)
	return have, ok, err
}

// covers reports whether GTID position have holds every transaction of want (MariaDB:
// mariadbCovers; MySQL: GTID_SUBSET, asked of n).
func (n *Node) covers(ctx context.Context, have, want string) (bool, error) {
	if n.flavour != MySQL {
		return mariadbCovers(have, want)
	}
	v, err := n.QueryInt(ctx, "SELECT GTID_SUBSET(?, ?)", want, have)
	return v == 1, err
}

// gtidPosOr is n's GTID position now, or else when it cannot be read.
func (n *Node) gtidPosOr(fallback string) string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if p, err := n.GTIDPos(ctx); err == nil {
		return p
	}
	return fallback
}

// Source is the node n replicates from as the harness set it up, or nil: a primary, a
// node brought back by ReturnUnfenced, or an old primary a promotion left behind until
// it rejoins.
func (n *Node) Source() *Node {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.source
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
