package cluster_test

import (
	"context"
	"database/sql/driver"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// pool is a test Env.Borrow: it lends the session of a host it holds (one fake
// connection per host, none lent while busy) and records every giveBack.
type pool struct {
	mu     sync.Mutex
	idle   map[int]*fake.Conn
	busy   bool   // every session is in use: nothing is lent
	backs  []bool // giveBack's broken, in order
	lentTo []int  // the hosts lent to, in order
}

func (p *pool) borrow(host int) (driver.Conn, func(broken bool)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.idle[host]
	if c == nil || p.busy {
		return nil, nil
	}
	p.lentTo = append(p.lentTo, host)
	return c, func(broken bool) {
		p.mu.Lock()
		p.backs = append(p.backs, broken)
		p.mu.Unlock()
	}
}

func (p *pool) setBusy(b bool) {
	p.mu.Lock()
	p.busy = b
	p.mu.Unlock()
}

func (p *pool) givenBack() []bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]bool(nil), p.backs...)
}

// lendRig is a monitor rig with 2 hosts whose pool holds one idle session on host 0
// (the primary), none on host 1 (a replica that serves no reads).
func lendRig(t *testing.T) (*rig, *pool) {
	t.Helper()
	p := &pool{idle: map[int]*fake.Conn{}}
	r, _ := monRig(t, 2, func(o *rigOpts) { o.Borrow = p.borrow })
	c, err := r.net.Dial(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	p.idle[0] = c.(*fake.Conn)
	t.Cleanup(func() { _ = c.Close() })
	return r, p
}

// TestProbeBorrowsIdlePooledSession: a host where the pool holds an idle session is
// probed on it, with no probe session of the monitor's own (no dial), and the session
// goes back unbroken; a host where the pool holds none gets a probe session of its own,
// kept from one probe to the next. Stats say which.
func TestProbeBorrowsIdlePooledSession(t *testing.T) {
	r, p := lendRig(t)
	for range 3 {
		r.tick(monInterval)
	}
	if n := len(r.net.Conns(0)); n != 1 {
		t.Errorf("host 0: %d connections opened, want 1 (the pool's, no probe session)", n)
	}
	if n := len(r.net.Conns(1)); n != 1 {
		t.Errorf("host 1: %d connections opened, want 1 (its probe session, kept)", n)
	}
	if got := p.givenBack(); len(got) != 3 || got[0] || got[1] || got[2] {
		t.Errorf("giveBack calls %v, want 3 unbroken", got)
	}
	h0, h1 := r.stat(0), r.stat(1)
	if h0.ProbeSession || h0.ProbesBorrowed != 3 || h0.ProbesOwn != 0 {
		t.Errorf("host 0 stats: session %v, borrowed %d, own %d; want false, 3, 0", h0.ProbeSession, h0.ProbesBorrowed, h0.ProbesOwn)
	}
	if !h1.ProbeSession || h1.ProbesBorrowed != 0 || h1.ProbesOwn != 3 {
		t.Errorf("host 1 stats: session %v, borrowed %d, own %d; want true, 0, 3", h1.ProbeSession, h1.ProbesBorrowed, h1.ProbesOwn)
	}
	if n := r.cl.Stats().ProbeSessions; n != 1 {
		t.Errorf("ProbeSessions %d, want 1", n)
	}
}

// TestProbeSessionClosedOnceItCanBorrow: while every pooled session of the host is busy
// the probe opens a session of its own; the first probe that can borrow closes it.
func TestProbeSessionClosedOnceItCanBorrow(t *testing.T) {
	r, p := lendRig(t)
	p.setBusy(true)
	r.tick(monInterval)
	conns := r.net.Conns(0)
	if len(conns) != 2 || !r.stat(0).ProbeSession {
		t.Fatalf("busy pool: %d connections to host 0, probe session %v; want 2, true", len(conns), r.stat(0).ProbeSession)
	}
	p.setBusy(false)
	r.tick(monInterval)
	if conns[1].Closes() != 1 {
		t.Errorf("the probe session was closed %d times, want 1", conns[1].Closes())
	}
	if r.stat(0).ProbeSession || r.cl.Stats().ProbeSessions != 1 {
		t.Errorf("after a borrowed probe: host 0 probe session %v, ProbeSessions %d; want false, 1", r.stat(0).ProbeSession, r.cl.Stats().ProbeSessions)
	}
	if len(r.net.Conns(0)) != 2 {
		t.Errorf("%d connections to host 0, want 2", len(r.net.Conns(0)))
	}
}

// TestBrokenBorrowedSessionGivenBackBroken: a probe whose round trip fails on a borrowed
// session gives it back broken (its lender closes it), and, as for a probe session that
// broke without a timeout, runs again on a session of its own: the host stays up.
func TestBrokenBorrowedSessionGivenBackBroken(t *testing.T) {
	r, p := lendRig(t)
	p.idle[0].Broken.Store(true)
	r.tick(monInterval)
	if got := p.givenBack(); len(got) != 1 || !got[0] {
		t.Fatalf("giveBack calls %v, want one broken", got)
	}
	if p.idle[0].Closes() != 0 {
		t.Errorf("the monitor closed the borrowed session (%d): its lender does", p.idle[0].Closes())
	}
	if s := r.stat(0); s.State.String() != "up" || !s.ProbeSession {
		t.Errorf("host 0: %v, probe session %v; want up on a probe session of its own", s.State, s.ProbeSession)
	}
}

// blockingConn is a fake connection whose first query waits for release.
type blockingConn struct {
	*fake.Conn
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func (b *blockingConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	b.once.Do(func() {
		close(b.started)
		<-b.release
	})
	return b.Conn.QueryContext(ctx, q, args)
}

// TestProbeSessionCountedWhileInUse: a probe session counts in Stats while a probe runs
// on it, not only while it is kept between probes (a fleet's count read at any moment).
func TestProbeSessionCountedWhileInUse(t *testing.T) {
	var bc atomic.Pointer[blockingConn]
	var r *rig
	r, _ = monRig(t, 2, func(o *rigOpts) {
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			c, err := r.net.Dial(ctx, h)
			if err != nil || h != 1 || bc.Load() != nil {
				return c, err
			}
			b := &blockingConn{Conn: c.(*fake.Conn), started: make(chan struct{}), release: make(chan struct{})}
			bc.Store(b)
			return b, nil
		}
	})
	done := make(chan struct{})
	go func() {
		r.cl.Check(context.Background())
		close(done)
	}()
	fake.WaitFor(t, "the probe of host 1 to start", func() bool { b := bc.Load(); return b != nil && isClosed(b.started) })
	during := r.stat(1).ProbeSession
	close(bc.Load().release)
	fake.Await(t, "the round", done)
	if !during {
		t.Error("host 1's probe session in use by a probe: ProbeSession false, want true")
	}
}

func isClosed(ch chan struct{}) bool {
	select {
	case <-ch:
		return true
	default:
		return false
	}
}

// TestProbeDialWhenPoolBusyBoundedByWait: a host whose probes ran on pooled sessions
// and whose pooled sessions are now all busy (stuck on a host that froze, say) has no
// probe connection of the monitor's own to wait on: the one the probe opens waits no
// longer than its round trip would have (the probe's wait), not hostTimeout (a frozen
// host accepts a connection and never greets).
func TestProbeDialWhenPoolBusyBoundedByWait(t *testing.T) {
	p := &pool{idle: map[int]*fake.Conn{}}
	var left atomic.Int64
	var r *rig
	r, _ = monRig(t, 2, func(o *rigOpts) {
		o.HostTimeout = time.Hour
		o.Borrow = p.borrow
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if dl, ok := ctx.Deadline(); ok && h == 0 {
				left.Store(int64(time.Until(dl)))
			}
			return r.net.Dial(ctx, h)
		}
	})
	c, err := r.net.Dial(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	p.idle[0] = c.(*fake.Conn)
	t.Cleanup(func() { _ = c.Close() })
	r.tick(monInterval) // borrowed
	p.setBusy(true)
	r.tick(monInterval) // opens a probe connection
	if got := time.Duration(left.Load()); got <= 0 || got > time.Minute {
		t.Errorf("the probe connection's opening had %v, want the probe's wait (well under hostTimeout, 1h)", got)
	}
}

// adoptRig is a monitor rig of 2 hosts whose probes opened their sessions, with a pool
// connection on host 0; marks collects the ProbeMark of each probe dial to host 1, and
// left the time its context had left (hostTimeout 1 h).
func adoptRig(t *testing.T) (r *rig, l *logical, marks *[]*atomic.Bool, left *atomic.Int64) {
	t.Helper()
	marks, left = new([]*atomic.Bool), new(atomic.Int64)
	r, _ = monRig(t, 2, func(o *rigOpts) {
		o.HostTimeout = time.Hour
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if m := cluster.ProbeMark(ctx); m != nil && h == 1 {
				*marks = append(*marks, m)
				if dl, ok := ctx.Deadline(); ok {
					left.Store(int64(time.Until(dl)))
				}
			}
			return r.net.Dial(ctx, h)
		}
	})
	r.tick(monInterval)
	l = r.connect()
	l.on(0)
	t.Cleanup(func() { _ = l.c.Close() })
	if n := len(r.net.Conns(1)); n != 1 || !r.stat(1).ProbeSession {
		t.Fatalf("host 1: %d connections, probe session %v; want its probe session", n, r.stat(1).ProbeSession)
	}
	return r, l, marks, left
}

