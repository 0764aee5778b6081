package cluster

// The replica sessions the connections of one pool share (replicaReads). Each replica
// host has a stack of idle open sessions: an autocommit read-intent statement takes one
// (TakeReplica) and its connection gives it back when the statement is over (PutReplica),
// so that the sessions open on a replica follow the concurrent read load, not the number
// of pooled connections (ProxySQL's per-backend connection pool; MaxScale opens backend
// sessions per client session, lazily). A connection keeps a session only while
// something of it needs that very session: open rows, a prepared statement, a read-only
// transaction (package conn).

import (
	"context"
	"database/sql/driver"
	"sync"
	"sync/atomic"
	"time"
)

// PooledReplica is a replica session as the pool keeps it: the connection package's own
// type, which the pool only closes, counts and times.
type PooledReplica interface {
	// Replica returns the session's physical connection, its host and when it was last
	// used (cluster clock, UnixNano).
	Replica() (conn driver.Conn, host int, lastUsed int64)
}

// replicaPool is the pool's shared replica sessions, under its own lock; slices indexed
// by host id.
type replicaPool struct {
	mu      sync.Mutex
	idle    [][]PooledReplica // per host, the most recently used last
	open    []int             // per host: sessions open, idle or in use, and being opened
	waits   []int64           // per host: takes that waited at replicaPoolSize (HostStats.ReplicaWaits)
	suspect []int64           // per host: cluster clock (UnixNano) of the last session of it that broke (ReplicaSessionEnded)
	freed   []chan struct{}   // per host: closed and replaced when one of its sessions is given back or closed: wakes those waiting on it, full
	sweepAt int64             // cluster clock (UnixNano) of the next look for expired idle sessions
	closed  bool
	epochs  atomic.Uint64 // the last session number given out (ReplicaEpoch)
}

// ReplicaEpoch returns a number no other replica session of the pool has (from 1 up).
func (c *Cluster) ReplicaEpoch() uint64 { return c.rpool.epochs.Add(1) }

