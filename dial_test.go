package mysqlfailover

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
)

// register registers fn for network with go-sql-driver until the test ends.
func register(t *testing.T, network string, fn mysql.DialContextFunc) {
	t.Helper()
	mysql.RegisterDialContext(network, fn)
	t.Cleanup(func() { mysql.DeregisterDialContext(network) })
}

// pipeDial returns a dial function that records the addresses it is asked for and
// answers with one end of a pipe.
func pipeDial() (mysql.DialContextFunc, func() []string) {
	var mu sync.Mutex
	var addrs []string
	return func(_ context.Context, addr string) (net.Conn, error) {
			mu.Lock()
			addrs = append(addrs, addr)
			mu.Unlock()
			c, s := net.Pipe()
			_ = s.Close()
			return c, nil
		}, func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(addrs)
		}
}

// A network registered with mysql.RegisterDialContext is dialled through the
// registered function, and the tracker counts the socket.
func TestTrackerDialsRegisteredNetwork(t *testing.T) {
	fn, got := pipeDial()
	register(t, "mfo-unit-tunnel", fn)
	tr := &tracker{}
	c, err := tr.dialFunc(nil)(context.Background(), "mfo-unit-tunnel", "h1:3306")
	if err != nil {
		t.Fatal(err)
	}
	if a := got(); !slices.Equal(a, []string{"h1:3306"}) {
		t.Fatalf("registered function dialled %q, want [h1:3306]", a)
	}
	if n := tr.open("h1:3306"); n != 1 {
		t.Fatalf("tracker counts %d sockets to h1:3306, want 1", n)
	}
	_ = c.Close()
	if n := tr.open("h1:3306"); n != 0 {
		t.Fatalf("tracker counts %d sockets after Close, want 0", n)
	}
}

// A function registered for "tcp" (an SSH tunnel, SOCKS) is used for tcp hosts,
// and net.Dialer once it is deregistered; both sockets are tracked.
func TestTrackerHonoursRegisteredTCP(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback listener: %v", err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	var calls int
	mysql.RegisterDialContext("tcp", func(ctx context.Context, addr string) (net.Conn, error) {
		calls++
		var d net.Dialer
		return d.DialContext(ctx, "tcp", addr)
	})
	registered := true
	defer func() {
		if registered {
			mysql.DeregisterDialContext("tcp")
		}
	}()
	tr := &tracker{}
	dial := tr.dialFunc(nil)
	addr := ln.Addr().String()
	c1, err := dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c1.Close()
	if calls != 1 {
		t.Fatalf("the function registered for tcp ran %d times, want 1", calls)
	}
	mysql.DeregisterDialContext("tcp")
	registered = false
	c2, err := dial(context.Background(), "tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if calls != 1 {
		t.Fatalf("a deregistered function ran: %d calls", calls)
	}
	if _, ok := c2.(syscall.Conn); !ok {
		t.Errorf("a TCP socket from net.Dialer lost syscall.Conn (go-sql-driver's liveness check needs it)")
	}
	if n := tr.open(addr); n != 2 {
		t.Fatalf("tracker counts %d sockets, want 2 (one per path)", n)
	}
}

// A unix socket is dialled with net.Dialer and tracked under its path.
func TestTrackerDialsUnixSocket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Skipf("no unix socket: %v", err)
	}
	defer ln.Close()
	tr := &tracker{}
	c, err := tr.dialFunc(nil)(context.Background(), "unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if n := tr.open(path); n != 1 {
		t.Fatalf("tracker counts %d sockets to %s, want 1", n, path)
	}
}

// A network that is neither known to net.Dialer nor registered is an error
// naming it, from NewConnector (and so from sql.Open), without the password.
func TestNewConnectorUnregisteredNetwork(t *testing.T) {
	cfg, err := dsn.Parse("app:Secr3tPw@nosuchnet(h1:3306,h2:3306)/shop")
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewConnector(cfg)
	if err == nil || !strings.Contains(err.Error(), `network "nosuchnet" is not registered`) ||
		!strings.Contains(err.Error(), "mysql.RegisterDialContext") || strings.Contains(err.Error(), "Secr3tPw") {
		t.Fatalf("NewConnector: %v, want an error naming the network", err)
	}
	if _, err := sql.Open("mysqlfailover", "app:Secr3tPw@nosuchnet(h1:3306)/shop"); err == nil {
		t.Fatal("sql.Open of an unregistered network: no error")
	}
	// Registered later, the same DSN opens.
	fn, _ := pipeDial()
	register(t, "nosuchnet", fn)
	if _, err := NewConnector(cfg); err != nil {
		t.Fatalf("NewConnector once registered: %v", err)
	}
}

// The hosts of a registered network are walked in order, each dialled
// through the registered function with its address as written.
func TestConnectWalksRegisteredNetworkHosts(t *testing.T) {
	var mu sync.Mutex
	var addrs []string
	register(t, "mfo-unit-walk", func(_ context.Context, addr string) (net.Conn, error) {
		mu.Lock()
		addrs = append(addrs, addr)
		mu.Unlock()
		return nil, &net.OpError{Op: "dial", Net: "mfo-unit-walk", Err: syscall.ECONNREFUSED}
	})
	db, err := sql.Open("mysqlfailover", "app:pw@mfo-unit-walk(h1:1,proj:region:inst)/shop?retriesAllDown=0")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.Ping()
	var nh *failover.NoHostAvailableError
	if !errors.As(err, &nh) {
		t.Fatalf("Ping: %v, want a NoHostAvailableError", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(addrs, []string{"h1:1", "proj:region:inst"}) {
		t.Fatalf("dialled %q, want [h1:1 proj:region:inst]", addrs)
	}
}

// With one host there is no failover: one attempt whatever retriesAllDown
// says, and the dial function's own error, as go-sql-driver returns it (its suite
// compares it by identity); with two hosts, a NoHostAvailableError after the passes.
func TestSingleHostReturnsTheHostsError(t *testing.T) {
	dialErr := errors.New("tunnel refused")
	var mu sync.Mutex
	calls := 0
	register(t, "mfo-unit-single", func(context.Context, string) (net.Conn, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		return nil, dialErr
	})
	db, err := sql.Open("mysqlfailover", "app:pw@mfo-unit-single(h1:1)/shop?retriesAllDown=3")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("DO 1"); err != dialErr {
		t.Fatalf("Exec on one host: %v, want the dial function's error itself", err)
	}
	mu.Lock()
	if calls != 1 {
		t.Errorf("%d dials of the one host, want 1 (retriesAllDown does not apply)", calls)
	}
	mu.Unlock()

	cfg, err := dsn.Parse("app:pw@mfo-unit-single(h1:1,h2:2)/shop?retriesAllDown=0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var nh *failover.NoHostAvailableError
	if _, err := c.Connect(context.Background()); !errors.As(err, &nh) || !errors.Is(err, dialErr) {
		t.Fatalf("Connect with two hosts: %v, want a NoHostAvailableError wrapping the dial error", err)
	}

	// One host with discoverHosts: the cluster may report more, so the walk and its
	// error are those of a list.
	cfg, err = dsn.Parse("app:pw@mfo-unit-single(h1:1)/shop?retriesAllDown=0&discoverHosts=true&checkInterval=1h")
	if err != nil {
		t.Fatal(err)
	}
	d, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Connect(context.Background()); !errors.As(err, &nh) || !errors.Is(err, dialErr) {
		t.Fatalf("Connect to one host with discoverHosts: %v, want a NoHostAvailableError wrapping the dial error", err)
	}
}
