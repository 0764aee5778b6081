package mysqlfailover_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// The fake hosts' sqlmock databases each run a connectionOpener until the test ends.
var ignoreSQLMock = goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener")

// TestConnectorStatsHosts: Stats has the DSN's hosts in order, the active host and the
// primary; with WithDial (no sockets of the driver's own) OpenConns is -1 (unknown).
func TestConnectorStatsHosts(t *testing.T) {
	p := newPool(t, 3, "")
	s := p.c.Stats()
	if s.Active != "H1:3306" || s.Primary != "H1:3306" || len(s.Hosts) != 3 {
		t.Fatalf("fresh stats %+v", s)
	}
	for i, h := range s.Hosts {
		if h.Addr != p.net.Addrs()[i] || h.OpenConns != -1 || h.State != failover.HostUnknown {
			t.Fatalf("host %d: %+v, want %s unknown with OpenConns -1", i, h, p.net.Addrs()[i])
		}
	}
	if port, err := p.port(context.Background(), p.db); err != nil || port != 3301 {
		t.Fatalf("port %d %v", port, err)
	}
	s = p.c.Stats()
	if s.Hosts[0].State != failover.HostUp || s.Hosts[0].OpenConns != -1 || s.Failovers != 0 {
		t.Fatalf("after a statement on H1: %+v", s)
	}
}

// TestConnectorStatsOpenConnsCountsSockets: OpenConns counts the driver's sockets per
// host, a connection still in its handshake included, and drops when it closes.
func TestConnectorStatsOpenConnsCountsSockets(t *testing.T) {
	var lns []net.Listener
	var wg sync.WaitGroup
	var mu sync.Mutex
	var accepted []net.Conn
	for i := 0; i < 2; i++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Skipf("no loopback listener: %v", err)
		}
		lns = append(lns, ln)
		wg.Add(1)
		go func() { // accepts and never answers: a server that hangs before its greeting
			defer wg.Done()
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				mu.Lock()
				accepted = append(accepted, c)
				mu.Unlock()
			}
		}()
	}
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
		wg.Wait()
		mu.Lock()
		for _, c := range accepted {
			c.Close()
		}
		mu.Unlock()
	}()
	cfg, err := dsn.Parse("app:" + password + "@tcp(" + lns[0].Addr().String() + "," + lns[1].Addr().String() + ")/shop")
	if err != nil {
		t.Fatal(err)
	}
	c, err := mysqlfailover.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	open := func(i int) int { return c.Stats().Hosts[i].OpenConns }
	if open(0) != 0 || open(1) != 0 {
		t.Fatalf("OpenConns before any connection: %d %d", open(0), open(1))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		_, err := c.Connect(ctx)
		done <- err
	}()
	fake.WaitFor(t, "a socket to H1 in Stats", func() bool { return open(0) == 1 })
	if open(1) != 0 {
		t.Fatalf("OpenConns of the second host %d, want 0", open(1))
	}
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Connect: %v, want context.Canceled", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Connect did not return after its context was cancelled")
	}
	if open(0) != 0 {
		t.Fatalf("OpenConns of H1 after the attempt ended: %d, want 0", open(0))
	}
}

// staticProvider returns a fixed list.
type staticProvider []failover.ProvidedHost

func (p staticProvider) Hosts(context.Context) ([]failover.ProvidedHost, error) { return p, nil }

// TestHostListProviderNeedsCheckInterval: a provider is polled every checkInterval, so
// without one NewConnector refuses it.
func TestHostListProviderNeedsCheckInterval(t *testing.T) {
	for _, params := range []string{"", "checkInterval=0"} {
		cfg, err := dsn.Parse("app:" + password + "@tcp(h1:3306,h2:3306)/shop?" + params)
		if err != nil {
			t.Fatal(err)
		}
		c, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithHostListProvider(staticProvider{{Addr: "h1:3306"}}))
		if err == nil {
			c.Close()
			t.Fatalf("%q: NewConnector accepted a provider without checkInterval", params)
		}
		if !strings.Contains(err.Error(), "checkInterval") || strings.Contains(err.Error(), password) {
			t.Fatalf("%q: %v, want an error about checkInterval", params, err)
		}
	}
}

