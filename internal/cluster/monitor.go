package cluster

// Active health, with checkInterval > 0: the monitor goroutine (Start), its schedule of
// probes (each host at its own fixed rate) and host-list polls, and Check, one round of
// the same for callers with a scheduler of their own. One probe is probe.go's; what the
// monitor decides from the results is decide.go's.

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/policy"
)

// Start starts the monitor when CheckInterval > 0: one goroutine (monitor.loop) that probes
// every host on a schedule of its own and polls the host list every CheckInterval, and
// stops at Close, which waits for it and closes the probe connections. It does nothing
// when CheckInterval is 0, the monitor already runs, or the Cluster is closed. It is safe
// for concurrent use and cheap (one short hold of the Cluster's lock; none with
// CheckInterval 0): the driver calls it on every new connection, so that a connector
// nobody uses starts nothing.
func (c *Cluster) Start() {
	if c.cfg.CheckInterval <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil || c.closed.Load() {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	c.stop = cancel
	c.mon.run.Add(1)
	go func() {
		defer c.mon.run.Done()
		defer c.mon.probes.closeAll()
		c.mon.loop(ctx)
	}()
}

// monitor is the monitor's own state (the probe connections, the goroutine and its
// probes, the events' alerts, the calm phase) and the mechanism that probes the hosts
// and moves the pool on the results (monitor.go, cadence.go, probe.go, decide.go). It
// reaches the rest of the Cluster through c.
type monitor struct {
	c   *Cluster
	cfg settings // c.cfg
	env *Env     // &c.env

	run    sync.WaitGroup // the monitor goroutine (Start)
	probes probeSet
	// running counts the probes the monitor goroutine started and has not yet seen
	// end (loop), for tests that step its clock.
	running atomic.Int32
	// alerts is what the events tell the monitor's cadence (cadence.go).
	alerts alerts
	// calmPhase is this connector's offset on the calm grid, in [0, calm period),
	// drawn at random by New (cadence.go); never written after.
	calmPhase time.Duration
	// aborted counts the monitor's abort rounds (Stats): no position changes with it.
	aborted atomic.Int64
}

// pollID stands for the host-list poll among the ids of schedule.ended.
const pollID = -1

// schedule is what the monitor goroutine shares with the probes it runs: the ids whose
// probe (or poll) ended and that it has not seen yet, and the way to wake it.
type schedule struct {
	mu    sync.Mutex
	ended []int
	poked bool               // a wait started or an event came since the last take
	wake  context.CancelFunc // ends the monitor's sleep; nil while it does not sleep
}

// poke wakes the monitor to look (a wait started, an event put a host into alert): at
// once when it sleeps, else its next sleep returns at once. It never blocks.
func (s *schedule) poke() {
	s.mu.Lock()
	s.poked = true
	if s.wake != nil {
		s.wake()
	}
	s.mu.Unlock()
}

// done records that id's probe (or the poll) ended and wakes the monitor.
func (s *schedule) done(id int) {
	s.mu.Lock()
	s.ended = append(s.ended, id)
	if s.wake != nil {
		s.wake()
	}
	s.mu.Unlock()
}

// take returns the ids that ended since the last take, and whether the monitor was
// poked meanwhile.
func (s *schedule) take() (ended []int, poked bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ended, poked = s.ended, s.poked
	s.ended, s.poked = nil, false
	return ended, poked
}

// sleep waits d on clk, or until a probe ends (at once when one has already), or ctx ends.
func (s *schedule) sleep(ctx context.Context, clk Clock, d time.Duration) {
	s.mu.Lock()
	if len(s.ended) > 0 || s.poked {
		s.mu.Unlock()
		return
	}
	sctx, cancel := context.WithCancel(ctx)
	s.wake = cancel
	s.mu.Unlock()
	_ = clk.Sleep(sctx, d)
	s.mu.Lock()
	s.wake = nil
	s.mu.Unlock()
	cancel()
}

// probeEvery is the probe period of a host: CheckInterval, or for the active host
// CheckInterval/DefaultActiveProbes (see DefaultActiveProbes: the period bounds how soon
// a probe starts after the host froze).
func (cfg settings) probeEvery(active bool) time.Duration {
	if active {
		return cfg.CheckInterval / DefaultActiveProbes
	}
	return cfg.CheckInterval
}

// loop is the monitor goroutine (Start). Each probed host has a fixed-rate schedule of
// its own: a probe starts probeEvery after the previous one of the host started (not a
// period after it ended, which would add the host's round trip to every gap), as soon as
// that one ends when it took longer, and at once when it asks for that (a timeout before
// the host was declared down: TCP's retransmission). One probe of a host runs at a time,
// each in its own goroutine, and none waits for another host's: a host slow to answer or
// to open its probe connection (up to hostTimeout) delays its own probes only, never the
// active host's. The host list is polled every CheckInterval the same way. decide runs
// as soon as a probe ends. Check is one round of the same probes, for callers with a
// scheduler of their own. When ctx ends, loop waits for the probes and the poll.
func (mon *monitor) loop(ctx context.Context) {
	var s schedule
	var wg sync.WaitGroup
	defer wg.Wait()
	started := map[int]time.Time{} // when each host's last probe started
	running := map[int]bool{}
	var polled time.Time // when the last poll started
	var polling bool
	var hosts []failover.ProvidedHost // the last poll's answer, read once it ended
	var perr error
	cad := mon.newCadence(mon.env.Clock.Now())
	if mon.env.ArmWait != nil && mon.env.Waiting != nil {
		poke := s.poke
		cad.arm = func() bool { return mon.env.ArmWait(poke) }
		mon.alerts.setKick(poke)
		defer mon.alerts.setKick(nil)
	}
	for ctx.Err() == nil {
		ended, poked := s.take()
		if poked {
			cad.lastWait = mon.env.Clock.Now() // a wait started: look every grace time again
		}
		probed := false
		for _, id := range ended {
			if id == pollID {
				polling = false
				mon.takeHosts(ctx, hosts, perr)
				continue
			}
			delete(running, id)
			mon.running.Add(-1)
			probed = true
			if h := mon.c.topo().host(id); h != nil && h.mon.takeAgain() {
				delete(started, id) // at once
			}
		}
		if probed {
			mon.takeDiscovered() // the members the pool's host's probe read, identities the probes read
		}
		mon.c.inUse.RLock()
		if probed && ctx.Err() == nil {
			mon.decide()
		}
		now := mon.env.Clock.Now()
		t := mon.c.topo()
		probes := mon.probedHosts(t)
		mon.probes.keepOnly(probes)
		active := mon.c.Active()
		alert, watch, wake, idle := cad.cadenceAt(t, probes, active, now)
		next := now.Add(mon.cfg.CheckInterval) // wakes sooner when a probe ends
		if idle {
			next = now.Add(cad.calm) // the hosts' next probes (below), a wait or an event wake it sooner
		}
		if !wake.IsZero() {
			next = earlier(next, wake) // the moment a wait under way crosses the grace time
		}
		for _, id := range t.list {
			if !probes[id] || running[id] {
				continue
			}
			every, fast := mon.cfg.period(id, active, alert, watch)
			if due := cad.due(id, started[id], every, fast); due.After(now) {
				next = earlier(next, due)
				continue
			}
			started[id], running[id] = now, true
			if cad.calm > 0 {
				cad.nextCalm[id] = cad.calmDue(now)
			}
			mon.launch(ctx, &wg, &s, id)
		}
		mon.c.inUse.RUnlock()
		if mon.env.Provider != nil && !polling {
			if due := polled.Add(mon.cfg.CheckInterval); due.After(now) {
				next = earlier(next, due)
			} else {
				polled, polling = now, true
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer s.done(pollID)
					hosts, perr = mon.pollHosts(ctx)
				}()
			}
		}
		s.sleep(ctx, mon.env.Clock, next.Sub(now))
	}
}

