package fake

import (
	"database/sql/driver"
	"strconv"
	"strings"
	"time"

	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// The fake hosts' sockets and server threads, for the rules that read them: whether a
// failed request was sent (the bytes a socket took), and the settling of a COMMIT whose
// outcome is unknown (KILL of the session's thread, then the process list until it is
// gone).
//
// Every fake connection has a socket (Conn.Sock) and a server thread id (from
// FirstThread on, one per connection, across hosts). A call that reaches the host counts
// as written: every call except one refused as driver.ErrBadConn before it is sent (a
// closed or Broken connection); a call failing with the host's I/O error (Down, Kill)
// was written before its read failed, and so was every call the script answers, errors
// included (driver.ErrBadConn too: a request written in part, as go-sql-driver's LOAD
// DATA LOCAL file packets).

// FirstThread is the server thread id of the first fake connection of a process.
const FirstThread = 1000

// TrackSockets makes Socket answer for the connections of n, as the connector's socket
// tracker does for real ones; without it Socket returns nil (a dialer the tracker does
// not see), and the driver decides from the error alone. now, when not nil, stamps
// each new connection's socket with the time its server greeted it (the test's clock).
func (n *Net) TrackSockets(now func() time.Time) {
	n.mu.Lock()
	n.sockets, n.now = true, now
	n.mu.Unlock()
}

// SetUptime sets what host i answers to cluster.UptimeQuery (every host starts at
// DefaultUptime).
func (n *Net) SetUptime(i int, d time.Duration) {
	n.mu.Lock()
	n.hosts[i].uptime = d
	n.mu.Unlock()
}

// DefaultUptime is the uptime every fake host starts with: long before any test's
// connections opened.
const DefaultUptime = 1000 * time.Hour

// Socket is a cluster.Env.Socket: the socket of c, one of n's connections, once
// TrackSockets was called; else nil.
func (n *Net) Socket(c driver.Conn) *cluster.Socket {
	n.mu.Lock()
	on := n.sockets
	n.mu.Unlock()
	if fc, ok := c.(*Conn); ok && on {
		return &fc.Sock
	}
	return nil
}

// Kills returns the thread ids host i was asked to KILL, in order.
func (n *Net) Kills(i int) []uint32 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]uint32(nil), n.hosts[i].kills...)
}

// Linger makes a thread host i is asked to KILL stay in its process list for the next
// polls reads of it.
func (n *Net) Linger(i, polls int) {
	n.mu.Lock()
	n.hosts[i].linger = polls
	n.mu.Unlock()
}

// ProcessReads returns how many process-list reads host i answered.
func (n *Net) ProcessReads(i int) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hosts[i].processReads
}

// KillErr makes host i answer every KILL with err (nil: it kills).
func (n *Net) KillErr(i int, err error) {
	n.mu.Lock()
	n.hosts[i].killErr = err
	n.mu.Unlock()
}

// threadAnswer answers the statements of the driver's settling of a COMMIT on host
// c.Host: KILL CONNECTION (recorded, or refused with the host's KillErr) and the
// process-list read (a row while the host lingers). ok is false for any other query.
func (c *Conn) threadAnswer(query string) (driver.Rows, error, bool) {
	n := c.net
	switch {
	case query == cluster.UptimeQuery:
		n.mu.Lock()
		defer n.mu.Unlock()
		up := n.hosts[c.Host].uptime
		n.hosts[c.Host].uptimeReads++
		return &rows{vals: [][]driver.Value{{[]byte("Uptime"), []byte(strconv.FormatInt(int64(up/time.Second), 10))}}}, nil, true
	case strings.HasPrefix(query, "KILL CONNECTION "):
		id, perr := strconv.ParseUint(strings.TrimPrefix(query, "KILL CONNECTION "), 10, 32)
		if perr != nil {
			return nil, perr, true
		}
		n.mu.Lock()
		defer n.mu.Unlock()
		h := n.hosts[c.Host]
		if h.killErr != nil {
			return nil, h.killErr, true
		}
		h.kills = append(h.kills, uint32(id))
		return nil, nil, true
	case strings.HasPrefix(query, cluster.ProcessQuery):
		n.mu.Lock()
		defer n.mu.Unlock()
		h := n.hosts[c.Host]
		h.processReads++
		r := &rows{cols: []string{"ID"}}
		if h.linger > 0 {
			h.linger--
			r.vals = [][]driver.Value{{strings.TrimPrefix(query, cluster.ProcessQuery)}}
		}
		return r, nil, true
	}
	return nil, nil, false
}

// UptimeReads returns how many uptime reads (cluster.UptimeQuery) host i answered.
func (n *Net) UptimeReads(i int) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hosts[i].uptimeReads
}
