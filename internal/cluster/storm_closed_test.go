package cluster_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// closedRig is a 3-host rig whose H1 closes the handshakes closes(n) selects (n: the
// n-th dial of H1, from 1), as the connector's dialer reports them (a
// *cluster.HandshakeClosedError over go-sql-driver's driver.ErrBadConn). onDial, if set,
// runs at each H1 dial before its outcome; answers is the rig's Env.Answers count.
type closedRig struct {
	*rig
	dials   atomic.Int32
	answers atomic.Uint64
	closes  func(n int32) bool
	onDial  func(n int32)
}

func newClosedRig(t *testing.T, closes func(n int32) bool, set func(*rigOpts)) *closedRig {
	s := &closedRig{closes: closes}
	s.rig = newRig(t, 3, func(o *rigOpts) {
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if h == primary {
				n := s.dials.Add(1)
				if s.onDial != nil {
					s.onDial(n)
				}
				if s.closes(n) {
					return nil, &cluster.HandshakeClosedError{Err: driver.ErrBadConn}
				}
			}
			return s.net.Dial(ctx, h)
		}
		o.Answers = func(string) uint64 { return s.answers.Load() }
		if set != nil {
			set(o)
		}
	})
	return s
}

// checkPauses fails unless the clock slept exactly the pauses of n closed handshakes
// tried again: each drawn from the upper half of DefaultHandshakePause doubling.
func checkPauses(t *testing.T, clock *fake.Clock, n int) {
	t.Helper()
	sl := clock.Sleeps()
	if len(sl) != n {
		t.Fatalf("sleeps %v, want %d pauses between handshakes", sl, n)
	}
	p := cluster.DefaultHandshakePause
	for i, d := range sl {
		if d < p/2 || d > p {
			t.Fatalf("pause %d: %v, want within [%v, %v]", i+1, d, p/2, p)
		}
		p = min(2*p, cluster.DefaultHandshakePauseMax)
	}
}

