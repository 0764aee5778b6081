package cluster

// Galera's replica reads (replicaReads on a Galera cluster): every ready node but the
// pool's writer serves reads, and a node's lag is read from the cluster's own counter,
// wsrep_last_committed, the global sequence number of the last write set it committed:
// the same number on every node for the same write. The receive queue
// (wsrep_local_recv_queue) says nothing of it: it stayed 0 while a node served stale
// reads. The probes of every node feed one frontier, when the cluster first reached each
// sequence number; a node's lag is how long ago the cluster passed its own number.
// Each host's last read place in its cluster (galeraView) is what noteGalera (ready.go)
// compares to tell a minority bootstrapped apart.
//
// Lock order: the frontier's lock and a galeraView's are leaves: each may be taken while
// a hostState's mu is held (a galeraView is read so, beside its host's readiness), and
// neither is held while another lock is taken.

import (
	"sync"
	"time"
)

// seqFrontier is when the cluster first reached each sequence number its probes saw: a
// ring of (time, seqno) with both increasing. Its zero value is empty; it has its own
// lock (probes of several hosts end at once).
type seqFrontier struct {
	mu   sync.Mutex
	at   [DefaultGaleraSamples]time.Time
	seq  [DefaultGaleraSamples]int64
	head int // index of the oldest sample
	n    int // samples held
}

// note records that a node had committed seqno at now; only a number above every one
// seen is a new sample.
func (f *seqFrontier) note(now time.Time, seqno int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n > 0 && seqno <= f.seq[(f.head+f.n-1)%len(f.seq)] {
		return
	}
	i := (f.head + f.n) % len(f.seq)
	if f.n == len(f.seq) {
		f.head = (f.head + 1) % len(f.seq) // the oldest goes
	} else {
		f.n++
	}
	f.at[i], f.seq[i] = now, seqno
}

// lag returns how far a node that has committed seqno is behind, at now: 0 when no node
// was seen further, else the time since the cluster first reached a number above it (at
// least that long when that was before the oldest sample held).
func (f *seqFrontier) lag(now time.Time, seqno int64) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	for k := 0; k < f.n; k++ {
		i := (f.head + k) % len(f.seq)
		if f.seq[i] > seqno {
			return max(now.Sub(f.at[i]), 0)
		}
	}
	return 0
}

// noteGaleraLag records what host h's probe read of its place in the cluster (g), as the
// lag replicaReads and maxReplicaLag use (noteLag): the frontier is fed by every node,
// writer or not, and the writer's own lag is not read.
func (c *Cluster) noteGaleraLag(h *hostState, writer bool, g GaleraState) {
	now := c.env.Clock.Now()
	if g.Seqno < 0 {
		c.noteLag(h, LagUnknown, "wsrep_last_committed not reported")
		return
	}
	c.rep.frontier.note(now, g.Seqno)
	if writer {
		c.noteLag(h, LagUnknown, "the pool's writer: not read")
		return
	}
	c.noteLag(h, c.rep.frontier.lag(now, g.Seqno), "")
}

// galeraView is a host's place in its Galera cluster as its last state read found it:
// part of its hostState (h.gal), under its own lock.
type galeraView struct {
	mu sync.Mutex
	g  GaleraState
	at time.Time // when g was read (zero: never)
}

// set records g, read at now.
func (v *galeraView) set(g GaleraState, now time.Time) {
	v.mu.Lock()
	v.g, v.at = g, now
	v.mu.Unlock()
}

// get returns the place last read and when (zero: never).
func (v *galeraView) get() (GaleraState, time.Time) {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.g, v.at
}
