package mysqlfailover

import (
	"context"
	sqldriver "database/sql/driver"
	"fmt"
	"net"
	"testing"

	"github.com/mysqlfailover/mysqlfailover/dsn"
)

// Issue 9: the tracker forgets an address once its last socket closes, so a host list
// whose addresses churn does not grow its map.
func TestTrackerForgetsClosedAddresses(t *testing.T) {
	tr := &tracker{}
	dial := tr.dialFunc(func(context.Context, string, string) (net.Conn, error) {
		c, s := net.Pipe()
		_ = s.Close()
		return c, nil
	})
	for i := range 1000 {
		c, err := dial(context.Background(), "tcp", fmt.Sprintf("10.0.%d.%d:3306", i/250, i%250))
		if err != nil {
			t.Fatal(err)
		}
		_ = c.Close()
	}
	tr.mu.Lock()
	n := len(tr.conns)
	tr.mu.Unlock()
	if n != 0 {
		t.Fatalf("tracker keeps %d addresses after every socket closed, want 0", n)
	}
}

// Issue 9: go-sql-driver connectors of addresses that left the host list are dropped when
// a new one is made.
func TestHostConnectorsDropUnlistedAddresses(t *testing.T) {
	cfg, err := dsn.Parse("app:pw@tcp(h1:3306)/shop")
	if err != nil {
		t.Fatal(err)
	}
	current := "h1:3306"
	hc := &hostConnectors{cfg: cfg, tracker: &tracker{}, byAddr: map[string]sqldriver.Connector{},
		listed: func(a string) bool { return a == "h1:3306" || a == current }}
	for i := range 1000 {
		current = fmt.Sprintf("10.0.%d.%d:3306", i/250, i%250)
		if _, err := hc.get(current); err != nil {
			t.Fatal(err)
		}
		if _, err := hc.get("h1:3306"); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(hc.byAddr); n != 2 {
		t.Fatalf("%d connectors kept, want 2 (the listed hosts)", n)
	}
}
