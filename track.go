package mysqlfailover

import (
	"context"
	"fmt"
	"net"
	"sync"
	"syscall"
	"time"
)

// tracker knows every socket the connector's physical connections use, per host
// address, so that the failover monitor can close those of a host it declared down
// (statements in flight then fail at once instead of waiting for readTimeout) and Stats
// can count them.
type tracker struct {
	mu    sync.Mutex
	conns map[string]map[*trackedConn]struct{}
}

// dialFunc returns a go-sql-driver Config.DialFunc that dials as go-sql-driver would
// without one and tracks the socket: with next when set (the caller's own
// Config.MySQL.DialFunc), else with the function registered for the network with
// mysql.RegisterDialContext (looked up at each dial, as go-sql-driver does; "tcp" too,
// for an SSH tunnel or SOCKS dialer), else with a net.Dialer with TCP keep-alive (15 s),
// go-sql-driver's own default. Every socket is tracked whichever way it was dialled.
func (t *tracker) dialFunc(next func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
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
		tc := &trackedConn{Conn: nc, t: t, addr: addr}
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
		t.mu.Unlock()
		return out, nil
	}
}

func (t *tracker) forget(tc *trackedConn) {
	t.mu.Lock()
	set := t.conns[tc.addr]
	delete(set, tc)
	if len(set) == 0 {
		delete(t.conns, tc.addr) // a host list whose addresses churn must not grow the map
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

// open returns the number of open sockets to addr.
func (t *tracker) open(addr string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns[addr])
}

// trackedConn is a net.Conn that unregisters itself when closed.
type trackedConn struct {
	net.Conn
	t    *tracker
	addr string
	once sync.Once
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