// TestPoolAdoptsTheProbeSession: the walk that moves the pool to a host where the probes
// keep an idle session, on which a probe passed within watchEvery, takes that session (no
// handshake at the moment a fleet moves); its socket's waits are traffic from then on,
// and the host's next probe opens a session of its own again. A probe session idle for
// longer, or one that fails the ping that precedes its use, is not taken: the walk dials.
func TestPoolAdoptsTheProbeSession(t *testing.T) {
	t.Run("fresh", func(t *testing.T) {
		r, l, marks, _ := adoptRig(t)
		probe := r.net.Conns(1)[0]
		r.down(0)
		l.fail()
		l.on(1)
		if l.c != driver.Conn(probe) || len(r.net.Conns(1)) != 1 {
			t.Fatalf("the walk's session is not the probe's (%d connections to host 1)", len(r.net.Conns(1)))
		}
		if r.stat(1).ProbeSession || len(*marks) != 1 || (*marks)[0].Load() {
			t.Error("the adopted session still counts as the probe session (its socket's waits would not be traffic)")
		}
		r.tick(monInterval)
		if n := len(r.net.Conns(1)); n != 2 || probe.Closes() != 0 {
			t.Errorf("next probe: %d connections to host 1, the adopted one closed %d times; want 2, 0", n, probe.Closes())
		}
	})
	t.Run("stale", func(t *testing.T) {
		r, l, _, _ := adoptRig(t)
		probe := r.net.Conns(1)[0]
		r.clock.Advance(2 * time.Second) // past watchEvery, no probe meanwhile
		r.down(0)
		l.fail()
		l.on(1)
		if n := len(r.net.Conns(1)); n != 2 || l.c == driver.Conn(probe) || !r.stat(1).ProbeSession {
			t.Errorf("stale probe session: %d connections, adopted %v, probe session kept %v; want 2, false, true",
				n, l.c == driver.Conn(probe), r.stat(1).ProbeSession)
		}
	})
	t.Run("broken", func(t *testing.T) {
		r, l, _, _ := adoptRig(t)
		probe := r.net.Conns(1)[0]
		probe.Broken.Store(true)
		r.down(0)
		_ = l.c.Close()
		noop := func(context.Context, driver.Conn, int) error { return nil } // a set-up that sends nothing
		c, h, err := r.cl.Failover(context.Background(), 0, mysql.ErrInvalidConn, noop)
		if err != nil || h != 1 {
			t.Fatalf("Failover with a broken probe session on host 1: host %d, %v", h, err)
		}
		l.c = c
		if n := len(r.net.Conns(1)); n != 2 || c == driver.Conn(probe) || probe.Closes() != 1 {
			t.Errorf("broken probe session: %d connections, adopted %v, closed %d times; want 2, false, 1", n, c == driver.Conn(probe), probe.Closes())
		}
		for _, e := range r.events(failover.EventConnect) {
			if e.Host == r.net.Addrs()[1] && e.Err != nil {
				t.Errorf("an attempt on host 1 failed (%v): a dead idle probe session is no failure of its host", e.Err)
			}
		}
	})
}

