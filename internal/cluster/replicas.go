package cluster

// Replica reads (replicaReads): which hosts serve read-intent statements now, and which of
// them one statement goes to. The set of qualifying replicas is derived from the position
// (the pool's writer is never a replica) and from what the probes found (health, role,
// lag), published as one immutable replicaSet and rebuilt only when one of them changed,
// so that the choice on a statement's path costs a few atomic loads and no allocation.
// Within the set the local DC comes first (localDC, policy.Local); a routing
// key ranks the local replicas by rendezvous hashing (the DataStax driver's
// TokenAwarePolicy order: the replicas that own the key first, then the child policy's
// plan), otherwise replicaSelection spreads them. Replica sessions are opened by
// Replicas.Open, one bounded attempt without the role check of targetSessionAttrs (a
// replica is read-only by design).

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
	"github.com/mysqlfailover/mysqlfailover/policy"
)

// Replica selection strategies (dsn.Config.ReplicaSelection).
const (
	SelectRoundRobin    = "round-robin"
	SelectLeastInFlight = "least-in-flight"
)

// Causal read scopes (dsn.Config.CausalReads).
const (
	CausalNone   = "none"
	CausalLocal  = "local"
	CausalGlobal = "global"
)

// Replicas is the replica reads of a Cluster (replicaReads), as package conn uses them:
// the choice of a replica, its sessions and the pool of them, the causal reads'
// positions and waits, and their counters. Cluster.Replicas returns it.
type Replicas struct{ c *Cluster }

// Replicas returns the Cluster's replica reads.
func (c *Cluster) Replicas() *Replicas { return &c.replicas }

// replicaSet is the hosts that serve read-intent statements for one position and one
// generation of probe results. It is never modified once published.
type replicaSet struct {
	pos    *position // the position it was built for
	gen    uint64    // replicaState.gen when built
	local  []int     // qualifying replicas of the local DC (or all, without localDC), list order
	remote []int     // qualifying replicas of other DCs, list order
	seed   []uint64  // by id: the rendezvous seed of the host (a hash of its address)
}

// replicaState is a Cluster's replica bookkeeping. Its first fields are what it reads
// of the Cluster, set by New.
type replicaState struct {
	cfg  settings
	pos  *atomic.Pointer[position] // Cluster.pos
	kind *atomic.Int32             // Cluster.kind
	emit func(failover.Event)      // Cluster.emit

	set     atomic.Pointer[replicaSet]
	gen     atomic.Uint64 // bumped by every change a replicaSet depends on besides the position
	buildMu sync.Mutex    // one build at a time: the events of a change are reported once
	rr      atomic.Uint64 // round-robin cursor

	retries, toPrimary, causalWaits, causalPrimary atomic.Int64 // Stats counters
	flavour                                        atomic.Int32 // the server flavour causal reads found
	writes                                         atomic.Uint64
	global                                         atomic.Pointer[globalPos]
	frontier                                       seqFrontier // Galera: when the cluster reached each write (galera.go)
}

// Enabled reports whether read-intent statements may go to replicas (replicaReads).
func (rd *Replicas) Enabled() bool { return rd.c.cfg.ReplicaReads }

// changed makes the next choice rebuild the replica set: a probe ended, a role or
// a lag changed.
func (r *replicaState) changed() {
	if r.cfg.ReplicaReads {
		r.gen.Add(1)
	}
}

// current returns the replica set in force, rebuilding it when the position or the
// probes' results changed since it was built.
func (r *replicaState) current() *replicaSet {
	s := r.set.Load()
	p := r.pos.Load()
	g := r.gen.Load()
	if s != nil && s.pos == p && s.gen == g {
		return s
	}
	return r.build()
}

// build derives the replica set from the position and each host's state, records
// on each host why it does not qualify (HostStats.ReplicaSkip), and reports the hosts
// whose verdict changed since the last build (EventReplica; the first is Stats' to show).
func (r *replicaState) build() *replicaSet {
	r.buildMu.Lock()
	p := r.pos.Load()
	g := r.gen.Load()
	if s := r.set.Load(); s != nil && s.pos == p && s.gen == g {
		r.buildMu.Unlock()
		return s
	}
	t := p.t
	infos := t.infos()
	s := &replicaSet{pos: p, gen: g, seed: make([]uint64, len(t.hosts))}
	var events []failover.Event
	for _, id := range t.list {
		h := t.hosts[id]
		s.seed[id] = hashString(h.addr)
		dist := t.distance(infos[id])
		h.mu.Lock()
		why := r.skip(p, id, h, dist)
		h.mu.Unlock()
		if h.rep.judge(why) {
			var err error
			if why != "" {
				err = errors.New(why)
			}
			events = append(events, failover.Event{Kind: failover.EventReplica, Host: h.addr, Err: err})
		}
		switch {
		case why != "":
		case dist == policy.Local:
			s.local = append(s.local, id)
		default:
			s.remote = append(s.remote, id)
		}
	}
	r.set.Store(s)
	r.buildMu.Unlock()
	for _, e := range events {
		r.emit(e)
	}
	return s
}

