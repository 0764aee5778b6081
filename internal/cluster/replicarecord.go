package cluster

// The replica reads' record of each host (replicaRecord): its lag as its probes read it,
// the form of the status query its server takes, the replica set's last verdict on it,
// and its read counters. Only the replica mechanism writes it: the probes' lag reads
// (noteLag, probeLag, noteGaleraLag), the replica set's build (replicaState.build) and the
// choice of a replica (Replicas.Pick's counters).
//
// Lock order: a replicaRecord's mutex is a leaf. It may be taken while its host's
// hostState.mu is held (Stats, the replica set's build), never held while another lock is
// taken: no method here calls out of the record.

import (
	"sync"
	"sync/atomic"
	"time"
)

// replicaRecord is what replica reads know of one host: part of its hostState (h.rep).
type replicaRecord struct {
	// inflight counts the read-intent statements running on it as a replica
	// (least-in-flight), reads those it served (HostStats.ReplicaReads); oldForm is
	// whether its server takes SlaveStatusQuery (see ReadLag).
	inflight atomic.Int32
	reads    atomic.Int64
	oldForm  atomic.Bool

	// mu guards the rest: its lag as its last probe read it (-1: unknown, lagWhy says
	// why), and why it serves no replica reads (skip, "" when it qualifies; judged once
	// judged).
	mu     sync.Mutex
	lag    time.Duration
	lagWhy string
	skip   string
	judged bool
}

// lagNow returns the host's lag as last read, and why it is unknown.
func (r *replicaRecord) lagNow() (time.Duration, string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lag, r.lagWhy
}

// setLag records the host's lag, or (lag < 0) why it is unknown.
func (r *replicaRecord) setLag(lag time.Duration, why string) {
	r.mu.Lock()
	r.lag, r.lagWhy = lag, why
	r.mu.Unlock()
}

// skipNow returns why the host serves no replica reads, as the last build judged ("":
// it qualifies, or it was not judged yet).
func (r *replicaRecord) skipNow() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.skip
}

// judge records the replica set's verdict why on the host ("": it qualifies) and
// reports whether it changed a verdict of an earlier build (EventReplica).
func (r *replicaRecord) judge(why string) (changed bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	changed = r.judged && why != r.skip
	r.skip, r.judged = why, true
	return changed
}
