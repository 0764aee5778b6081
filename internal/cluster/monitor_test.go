package cluster_test

import (
	"bytes"
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// The monitor tests drive the monitor by hand: one cl.Check per round, the fake clock
// advanced between rounds (Start is used only by TestMonitorStartClose).
const (
	monInterval  = 200 * time.Millisecond
	monFailDelay = time.Second
	monBackDelay = 3 * time.Second
)

// abortLog records the calls of Env.Abort.
type abortLog struct {
	mu    sync.Mutex
	hosts []int
}

func (a *abortLog) add(h int) {
	a.mu.Lock()
	a.hosts = append(a.hosts, h)
	a.mu.Unlock()
}

func (a *abortLog) get() []int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]int(nil), a.hosts...)
}

// monRig is a rig with the monitor configured (CheckInterval 200ms, FailoverDelay 1s,
// SwitchBackDelay 3s) and Abort recorded. The monitor is not started.
func monRig(t *testing.T, hosts int, set func(*rigOpts)) (*rig, *abortLog) {
	t.Helper()
	a := &abortLog{}
	r := newRig(t, hosts, func(o *rigOpts) {
		o.CheckInterval, o.FailoverDelay, o.SwitchBackDelay = monInterval, monFailDelay, monBackDelay
		o.Abort = a.add
		if set != nil {
			set(o)
		}
	})
	t.Cleanup(func() {
		r.cl.Close()
		// Should Close leave a probe connection open (TestMonitorCloseWithoutStart
		// checks it does not), close it here: an open fake connection keeps its sqlmock
		// DSN registered, and a later test's fake net may collide with it.
		for _, c := range r.net.AllConns() {
			if c.Closes() == 0 {
				_ = c.Close()
			}
		}
	})
	return r, a
}

// tick advances the fake clock by d and runs one monitor round.
func (r *rig) tick(d time.Duration) {
	r.clock.Advance(d)
	r.cl.Check(context.Background())
}

// stat returns host's entry of Stats.
func (r *rig) stat(host int) failover.HostStats {
	r.t.Helper()
	addr := r.net.Addrs()[host]
	for _, h := range r.cl.Stats().Hosts {
		if h.Addr == addr {
			return h
		}
	}
	r.t.Fatalf("no Stats entry for %s", addr)
	return failover.HostStats{}
}

// states returns the states that EventHostState reported for host, in order.
func (r *rig) states(host int) []failover.HostState {
	var out []failover.HostState
	for _, e := range r.events(failover.EventHostState) {
		if e.Host == r.net.Addrs()[host] {
			out = append(out, e.State)
		}
	}
	return out
}

// attemptsOn counts the connection attempts (EventConnect) made on host.
func (r *rig) attemptsOn(host int) int {
	n := 0
	for _, e := range r.events(failover.EventConnect) {
		if e.Host == r.net.Addrs()[host] {
			n++
		}
	}
	return n
}