// skip says why host id (state h, locked by the caller; dist its distance) serves
// no replica reads at position p, "" when it qualifies. It reads the monitor's verdict
// before the lag: a probe records the lag before its verdict.
func (r *replicaState) skip(p *position, id int, h *hostState, dist policy.Distance) string {
	down, suspect := h.mon.status()
	lag, lagWhy := h.rep.lagNow()
	switch {
	case id == p.active:
		return "the pool's writer"
	case dist == policy.Ignored:
		return "ignored by the DC policy (usedHostsPerRemoteDC)"
	case down:
		return "down: its probes failed for failoverDelay"
	case suspect:
		return "suspect: its last probe failed"
	case h.notReady != nil:
		return h.notReady.Error()
	case h.role == failover.RolePrimary && Kind(r.kind.Load()) != KindGalera:
		// Every Galera node is writable: the writer is the one the pool writes to.
		return "writable: not a replica"
	case h.role == failover.RoleUnknown && r.cfg.CheckInterval > 0:
		// Probing reads every host's role: until the first round has, a host may be a
		// writer (without probing nothing ever reads it: every host but the writer serves).
		return "role not read yet: the first probe round has not ended"
	case strings.HasPrefix(lagWhy, ReplicationStopped):
		// Its data stops where the thread stopped: every causal read would wait there in
		// vain, and every other read would be as stale as the stop is old.
		return lagWhy + ": not a replica now"
	case strings.HasPrefix(lagWhy, OtherHistory):
		// Its writes are not the writer's: none of them is a copy of the writer's data.
		return lagWhy + ": not a replica of it"
	}
	if max := r.cfg.MaxReplicaLag; max > 0 {
		switch {
		case lag < 0:
			why := lagWhy
			if why == "" {
				why = "not read yet"
			}
			return "lag unknown: " + why
		case lag > max:
			return fmt.Sprintf("lag %v over maxReplicaLag %v", lag, max)
		}
	}
	return ""
}

// Pick returns the host a read-intent statement goes to: a qualifying replica of
// the local DC, else of another DC; -1 when none qualifies. tried has bit i set for host
// id i already tried by this statement (ids from 64 on cannot be excluded). With hasKey,
// the local replicas are ranked by rendezvous hashing of key (one key keeps to one
// replica while it qualifies; when it stops, only its keys move); the remote ones by
// replicaSelection. Without a key, replicaSelection: round-robin (the default) or
// least-in-flight (fewest read-intent statements running, ties round-robin).
func (rd *Replicas) Pick(key string, hasKey bool, tried uint64) int {
	s := rd.c.rep.current()
	if hasKey && len(s.local) > 0 {
		kh := hashString(key)
		best, bestScore := -1, uint64(0)
		for _, id := range s.local {
			if id < 64 && tried&(1<<id) != 0 {
				continue
			}
			if sc := mix64(kh ^ s.seed[id]); best < 0 || sc > bestScore {
				best, bestScore = id, sc
			}
		}
		if best >= 0 {
			return best
		}
	}
	if id := rd.c.rep.spread(s, s.local, tried); id >= 0 {
		return id
	}
	return rd.c.rep.spread(s, s.remote, tried)
}

// spread chooses among ids by replicaSelection, leaving out the tried ones.
func (r *replicaState) spread(s *replicaSet, ids []int, tried uint64) int {
	n := len(ids)
	if n == 0 {
		return -1
	}
	start := int(r.rr.Add(1) % uint64(n))
	if r.cfg.ReplicaSelection == SelectLeastInFlight {
		t := s.pos.t
		best, least := -1, int32(0)
		for k := range n {
			id := ids[(start+k)%n]
			if id < 64 && tried&(1<<id) != 0 {
				continue
			}
			if f := t.hosts[id].rep.inflight.Load(); best < 0 || f < least {
				best, least = id, f
			}
		}
		return best
	}
	for k := range n {
		id := ids[(start+k)%n]
		if id >= 64 || tried&(1<<id) == 0 {
			return id
		}
	}
	return -1
}

