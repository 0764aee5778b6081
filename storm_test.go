package mysqlfailover

import (
	"context"
	"database/sql/driver"
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// listen returns a loopback listener whose every accepted connection serve handles.
func listen(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skipf("no loopback listener: %v", err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			serve(c)
		}
	}()
	return ln.Addr().String()
}

// connectTracked is the connector's dial of addr (hostDialer's part): go-sql-driver's
// Connect through the tracker, its error as closedByServer words it.
func connectTracked(ctx context.Context, t *testing.T, addr string, readTimeout time.Duration) error {
	t.Helper()
	tr := &tracker{}
	cfg := mysql.NewConfig()
	cfg.Net, cfg.Addr, cfg.User = "tcp", addr, "app"
	cfg.ReadTimeout = readTimeout
	cfg.DialFunc = tr.dialFunc(nil)
	mc, err := mysql.NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var tc *trackedConn
	phys, err := mc.Connect(withDialed(ctx, &tc))
	if phys != nil {
		phys.Close()
	}
	return closedByServer(ctx, err, tc)
}

// TestClosedByServer: a handshake the server closes (FIN) or resets (RST) after
// accepting the TCP connection (the RST may reach the dial itself) is a
// *cluster.HandshakeClosedError wrapping the driver's error; one that times out
// (readTimeout, the caller's deadline) on a server that never greets, and a refused
// dial, are not (they are the host's).
func TestClosedByServer(t *testing.T) {
	closes := listen(t, func(c net.Conn) { c.Close() })
	resets := listen(t, func(c net.Conn) {
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	})
	held := make(chan net.Conn, 8)
	silent := listen(t, func(c net.Conn) { held <- c }) // a frozen server: accepts, never greets
	t.Cleanup(func() {
		for len(held) > 0 {
			(<-held).Close()
		}
	})
	refused := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Skip(err)
		}
		a := ln.Addr().String()
		ln.Close()
		return a
	}()
	for _, tc := range []struct {
		name   string
		addr   string
		rt     time.Duration
		within time.Duration // the caller's deadline
		closed bool
	}{
		{"closed", closes, 0, 10 * time.Second, true},
		{"reset", resets, 0, 10 * time.Second, true},
		{"readTimeout", silent, 50 * time.Millisecond, 10 * time.Second, false},
		{"deadline", silent, 0, 50 * time.Millisecond, false},
		{"refused", refused, 0, 10 * time.Second, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), tc.within)
			defer cancel()
			err := connectTracked(ctx, t, tc.addr, tc.rt)
			var hc *cluster.HandshakeClosedError
			if err == nil || errors.As(err, &hc) != tc.closed {
				t.Fatalf("%v (%T), want a *cluster.HandshakeClosedError: %v", err, err, tc.closed)
			}
			if tc.closed && !errors.Is(err, driver.ErrBadConn) && !errors.Is(err, mysql.ErrInvalidConn) && !errors.Is(err, syscall.ECONNRESET) {
				t.Fatalf("%v: the driver's error is not wrapped", err)
			}
		})
	}
}

// TestTrackerAnswers: the tracker's count for an address moves with a read after the
// greeting, not with the greeting itself, and is 0 once the address has no socket.
func TestTrackerAnswers(t *testing.T) {
	greeting := []byte{13, 0, 0, 0, 10, '5', '.', '5', 0, 7, 0, 0, 0, 'x', 'y', 'z', 0}
	srv := make(chan net.Conn, 1)
	register(t, "mfo-unit-answers", func(context.Context, string) (net.Conn, error) {
		c, s := net.Pipe()
		srv <- s
		return c, nil
	})
	tr := &tracker{}
	c, err := tr.dialFunc(nil)(context.Background(), "mfo-unit-answers", "h1:3306")
	if err != nil {
		t.Fatal(err)
	}
	s := <-srv
	defer s.Close()
	read := func(b []byte) {
		go s.Write(b)
		buf := make([]byte, len(b))
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	read(greeting)
	if n := tr.answers("h1:3306"); n != 0 {
		t.Fatalf("after the greeting: %d, want 0", n)
	}
	read([]byte{7, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0})
	a := tr.answers("h1:3306")
	if a == 0 {
		t.Fatalf("after a reply: 0, want a read counted")
	}
	read([]byte{1})
	if n := tr.answers("h1:3306"); n <= a {
		t.Fatalf("after a second reply: %d, want more than %d", n, a)
	}
	c.Close()
	if n := tr.answers("h1:3306"); n != 0 {
		t.Fatalf("no socket: %d, want 0", n)
	}
}
