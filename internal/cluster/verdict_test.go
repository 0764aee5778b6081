package cluster_test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// sessionCauses are failures of an established session that prove nothing about its host
// by themselves: what go-sql-driver reports for a KILL of a busy query on MariaDB 10.11 (a
// bare EOF), for a read timeout, for a reset, and a session net_write_timeout cut.
var sessionCauses = []struct {
	name  string
	cause error
}{
	{"invalid connection (KILL, net_write_timeout)", mysql.ErrInvalidConn},
	{"bare EOF", io.EOF},
	{"unexpected EOF", io.ErrUnexpectedEOF},
	{"read timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}},
	{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}},
	{"1153 packet too large 08S01", myErr(1153, "08S01", "Got a packet bigger than 'max_allowed_packet' bytes")},
	{"1927 connection killed", myErr(1927, "70100", "Connection was killed")},
	{"4031 inactivity", myErr(4031, "HY000", "The client was disconnected by the server because of inactivity")},
}

// The host verdict: a session's death on a host that answers leaves the pool where
// it is; the connection gets a new session on the same host, and the event says so.
func TestRecoverSessionOnlyStaysOnTheHost(t *testing.T) {
	for _, tc := range sessionCauses {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 3, nil)
			c0, h, err := r.cl.Connect(context.Background(), nil)
			if err != nil || h != primary {
				t.Fatalf("Connect: H%d %v", h+1, err)
			}
			c0.Close()
			c, h, err := r.cl.Recover(context.Background(), primary, tc.cause, nil)
			if err != nil || h != primary {
				t.Fatalf("Recover: H%d %v, want a new session on H1", h+1, err)
			}
			c.Close()
			if r.cl.Active() != primary {
				t.Fatalf("pool on H%d, want H1", r.cl.Active()+1)
			}
			if got := r.history(); got != "/H1 /H1" {
				t.Fatalf("history %q, want /H1 /H1 (one check on the same host)", got)
			}
			if n := len(r.events(failover.EventHostFailed)) + len(r.events(failover.EventSwitch)); n != 0 {
				t.Fatalf("%d host-failed and switch events, want none", n)
			}
			ends := r.events(failover.EventSessionEnded)
			if len(ends) != 1 || ends[0].Host != "H1:3306" || !errors.Is(ends[0].Err, tc.cause) {
				t.Fatalf("session-ended events %v, want one for H1 with the cause", ends)
			}
			if s := r.stat(primary); s.State != failover.HostUp {
				t.Fatalf("H1 state %v, want up", s.State)
			}
		})
	}
}

// A host that does not answer the check is down: today's failover, and the
// host is in backoff, so that the connections whose sessions end a moment later move
// without a check of their own.
func TestRecoverHostDownMoves(t *testing.T) {
	for _, tc := range sessionCauses {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 3, nil)
			r.net.Down(0)
			c, h, err := r.cl.Recover(context.Background(), primary, tc.cause, nil)
			if err != nil || h != 1 {
				t.Fatalf("Recover: H%d %v, want H2", h+1, err)
			}
			c.Close()
			if got := r.history(); got != `\H1 /H2` {
				t.Fatalf("history %q, want \\H1 /H2 (the check, then the walk)", got)
			}
			if r.cl.Active() != 1 || len(r.events(failover.EventSwitch)) != 1 {
				t.Fatalf("pool on H%d with %d switches, want H2 and one", r.cl.Active()+1, len(r.events(failover.EventSwitch)))
			}
			if len(r.events(failover.EventSessionEnded)) != 0 {
				t.Fatal("a session-ended event for a host that is down")
			}
		})
	}
}

