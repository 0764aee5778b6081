package mysqlfailover

import (
	"context"
	sqldriver "database/sql/driver"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// The tracker forgets an address once its last socket closes, so a host list
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

// Go-sql-driver connectors of addresses that left the host list are dropped when
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

// greetingPacket is a server's greeting (protocol 10, the connection id id, the
// mysql_native_password plugin), as go-sql-driver reads it.
func greetingPacket(id uint32, version string) []byte {
	p := []byte{10}
	p = append(p, version...)
	p = append(p, 0)
	p = binary.LittleEndian.AppendUint32(p, id)
	p = append(p, "abcdefgh"...) // the scramble's first part
	p = append(p, 0)
	p = binary.LittleEndian.AppendUint16(p, 0x0200|0x8000) // CLIENT_PROTOCOL_41, CLIENT_SECURE_CONNECTION
	p = append(p, 33, 2, 0)                                // character set, status
	p = binary.LittleEndian.AppendUint16(p, 0x0008)        // CLIENT_PLUGIN_AUTH (upper flags)
	p = append(p, 21, 0, 0, 0, 0, 0, 0)                    // auth data length, reserved
	p = append(p, 0, 0, 0, 0)                              // MariaDB's extended capabilities
	p = append(p, "ijklmnopqrst\x00mysql_native_password\x00"...)
	return append([]byte{byte(len(p)), byte(len(p) >> 8), byte(len(p) >> 16), 0}, p...)
}

// The server's id of a session is read from its greeting as the bytes pass, in pieces
// of any size; anything else than a protocol-10 greeting gives none.
func TestGreetingThreadID(t *testing.T) {
	const id = 0x0A0B0C0D
	good := greetingPacket(id, "5.5.5-10.11.19-MariaDB-0+deb12u1-log")
	for _, tc := range []struct {
		name   string
		stream []byte
		want   bool
	}{
		{"MariaDB", good, true},
		{"an error packet", []byte{9, 0, 0, 0, 0xff, 0x10, 0x04, '#', '0', '8', '0', '0', '4'}, false},
		{"protocol 9", append([]byte{6, 0, 0, 0, 9}, "5.0\x00"...), false},
		{"a version without end", append([]byte{0xff, 0xff, 0, 0, 10}, strings.Repeat("x", 300)...), false},
	} {
		for _, size := range []int{1, 2, 3, 5, 7, len(tc.stream)} {
			var g greeting
			var got uint32
			ok := false
			for b := tc.stream; len(b) > 0 && !g.done; {
				n := min(size, len(b))
				if v, k := g.feed(b[:n]); k {
					got, ok = v, true
				}
				b = b[n:]
			}
			if ok != tc.want || ok && got != id || !g.done {
				t.Errorf("%s in pieces of %d: id %#x, found %v, done %v; want found %v (%#x), done", tc.name, size, got, ok, g.done, tc.want, uint32(id))
			}
		}
	}
}

// The tracker's socket of a physical connection that go-sql-driver opened through a
// Connector: the id of the server's greeting, the bytes written (the handshake
// response), and nothing once the connection is closed. A scripted server on
// 127.0.0.1:0 greets with id 4242 and accepts any login.
func TestTrackedSocketOfConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	served := make(chan error, 1)
	go func() {
		s, err := ln.Accept()
		if err != nil {
			served <- err
			return
		}
		defer s.Close()
		if _, err := s.Write(greetingPacket(4242, "5.5.5-10.11.19-MariaDB")); err != nil {
			served <- err
			return
		}
		var hdr [4]byte
		if _, err := io.ReadFull(s, hdr[:]); err != nil {
			served <- err
			return
		}
		if _, err := io.ReadFull(s, make([]byte, int(hdr[0])|int(hdr[1])<<8|int(hdr[2])<<16)); err != nil {
			served <- err
			return
		}
		_, err = s.Write([]byte{7, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0}) // OK
		served <- err
		_, _ = io.Copy(io.Discard, s) // until the client closes
	}()
	cfg, err := dsn.Parse("app:pw@tcp(" + ln.Addr().String() + ")/")
	if err != nil {
		t.Fatal(err)
	}
	c, err := NewConnector(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dc, err := c.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := <-served; err != nil {
		t.Fatal(err)
	}
	c.tracker.mu.Lock()
	var socks []*cluster.Socket
	for _, tc := range c.tracker.byPhys {
		socks = append(socks, &tc.sock)
	}
	c.tracker.mu.Unlock()
	if len(socks) != 1 {
		t.Fatalf("%d physical connections bound to a socket, want 1", len(socks))
	}
	if id, ok := socks[0].Thread(); !ok || id != 4242 || socks[0].Written() == 0 {
		t.Errorf("socket: thread %d (known %v), %d bytes written; want 4242 and the handshake response", id, ok, socks[0].Written())
	}
	_ = dc.Close()
	c.tracker.mu.Lock()
	n := len(c.tracker.byPhys)
	c.tracker.mu.Unlock()
	if n != 0 {
		t.Errorf("%d physical connections still bound after Close, want 0", n)
	}
}

// A tracked socket counts the bytes each write took and the writes that failed: what a
// connection reads to know whether a failed request was sent (any byte) and whether the
// driver's driver.ErrBadConn came from a failed write (a LOAD DATA LOCAL file packet) or
// after the server's whole answer (go-sql-driver's rejectReadOnly).
func TestTrackedConnCounts(t *testing.T) {
	tr := &tracker{}
	server, client := net.Pipe()
	dial := tr.dialFunc(func(context.Context, string, string) (net.Conn, error) { return client, nil })
	var tc *trackedConn
	nc, err := dial(withDialed(context.Background(), &tc), "tcp", "h1:3306")
	if err != nil || tc == nil {
		t.Fatalf("dial: %v; the slot got %v", err, tc)
	}
	go func() { _, _ = io.ReadFull(server, make([]byte, 5)); _ = server.Close() }()
	if _, err := nc.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	if _, err := nc.Write([]byte("more")); err == nil {
		t.Fatal("a write to a closed peer succeeded")
	}
	if w, f := tc.sock.Written(), tc.sock.WriteFailures(); w != 5 || f != 1 {
		t.Errorf("%d bytes written, %d writes failed; want 5, 1", w, f)
	}
	_ = nc.Close()
}

// The tracker reports when the oldest read waiting for a host's answer started (the
// monitor's evidence that traffic waits, cluster.Env.Waiting): a socket counts while a
// Read blocks on it, and no longer once the answer came; an idle socket never counts,
// nor does a probe's (its waits are the monitor's own).
func TestTrackerWaiting(t *testing.T) {
	clk := fake.NewClock()
	tr := &tracker{now: clk.Now, stampAnswers: true}
	dialPipe := pipeDialer(t, tr)
	idleServer, idle := dialPipe(context.Background())
	defer idle.Close()
	defer idleServer.Close()
	mark := new(atomic.Bool)
	probeServer, probe := dialPipe(cluster.WithProbe(context.Background(), mark))
	defer probe.Close()
	defer probeServer.Close()
	if w := tr.waiting("h1:3306"); !w.IsZero() {
		t.Fatalf("idle sockets: waiting since %v, want none", w)
	}
	go func() { _, _ = probe.Read(make([]byte, 1)) }() // a probe waits for its answer
	start := clk.Now()
	server, nc := dialPipe(context.Background())
	defer nc.Close()
	read := make(chan error, 1)
	go func() { _, err := nc.Read(make([]byte, 4)); read <- err }()
	fake.WaitFor(t, "the read waiting", func() bool { return !tr.waiting("h1:3306").IsZero() })
	fake.WaitFor(t, "the probe's read and the statement's under way", func() bool { return readsBlocked() == 2 })
	clk.Advance(time.Second)
	if w := tr.waiting("h1:3306"); !w.Equal(start) {
		t.Fatalf("a statement waiting since %v: waiting reports %v", start, w)
	}
	if w := tr.waiting("h2:3306"); !w.IsZero() {
		t.Fatalf("another host: waiting since %v, want none", w)
	}
	// Another session of the host answers: the host is busy, not silent, and the wait
	// counts from that answer.
	busyServer, busy := dialPipe(context.Background())
	defer busy.Close()
	defer busyServer.Close()
	greetAndAnswer(t, busyServer, busy)
	answered := clk.Now()
	clk.Advance(time.Second)
	if w := tr.waiting("h1:3306"); !w.Equal(answered) {
		t.Fatalf("the host answered another session at %v: waiting reports %v, want that answer", answered, w)
	}
	if _, err := server.Write([]byte("ok")); err != nil {
		t.Fatal(err)
	}
	if err := fake.Recv(t, "the read", read); err != nil {
		t.Fatal(err)
	}
	if w := tr.waiting("h1:3306"); !w.IsZero() {
		t.Fatalf("the answer came: waiting since %v, want none (the probe's wait does not count)", w)
	}
	// The pool adopts the probe's session (its mark cleared): its next wait is traffic.
	mark.Store(false)
	if _, err := probeServer.Write([]byte("x")); err != nil { // the probe's read returns
		t.Fatal(err)
	}
	fake.WaitFor(t, "the probe's read over", func() bool { return readsBlocked() == 0 })
	adopted := clk.Now()
	go func() { _, _ = probe.Read(make([]byte, 1)) }()
	fake.WaitFor(t, "the adopted session's read waiting", func() bool { return !tr.waiting("h1:3306").IsZero() })
	clk.Advance(time.Second)
	if w := tr.waiting("h1:3306"); !w.Equal(adopted) {
		t.Fatalf("the adopted session waits since %v: waiting reports %v", adopted, w)
	}
	_ = server.Close()
}

// pipeDialer returns a dial of tr to h1:3306 over an in-memory pipe: the server's end and
// the tracked client's, dialled with ctx (a probe's, with cluster.WithProbe).
func pipeDialer(t *testing.T, tr *tracker) func(ctx context.Context) (net.Conn, net.Conn) {
	return func(ctx context.Context) (net.Conn, net.Conn) {
		server, client := net.Pipe()
		nc, err := tr.dialFunc(func(context.Context, string, string) (net.Conn, error) { return client, nil })(ctx, "tcp", "h1:3306")
		if err != nil {
			t.Fatal(err)
		}
		return server, nc
	}
}

// greetAndAnswer has server send client a greeting and then one answer, and client read
// both: the host has answered a session since.
func greetAndAnswer(t *testing.T, server, client net.Conn) {
	t.Helper()
	for _, b := range [][]byte{greetingPacket(7, "5.5.5-10.11.19-MariaDB"), {1, 0, 0, 1, 0}} {
		go func() { _, _ = server.Write(b) }()
		if _, err := io.ReadFull(client, make([]byte, len(b))); err != nil {
			t.Fatal(err)
		}
	}
}

// readsBlocked counts the goroutines blocked in a trackedConn's Read.
func readsBlocked() int {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	n := 0
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "(*trackedConn).Read") {
			n++
		}
	}
	return n
}

