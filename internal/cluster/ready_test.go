package cluster_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

const galeraUUID = "9c5d6b3e-1f0a-11ef-8e2b-5bd7a1c0d0a1"

// TestReadState: the role, the cluster type and the readiness, from the answers of real
// servers (MariaDB 10.11 Galera, MySQL 8.0 Group Replication and offline_mode), in the
// role query's round trip, plus one for Galera's status and the group's member table.
func TestReadState(t *testing.T) {
	for _, tc := range []struct {
		name   string
		want   cluster.Kind // the DSN's cluster option
		set    func(n *fake.Net)
		kind   cluster.Kind
		role   failover.Role
		reason string // "" ready; else a part of NotReady's reason
	}{
		{"replication primary", cluster.KindUnknown, func(n *fake.Net) {}, cluster.KindReplication, failover.RolePrimary, ""},
		{"replication replica", cluster.KindUnknown, func(n *fake.Net) { n.SetReadOnly(0, true) }, cluster.KindReplication, failover.RoleStandby, ""},
		{"offline_mode", cluster.KindUnknown, func(n *fake.Net) { n.SetVars(0, "offline_mode", "ON") }, cluster.KindReplication, failover.RolePrimary, "offline_mode=ON"},
		{"galera synced", cluster.KindUnknown, func(n *fake.Net) { n.Galera(0, "synced", galeraUUID, 3) }, cluster.KindGalera, failover.RolePrimary, ""},
		{"galera non-Primary", cluster.KindUnknown, func(n *fake.Net) { n.Galera(0, "non-primary", galeraUUID, 3) }, cluster.KindGalera, failover.RolePrimary, "wsrep_ready=OFF"},
		{"galera non-Primary, ready", cluster.KindUnknown, func(n *fake.Net) {
			n.Galera(0, "non-primary", galeraUUID, 3)
			n.SetStatus(0, "wsrep_ready", "ON") // wsrep_ready lags the component's loss a moment
		}, cluster.KindGalera, failover.RolePrimary, "wsrep_cluster_status=non-Primary"},
		{"galera rejecting", cluster.KindUnknown, func(n *fake.Net) { n.Galera(0, "rejecting", galeraUUID, 3) }, cluster.KindGalera, failover.RolePrimary, "wsrep_reject_queries=ALL"},
		{"galera desynced", cluster.KindUnknown, func(n *fake.Net) { n.Galera(0, "desynced", galeraUUID, 3) }, cluster.KindGalera, failover.RolePrimary, "wsrep_desync=ON"},
		{"galera blocking donor", cluster.KindUnknown, func(n *fake.Net) { n.Galera(0, "donor", galeraUUID, 3) }, cluster.KindGalera, failover.RolePrimary, "donor whose state transfer (wsrep_sst_method=rsync) blocks it"},
		{"galera mariabackup donor", cluster.KindUnknown, func(n *fake.Net) {
			n.Galera(0, "donor", galeraUUID, 3)
			n.SetVars(0, "wsrep_sst_method", "mariabackup")
		}, cluster.KindGalera, failover.RolePrimary, ""},
		{"galera joined", cluster.KindUnknown, func(n *fake.Net) { n.Galera(0, "joined", galeraUUID, 3) }, cluster.KindGalera, failover.RolePrimary, "wsrep_local_state=3 (Joined)"},
		{"galera read_only node", cluster.KindUnknown, func(n *fake.Net) {
			n.Galera(0, "synced", galeraUUID, 3)
			n.SetReadOnly(0, true)
		}, cluster.KindGalera, failover.RoleStandby, ""},
		{"galera offline", cluster.KindUnknown, func(n *fake.Net) {
			n.Galera(0, "synced", galeraUUID, 3)
			n.SetVars(0, "offline_mode", "ON")
		}, cluster.KindGalera, failover.RolePrimary, "offline_mode=ON"},
		{"forced galera, no wsrep", cluster.KindGalera, func(n *fake.Net) {}, cluster.KindReplication, failover.RolePrimary, "cluster=galera, but the server does not run Galera (wsrep_on absent)"},
		{"forced galera, wsrep off", cluster.KindGalera, func(n *fake.Net) { n.SetVars(0, "wsrep_on", "OFF") }, cluster.KindReplication, failover.RolePrimary, "(wsrep_on OFF)"},
		{"forced replication on galera", cluster.KindReplication, func(n *fake.Net) { n.Galera(0, "non-primary", galeraUUID, 3) }, cluster.KindReplication, failover.RolePrimary, ""},
		{"group primary", cluster.KindUnknown, func(n *fake.Net) { n.GroupMember(0, "ONLINE", 3, 0, true) }, cluster.KindGroup, failover.RolePrimary, ""},
		{"group secondary", cluster.KindUnknown, func(n *fake.Net) { n.GroupMember(0, "ONLINE", 3, 0, false) }, cluster.KindGroup, failover.RoleStandby, ""},
		{"group recovering", cluster.KindUnknown, func(n *fake.Net) { n.GroupMember(0, "RECOVERING", 3, 0, false) }, cluster.KindGroup, failover.RoleStandby, "is RECOVERING, not ONLINE"},
		{"group error", cluster.KindUnknown, func(n *fake.Net) { n.GroupMember(0, "ERROR", 1, 0, false) }, cluster.KindGroup, failover.RoleStandby, "is ERROR, not ONLINE"},
		{"group quorum lost", cluster.KindUnknown, func(n *fake.Net) { n.GroupMember(0, "ONLINE", 3, 2, true) }, cluster.KindGroup, failover.RolePrimary, "lost quorum: 2 of its 3 members are UNREACHABLE"},
		{"group one of three unreachable", cluster.KindUnknown, func(n *fake.Net) { n.GroupMember(0, "ONLINE", 3, 1, true) }, cluster.KindGroup, failover.RolePrimary, ""},
		{"group not running", cluster.KindUnknown, func(n *fake.Net) { n.GroupMember(0, "", 0, 0, false) }, cluster.KindGroup, failover.RoleStandby, "Group Replication is not running"},
		{"forced group, no group", cluster.KindGroup, func(n *fake.Net) {}, cluster.KindReplication, failover.RolePrimary, "cluster=group, but the server is not a Group Replication member"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := fake.NewNet(t, 1)
			tc.set(n)
			conn, err := n.Dial(context.Background(), 0)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			st, err := cluster.ReadState(context.Background(), conn, tc.want)
			if err != nil {
				t.Fatal(err)
			}
			if st.Kind != tc.kind || st.Role != tc.role {
				t.Errorf("kind %v, role %v; want %v, %v", st.Kind, st.Role, tc.kind, tc.role)
			}
			switch {
			case tc.reason == "" && st.NotReady != nil:
				t.Errorf("not ready (%v), want ready", st.NotReady)
			case tc.reason != "" && st.NotReady == nil:
				t.Errorf("ready, want not ready: %s", tc.reason)
			case tc.reason != "" && !strings.Contains(st.NotReady.Error(), tc.reason):
				t.Errorf("not ready: %q, want it to say %q", st.NotReady.Error(), tc.reason)
			}
			if tc.kind == cluster.KindGalera && !strings.Contains(tc.reason, "offline") && (st.Galera.UUID != galeraUUID || st.Galera.Seqno != 100 || st.Galera.Index != 0) {
				t.Errorf("galera state %+v, want uuid %s, seqno 100, index 0", st.Galera, galeraUUID)
			}
		})
	}
}