// TestMonitorDetectsDeadActiveHost: the first failed probe makes the active host suspect;
// once its probes have failed for FailoverDelay the pool moves, the switch and the abort
// are reported, and Env.Abort closes the old host's connections, once.
func TestMonitorDetectsDeadActiveHost(t *testing.T) {
	r, ab := monRig(t, 3, nil)
	r.down(0)
	r.cl.Check(context.Background()) // t=0: the first failed probe
	if got := r.stat(0).State; got != failover.HostSuspect {
		t.Fatalf("H1 after one failed probe: %v, want suspect", got)
	}
	if got := r.states(0); !slices.Equal(got, []failover.HostState{failover.HostSuspect}) {
		t.Fatalf("H1 state events %v, want [suspect]", got)
	}
	if pe := r.events(failover.EventProbe); len(pe) != 1 || pe[0].Host != "H1:3306" || !errors.Is(pe[0].Err, syscall.ECONNREFUSED) {
		t.Fatalf("probe events %v, want one failed probe of H1 (connection refused)", pe)
	}
	if r.cl.Active() != 0 {
		t.Fatalf("pool on H%d after one failed probe, want H1", r.cl.Active()+1)
	}
	for i := 1; i <= 4; i++ { // t = 200ms .. 800ms
		r.tick(monInterval)
		if r.cl.Active() != 0 || len(r.events(failover.EventSwitch)) != 0 || len(ab.get()) != 0 {
			t.Fatalf("t=%v: pool on H%d, %d switches, aborts %v: moved before FailoverDelay",
				time.Duration(i)*monInterval, r.cl.Active()+1, len(r.events(failover.EventSwitch)), ab.get())
		}
	}
	r.tick(monInterval) // t=1s: FailoverDelay since the first failed probe
	if r.cl.Active() != 1 {
		t.Fatalf("pool on H%d after 1s of failed probes, want H2", r.cl.Active()+1)
	}
	sw := r.events(failover.EventSwitch)
	if len(sw) != 1 || sw[0].From != "H1:3306" || sw[0].Host != "H2:3306" || sw[0].Err == nil || errors.Is(sw[0].Err, driver.ErrBadConn) {
		t.Fatalf("switch events %v, want one H1 -> H2 with the probe's error (not ErrBadConn)", sw)
	}
	if ae := r.events(failover.EventAbort); len(ae) != 1 || ae[0].Host != "H1:3306" {
		t.Fatalf("abort events %v, want one for H1", ae)
	}
	if got := ab.get(); !slices.Equal(got, []int{0}) {
		t.Fatalf("Env.Abort calls %v, want [0]", got)
	}
	if got := r.states(0); !slices.Equal(got, []failover.HostState{failover.HostSuspect, failover.HostDown}) {
		t.Fatalf("H1 state events %v, want [suspect down]", got)
	}
	s := r.cl.Stats()
	if s.Active != "H2:3306" || s.Primary != "H1:3306" || s.Failovers != 1 || s.Aborted != 1 {
		t.Fatalf("stats: active %s primary %s failovers %d aborted %d, want H2, H1, 1, 1", s.Active, s.Primary, s.Failovers, s.Aborted)
	}
	if h1 := r.stat(0); h1.State != failover.HostDown || h1.LastError == nil || !strings.Contains(h1.LastError.Error(), "H1:3306") {
		t.Fatalf("H1 stats %+v, want down with the probe's error", h1)
	}
	// Staying down: no second switch, no second abort.
	for i := 0; i < 10; i++ {
		r.tick(monInterval)
	}
	if got := ab.get(); !slices.Equal(got, []int{0}) || len(r.events(failover.EventSwitch)) != 1 || r.cl.Active() != 1 {
		t.Fatalf("after 2 more seconds: aborts %v, %d switches, pool on H%d; want [0], 1, H2",
			got, len(r.events(failover.EventSwitch)), r.cl.Active()+1)
	}
}

// TestMonitorPassingProbeRestartsFailureRun: FailoverDelay counts continuous failure
// only: a passing probe in between starts the count again.
func TestMonitorPassingProbeRestartsFailureRun(t *testing.T) {
	r, ab := monRig(t, 3, nil)
	r.down(0)
	r.cl.Check(context.Background()) // t=0 fails
	r.tick(monInterval)              // 200ms fails
	r.tick(monInterval)              // 400ms fails
	r.up(0)
	r.tick(monInterval) // 600ms passes
	if got := r.stat(0).State; got != failover.HostUp {
		t.Fatalf("H1 after a passing probe: %v, want up", got)
	}
	r.down(0)
	r.tick(monInterval) // 800ms: a new run starts
	for _, at := range []string{"1s", "1.2s", "1.4s", "1.6s"} {
		r.tick(monInterval)
		if r.cl.Active() != 0 {
			t.Fatalf("t=%s: pool on H%d; the run started at 800ms, so not before 1.8s", at, r.cl.Active()+1)
		}
	}
	r.tick(monInterval) // 1.8s
	if r.cl.Active() != 1 || !slices.Equal(ab.get(), []int{0}) {
		t.Fatalf("t=1.8s: pool on H%d, aborts %v; want H2, [0]", r.cl.Active()+1, ab.get())
	}
}

