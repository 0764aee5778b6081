//go:build unix

package harness

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"
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
	stop := forward(t, i2.Addr(), i1.Addr())
	if err := i2.Start(ctx); !errors.Is(err, errPortInUse) {
		t.Fatalf("start on a port where node 1 answers through a proxy: %v, want a port in use", err)
	}
	stop()
	if err := i2.Start(ctx); err != nil {
		t.Fatalf("start once the port is free: %v", err)
	}
}

// forward listens on addr and copies each connection to and from to; stop closes the
// listener and the connections and waits for the copies.
func forward(t *testing.T, addr, to string) (stop func()) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	stopped := false
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", to)
			if err != nil {
				c.Close()
				continue
			}
			mu.Lock()
			if stopped { // accepted as stop closed the listener
				mu.Unlock()
				c.Close()
				s.Close()
				return
			}
			conns = append(conns, c, s)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); io.Copy(s, c); s.Close() }()
			go func() { defer wg.Done(); io.Copy(c, s); c.Close() }()
		}
	}()
	return func() {
		l.Close()
		mu.Lock()
		stopped = true
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}
}
