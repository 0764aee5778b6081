package cluster_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

const stormConns = 64

type stormResult struct {
	c   driver.Conn
	h   int
	err error
}

// stormRig is a 3-host rig whose dials are counted per host; the first dial (the
// leader's) waits until release is called.
type stormRig struct {
	*rig
	dials   [3]atomic.Int32
	gate    chan struct{}
	once    sync.Once
	blocked atomic.Bool
	// h1, wait are H1's Stats entry and the clock when every caller had reported the
	// failure and the leader's first dial was held.
	h1   failover.HostStats
	wait time.Time
}

func newStormRig(t *testing.T) *stormRig {
	s := &stormRig{gate: make(chan struct{})}
	s.rig = newRig(t, 3, func(o *rigOpts) {
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			s.dials[h].Add(1)
			if s.blocked.CompareAndSwap(false, true) {
				<-s.gate
			}
			return s.net.Dial(ctx, h)
		}
	})
	return s
}

func (s *stormRig) release() { s.once.Do(func() { close(s.gate) }) }

func (s *stormRig) counts() [3]int32 {
	return [3]int32{s.dials[0].Load(), s.dials[1].Load(), s.dials[2].Load()}
}

// storm makes stormConns logical connections on H1 report a communication error at the
// same time, holds the leader's first dial until the 63 others wait for its walk, and
// returns what each Failover returned.
func (s *stormRig) storm(t *testing.T) []stormResult {
	t.Helper()
	defer s.release()
	results := make([]stormResult, stormConns)
	ctx := fake.Context(t)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			c, h, err := s.cl.Failover(ctx, 0, mysql.ErrInvalidConn, nil)
			results[i] = stormResult{c, h, err}
		}()
	}
	close(start)
	fake.WaitFor(t, "the leader's first dial", s.blocked.Load)
	fake.WaitFor(t, "63 followers waiting for the leader's walk", func() bool { return cluster.FlightWaiters(s.cl) == stormConns-1 })
	s.h1, s.wait = s.stat(0), s.clock.Now()
	s.release()
	fake.Wait(t, "every connection's Failover", &wg)
	return results
}

// TestStormOneWalk: 64 connections see H1 fail at once: one walk (the leader's) finds
// H2, H1 gets no attempt from the followers, and each follower opens its own connection
// to H2 after a jitter below DefaultMaxJitter.
func TestStormOneWalk(t *testing.T) {
	s := newStormRig(t)
	s.down(0)
	res := s.storm(t)
	for i, r := range res {
		if r.err != nil || r.h != 1 || r.c == nil {
			t.Fatalf("caller %d: H%d %v, want a connection on H2", i, r.h+1, r.err)
		}
		r.c.Close()
	}
	d := s.counts()
	if d[0] > 2 || d[1] != stormConns || d[2] != 0 {
		t.Fatalf("dials per host %v, want H1 at most 2, H2 %d (1 leader + %d followers), H3 0", d, stormConns, stormConns-1)
	}
	t.Logf("dials per host %v", d)
	sleeps := s.clock.Sleeps()
	if len(sleeps) != stormConns-1 {
		t.Fatalf("%d sleeps, want %d follower jitters (and no pause between passes)", len(sleeps), stormConns-1)
	}
	var spread time.Duration
	for _, j := range sleeps {
		if j < 0 || j >= cluster.DefaultMaxJitter || j >= time.Duration(stormConns-1)*cluster.DefaultFollowerJitter {
			t.Fatalf("jitter %v outside [0, min(DefaultMaxJitter, 63 x DefaultFollowerJitter))", j)
		}
		spread = max(spread, j)
	}
	if spread == 0 {
		t.Fatalf("63 jitters all 0: %v", sleeps)
	}
	if st := s.cl.Stats(); st.Failovers != 1 || len(s.events(failover.EventSwitch)) != 1 || st.Active != "H2:3306" {
		t.Fatalf("failovers %d, %d switch events, active %s; want 1, 1, H2", st.Failovers, len(s.events(failover.EventSwitch)), st.Active)
	}
	if n := len(s.events(failover.EventHostFailed)); n != stormConns {
		t.Fatalf("%d host-failed events, want %d", n, stormConns)
	}
}

