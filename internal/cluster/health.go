package cluster

// Each host's health: what the Cluster knows of one host (its backoff after failed
// attempts, what the probes found, its role, how long its handshakes take), how attempts
// and role checks change it, and the Stats built from it. What the probes decide is the
// monitor's own record of the host (monitorHost, monitorhost.go), the same-host check's
// in verdict.go.

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
)

// hostState is everything the Cluster knows of one host. A host keeps its state, and its
// index (its id), while it is in the list or anything still uses it: a HostListProvider
// may drop it and add it back. Once it has left the list, no physical connection to it
// is held (Release) and no operation that may hold its id runs, its slot may be given to
// a new host (SetHosts), so that a list whose addresses churn does not grow the table.
//
// Nothing of it is read on a statement's path: the position carries the active host's
// fitness (see publish).
type hostState struct {
	addr, dc string // never change

	// refs counts the physical connections handed out and not yet released (Release).
	// It is an atomic: it moves with every physical connection opened or
	// closed, from any goroutine, whatever the host's health, and only SetHosts reads it
	// (to tell whether the id may go to a new host).
	refs atomic.Int32
	// answers counts the signs of life clearBackoffLocked records (an attempt that
	// succeeded or was answered, a probe that passed): a closed handshake is blamed on
	// the host only when it did not move meanwhile (storm.go).
	answers atomic.Uint64
	// roleSel is the role query the host's probes learned (roleselect.go); nil: none yet.
	roleSel atomic.Pointer[roleSelect]

	// lent counts the probes of the host that ran on an idle pooled session (Env.Borrow),
	// own those that ran on the monitor's own probe session; atomics, written by the
	// host's probes and read by Stats.
	lent, own atomic.Uint64
	// adopted: the pool took a probe session of the host (attempter.adoptable), so
	// its probes may have no session of their own there (probeDialBound).
	adopted atomic.Bool

	// mu guards the fields from here to check (mon, gal and rep have locks of their
	// own, taken after mu when both are held). What one attempt, probe or role check
	// learns changes several fields at once (a failed attempt: fails, retryAt, failing,
	// state, lastErr), and the walk reads them together (health).
	mu       sync.Mutex
	typical  time.Duration  // smoothed duration of its successful attempts (DefaultConnectTimeSmoothing)
	role     failover.Role  // what the last check found
	unfit    bool           // the last check found a role the target does not accept
	notReady *NotReadyError // the server said it is not ready (ready.go); nil: ready, or not read
	retryAt  int64          // backoff: clock time (UnixNano) before which joining walks skip it
	failing  bool           // its last attempt failed
	fails    int            // consecutive failed attempts: the backoff exponent
	state    failover.HostState
	lastErr  error
	changed  time.Time // last change of state
	check    *check    // the same-host check in progress after a session ended (Recover)
	ident    string    // the server's identity as its last state read found it (State.Ident; "" unknown)

	// mon is what the monitor knows of it (monitorhost.go), under a lock of its own,
	// taken after mu when both are held.
	mon monitorHost
	// gal is its place in its Galera cluster as last read (galera.go), under a lock of
	// its own, taken after mu when both are held.
	gal galeraView
	// rep is what replica reads know of it (replicarecord.go), under a lock of its own,
	// taken last.
	rep replicaRecord
}

func newHostState(addr, dc string) *hostState {
	h := &hostState{addr: addr, dc: dc}
	h.rep.lag = LagUnknown
	return h
}

// recorder records what the attempts, probes and state reads learn of a host: its
// backoff and state (health.go), its role, readiness, identity and Galera view
// (ready.go), each under the host's lock, and reports the changes. It owns no state of
// its own. It reaches the rest of the Cluster through c.
type recorder struct {
	c   *Cluster
	cfg settings // c.cfg
	env *Env     // &c.env
}

// health is what walks, checks and the monitor read of a host: a copy, taken under the
// host's lock in one go.
type health struct {
	role         failover.Role
	unfit        bool // of a role the target does not accept, or not ready
	notReady     bool // the server said it is not ready
	down         bool
	failing      bool
	probeFailing bool  // a run of failed probes is under way
	retryAt      int64 // clock time (UnixNano), 0: no backoff
	typical      time.Duration
}

// health returns a copy of what h's readers need.
func (h *hostState) health() health {
	h.mu.Lock()
	defer h.mu.Unlock()
	down, suspect := h.mon.status()
	return health{role: h.role, unfit: h.unfitLocked(), notReady: h.notReady != nil, down: down, failing: h.failing,
		probeFailing: suspect, retryAt: h.retryAt, typical: h.typical}
}

// isUnfit reports whether h must not be used now: its role does not qualify for the
// target, or its server said it is not ready.
func (h *hostState) isUnfit() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.unfitLocked()
}

// unfitLocked is isUnfit, with h.mu held.
func (h *hostState) unfitLocked() bool { return h.unfit || h.notReady != nil }

// skipped reports whether walks leave the host out for now (clock time now, UnixNano): in
// backoff, or declared down by probes.
func (v health) skipped(now int64) bool { return v.down || v.retryAt > now }