// TestWalkGivesTheProbeSessionBack: a walk that waits for a writer (the primary dead, the
// standby not promoted yet) reads the standby's role on the probes' idle session and
// gives it back when the role does not qualify, pass after pass: the standby takes no
// handshake from the walk, and the probes keep their session (and its mark: its waits
// are the probes', not traffic).
func TestWalkGivesTheProbeSessionBack(t *testing.T) {
	var mark *atomic.Bool
	var r *rig
	r, _ = monRig(t, 2, func(o *rigOpts) {
		o.TargetSessionAttrs = attrs.ReadWrite
		o.RetriesAllDown = 3
		o.CalmCheckInterval = 4 * time.Second // a probe session is fresh for watchEvery, 1 s: the three passes
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if m := cluster.ProbeMark(ctx); m != nil && h == 1 {
				mark = m
			}
			return r.net.Dial(ctx, h)
		}
	})
	r.net.SetReadOnly(1, true)
	r.tick(monInterval)
	l := r.connect()
	l.on(0)
	defer l.c.Close()
	var probe *fake.Conn
	for _, c := range r.net.Conns(1) {
		if c.Closes() == 0 {
			probe = c
		}
	}
	if probe == nil || !r.stat(1).ProbeSession {
		t.Fatalf("host 1: open connection %v, probe session %v; want its probe session", probe != nil, r.stat(1).ProbeSession)
	}
	before := len(r.net.Conns(1))
	r.down(0)
	_ = l.c.Close()
	_, _, err := r.cl.Failover(context.Background(), 0, mysql.ErrInvalidConn, nil)
	if err == nil {
		t.Fatal("Failover found a writer; want none (host 1 a standby)")
	}
	if n := len(r.net.Conns(1)) - before; n != 0 || probe.Closes() != 0 {
		t.Errorf("after 3 passes: %d new connections to host 1, its probe session closed %d times; want 0, 0", n, probe.Closes())
	}
	if !r.stat(1).ProbeSession || mark == nil || !mark.Load() {
		t.Errorf("host 1's probe session kept %v, marked %v; want it back with the probes", r.stat(1).ProbeSession, mark != nil && mark.Load())
	}
}

