package conn

// Lending a session that sits idle in database/sql's pool to the failover monitor's
// probes (Lender, cluster.Env.Borrow), so that an instance of a fleet costs the primary
// no session of its own for its probes. database/sql calls IsValid when it puts a
// connection back into its pool and ResetSession just before it hands it to its next
// user (also when it hands it straight to a caller queued at MaxOpenConns), and may
// Close it at any time meanwhile (its idle cleaner, DB.Close): IsValid marks a
// connection idle, ResetSession and Close mark it busy first, waiting for a probe in
// progress, which holds the connection's lend lock for its round trip.

import (
	"database/sql/driver"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultLendIdle is the connector's Lender.MinIdle: 500 ms, the period at which the
// monitor watches the hosts other than the pool's while something looks wrong (the
// calm period, 2 s, divided by 4). A session reused more often than that is in use.
const DefaultLendIdle = 500 * time.Millisecond

// Lender is the registry of one connector's live connections, from which the monitor's
// probes borrow an idle primary session (Borrow). A connection joins it when it opens
// and leaves it when it closes, never per statement. Its methods are safe for
// concurrent use.
type Lender struct {
	// Now, if set, is the clock of MinIdle: the connector's.
	Now func() time.Time
	// MinIdle is how long a session must have sat idle before it is lent (0: at once).
	// database/sql hands the session put back last to its next user first: a session in
	// steady use is idle for a few milliseconds at a time, and its user would wait for
	// the probe's round trip. Its probes then run on the host's own probe session.
	MinIdle time.Duration
	mu      sync.Mutex
	conns   []*Conn       // the live connections; each knows its index (lendState.slot)
	tick    atomic.Uint64 // orders idle periods: a connection idle since later has a larger lendState.seq
}

// lendState is what a connection's lending needs. mu guards seq, host and phys, and is
// held by a probe for as long as it uses the lent session; slot is guarded by
// Lender.mu; reset and stmts are the proxy's own.
type lendState struct {
	mu    sync.Mutex
	phys  driver.Conn // the primary session that may be lent: set while the connection sits idle in the pool (lendIdle)
	host  int         // phys's host
	seq   uint64      // when it became idle, from Lender.tick
	since time.Time   // when it became idle, on Lender.Now (zero without a clock)
	slot  int         // its index in Lender.conns
	used  bool        // a caller ran something through it, or ResetSession ran: database/sql resets it before every later use
	stmts int         // statements prepared through it and not yet closed (Prepared, Unprepared)
}

// add registers c.
func (l *Lender) add(c *Conn) {
	l.mu.Lock()
	c.lend.slot = len(l.conns)
	l.conns = append(l.conns, c)
	l.mu.Unlock()
}

// remove unregisters c, which add registered.
func (l *Lender) remove(c *Conn) {
	l.mu.Lock()
	last := len(l.conns) - 1
	moved := l.conns[last]
	l.conns[c.lend.slot], moved.lend.slot = moved, c.lend.slot
	l.conns[last] = nil
	l.conns = l.conns[:last]
	l.mu.Unlock()
}

// Borrow implements cluster.Env.Borrow: it lends the primary session of the connection
// of host that has sat idle in the pool the longest (database/sql hands out the one put
// back last first), if for at least MinIdle, or returns a nil conn when none has. A
// connection whose lend lock is held (a probe, or database/sql taking it) is passed
// over: Borrow never waits. Until giveBack is called the session is the probe's: the connection's
// ResetSession and Close wait for it. giveBack(true) closes the session (the probe failed
// on it), and the connection's next user gets a new one, as for a session the server
// closed while it sat idle.
func (l *Lender) Borrow(host int) (conn driver.Conn, giveBack func(broken bool)) {
	var best *Conn
	var idleBefore time.Time // lent only if idle since before it (MinIdle)
	if l.Now != nil && l.MinIdle > 0 {
		idleBefore = l.Now().Add(-l.MinIdle)
	}
	l.mu.Lock()
	for _, c := range l.conns {
		if !c.lend.mu.TryLock() {
			continue
		}
		if c.lend.phys != nil && c.lend.host == host && !c.lend.since.After(idleBefore) && (best == nil || c.lend.seq < best.lend.seq) {
			if best != nil {
				best.lend.mu.Unlock()
			}
			best = c
			continue
		}
		c.lend.mu.Unlock()
	}
	l.mu.Unlock()
	if best == nil {
		return nil, nil
	}
	return best.lend.phys, best.prim.lendBack
}

// lendBack ends a probe's use of c's session (Borrow's giveBack): a broken one is
// closed and dropped, as one that died idle in the pool.
func (p *prim) lendBack(broken bool) {
	if broken {
		p.lend.phys = nil
		p.drop()
	}
	p.lend.mu.Unlock()
}

// lendIdle marks c idle, for IsValid when database/sql puts it back into its pool: its
// primary session may be lent when a caller has used the connection (ready) or it has
// been reset once. database/sql then resets it before its next use: its first putConn
// after a use marks it so for good, and the one put-back that does not (a caller that
// gave up waiting, whose connection was fresh) returns a connection nobody used. It is outside any transaction with autocommit on (a
// probe's read of a transactional table would open one), it holds no session state
// (held.go), and no result set or prepared statement of it is open (database/sql may
// close a statement while the connection sits idle).
func (p *prim) lendIdle() {
	if p.cfg.Lender == nil || !p.lend.used || p.phys == nil || p.tx != nil || p.rows > 0 || p.lend.stmts > 0 ||
		p.lost != nil || p.st.held() || p.st.ac != acOn || p.sess.has.any() {
		return
	}
	p.lend.mu.Lock()
	p.lend.host, p.lend.phys = p.host, p.phys
	p.lend.seq = p.cfg.Lender.tick.Add(1)
	if p.cfg.Lender.Now != nil {
		p.lend.since = p.cfg.Lender.Now()
	}
	p.lend.mu.Unlock()
}

// busy marks the connection busy, for ResetSession and Close (with a Lender): it waits
// for a probe that uses its session (at most the probe's bound), after which the
// connection is its own again.
func (l *lendState) busy() {
	l.mu.Lock()
	l.phys = nil
	l.mu.Unlock()
}