// What the Cluster already knows decides without a check: a host in backoff
// after a failed attempt a moment ago, a host whose probes failed, and a server that said
// it is shutting down.
func TestRecoverKnownDownSkipsTheCheck(t *testing.T) {
	t.Run("attempt failed a moment ago", func(t *testing.T) {
		r := newRig(t, 3, nil)
		r.net.Down(0)
		c, _, err := r.cl.Recover(context.Background(), primary, io.EOF, nil) // checks, fails, moves
		if err != nil {
			t.Fatal(err)
		}
		c.Close()
		// A second connection's session on H1 ended too, before it heard of the move:
		// pretend the pool still is on H1 by asking about H1 while it is in backoff.
		before := len(r.events(failover.EventConnect))
		c, h, err := r.cl.Recover(context.Background(), primary, io.EOF, nil)
		if err != nil || h != 1 {
			t.Fatalf("second Recover: H%d %v, want H2", h+1, err)
		}
		c.Close()
		for _, e := range r.events(failover.EventConnect)[before:] {
			if e.Host == "H1:3306" {
				t.Fatalf("H1 was checked again while in backoff: %v", r.history())
			}
		}
	})
	t.Run("server shutting down", func(t *testing.T) {
		for _, n := range []uint16{1053, 1080} {
			r := newRig(t, 3, nil)
			c, h, err := r.cl.Recover(context.Background(), primary, myErr(n, "08S01", "Server shutdown in progress"), nil)
			if err != nil || h != 1 {
				t.Fatalf("%d: Recover: H%d %v, want H2 without a check", n, h+1, err)
			}
			c.Close()
			if got := r.history(); got != "/H2" {
				t.Fatalf("%d: history %q, want /H2", n, got)
			}
		}
	})
	t.Run("probes failing", func(t *testing.T) {
		r, _ := monRig(t, 3, nil)
		r.cl.Check(context.Background())
		r.down(0)
		r.tick(monInterval) // one failed probe: suspect, not yet down
		if got := r.stat(0).State; got != failover.HostSuspect {
			t.Fatalf("H1 %v, want suspect", got)
		}
		r.net.Up(0) // a check would succeed now: it must not be made
		before := r.attemptsOn(0)
		c, h, err := r.cl.Recover(context.Background(), primary, io.EOF, nil)
		if err != nil || h != 1 {
			t.Fatalf("Recover: H%d %v, want H2", h+1, err)
		}
		c.Close()
		if n := r.attemptsOn(0) - before; n != 0 {
			t.Fatalf("%d attempts on H1, want none: its last probe failed", n)
		}
	})
}

// The check is quick for a host whose attempts are usually fast, because a frozen
// host accepts TCP and never greets; a server that itself ended the session is up, and
// its check gets the usual bounds.
func TestRecoverCheckBound(t *testing.T) {
	for _, tc := range []struct {
		name    string
		usual   time.Duration // how long H1's attempts take on the Cluster clock
		cause   error
		atLeast time.Duration
		atMost  time.Duration
	}{
		{"fast host: the floor", 0, io.EOF, 40 * time.Millisecond, 50 * time.Millisecond},
		{"slower host: four times its usual attempt", 100 * time.Millisecond, mysql.ErrInvalidConn, 350 * time.Millisecond, 400 * time.Millisecond},
		{"server said so: hostTimeout", 0, myErr(1927, "70100", "Connection was killed"), 4 * time.Second, 5 * time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *rig
			var budgets []time.Duration
			var mu sync.Mutex
			r = newRig(t, 2, func(o *rigOpts) {
				o.HostTimeout = 5 * time.Second
				o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
					if h == primary {
						mu.Lock()
						dl, _ := ctx.Deadline()
						budgets = append(budgets, time.Until(dl))
						mu.Unlock()
						r.clock.Advance(tc.usual)
					}
					return r.net.Dial(ctx, h)
				}
			})
			c, _, err := r.cl.Connect(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			c.Close()
			if c, _, err = r.cl.Recover(context.Background(), primary, tc.cause, nil); err != nil {
				t.Fatal(err)
			}
			c.Close()
			if len(budgets) != 2 {
				t.Fatalf("%d attempts on H1, want 2", len(budgets))
			}
			if b := budgets[1]; b < tc.atLeast || b > tc.atMost {
				t.Fatalf("the check was given %v, want %v..%v", b, tc.atLeast, tc.atMost)
			}
		})
	}
}

// The check is made once for all the sessions on a host that end at the same
// moment: when the host is down only one attempt reaches it before the pool moves, and
// every connection lands on H2.
func TestRecoverOneCheckForManySessions(t *testing.T) {
	const n = 8
	var r *rig
	release := make(chan struct{})
	var h1Dials sync.WaitGroup
	h1Dials.Add(1)
	var first sync.Once
	r = newRig(t, 3, func(o *rigOpts) {
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if h == primary {
				first.Do(h1Dials.Done)
				select { // the check hangs until every session has reported
				case <-release:
				case <-ctx.Done(): // the test failed before it released the check
				}
				return nil, fake.Refused("H1:3306")
			}
			return r.net.Dial(ctx, h)
		}
	})
	ctx := fake.Context(t)
	var wg sync.WaitGroup
	hosts := make([]int, n)
	errs := make([]error, n)
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, h, err := r.cl.Recover(ctx, primary, io.EOF, nil)
			hosts[i], errs[i] = h, err
			if c != nil {
				c.Close()
			}
		}()
	}
	fake.Wait(t, "the same-host check's dial of H1", &h1Dials)
	fake.WaitFor(t, "every session waiting for the check", func() bool { return checkWaiters(r) == n-1 })
	close(release)
	fake.Wait(t, "every session's Recover", &wg)
	for i := range n {
		if errs[i] != nil || hosts[i] != 1 {
			t.Fatalf("session %d: H%d %v, want H2", i, hosts[i]+1, errs[i])
		}
	}
	h1 := 0
	for _, e := range r.events(failover.EventConnect) {
		if e.Host == "H1:3306" {
			h1++
		}
	}
	if h1 != 1 {
		t.Fatalf("%d attempts on H1, want 1 (one check for all): %s", h1, r.history())
	}
}