// ReplicaStart and ReplicaDone bracket a read-intent statement on replica host (for
// least-in-flight and HostStats.ReplicaReads). ReplicaDone counts it served when ok.
func (c *Cluster) ReplicaStart(host int) {
	if h := c.topo().host(host); h != nil {
		h.rep.inflight.Add(1)
	}
}

// ReplicaDone: see ReplicaStart.
func (c *Cluster) ReplicaDone(host int, ok bool) {
	if h := c.topo().host(host); h != nil {
		h.rep.inflight.Add(-1)
		if ok {
			h.rep.reads.Add(1)
		}
	}
}

// NoteRetry counts a read-intent statement run again after a replica failed it
// (Stats.ReplicaRetries); NoteToPrimary one run on the primary for want of a
// replica (Stats.ReplicaToPrimary).
func (rd *Replicas) NoteRetry() { rd.c.rep.retries.Add(1) }

// NoteToPrimary: see NoteRetry.
func (rd *Replicas) NoteToPrimary() { rd.c.rep.toPrimary.Add(1) }

// NoteCausal counts a causal read served by a replica after its wait (waited), or sent
// to the primary (Stats.CausalWaits, Stats.CausalPrimary).
func (rd *Replicas) NoteCausal(waited bool) {
	if waited {
		rd.c.rep.causalWaits.Add(1)
	} else {
		rd.c.rep.causalPrimary.Add(1)
	}
}

// NoneError is the error of a read-intent statement that no replica could serve
// with readFromSourceWhenNoReplicas=false: every host and why it serves no replica reads.
func (rd *Replicas) NoneError() error {
	rd.c.rep.current()
	t := rd.c.topo()
	e := &failover.NoHostAvailableError{Passes: 1}
	for _, id := range t.list {
		h := t.hosts[id]
		why := h.rep.skipNow()
		switch {
		case why == "":
			why = "not usable as a replica for this statement: its session failed it, or it could not be reached"
		case why == "the pool's writer":
			why += " (readFromSourceWhenNoReplicas=false keeps reads off it)"
		default:
			why = "not a usable replica: " + why
		}
		e.Hosts = append(e.Hosts, failover.HostError{Host: h.addr, Skipped: why})
	}
	return e
}

// Open opens a replica session to host for a read-intent statement: one bounded
// attempt (dial, then setup), as a walk's, without the role check of targetSessionAttrs.
// A host in backoff after a failed attempt is not dialled: the error says so, and the
// caller tries another replica. The caller calls Release when the session closes.
func (rd *Replicas) Open(ctx context.Context, host int, setup SetupFunc) (driver.Conn, error) {
	h := rd.c.topo().host(host)
	if h == nil {
		return nil, fmt.Errorf("mysqlfailover: no host with id %d", host)
	}
	if v := h.health(); v.retryAt > rd.c.env.Clock.Now().UnixNano() {
		return nil, errReplicaBackoff
	}
	conn, _, err := rd.c.att.run(ctx, host, setup, attemptOpts{flags: attemptNoRole})
	return conn, err
}

// errReplicaBackoff is Replicas.Open's error for a host in backoff: nothing was tried.
var errReplicaBackoff = errors.New("mysqlfailover: replica in backoff after a failed attempt")

// noteLag records what host h's probe found of its lag, or (lag < 0) why it is unknown.
func (r *replicaState) noteLag(h *hostState, lag time.Duration, why string) {
	h.rep.setLag(lag, why)
	r.changed()
}

