package cluster_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// One writer: the pool never moves from one writable host to another by fall-back, and
// when two hosts are writable the writer is the one the cluster follows (its replicas),
// then the one the pool writes to, then the list's first.

// replicas makes H2 .. Hn read-only replicas of H1 (the fake's hosts are all writable).
func replicas(n *fake.Net, hosts int) {
	for i := 1; i < hosts; i++ {
		n.SetReadOnly(i, true)
		n.Follow(i, 0)
	}
}

// promote makes H2 the writer as an orchestrator does while H1 is away: H2 writable and
// replicating from no one, H3 read-only and re-pointed at H2. H1 is left as it is: when
// it comes back it is writable and replicates from no one (no fencing, a failed hook).
func promote(n *fake.Net) {
	n.SetReadOnly(1, false)
	n.Follow(1, -1)
	n.Follow(2, 1)
}

// twoWriters is the rig of the scenario: the pool moved to H2 after H1 died, H2 was
// promoted, and H1 is back writable beside it, followed by no replica.
func twoWriters(t *testing.T, target string, set func(*rigOpts)) (*rig, *logical) {
	t.Helper()
	r := newRig(t, 3, func(o *rigOpts) {
		o.TargetSessionAttrs = target
		o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = 30, 0
		if set != nil {
			set(o)
		}
	})
	replicas(r.net, 3)
	l := r.connect()
	l.on(0)
	r.down(0)
	promote(r.net)
	l.fail()
	l.on(1)
	r.up(0)
	return r, l
}

// wantWriters checks that err is a *cluster.WritersError naming writer first among
// hosts, with the fix.
func wantWriters(t *testing.T, err error, writer string, hosts ...string) *cluster.WritersError {
	t.Helper()
	var we *cluster.WritersError
	if !errors.As(err, &we) {
		t.Fatalf("error %v (%T), want a *cluster.WritersError", err, err)
	}
	if we.Writer != writer || !slices.Equal(we.Hosts, hosts) {
		t.Errorf("WritersError writer %s hosts %v, want %s %v", we.Writer, we.Hosts, writer, hosts)
	}
	if msg := err.Error(); !strings.Contains(msg, "SET GLOBAL read_only=ON") || !strings.Contains(msg, "the writer is "+writer) {
		t.Errorf("error %q does not name the writer and the fix", msg)
	}
	return we
}