// launch starts the monitor's probe of host id in a goroutine of its own, which holds
// c.inUse until the probe ends and then tells s.
func (mon *monitor) launch(ctx context.Context, wg *sync.WaitGroup, s *schedule, id int) {
	mon.running.Add(1)
	mon.c.inUse.RLock() // the probe's own hold, released when it ends
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer s.done(id)
		defer mon.c.inUse.RUnlock()
		mon.probe(ctx, id)
	}()
}

// earlier returns the earlier of a and b.
func earlier(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

// probedHosts returns, by host id, whether the hosts of t are probed: listed, and not
// ignored by the policy.
func (mon *monitor) probedHosts(t *topo) []bool {
	infos := t.infos()
	probed := make([]bool, len(t.hosts))
	for _, id := range t.list {
		probed[id] = t.distance(infos[id]) != policy.Ignored
	}
	return probed
}

// pollHosts asks the HostListProvider for the host list, within the fixed probe bound.
func (mon *monitor) pollHosts(ctx context.Context) ([]failover.ProvidedHost, error) {
	pctx, cancel := withBudget(ctx, mon.cfg.probeTimeout())
	defer cancel()
	return mon.env.Provider.Hosts(pctx)
}

// takeHosts applies a poll's answer: a failing or invalid one keeps the last good list
// and is reported as EventHostList with Err. It must be called without c.inUse held (its
// SetHosts may then give ids of hosts that left the list to new ones).
func (mon *monitor) takeHosts(ctx context.Context, hosts []failover.ProvidedHost, err error) {
	if err == nil {
		err = mon.c.SetHosts(hosts)
	}
	if err != nil && ctx.Err() == nil {
		mon.c.emit(failover.Event{Kind: failover.EventHostList, Err: fmt.Errorf("host list not taken, the last good list stays: %w", err)})
	}
}

// Check runs one monitor round: it polls the HostListProvider (a failing or invalid
// answer keeps the last good list and is reported as EventHostList with Err), probes
// every listed host that the policy does not ignore, all at once, each with its own
// timeout: on an idle pooled session of the host when the pool lends one (Env.Borrow:
// a session that sits in database/sql's pool, outside any transaction and holding no
// session state), else on the host's own long-lived probe connection (opened again when
// broken, closed as soon as a probe can borrow; never a connect-and-drop), and then
// acts on the results:
//
//   - The active host, once its probes have failed without a pause for FailoverDelay
//     (or at once when its role stopped qualifying), is left: the pool moves to the
//     first host of the plan whose last probe passed, and every physical connection to
//     the old host is closed (Env.Abort), so that statements in flight fail at once
//     with the failover error instead of waiting for readTimeout. With no host to go to
//     the pool stays and keeps probing. A host that a connection's walk left for a
//     failure before its probes declared it down (a caller's deadline cut the walk's
//     attempt short) has its connections closed when they do, once.
//   - Away from home, once home's probes have passed without a pause for
//     SwitchBackDelay, the pool returns (connections move at their next safe point).
//
// As Pulsar's AutoClusterFailover, with the delays measured from the first failed (or
// passed) probe of the current run, and cleared by every probe that breaks the run.
// The monitor goroutine (Start) runs the same probes and decisions on a schedule of its
// own, each host's probes at their own fixed rate (monitor.loop); Check is exported for tests
// and for callers that run the checks from their own scheduler (then leave CheckInterval
// 0 and give Check a context that ends).
func (c *Cluster) Check(ctx context.Context) {
	if c.closed.Load() {
		return
	}
	// The host list is fetched while the hosts are probed: a slow list server must not
	// delay failure detection. The new list applies after the round.
	var hosts []failover.ProvidedHost
	var perr error
	fetched := make(chan struct{})
	if c.env.Provider != nil {
		go func() {
			defer close(fetched)
			hosts, perr = c.mon.pollHosts(ctx)
		}()
	} else {
		close(fetched)
	}
	defer func() {
		<-fetched
		if c.env.Provider != nil {
			c.mon.takeHosts(ctx, hosts, perr)
		}
		c.mon.takeDiscovered()
	}()
	c.inUse.RLock()
	defer c.inUse.RUnlock() // before the host list is applied (the deferred takeHosts)
	t := c.topo()
	probed := c.mon.probedHosts(t)
	c.mon.probes.keepOnly(probed) // hosts that left the list, or are ignored: no probe connection
	// The active host's probe is acted on as soon as it ends: another host slow to open
	// its probe connection (up to hostTimeout) must not hold back leaving a dead one.
	var wg sync.WaitGroup
	active := c.Active()
	activeDone := make(chan struct{})
	for _, id := range t.list {
		if !probed[id] {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			c.mon.probe(ctx, id)
			if id == active {
				close(activeDone)
			}
		}()
	}
	if probed[active] {
		select {
		case <-activeDone:
			if ctx.Err() == nil {
				c.mon.decide()
			}
		case <-ctx.Done():
		}
	}
	wg.Wait()
	if ctx.Err() == nil {
		c.mon.decide()
	}
}