// TakeReplica returns an idle session of host, the most recently used one, or nil when
// the caller is to open a new one (OpenReplica; then ReplicaClosed if that fails): the
// session counts as open from now on. check says the session sat idle while another
// session of host broke (ReplicaSessionEnded): it may be broken too, and gets the
// liveness check before its use. With replicaPoolSize > 0 and as many sessions open to
// host, it waits until one is given back or closed, or ctx ends (its error). now is the
// cluster clock's (UnixNano): idle sessions past DefaultReplicaMaxIdle are closed first,
// on every host, once a second at most.
func (c *Cluster) TakeReplica(ctx context.Context, host int, now int64) (r PooledReplica, check bool, err error) {
	p := &c.rpool
	for waited := false; ; waited = true {
		p.mu.Lock()
		stale := c.expiredLocked(now)
		p.grow(host)
		if s := p.idle[host]; len(s) > 0 {
			r = s[len(s)-1]
			s[len(s)-1] = nil
			p.idle[host] = s[:len(s)-1]
			_, _, used := r.Replica()
			check = used <= p.suspect[host]
			p.mu.Unlock()
			c.closeReplicas(stale)
			return r, check, nil
		}
		if max := c.cfg.ReplicaPoolSize; max == 0 || p.open[host] < max {
			p.open[host]++
			p.mu.Unlock()
			c.closeReplicas(stale)
			return nil, false, nil
		}
		freed := p.freedLocked(host)
		if !waited {
			p.waits[host]++ // once per take, however often a give-back wakes it
		}
		p.mu.Unlock()
		c.closeReplicas(stale)
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// PutReplica gives back r, whose statement is over, for any connection of the pool to
// take; r is closed instead when the pool is closed or its host left the host list.
func (c *Cluster) PutReplica(r PooledReplica) {
	_, host, used := r.Replica()
	p := &c.rpool
	p.mu.Lock()
	stale := c.expiredLocked(used)
	if p.closed || !c.Member(host) {
		stale = append(stale, r)
	} else {
		p.grow(host)
		p.idle[host] = append(p.idle[host], r)
		p.wakeLocked(host)
	}
	p.mu.Unlock()
	c.closeReplicas(stale)
}

// ReplicaClosed records that a session of host that TakeReplica gave out, or let the
// caller open, is closed (or failed to open): it no longer counts, and its host id is
// released (Release) when it was open.
func (c *Cluster) ReplicaClosed(host int, wasOpen bool) {
	p := &c.rpool
	p.mu.Lock()
	p.grow(host)
	p.open[host]--
	p.wakeLocked(host)
	p.mu.Unlock()
	if wasOpen {
		c.Release(host)
	}
}

// replicaStats returns the number of idle shared sessions of host and how many takes
// waited for one.
func (c *Cluster) replicaStats(host int) (idle int, waits int64) {
	p := &c.rpool
	p.mu.Lock()
	defer p.mu.Unlock()
	if host >= len(p.idle) {
		return 0, 0
	}
	return len(p.idle[host]), p.waits[host]
}

// suspectReplicas marks the idle sessions of host, at now, for the liveness check
// before their next use: one of its sessions just broke (a restart, a kill, the
// network), and those idle beside it may have broken with it.
func (c *Cluster) suspectReplicas(host int, now int64) {
	p := &c.rpool
	p.mu.Lock()
	p.grow(host)
	p.suspect[host] = now
	p.mu.Unlock()
}

// sweepReplicas closes the idle sessions past DefaultReplicaMaxIdle and those of hosts
// that left the host list, now.
func (c *Cluster) sweepReplicas() {
	p := &c.rpool
	p.mu.Lock()
	p.sweepAt = 0
	stale := c.expiredLocked(c.env.Clock.Now().UnixNano())
	p.mu.Unlock()
	c.closeReplicas(stale)
}

// closeReplicaPool closes every idle session, and later ones as they are given back
// (Close).
func (c *Cluster) closeReplicaPool() {
	p := &c.rpool
	p.mu.Lock()
	p.closed = true
	var all []PooledReplica
	for h, s := range p.idle {
		all = append(all, s...)
		p.idle[h] = nil
	}
	p.mu.Unlock()
	c.closeReplicas(all)
}

// grow makes the per-host slices (rpool.mu held) hold host.
func (p *replicaPool) grow(host int) {
	if host >= len(p.open) {
		p.open = append(p.open, make([]int, host+1-len(p.open))...)
	}
	if host >= len(p.idle) {
		p.idle = append(p.idle, make([][]PooledReplica, host+1-len(p.idle))...)
		p.waits = append(p.waits, make([]int64, host+1-len(p.waits))...)
		p.suspect = append(p.suspect, make([]int64, host+1-len(p.suspect))...)
		p.freed = append(p.freed, make([]chan struct{}, host+1-len(p.freed))...)
	}
}

// expiredLocked takes out of the idle stacks (rpool.mu held), when a second has passed
// since it last looked, the sessions idle for DefaultReplicaMaxIdle or longer at now,
// and those of hosts that left the host list, for the caller to close.
func (c *Cluster) expiredLocked(now int64) []PooledReplica {
	p := &c.rpool
	if now < p.sweepAt {
		return nil
	}
	p.sweepAt = now + int64(time.Second)
	var out []PooledReplica
	for h, s := range p.idle {
		n := len(s)
		if c.Member(h) {
			n = 0 // the oldest are at the bottom
			for n < len(s) {
				if _, _, used := s[n].Replica(); now-used < int64(DefaultReplicaMaxIdle) {
					break
				}
				n++
			}
		}
		if n > 0 {
			out = append(out, s[:n]...)
			k := copy(s, s[n:])
			clear(s[k:])
			p.idle[h] = s[:k]
		}
	}
	return out
}

// freedLocked returns the channel closed at the next give-back or close of a session of
// host.
func (p *replicaPool) freedLocked(host int) chan struct{} {
	if p.freed[host] == nil {
		p.freed[host] = make(chan struct{})
	}
	return p.freed[host]
}

// wakeLocked wakes those waiting for a session of host, full.
func (p *replicaPool) wakeLocked(host int) {
	if ch := p.freed[host]; ch != nil {
		close(ch)
		p.freed[host] = nil
	}
}

// closeReplicas closes sessions taken out of the idle stacks (never under the lock).
func (c *Cluster) closeReplicas(rs []PooledReplica) {
	for _, r := range rs {
		conn, host, _ := r.Replica()
		_ = conn.Close()
		c.ReplicaClosed(host, true)
	}
}
