package cluster_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

func replicaRig(t *testing.T, hosts int, set func(*rigOpts)) *rig {
	return newRig(t, hosts, func(o *rigOpts) {
		o.ReplicaReads = true
		if set != nil {
			set(o)
		}
	})
}

// TestRoutingKeyAffinity: rendezvous hashing keeps each key on one replica, spreads the
// keys, and when a replica stops qualifying only its keys move, and they come back with it.
func TestRoutingKeyAffinity(t *testing.T) {
	r := replicaRig(t, 4, nil) // H1 the writer, H2..H4 replicas
	const keys = 1000
	where := func() []int {
		out := make([]int, keys)
		for k := range keys {
			out[k] = r.cl.Replicas().Pick(fmt.Sprintf("user-%d", k), true, 0)
		}
		return out
	}
	before := where()
	per := map[int]int{}
	for _, h := range before {
		per[h]++
	}
	for h := 1; h <= 3; h++ {
		if per[h] < keys/3-keys/10 || per[h] > keys/3+keys/10 {
			t.Errorf("H%d owns %d of %d keys, want about a third: %v", h+1, per[h], keys, per)
		}
	}
	if per[0] != 0 {
		t.Errorf("the writer owns %d keys", per[0])
	}
	if again := where(); fmt.Sprint(again) != fmt.Sprint(before) {
		t.Error("the same keys went elsewhere with nothing changed")
	}

	r.cl.NoteRole(3, failover.RolePrimary) // H4 became writable: not a replica any more
	after := where()
	moved, stray := 0, 0
	for k := range keys {
		switch {
		case before[k] == 3:
			moved++
			if after[k] == 3 || after[k] < 1 {
				t.Fatalf("key %d still on H4 or nowhere: H%d", k, after[k]+1)
			}
		case after[k] != before[k]:
			stray++
		}
	}
	if stray != 0 {
		t.Errorf("%d keys of the surviving replicas moved, want 0 (%d of H4's moved)", stray, moved)
	}
	t.Logf("FIGURE key affinity: %v of %d keys per replica; H4 left: its %d keys moved, 0 others", per, keys, moved)

	r.cl.NoteRole(3, failover.RoleStandby)
	if back := where(); fmt.Sprint(back) != fmt.Sprint(before) {
		t.Error("the keys did not return to H4 with it")
	}
	if s := r.events(failover.EventReplica); len(s) != 2 || s[0].Err == nil || s[1].Err != nil {
		t.Errorf("replica events %v, want H4 leaving (with why) and coming back", s)
	}
}

// TestReplicaSpread: without a key, round-robin alternates over the replicas and
// least-in-flight takes the idlest; tried replicas are left out; none: -1.
func TestReplicaSpread(t *testing.T) {
	r := replicaRig(t, 3, nil)
	got := map[int]int{}
	for range 1000 {
		got[r.cl.Replicas().Pick("", false, 0)]++
	}
	if got[1] != 500 || got[2] != 500 {
		t.Errorf("round-robin spread %v, want 500 each on H2 and H3", got)
	}
	if h := r.cl.Replicas().Pick("", false, 1<<1); h != 2 {
		t.Errorf("H2 tried: got H%d, want H3", h+1)
	}
	if h := r.cl.Replicas().Pick("", false, 1<<1|1<<2); h != -1 {
		t.Errorf("both tried: got H%d, want none", h+1)
	}
	if h := r.cl.Replicas().Pick("k", true, 1<<1|1<<2); h != -1 {
		t.Errorf("both tried, with a key: got H%d, want none", h+1)
	}

	l := replicaRig(t, 3, func(o *rigOpts) { o.ReplicaSelection = "least-in-flight" })
	l.cl.ReplicaStart(1)
	for i := range 10 {
		if h := l.cl.Replicas().Pick("", false, 0); h != 2 {
			t.Fatalf("pick %d: H%d, want H3 (H2 has a statement in flight)", i, h+1)
		}
	}
	l.cl.ReplicaDone(1, true)
	got = map[int]int{}
	for range 100 {
		got[l.cl.Replicas().Pick("", false, 0)]++
	}
	if got[1] != 50 || got[2] != 50 {
		t.Errorf("least-in-flight with none in flight: %v, want ties split evenly", got)
	}
}