// TestFallBackNeverMovesBetweenWriters: a pool on the promoted H2 does not fall back to
// H1, back writable and followed by no replica, for any target that writes: the attempt
// is refused with a *WritersError (H2 is the writer: H3 follows it), the pool stays, the
// clocks restart, and the two writers are reported once (EventTwoWriters, Stats.Writers)
// until H1 is fenced. The evidence is the replicas' own status or, without the
// privilege to read it, the replicas registered with each writer.
func TestFallBackNeverMovesBetweenWriters(t *testing.T) {
	for _, tc := range []struct {
		name, target string
		deny         func(n *fake.Net) // the privilege the app user lacks
	}{
		{"read-write", attrs.ReadWrite, nil},
		{"primary", attrs.Primary, nil},
		{"any", attrs.Any, nil},
		{"read-write, replica hosts only", attrs.ReadWrite, func(n *fake.Net) {
			for i := range 3 {
				n.DenyReplicaStatus(i, true)
			}
		}},
		{"read-write, replica status only", attrs.ReadWrite, func(n *fake.Net) {
			for i := range 3 {
				n.DenyReplicaHosts(i, true)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, l := twoWriters(t, tc.target, nil)
			if tc.deny != nil {
				tc.deny(r.net)
			}
			r.clock.Advance(31 * time.Second)
			c, _, err := r.cl.TryFallBack(context.Background(), nil)
			if c != nil {
				t.Fatalf("fell back to H1, writable beside the promoted H2\nevents: %v", r.evs)
			}
			we := wantWriters(t, err, "H2:3306", "H1:3306", "H2:3306")
			if !slices.Equal(we.Followers, []int{0, 1}) || we.Why != "the cluster follows it" {
				t.Errorf("followers %v (%s), want [0 1] (the cluster follows it)", we.Followers, we.Why)
			}
			l.on(1)
			if r.cl.FallBackDue() {
				t.Error("fall-back still due after the refusal: the clocks did not restart")
			}
			if fb := r.events(failover.EventFallBack); len(fb) != 0 {
				t.Errorf("fall-back events %v, want none", fb)
			}
			if f := r.events(failover.EventFallBackFailed); len(f) != 1 || !errors.As(f[0].Err, &we) {
				t.Errorf("fall-back-failed events %v, want one with the *WritersError", f)
			}
			if w := r.cl.Stats().Writers; !slices.Equal(w, []string{"H2:3306", "H1:3306"}) {
				t.Errorf("Stats.Writers %v, want [H2:3306 H1:3306]", w)
			}
			// A minute on, still two writers: refused again, reported once.
			r.clock.Advance(31 * time.Second)
			if c, _, err := r.cl.TryFallBack(context.Background(), nil); c != nil || err == nil {
				t.Fatalf("second fall-back: %v, %v; want refused", c, err)
			}
			tw := r.events(failover.EventTwoWriters)
			if len(tw) != 1 || tw[0].Host != "H2:3306" || tw[0].From != "H1:3306" {
				t.Fatalf("two-writers events %v, want one, H2 from H1", tw)
			}
			wantWriters(t, tw[0].Err, "H2:3306", "H1:3306", "H2:3306")
			// H1 fenced: no longer two writers.
			r.net.SetReadOnly(0, true)
			r.clock.Advance(31 * time.Second)
			if c, _, _ := r.cl.TryFallBack(context.Background(), nil); c != nil {
				_ = c.Close()
			}
			if w := r.cl.Stats().Writers; w != nil {
				t.Errorf("Stats.Writers %v after H1 was fenced, want nil", w)
			}
		})
	}
}

// TestFallBackToTheWriterTheClusterFollows: when the pool's host is a writable replica (its
// read_only forgotten) and home is the writer its replicas follow, the fall-back goes on:
// the writer is the one the cluster follows, before the one in use.
func TestFallBackToTheWriterTheClusterFollows(t *testing.T) {
	r := newRig(t, 3, func(o *rigOpts) {
		o.TargetSessionAttrs = attrs.ReadWrite
		o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = 30, 0
	})
	r.net.SetReadOnly(2, true) // H2 and H3 replicate from H1; H2 is writable
	l := r.connect()
	r.down(0)
	l.fail()
	l.on(1)
	r.up(0)
	r.clock.Advance(31 * time.Second)
	c, _, err := r.cl.TryFallBack(context.Background(), nil)
	if c == nil || err != nil {
		t.Fatalf("TryFallBack = %v, %v; want the return to H1, which H2 and H3 follow", c, err)
	}
	_ = c.Close()
	if r.cl.Active() != 0 || len(r.events(failover.EventFallBack)) != 1 {
		t.Fatalf("pool on H%d, %d fall-backs; want H1, 1", r.cl.Active()+1, len(r.events(failover.EventFallBack)))
	}
	tw := r.events(failover.EventTwoWriters)
	if len(tw) != 1 || tw[0].Host != "H1:3306" || tw[0].From != "H2:3306" {
		t.Fatalf("two-writers events %v, want one naming H1 the writer", tw)
	}
}

// TestJoiningConnectionDoesNotFallBackToASecondWriter: a connection that joins the pool
// while fall-back is due tries the primary first; H1 writable beside the promoted H2, it
// lands on H2, and the pool stays there.
func TestJoiningConnectionDoesNotFallBackToASecondWriter(t *testing.T) {
	for _, target := range []string{attrs.ReadWrite, attrs.Any} {
		t.Run(target, func(t *testing.T) {
			r, _ := twoWriters(t, target, nil)
			r.clock.Advance(31 * time.Second)
			if !r.cl.FallBackDue() {
				t.Fatal("fall-back not due")
			}
			l := r.connect()
			defer l.c.Close()
			l.on(1)
			if fb := r.events(failover.EventFallBack); len(fb) != 0 {
				t.Errorf("fall-back events %v, want none", fb)
			}
			f := r.events(failover.EventFallBackFailed)
			if len(f) != 1 {
				t.Fatalf("fall-back-failed events %v, want one", f)
			}
			wantWriters(t, f[0].Err, "H2:3306", "H1:3306", "H2:3306")
			if r.cl.FallBackDue() {
				t.Error("fall-back still due: the next connection would try H1 again")
			}
			// The next connections go to H2 at once.
			before := r.attemptsOn(0)
			l2 := r.connect()
			defer l2.c.Close()
			l2.on(1)
			if n := r.attemptsOn(0) - before; n != 0 {
				t.Errorf("%d attempts on H1 by the next connection, want 0", n)
			}
		})
	}
}

// TestNewPoolTakesTheWriterTheClusterFollows: a new pool whose first walk reaches H1,
// writable and listed first, looks at the other hosts and goes to H2, which H3 follows;
// once, not for every connection. Without any evidence of whom the replicas follow (no
// privilege to read either), the list decides (H1), and the two writers are reported all
// the same. With targetSessionAttrs any a new pool reads no roles and takes the list's
// first host, as it always did.
func TestNewPoolTakesTheWriterTheClusterFollows(t *testing.T) {
	for _, tc := range []struct {
		name, target string
		deny         bool // neither replica status nor replica hosts readable
		want         int
		look         bool
	}{
		{"read-write", attrs.ReadWrite, false, 1, true},
		{"primary", attrs.Primary, false, 1, true},
		{"read-write, no evidence", attrs.ReadWrite, true, 0, true},
		{"any", attrs.Any, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 3, func(o *rigOpts) { o.TargetSessionAttrs = tc.target })
			replicas(r.net, 3)
			promote(r.net)
			if tc.deny {
				for i := range 3 {
					r.net.DenyReplicaStatus(i, true)
					r.net.DenyReplicaHosts(i, true)
				}
			}
			for range 3 {
				l := r.connect()
				l.on(tc.want)
				_ = l.c.Close()
				r.cl.Release(l.host)
			}
			tw := r.events(failover.EventTwoWriters)
			if !tc.look {
				if len(tw) != 0 || len(r.net.Conns(2)) != 0 {
					t.Fatalf("two-writers events %v, %d sessions to H3; want none (no roles read)", tw, len(r.net.Conns(2)))
				}
				return
			}
			if len(tw) != 1 || tw[0].Host != r.net.Addrs()[tc.want] {
				t.Fatalf("two-writers events %v, want one naming H%d", tw, tc.want+1)
			}
			if n := len(r.net.Conns(2)); n != 1 {
				t.Errorf("%d sessions to H3 over three connections, want 1 (one look)", n)
			}
			sw := r.events(failover.EventSwitch)
			if tc.want == 0 {
				if len(sw) != 0 {
					t.Errorf("switch events %v, want none", sw)
				}
				return
			}
			if len(sw) != 1 || sw[0].From != "H1:3306" || sw[0].Host != "H2:3306" {
				t.Fatalf("switch events %v, want one from H1 to H2", sw)
			}
			wantWriters(t, sw[0].Err, "H2:3306", "H1:3306", "H2:3306")
		})
	}
}