// TestMonitorSwitchBack: away from the primary, the pool returns only after
// SwitchBackDelay of continuous passing probes; a flapping primary never brings it back;
// the query and time triggers of fall-back are off while probing.
func TestMonitorSwitchBack(t *testing.T) {
	r, _ := monRig(t, 3, nil)
	ctx := context.Background()
	r.down(0)
	r.cl.Check(ctx)
	for i := 0; i < 5; i++ {
		r.tick(monInterval)
	}
	if r.cl.Active() != 1 {
		t.Fatalf("detection: pool on H%d, want H2", r.cl.Active()+1)
	}
	noFallBack := func(when string) {
		t.Helper()
		if r.cl.Active() != 1 || len(r.events(failover.EventFallBack)) != 0 {
			t.Fatalf("%s: pool on H%d, %d fall-backs; want H2, none", when, r.cl.Active()+1, len(r.events(failover.EventFallBack)))
		}
		if r.cl.FallBackDue() {
			t.Fatalf("%s: FallBackDue with probing on", when)
		}
	}

	// Flapping: up and down on alternate rounds, for 8 s.
	for i := 0; i < 40; i++ {
		if i%2 == 0 {
			r.up(0)
		} else {
			r.down(0)
		}
		r.tick(monInterval)
		noFallBack(fmt.Sprintf("flapping round %d", i))
	}
	r.clock.Advance(time.Hour) // secondsBeforeRetryMaster=30 is ignored
	noFallBack("an hour later")
	for i := 0; i < 100; i++ { // queriesBeforeRetryMaster=50 too
		r.cl.NoteStatement()
	}
	noFallBack("after 100 statements")
	if c, h, err := r.cl.TryFallBack(ctx, nil); c != nil || h != -1 || err != nil {
		t.Fatalf("TryFallBack with probing on: %v H%d %v, want nothing attempted", c, h+1, err)
	}

	// Stable: the first passing probe starts the 3 s.
	r.up(0)
	r.tick(monInterval)
	for i := 1; i < 15; i++ { // 200ms .. 2.8s after the first passing probe
		r.tick(monInterval)
		noFallBack(fmt.Sprintf("%v of passing probes", time.Duration(i)*monInterval))
	}
	r.tick(monInterval) // 3s
	fb := r.events(failover.EventFallBack)
	if r.cl.Active() != 0 || len(fb) != 1 || fb[0].From != "H2:3306" || fb[0].Host != "H1:3306" {
		t.Fatalf("after 3s of passing probes: pool on H%d, fall-backs %v; want H1, one H2 -> H1", r.cl.Active()+1, fb)
	}
	if s := r.cl.Stats(); s.FallBacks != 1 || s.Failovers != 1 {
		t.Fatalf("stats: %d fall-backs, %d failovers; want 1, 1", s.FallBacks, s.Failovers)
	}
}

// TestMonitorNoTarget: with every other host down too, the pool stays on the dead
// primary (no switch, no abort) and keeps probing; the first host to come back takes it.
func TestMonitorNoTarget(t *testing.T) {
	r, ab := monRig(t, 3, nil)
	r.down(0, 1, 2)
	r.cl.Check(context.Background())
	for i := 0; i < 10; i++ {
		r.tick(monInterval)
	}
	if r.cl.Active() != 0 || len(r.events(failover.EventSwitch)) != 0 || len(ab.get()) != 0 || len(r.events(failover.EventAbort)) != 0 {
		t.Fatalf("all down: pool on H%d, %d switches, aborts %v", r.cl.Active()+1, len(r.events(failover.EventSwitch)), ab.get())
	}
	for h := 0; h < 3; h++ {
		if st := r.stat(h).State; st != failover.HostDown {
			t.Fatalf("H%d after 2s of failed probes: %v, want down", h+1, st)
		}
	}
	r.up(2)
	r.tick(monInterval)
	if r.cl.Active() != 2 || !slices.Equal(ab.get(), []int{0}) {
		t.Fatalf("H3 back: pool on H%d, aborts %v; want H3, [0]", r.cl.Active()+1, ab.get())
	}
}

// TestMonitorRoleProbe: with a read-write target the probe is the role query; a primary
// turned read-only is left at the next round, without FailoverDelay, and without an
// abort (its connections move at their next safe point).
func TestMonitorRoleProbe(t *testing.T) {
	r, ab := monRig(t, 3, func(o *rigOpts) { o.TargetSessionAttrs = attrs.ReadWrite })
	r.net.SetReadOnly(1, true) // replicas, not writers beside H1
	r.net.SetReadOnly(2, true)
	r.cl.Check(context.Background())
	for h := 0; h < 3; h++ {
		if r.net.RoleChecks(h) != 1 || r.net.Probes(h) != 0 {
			t.Fatalf("H%d: %d role checks, %d SELECT 1; want 1, 0", h+1, r.net.RoleChecks(h), r.net.Probes(h))
		}
	}
	r.net.SetReadOnly(0, true) // a switchover: H1 read-only, then H2 the writer
	r.tick(monInterval)
	if r.cl.Active() != 0 {
		t.Fatalf("H1 read-only, no writer: pool on H%d, want it to stay on H1", r.cl.Active()+1)
	}
	r.net.SetReadOnly(1, false)
	r.tick(monInterval)
	if r.cl.Active() != 1 {
		t.Fatalf("H1 read-only, H2 writable: pool on H%d, want H2 at once", r.cl.Active()+1)
	}
	sw := r.events(failover.EventSwitch)
	var re *cluster.RoleError
	if len(sw) != 1 || sw[0].From != "H1:3306" || !errors.As(sw[0].Err, &re) || re.Role != failover.RoleStandby {
		t.Fatalf("switch events %v, want one from H1 with a RoleError (standby)", sw)
	}
	if len(ab.get()) != 0 || len(r.events(failover.EventAbort)) != 0 {
		t.Fatalf("aborts %v for a demoted (not dead) host", ab.get())
	}
	if h1 := r.stat(0); h1.State != failover.HostWrongRole || h1.Role != failover.RoleStandby {
		t.Fatalf("H1 stats: %v %v, want wrong-role standby", h1.State, h1.Role)
	}
	for h := 0; h < 3; h++ {
		if r.net.RoleChecks(h) != 3 || r.net.Probes(h) != 0 {
			t.Fatalf("H%d after three rounds: %d role checks, %d SELECT 1; want 3, 0", h+1, r.net.RoleChecks(h), r.net.Probes(h))
		}
	}
}