// TestHostsURLConnectorClose: a hostsURL connector is built without any network (the
// first poll fails and the DSN's list stays) and Close leaves no goroutine behind.
func TestHostsURLConnectorClose(t *testing.T) {
	leaks := []goleak.Option{goleak.IgnoreCurrent(), ignoreSQLMock}
	n := fake.NewNet(t, 2)
	lists := make(chan failover.Event, 16)
	cfg, err := dsn.Parse("app:" + password + "@tcp(H1:3306,H2:3306)/shop?checkInterval=10ms&hostsURL=http://127.0.0.1:1/hosts.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithDial(n.Dial), mysqlfailover.WithEventHook(func(e failover.Event) {
		if e.Kind == failover.EventHostList {
			select {
			case lists <- e:
			default:
			}
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	// A connector nobody uses starts nothing: the monitor starts with the first
	// connection.
	goleak.VerifyNone(t, leaks...)
	startMonitor(t, c)
	select {
	case e := <-lists:
		if e.Err == nil || strings.Contains(e.Err.Error(), password) {
			t.Fatalf("first poll of a closed port: %v, want an error", e)
		}
	case <-time.After(10 * time.Second):
		c.Close()
		t.Fatal("no host-list event")
	}
	if s := c.Stats(); len(s.Hosts) != 2 || s.Hosts[0].Addr != "H1:3306" || s.Primary != "H1:3306" {
		t.Fatalf("stats after a failed poll: %+v, want the DSN's list", s)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	for _, pc := range n.AllConns() {
		if pc.Closes() != 1 {
			t.Fatalf("probe connection to H%d closed %d times after Close, want 1", pc.Host+1, pc.Closes())
		}
	}
	goleak.VerifyNone(t, leaks...)
}

// TestHostsURLConnectorCloseAfterPolls: after polls that succeeded (keep-alive
// connections to the list server), Close leaves no HTTP client goroutine behind.
func TestHostsURLConnectorCloseAfterPolls(t *testing.T) {
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		polls.Add(1)
		_, _ = w.Write([]byte(`{"hosts": [{"addr": "H2:3306"}, {"addr": "H1:3306"}]}`))
	}))
	defer srv.Close()
	t.Cleanup(func() { http.DefaultTransport.(*http.Transport).CloseIdleConnections() })
	leaks := []goleak.Option{goleak.IgnoreCurrent(), ignoreSQLMock,
		goleak.IgnoreAnyFunction("net/http.(*conn).serve"), goleak.IgnoreAnyFunction("net/http.(*connReader).backgroundRead")}
	n := fake.NewNet(t, 2)
	cfg, err := dsn.Parse("app:" + password + "@tcp(H1:3306,H2:3306)/shop?checkInterval=10ms&hostsURL=" + srv.URL + "/hosts.json")
	if err != nil {
		t.Fatal(err)
	}
	c, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithDial(n.Dial))
	if err != nil {
		t.Fatal(err)
	}
	startMonitor(t, c)
	fake.WaitFor(t, "three polls", func() bool { return polls.Load() >= 3 })
	if s := c.Stats(); s.Primary != "H2:3306" || s.Active != "H2:3306" {
		c.Close()
		t.Fatalf("after polls: primary %s active %s, want the list's H2", s.Primary, s.Active)
	}
	c.Close()
	goleak.VerifyNone(t, leaks...)
}

