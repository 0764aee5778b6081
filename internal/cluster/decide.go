package cluster

// What the monitor decides from the probes' results (decide, after every probe of the
// monitor and at the end of each Check): close the connections to a host the probes
// declared down after a walk had left it (abortLeft), leave an active host that fails its
// probes or no longer qualifies (leaveActive), return home after switchBackDelay of
// passed probes (returnHome); each move only if the position is still the one it read
// (moveFrom). And SwitchTo, an operator's move. The decisions read the hosts through
// health, healthy and the monitor's record (monitorHost); they change only the position,
// under the Cluster's lock.

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
	"github.com/mysqlfailover/mysqlfailover/policy"
)

// healthy reports whether h's probes have passed without a pause for at least d, its
// role qualifies, and probes have not declared it down.
func (h *hostState) healthy(now time.Time, d time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.unfitLocked() && h.mon.passedFor(now, d)
}

// leftAfterFailure records that a connection's walk moved the pool off host id after a
// failure. The walk may beat the probes to it (a caller's deadline cuts its attempt on a
// hung host to a share of 250 ms, the probe timeout is 500 ms): decide then finds the pool
// already elsewhere, and without this record the connections still on the host (statements
// in flight, handshakes that hang) would wait for readTimeout and hostTimeout.
func (mon *monitor) leftAfterFailure(id int) {
	if h := mon.c.topo().host(id); h != nil {
		h.mon.setAbortDue(true)
	}
}

// abortHost closes every connection to h, host id, which probes declared down
// (Env.Abort), and reports it with cause.
func (mon *monitor) abortHost(id int, h *hostState, cause error) {
	h.mon.setAbortDue(false)
	mon.aborted.Add(1)
	mon.c.emit(failover.Event{Kind: failover.EventAbort, Host: h.addr, Err: cause})
	mon.env.Abort(id)
}

// decide acts on the probes' results: see Check.
//
// It acts on the position it read: a move made meanwhile (a SwitchTo, a walk that
// landed, a new host list) stands, and its events name the hosts the pool really left
// and joined (moveFrom).
func (mon *monitor) decide() { mon.decideAt(mon.c.pos.Load()) }

// decideAt is decide on pos, the position as it was read.
func (mon *monitor) decideAt(pos *position) {
	t := pos.t
	now := mon.env.Clock.Now()
	a := pos.active
	ha := t.host(a)
	if mon.env.Abort != nil {
		mon.abortLeft(t, a)
	}
	if v := ha.health(); v.down || v.unfit || !t.member[a] {
		mon.leaveActive(pos, now)
		return
	}
	if mon.moveToWriter(pos, now) || mon.c.Home(a) {
		return
	}
	mon.returnHome(pos, now)
}

// abortLeft closes the connections to the hosts of t but a, the active one, that the
// probes declared down after a walk had moved the pool off them, as if the monitor had
// moved the pool (once).
func (mon *monitor) abortLeft(t *topo, a int) {
	for _, id := range t.list {
		if id == a {
			continue
		}
		h := t.hosts[id]
		h.mu.Lock()
		due, cause := h.mon.takeAbortDue(), h.lastErr
		h.mu.Unlock()
		if due {
			mon.abortHost(id, h, cause)
		}
	}
}

// leaveActive moves the pool at pos off its active host, which the probes declared down
// or which does not qualify, to the first host of the plan whose last probe passed, and
// closes the old host's connections when it is down; with no such host the pool stays.
func (mon *monitor) leaveActive(pos *position, now time.Time) {
	t, a := pos.t, pos.active
	ha := t.host(a)
	target := -1
	for _, id := range mon.c.walks.order(t, plan{start: t.next(a), failed: a}, 0, nil, nil) {
		if id != a && t.hosts[id].healthy(now, 0) {
			target = id
			break
		}
	}
	if target < 0 {
		return // nowhere better to go: stay, keep probing
	}
	ha.mu.Lock()
	cause, role := ha.lastErr, ha.role
	if nr := ha.notReady; nr != nil && !ha.mon.isDown() {
		cause = nr
	}
	ha.mu.Unlock()
	if cause == nil {
		cause = &RoleError{Role: role, Wanted: mon.c.Target()}
	}
	if !mon.c.moveFrom(pos, func(p *position) {
		p.active, p.lastResort = target, false
		if !p.t.isHome(target) {
			mon.c.restartClocks(p, false)
		}
		p.failovers++
	}) {
		return
	}
	mon.c.emit(failover.Event{Kind: failover.EventSwitch, Host: t.hosts[target].addr, From: ha.addr, Err: cause})
	if ha.health().down && mon.env.Abort != nil {
		mon.abortHost(a, ha, cause)
	}
}

