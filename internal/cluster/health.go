package cluster

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
)

// backoff is a host's backoff after fails consecutive failed attempts (see
// DefaultBackoffBase).
func backoff(fails int) time.Duration {
	d := DefaultBackoffBase
	for i := 1; i < fails && d < DefaultBackoffMax; i++ {
		d *= 2
	}
	return min(d, DefaultBackoffMax)
}

// setState records a state change of h, with the error that caused it, and reports it
// (EventHostState, and the logger) when the state changed.
func (c *Cluster) setState(h *hostState, s failover.HostState, err error) {
	now := c.clock.Now()
	h.mu.Lock()
	changed := h.state != s
	if changed {
		h.state, h.changed = s, now
	}
	if err != nil || s == failover.HostUp {
		h.lastErr = err
	}
	h.mu.Unlock()
	if changed {
		c.emit(failover.Event{Kind: failover.EventHostState, Host: h.addr, State: s, Err: err})
	}
}

// attemptFailed puts h into backoff after a failed connection attempt.
func (c *Cluster) attemptFailed(h *hostState, err error) {
	now := c.clock.Now()
	h.mu.Lock()
	h.fails++
	d := backoff(h.fails)
	h.mu.Unlock()
	h.retryAt.Store(now.Add(d).UnixNano())
	h.failing.Store(true)
	c.setState(h, failover.HostDown, err)
}

// attemptSucceeded clears h's backoff.
func (c *Cluster) attemptSucceeded(h *hostState) {
	h.mu.Lock()
	h.fails = 0
	h.mu.Unlock()
	h.retryAt.Store(0)
	h.failing.Store(false)
	if !h.down.Load() {
		c.setState(h, failover.HostUp, nil)
	}
}

// skipped reports whether walks leave h out for now: in backoff, or declared down by
// probes.
func (c *Cluster) skipped(h *hostState, now int64) bool {
	return h.down.Load() || h.retryAt.Load() > now
}

// Stats returns a snapshot of the hosts of the current list and the counters.
func (c *Cluster) Stats() failover.Stats {
	p := c.pos.Load()
	t := p.t
	now := c.clock.Now().UnixNano()
	s := failover.Stats{
		Active: t.hosts[p.active].addr, Primary: t.hosts[t.primary].addr,
		Failovers: p.failovers, FallBacks: p.fallBacks, Aborted: c.aborted.Load(),
	}
	for _, id := range t.list {
		h := t.hosts[id]
		h.mu.Lock()
		hs := failover.HostStats{Addr: h.addr, DC: h.dc, State: h.state, LastError: h.lastErr, Changed: h.changed,
			ProbeLatency: h.probeLat, Role: failover.Role(h.role.Load()), OpenConns: -1}
		h.mu.Unlock()
		if r := h.retryAt.Load(); r > now {
			hs.RetryAt = time.Unix(0, r)
			if hs.State == failover.HostDown {
				hs.State = failover.HostBackoff
			}
		}
		if h.unfit.Load() && hs.State == failover.HostUp {
			hs.State = failover.HostWrongRole
		}
		s.Hosts = append(s.Hosts, hs)
	}
	return s
}

// NoteRole records role, found on host by a check outside the walk (a write rejected as
// read-only makes the connection read the role again), and reports whether it qualifies
// for the Target. A host that no longer qualifies is then left by the connection that
// found out, with Failover and a *RoleError as the cause, which moves the pool.
func (c *Cluster) NoteRole(host int, role failover.Role) (qualifies bool) {
	return c.setRole(host, role)
}

// setRole records the role a check found on host and reports whether it qualifies.
func (c *Cluster) setRole(host int, role failover.Role) bool {
	ok := Accepts(c.Target(), role)
	h := c.topo().host(host)
	if h == nil {
		return ok
	}
	h.role.Store(int32(role))
	// prefer-standby takes any host as a last resort: a connection there stays.
	if unfit := !ok && c.Target() != dsn.TargetPreferStandby; h.unfit.Swap(unfit) != unfit {
		c.refit(host) // the position carries the active host's fitness (Place)
	}
	return ok
}

// hostState is everything the Cluster knows of one host. A host keeps its state, and its
// index (its id), while it is in the list or anything still uses it: a HostListProvider
// may drop it and add it back. Once it has left the list, no physical connection to it
// is held (Release) and no operation that may hold its id runs, its slot may be given to
// a new host (SetHosts), so that a list whose addresses churn does not grow the table.
type hostState struct {
	addr, dc string

	typical atomic.Int64 // smoothed duration (ns) of its successful attempts
	role    atomic.Int32 // the Role the last check found
	unfit   atomic.Bool  // the last check found a role the Target does not accept
	retryAt atomic.Int64 // backoff: clock time (UnixNano) before which walks skip it
	down    atomic.Bool  // probes declared it down (probing on): walks skip it
	failing atomic.Bool  // its last attempt failed
	refs    atomic.Int32 // physical connections handed out and not yet released (Release)

	checkMu sync.Mutex
	check   *check // the same-host check in progress after a session ended (Recover)

	mu        sync.Mutex // guards the rest
	fails     int        // consecutive failed attempts: the backoff exponent
	lastErr   error
	changed   time.Time // last change of state
	state     failover.HostState
	probeLat  time.Duration
	failSince time.Time // first of the current run of failed probes (zero: last probe passed)
	okSince   time.Time // first of the current run of passed probes (zero: last probe failed)
	abortDue  bool      // a walk moved the pool off it after a failure: abort it if probes declare it down
}

func newHostState(addr, dc string) *hostState {
	return &hostState{addr: addr, dc: dc}
}