// checkWaiters returns how many connections wait for the check of H1 in progress.
func checkWaiters(r *rig) int { return cluster.CheckWaiters(r.cl, primary) }

// A full host is not a down host: a connection that joins the pool and finds its
// host full waits and tries again; a short burst is invisible, a lasting one is an error
// naming the host and the number, and nothing else changes: the pool stays, no other host
// is tried, the host is not marked down.
func TestFullHostOnConnect(t *testing.T) {
	full := func(n uint16) *mysql.MySQLError {
		return myErr(n, "08004", "Too many connections")
	}
	t.Run("short burst", func(t *testing.T) {
		r := newRig(t, 3, nil)
		answers := 2 // full twice, then a slot frees
		r.cl = fullRig(t, r, 2*time.Second, func() error {
			if answers > 0 {
				answers--
				return full(1040)
			}
			return nil
		})
		c, h, err := r.cl.Connect(context.Background(), nil)
		if err != nil || h != primary {
			t.Fatalf("Connect: H%d %v, want H1 after waiting", h+1, err)
		}
		c.Close()
		if got := r.history(); got != `\H1 \H1 /H1` {
			t.Fatalf("history %q, want two full answers then H1", got)
		}
		if got := r.clock.Sleeps(); len(got) != 2 || got[0] != 25*time.Millisecond || got[1] != 50*time.Millisecond {
			t.Fatalf("waits %v, want [25ms 50ms]", got)
		}
		if s := r.stat(primary); s.State != failover.HostUp {
			t.Fatalf("H1 %v, want up", s.State)
		}
	})
	t.Run("lasting", func(t *testing.T) {
		r := newRig(t, 3, nil)
		r.cl = fullRig(t, r, 2*time.Second, func() error { return full(1040) })
		_, _, err := r.cl.Connect(context.Background(), nil)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1040 || errors.Is(err, driver.ErrBadConn) {
			t.Fatalf("Connect: %v, want the 1040 (not ErrBadConn)", err)
		}
		if !strings.Contains(err.Error(), "H1:3306") || !strings.Contains(err.Error(), "1040") || !strings.Contains(err.Error(), "full") {
			t.Fatalf("error %q does not name the host, the number and why", err)
		}
		if strings.Contains(r.history(), "H2") || strings.Contains(r.history(), "H3") {
			t.Fatalf("history %q: another host was tried", r.history())
		}
		var total time.Duration
		for _, d := range r.clock.Sleeps() {
			total += d
		}
		if total > 2*time.Second || total < time.Second {
			t.Fatalf("waited %v in all, want about hostTimeout (2s)", total)
		}
		if r.cl.Active() != primary || len(r.events(failover.EventSwitch)) != 0 {
			t.Fatal("the pool moved")
		}
		if s := r.stat(primary); s.State != failover.HostUp || !s.RetryAt.IsZero() {
			t.Fatalf("H1 %v (backoff until %v), want up and not in backoff", s.State, s.RetryAt)
		}
	})
	t.Run("1226 and 1129 are not waited for", func(t *testing.T) {
		for _, n := range []uint16{1226, 1129} {
			r := newRig(t, 3, nil)
			r.cl = fullRig(t, r, 0, func() error { return full(n) })
			_, _, err := r.cl.Connect(context.Background(), nil)
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != n {
				t.Fatalf("%d: Connect: %v", n, err)
			}
			if got := r.history(); got != `\H1` {
				t.Fatalf("%d: history %q, want one attempt", n, got)
			}
		}
	})
	t.Run("a full host in a failover walk is passed over", func(t *testing.T) {
		r := newRig(t, 3, nil)
		r.net.Down(0)
		r.net.Set(1, full(1040), nil)
		c, h, err := r.cl.Failover(context.Background(), primary, io.EOF, nil)
		if err != nil || h != 2 {
			t.Fatalf("Failover: H%d %v, want H3", h+1, err)
		}
		c.Close()
		if s := r.stat(1); s.State == failover.HostDown || s.State == failover.HostBackoff {
			t.Fatalf("full H2 marked %v", s.State)
		}
	})
	t.Run("a session whose host is full waits too", func(t *testing.T) {
		r := newRig(t, 3, nil)
		answers := 1
		r.cl = fullRig(t, r, 0, func() error {
			if answers > 0 {
				answers--
				return full(1040)
			}
			return nil
		})
		c, h, err := r.cl.Recover(context.Background(), primary, io.EOF, nil)
		if err != nil || h != primary {
			t.Fatalf("Recover: H%d %v, want H1", h+1, err)
		}
		c.Close()
		if r.cl.Active() != primary {
			t.Fatal("the pool moved")
		}
	})
}

