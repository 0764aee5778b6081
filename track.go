package mysqlfailover

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// tracker knows every socket the connector's physical connections use, per host
// address, so that the failover monitor can close those of a host it declared down
// (statements in flight then fail at once instead of waiting for readTimeout) and Stats
// can count them. Each socket counts the bytes written to it and reads the server's id of
// its session from the greeting (cluster.Socket), and the tracker knows which physical
// connection uses it (bind, socket): a connection then knows whether a failed request
// was sent, and which server thread to kill after a COMMIT whose outcome is unknown,
// without a statement of its own. It also tells the engine whether a host answers its
// sessions (answers) and whether a failed handshake's socket was closed by the server
// (trackedConn.peerClosed).
type tracker struct {
	now    func() time.Time // the Cluster's clock, for cluster.Socket.SetOpened (nil: not stamped)
	mu     sync.Mutex
	conns  map[string]map[*trackedConn]struct{}
	byPhys map[sqldriver.Conn]*trackedConn // the sockets of the physical connections bound to them
	// last is, per address with open sockets, the last read after a greeting on one of
	// them (dropped with the address's last socket).
	last map[string]*lastRead
	seq  atomic.Uint64 // numbers those reads, across addresses
	// stampAnswers has each read with data stamp its time (lastRead.at), for waiting:
	// only where a monitor asks (probing on), so that a read costs no clock read more
	// without one.
	stampAnswers bool
	// armed is the monitor's wake while it sleeps without looking at the waits
	// (armWait): the next Read that starts to wait takes it and calls it.
	armed atomic.Pointer[func()]
}

// lastRead is an address's last read with data after a greeting: its number (seq) and
// when it returned (at, UnixNano on tracker.now; 0 without a clock).
type lastRead struct {
	seq atomic.Uint64
	at  atomic.Int64
}

// answers returns the number of the last read with data after the greeting on a
// socket to addr (cluster.Env.Answers): it grows while a session there answers, and is
// 0 when addr has no socket (it never grows by a socket closing).
func (t *tracker) answers(addr string) uint64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if l := t.last[addr]; l != nil {
		return l.seq.Load()
	}
	return 0
}

// dialedKey is the context key of the slot (a **trackedConn) in which dialFunc leaves
// the socket it dialled, for the caller of go-sql-driver's Connect (bind): go-sql-driver
// passes Connect's context to Config.DialFunc.
type dialedKey struct{}

// withDialed returns ctx with a slot for the socket dialled under it.
func withDialed(ctx context.Context, slot **trackedConn) context.Context {
	return context.WithValue(ctx, dialedKey{}, slot)
}

// bind records that phys, which go-sql-driver's Connect returned under a context with
// a slot (withDialed), uses the socket tc from that slot, until tc is closed.
func (t *tracker) bind(phys sqldriver.Conn, tc *trackedConn) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tc.closed {
		return
	}
	if t.byPhys == nil {
		t.byPhys = map[sqldriver.Conn]*trackedConn{}
	}
	tc.phys = phys
	t.byPhys[phys] = tc
}

// socket returns what the tracker knows of phys's socket, or nil when phys is not bound.
func (t *tracker) socket(phys sqldriver.Conn) *cluster.Socket {
	t.mu.Lock()
	defer t.mu.Unlock()
	if tc := t.byPhys[phys]; tc != nil {
		return &tc.sock
	}
	return nil
}

// dialFunc returns a go-sql-driver Config.DialFunc that dials as go-sql-driver would
// without one and tracks the socket: with next when set (the caller's own
// Config.MySQL.DialFunc), else with the function registered for the network with
// mysql.RegisterDialContext (looked up at each dial, as go-sql-driver does; "tcp" too,
// for an SSH tunnel or SOCKS dialer), else with a net.Dialer with TCP keep-alive (15 s),
// go-sql-driver's own default. Every socket is tracked whichever way it was dialled.
func (t *tracker) dialFunc(next func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		var start time.Time
		if t.now != nil {
			start = t.now() // the session cannot have opened on the server before
		}
		var nc net.Conn
		var err error
		if next != nil {
			nc, err = next(ctx, network, addr)
		} else if reg := registeredDial(network); reg != nil {
			nc, err = reg(ctx, addr)
		} else {
			d := net.Dialer{KeepAlive: 15 * time.Second}
			nc, err = d.DialContext(ctx, network, addr)
		}
		if err != nil {
			return nil, err
		}
		if nc == nil {
			return nil, fmt.Errorf("mysqlfailover: the dial function for network %q returned no connection and no error", network)
		}
		tc := &trackedConn{Conn: nc, t: t, addr: addr, probe: cluster.ProbeMark(ctx)}
		if !start.IsZero() {
			tc.sock.SetOpened(start)
		}
		if slot, ok := ctx.Value(dialedKey{}).(**trackedConn); ok {
			*slot = tc
		}
		var out net.Conn = tc
		if _, ok := nc.(syscall.Conn); ok {
			out = &trackedSysConn{tc}
		}
		t.mu.Lock()
		if t.conns == nil {
			t.conns = map[string]map[*trackedConn]struct{}{}
		}
		set := t.conns[addr]
		if set == nil {
			set = map[*trackedConn]struct{}{}
			t.conns[addr] = set
		}
		set[tc] = struct{}{}
		if t.last == nil {
			t.last = map[string]*lastRead{}
		}
		if t.last[addr] == nil {
			t.last[addr] = &lastRead{}
		}
		tc.last = t.last[addr]
		t.mu.Unlock()
		return out, nil
	}
}