// TestClosedHandshakeHostAnswersPoolStays: the pool's host closes every handshake of a
// new session while it answers the connector otherwise (another session opens on it, or
// a session reads from it): the session is tried DefaultHandshakeTries times on it, its
// caller gets a *SessionClosedError that says what happened, never driver.ErrBadConn,
// and the pool stays on H1, which is not put into backoff.
func TestClosedHandshakeHostAnswersPoolStays(t *testing.T) {
	for _, tc := range []struct {
		name, history string
		others        int32 // dials of H1 by other sessions
		sign          func(s *closedRig, n int32)
	}{
		{"another session opens", `/H1 \H1`, 1, func(s *closedRig, n int32) {
			if n != 1 {
				return
			}
			got := make(chan error, 1)
			go func() {
				c, h, err := s.cl.Connect(fake.Context(s.t), nil)
				if err == nil && h != primary {
					err = errors.New("not on H1")
				}
				if c != nil {
					c.Close()
				}
				got <- err
			}()
			if err := <-got; err != nil {
				s.t.Errorf("the other session: %v", err)
			}
		}},
		{"a session reads", `\H1`, 0, func(s *closedRig, n int32) {
			if n == 2 {
				s.answers.Add(1)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s *closedRig
			s = newClosedRig(t, func(n int32) bool { return tc.name != "another session opens" || n != 2 }, nil)
			s.onDial = func(n int32) { tc.sign(s, n) }
			c, h, err := s.cl.Connect(fake.Context(t), nil)
			if c != nil {
				c.Close()
				t.Fatalf("Connect: a connection on H%d, want an error", h+1)
			}
			var sc *cluster.SessionClosedError
			var hc *cluster.HandshakeClosedError
			if !errors.As(err, &sc) || sc.Host != "H1:3306" || sc.Attempts != cluster.DefaultHandshakeTries ||
				!errors.As(err, &hc) || errors.Is(err, driver.ErrBadConn) ||
				!strings.Contains(err.Error(), "closed this new session's handshake") || !strings.Contains(err.Error(), "the pool stays") {
				t.Fatalf("Connect: %v, want a *SessionClosedError of %d attempts on H1, not driver.ErrBadConn", err, cluster.DefaultHandshakeTries)
			}
			if got := s.history(); got != tc.history {
				t.Fatalf("attempts %q, want %q (one event for the attempt)", got, tc.history)
			}
			if d, want := s.dials.Load(), int32(cluster.DefaultHandshakeTries)+tc.others; d != want {
				t.Fatalf("%d dials of H1, want %d tries and %d of other sessions", d, cluster.DefaultHandshakeTries, tc.others)
			}
			st := s.cl.Stats()
			if s.cl.Active() != primary || st.Failovers != 0 || st.SessionsClosed != 1 || st.HandshakeRetries != cluster.DefaultHandshakeTries-1 {
				t.Fatalf("active H%d, failovers %d, sessions closed %d, handshake retries %d; want H1, 0, 1, %d",
					s.cl.Active()+1, st.Failovers, st.SessionsClosed, st.HandshakeRetries, cluster.DefaultHandshakeTries-1)
			}
			if h1 := s.stat(0); h1.State == failover.HostBackoff || h1.State == failover.HostDown || !h1.RetryAt.IsZero() {
				t.Fatalf("H1 %v until %v, want neither down nor in backoff", h1.State, h1.RetryAt)
			}
			checkPauses(t, s.clock, cluster.DefaultHandshakeTries-1)
			// The next session gets in: it is on H1.
			s.closes = func(int32) bool { return false }
			l := s.connect()
			l.on(primary)
			l.c.Close()
		})
	}
}

// TestClosedHandshakeRetried: a handshake closed twice, then accepted: the caller gets
// its session on H1 and sees nothing; H1 is up.
func TestClosedHandshakeRetried(t *testing.T) {
	s := newClosedRig(t, func(n int32) bool { return n <= 2 }, nil)
	l := s.connect()
	l.on(primary)
	l.c.Close()
	if got, d := s.history(), s.dials.Load(); got != `/H1` || d != 3 {
		t.Fatalf("attempts %q in %d dials, want /H1 in 3", got, d)
	}
	st := s.cl.Stats()
	if st.Failovers != 0 || st.HandshakeRetries != 2 || st.SessionsClosed != 0 || s.stat(0).State != failover.HostUp {
		t.Fatalf("failovers %d, retries %d, sessions closed %d, H1 %v; want 0, 2, 0, up", st.Failovers, st.HandshakeRetries, st.SessionsClosed, s.stat(0).State)
	}
	checkPauses(t, s.clock, 2)
}

// TestClosedHandshakeNoLifeMoves: a host that closes every handshake and shows no other
// sign of life is down as before: after DefaultHandshakeTries tries the walk goes on to
// H2, the pool moves and H1 is in backoff.
func TestClosedHandshakeNoLifeMoves(t *testing.T) {
	s := newClosedRig(t, func(int32) bool { return true }, nil)
	l := s.connect()
	l.on(1)
	l.c.Close()
	if got, d := s.history(), s.dials.Load(); got != `\H1 /H2` || d != cluster.DefaultHandshakeTries {
		t.Fatalf("attempts %q in %d dials of H1, want \\H1 /H2 in %d", got, d, cluster.DefaultHandshakeTries)
	}
	st := s.cl.Stats()
	var hc *cluster.HandshakeClosedError
	if h1 := st.Hosts[0]; h1.State != failover.HostBackoff || !errors.As(h1.LastError, &hc) || errors.Is(h1.LastError, driver.ErrBadConn) {
		t.Fatalf("H1 %v (%v), want backoff with the closed handshake", h1.State, h1.LastError)
	}
	if st.Failovers != 1 || st.SessionsClosed != 0 || st.HandshakeRetries != cluster.DefaultHandshakeTries-1 {
		t.Fatalf("failovers %d, sessions closed %d, retries %d", st.Failovers, st.SessionsClosed, st.HandshakeRetries)
	}
}

// TestHandshakeTimeoutMovesAtOnce: a handshake that times out (a frozen host accepts TCP
// and never greets), and one that fails without the tracker's word that the server closed
// it, are the host's as before: one attempt, then H2, no retry on H1.
func TestHandshakeTimeoutMovesAtOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		dial func(ctx context.Context) error
	}{
		{"timeout", func(ctx context.Context) error {
			<-ctx.Done() // hostTimeout; the socket then closes, as go-sql-driver's watcher does
			return &cluster.HandshakeClosedError{Err: driver.ErrBadConn}
		}},
		{"not closed by the server", func(context.Context) error { return mysql.ErrInvalidConn }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var s *closedRig
			s = newClosedRig(t, func(int32) bool { return false }, func(o *rigOpts) {
				o.HostTimeout = time.Millisecond
				dial := o.Dial
				o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
					if h == primary {
						s.dials.Add(1)
						return nil, tc.dial(ctx)
					}
					return dial(ctx, h)
				}
			})
			c, h, err := s.cl.Connect(fake.Context(t), nil)
			if err != nil || h != 1 {
				t.Fatalf("Connect: H%d %v, want H2", h+1, err)
			}
			c.Close()
			if got := s.history(); got != `\H1 /H2` {
				t.Fatalf("attempts %q, want \\H1 /H2", got)
			}
			if st := s.cl.Stats(); st.HandshakeRetries != 0 || st.Failovers != 1 || st.Hosts[0].State != failover.HostBackoff {
				t.Fatalf("retries %d, failovers %d, H1 %v; want 0, 1, backoff", st.HandshakeRetries, st.Failovers, st.Hosts[0].State)
			}
		})
	}
}