// fullRig rebuilds r's Cluster, with hostTimeout, and a dialer whose attempts on H1 first
// ask answer: a non-nil error is H1's answer (a full host).
func fullRig(t *testing.T, r *rig, hostTimeout time.Duration, answer func() error) *cluster.Cluster {
	t.Helper()
	var mu sync.Mutex
	cfg := &dsn.Config{
		Hosts: r.net.Hosts(), RetriesAllDown: 2, SecondsBeforeRetryMaster: 30, QueriesBeforeRetryMaster: 50,
		HostTimeout: hostTimeout,
	}
	cl, err := cluster.New(cfg, cluster.Env{
		Clock: r.clock,
		OnEvent: func(e failover.Event) {
			r.mu.Lock()
			r.evs = append(r.evs, e)
			r.mu.Unlock()
		},
		Dial: func(ctx context.Context, h int) (driver.Conn, error) {
			if h == primary {
				mu.Lock()
				err := answer()
				mu.Unlock()
				if err != nil {
					return nil, err
				}
			}
			return r.net.Dial(ctx, h)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	return cl
}

// A TLS or greeting failure belongs to its host: the walk goes on,
// and when every host fails so, the error names each host with its own failure. A
// refusal every host would repeat (access denied) still ends the walk.
func TestPerHostConnectFailures(t *testing.T) {
	expired := &tls.CertificateVerificationError{Err: x509.CertificateInvalidError{Reason: x509.Expired, Detail: "expired"}}
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"expired certificate", expired},
		{"wrong name", &tls.CertificateVerificationError{Err: x509.HostnameError{Host: "db1"}}},
		{"unknown authority", x509.UnknownAuthorityError{}},
		{"not a TLS server", tls.RecordHeaderError{Msg: "first record does not look like a TLS handshake"}},
		{"no TLS on the server", mysql.ErrNoTLS},
		{"malformed greeting", mysql.ErrMalformPkt},
		{"old protocol", mysql.ErrOldProtocol},
		{"a TLS error crypto/tls makes as a plain error", errors.New("tls: server selected unsupported protocol version 301")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, 3, nil)
			r.net.Set(0, tc.err, nil)
			c, h, err := r.cl.Connect(context.Background(), nil)
			if err != nil || h != 1 {
				t.Fatalf("Connect: H%d %v, want H2", h+1, err)
			}
			c.Close()
			if s := r.stat(primary); s.State != failover.HostBackoff && s.State != failover.HostDown {
				t.Fatalf("H1 %v, want down or backoff (the failure counts against it)", s.State)
			}
			for i := range 3 {
				r.net.Set(i, fmt.Errorf("H%d: %w", i+1, tc.err), nil)
			}
			_, _, err = r.cl.Connect(context.Background(), nil)
			var nh *failover.NoHostAvailableError
			if !errors.As(err, &nh) || len(nh.Hosts) != 3 {
				t.Fatalf("every host failing: %v, want a NoHostAvailableError naming 3 hosts", err)
			}
			for i, he := range nh.Hosts {
				if !errors.Is(he.Err, tc.err) || !strings.Contains(he.Error(), fmt.Sprintf("H%d", i+1)) {
					t.Fatalf("host %d: %v, want its own %v", i+1, he.Err, tc.err)
				}
			}
		})
	}
	t.Run("access denied ends the walk", func(t *testing.T) {
		r := newRig(t, 3, nil)
		r.net.Set(0, myErr(1045, "28000", "Access denied"), nil)
		_, _, err := r.cl.Connect(context.Background(), nil)
		var me *mysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1045 {
			t.Fatalf("Connect: %v, want the 1045", err)
		}
		if got := r.history(); got != `\H1` {
			t.Fatalf("history %q, want one attempt", got)
		}
	})
}

