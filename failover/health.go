package failover

import (
	"time"
)

// HostState is what the Cluster believes of a host, for Stats and the logs.
type HostState int

const (
	// HostUnknown: never tried, never probed.
	HostUnknown HostState = iota
	// HostUp: the last attempt or probe succeeded.
	HostUp
	// HostSuspect: probes are failing, for less than failoverDelay.
	HostSuspect
	// HostDown: the last attempt failed, or probes failed for failoverDelay. After a
	// failed attempt Stats shows HostBackoff until the backoff ends, then HostDown until a
	// success; a host the probes declared down is skipped by every walk until a probe
	// passes.
	HostDown
	// HostBackoff: down, and new connections skip it until HostStats.RetryAt while
	// another host of the plan is healthy (Stats only; never in EventHostState).
	HostBackoff
	// HostWrongRole: up, but its role does not qualify for targetSessionAttrs (Stats
	// only; never in EventHostState).
	HostWrongRole
)

// String returns "unknown", "up", "suspect", "down", "backoff" or "wrong-role".
func (s HostState) String() string {
	switch s {
	case HostUp:
		return "up"
	case HostSuspect:
		return "suspect"
	case HostDown:
		return "down"
	case HostBackoff:
		return "backoff"
	case HostWrongRole:
		return "wrong-role"
	}
	return "unknown"
}

// Backoff of a host after failed attempts: BackoffBase after the first, doubling with
// every further consecutive failure, at most BackoffMax. A success (an attempt or a
// probe) resets it. Authentication failures back off the same way and are never final:
// credentials can be rotated.
const (
	BackoffBase = 250 * time.Millisecond
	BackoffMax  = 8 * time.Second
)

func backoff(fails int) time.Duration {
	d := BackoffBase
	for i := 1; i < fails && d < BackoffMax; i++ {
		d *= 2
	}
	return min(d, BackoffMax)
}

// setState records a state change of h, with the error that caused it, and reports it
// (EventHostState, and the logger) when the state changed.
func (c *Cluster) setState(h *hostState, s HostState, err error) {
	now := c.clock.Now()
	h.mu.Lock()
	changed := h.state != s
	if changed {
		h.state, h.changed = s, now
	}
	if err != nil || s == HostUp {
		h.lastErr = err
	}
	h.mu.Unlock()
	if changed {
		c.emit(Event{Kind: EventHostState, Host: h.addr, State: s, Err: err})
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
	c.setState(h, HostDown, err)
}

// attemptSucceeded clears h's backoff.
func (c *Cluster) attemptSucceeded(h *hostState) {
	h.mu.Lock()
	h.fails = 0
	h.mu.Unlock()
	h.retryAt.Store(0)
	h.failing.Store(false)
	if !h.down.Load() {
		c.setState(h, HostUp, nil)
	}
}

// skipped reports whether walks leave h out for now: in backoff, or declared down by
// probes.
func (c *Cluster) skipped(h *hostState, now int64) bool {
	return h.down.Load() || h.retryAt.Load() > now
}

// Stats is a snapshot of a Cluster, for operators: see (*driver.Connector).Stats.
type Stats struct {
	// Active is the host:port the pool uses now.
	Active string
	// Primary is the host:port the pool returns to (the list's primary, the local DC's
	// first host, or SwitchTo's choice).
	Primary string
	// Hosts has one entry per host of the current list, in list order.
	Hosts []HostStats
	// Failovers counts walks that moved the pool after a failure (count since start).
	Failovers int64
	// FallBacks counts returns to the primary (count since start).
	FallBacks int64
	// Aborted counts hosts whose in-flight statements were aborted after probes declared
	// them down (count of abort rounds, not of statements).
	Aborted int64
}

// HostStats is one host's part of Stats.
type HostStats struct {
	// Addr is host:port.
	Addr string
	// DC is its data-centre label, "" for none.
	DC string
	// State is what the Cluster believes of it.
	State HostState
	// Role is what the last role check found (RoleUnknown without targetSessionAttrs).
	Role Role
	// LastError is the last error that changed its state, nil after a success. It never
	// contains a password.
	LastError error
	// Changed is when State last changed (zero: never).
	Changed time.Time
	// RetryAt is when its backoff ends (zero: not in backoff).
	RetryAt time.Time
	// ProbeLatency is the duration of its last successful probe, including reopening the
	// probe connection when it had to be (0: none).
	ProbeLatency time.Duration
	// OpenConns is the number of physical connections open to it, probe connections
	// included (filled by the driver; -1 when unknown).
	OpenConns int
}

// Stats returns a snapshot of the hosts of the current list and the counters.
func (c *Cluster) Stats() Stats {
	t := c.t.Load()
	now := c.clock.Now().UnixNano()
	s := Stats{
		Active: t.hosts[c.Active()].addr, Primary: t.hosts[t.primary].addr,
		Failovers: c.failovers.Load(), FallBacks: c.fallBacks.Load(), Aborted: c.aborted.Load(),
	}
	for _, id := range t.list {
		h := t.hosts[id]
		h.mu.Lock()
		hs := HostStats{Addr: h.addr, DC: h.dc, State: h.state, LastError: h.lastErr, Changed: h.changed,
			ProbeLatency: h.probeLat, Role: Role(h.role.Load()), OpenConns: -1}
		h.mu.Unlock()
		if r := h.retryAt.Load(); r > now {
			hs.RetryAt = time.Unix(0, r)
			if hs.State == HostDown {
				hs.State = HostBackoff
			}
		}
		if h.unfit.Load() && hs.State == HostUp {
			hs.State = HostWrongRole
		}
		s.Hosts = append(s.Hosts, hs)
	}
	return s
}