// hookClock is a fake clock that calls onSleep (when set) before each Sleep.
type hookClock struct {
	*fake.Clock
	onSleep func()
}

func (c *hookClock) Sleep(ctx context.Context, d time.Duration) error {
	if c.onSleep != nil {
		c.onSleep()
	}
	return c.Clock.Sleep(ctx, d)
}

// standbyRig is a monitored read-write rig of a primary and a standby (H2, read-only) whose
// probes keep a session on H2, on a clock whose sleeps the test can hook, with a
// connection on H1.
func standbyRig(t *testing.T) (*rig, *hookClock, *logical) {
	t.Helper()
	hc := &hookClock{}
	r, _ := monRig(t, 2, func(o *rigOpts) {
		o.TargetSessionAttrs = attrs.ReadWrite
		hc.Clock = o.Clock.(*fake.Clock)
		o.Clock = hc
	})
	r.net.SetReadOnly(1, true)
	r.tick(monInterval)
	l := r.connect()
	l.on(0)
	return r, hc, l
}

// TestWalkPeeksAtTheStandbys: a walk whose last pass found only a standby (the primary
// dead) reads the standby's role again every DefaultRolePeek of its pause, on the probes'
// idle session, however long it sat idle (here too long for the pool to adopt it: the
// first pass dials): the promotion that comes during the pause is seen at the first
// peek, and the next pass takes the new primary then, not after DefaultPassPause, and
// without another handshake. With monitoring off there is no probe session to peek on:
// the pause is DefaultPassPause (TestAllHostsWrongRoleSaysWhy).
func TestWalkPeeksAtTheStandbys(t *testing.T) {
	r, hc, l := standbyRig(t)
	defer l.c.Close()
	before := len(r.net.Conns(1))
	r.down(0)
	_ = l.c.Close()
	r.clock.Advance(2 * time.Second) // the probe session is stale
	from := len(r.clock.Sleeps())
	hc.onSleep = func() { r.net.SetReadOnly(1, false) } // promoted during the pause
	c, h, err := r.cl.Failover(context.Background(), 0, mysql.ErrInvalidConn, nil)
	hc.onSleep = nil
	if err != nil || h != 1 {
		t.Fatalf("Failover: host %d, %v; want host 1, promoted during the pause", h, err)
	}
	l.c = c
	if got := r.clock.Sleeps()[from:]; !slices.Equal(got, []time.Duration{cluster.DefaultRolePeek}) {
		t.Errorf("the walk slept %v, want one DefaultRolePeek (%v) before the pass that took host 1", got, cluster.DefaultRolePeek)
	}
	if n := len(r.net.Conns(1)) - before; n != 1 {
		t.Errorf("%d new connections to host 1; want 1, the first pass's (the peek and the second pass use the probes' session)", n)
	}
}