// TestMonitorRoleRegainedWaitsSwitchBackDelay: a primary that becomes writable again is
// returned to only after SwitchBackDelay of qualifying probes, as one that comes back up
// (probes that reach a read-only primary are not a run of passing probes for the
// read-write target); a primary whose read_only flaps never takes the pool back.
func TestMonitorRoleRegainedWaitsSwitchBackDelay(t *testing.T) {
	t.Run("regained", func(t *testing.T) {
		r, _ := monRig(t, 3, func(o *rigOpts) { o.TargetSessionAttrs = attrs.ReadWrite })
		r.cl.Check(context.Background())
		r.net.SetReadOnly(0, true)
		r.tick(monInterval)
		if r.cl.Active() != 1 {
			t.Fatalf("H1 read-only: pool on H%d, want H2", r.cl.Active()+1)
		}
		for i := 0; i < 25; i++ { // 5 s read-only (reachable)
			r.tick(monInterval)
		}
		r.net.SetReadOnly(0, false)
		r.tick(monInterval)
		if r.cl.Active() != 1 {
			t.Fatalf("H1 writable again for 0s (after 5s read-only): pool back on H%d at once (fall-backs %d), "+
				"want it on H2 until SwitchBackDelay (3s) of qualifying probes", r.cl.Active()+1, len(r.events(failover.EventFallBack)))
		}
		for i := 1; i < 15; i++ {
			r.tick(monInterval)
			if r.cl.Active() != 1 {
				t.Fatalf("H1 writable for %v: pool back on H%d, want not before 3s", time.Duration(i)*monInterval, r.cl.Active()+1)
			}
		}
		r.tick(monInterval)
		if r.cl.Active() != 0 {
			t.Fatalf("H1 writable for 3s: pool on H%d, want H1", r.cl.Active()+1)
		}
	})
	t.Run("flapping", func(t *testing.T) {
		r, _ := monRig(t, 3, func(o *rigOpts) { o.TargetSessionAttrs = attrs.ReadWrite })
		r.cl.Check(context.Background())
		for i := 0; i < 30; i++ { // read_only ON and OFF on alternate rounds, for 6 s
			r.net.SetReadOnly(0, i%2 == 0)
			r.tick(monInterval)
		}
		sw, fb := len(r.events(failover.EventSwitch)), len(r.events(failover.EventFallBack))
		if sw != 1 || fb != 0 {
			t.Fatalf("read_only flapping for 6s: %d switches, %d fall-backs (pool now on H%d); want 1 switch (leaving H1), no fall-back",
				sw, fb, r.cl.Active()+1)
		}
	})
}