// returnHome moves the pool at pos, away from home, back to the first home host of the
// plan whose probes have passed for SwitchBackDelay, unless that would move it from one
// writable host to another (returnBlocked).
func (mon *monitor) returnHome(pos *position, now time.Time) {
	t, a := pos.t, pos.active
	ha := t.host(a)
	for _, id := range mon.c.walks.order(t, plan{start: t.primary, failed: -1}, 0, nil, nil) {
		if id == a || !t.isHome(id) || !t.hosts[id].healthy(now, mon.cfg.SwitchBackDelay) {
			continue
		}
		if mon.returnBlocked(id, a) {
			return // two writers, or not looked at yet: the probes of home look (probeLooks)
		}
		h := t.hosts[id]
		since := h.mon.passedSince() // the first passing probe of the run that brings the pool back
		if mon.c.moveFrom(pos, func(p *position) {
			p.active, p.lastResort = id, false
			p.fallBacks++
		}) {
			mon.c.emit(failover.Event{Kind: failover.EventFallBack, Host: h.addr, From: ha.addr, Duration: now.Sub(since)})
		}
		return
	}
}

// moveFrom applies change to the position, as update, only if the position is still from
// (the same host list and active host), and reports whether it did: the monitor decides
// on what it read, without the lock, and a move made meanwhile (SwitchTo, a walk that
// landed, a new host list) stands.
func (c *Cluster) moveFrom(from *position, change func(p *position)) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	cur := c.pos.Load()
	if cur.t != from.t || cur.active != from.active {
		return false
	}
	p := *cur
	change(&p)
	c.publish(p)
	return true
}

// SwitchTo moves the pool to host (host:port as listed, case-insensitive) for an
// operator: it makes one bounded attempt on the host (with the role check of
// targetSessionAttrs) and, if that succeeds, makes the host the primary, the host the
// pool returns to and where failOverReadOnly does not apply, until the next SwitchTo or
// a host list that differs from the current one. Connections move at
// their next safe point, never inside a transaction, and their callers see no error.
// It returns an error naming the host when it is not in the list, the host policy
// ignores it (never connected to), or the attempt fails; the caller's context error when
// that context has already ended; failover.ErrClosed after Close. The pool then stays
// where it is. As Pulsar's ControlledClusterFailover.
func (c *Cluster) SwitchTo(ctx context.Context, host string) error {
	if c.closed.Load() {
		return failover.ErrClosed
	}
	if err := EndErr(ctx); err != nil {
		return err // nothing to try: not the host's doing
	}
	c.inUse.RLock()
	defer c.inUse.RUnlock()
	t := c.topo()
	id := -1
	for _, i := range t.list {
		if strings.EqualFold(t.hosts[i].addr, host) {
			id = i
		}
	}
	if id < 0 {
		known := make([]string, len(t.list))
		for k, i := range t.list {
			known[k] = t.hosts[i].addr
		}
		return fmt.Errorf("mysqlfailover: SwitchTo %q: not in the host list (%s)", host, strings.Join(known, ", "))
	}
	if t.distance(t.infos()[id]) == policy.Ignored {
		// Never connected to: localDC without usedHostsPerRemoteDC for its DC, or a
		// policy layer that ignores it.
		return fmt.Errorf("mysqlfailover: SwitchTo %s: the host policy ignores it (a remote DC beyond usedHostsPerRemoteDC, or a WithPolicy layer), and an ignored host is never connected to", t.hosts[id].addr)
	}
	conn, _, err := c.att.attempt(ctx, id, nil, false)
	if err != nil {
		return fmt.Errorf("mysqlfailover: SwitchTo %s: %w", t.hosts[id].addr, dialect.NotBadConn(err, ""))
	}
	_ = conn.Close()
	c.Release(id)
	c.mu.Lock()
	cur := c.pos.Load()
	nt, err := c.lists.newTopo(cur.t.hosts, cur.t.list, id)
	if err != nil {
		c.mu.Unlock()
		return err
	}
	nt.from = cur.t.from
	p := *cur
	p.t, p.active, p.lastResort = nt, id, false
	c.restartClocks(&p, false)
	c.publish(p)
	c.mu.Unlock()
	if from := cur.active; from != id {
		c.emit(failover.Event{Kind: failover.EventSwitch, Host: nt.hosts[id].addr, From: nt.hosts[from].addr})
	}
	return nil
}