// TestWalkPeekIsBounded: a peek whose read hangs (the standby froze after the pass read
// its role) ends at the host's probe wait, closes the probes' session it took, and the
// walk goes on: the next pass takes the host once it is promoted. The caller's context has
// no deadline, so only the peek's own bound ends the read.
func TestWalkPeekIsBounded(t *testing.T) {
	r, hc, l := standbyRig(t)
	defer l.c.Close()
	probeSession := r.net.Conns(1)[len(r.net.Conns(1))-1]
	r.down(0)
	_ = l.c.Close()
	r.clock.Advance(2 * time.Second) // the probe session is stale: the first pass dials
	var sleeps atomic.Int32
	hc.onSleep = func() {
		switch sleeps.Add(1) {
		case 1:
			r.net.HangRoleReads(1, 1) // the first peek's read
		case 2:
			r.net.SetReadOnly(1, false)
		}
	}
	type result struct {
		c   driver.Conn
		h   int
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, h, err := r.cl.Failover(context.Background(), 0, mysql.ErrInvalidConn, nil)
		done <- result{c, h, err}
	}()
	var res result
	select {
	case res = <-done:
	case <-time.After(10 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("the walk still waits on the peek's hung read after 10 s: the peek is not bounded")
	}
	hc.onSleep = nil
	if res.err != nil || res.h != 1 {
		t.Fatalf("Failover: host %d, %v; want host 1, promoted after the hung peek", res.h, res.err)
	}
	l.c = res.c
	if probeSession.Closes() == 0 {
		t.Error("the probes' session whose read hung was not closed")
	}
}

// TestAdoptionOnlyByAWalkThatMoves: once the pool took the probes' session, the probe's
// next opening of one waits no longer than its round trip would have (as when its probes
// borrowed pooled sessions), not hostTimeout; a session that joins the pool's host, and
// the check of a host whose session ended (Recover: does the host take a new session?),
// dial rather than take the probes' idle session.
func TestAdoptionOnlyByAWalkThatMoves(t *testing.T) {
	r, l, _, left := adoptRig(t)
	r.down(0)
	l.fail() // adopts host 1's probe session
	l.on(1)
	r.tick(monInterval)
	if got := time.Duration(left.Load()); got <= 0 || got > time.Minute {
		t.Errorf("the probe connection opened after the adoption had %v, want the probe's wait (well under hostTimeout, 1h)", got)
	}
	if n := len(r.net.Conns(1)); n != 2 || !r.stat(1).ProbeSession {
		t.Fatalf("host 1: %d connections, probe session %v; want 2, true", n, r.stat(1).ProbeSession)
	}
	j := r.connect()
	defer j.c.Close()
	if n := len(r.net.Conns(1)); n != 3 || !r.stat(1).ProbeSession {
		t.Errorf("a session joining the pool's host: host 1 has %d connections, probe session %v; want 3 (dialled), true", n, r.stat(1).ProbeSession)
	}
	c, h, err := r.cl.Recover(context.Background(), 1, mysql.ErrInvalidConn, nil)
	if err != nil || h != 1 {
		t.Fatalf("Recover: host %d, %v", h, err)
	}
	defer c.Close()
	if n := len(r.net.Conns(1)); n != 4 || !r.stat(1).ProbeSession {
		t.Errorf("the check: host 1 has %d connections, probe session %v; want 4 (dialled), true", n, r.stat(1).ProbeSession)
	}
}