// TestMonitorNeverReturnsBetweenWriters: with probes, the pool on the promoted H2 does
// not return to H1 once H1 has passed its probes for switchBackDelay, writable beside
// H2, and reports the two writers once; the looks cost H3 one session per
// DefaultWriterLookAge at most.
func TestMonitorNeverReturnsBetweenWriters(t *testing.T) {
	for _, target := range []string{attrs.ReadWrite, attrs.Any} {
		t.Run(target, func(t *testing.T) {
			r, _ := monRig(t, 3, func(o *rigOpts) { o.TargetSessionAttrs = target })
			replicas(r.net, 3)
			r.cl.Check(context.Background())
			r.down(0)
			promote(r.net)
			for range 10 {
				r.tick(monInterval)
			}
			if r.cl.Active() != 1 {
				t.Fatalf("H1 down, H2 promoted: pool on H%d, want H2", r.cl.Active()+1)
			}
			h3 := len(r.net.Conns(2))
			r.up(0)
			const rounds = 50 // 10 s, over three times switchBackDelay
			for range rounds {
				r.tick(monInterval)
			}
			if r.cl.Active() != 1 || len(r.events(failover.EventFallBack)) != 0 {
				t.Fatalf("H1 writable beside H2 for 10 s: pool on H%d, %d fall-backs; want H2, none",
					r.cl.Active()+1, len(r.events(failover.EventFallBack)))
			}
			tw := r.events(failover.EventTwoWriters)
			if len(tw) != 1 || tw[0].Host != "H2:3306" {
				t.Fatalf("two-writers events %v, want one naming H2", tw)
			}
			looks := len(r.net.Conns(2)) - h3 - 1 // less H3's new probe connection, if any
			if max := int(rounds*monInterval/cluster.DefaultWriterLookAge) + 1; looks > max {
				t.Errorf("%d looks (sessions to H3) in %v, want at most %d", looks, rounds*monInterval, max)
			}
			// H1 fenced: the pool stays, and the two writers are over.
			r.net.SetReadOnly(0, true)
			for range 2 {
				r.tick(monInterval)
			}
			if w := r.cl.Stats().Writers; target == attrs.ReadWrite && w != nil {
				t.Errorf("Stats.Writers %v after H1 was fenced, want nil", w)
			}
		})
	}
}