// Zero values of the exported error types print without panicking.
func TestErrorZeroValues(t *testing.T) {
	for _, err := range []error{&failover.FailoverError{}, &cluster.HostTimeoutError{}, &failover.NoHostAvailableError{}, &failover.HostError{}, &cluster.RoleError{}} {
		if s := err.Error(); s == "" {
			t.Errorf("%T: empty message", err)
		}
	}
	if errors.Is(&failover.FailoverError{}, driver.ErrBadConn) {
		t.Error("a zero FailoverError matches driver.ErrBadConn")
	}
}

// Host ids are reclaimed. A host list whose addresses churn keeps the host table
// at the size of the list, plus the hosts that left it while a physical connection to
// them is still held; an id is never given away while such a connection is out.
func TestHostIDsAreReclaimed(t *testing.T) {
	var r *rig
	r = newRig(t, 2, func(o *rigOpts) {
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if r.cl.Host(h) == "H1:3306" {
				return r.net.Dial(ctx, 0)
			}
			return r.net.Dial(ctx, 1) // every other address: the second fake host
		}
	})
	list := func(second string) {
		t.Helper()
		if err := r.cl.SetHosts([]failover.ProvidedHost{{Addr: "H1:3306"}, {Addr: second}}); err != nil {
			t.Fatal(err)
		}
	}
	list("10.0.0.1:3306")
	r.net.Down(0)
	held, h, err := r.cl.Failover(context.Background(), primary, io.EOF, nil)
	if err != nil || r.cl.Host(h) != "10.0.0.1:3306" {
		t.Fatalf("Failover: %s %v, want 10.0.0.1:3306", r.cl.Host(h), err)
	}
	r.net.Up(0)
	for i := range 1000 {
		list(fmt.Sprintf("10.0.%d.%d:3306", 1+i/250, i%250))
	}
	if n := cluster.HostSlots(r.cl); n > 4 {
		t.Fatalf("host table has %d slots after 1000 lists of 2 hosts, want at most 4", n)
	}
	if got := r.cl.Host(h); got != "10.0.0.1:3306" {
		t.Fatalf("the held connection's id now names %q: given away while in use", got)
	}
	held.Close()
	r.cl.Release(h)
	list("10.9.9.9:3306")
	list("10.9.9.8:3306")
	if got := r.cl.Host(h); got == "10.0.0.1:3306" {
		t.Fatalf("the released id still names the host that left the list")
	}
	if n := cluster.HostSlots(r.cl); n > 4 {
		t.Fatalf("host table has %d slots, want at most 4 (it never shrinks, it stops growing)", n)
	}
}

// pastDeadline is a caller's context whose deadline has passed while its timer has not
// fired yet: Err is still nil, as for a moment after every deadline.
type pastDeadline struct{ context.Context }

func (pastDeadline) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }
func (pastDeadline) Done() <-chan struct{}       { return nil }
func (pastDeadline) Err() error                  { return nil }

// A caller's deadline that runs out during a dial is the caller's, not the host's: the
// dialer (net.Dialer reads the clock itself) fails with an i/o timeout before the
// context's timer ends the context, and no host may be blamed for it (a fresh user saw
// every host of a pool put into backoff by one call with a 10 µs deadline, and a later
// KILL then taken for a dead host).
func TestCallerDeadlineDuringDialBlamesNoHost(t *testing.T) {
	var r *rig
	r = newRig(t, 3, func(o *rigOpts) {
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if dl, ok := ctx.Deadline(); ok && !time.Now().Before(dl) {
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.ErrDeadlineExceeded}
			}
			return r.net.Dial(ctx, h)
		}
	})
	_, _, err := r.cl.Connect(pastDeadline{context.Background()}, nil)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect: %v, want the caller's deadline", err)
	}
	for i := range 3 {
		if s := r.stat(i); s.State != failover.HostUnknown || !s.RetryAt.IsZero() {
			t.Fatalf("H%d %v (retry at %v) after the caller's deadline: blamed", i+1, s.State, s.RetryAt)
		}
	}
	if got := r.history(); strings.Count(got, `\`) > 1 {
		t.Fatalf("history %q: the walk went on after the caller's deadline", got)
	}
}
