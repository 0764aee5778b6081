package cluster

// The replica sessions the connections of one pool share (replicaReads). Each replica
// host has a stack of idle open sessions: an autocommit read-intent statement takes one
// (Replicas.Take) and its connection gives it back when the statement is over (Replicas.Put),
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

// replicaPool is the pool's shared replica sessions, under its own lock.
type replicaPool struct {
	ids  hostRefs // the Cluster: which ids are listed, and their release
	size int      // replicaPoolSize (0: no bound)

	mu      sync.Mutex
	hosts   []replicaHost // by host id
	sweepAt int64         // cluster clock (UnixNano) of the next look for expired idle sessions
	closed  bool
	epochs  atomic.Uint64 // the last session number given out (ReplicaEpoch)
}

// replicaHost is one host's part of the pool.
type replicaHost struct {
	idle    []PooledReplica // the most recently used last
	open    int             // sessions open, idle or in use, and being opened
	waits   int64           // takes that waited at replicaPoolSize (HostStats.ReplicaWaits)
	suspect int64           // cluster clock (UnixNano) of the last session of it that broke (ReplicaSessionEnded)
	freed   chan struct{}   // closed and replaced when one of its sessions is given back or closed: wakes those waiting on it, full
}

// hostRefs is what the replica pool needs of the host list: whether an id is listed
// (Cluster.Member), and the release of an id a closed session held (Cluster.Release).
type hostRefs interface {
	Member(host int) bool
	Release(host int)
}

// host returns host's part (rpool.mu held), growing the list to hold it.
func (p *replicaPool) host(host int) *replicaHost {
	if host >= len(p.hosts) {
		p.hosts = append(p.hosts, make([]replicaHost, host+1-len(p.hosts))...)
	}
	return &p.hosts[host]
}

// wakeLocked wakes those waiting for a session of h, full.
func (h *replicaHost) wakeLocked() {
	if h.freed != nil {
		close(h.freed)
		h.freed = nil
	}
}

// Epoch returns a number no other replica session of the pool has (from 1 up).
func (rd *Replicas) Epoch() uint64 { return rd.c.rpool.epochs.Add(1) }

// Take returns an idle session of host, the most recently used one, or nil when
// the caller is to open a new one (Replicas.Open; then Replicas.Closed if that fails): the
// session counts as open from now on. check says the session sat idle while another
// session of host broke (Replicas.SessionEnded): it may be broken too, and gets the
// liveness check before its use. With replicaPoolSize > 0 and as many sessions open to
// host, it waits until one is given back or closed, or ctx ends (its error). now is the
// cluster clock's (UnixNano): idle sessions past DefaultReplicaMaxIdle are closed first,
// on every host, once a second at most.
func (rd *Replicas) Take(ctx context.Context, host int, now int64) (r PooledReplica, check bool, err error) {
	return rd.c.rpool.take(ctx, host, now)
}

