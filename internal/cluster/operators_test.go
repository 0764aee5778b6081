package cluster_test

import (
	"context"
	"slices"
	"testing"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
)

// TestDownStaysDownUnderProbes: a host a connection's failed attempt declared down stays
// down while its probes fail: its states are down, then up when it comes back, never
// down, suspect, down.
func TestDownStaysDownUnderProbes(t *testing.T) {
	r, _ := monRig(t, 3, nil)
	ctx := context.Background()
	r.cl.Check(ctx) // every host up
	l := r.connect()
	r.down(0)
	l.fail() // the connection finds H1 dead: down, and the pool on H2
	l.on(1)
	for i := 0; i < 10; i++ { // 2 s of failed probes, past FailoverDelay
		r.tick(monInterval)
	}
	if got := r.states(0); !slices.Equal(got, []failover.HostState{failover.HostUp, failover.HostDown}) {
		t.Fatalf("H1 state events %v, want [up down]: a failing probe of a host found down must not make it suspect", got)
	}
	r.up(0)
	r.tick(monInterval)
	if got := r.states(0); !slices.Equal(got, []failover.HostState{failover.HostUp, failover.HostDown, failover.HostUp}) {
		t.Fatalf("H1 state events %v, want [up down up]", got)
	}
	_ = l.c.Close()
}

// TestMonitorFallBackDuration: the monitor's return home carries how long home had
// passed its probes (switchBackDelay, up to a round more), as a walk's fall-back carries
// the walk's duration.
func TestMonitorFallBackDuration(t *testing.T) {
	r, _ := monRig(t, 3, nil)
	r.down(0)
	r.cl.Check(context.Background())
	for i := 0; i < 5; i++ {
		r.tick(monInterval)
	}
	if r.cl.Active() != 1 {
		t.Fatalf("pool on H%d, want H2", r.cl.Active()+1)
	}
	r.up(0)
	for i := 0; i <= int(monBackDelay/monInterval); i++ {
		r.tick(monInterval)
	}
	fb := r.events(failover.EventFallBack)
	if len(fb) != 1 || r.cl.Active() != 0 {
		t.Fatalf("fall-backs %v, pool on H%d: want one, to H1", fb, r.cl.Active()+1)
	}
	if d := fb[0].Duration; d < monBackDelay || d > monBackDelay+monInterval {
		t.Fatalf("fall-back Duration %v, want switchBackDelay %v (up to a round more)", d, monBackDelay)
	}
}

// TestStatsDeadHostRoleAndWriter: with targetSessionAttrs=read-write, a host that died
// reads RoleUnknown (not its last role) while it is down, and WriterAvailable follows the
// pool: true on the writer, false once the writer is down and no writer is found.
func TestStatsDeadHostRoleAndWriter(t *testing.T) {
	r, _ := monRig(t, 3, func(o *rigOpts) { o.TargetSessionAttrs = attrs.ReadWrite })
	r.net.SetReadOnly(1, true)
	r.net.SetReadOnly(2, true)
	r.cl.Check(context.Background())
	if s := r.cl.Stats(); !s.WriterAvailable || s.Hosts[0].Role != failover.RolePrimary || s.Hosts[1].Role != failover.RoleStandby {
		t.Fatalf("healthy: WriterAvailable %v, roles %v %v; want true, primary, standby", s.WriterAvailable, s.Hosts[0].Role, s.Hosts[1].Role)
	}
	r.down(0)
	for i := 0; i < 6; i++ {
		r.tick(monInterval)
	}
	s := r.cl.Stats()
	if h := s.Hosts[0]; h.State != failover.HostDown || h.Role != failover.RoleUnknown {
		t.Fatalf("dead H1: %v, role %v; want down, unknown", h.State, h.Role)
	}
	if s.WriterAvailable {
		t.Fatalf("WriterAvailable with the writer dead and only standbys: %+v", s)
	}
}

// TestWriterAvailableAny: with targetSessionAttrs=any no role is read; the pool has a
// writer on the list's primary, and not on a secondary where failOverReadOnly makes
// the sessions read-only (with failOverReadOnly=false it may).
func TestWriterAvailableAny(t *testing.T) {
	for _, foro := range []bool{true, false} {
		r := newRig(t, 3, func(o *rigOpts) { o.FailOverReadOnly = foro })
		l := r.connect()
		if !r.cl.Stats().WriterAvailable {
			t.Fatalf("failOverReadOnly=%v: no writer on the primary", foro)
		}
		r.down(0)
		l.fail()
		l.on(1)
		if got := r.cl.Stats().WriterAvailable; got == foro {
			t.Fatalf("failOverReadOnly=%v, pool on H2: WriterAvailable %v", foro, got)
		}
		_ = l.c.Close()
		r.cl.Close()
	}
}

// TestStatsActiveWhileNoHostServes: Stats.Active names the host the pool uses, and no
// host while it uses none: with targetSessionAttrs=read-write the writer died and the
// standbys do not qualify, so the pool is nowhere (Active "", not the dead writer); once
// the writer answers again, it is the active host again.
func TestStatsActiveWhileNoHostServes(t *testing.T) {
	r, _ := monRig(t, 3, func(o *rigOpts) { o.TargetSessionAttrs = attrs.ReadWrite })
	r.net.SetReadOnly(1, true)
	r.net.SetReadOnly(2, true)
	r.cl.Check(context.Background())
	h1 := r.cl.Host(0)
	if s := r.cl.Stats(); s.Active != h1 {
		t.Fatalf("healthy: Active %q, want %q", s.Active, h1)
	}
	r.down(0)
	for i := 0; i < 6; i++ {
		r.tick(monInterval)
	}
	if s := r.cl.Stats(); s.Active != "" || s.Hosts[0].State != failover.HostDown {
		t.Fatalf("writer dead, no other writer: Active %q, H1 %v; want \"\", down", s.Active, s.Hosts[0].State)
	}
	r.up(0)
	for i := 0; i < 6; i++ {
		r.tick(monInterval)
	}
	if s := r.cl.Stats(); s.Active != h1 {
		t.Fatalf("writer back: Active %q, want %q", s.Active, h1)
	}
}