// TestStormIsOneFailureForBackoff: the 64 reports of one outage are one failure for H1's
// backoff (the first step, DefaultBackoffBase), not one step per report. 30 storms, each
// on a fresh cluster (the reports race, so one storm may not show a miscount).
func TestStormIsOneFailureForBackoff(t *testing.T) {
	const storms = 30
	seen := map[time.Duration]int{}
	for i := 0; i < storms; i++ {
		s := newStormRig(t)
		s.down(0)
		for _, r := range s.storm(t) {
			if r.c != nil {
				r.c.Close()
			}
		}
		if s.h1.State != failover.HostBackoff {
			t.Fatalf("storm %d: H1 %v, want backoff", i, s.h1.State)
		}
		seen[s.h1.RetryAt.Sub(s.wait)]++
	}
	if len(seen) != 1 || seen[cluster.DefaultBackoffBase] != storms {
		t.Errorf("H1's backoff after %d simultaneous reports of one failure, over %d storms: %v, want always %v",
			stormConns, storms, seen, cluster.DefaultBackoffBase)
	}
}

// TestStormAllDown: when the leader's walk finds no host, the followers get its error
// without walking themselves: passes x hosts dials in all.
func TestStormAllDown(t *testing.T) {
	s := newStormRig(t) // retriesAllDown=2
	s.down(0, 1, 2)
	res := s.storm(t)
	var first error
	for i, r := range res {
		var nh *failover.NoHostAvailableError
		if r.c != nil || !errors.As(r.err, &nh) || nh.Passes != 2 {
			t.Fatalf("caller %d: %v %v, want the 2-pass NoHostAvailableError", i, r.c, r.err)
		}
		if first == nil {
			first = r.err
		} else if r.err != first {
			t.Fatalf("caller %d got its own error %v, want the leader's", i, r.err)
		}
	}
	d := s.counts()
	if d != [3]int32{2, 2, 2} {
		t.Fatalf("dials per host %v, want [2 2 2] (2 passes x 3 hosts, one walk)", d)
	}
	if sl := s.clock.Sleeps(); len(sl) != 1 || sl[0] != cluster.DefaultPassPause {
		t.Fatalf("sleeps %v, want only the leader's pause between passes", sl)
	}
	if s.cl.Active() != 0 || s.cl.Stats().Failovers != 0 {
		t.Fatalf("active H%d, failovers %d; want H1, 0", s.cl.Active()+1, s.cl.Stats().Failovers)
	}
}

// backoffFor is the documented backoff after fails consecutive failures.
func backoffFor(fails int) time.Duration {
	d := cluster.DefaultBackoffBase
	for i := 1; i < fails; i++ {
		d *= 2
		if d >= cluster.DefaultBackoffMax {
			return cluster.DefaultBackoffMax
		}
	}
	return d
}

// since returns the attempts recorded after the previous call, in history notation.
func (r *rig) since(mark *int) string {
	h := r.history()
	out := strings.TrimSpace(h[*mark:])
	*mark = len(h)
	return out
}