// TestTrackerArmWait: the monitor's wake, armed while no read waits, is called once by
// the next read that starts to wait on a socket of the pool, not by a probe's read; armed
// while a read waits already, it is not kept (the monitor looks every grace time then).
func TestTrackerArmWait(t *testing.T) {
	clk := fake.NewClock()
	tr := &tracker{now: clk.Now, stampAnswers: true}
	dialPipe := pipeDialer(t, tr)
	var woken atomic.Int64
	wake := func() { woken.Add(1) }
	if tr.armWait(wake) {
		t.Fatal("armWait with no socket reports a wait")
	}
	probeServer, probe := dialPipe(cluster.WithProbe(context.Background(), new(atomic.Bool)))
	defer probe.Close()
	defer probeServer.Close()
	go func() { _, _ = probe.Read(make([]byte, 1)) }()
	fake.WaitFor(t, "the probe's read under way", func() bool { return readsBlocked() == 1 })
	if n := woken.Load(); n != 0 {
		t.Fatalf("a probe's read woke the monitor %d times, want 0 (its waits are not traffic)", n)
	}
	server, nc := dialPipe(context.Background())
	defer nc.Close()
	defer server.Close()
	read := func() chan error {
		ch := make(chan error, 1)
		go func() { _, err := nc.Read(make([]byte, 1)); ch <- err }()
		fake.WaitFor(t, "the read waiting", func() bool { return !tr.waiting("h1:3306").IsZero() })
		return ch
	}
	answer := func(ch chan error) {
		if _, err := server.Write([]byte("x")); err != nil {
			t.Fatal(err)
		}
		if err := fake.Recv(t, "the read", ch); err != nil {
			t.Fatal(err)
		}
	}
	r := read()
	// The read stores its wait before it takes the wake: wait for the call itself.
	fake.WaitFor(t, "the statement's read to wake the monitor", func() bool { return woken.Load() >= 1 })
	if n := woken.Load(); n != 1 {
		t.Fatalf("the statement's read woke the monitor %d times, want 1", n)
	}
	if !tr.armWait(wake) {
		t.Error("armWait while a read waits reports none")
	}
	answer(r)
	answer(read())
	if n := woken.Load(); n != 1 {
		t.Errorf("the monitor was woken %d times, want 1: once woken, or armed while a read waited, the wake is not kept", n)
	}
}