// TestReadStateGroupWithoutPrivilege: a user that may not read performance_schema gets
// an error for the member query; the membership is then unknown and the member taken as
// ready (its refusals still count), not a failed read.
func TestReadStateGroupWithoutPrivilege(t *testing.T) {
	n := fake.NewNet(t, 1)
	n.SetVars(0, "group_replication_group_name", "8a94f357-aab4-11df-86ab-c80aa9429562")
	n.GroupMemberError(0, &mysql.MySQLError{Number: 1142, Message: "SELECT command denied to user 'app'@'%' for table 'replication_group_members'"})
	conn, err := n.Dial(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	st, err := cluster.ReadState(context.Background(), conn, cluster.KindUnknown)
	if err != nil || st.Kind != cluster.KindGroup || st.NotReady != nil {
		t.Fatalf("ReadState: %+v, %v; want a ready group member, no error", st, err)
	}
}

// TestRefusal: the refusals of a server that is not ready, by number; nothing else.
func TestRefusal(t *testing.T) {
	for _, tc := range []struct {
		err  error
		kind cluster.Kind
	}{
		{fake.NotPreparedError, cluster.KindGalera},
		{fake.OfflineError, cluster.KindReplication},
		{fake.GroupNotOnlineError, cluster.KindGroup},
		{&mysql.MySQLError{Number: 3799, Message: "stopping"}, cluster.KindGroup},
	} {
		nr := cluster.Refusal(tc.err)
		if nr == nil || nr.Kind != tc.kind || !errors.Is(nr, tc.err) {
			t.Errorf("Refusal(%v) = %v, want a %v refusal wrapping it", tc.err, nr, tc.kind)
		}
	}
	for _, err := range []error{nil, fake.ReadOnlyError, mysql.ErrInvalidConn, &mysql.MySQLError{Number: 1213}} {
		if nr := cluster.Refusal(err); nr != nil {
			t.Errorf("Refusal(%v) = %v, want nil", err, nr)
		}
	}
}

// TestLostPrimary: Galera's 1180 "Not connected to Primary Component" says the node is
// not ready, and is no Refusal (the commit may have taken effect); a 1180 of another
// form, or the text under another number, says nothing of readiness.
func TestLostPrimary(t *testing.T) {
	nr := cluster.LostPrimary(fmt.Errorf("exec: %w", fake.LostPrimaryError))
	if nr == nil || nr.Kind != cluster.KindGalera || !errors.Is(nr, fake.LostPrimaryError) {
		t.Errorf("LostPrimary(1180 not connected) = %v, want a Galera NotReadyError wrapping it", nr)
	}
	if r := cluster.Refusal(fake.LostPrimaryError); r != nil {
		t.Errorf("Refusal(1180 not connected) = %v, want nil: the commit may have run", r)
	}
	for _, err := range []error{nil, fake.NotPreparedError,
		&mysql.MySQLError{Number: 1180, Message: "Got error 1 \"Operation not permitted\" during COMMIT"},
		&mysql.MySQLError{Number: 1180, Message: "Error while appending streaming replication fragment"},
		&mysql.MySQLError{Number: 1105, Message: fake.LostPrimaryError.Message}} {
		if nr := cluster.LostPrimary(err); nr != nil {
			t.Errorf("LostPrimary(%v) = %v, want nil", err, nr)
		}
	}
}

// galeraRig is a monitor rig over three synced Galera nodes (cluster=auto: the probes
// find out).
func galeraRig(t *testing.T, set func(*rigOpts)) (*rig, *abortLog) {
	r, a := monRig(t, 3, set)
	for i := range 3 {
		r.net.Galera(i, "synced", galeraUUID, 3)
	}
	return r, a
}

// TestProbeNotReadyLeavesAtOnce: a Galera node that leaves the Primary component answers
// every probe, yet the probes read that it is not ready: the pool leaves it in the same
// round (no failoverDelay: it said so itself), its connections are not aborted (nothing
// hangs there), Stats says not-ready and why, and the pool comes back only once it is
// ready again and has been for switchBackDelay.
func TestProbeNotReadyLeavesAtOnce(t *testing.T) {
	r, aborts := galeraRig(t, nil)
	r.cl.Check(context.Background())
	if r.cl.Kind() != cluster.KindGalera {
		t.Fatalf("cluster type %v after a round, want galera", r.cl.Kind())
	}
	r.net.Galera(0, "non-primary", galeraUUID, 1)
	r.tick(monInterval)
	if a := r.cl.Active(); a != 1 {
		t.Fatalf("pool on H%d a round after H1 left the Primary component, want H2", a+1)
	}
	if s := r.stat(0); s.State != failover.HostNotReady || s.LastError == nil || !strings.Contains(s.LastError.Error(), "wsrep_ready=OFF") {
		t.Errorf("H1 stats: %v (%v), want not-ready saying wsrep_ready=OFF", s.State, s.LastError)
	}
	if got := aborts.get(); len(got) != 0 {
		t.Errorf("aborted %v, want none: a node that is not ready refuses at once", got)
	}
	sw := r.events(failover.EventSwitch)
	var nr *cluster.NotReadyError
	if len(sw) != 1 || sw[0].From != "H1:3306" || sw[0].Host != "H2:3306" || !errors.As(sw[0].Err, &nr) {
		t.Fatalf("switch events %v, want one H1 -> H2 with a *NotReadyError", sw)
	}
	// Not ready for a long time: the pool stays away, however long its probes pass.
	for range 30 {
		r.tick(monInterval)
	}
	if a := r.cl.Active(); a != 1 {
		t.Fatalf("pool on H%d while H1 is not ready, want H2", a+1)
	}
	r.net.Galera(0, "synced", galeraUUID, 3)
	r.tick(monInterval)
	if a := r.cl.Active(); a != 1 {
		t.Fatalf("pool on H%d at H1's first ready probe: want H2 until switchBackDelay", a+1)
	}
	for i := 0; r.cl.Active() != 0; i++ {
		if i > int(monBackDelay/monInterval)+1 {
			t.Fatalf("pool still on H%d %d rounds after H1 was ready again", r.cl.Active()+1, i)
		}
		r.tick(monInterval)
	}
	if s := r.stat(0); s.State != failover.HostUp {
		t.Errorf("H1 after its return: %v, want up", s.State)
	}
	ups := 0
	for _, e := range r.events(failover.EventHostState) {
		if e.Host == "H1:3306" && e.State == failover.HostUp {
			ups++
		}
	}
	if ups == 0 {
		t.Errorf("no EventHostState up for H1 after it was ready again")
	}
}

// TestProbeMinorityCluster: two Primary components (an operator bootstrapped one node
// apart while the other two lived on): the node in the smaller one is not ready.
func TestProbeMinorityCluster(t *testing.T) {
	r, _ := galeraRig(t, nil)
	r.cl.Check(context.Background())
	r.net.Galera(0, "synced", "0f000000-0000-0000-0000-00000000000b", 1)
	r.net.Galera(1, "synced", galeraUUID, 2)
	r.net.Galera(2, "synced", galeraUUID, 2)
	r.tick(monInterval)
	r.tick(monInterval) // the order in which a round's probes end does not matter
	if s := r.stat(0); s.State != failover.HostNotReady || !strings.Contains(s.LastError.Error(), "smaller cluster") {
		t.Fatalf("H1 in a component of 1 beside one of 2: %v (%v), want not-ready", s.State, s.LastError)
	}
	for _, h := range []int{1, 2} {
		if s := r.stat(h); s.State != failover.HostUp {
			t.Errorf("H%d in the larger cluster: %v (%v), want up", h+1, s.State, s.LastError)
		}
	}
	if a := r.cl.Active(); a != 1 {
		t.Errorf("pool on H%d, want H2", a+1)
	}
}

// TestWalkSkipsNotReady: a connection that joins the pool never lands on a node that
// is not ready, and with every node not ready the walk's error says why for each.
func TestWalkSkipsNotReady(t *testing.T) {
	r := newRig(t, 3, func(o *rigOpts) { o.Cluster = "galera" })
	r.net.Galera(0, "non-primary", galeraUUID, 1)
	r.net.Galera(1, "rejecting", galeraUUID, 3)
	r.net.Galera(2, "synced", galeraUUID, 3)
	l := r.connect()
	defer l.c.Close()
	if l.host != 2 {
		t.Fatalf("connected to H%d, want H3, the only ready node", l.host+1)
	}
	if s := r.stat(0); s.State != failover.HostNotReady {
		t.Errorf("H1: %v, want not-ready", s.State)
	}
	r.net.Galera(2, "joined", galeraUUID, 3)
	_, _, err := r.cl.Connect(context.Background(), nil)
	var nh *failover.NoHostAvailableError
	if !errors.As(err, &nh) {
		t.Fatalf("Connect with no node ready: %v, want a *NoHostAvailableError", err)
	}
	for i, want := range []string{"wsrep_ready=OFF", "wsrep_reject_queries=ALL", "wsrep_local_state=3 (Joined)"} {
		if e := nh.Hosts[i].Error(); !strings.Contains(e, want) {
			t.Errorf("host %d: %q, want it to say %q", i+1, e, want)
		}
	}
}

// TestFallBackNeverToNotReady: without probes, fall-back reads the primary's state
// before it returns: a primary that answers but is not ready keeps the pool away, and the
// clocks restart.
func TestFallBackNeverToNotReady(t *testing.T) {
	r := newRig(t, 2, func(o *rigOpts) { o.Cluster = "galera" })
	for i := range 2 {
		r.net.Galera(i, "synced", galeraUUID, 2)
	}
	l := r.connect()
	r.net.Galera(0, "non-primary", galeraUUID, 1)
	r.cl.NoteRefusal(0, cluster.Refusal(fake.NotPreparedError))
	_ = l.c.Close()
	c, h, err := r.cl.Failover(context.Background(), 0, cluster.Refusal(fake.NotPreparedError), nil)
	if err != nil || h != 1 {
		t.Fatalf("Failover: H%d, %v; want H2", h+1, err)
	}
	defer c.Close()
	r.clock.Advance(31 * time.Second)
	if c, _, err := r.cl.TryFallBack(context.Background(), nil); c != nil || err == nil {
		t.Fatalf("TryFallBack to a primary that is not ready: %v, %v; want no connection and its error", c, err)
	}
	var nr *cluster.NotReadyError
	if fb := r.events(failover.EventFallBackFailed); len(fb) != 1 || !errors.As(fb[0].Err, &nr) {
		t.Fatalf("fall-back-failed events %v, want one with a *NotReadyError", fb)
	}
	if r.cl.Active() != 1 {
		t.Fatalf("pool on H%d, want H2", r.cl.Active()+1)
	}
	r.net.Galera(0, "synced", galeraUUID, 2)
	r.clock.Advance(31 * time.Second)
	c2, h2, err := r.cl.TryFallBack(context.Background(), nil)
	if err != nil || h2 != 0 {
		t.Fatalf("TryFallBack to a ready primary: H%d, %v; want H1", h2+1, err)
	}
	_ = c2.Close()
}

// TestDecideActsOnWhatItRead: a move made while the monitor decides (here a SwitchTo
// between its read of the position and its update) stands: the monitor does not replace
// it, and reports no switch from a host the pool had already left.
func TestDecideActsOnWhatItRead(t *testing.T) {
	r, _ := monRig(t, 3, nil)
	r.cl.Check(context.Background())
	rounds := func() {
		for i := 0; i*int(monInterval) <= int(monFailDelay); i++ {
			r.tick(monInterval)
		}
	}
	r.net.Down(0)
	rounds() // H1 declared down: the monitor moves the pool to H2
	if r.cl.Active() != 1 {
		t.Fatalf("pool on H%d, want H2", r.cl.Active()+1)
	}
	r.net.Down(1)
	r.net.Down(2)
	rounds() // H2 declared down too, with nowhere to go: the pool stays
	if r.cl.Active() != 1 || r.stat(1).State != failover.HostDown {
		t.Fatalf("pool on H%d, H2 %v; want H2, down", r.cl.Active()+1, r.stat(1).State)
	}
	stale := cluster.Pos(r.cl) // what a decision that has yet to act read: on H2, down
	r.net.Up(0)
	r.net.Up(2)
	r.tick(monInterval) // H3 passes: the monitor leaves H2 for it
	if err := r.cl.SwitchTo(context.Background(), "H1:3306"); err != nil {
		t.Fatal(err)
	}
	before := len(r.events(failover.EventSwitch))
	cluster.DecideAt(r.cl, stale) // H2 down and H3 healthy in what it read: it would move to H3
	if r.cl.Active() != 0 {
		t.Fatalf("pool on H%d after a decision on a stale position, want H1 (SwitchTo's)", r.cl.Active()+1)
	}
	for _, e := range r.events(failover.EventSwitch)[before:] {
		t.Errorf("switch event %v from a stale decision", e)
	}
}

// TestGaleraReplicaReads: with replicaReads on a Galera cluster every ready node but
// the pool's writer serves reads (all are writable), and a node's lag is how long ago the
// cluster passed its wsrep_last_committed: a node stuck at an old write set while the
// others commit is left once that exceeds maxReplicaLag, and serves again once it has
// caught up.
func TestGaleraReplicaReads(t *testing.T) {
	r, _ := galeraRig(t, func(o *rigOpts) {
		o.ReplicaReads, o.MaxReplicaLag = true, time.Second
	})
	r.cl.Check(context.Background())
	if !r.cl.Replicas().Qualifies(1) || !r.cl.Replicas().Qualifies(2) || r.cl.Replicas().Qualifies(0) {
		t.Fatalf("replicas %v %v %v; want H2 and H3, not the writer H1 (skips %q %q %q)",
			r.cl.Replicas().Qualifies(0), r.cl.Replicas().Qualifies(1), r.cl.Replicas().Qualifies(2),
			r.stat(0).ReplicaSkip, r.stat(1).ReplicaSkip, r.stat(2).ReplicaSkip)
	}
	// H1 and H2 commit on; H3 applies nothing.
	seq := 100
	for i := 0; i < 8; i++ {
		seq += 10
		for _, h := range []int{0, 1} {
			r.net.SetStatus(h, "wsrep_last_committed", fmt.Sprint(seq))
		}
		r.tick(monInterval)
	}
	if r.cl.Replicas().Qualifies(2) || !strings.Contains(r.stat(2).ReplicaSkip, "over maxReplicaLag") {
		t.Fatalf("H3 %v behind the cluster: skip %q, lag %v; want it left for its lag", 8*monInterval, r.stat(2).ReplicaSkip, r.stat(2).ReplicaLag)
	}
	if !r.cl.Replicas().Qualifies(1) || r.stat(1).ReplicaLag != 0 {
		t.Errorf("H2 in step with the writer: qualifies %v, lag %v; want yes, 0", r.cl.Replicas().Qualifies(1), r.stat(1).ReplicaLag)
	}
	r.net.SetStatus(2, "wsrep_last_committed", fmt.Sprint(seq))
	r.tick(monInterval)
	if !r.cl.Replicas().Qualifies(2) {
		t.Errorf("H3 caught up: skip %q, want it to serve again", r.stat(2).ReplicaSkip)
	}
	// A node that leaves the Primary component serves no reads.
	r.net.Galera(1, "non-primary", galeraUUID, 1)
	r.tick(monInterval)
	if r.cl.Replicas().Qualifies(1) || !strings.Contains(r.stat(1).ReplicaSkip, "not ready") {
		t.Errorf("H2 outside the Primary component: skip %q, want not ready", r.stat(1).ReplicaSkip)
	}
}

// TestGaleraLagNewHistory: a cluster bootstrapped anew (a new wsrep_cluster_state_uuid,
// sequence numbers from 1 again) starts a new frontier: nodes in step with the writer have
// no lag, though their numbers are far below the old history's. Before, every node of the
// new history was reported behind since the old history's first sample, and with
// maxReplicaLag none served until the new numbers passed the old ones.
func TestGaleraLagNewHistory(t *testing.T) {
	r, _ := galeraRig(t, func(o *rigOpts) {
		o.ReplicaReads, o.MaxReplicaLag = true, time.Second
	})
	r.cl.Check(context.Background())
	seq := 100
	for range 8 {
		seq += 10
		for h := range 3 {
			r.net.SetStatus(h, "wsrep_last_committed", fmt.Sprint(seq))
		}
		r.tick(monInterval)
	}
	const newUUID = "0b1c2d3e-4f50-11ef-9a7b-0242ac120002"
	for h := range 3 {
		r.net.Galera(h, "synced", newUUID, 3)
	}
	for round := 1; round <= 12; round++ {
		for h := range 3 {
			r.net.SetStatus(h, "wsrep_last_committed", fmt.Sprint(round))
		}
		r.tick(monInterval)
		if round < 2 {
			continue // a node read before the writer's probe has read the new history waits a round
		}
		for _, h := range []int{1, 2} {
			if !r.cl.Replicas().Qualifies(h) || r.stat(h).ReplicaLag != 0 {
				t.Fatalf("round %d of the new history: H%d qualifies %v, lag %v, skip %q; want it serving with lag 0",
					round, h+1, r.cl.Replicas().Qualifies(h), r.stat(h).ReplicaLag, r.stat(h).ReplicaSkip)
			}
		}
	}
	// In the new history as in the old, a node that stops applying falls behind.
	for range 8 {
		seq++
		for _, h := range []int{0, 1} {
			r.net.SetStatus(h, "wsrep_last_committed", fmt.Sprint(100+seq))
		}
		r.tick(monInterval)
	}
	if r.cl.Replicas().Qualifies(2) || !strings.Contains(r.stat(2).ReplicaSkip, "over maxReplicaLag") {
		t.Errorf("H3 stuck in the new history: skip %q, lag %v; want it left for its lag", r.stat(2).ReplicaSkip, r.stat(2).ReplicaLag)
	}
}

// TestGaleraLagOtherHistory: a node in another cluster history than the pool's writer
// (two Primary components of equal size: another cluster listed by mistake, or halves
// bootstrapped apart) is no replica of the writer, whatever its sequence number and
// without maxReplicaLag: its writes are not the writer's. Before, its number, above every
// one of the writer's history, gave it lag 0 and it served reads of another cluster.
func TestGaleraLagOtherHistory(t *testing.T) {
	r, _ := galeraRig(t, func(o *rigOpts) { o.ReplicaReads = true })
	const otherUUID = "77e1a0c2-4f51-11ef-8c1d-0242ac120003"
	for h := range 2 {
		r.net.Galera(h, "synced", galeraUUID, 2)
		r.net.SetStatus(h, "wsrep_last_committed", "180")
	}
	r.net.Galera(2, "synced", otherUUID, 2)
	r.net.SetStatus(2, "wsrep_last_committed", "500")
	r.cl.Check(context.Background())
	r.tick(monInterval)
	if !r.cl.Replicas().Qualifies(1) {
		t.Errorf("H2, in the writer's history: skip %q, want it serving", r.stat(1).ReplicaSkip)
	}
	if r.cl.Replicas().Qualifies(2) || !strings.Contains(r.stat(2).ReplicaSkip, cluster.OtherHistory) ||
		!strings.Contains(r.stat(2).ReplicaSkip, otherUUID) {
		t.Errorf("H3 in another history: qualifies %v, skip %q; want it skipped, naming its history",
			r.cl.Replicas().Qualifies(2), r.stat(2).ReplicaSkip)
	}
}