// TestMonitorMovesToTheWriterTheClusterFollows: the pool on H1, which stays writable, while
// H2 is promoted and H3 re-pointed at it (H1 cut off from its replicas, not from the
// pool): the probes find H2 writable beside H1, and once H2 has passed them for
// switchBackDelay the pool moves to it, the writer the cluster follows.
func TestMonitorMovesToTheWriterTheClusterFollows(t *testing.T) {
	r, _ := monRig(t, 3, func(o *rigOpts) { o.TargetSessionAttrs = attrs.ReadWrite })
	replicas(r.net, 3)
	r.cl.Check(context.Background())
	promote(r.net)
	r.tick(monInterval)
	if r.cl.Active() != 0 {
		t.Fatalf("pool on H%d at once, want H1 until H2 has passed its probes for switchBackDelay", r.cl.Active()+1)
	}
	for range 20 { // 4 s
		r.tick(monInterval)
	}
	if r.cl.Active() != 1 {
		t.Fatalf("pool on H%d, want H2, which H3 follows", r.cl.Active()+1)
	}
	sw := r.events(failover.EventSwitch)
	if len(sw) != 1 || sw[0].From != "H1:3306" {
		t.Fatalf("switch events %v, want one from H1", sw)
	}
	wantWriters(t, sw[0].Err, "H2:3306", "H1:3306", "H2:3306")
}

// TestMultiWriterClustersHaveNoTwoWriters: every Galera node and every member of a
// multi-primary group is writable by design: no look, no report, and fall-back goes on as
// it always did.
func TestMultiWriterClustersHaveNoTwoWriters(t *testing.T) {
	for _, kind := range []string{"galera", "group"} {
		t.Run(kind, func(t *testing.T) {
			r := newRig(t, 3, func(o *rigOpts) {
				o.TargetSessionAttrs = attrs.ReadWrite
				o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = 30, 0
			})
			for i := range 3 {
				if kind == "galera" {
					r.net.Galera(i, "synced", "uuid-1", 3)
				} else {
					r.net.GroupMember(i, "ONLINE", 3, 0, true)
				}
			}
			l := r.connect()
			l.on(0)
			if n := len(r.net.Conns(2)); n != 0 {
				t.Errorf("%d sessions to H3 at the first connection, want 0 (no look)", n)
			}
			r.down(0)
			l.fail()
			l.on(1)
			r.up(0)
			r.clock.Advance(31 * time.Second)
			c, _, err := r.cl.TryFallBack(context.Background(), nil)
			if c == nil || err != nil {
				t.Fatalf("TryFallBack = %v, %v; want the return to H1", c, err)
			}
			_ = c.Close()
			if tw := r.events(failover.EventTwoWriters); len(tw) != 0 || r.cl.Stats().Writers != nil {
				t.Errorf("two-writers events %v, Stats.Writers %v; want none", tw, r.cl.Stats().Writers)
			}
		})
	}
}

// TestLookBeforeAPromotionIsNotUsed: the look a new pool made at its first connection
// (H1 the one writer) is still young when, H1 killed and H2 promoted, H1 comes back
// writable and the fall-back falls due: it is out of date (H2's role changed since), and
// the fall-back looks again and is refused.
func TestLookBeforeAPromotionIsNotUsed(t *testing.T) {
	r := newRig(t, 3, func(o *rigOpts) {
		o.TargetSessionAttrs = attrs.ReadWrite
		o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = 1, 0
	})
	replicas(r.net, 3)
	l := r.connect() // looks: H1 the one writer
	l.on(0)
	r.down(0)
	promote(r.net)
	l.fail()
	l.on(1)
	r.up(0)
	r.clock.Advance(1100 * time.Millisecond) // within DefaultWriterLookAge of the first look
	c, _, err := r.cl.TryFallBack(context.Background(), nil)
	if c != nil {
		t.Fatalf("fell back to H1 on the look made before the promotion")
	}
	wantWriters(t, err, "H2:3306", "H1:3306", "H2:3306")
}

// TestMonitorLookBeforeAPromotionIsNotUsed: as TestLookBeforeAPromotionIsNotUsed, with
// probes: the pool's first look (H1 the one writer) is still young when H1, back
// writable beside the promoted H2, has passed its probes for switchBackDelay; the monitor
// does not return on it.
func TestMonitorLookBeforeAPromotionIsNotUsed(t *testing.T) {
	r, _ := monRig(t, 3, func(o *rigOpts) {
		o.TargetSessionAttrs = attrs.ReadWrite
		o.FailoverDelay, o.SwitchBackDelay = 200*time.Millisecond, 400*time.Millisecond
	})
	replicas(r.net, 3)
	l := r.connect() // looks: H1 the one writer
	defer l.c.Close()
	r.down(0)
	promote(r.net)
	for range 4 {
		r.tick(monInterval)
	}
	if r.cl.Active() != 1 {
		t.Fatalf("pool on H%d, want H2", r.cl.Active()+1)
	}
	r.up(0)
	for range 6 { // 1.2 s: H1 has passed its probes for switchBackDelay, 2 s after the first look
		r.tick(monInterval)
	}
	if r.cl.Active() != 1 || len(r.events(failover.EventFallBack)) != 0 {
		t.Fatalf("pool on H%d, %d fall-backs; want H2, none", r.cl.Active()+1, len(r.events(failover.EventFallBack)))
	}
}