// backoff is a host's backoff after fails consecutive failed attempts (see
// DefaultBackoffBase).
func backoff(fails int) time.Duration {
	d := DefaultBackoffBase
	for i := 1; i < fails && d < DefaultBackoffMax; i++ {
		d *= 2
	}
	return min(d, DefaultBackoffMax)
}

// setState records state s of h at now, with the error that caused it, and reports
// whether the state changed. It is called with h.mu held; the caller reports the change
// (reportState) once the lock is released.
func (h *hostState) setState(s failover.HostState, err error, now time.Time) (changed bool) {
	changed = h.state != s
	if changed {
		h.state, h.changed = s, now
	}
	if err != nil || s == failover.HostUp {
		h.lastErr = err
	}
	return changed
}

// reportState reports a change of h's state to s that setState made (EventHostState,
// and the logger).
func (rc *recorder) reportState(h *hostState, changed bool, s failover.HostState, err error) {
	if changed {
		rc.c.writers.gen.Add(1) // a look at the writable hosts is out of date
		rc.c.emit(failover.Event{Kind: failover.EventHostState, Host: h.addr, State: s, Err: err})
	}
}

// attemptFailed puts h into backoff after a failed connection attempt.
func (rc *recorder) attemptFailed(h *hostState, err error) { rc.backOff(h, err, false) }

// backOff puts h into backoff for err, one step further than the last, unless once is
// set and h is in backoff already: a connection's report of a failed session (Failover)
// is one failure, however many connections saw it (a failed reconnection, or another
// connection's report a moment ago, has put the host there already).
func (rc *recorder) backOff(h *hostState, err error, once bool) {
	now := rc.env.Clock.Now()
	h.mu.Lock()
	if once && h.retryAt > now.UnixNano() {
		h.mu.Unlock()
		return
	}
	h.fails++
	h.retryAt = now.Add(backoff(h.fails)).UnixNano()
	h.failing = true
	changed := h.setState(failover.HostDown, err, now)
	h.mu.Unlock()
	rc.reportState(h, changed, failover.HostDown, err)
}

// attemptSucceeded clears h's backoff.
func (rc *recorder) attemptSucceeded(h *hostState) {
	now := rc.env.Clock.Now()
	h.mu.Lock()
	h.clearBackoffLocked()
	changed := !h.mon.isDown() && h.setState(failover.HostUp, nil, now)
	h.mu.Unlock()
	rc.reportState(h, changed, failover.HostUp, nil)
}

// clearBackoffLocked ends h's backoff: a connection attempt or a probe passed (a sign
// of life, counted in answers). It is called with h.mu held.
func (h *hostState) clearBackoffLocked() {
	h.fails, h.retryAt, h.failing = 0, 0, false
	h.answers.Add(1)
}

// noteConnectTime adds d, the duration of a successful attempt, to h's typical connect
// time.
func (h *hostState) noteConnectTime(d time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if old := h.typical; old > 0 {
		d = ((DefaultConnectTimeSmoothing-1)*old + d) / DefaultConnectTimeSmoothing
	}
	h.typical = d
}

// Stats returns a snapshot of the hosts of the current list and the counters.
func (c *Cluster) Stats() failover.Stats {
	p := c.pos.Load()
	t := p.t
	now := c.env.Clock.Now().UnixNano()
	s := failover.Stats{
		Active: t.hosts[p.active].addr, Primary: t.hosts[t.primary].addr,
		Failovers: p.failovers, FallBacks: p.fallBacks, Aborted: c.mon.aborted.Load(),
		ReplicaRetries: c.rep.retries.Load(), ReplicaToPrimary: c.rep.toPrimary.Load(),
		CausalWaits: c.rep.causalWaits.Load(), CausalPrimary: c.rep.causalPrimary.Load(),
		WriteRefusals: c.writeRefusals.Load(), WriterAvailable: c.writerAvailable(p), CallerErrors: c.callerErrors.Load(),
		Writers: c.writers.stats(p), Discovery: c.disc.stats(),
		TxReruns: c.tx.reruns.Load(), TxGaveUp: c.tx.gaveUp.Load(), TxCommitChecks: c.tx.checks.Load(),
		TxReplays: c.tx.replays.Load(), TxReplayMismatches: c.tx.mismatches.Load(),
		TxReplayTooBig: c.tx.tooBig.Load(), TxReplayUnsafe: c.tx.unsafeTx.Load(),
		HandshakeRetries: c.att.handshakeRetries.Load(), SessionsClosed: c.att.sessionsClosed.Load(),
	}
	if c.cfg.ReplicaReads {
		c.rep.current() // the skip reasons of the position now
	}
	for _, id := range t.list {
		hs := c.hostStats(id, t.hosts[id], now)
		from := t.fromOf(id)
		hs.Origin, hs.Discovered = from.origin, from.since
		if id == p.active && (hs.State == failover.HostDown || hs.State == failover.HostBackoff) {
			s.Active = "" // the pool's host is down and no walk found another: it uses none
		}
		if hs.ProbeSession {
			s.ProbeSessions++
		}
		s.Hosts = append(s.Hosts, hs)
	}
	return s
}