// TestBackoffJoinSkipsHostInBackoff: with the pool on H2 and fall-back due every second,
// a joining connection skips H1 while it is in backoff (250ms, 500ms, 1s, ... 8s) and
// tries it again once the backoff has ended, for as long as it stays down.
func TestBackoffJoinSkipsHostInBackoff(t *testing.T) {
	r := newRig(t, 3, func(o *rigOpts) { o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = 1, 0 })
	mark := 0
	r.down(0)
	l := r.connect()
	l.on(1)
	l.c.Close()
	if got := r.since(&mark); got != `\H1 /H2` {
		t.Fatalf("first connection %q", got)
	}
	fails, failedAt := 1, r.clock.Now()
	if st := r.stat(0); st.State != failover.HostBackoff || !st.RetryAt.Equal(failedAt.Add(cluster.DefaultBackoffBase)) ||
		!errors.Is(st.LastError, syscall.ECONNREFUSED) {
		t.Fatalf("H1 after one failure: %v until %v (%v), want backoff until +250ms, connection refused", st.State, st.RetryAt, st.LastError)
	}
	skips := 0
	for step := 1; step <= 40; step++ {
		r.clock.Advance(time.Second)
		now, retryAt := r.clock.Now(), failedAt.Add(backoffFor(fails))
		l := r.connect()
		l.on(1)
		l.c.Close()
		got := r.since(&mark)
		st := r.stat(0)
		if now.Before(retryAt) {
			skips++
			if got != `/H2` {
				t.Fatalf("t=%ds, H1 in backoff until +%v: attempts %q, want /H2 only", step, retryAt.Sub(now), got)
			}
			if st.State != failover.HostBackoff || !st.RetryAt.Equal(retryAt) {
				t.Fatalf("t=%ds: H1 %v until %v, want backoff until %v", step, st.State, st.RetryAt, retryAt)
			}
			continue
		}
		if got != `\H1 /H2` {
			t.Fatalf("t=%ds, H1's backoff over: attempts %q, want \\H1 /H2", step, got)
		}
		fails, failedAt = fails+1, now
		if want := now.Add(backoffFor(fails)); !st.RetryAt.Equal(want) {
			t.Fatalf("t=%ds: after failure %d H1 backs off until +%v, want +%v", step, fails, st.RetryAt.Sub(now), backoffFor(fails))
		}
	}
	if fails < 8 || skips < 20 {
		t.Fatalf("%d failures, %d skips in 40s: the backoff did not reach its cap", fails, skips)
	}
	r.up(0)
	r.clock.Advance(r.stat(0).RetryAt.Sub(r.clock.Now()))
	l = r.connect()
	l.on(0)
	l.c.Close()
	if got := r.since(&mark); got != `/H1` {
		t.Fatalf("H1 back, backoff over: attempts %q, want /H1", got)
	}
	if st := r.stat(0); st.State != failover.HostUp || !st.RetryAt.IsZero() || st.LastError != nil {
		t.Fatalf("H1 stats %+v, want up, no backoff, no error", st)
	}
}

// TestBackoffAllDownStillTriesEveryHost: with every host failing, backoff skips nothing:
// each walk makes retriesAllDown passes over all hosts (Connector/J's all-down walk).
func TestBackoffAllDownStillTriesEveryHost(t *testing.T) {
	r := newRig(t, 3, func(o *rigOpts) { o.RetriesAllDown = 3 })
	mark := 0
	r.down(0, 1, 2)
	for round := 0; round < 2; round++ {
		_, _, err := r.cl.Connect(context.Background(), nil)
		var nh *failover.NoHostAvailableError
		if !errors.As(err, &nh) {
			t.Fatalf("round %d: %v", round, err)
		}
		if got, want := r.since(&mark), `\H1 \H2 \H3 \H1 \H2 \H3 \H1 \H2 \H3`; got != want {
			t.Fatalf("round %d (hosts in backoff: %v): attempts %q, want %q", round, round > 0, got, want)
		}
	}
	for h := 0; h < 3; h++ {
		if st := r.stat(h); st.State != failover.HostBackoff {
			t.Fatalf("H%d: %v, want backoff", h+1, st.State)
		}
	}
	r.up(2)
	l := r.connect()
	l.on(2)
	l.c.Close()
	if got := r.since(&mark); got != `\H1 \H2 /H3` {
		t.Fatalf("H3 back while all are in backoff: attempts %q", got)
	}
}

// TestBackoffAccessDeniedIsNotFinal: access denied puts the host into backoff like any
// failure, is tried again once the backoff ends, and the host is used as soon as the
// credentials work again.
func TestBackoffAccessDeniedIsNotFinal(t *testing.T) {
	r := newRig(t, 3, nil)
	mark := 0
	denied := &mysql.MySQLError{Number: 1045, SQLState: [5]byte{'2', '8', '0', '0', '0'}, Message: "Access denied for user 'app'@'10.0.0.9' (using password: YES)"}
	r.net.Set(0, denied, nil)
	for i, wantBackoff := range []time.Duration{cluster.DefaultBackoffBase, 2 * cluster.DefaultBackoffBase} {
		_, _, err := r.cl.Connect(context.Background(), nil)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1045 || !strings.Contains(err.Error(), "H1:3306") {
			t.Fatalf("attempt %d: %v, want 1045 naming H1", i+1, err)
		}
		if got := r.since(&mark); got != `\H1` {
			t.Fatalf("attempt %d: %q, want \\H1 only (access denied ends the walk)", i+1, got)
		}
		st := r.stat(0)
		if st.State != failover.HostBackoff || st.RetryAt.Sub(r.clock.Now()) != wantBackoff || !errors.As(st.LastError, &me) {
			t.Fatalf("attempt %d: H1 %v until +%v (%v), want backoff +%v with the 1045", i+1, st.State, st.RetryAt.Sub(r.clock.Now()), st.LastError, wantBackoff)
		}
		r.clock.Advance(wantBackoff) // the backoff ends: tried again, not suspended
	}
	r.up(0) // the password is fixed
	l := r.connect()
	l.on(0)
	l.c.Close()
	if got := r.since(&mark); got != `/H1` {
		t.Fatalf("credentials fixed: %q, want /H1", got)
	}
	if st := r.stat(0); st.State != failover.HostUp || st.LastError != nil || !st.RetryAt.IsZero() {
		t.Fatalf("H1 stats %+v, want up", st)
	}
}

