package cluster

import (
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

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
	t := c.t.Load()
	now := c.clock.Now().UnixNano()
	s := failover.Stats{
		Active: t.hosts[c.Active()].addr, Primary: t.hosts[t.primary].addr,
		Failovers: c.failovers.Load(), FallBacks: c.fallBacks.Load(), Aborted: c.aborted.Load(),
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