func (t *tracker) forget(tc *trackedConn) {
	t.mu.Lock()
	tc.closed = true
	if tc.phys != nil {
		delete(t.byPhys, tc.phys)
	}
	set := t.conns[tc.addr]
	delete(set, tc)
	if len(set) == 0 {
		delete(t.conns, tc.addr) // a host list whose addresses churn must not grow the map
		delete(t.last, tc.addr)
	}
	t.mu.Unlock()
}

// closeAll closes every socket to addr and returns how many it closed.
func (t *tracker) closeAll(addr string) int {
	t.mu.Lock()
	set := t.conns[addr]
	cs := make([]*trackedConn, 0, len(set))
	for tc := range set {
		cs = append(cs, tc)
	}
	t.mu.Unlock()
	for _, tc := range cs {
		_ = tc.Close()
	}
	return len(cs)
}

// waiting returns since when a Read on a socket to addr has waited while addr sent
// nothing, on the tracker's clock (zero: none waits, or the tracker has no clock):
// cluster.Env's Waiting. That is when the oldest waiting Read started, or the last
// answer on any socket to addr if later: a host that answers other sessions is busy,
// not silent. Probe sockets' waits do not count (their answers do), and an idle socket
// never waits: go-sql-driver checks idle connections with a non-blocking read through
// SyscallConn, not Read.
func (t *tracker) waiting(addr string) time.Time {
	t.mu.Lock()
	defer t.mu.Unlock()
	var oldest int64
	for tc := range t.conns[addr] {
		if w := tc.waitSince.Load(); w != 0 && (oldest == 0 || w < oldest) {
			oldest = w
		}
	}
	if oldest == 0 {
		return time.Time{}
	}
	if l := t.last[addr]; l != nil {
		oldest = max(oldest, l.at.Load())
	}
	return time.Unix(0, oldest)
}

// armWait arms wake for the next Read that starts to wait on a socket of the pool's
// connections (cluster.Env's ArmWait), unless one waits already: then it keeps nothing and
// reports true. The Read stores its wait before it looks at armed, and armWait arms
// before it looks at the waits: one of the two sees the other.
func (t *tracker) armWait(wake func()) (waiting bool) {
	t.armed.Store(&wake)
	t.mu.Lock()
scan:
	for _, conns := range t.conns {
		for tc := range conns {
			if tc.waitSince.Load() != 0 {
				waiting = true
				break scan
			}
		}
	}
	t.mu.Unlock()
	if waiting {
		t.armed.CompareAndSwap(&wake, nil)
	}
	return waiting
}

// open returns the number of open sockets to addr.
func (t *tracker) open(addr string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns[addr])
}

// trackedConn is a net.Conn that unregisters itself when closed, counts the bytes
// written to it and reads the server's id of the session from the greeting, the first
// packet read (TLS starts after it, so it is plain text here).
type trackedConn struct {
	net.Conn
	t      *tracker
	addr   string
	once   sync.Once
	sock   cluster.Socket
	greet  greeting
	phys   sqldriver.Conn // under t.mu: the physical connection bound to it (bind)
	closed bool           // under t.mu: forgotten
	last   *lastRead      // the address's last read after a greeting (tracker.last)
	// peerClosed is set when a read found the socket closed or reset by the server (an
	// EOF, ECONNRESET) or a write found it so (EPIPE, ECONNRESET): not a timeout, not a
	// close of our own.
	peerClosed atomic.Bool
	probe      *atomic.Bool // set while the socket is a probe connection's (cluster.ProbeMark): its waits are not traffic
	// waitSince is when the Read under way started (UnixNano on t.now; 0: no Read
	// waits): a statement waiting for its host's answer (tracker.waiting).
	waitSince atomic.Int64
}