// take is Replicas.Take.
func (p *replicaPool) take(ctx context.Context, host int, now int64) (r PooledReplica, check bool, err error) {
	for waited := false; ; waited = true {
		p.mu.Lock()
		stale := p.expiredLocked(now)
		h := p.host(host)
		if n := len(h.idle); n > 0 {
			r = h.idle[n-1]
			h.idle[n-1] = nil
			h.idle = h.idle[:n-1]
			_, _, used := r.Replica()
			check = used <= h.suspect
			p.mu.Unlock()
			p.closeReplicas(stale)
			return r, check, nil
		}
		if max := p.size; max == 0 || h.open < max {
			h.open++
			p.mu.Unlock()
			p.closeReplicas(stale)
			return nil, false, nil
		}
		if h.freed == nil {
			h.freed = make(chan struct{})
		}
		freed := h.freed
		if !waited {
			h.waits++ // once per take, however often a give-back wakes it
		}
		p.mu.Unlock()
		p.closeReplicas(stale)
		select {
		case <-freed:
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// Put gives back r, whose statement is over, for any connection of the pool to
// take; r is closed instead when the pool is closed or its host left the host list.
func (rd *Replicas) Put(r PooledReplica) { rd.c.rpool.put(r) }

// put is Replicas.Put.
func (p *replicaPool) put(r PooledReplica) {
	_, host, used := r.Replica()
	p.mu.Lock()
	stale := p.expiredLocked(used)
	if p.closed || !p.ids.Member(host) {
		stale = append(stale, r)
	} else {
		h := p.host(host)
		h.idle = append(h.idle, r)
		h.wakeLocked()
	}
	p.mu.Unlock()
	p.closeReplicas(stale)
}

// Closed records that a session of host that Replicas.Take gave out, or let the
// caller open, is closed (or failed to open): it no longer counts, and its host id is
// released (Release) when it was open.
func (rd *Replicas) Closed(host int, wasOpen bool) { rd.c.rpool.ended(host, wasOpen) }

// ended is Replicas.Closed.
func (p *replicaPool) ended(host int, wasOpen bool) {
	p.mu.Lock()
	h := p.host(host)
	h.open--
	h.wakeLocked()
	p.mu.Unlock()
	if wasOpen {
		p.ids.Release(host)
	}
}

// stats returns the number of idle shared sessions of host and how many takes
// waited for one.
func (p *replicaPool) stats(host int) (idle int, waits int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h := p.host(host)
	return len(h.idle), h.waits
}

// Suspect reports whether a session of host last used at used (cluster clock,
// UnixNano) sat idle while the host was seen failing (see replicaPool.suspect): a session a
// connection holds gets the liveness check before its next use then, as one Replicas.Take
// gives out does.
func (rd *Replicas) Suspect(host int, used int64) bool { return rd.c.rpool.suspected(host, used) }

// suspected is Replicas.Suspect.
func (p *replicaPool) suspected(host int, used int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return host < len(p.hosts) && used <= p.hosts[host].suspect
}

// suspect marks the sessions of host idle at now for the liveness check before
// their next use: one of its sessions just broke, or a probe of the host failed or found
// its probe connection closed (a restart, a kill, the network), and those idle meanwhile
// may have broken with it. A restart that takes less than DefaultIdleCheck would
// otherwise leave sessions that look idle too briefly to check, and a routing key's read
// would meet a dead one and move to another replica.
func (p *replicaPool) suspect(host int, now int64) {
	p.mu.Lock()
	p.host(host).suspect = now
	p.mu.Unlock()
}

// sweep closes the idle sessions past DefaultReplicaMaxIdle at now (cluster clock,
// UnixNano) and those of hosts that left the host list.
func (p *replicaPool) sweep(now int64) {
	p.mu.Lock()
	p.sweepAt = 0
	stale := p.expiredLocked(now)
	p.mu.Unlock()
	p.closeReplicas(stale)
}

// close closes every idle session, and later ones as they are given back
// (Cluster.Close).
func (p *replicaPool) close() {
	p.mu.Lock()
	p.closed = true
	var all []PooledReplica
	for i := range p.hosts {
		all = append(all, p.hosts[i].idle...)
		p.hosts[i].idle = nil
	}
	p.mu.Unlock()
	p.closeReplicas(all)
}

// expiredLocked takes out of the idle stacks (rpool.mu held), when a second has passed
// since it last looked, the sessions idle for DefaultReplicaMaxIdle or longer at now,
// and those of hosts that left the host list, for the caller to close.
func (p *replicaPool) expiredLocked(now int64) []PooledReplica {
	if now < p.sweepAt {
		return nil
	}
	p.sweepAt = now + int64(time.Second)
	var out []PooledReplica
	for id := range p.hosts {
		s := p.hosts[id].idle
		n := len(s)
		if p.ids.Member(id) {
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
			p.hosts[id].idle = s[:k]
		}
	}
	return out
}

// closeReplicas closes sessions taken out of the idle stacks (never under the lock).
func (p *replicaPool) closeReplicas(rs []PooledReplica) {
	for _, r := range rs {
		conn, host, _ := r.Replica()
		_ = conn.Close()
		p.ended(host, true)
	}
}