// TestStatsStatesAndCounters: Stats follows a failover and a fall-back.
func TestStatsStatesAndCounters(t *testing.T) {
	r := newRig(t, 3, func(o *rigOpts) { o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = 1, 0 })
	s := r.cl.Stats()
	if s.Active != "H1:3306" || s.Primary != "H1:3306" || s.Failovers != 0 || s.FallBacks != 0 || s.Aborted != 0 || len(s.Hosts) != 3 {
		t.Fatalf("fresh stats %+v", s)
	}
	for i, h := range s.Hosts {
		if h.Addr != r.net.Addrs()[i] || h.State != failover.HostUnknown || !h.Changed.IsZero() || !h.RetryAt.IsZero() ||
			h.LastError != nil || h.OpenConns != -1 || h.Role != failover.RoleUnknown {
			t.Fatalf("fresh host %d: %+v", i, h)
		}
	}
	l := r.connect()
	t0 := r.clock.Now()
	if st := r.stat(0); st.State != failover.HostUp || !st.Changed.Equal(t0) {
		t.Fatalf("H1 after a connection: %+v", st)
	}
	r.clock.Advance(time.Second)
	r.down(0)
	l.fail()
	l.on(1)
	t1 := r.clock.Now()
	s = r.cl.Stats()
	if s.Active != "H2:3306" || s.Primary != "H1:3306" || s.Failovers != 1 || s.FallBacks != 0 {
		t.Fatalf("after the failover: active %s primary %s failovers %d fall-backs %d", s.Active, s.Primary, s.Failovers, s.FallBacks)
	}
	h1 := s.Hosts[0]
	if h1.State != failover.HostBackoff || !h1.RetryAt.Equal(t1.Add(cluster.DefaultBackoffBase)) || !h1.Changed.Equal(t1) ||
		!errors.Is(h1.LastError, mysql.ErrInvalidConn) || errors.Is(h1.LastError, driver.ErrBadConn) {
		t.Fatalf("H1 after the failover: %+v", h1)
	}
	if s.Hosts[1].State != failover.HostUp || s.Hosts[2].State != failover.HostUnknown {
		t.Fatalf("H2 %v H3 %v, want up, unknown", s.Hosts[1].State, s.Hosts[2].State)
	}
	r.clock.Advance(cluster.DefaultBackoffBase)
	if st := r.stat(0); st.State != failover.HostDown || !st.RetryAt.IsZero() || st.LastError == nil {
		t.Fatalf("H1 once its backoff ended: %+v, want down, no RetryAt, the error kept", st)
	}
	r.up(0)
	r.clock.Advance(time.Second - cluster.DefaultBackoffBase)
	l.statement(true) // fall-back due: back to H1
	l.on(0)
	l.c.Close()
	s = r.cl.Stats()
	if s.Active != "H1:3306" || s.Failovers != 1 || s.FallBacks != 1 {
		t.Fatalf("after the fall-back: active %s failovers %d fall-backs %d", s.Active, s.Failovers, s.FallBacks)
	}
	if h1 := s.Hosts[0]; h1.State != failover.HostUp || h1.LastError != nil || !h1.RetryAt.IsZero() {
		t.Fatalf("H1 after the fall-back: %+v", h1)
	}
}
