package integration

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// dialCounter is a dial function for mysql.RegisterDialContext, as an SSH tunnel or a
// SOCKS dialer would be, that dials TCP and counts the dials per address.
type dialCounter struct {
	mu sync.Mutex
	n  map[string]int
}

func (d *dialCounter) dial(ctx context.Context, addr string) (net.Conn, error) {
	d.mu.Lock()
	if d.n == nil {
		d.n = map[string]int{}
	}
	d.n[addr]++
	d.mu.Unlock()
	var nd net.Dialer
	return nd.DialContext(ctx, "tcp", addr)
}

func (d *dialCounter) count(addr string) int {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n[addr]
}

// openConns returns Stats' OpenConns of addr.
func openConns(cn *mysqlfailover.Connector, addr string) int {
	for _, h := range cn.Stats().Hosts {
		if h.Addr == addr {
			return h.OpenConns
		}
	}
	return -2
}

// TestRegisteredNetwork: a DSN with a network registered with
// mysql.RegisterDialContext, "app:apppw@tunnel(h1,h2,h3)/app", dials every host
// through the registered function; the tracker counts those sockets (Stats.OpenConns);
// node 1 killed, the pool fails over to node 2 through the same function. A network
// nobody registered is an error naming it.
func TestRegisteredNetwork(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, 60*time.Second)
	var d dialCounter
	mysql.RegisterDialContext("mfo-tunnel", d.dial)
	t.Cleanup(func() { mysql.DeregisterDialContext("mfo-tunnel") })
	dsnStr := strings.Replace(c.DSN("readTimeout=2s"), "@tcp(", "@mfo-tunnel(", 1)

	db := openDB(t, "mysqlfailover", dsnStr)
	node, err := nodeOf(ctx, c, db)
	must(t, err)
	cn, err := mysqlfailover.ConnectorOf(ctx, db)
	must(t, err)
	a1, a2 := c.Node(1).ProxyAddr(), c.Node(2).ProxyAddr()
	if node != 1 || d.count(a1) == 0 {
		t.Fatalf("first statement on node %d, %d dials of node 1 through the registered function; want node 1, some", node, d.count(a1))
	}
	if n := openConns(cn, a1); n < 1 {
		t.Errorf("Stats: %d open connections to node 1, want >= 1 (the tracker counts sockets of a registered dialer)", n)
	}

	must(t, c.Node(1).Kill())
	var ran int
	deadline := time.Now().Add(20 * time.Second)
	for ran < 5 && time.Now().Before(deadline) {
		n, err := nodeOf(ctx, c, db)
		var fe *failover.FailoverError
		switch {
		case err == nil && n == 2:
			ran++
		case err == nil:
			t.Fatalf("statement on node %d after node 1 was killed, want node 2", n)
		case errors.As(err, &fe):
			// the one statement that was on node 1
		default:
			t.Fatalf("after the kill: %v", err)
		}
	}
	if ran < 5 || d.count(a2) == 0 {
		t.Fatalf("after node 1 was killed: %d statements on node 2, %d dials of node 2 through the registered function", ran, d.count(a2))
	}
	if st := cn.Stats(); c.NodeByAddr(st.Active) != 2 || openConns(cn, a2) < 1 {
		t.Errorf("Stats after the failover: active %s, %d open connections to node 2; want node 2, >= 1", st.Active, openConns(cn, a2))
	}
	t.Logf("FIGURE %s: dials node1=%d node2=%d", t.Name(), d.count(a1), d.count(a2))

	if _, err := sql.Open("mysqlfailover", strings.Replace(dsnStr, "mfo-tunnel(", "mfo-nobody(", 1)); err == nil ||
		!strings.Contains(err.Error(), `network "mfo-nobody" is not registered`) {
		t.Errorf("sql.Open of an unregistered network: %v, want an error naming it", err)
	}
}

// TestRegisteredTCPDialer: a function registered for "tcp" itself (an SSH
// tunnel, SOCKS) dials every connection of a tcp(...) DSN, probes included, and the
// tracker still counts the sockets.
func TestRegisteredTCPDialer(t *testing.T) {
	c := harness.Start(t, 2)
	ctx := ctxT(t, 30*time.Second)
	var d dialCounter
	mysql.RegisterDialContext("tcp", d.dial)
	t.Cleanup(func() { mysql.DeregisterDialContext("tcp") })

	db := openDB(t, "mysqlfailover", c.DSN("readTimeout=2s&checkInterval=100ms"))
	node, err := nodeOf(ctx, c, db)
	must(t, err)
	cn, err := mysqlfailover.ConnectorOf(ctx, db)
	must(t, err)
	a1, a2 := c.Node(1).ProxyAddr(), c.Node(2).ProxyAddr()
	deadline := time.Now().Add(10 * time.Second)
	for d.count(a2) == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond) // the monitor's first probe of node 2
	}
	if node != 1 || d.count(a1) == 0 || d.count(a2) == 0 {
		t.Fatalf("node %d; dials through the registered tcp function: node 1 %d, node 2 %d (its probe); want node 1, some, some", node, d.count(a1), d.count(a2))
	}
	if n := openConns(cn, a1); n < 1 {
		t.Errorf("Stats: %d open connections to node 1, want >= 1", n)
	}
}

// TestUnixSocket: unix(/path) works, as in go-sql-driver: one socket is one
// host, dialled with net.Dialer and tracked; a list of sockets is an error.
func TestUnixSocket(t *testing.T) {
	c := harness.Start(t, 1)
	ctx := ctxT(t, 30*time.Second)
	sock, err := c.Node(1).QueryString(ctx, "SELECT @@socket")
	must(t, err)
	db := openDB(t, "mysqlfailover", harness.AppUser+":"+harness.AppPassword+"@unix("+sock+")/app")
	var port int
	must(t, db.QueryRowContext(ctx, "SELECT @@port").Scan(&port))
	if c.NodeByPort(port) != 1 {
		t.Fatalf("SELECT @@port = %d over the socket, not node 1's", port)
	}
	cn, err := mysqlfailover.ConnectorOf(ctx, db)
	must(t, err)
	st := cn.Stats()
	if len(st.Hosts) != 1 || st.Hosts[0].Addr != sock || st.Active != sock || st.Hosts[0].OpenConns < 1 {
		t.Errorf("Stats over unix(%s): %+v, want the one socket, active, with its connections counted", sock, st)
	}
	if _, err := sql.Open("mysqlfailover", "app:apppw@unix("+sock+","+sock+"2)/app"); err == nil || !strings.Contains(err.Error(), "one socket") {
		t.Errorf("unix with two sockets: %v, want an error", err)
	}
	// No server behind the socket: the dial's own error, as go-sql-driver returns it.
	bad := openDB(t, "mysqlfailover", "app:apppw@unix("+sock+".none)/app")
	var oe *net.OpError
	if err := bad.PingContext(ctx); !errors.As(err, &oe) || oe.Net != "unix" {
		t.Errorf("Ping of a missing socket: %v, want the *net.OpError of the unix dial", err)
	}
}