// TestConnectorSwitchTo: an operator's SwitchTo moves the pool's next statement to the
// chosen host; an unknown or dead host is refused and the pool stays.
func TestConnectorSwitchTo(t *testing.T) {
	p := newPool(t, 3, "")
	ctx := context.Background()
	if port, err := p.port(ctx, p.db); err != nil || port != 3301 {
		t.Fatalf("before: port %d %v", port, err)
	}
	if err := p.c.SwitchTo(ctx, "H2:3306"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 5; i++ {
		if port, err := p.port(ctx, p.db); err != nil || port != 3302 {
			t.Fatalf("statement %d after SwitchTo H2: port %d %v", i, port, err)
		}
	}
	if s := p.c.Stats(); s.Active != "H2:3306" || s.Primary != "H2:3306" {
		t.Fatalf("stats: active %s primary %s, want H2, H2", s.Active, s.Primary)
	}
	err := p.c.SwitchTo(ctx, "H7:3306")
	if err == nil || !strings.Contains(err.Error(), "H7:3306") || !strings.Contains(err.Error(), "H1:3306, H2:3306, H3:3306") {
		t.Fatalf("SwitchTo an unknown host: %v", err)
	}
	p.net.Down(2)
	err = p.c.SwitchTo(ctx, "H3:3306")
	if err == nil || !strings.Contains(err.Error(), "H3:3306") || strings.Contains(err.Error(), password) {
		t.Fatalf("SwitchTo a down host: %v", err)
	}
	if port, err := p.port(ctx, p.db); err != nil || port != 3302 {
		t.Fatalf("after the refused SwitchTo: port %d %v, want H2 still", port, err)
	}
	// A context that has ended already: its error, and no attempt blamed on the host.
	done, cancel := context.WithCancel(ctx)
	cancel()
	before := p.attempts(0)
	if err := p.c.SwitchTo(done, "H1:3306"); !errors.Is(err, context.Canceled) || p.attempts(0) != before {
		t.Fatalf("SwitchTo with an ended context: %v after %d attempts, want context.Canceled and none", err, p.attempts(0)-before)
	}
	// After Close: ErrClosed, nothing moves, nothing is dialed.
	_ = p.db.Close()
	if err := p.c.SwitchTo(ctx, "H1:3306"); !errors.Is(err, failover.ErrClosed) {
		t.Fatalf("SwitchTo after Close: %v, want failover.ErrClosed", err)
	}
	if s := p.c.Stats(); s.Active != "H2:3306" || p.attempts(0) != before {
		t.Fatalf("after SwitchTo on a closed connector: active %s, %d attempts on H1", s.Active, p.attempts(0)-before)
	}
}

// A host the policy ignores (localDC's remote hosts beyond usedHostsPerRemoteDC) is never
// connected to, SwitchTo included: an error names it, and nothing moves.
func TestConnectorSwitchToAnIgnoredHost(t *testing.T) {
	n := fake.NewNet(t, 2)
	cfg, err := dsn.Parse("app:" + password + "@tcp(H1:3306;dc=dc1,H2:3306;dc=dc2)/shop?localDC=dc1")
	if err != nil {
		t.Fatal(err)
	}
	c, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithDial(n.Dial))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.SwitchTo(context.Background(), "H2:3306")
	if err == nil || !strings.Contains(err.Error(), "H2:3306") || !strings.Contains(err.Error(), "ignores") {
		t.Fatalf("SwitchTo an ignored host: %v, want an error naming it", err)
	}
	if len(n.Conns(1)) != 0 {
		t.Fatal("the ignored host was connected to")
	}
	if s := c.Stats(); s.Active != "H1:3306" || s.Primary != "H1:3306" || s.Failovers != 0 {
		t.Fatalf("stats %+v after a refused SwitchTo", s)
	}
}

// startMonitor opens (and closes) one connection: the monitor starts with the first.
func startMonitor(t *testing.T, c *mysqlfailover.Connector) {
	t.Helper()
	cn, err := c.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := cn.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestAbortWithTestDialer: a connector whose sockets the tracker cannot see (WithDial)
// still survives the monitor declaring its host down: the abort closes nothing, and
// does not crash the monitor goroutine (a nil tracker once did).
func TestAbortWithTestDialer(t *testing.T) {
	n := fake.NewNet(t, 2)
	cfg, err := dsn.Parse("app:" + password + "@tcp(H1:3306,H2:3306)/shop?checkInterval=10ms&failoverDelay=0s")
	if err != nil {
		t.Fatal(err)
	}
	aborts := make(chan failover.Event, 4)
	c, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithDial(n.Dial), mysqlfailover.WithEventHook(func(e failover.Event) {
		if e.Kind == failover.EventAbort {
			select {
			case aborts <- e:
			default:
			}
		}
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	startMonitor(t, c)
	n.Down(0)
	select {
	case e := <-aborts:
		if e.Host != "H1:3306" {
			t.Fatalf("abort of %s, want H1:3306", e.Host)
		}
	case <-time.After(10 * time.Second): // a hang guard, not a timing assertion
		t.Fatal("no abort of H1 after it went down")
	}
	if s := c.Stats(); s.Active != "H2:3306" || s.Aborted != 1 {
		t.Fatalf("after the abort: active %s, aborted %d; want H2:3306, 1", s.Active, s.Aborted)
	}
}