// TestClosedHandshakeAfterKill: a session the server ended (1927 KILL) is replaced on
// the same host; when the host closes the new session's handshakes while a session of the
// connector reads from it, the caller gets the *SessionClosedError and the pool stays.
func TestClosedHandshakeAfterKill(t *testing.T) {
	var s *closedRig
	s = newClosedRig(t, func(n int32) bool { return n > 1 }, nil)
	s.onDial = func(n int32) {
		if n == 3 {
			s.answers.Add(1)
		}
	}
	l := s.connect()
	l.on(primary)
	l.c.Close()
	killed := &mysql.MySQLError{Number: 1927, SQLState: [5]byte{'7', '0', '1', '0', '0'}, Message: "Connection was killed"}
	c, h, err := s.cl.Recover(fake.Context(t), primary, killed, nil)
	if c != nil {
		c.Close()
		t.Fatalf("Recover: a connection on H%d, want an error", h+1)
	}
	var sc *cluster.SessionClosedError
	if !errors.As(err, &sc) || errors.Is(err, driver.ErrBadConn) {
		t.Fatalf("Recover: %v, want a *SessionClosedError", err)
	}
	if st := s.cl.Stats(); s.cl.Active() != primary || st.Failovers != 0 || st.Hosts[0].State != failover.HostUp {
		t.Fatalf("active H%d, failovers %d, H1 %v; want H1, 0, up", s.cl.Active()+1, st.Failovers, st.Hosts[0].State)
	}
}

// TestClosedHandshakeAllDown: every host closes every handshake. The pool's host gets
// its tries in the first pass only: once it failed (in backoff) nothing is tried again,
// and the walk keeps its shape, passes x hosts attempts.
func TestClosedHandshakeAllDown(t *testing.T) {
	var dials [3]atomic.Int32
	r := newRig(t, 3, func(o *rigOpts) {
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			dials[h].Add(1)
			return nil, &cluster.HandshakeClosedError{Err: driver.ErrBadConn}
		}
	})
	_, _, err := r.cl.Connect(fake.Context(t), nil)
	var nh *failover.NoHostAvailableError
	if !errors.As(err, &nh) || nh.Passes != 2 {
		t.Fatalf("Connect: %v, want the 2-pass NoHostAvailableError", err)
	}
	if got, want := r.history(), `\H1 \H2 \H3 \H1 \H2 \H3`; got != want {
		t.Fatalf("attempts %q, want %q", got, want)
	}
	if d := [3]int32{dials[0].Load(), dials[1].Load(), dials[2].Load()}; d != [3]int32{cluster.DefaultHandshakeTries + 1, 2, 2} {
		t.Fatalf("dials per host %v, want H1 %d then 1, H2 and H3 2", d, cluster.DefaultHandshakeTries)
	}
	if st := r.cl.Stats(); st.HandshakeRetries != cluster.DefaultHandshakeTries-1 || st.SessionsClosed != 0 {
		t.Fatalf("retries %d, sessions closed %d", st.HandshakeRetries, st.SessionsClosed)
	}
}

// TestClosedHandshakeIsNotATimeout: only the tracker's word that the server closed the
// socket makes a closed handshake, wrapped or not; an attempt that timed out is not one,
// whatever it wraps (the socket closed as the bound fired), nor is a bare bad connection.
func TestClosedHandshakeIsNotATimeout(t *testing.T) {
	closed := &cluster.HandshakeClosedError{Err: driver.ErrBadConn}
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"closed", closed, true},
		{"wrapped", &cluster.SessionClosedError{Host: "H1:3306", Err: closed}, true},
		{"timed out", &cluster.HostTimeoutError{After: time.Second, Cause: closed}, false},
		{"bad connection", driver.ErrBadConn, false},
		{"invalid connection", mysql.ErrInvalidConn, false},
	} {
		if got := cluster.ClosedHandshake(tc.err); got != tc.want {
			t.Errorf("%s (%v): %v, want %v", tc.name, tc.err, got, tc.want)
		}
	}
}