// hostStats is the HostStats of host id (state h) at clock time now (UnixNano): its
// health as recorded, with what the monitor and replica reads know of it, and the state
// users see (backoff, not ready, of the wrong role) derived from them.
func (c *Cluster) hostStats(id int, h *hostState, now int64) failover.HostStats {
	h.mu.Lock()
	hs := failover.HostStats{Addr: h.addr, DC: h.dc, State: h.state, LastError: h.lastErr, Changed: h.changed,
		ProbeLatency: h.mon.latency(), Role: h.role, OpenConns: -1,
		ProbeSession: c.mon.probes.has(id), ProbesBorrowed: h.lent.Load(), ProbesOwn: h.own.Load()}
	if c.cfg.CheckInterval > 0 {
		_, hs.ProbeTimeout = c.cfg.probeTimeouts(&h.mon)
	}
	hs.ReplicaLag, _ = h.rep.lagNow()
	if c.cfg.ReplicaReads {
		hs.ReplicaSkip = h.rep.skipNow()
		if hs.ReplicaSkip == "" && h.retryAt > now {
			hs.ReplicaSkip = "in backoff after a failed attempt: no new session until it ends"
		}
	}
	hs.ReplicaReads = h.rep.reads.Load()
	retryAt, unfit, nr := h.retryAt, h.unfit, h.notReady
	h.mu.Unlock()
	if c.cfg.ReplicaReads {
		hs.ReplicaIdle, hs.ReplicaWaits = c.rpool.stats(id)
	}
	if retryAt > now {
		hs.RetryAt = time.Unix(0, retryAt)
		if hs.State == failover.HostDown {
			hs.State = failover.HostBackoff
		}
	}
	if hs.State == failover.HostDown || hs.State == failover.HostBackoff {
		// Its last role is no longer known: a dead host has none (and a host that
		// comes back may come back demoted).
		hs.Role = failover.RoleUnknown
	}
	switch {
	case nr != nil && (hs.State == failover.HostUp || hs.State == failover.HostUnknown):
		hs.State, hs.LastError = failover.HostNotReady, nr
	case unfit && hs.State == failover.HostUp && !(c.cfg.ReplicaReads && hs.ReplicaSkip == ""):
		// Of the wrong role for the pool's writes; a replica that serves reads is
		// up for what it does (its role is right for that).
		hs.State = failover.HostWrongRole
	}
	return hs
}

// NoteWriteRefused counts one error that says a write could not be served (see
// failover.Stats.WriteRefusals): the connections call it where they see one.
func (c *Cluster) NoteWriteRefused() { c.writeRefusals.Add(1) }

// NoteCallerError counts one error returned to a caller for a host that failed, refused
// or was missing (see failover.Stats.CallerErrors): the connections call it where their
// errors leave the driver.
func (c *Cluster) NoteCallerError() { c.callerErrors.Add(1) }

// writerAvailable reports whether the pool at position p can serve writes as far as
// the driver knows (failover.Stats.WriterAvailable): its active host is fit (of the
// wanted role, ready), neither failing nor down nor in backoff, and is a writer: its role as last read is primary, or, with the role
// never read (targetSessionAttrs any, no probe reading it), it is where
// failOverReadOnly leaves sessions writable (the list's primary, or anywhere with
// failOverReadOnly false).
func (c *Cluster) writerAvailable(p *position) bool {
	h := p.t.host(p.active)
	if h == nil || p.place == PlaceAway {
		return false
	}
	v := h.health()
	if v.down || v.failing || v.probeFailing || v.notReady || v.retryAt > c.env.Clock.Now().UnixNano() {
		return false
	}
	switch v.role {
	case failover.RolePrimary:
		return true
	case failover.RoleUnknown:
		return p.active == p.t.primary || !c.cfg.FailOverReadOnly || c.MultiWriter()
	}
	return false
}

// NoteRole records role, found on host by a check outside the walk (a write rejected as
// read-only makes the connection read the role again), and reports whether it qualifies
// for the Target. A host that no longer qualifies is then left by the connection that
// found out, with Failover and a *RoleError as the cause, which moves the pool.
func (c *Cluster) NoteRole(host int, role failover.Role) (qualifies bool) {
	return c.rec.setRole(host, role)
}

// setRole records the role a check found on host and reports whether it qualifies.
func (rc *recorder) setRole(host int, role failover.Role) bool {
	ok := Accepts(rc.c.Target(), role)
	h := rc.c.topo().host(host)
	if h == nil {
		return ok
	}
	// prefer-standby takes any host as a last resort: a connection there stays.
	unfit := !ok && rc.c.Target() != attrs.PreferStandby
	h.mu.Lock()
	if h.role != role {
		rc.c.writers.gen.Add(1) // a look at the writable hosts is out of date
	}
	h.role = role
	changed := h.unfit != unfit
	h.unfit = unfit
	h.mu.Unlock()
	rc.c.rep.changed()
	if changed {
		rc.c.refit(host) // the position carries the active host's fitness (Place)
		if !unfit {
			rc.c.news.post() // a walk that pauses for a host of this role may take it
		}
	}
	return ok
}