// TestReplicaSkipReasons: the writer, a writable host, a host declared down by probes
// and remote hosts, in Stats and in the choice.
func TestReplicaSkipReasons(t *testing.T) {
	r := replicaRig(t, 4, func(o *rigOpts) {
		o.labels("a", "a", "b", "a")
		o.LocalDC = "a"
		o.UsedHostsPerRemoteDC = 1 // else DC b is ignored, for replica reads as for failover
	})
	r.cl.NoteRole(3, failover.RolePrimary)
	st := r.cl.Stats()
	want := []string{"the pool's writer", "", "", "writable: not a replica"}
	for i, h := range st.Hosts {
		if h.ReplicaSkip != want[i] {
			t.Errorf("H%d ReplicaSkip %q, want %q", i+1, h.ReplicaSkip, want[i])
		}
		if h.ReplicaLag != -1 {
			t.Errorf("H%d ReplicaLag %v, want -1 (not read)", i+1, h.ReplicaLag)
		}
	}
	// The local replica first, the remote one when the local one is tried.
	for range 10 {
		if h := r.cl.Replicas().Pick("", false, 0); h != 1 {
			t.Fatalf("got H%d, want the local replica H2", h+1)
		}
		if h := r.cl.Replicas().Pick("key", true, 0); h != 1 {
			t.Fatalf("with a key: got H%d, want the local replica H2", h+1)
		}
	}
	if h := r.cl.Replicas().Pick("", false, 1<<1); h != 2 {
		t.Errorf("local replica tried: got H%d, want the remote H3", h+1)
	}
	if !strings.Contains(fmt.Sprint(r.cl.Replicas().NoneError()), "writable: not a replica") {
		t.Errorf("NoReplicaError does not say why H4 is no replica: %v", r.cl.Replicas().NoneError())
	}
}

// TestProbesReadReplicaLag: with maxReplicaLag the probes read each replica's lag; a
// replica over it, or whose lag is unknown (a replication thread stopped, not a
// replica), stops qualifying at the round that finds it, and comes back at the round
// that finds it caught up.
func TestProbesReadReplicaLag(t *testing.T) {
	r, _ := monRig(t, 3, func(o *rigOpts) {
		o.ReplicaReads, o.MaxReplicaLag = true, 2*time.Second
	})
	r.net.SetReadOnly(1, true)
	r.net.SetReadOnly(2, true)
	r.tick(0)
	if h := r.stat(1); h.ReplicaSkip != "" || h.ReplicaLag != 0 {
		t.Fatalf("H2 at lag 0: ReplicaSkip %q, ReplicaLag %v; want it used", h.ReplicaSkip, h.ReplicaLag)
	}
	for _, tc := range []struct {
		lag  int64
		skip string
	}{
		{5, "lag 5s over maxReplicaLag 2s"},
		{fake.LagNull, "replication is not running"},
		{fake.LagNone, "lag unknown: not a replica"},
		{2, ""},
	} {
		r.net.SetLag(1, tc.lag)
		r.tick(monInterval)
		h := r.stat(1)
		if !strings.HasPrefix(h.ReplicaSkip, tc.skip) || tc.skip == "" && h.ReplicaSkip != "" {
			t.Errorf("lag %d: ReplicaSkip %q, want %q...", tc.lag, h.ReplicaSkip, tc.skip)
		}
		for range 20 {
			got := r.cl.Replicas().Pick("", false, 0)
			if tc.skip != "" && got != 2 || got < 1 {
				t.Fatalf("lag %d: read went to H%d", tc.lag, got+1)
			}
		}
	}
	if got := r.stat(1).ReplicaLag; got != 2*time.Second {
		t.Errorf("ReplicaLag %v, want 2s", got)
	}
	if h := r.stat(0); h.ReplicaSkip != "the pool's writer" || h.ReplicaLag != -1 {
		t.Errorf("H1 ReplicaSkip %q, ReplicaLag %v; want the pool's writer, -1", h.ReplicaSkip, h.ReplicaLag)
	}
	// Events: H2 left, changed why twice, came back.
	var got []string
	for _, e := range r.events(failover.EventReplica) {
		if e.Host == r.net.Addrs()[1] {
			got = append(got, fmt.Sprint(e.Err != nil))
		}
	}
	if strings.Join(got, " ") != "true true true false" {
		t.Errorf("H2's replica events (left?) %v, want true true true false", got)
	}
}