// TestMonitorProbeConnReuse: each host has one long-lived probe connection, used by
// every round; a failed probe closes it and the next round opens a new one.
func TestMonitorProbeConnReuse(t *testing.T) {
	r, _ := monRig(t, 3, nil)
	r.cl.Check(context.Background())
	for i := 0; i < 4; i++ {
		r.tick(monInterval)
	}
	for h := 0; h < 3; h++ {
		cs := r.net.Conns(h)
		// cluster=auto: the first round read the cluster type instead of SELECT 1.
		if n := r.net.Probes(h) + r.net.RoleChecks(h); len(cs) != 1 || cs[0].Closes() != 0 || n != 5 {
			t.Fatalf("H%d after 5 rounds: %d connections (closes %v), %d probes; want 1 open, 5", h+1, len(cs), closes(cs), n)
		}
	}
	// A probe connection that breaks while its host is fine (killed by the server) is
	// replaced in the same round: no failed probe.
	r.net.Conns(1)[0].Broken.Store(true)
	r.tick(monInterval)
	if cs := r.net.Conns(1); len(cs) != 2 || cs[0].Closes() != 1 || cs[1].Closes() != 0 || r.stat(1).State != failover.HostUp {
		t.Fatalf("H2 after its probe connection broke: %d connections, closes %v, %v; want 2, [1 0], up", len(cs), closes(cs), r.stat(1).State)
	}
	r.net.Set(0, nil, mysql.ErrInvalidConn) // accepts new connections, every call on them fails
	r.tick(monInterval)
	if cs := r.net.Conns(0); len(cs) != 2 || cs[0].Closes() != 1 || cs[1].Closes() != 1 {
		t.Fatalf("H1 after a failed probe: %d connections, closes %v; want the old one and one reopened in the same round, both closed", len(cs), closes(cs))
	}
	if got := r.stat(0).State; got != failover.HostSuspect {
		t.Fatalf("H1 after a failed probe on its connection: %v, want suspect", got)
	}
	r.up(0)
	r.tick(monInterval)
	cs := r.net.Conns(0)
	probes := func(h int) int { return r.net.Probes(h) + r.net.RoleChecks(h) } // SELECT 1, or the first round's cluster type
	if len(cs) != 3 || cs[2].Closes() != 0 || probes(0) != 7 {
		t.Fatalf("H1 next round: %d connections, closes %v, %d probes; want 3, [1 1 0], 7", len(cs), closes(cs), probes(0))
	}
	for h, conns := range map[int]int{1: 2, 2: 1} { // H2's broke once and was replaced
		if n := len(r.net.Conns(h)); n != conns || probes(h) != 8 {
			t.Fatalf("H%d: %d connections, %d probes; want %d, 8", h+1, n, probes(h), conns)
		}
	}
	// A new pool connection joining the pool's host is never the probe connection
	// (adoption is for a walk that moves the pool: TestPoolAdoptsTheProbeSession).
	c, h, err := r.cl.Connect(context.Background(), nil)
	if err != nil || h != 0 {
		t.Fatalf("Connect: H%d %v", h+1, err)
	}
	c.Close()
	if n := len(r.net.Conns(0)); n != 4 {
		t.Fatalf("Connect opened no connection of its own (H1 has %d), want 4", n)
	}
}

func closes[T interface{ Closes() int }](cs []T) []int {
	out := make([]int, len(cs))
	for i, c := range cs {
		out[i] = c.Closes()
	}
	return out
}

// monProvider is a HostListProvider under test control.
type monProvider struct {
	mu    sync.Mutex
	hosts []failover.ProvidedHost
	err   error
	calls int
}

func (p *monProvider) set(err error, addrs ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.err, p.hosts = err, nil
	for _, a := range addrs {
		p.hosts = append(p.hosts, failover.ProvidedHost{Addr: a})
	}
	if addrs != nil && len(addrs) == 0 {
		p.hosts = []failover.ProvidedHost{}
	}
}

func (p *monProvider) Hosts(ctx context.Context) ([]failover.ProvidedHost, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls++
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return append([]failover.ProvidedHost(nil), p.hosts...), p.err
}

func statAddrs(s failover.Stats) []string {
	var out []string
	for _, h := range s.Hosts {
		out = append(out, h.Addr)
	}
	return out
}

