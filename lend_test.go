package mysqlfailover_test

import (
	"context"
	"database/sql"
	"testing"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// hostStat returns addr's entry of s.
func hostStat(s failover.Stats, addr string) failover.HostStats {
	for _, h := range s.Hosts {
		if h.Addr == addr {
			return h
		}
	}
	return failover.HostStats{}
}

// TestConnectorProbesBorrowPooledSessions: with probes on, the primary, where the pool
// holds an idle session, is probed on it and keeps no probe session of the monitor's
// own (one opened before the pool had an idle session is closed); the replica, where
// the pool holds none, keeps its probe session. Stats say so.
func TestConnectorProbesBorrowPooledSessions(t *testing.T) {
	n := fake.NewNet(t, 2)
	cfg, err := dsn.Parse("app:" + password + "@tcp(H1:3306,H2:3306)/shop?checkInterval=10ms")
	if err != nil {
		t.Fatal(err)
	}
	c, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithDial(n.Dial))
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(c)
	defer db.Close()
	db.SetMaxOpenConns(1)
	for range 2 { // opened, then reset once: from then on its session may be lent
		if err := db.PingContext(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	fake.WaitFor(t, "a borrowed probe of H1 and a probe session on H2", func() bool {
		s := c.Stats()
		h1, h2 := hostStat(s, "H1:3306"), hostStat(s, "H2:3306")
		return h1.ProbesBorrowed > 0 && !h1.ProbeSession && h2.ProbeSession && s.ProbeSessions == 1
	})
	open := 0
	for _, pc := range n.Conns(0) {
		if pc.Closes() == 0 {
			open++
		}
	}
	if open != 1 {
		t.Errorf("%d sessions open on H1, want 1: the pool's, no probe session", open)
	}
}
