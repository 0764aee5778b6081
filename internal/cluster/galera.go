package cluster

// Galera's replica reads (replicaReads on a Galera cluster): every ready node but the
// pool's writer serves reads, and a node's lag is read from the cluster's own counter,
// wsrep_last_committed, the global sequence number of the last write set it committed:
// the same number on every node for the same write. The receive queue
// (wsrep_local_recv_queue) says nothing of it: it stayed 0 while a node served stale
// reads. The probes of every node feed one frontier, when the cluster first reached each
// sequence number; a node's lag is how long ago the cluster passed its own number.
//
// A sequence number counts within one cluster history, wsrep_cluster_state_uuid, which
// every node of a Primary component shares: a cluster bootstrapped anew starts a new
// history from 0. The frontier holds the numbers of one history, the pool writer's: a
// number of another history starts it anew, and a node in another history than the
// writer's (a minority bootstrapped apart, another cluster listed by mistake) is no
// replica of it, whatever its number says.
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

// seqFrontier is when the cluster first reached each sequence number its probes saw,
// within one cluster history: a ring of (time, seqno) with both increasing. Its zero
// value is empty; it has its own lock (probes of several hosts end at once).
type seqFrontier struct {
	mu   sync.Mutex
	uuid string // the history of the samples (wsrep_cluster_state_uuid)
	at   [DefaultGaleraSamples]time.Time
	seq  [DefaultGaleraSamples]int64
	head int // index of the oldest sample
	n    int // samples held
}

// note records that a node of history uuid had committed seqno at now. A number of
// another history than the samples' starts the frontier anew (the numbers of an old
// history say nothing of a new one's); within one, only a number above every one seen is
// a new sample.
func (f *seqFrontier) note(now time.Time, uuid string, seqno int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noteLocked(now, uuid, seqno)
}

func (f *seqFrontier) noteLocked(now time.Time, uuid string, seqno int64) {
	if uuid != f.uuid {
		f.uuid, f.head, f.n = uuid, 0, 0
	}
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

// noteLag notes (uuid, seqno) as note does and returns how far a node that has committed
// seqno is behind, at now: 0 when no node was seen further, else the time since the
// cluster first reached a number above it (at least that long when that was before the
// oldest sample held).
func (f *seqFrontier) noteLag(now time.Time, uuid string, seqno int64) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.noteLocked(now, uuid, seqno)
	for k := 0; k < f.n; k++ {
		i := (f.head + k) % len(f.seq)
		if f.seq[i] > seqno {
			return max(now.Sub(f.at[i]), 0)
		}
	}
	return 0
}

// OtherHistory starts the reason a Galera node's lag is unknown (failover.HostStats's
// ReplicaSkip) when it is in another cluster history than the pool's writer: it serves no
// replica reads, whatever maxReplicaLag says.
const OtherHistory = "in another cluster history than the pool's writer"

// noteGaleraLag records what host h's probe read of its place in the cluster (g), as the
// lag replicaReads and maxReplicaLag use (noteLag): the frontier is fed by every node of
// the writer's history, writer or not, and the writer's own lag is not read. The
// writer's history is the one its probe or its last attempt read, within
// DefaultClusterViewAge; a node of another history has no lag (OtherHistory). After the
// cluster is bootstrapped anew, a node that reads the new history before the writer's
// probe does is skipped until it has (half a checkInterval at most).
func (mon *monitor) noteGaleraLag(h *hostState, writer bool, g GaleraState) {
	now := mon.env.Clock.Now()
	if g.Seqno < 0 {
		mon.c.rep.noteLag(h, LagUnknown, "wsrep_last_committed not reported")
		return
	}
	if writer {
		mon.c.rep.frontier.note(now, g.UUID, g.Seqno)
		mon.c.rep.noteLag(h, LagUnknown, "the pool's writer: not read")
		return
	}
	if w := mon.writerHistory(now); w != "" && g.UUID != w {
		mon.c.rep.noteLag(h, LagUnknown, OtherHistory+" (wsrep_cluster_state_uuid "+orAbsent(g.UUID)+", the writer's "+w+")")
		return
	}
	mon.c.rep.noteLag(h, mon.c.rep.frontier.noteLag(now, g.UUID, g.Seqno), "")
}

// writerHistory is the cluster history (wsrep_cluster_state_uuid) of the pool's writer
// as last read within DefaultClusterViewAge of now, "" when none is known.
func (mon *monitor) writerHistory(now time.Time) string {
	w := mon.c.topo().host(mon.c.Active())
	if w == nil {
		return ""
	}
	g, at := w.gal.get()
	if at.IsZero() || now.Sub(at) > DefaultClusterViewAge {
		return ""
	}
	return g.UUID
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