// TestMonitorProvider: each round polls the provider; a new list (a new primary, a new
// host) is taken, an error or an invalid list keeps the last good one, and both are
// reported as EventHostList.
func TestMonitorProvider(t *testing.T) {
	p := &monProvider{}
	var dialed sync.Map
	var r *rig
	r, _ = monRig(t, 4, func(o *rigOpts) {
		o.Hosts = o.Hosts[:3] // H4 is not in the first list
		o.Provider = p
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			dialed.Store(h, true)
			return r.net.Dial(ctx, h)
		}
	})
	hostList := func() []failover.Event { return r.events(failover.EventHostList) }

	p.set(nil, "H3:3306", "H1:3306", "H2:3306")
	r.cl.Check(context.Background())
	if r.cl.Primary() != 2 || r.cl.Active() != 2 {
		t.Fatalf("list [H3 H1 H2]: primary id %d, active id %d; want 2, 2", r.cl.Primary(), r.cl.Active())
	}
	if hl := hostList(); len(hl) != 1 || hl[0].Err != nil || hl[0].Host != "H3:3306" {
		t.Fatalf("host-list events %v, want one without error naming H3", hl)
	}
	if sw := r.events(failover.EventSwitch); len(sw) != 1 || sw[0].From != "H1:3306" || sw[0].Host != "H3:3306" {
		t.Fatalf("switch events %v, want one H1 -> H3", sw)
	}
	want := []string{"H3:3306", "H1:3306", "H2:3306"}
	if got := statAddrs(r.cl.Stats()); !slices.Equal(got, want) {
		t.Fatalf("stats hosts %v, want %v", got, want)
	}
	// The same list again: nothing to report.
	r.tick(monInterval)
	if n := len(hostList()); n != 1 {
		t.Fatalf("the same list again: %d host-list events, want still 1", n)
	}

	for _, tc := range []struct {
		name    string
		err     error
		addrs   []string
		invalid bool
	}{
		{"provider error", errors.New("config service unavailable"), nil, false},
		{"empty list", nil, []string{}, true},
		{"duplicate", nil, []string{"H1:3306", "h1:3306"}, true},
		{"no port", nil, []string{"H1"}, true},
	} {
		before := len(hostList())
		p.set(tc.err, tc.addrs...)
		r.tick(monInterval)
		hl := hostList()
		if len(hl) != before+1 || hl[before].Err == nil {
			t.Fatalf("%s: host-list events %v, want one more, with an error", tc.name, hl[before:])
		}
		if tc.invalid != errors.Is(hl[before].Err, cluster.ErrInvalidHostList) {
			t.Fatalf("%s: %v: errors.Is ErrInvalidHostList %v, want %v", tc.name, hl[before].Err, !tc.invalid, tc.invalid)
		}
		if tc.err != nil && !errors.Is(hl[before].Err, tc.err) {
			t.Fatalf("%s: %v does not wrap the provider's error", tc.name, hl[before].Err)
		}
		if got := statAddrs(r.cl.Stats()); !slices.Equal(got, want) || r.cl.Primary() != 2 || r.cl.Active() != 2 {
			t.Fatalf("%s: hosts %v primary %d active %d; want %v, 2, 2", tc.name, got, r.cl.Primary(), r.cl.Active(), want)
		}
	}

	// A new host: H4 gets id 3. A list fetched in a round applies at its end (the fetch
	// runs while the hosts are probed), so H4 is probed from the next round on.
	p.set(nil, "H3:3306", "H1:3306", "H2:3306", "H4:3306")
	r.tick(monInterval)
	if r.cl.Host(3) != "H4:3306" || r.net.Probes(3) != 0 {
		t.Fatalf("Host(3) = %q probed %d times, want H4:3306 not probed yet", r.cl.Host(3), r.net.Probes(3))
	}
	r.tick(monInterval)
	if _, ok := dialed.Load(3); !ok || r.net.Probes(3) != 1 {
		t.Fatalf("H4 dialed %v, probed %d times; want dialed with id 3, probed once", ok, r.net.Probes(3))
	}
	if h4 := r.stat(3); h4.State != failover.HostUp {
		t.Fatalf("H4 stats %+v, want up", h4)
	}
	p.set(nil, "H4:3306", "H3:3306")
	r.tick(monInterval)
	if r.cl.Primary() != 3 || r.cl.Active() != 3 || !r.cl.Unfit(0) || !r.cl.Unfit(1) {
		t.Fatalf("list [H4 H3]: primary %d active %d, unfit H1 %v H2 %v; want 3, 3, true, true",
			r.cl.Primary(), r.cl.Active(), r.cl.Unfit(0), r.cl.Unfit(1))
	}
	dialed.Range(func(k, _ any) bool {
		if k.(int) > 3 {
			t.Errorf("dialed id %d", k)
		}
		return true
	})
}

// TestMonitorProbeConnOfRemovedHost: a host that leaves the list is no longer probed,
// and its probe connection is closed rather than kept open until Close.
func TestMonitorProbeConnOfRemovedHost(t *testing.T) {
	p := &monProvider{}
	r, _ := monRig(t, 3, func(o *rigOpts) { o.Provider = p })
	p.set(nil, "H1:3306", "H2:3306", "H3:3306")
	r.cl.Check(context.Background())
	p.set(nil, "H1:3306", "H2:3306")
	r.tick(monInterval) // probes H3 once more: the list fetched meanwhile applies at the end
	r.tick(monInterval)
	if n := r.net.Probes(2) + r.net.RoleChecks(2); n != 2 { // the first read the cluster type
		t.Fatalf("H3 probed %d times, want in the two rounds before the new list applied", n)
	}
	if cs := r.net.Conns(2); len(cs) != 1 || cs[0].Closes() != 1 {
		t.Errorf("H3 left the list two rounds ago: its probe connection closes %v, want [1]", closes(cs))
	}
}