// hashString is 64-bit FNV-1a of s.
func hashString(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// mix64 is the finaliser of splitmix64: a bijection that spreads every input bit over the
// output, so that the rendezvous score of (key, host) does not follow the hash's order.
func mix64(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return x
}

// probeLag reads the lag of host h over its probe connection conn, within wait, and
// records it (noteLag). It reports false when the connection broke meanwhile (a
// communication error): the probe connection is then reopened next round, and the lag
// is unknown until then.
func (r *replicaState) probeLag(ctx context.Context, conn driver.Conn, h *hostState, wait time.Duration) bool {
	lctx, cancel := withBudget(ctx, wait)
	defer cancel()
	lag, why, useOld, err := ReadLag(lctx, conn, h.rep.oldForm.Load())
	if err != nil {
		r.noteLag(h, LagUnknown, "its probe could not read it: "+dialect.NotBadConn(err, "").Error())
		return Classify(ctx, err) != Communication
	}
	h.rep.oldForm.Store(useOld)
	r.noteLag(h, lag, strings.TrimPrefix(why, "replica lag unknown: ")) // ReadLag: lag < 0 exactly when why is set
	return true
}

// CausalPosition reads the position a causal read must find on its replica, over conn, a
// session on the pool's writer: with global, the pool's latest write (MariaDB
// @@global.gtid_binlog_pos, MySQL @@global.gtid_executed), else the session's own last
// write (MariaDB @@last_gtid; MySQL has no session position: gtid_executed). "" means no
// write is known. The server's flavour, found on the first call, is kept.
func (rd *Replicas) CausalPosition(ctx context.Context, conn driver.Conn, global bool) (string, error) {
	pos, f, err := ReadPosition(ctx, conn, Flavour(rd.c.rep.flavour.Load()), global)
	if err == nil {
		rd.c.rep.flavour.Store(int32(f))
	}
	return pos, err
}

// CausalWait waits, over conn, a replica session, until the replica has applied pos, for
// at most causalReadsTimeout (MariaDB MASTER_GTID_WAIT, MySQL
// WAIT_FOR_EXECUTED_GTID_SET: one round trip), and gives the session up (an error) when
// the answer has not come twice that long (plus DefaultMinHostShare) later. It reports
// whether the replica reached it.
func (rd *Replicas) CausalWait(ctx context.Context, conn driver.Conn, pos string) (bool, error) {
	timeout := rd.CausalTimeout()
	f := Flavour(rd.c.rep.flavour.Load())
	if f == FlavourUnknown {
		f = FlavourMariaDB // no position read yet: a position from another pool would be MariaDB's
	}
	// The server ends the wait at timeout; a replica that does not answer at all (frozen)
	// is given as long again before its session is given up.
	wctx, cancel := withBudget(ctx, 2*timeout+DefaultMinHostShare)
	defer cancel()
	return WaitReplica(wctx, conn, f, pos, timeout)
}

// Global causal reads share the pool's latest position: writes counts the statements
// run on the writer's sessions, and the position read last (causalPos) covers those
// counted up to causalAt.

// NoteWrite counts a statement that ran on the pool's writer (causalReads global): the
// next causal read reads the position again.
func (rd *Replicas) NoteWrite() { rd.c.rep.writes.Add(1) }

// GlobalPosition returns the pool's latest known write position and whether it covers
// every write counted so far (NoteWrite) and was read on the pool's writer now (after a
// move, the host the pool left knows nothing of the writes since); mark is what
// SetGlobalPosition takes with a position read after this call.
func (rd *Replicas) GlobalPosition() (pos string, current bool, mark uint64) {
	mark = rd.c.rep.writes.Load()
	p := rd.c.rep.global.Load()
	if p == nil {
		return "", mark == 0, mark
	}
	return p.pos, p.at >= mark && p.host == rd.c.Active(), mark
}

// SetGlobalPosition records pos, read on host after GlobalPosition returned mark, unless
// a position read later is already recorded.
func (rd *Replicas) SetGlobalPosition(pos string, mark uint64, host int) {
	np := &globalPos{pos: pos, at: mark, host: host}
	for {
		old := rd.c.rep.global.Load()
		if old != nil && old.at >= mark {
			return
		}
		if rd.c.rep.global.CompareAndSwap(old, np) {
			return
		}
	}
}

// globalPos is one reading of the pool's latest position.
type globalPos struct {
	pos  string
	at   uint64 // the write count it covers
	host int    // the host it was read on
}

// AnyReplica reports whether a host serves read-intent statements now (replicaReads).
func (c *Cluster) AnyReplica() bool {
	if !c.cfg.ReplicaReads {
		return false
	}
	s := c.rep.current()
	return len(s.local) > 0 || len(s.remote) > 0
}

// Qualifies reports whether host serves read-intent statements now.
func (rd *Replicas) Qualifies(host int) bool {
	s := rd.c.rep.current()
	return slices.Contains(s.local, host) || slices.Contains(s.remote, host)
}

// SessionEnded reports a communication error (cause) on a replica session to host:
// the session is gone, the host is not blamed (a dead session is not a dead host; its
// probes, or the next attempt to open a session, decide), as EventSessionEnded. The
// pool's idle sessions of host get the liveness check before their next use.
func (rd *Replicas) SessionEnded(host int, cause error) {
	rd.c.rpool.suspect(host, rd.c.env.Clock.Now().UnixNano())
	rd.c.emit(failover.Event{Kind: failover.EventSessionEnded, Host: rd.c.Host(host), Err: dialect.NotBadConn(cause, "")})
}

// CausalTimeout is causalReadsTimeout (DefaultCausalReadsTimeout when unset).
func (rd *Replicas) CausalTimeout() time.Duration {
	if t := rd.c.cfg.CausalReadsTimeout; t > 0 {
		return t
	}
	return DefaultCausalReadsTimeout
}