// TestProbesMarkWritableHosts: with replicaReads the probes read every host's role even
// with targetSessionAttrs any: a writable host other than the writer is no replica.
func TestProbesMarkWritableHosts(t *testing.T) {
	r, _ := monRig(t, 3, func(o *rigOpts) { o.ReplicaReads = true })
	r.net.SetReadOnly(2, true)
	r.tick(0)
	if h := r.stat(1); h.ReplicaSkip != "writable: not a replica" {
		t.Errorf("writable H2: ReplicaSkip %q", h.ReplicaSkip)
	}
	for range 10 {
		if got := r.cl.Replicas().Pick("", false, 0); got != 2 {
			t.Fatalf("read went to H%d, want H3", got+1)
		}
	}
}

// TestDownReplicaAborted: with replicaReads, a replica the probes declare down has its
// connections aborted (the replica sessions' reads in flight fail at once and run again
// elsewhere), once; without replicaReads a host the pool is not on is left alone.
func TestDownReplicaAborted(t *testing.T) {
	for _, on := range []bool{true, false} {
		r, a := monRig(t, 3, func(o *rigOpts) { o.ReplicaReads = on })
		r.net.SetReadOnly(1, true)
		r.tick(0)
		r.down(1)
		for range 8 {
			r.tick(monInterval)
		}
		want := "[]"
		if on {
			want = "[1]"
		}
		if got := fmt.Sprint(a.get()); got != want {
			t.Errorf("replicaReads=%v: aborted %s, want %s", on, got, want)
		}
		if on && !strings.HasPrefix(r.stat(1).ReplicaSkip, "down") {
			t.Errorf("H2 ReplicaSkip %q, want down", r.stat(1).ReplicaSkip)
		}
	}
}

// TestStoppedReplicationIsNoReplica: a replica whose replication thread is stopped does
// not qualify, also without maxReplicaLag: its data stops where the thread did, and every
// causal read routed there would wait in vain. It qualifies again once it runs.
func TestStoppedReplicationIsNoReplica(t *testing.T) {
	r, _ := monRig(t, 3, func(o *rigOpts) { o.ReplicaReads = true })
	r.net.SetReadOnly(1, true)
	r.net.SetReadOnly(2, true)
	r.cl.Check(context.Background())
	if !r.cl.Replicas().Qualifies(1) {
		t.Fatalf("H2 replicating: skip %q, want it used", r.stat(1).ReplicaSkip)
	}
	r.net.SetLag(1, fake.LagNull)
	r.tick(monInterval)
	if r.cl.Replicas().Qualifies(1) || !strings.HasPrefix(r.stat(1).ReplicaSkip, "replication is not running") {
		t.Fatalf("H2 with replication stopped: skip %q, want it left", r.stat(1).ReplicaSkip)
	}
	for range 20 {
		if h := r.cl.Replicas().Pick("", false, 0); h != 2 {
			t.Fatalf("read went to H%d, want H3", h+1)
		}
	}
	r.net.SetLag(1, 0)
	r.tick(monInterval)
	if !r.cl.Replicas().Qualifies(1) {
		t.Errorf("H2 replicating again: skip %q, want it used", r.stat(1).ReplicaSkip)
	}
}

// TestReplicaStatsUnderReadWrite: with targetSessionAttrs read-write, a standby that
// serves replica reads is up in Stats (its role is wrong only for the writes), and one
// that serves none says why.
func TestReplicaStatsUnderReadWrite(t *testing.T) {
	r, _ := monRig(t, 3, func(o *rigOpts) { o.ReplicaReads, o.TargetSessionAttrs = true, attrs.ReadWrite })
	r.net.SetReadOnly(1, true)
	r.net.SetReadOnly(2, true)
	r.cl.Check(context.Background())
	if s := r.stat(1); s.State != failover.HostUp || s.ReplicaSkip != "" {
		t.Errorf("H2, a standby serving reads: %v, skip %q; want up, \"\"", s.State, s.ReplicaSkip)
	}
	r.net.SetLag(2, fake.LagNull)
	r.tick(monInterval)
	if s := r.stat(2); s.State != failover.HostWrongRole || s.ReplicaSkip == "" {
		t.Errorf("H3, a standby serving no reads: %v, skip %q; want wrong-role and why", s.State, s.ReplicaSkip)
	}
}