// TestSwitchTo: an operator's switch moves the pool and makes the host the one it
// returns to; an unknown or dead host is refused with the pool left where it is.
func TestSwitchTo(t *testing.T) {
	r := newRig(t, 3, nil) // probing off, secondsBeforeRetryMaster=30
	ctx := context.Background()
	if err := r.cl.SwitchTo(ctx, "h2:3306"); err != nil {
		t.Fatal(err)
	}
	if r.cl.Active() != 1 || r.cl.Primary() != 1 || !r.cl.Home(1) {
		t.Fatalf("after SwitchTo H2: active %d primary %d; want 1, 1", r.cl.Active(), r.cl.Primary())
	}
	if sw := r.events(failover.EventSwitch); len(sw) != 1 || sw[0].From != "H1:3306" || sw[0].Host != "H2:3306" {
		t.Fatalf("switch events %v", sw)
	}
	r.clock.Advance(time.Hour)
	for i := 0; i < 100; i++ {
		r.cl.NoteStatement()
	}
	if r.cl.FallBackDue() {
		t.Fatal("FallBackDue an hour after SwitchTo: the pool would go back to H1")
	}
	if c, _, _ := r.cl.TryFallBack(ctx, nil); c != nil {
		t.Fatal("TryFallBack moved the pool")
	}
	l := r.connect()
	l.on(1)
	l.c.Close()

	err := r.cl.SwitchTo(ctx, "H9:3306")
	if err == nil || !strings.Contains(err.Error(), "H9:3306") || !strings.Contains(err.Error(), "H1:3306, H2:3306, H3:3306") {
		t.Fatalf("SwitchTo an unknown host: %v, want an error naming it and listing the hosts", err)
	}
	r.down(2)
	before := r.attemptsOn(2)
	err = r.cl.SwitchTo(ctx, "H3:3306")
	if err == nil || !strings.Contains(err.Error(), "H3:3306") || !errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("SwitchTo a down host: %v, want an error naming it with the cause", err)
	}
	if r.attemptsOn(2) != before+1 {
		t.Fatalf("SwitchTo made %d attempts on H3, want 1", r.attemptsOn(2)-before)
	}
	if r.cl.Active() != 1 || r.cl.Primary() != 1 || len(r.events(failover.EventSwitch)) != 1 {
		t.Fatalf("after a refused SwitchTo: active %d primary %d, %d switches; want 1, 1, 1",
			r.cl.Active(), r.cl.Primary(), len(r.events(failover.EventSwitch)))
	}
	if err := r.cl.SwitchTo(ctx, "H1:3306"); err != nil || r.cl.Active() != 0 || r.cl.Primary() != 0 {
		t.Fatalf("SwitchTo back to H1: %v, active %d primary %d", err, r.cl.Active(), r.cl.Primary())
	}
}