// Read reads from the socket; until the greeting's connection id has passed, it reads
// the bytes as they go by. While it blocks, the socket counts as waiting for its host
// (waitSince), unless it is a probe's.
func (c *trackedConn) Read(b []byte) (int, error) {
	watch := c.t.now != nil && (c.probe == nil || !c.probe.Load())
	if watch {
		c.waitSince.Store(c.t.now().UnixNano())
		if w := c.t.armed.Load(); w != nil && c.t.armed.CompareAndSwap(w, nil) {
			(*w)() // the monitor sleeps without looking: this wait wakes it
		}
	}
	n, err := c.Conn.Read(b)
	if watch {
		c.waitSince.Store(0)
	}
	if !c.greet.done && n > 0 {
		if id, ok := c.greet.feed(b[:n]); ok {
			c.sock.SetThread(id)
		}
	} else if n > 0 && c.last != nil {
		c.last.seq.Store(c.t.seq.Add(1)) // the host answers this session
		if c.t.stampAnswers && c.t.now != nil {
			c.last.at.Store(c.t.now().UnixNano())
		}
	}
	if err != nil && (errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		c.peerClosed.Store(true)
	}
	return n, err
}

// Write writes to the socket and counts the bytes it took.
func (c *trackedConn) Write(b []byte) (int, error) {
	n, err := c.Conn.Write(b)
	c.sock.Wrote(n)
	if err != nil {
		c.sock.WriteFailed()
		if errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET) {
			c.peerClosed.Store(true)
		}
	}
	return n, err
}

// greeting reads the connection id from the server's greeting (the MySQL protocol's
// Initial Handshake Packet, version 10) as its bytes arrive, in pieces of any size: a
// 4-byte packet header, the protocol version (10), the server's version ending with a
// NUL byte, then the connection id, 4 bytes little-endian. Anything else (an error
// packet, another protocol version, a version string longer than maxVersion) ends it
// without an id.
type greeting struct {
	n    int    // bytes of the packet seen
	ver  bool   // the version string has ended
	idn  int    // bytes of the id seen
	id   uint32 // the id so far
	done bool
}

// maxVersion bounds the server version string of a greeting (bytes: MySQL's
// SERVER_VERSION_LENGTH is 60; MariaDB's "5.5.5-10.11.6-MariaDB-1:10.11.6+maria~deb12"
// is 43).
const maxVersion = 250

// feed reads the next bytes b of the stream; ok is true, with the id, once the id is
// complete. After that, or after a greeting it cannot read, done is set.
func (g *greeting) feed(b []byte) (id uint32, ok bool) {
	for _, x := range b {
		switch {
		case g.n < 4: // the packet header: length and sequence number
		case g.n == 4:
			if x != 10 { // an error packet (0xff), or another protocol
				g.done = true
				return 0, false
			}
		case !g.ver:
			if x == 0 {
				g.ver = true
			} else if g.n > 4+maxVersion {
				g.done = true
				return 0, false
			}
		default:
			g.id |= uint32(x) << (8 * g.idn)
			if g.idn++; g.idn == 4 {
				g.done = true
				return g.id, true
			}
		}
		g.n++
	}
	return 0, false
}

// Close closes the socket once and forgets it.
func (c *trackedConn) Close() error {
	err := net.ErrClosed
	c.once.Do(func() {
		c.t.forget(c)
		err = c.Conn.Close()
	})
	return err
}

// trackedSysConn is a trackedConn over a socket that implements syscall.Conn (every TCP
// socket): it passes SyscallConn through, so that go-sql-driver's liveness check of idle
// connections, which needs it, keeps working.
type trackedSysConn struct{ *trackedConn }

// SyscallConn implements syscall.Conn.
func (c *trackedSysConn) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

var _ syscall.Conn = (*trackedSysConn)(nil)

// closedByServer returns err, the error of go-sql-driver's Connect under ctx whose
// socket was tc (nil: the dial failed), as a *cluster.HandshakeClosedError when the TCP
// connection was established and the server then closed or reset it before the session
// was set up (tc.peerClosed), or reset it while the dial returned (ECONNRESET: a
// listener answered, unlike ECONNREFUSED): the engine tries such a session again on the
// same host before it blames the host (an overloaded listener closes some handshakes
// while its other sessions answer). A server's error packet (1040...), a refused dial, a
// timeout and the end of ctx are left as they are.
func closedByServer(ctx context.Context, err error, tc *trackedConn) error {
	var me *mysql.MySQLError
	if err == nil || ctx.Err() != nil || errors.As(err, &me) {
		return err
	}
	if tc != nil && tc.peerClosed.Load() || tc == nil && errors.Is(err, syscall.ECONNRESET) {
		return &cluster.HandshakeClosedError{Err: err}
	}
	return err
}
