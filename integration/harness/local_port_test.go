//go:build unix

package harness

import (
	"context"
	"errors"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/rs/zerolog"
)

// TestLocalPortTakenByAnotherServer starts a server on a port where a proxy to another
// server already listens, as a toxiproxy of the same cluster once did in CI: the start must
// fail as a port in use (the proxy's server answered for it before), and succeed once the
// port is free. The nodes' ports lie below the kernel's ephemeral range, where no proxy on
// port 0 and no outgoing connection lands.
func TestLocalPortTakenByAnotherServer(t *testing.T) {
	b := &LocalBackend{Logf: t.Logf}
	defer b.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	one, err := b.StartNode(ctx, NodeSpec{Index: 1, ServerID: 1})
	if errors.Is(err, ErrNoServer) {
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	two, err := b.StartNode(ctx, NodeSpec{Index: 2, ServerID: 2})
	if err != nil {
		t.Fatal(err)
	}
	i1, i2 := one.(*localInstance), two.(*localInstance)
	if low := ephemeralLow(); i1.port >= low || i2.port >= low {
		t.Errorf("ports %d and %d: want both below the ephemeral range (from %d)", i1.port, i2.port, low)
	}

	if err := i2.Kill(); err != nil {
		t.Fatal(err)
	}
	// A toxiproxy proxy to node 1 on node 2's port, as the cluster's proxies are.
	proxy := toxiproxy.NewProxy(toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()), "taken", i2.Addr(), i1.Addr())
	if err := proxy.Start(); err != nil {
		t.Fatal(err)
	}
	err = i2.Start(ctx)
	proxy.Stop()
	if !errors.Is(err, errPortInUse) {
		t.Fatalf("start on a port where node 1 answers through a proxy: %v, want a port in use", err)
	}
	if err := i2.Start(ctx); err != nil {
		t.Fatalf("start once the port is free: %v", err)
	}
}