// TestMonitorStartClose: the monitor goroutine runs on the real clock and Close stops it,
// closing every probe connection; nothing is left running.
func TestMonitorStartClose(t *testing.T) {
	// The fake hosts' sqlmock databases run a connectionOpener each until the test ends.
	leaks := []goleak.Option{goleak.IgnoreCurrent(), goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener")}
	ups := make(chan string, 64)
	r := newRig(t, 3, func(o *rigOpts) {
		o.Clock = nil
		o.CheckInterval = 10 * time.Millisecond
		o.OnEvent = func(e failover.Event) {
			if e.Kind == failover.EventHostState && e.State == failover.HostUp {
				select {
				case ups <- e.Host:
				default:
				}
			}
		}
	})
	r.cl.Start()
	r.cl.Start() // a second Start does nothing
	seen := map[string]bool{}
	timeout := time.After(10 * time.Second)
	for len(seen) < 3 {
		select {
		case h := <-ups:
			seen[h] = true
		case <-timeout:
			t.Fatalf("hosts seen up: %v", seen)
		}
	}
	// Wait for a second round on every host (the connections are reused).
	fake.WaitFor(t, "a second round on every host", func() bool {
		return r.net.Probes(0) >= 2 && r.net.Probes(1) >= 2 && r.net.Probes(2) >= 2
	})
	done := make(chan struct{})
	go func() { r.cl.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("Close did not return")
	}
	all := r.net.AllConns()
	if len(all) != 3 {
		t.Fatalf("%d probe connections, want one per host", len(all))
	}
	for _, c := range all {
		if c.Closes() != 1 {
			t.Fatalf("H%d probe connection closed %d times after Close, want 1", c.Host+1, c.Closes())
		}
	}
	goleak.VerifyNone(t, leaks...)
	probes := r.net.Probes(0)
	r.cl.Check(context.Background()) // after Close: nothing
	if r.net.Probes(0) != probes || len(r.net.AllConns()) != 3 {
		t.Fatal("Check after Close probed")
	}
	r.cl.Close() // twice is fine
}

// TestMonitorCloseWithoutStart: a caller that runs Check from its own scheduler (no
// Start) still gets its probe connections closed by Close.
func TestMonitorCloseWithoutStart(t *testing.T) {
	r, _ := monRig(t, 3, nil)
	r.cl.Check(context.Background())
	r.tick(monInterval)
	all := r.net.AllConns()
	if len(all) != 3 {
		t.Fatalf("%d probe connections, want 3", len(all))
	}
	r.cl.Close()
	if got := closes(all); !slices.Equal(got, []int{1, 1, 1}) {
		t.Errorf("probe connections closed %v times after Close (Check without Start), want [1 1 1]", got)
	}
}

// TestMonitorLogger: the Logger receives the monitor's records (switch, abort, states)
// with the hosts; records carry only host:port values and error texts.
func TestMonitorLogger(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	r, _ := monRig(t, 3, func(o *rigOpts) {
		o.Logger = slog.New(slog.NewTextHandler(&lockedWriter{mu: &mu, w: &buf}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	r.down(0)
	r.cl.Check(context.Background())
	for i := 0; i < 5; i++ {
		r.tick(monInterval)
	}
	if r.cl.Active() != 1 {
		t.Fatalf("pool on H%d, want H2", r.cl.Active()+1)
	}
	c, _, err := r.cl.Connect(context.Background(), nil) // a Debug record for the attempt
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	for _, want := range []string{
		"level=WARN msg=\"mysqlfailover: switch\" event=switch host=H2:3306 from=H1:3306 error=",
		"level=WARN msg=\"mysqlfailover: abort\" event=abort host=H1:3306",
		"event=host-state host=H1:3306 state=suspect",
		"event=host-state host=H1:3306 state=down",
		"event=probe-failed host=H1:3306",
		"level=DEBUG msg=\"mysqlfailover: connect\" event=connect host=H2:3306",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	attr := regexp.MustCompile(`(?:^| )([A-Za-z_.]+)=("(?:[^"\\]|\\.)*"|\S*)`)
	allowed := map[string]bool{"time": true, "level": true, "msg": true, "event": true, "host": true, "from": true, "state": true, "error": true}
	addrs := map[string]bool{"": true}
	for _, a := range r.net.Addrs() {
		addrs[a] = true
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 6 {
		t.Fatalf("%d records:\n%s", len(lines), out)
	}
	for _, line := range lines {
		for _, m := range attr.FindAllStringSubmatch(line, -1) {
			if !allowed[m[1]] {
				t.Errorf("record carries attribute %q: %s", m[1], line)
			}
			if (m[1] == "host" || m[1] == "from") && !addrs[m[2]] {
				t.Errorf("record's %s is %q, not a host:port of the list: %s", m[1], m[2], line)
			}
		}
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  *bytes.Buffer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// TestMonitorActsOnActiveHostFirst: a round acts on the active host's probe as soon as
// it ends; another host slow to open its probe connection (here: blocked until the test
// lets it go) does not hold back leaving a dead active host.
func TestMonitorActsOnActiveHostFirst(t *testing.T) {
	release := make(chan struct{})
	var block atomic.Bool
	var r *rig
	r, _ = monRig(t, 3, func(o *rigOpts) {
		o.HostTimeout = time.Hour // only the test's release ends H3's reopen
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if h == 2 && block.Load() { // H3's reopen hangs
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return r.net.Dial(ctx, h)
		}
	})
	r.cl.Check(context.Background()) // every host up, probe connections open
	r.down(0)
	r.clock.Advance(monInterval)
	r.cl.Check(context.Background()) // H1 suspect
	r.net.Conns(2)[0].Broken.Store(true)
	block.Store(true)
	r.clock.Advance(monFailDelay)
	done := make(chan struct{})
	go func() {
		r.cl.Check(context.Background())
		close(done)
	}()
	guard := time.Now().Add(10 * time.Second) // a hang guard, not a timing assertion
	for r.cl.Active() == 0 {
		select {
		case <-done:
			t.Fatal("the round ended before H3 was released: its probe did not block")
		default:
		}
		if time.Now().After(guard) {
			close(release)
			fake.Await(t, "the round, once H3 was released", done)
			t.Fatal("the pool did not leave H1 while H3's probe was still opening its connection")
		}
		runtime.Gosched()
	}
	close(release)
	fake.Await(t, "the round, once H3 was released", done)
	if r.cl.Active() != 1 {
		t.Fatalf("active H%d, want H2", r.cl.Active()+1)
	}
}

// A host whose probe connection has to be opened again and that answers full
// (1040) is up: it is not made suspect, and with failoverDelay 0 the pool does not leave it.
func TestProbeOfAFullHostPasses(t *testing.T) {
	r, ab := monRig(t, 3, func(o *rigOpts) { o.FailoverDelay = 0 })
	r.net.Set(0, myErr(1040, "08004", "Too many connections"), nil)
	for range 3 {
		r.tick(monInterval)
	}
	if got := r.stat(0).State; got != failover.HostUp {
		t.Fatalf("H1 %v after full answers to its probes, want up", got)
	}
	if r.cl.Active() != 0 || len(r.events(failover.EventSwitch)) != 0 || len(ab.get()) != 0 {
		t.Fatal("the pool left a full host")
	}
}
