package cluster

// The monitor's two cadences (monitor.loop): ALERT, the schedule that detection needs (the
// active host every checkInterval/DefaultActiveProbes, the others every checkInterval),
// while something about a host looks wrong or just changed for the worse; WATCHED, every
// calmCheckInterval/DefaultWatchDivisor, the other hosts while the pool's host looks
// wrong or the pool just moved (a target must have a recent probe, but a fleet whose
// primary died must not probe the whole cluster at the alert rate); CALM otherwise, one probe
// per host every calmCheckInterval, on a grid of this monitor's own random phase, so that
// an idle fleet costs each host about one statement per instance per calm period and
// its instances do not probe in step. Traffic is the evidence that needs no probe: a
// statement waiting for its host's answer longer than the grace time (Env.Waiting) puts
// the host into alert, so that its probe starts when today's fixed schedule would have
// started one.
//
// Lock order: alerts has a lock of its own, taken alone (emit notes an event under it,
// the monitor reads it); the rest is the monitor goroutine's own (cadenceRun).

import (
	"errors"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// alerts is what the rest of the engine tells the monitor's cadence through its events
// (noteEvent): the hosts, by address, that a walk or a connection saw fail, each until
// when it stays in alert, and until when every host does (the pool moved).
type alerts struct {
	mu    sync.Mutex
	until map[string]time.Time // by host address
	all   time.Time
	kick  func() // wakes the monitor (schedule.poke; nil: not running); never blocks
}

// setKick sets the monitor's wake for noteEvent (nil: none).
func (a *alerts) setKick(k func()) {
	a.mu.Lock()
	a.kick = k
	a.mu.Unlock()
}

// noteEvent puts the host of e into alert for DefaultAlertHold when e reports a failure
// on it, and every host when e reports a move of the pool or a new host list. It is cheap
// and takes one small lock: emit calls it for every event, and events are never per
// statement.
func (a *alerts) noteEvent(e failover.Event, now time.Time) {
	host, all := "", false
	switch e.Kind {
	case failover.EventSwitch, failover.EventFallBack, failover.EventAbort:
		all = true
	case failover.EventHostList:
		all = e.Err == nil
	case failover.EventConnect, failover.EventHostFailed, failover.EventSessionEnded,
		failover.EventFallBackFailed, failover.EventProbe:
		var re *RoleError
		if e.Err != nil && !errors.As(e.Err, &re) {
			host = e.Host // a host of another role answered: nothing looks wrong with it
		}
	case failover.EventHostState:
		if e.State != failover.HostUp {
			host = e.Host
		}
	}
	if host == "" && !all {
		return
	}
	until := now.Add(DefaultAlertHold)
	a.mu.Lock()
	if a.kick != nil {
		defer a.kick() // after the unlock: an idle monitor looks now, not at its next probe
	}
	defer a.mu.Unlock()
	if all {
		a.all = until
		return
	}
	if a.until == nil {
		a.until = map[string]time.Time{}
	}
	for k, u := range a.until {
		if !u.After(now) {
			delete(a.until, k) // a host list whose addresses churn must not grow the map
		}
	}
	a.until[host] = until
}

// holds reports whether addr, or every host, is held in alert at now by an event.
func (a *alerts) holds(addr string, now time.Time) (host, all bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.until[addr].After(now), a.all.After(now)
}

// calmEvery returns the calm probe period: CalmCheckInterval, at least CheckInterval;
// 0 when CalmCheckInterval is 0 (every host always on the alert schedule).
func (cfg settings) calmEvery() time.Duration {
	if cfg.CalmCheckInterval <= 0 {
		return 0
	}
	return max(cfg.CalmCheckInterval, cfg.CheckInterval)
}

// waitGrace is how long a statement may wait for its host's answer before the host is
// put into alert: the active host's alert period, checkInterval/DefaultActiveProbes, so
// that the probe of a host that froze under traffic starts when the fixed schedule's
// would have started at the latest.
func (cfg settings) waitGrace() time.Duration { return cfg.probeEvery(true) }

// cadenceRun is the monitor goroutine's cadence state (monitor.loop): the calm grid (base,
// phase), each host's next calm probe, when each host last looked wrong, and the
// position seen last.
type cadenceRun struct {
	calm     time.Duration // the calm period (0: none)
	base     time.Time     // the grid's origin: the monitor's start
	phase    time.Duration // this monitor's random offset in the grid, in [0, calm)
	nextCalm map[int]time.Time
	trouble  map[int]time.Time // the last time each host looked wrong (alertReason)
	roles    map[int]failover.Role
	lastT    *topo
	lastA    int
	allUntil time.Time // every host in alert until then: the pool moved, or its host looks wrong

	cfg     settings
	alerts  *alerts                // the events' holds (Cluster.alerts)
	waiting func(string) time.Time // Env.Waiting (nil: traffic not watched)
	rep     *replicaState          // Cluster.rep: the replica set, refreshed before a look

	// arm arms the wake of the monitor by the next wait (Env.ArmWait, with the
	// monitor's poke) and reports whether one is under way (nil: no ArmWait); lastWait is
	// when the monitor last saw a wait, or was woken by one.
	arm      func() bool
	lastWait time.Time
}

// newCadence returns the cadence state of a monitor that starts at now.
func (mon *monitor) newCadence(now time.Time) *cadenceRun {
	r := &cadenceRun{calm: mon.cfg.calmEvery(), base: now, nextCalm: map[int]time.Time{},
		trouble: map[int]time.Time{}, roles: map[int]failover.Role{}, lastA: -1, phase: mon.calmPhase,
		cfg: mon.cfg, alerts: &mon.alerts, waiting: mon.env.Waiting, rep: &mon.c.rep}
	return r
}

// observe looks at the position at now: a move of the pool or a new host list has
// every host watched for DefaultAlertHold, the pool's new host too. Not on alert: a
// fleet's instances all move to a promoted primary within a moment of each other, and
// would each probe it every checkInterval/DefaultActiveProbes just when their first
// writes arrive; their waits put it on alert if it does not answer them.
func (r *cadenceRun) observe(t *topo, active int, now time.Time) {
	if r.lastT != nil && (t != r.lastT || active != r.lastA) {
		r.allUntil = now.Add(DefaultAlertHold)
	}
	r.lastT, r.lastA = t, active
}

// calmDue returns when a host whose probe starts at start is next due on the calm
// cadence: the first point of this monitor's grid at least half a calm period later
// (so that a host just back from alert is not probed at once, and the average is at
// most one probe per calm period), plus a jitter of up to DefaultCalmJitter of the period.
func (r *cadenceRun) calmDue(start time.Time) time.Time {
	from := start.Add(r.calm / 2).Sub(r.base.Add(r.phase))
	k := (from + r.calm - 1) / r.calm
	if from <= 0 {
		k = 0
	}
	due := r.base.Add(r.phase + k*r.calm)
	if j := r.calm / DefaultCalmJitter; j > 0 {
		due = due.Add(rand.N(j))
	}
	return due
}

// alertReason reports whether host id, h, looks wrong at now (see doc.go): its probes
// fail or declared it down, a walk's attempt failed on it (failing, backoff), its server
// said it is not ready, it is the active host and its role does not qualify, with
// replica reads it is skipped as a replica (replication stopped, lagging: the reading
// that lets it serve again must be fresh), its role changed since the last look to one
// that does not qualify (from one known role to another: a host's first role read, and
// the unknown role of a host down, are no change). A change to a role that qualifies is
// no reason: the host is where the pool goes (every host is watched while the pool's
// host looks wrong and after a move), and after a promotion every instance of a fleet
// would otherwise probe the new primary at the alert rate for DefaultAlertHold, just
// when its first writes arrive. (An event's hold is alerts', which is not renewed here.)
func (r *cadenceRun) alertReason(h *hostState, id int, active bool, now time.Time) bool {
	v := h.health()
	role, seen := r.roles[id]
	r.roles[id] = v.role
	return v.down || v.probeFailing || v.failing || v.notReady || v.retryAt > now.UnixNano() ||
		(active && v.unfit) || (v.unfit && seen && role != v.role && role != failover.RoleUnknown && v.role != failover.RoleUnknown) ||
		(!active && r.cfg.ReplicaReads && h.rep.skipNow() != "")
}

// homeAlert reports whether host id is a home host that qualifies while the pool is away
// from home: its probes decide when the pool returns (returnHome, after switchBackDelay of
// passed probes), and a calm period between them would delay the return by up to that
// period. A home host that does not qualify (a demoted primary) stays calm: the pool
// cannot return to it, and its role is read on the calm cadence.
func (t *topo) homeAlert(id, active int) bool {
	return active >= 0 && !t.isHome(active) && t.isHome(id) && !t.hosts[id].isUnfit()
}

// waitAlert reports whether a statement has waited for h's answer for the grace time at
// now, and otherwise when the oldest wait under way will have (zero: none). The grace
// time is the longer of waitGrace and h's usual answer (its probes' smoothed round trip
// plus 4 deviations): on a host that answers slowly, as a saturated one does, a
// statement that waits longer than 50 ms is no sign of anything.
func (r *cadenceRun) waitAlert(h *hostState, now time.Time) (alert bool, at time.Time) {
	if r.waiting == nil {
		return false, time.Time{}
	}
	w := r.waiting(h.addr)
	if w.IsZero() {
		return false, time.Time{}
	}
	r.lastWait = now
	at = w.Add(max(r.cfg.waitGrace(), h.mon.usualAnswer()))
	if !at.After(now) {
		return true, time.Time{}
	}
	return false, at
}

// alerted reports, for every listed host of t, whether it is on the alert cadence at now
// (alert), whether it is watched (watch: probed every watchEvery, not on the alert
// schedule), and the earliest time a wait under way will cross the grace time (zero:
// none). A host that looks wrong stays in alert DefaultAlertHold after it last did.
// While the active host looks wrong or a wait on it crossed the grace time, and for
// DefaultAlertHold after the pool moved, every other host is watched: the pool may have
// to move, and a target's liveness and role must be recent, but not at the alert rate
// (DefaultWatchDivisor). A host declared down, the pool's too, is only watched.
func (r *cadenceRun) alerted(t *topo, probes []bool, active int, now time.Time) (alert, watch []bool, wake time.Time) {
	alert, watch = make([]bool, len(t.hosts)), make([]bool, len(t.hosts))
	all := r.allUntil.After(now)
	if r.cfg.ReplicaReads {
		r.rep.current() // the replicas' skip reasons (alertReason) after the last probe
	}
	for _, id := range t.list {
		if !probes[id] {
			continue
		}
		h := t.hosts[id]
		if r.alertReason(h, id, id == active, now) {
			r.trouble[id] = now
		}
		waiting, at := r.waitAlert(h, now)
		wake = earliest(wake, at)
		last, ok := r.trouble[id]
		held, _ := r.alerts.holds(h.addr, now)
		alert[id] = waiting || held || (ok && now.Sub(last) < DefaultAlertHold) || t.homeAlert(id, active)
		if id == active && alert[id] {
			all = true
		}
		if alert[id] && h.mon.isDown() {
			// Declared down: watched until it answers. Probing a dead host at the alert
			// rate learns nothing sooner that matters (a statement waiting for it walks
			// the hosts itself, every DefaultPassPause); it only costs every instance of a
			// fleet its refused connects.
			alert[id], watch[id] = false, true
		}
	}
	if _, held := r.alerts.holds("", now); held {
		all = true
	}
	for id := range r.roles {
		if id >= len(t.hosts) || !probes[id] {
			delete(r.trouble, id) // a host that left the list
			delete(r.roles, id)
			delete(r.nextCalm, id)
		}
	}
	if all {
		for _, id := range t.list {
			watch[id] = probes[id] && !alert[id]
		}
	}
	return alert, watch, wake
}

// period returns host id's probe period at this look (alert and watch, from alerted): the
// alert schedule's (probeEvery), at least watchEvery for a watched host; and whether it
// is on either (fast), else on the calm cadence.
func (cfg settings) period(id, active int, alert, watch []bool) (every time.Duration, fast bool) {
	every = cfg.probeEvery(id == active)
	if watch[id] {
		every = max(every, cfg.watchEvery())
	}
	return every, alert[id] || watch[id]
}

// watchEvery is the probe period of a watched host (alerted): the calm period divided
// by DefaultWatchDivisor, never less than checkInterval.
func (cfg settings) watchEvery() time.Duration {
	return max(cfg.calmEvery()/DefaultWatchDivisor, cfg.CheckInterval)
}

// cadenceAt is alerted after a look at the position (observe), with the monitor's local
// tick folded into wake: while calm and watching traffic, the monitor looks at the
// waits at least every grace time, so that a statement that starts while it sleeps for
// a calm period is seen before its wait crosses the grace time. The tick costs no host
// anything, but each wake-up costs the process CPU: once no wait has been seen for
// DefaultIdleAfter, and Env.ArmWait is set, the next wait to start wakes the monitor
// instead (idle: the monitor sleeps until its next probe is due, or a wait or an event
// wakes it). With no calm cadence every host is in alert.
func (r *cadenceRun) cadenceAt(t *topo, probes []bool, active int, now time.Time) (alert, watch []bool, wake time.Time, idle bool) {
	if r.calm == 0 {
		return probes, make([]bool, len(probes)), time.Time{}, false
	}
	r.observe(t, active, now)
	alert, watch, wake = r.alerted(t, probes, active, now)
	if r.waiting != nil {
		if idle = r.arm != nil && now.Sub(r.lastWait) >= DefaultIdleAfter && !r.arm(); !idle {
			wake = earliest(wake, now.Add(r.cfg.waitGrace()))
		}
	}
	return alert, watch, wake, idle
}

// earliest returns the earlier of a and b, either of which may be zero (none).
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// due returns when host id, whose last probe started at last (zero: never, or at once),
// is next due: a period every after the last on the alert cadence, else at its next
// calm point (never sooner than every after the last).
func (r *cadenceRun) due(id int, last time.Time, every time.Duration, alert bool) time.Time {
	if last.IsZero() {
		return last
	}
	d := last.Add(every)
	if r.calm == 0 || alert {
		return d
	}
	if n, ok := r.nextCalm[id]; ok && n.After(d) {
		return n
	}
	return d
}
