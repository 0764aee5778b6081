package cluster

// Active health, with checkInterval > 0: the monitor goroutine (Start), its rounds of
// probes on long-lived probe connections and host-list polls (Check), what it decides
// from them (decide: leave an active host that fails its probes, return home, close the
// connections to a host declared down), and SwitchTo, an operator's move.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
)

// probeQuery is the probe's round trip when it has no state to read (see probeReads);
// otherwise the probe runs ReadState, which reads the role and the readiness on the way.
const probeQuery = "SELECT 1"

// probeSet holds the long-lived probe connection of each host.
type probeSet struct {
	mu    sync.Mutex
	conns map[int]driver.Conn
}

// has reports whether a probe connection of host id is kept.
func (p *probeSet) has(id int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns[id] != nil
}

func (p *probeSet) take(id int) driver.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.conns[id]
	delete(p.conns, id)
	return c
}

func (p *probeSet) put(id int, c driver.Conn) {
	p.mu.Lock()
	if p.conns == nil {
		p.conns = map[int]driver.Conn{}
	}
	old := p.conns[id]
	p.conns[id] = c
	p.mu.Unlock()
	if old != nil {
		_ = old.Close()
	}
}

// keepOnly closes the probe connections of the hosts whose keep entry is false (or
// beyond it).
func (p *probeSet) keepOnly(keep []bool) {
	p.mu.Lock()
	var drop []driver.Conn
	for id, c := range p.conns {
		if id >= len(keep) || !keep[id] {
			drop = append(drop, c)
			delete(p.conns, id)
		}
	}
	p.mu.Unlock()
	for _, c := range drop {
		_ = c.Close()
	}
}

func (p *probeSet) closeAll() {
	p.mu.Lock()
	cs := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
}

// Start starts the monitor when CheckInterval > 0: one goroutine (monitor) that probes
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
	c.monitorRun.Add(1)
	go func() {
		defer c.monitorRun.Done()
		defer c.probes.closeAll()
		c.monitor(ctx)
	}()
}

// pollID stands for the host-list poll among the ids of schedule.ended.
const pollID = -1

// schedule is what the monitor goroutine shares with the probes it runs: the ids whose
// probe (or poll) ended and that it has not seen yet, and the way to wake it.
type schedule struct {
	mu    sync.Mutex
	ended []int
	wake  context.CancelFunc // ends the monitor's sleep; nil while it does not sleep
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

// take returns the ids that ended since the last take.
func (s *schedule) take() []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.ended
	s.ended = nil
	return e
}

// sleep waits d on clk, or until a probe ends (at once when one has already), or ctx ends.
func (s *schedule) sleep(ctx context.Context, clk Clock, d time.Duration) {
	s.mu.Lock()
	if len(s.ended) > 0 {
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
func (c *Cluster) probeEvery(active bool) time.Duration {
	if active {
		return c.cfg.CheckInterval / DefaultActiveProbes
	}
	return c.cfg.CheckInterval
}

// monitor is the monitor goroutine (Start). Each probed host has a fixed-rate schedule of
// its own: a probe starts probeEvery after the previous one of the host started (not a
// period after it ended, which would add the host's round trip to every gap), as soon as
// that one ends when it took longer, and at once when it asks for that (a timeout before
// the host was declared down: TCP's retransmission). One probe of a host runs at a time,
// each in its own goroutine, and none waits for another host's: a host slow to answer or
// to open its probe connection (up to hostTimeout) delays its own probes only, never the
// active host's. The host list is polled every CheckInterval the same way. decide runs
// as soon as a probe ends. Check is one round of the same probes, for callers with a
// scheduler of their own. When ctx ends, monitor waits for the probes and the poll.
func (c *Cluster) monitor(ctx context.Context) {
	var s schedule
	var wg sync.WaitGroup
	defer wg.Wait()
	started := map[int]time.Time{} // when each host's last probe started
	running := map[int]bool{}
	var polled time.Time // when the last poll started
	var polling bool
	var hosts []failover.ProvidedHost // the last poll's answer, read once it ended
	var perr error
	for ctx.Err() == nil {
		ended := s.take()
		probed := false
		for _, id := range ended {
			if id == pollID {
				polling = false
				c.takeHosts(ctx, hosts, perr)
				continue
			}
			delete(running, id)
			c.monitorProbes.Add(-1)
			probed = true
			if h := c.topo().host(id); h != nil && h.mon.takeAgain() {
				delete(started, id) // at once
			}
		}
		c.inUse.RLock()
		if probed && ctx.Err() == nil {
			c.decide()
		}
		now := c.env.Clock.Now()
		next := now.Add(c.cfg.CheckInterval) // wakes sooner when a probe ends
		t := c.topo()
		probes := c.probedHosts(t)
		c.probes.keepOnly(probes)
		active := c.Active()
		for _, id := range t.list {
			if !probes[id] || running[id] {
				continue
			}
			if due := started[id].Add(c.probeEvery(id == active)); due.After(now) {
				next = earlier(next, due)
				continue
			}
			started[id], running[id] = now, true
			c.monitorProbes.Add(1)
			c.inUse.RLock() // the probe's own hold, released when it ends
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer s.done(id)
				defer c.inUse.RUnlock()
				c.probe(ctx, id)
			}()
		}
		c.inUse.RUnlock()
		if c.env.Provider != nil && !polling {
			if due := polled.Add(c.cfg.CheckInterval); due.After(now) {
				next = earlier(next, due)
			} else {
				polled, polling = now, true
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer s.done(pollID)
					hosts, perr = c.pollHosts(ctx)
				}()
			}
		}
		s.sleep(ctx, c.env.Clock, next.Sub(now))
	}
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
func (c *Cluster) probedHosts(t *topo) []bool {
	infos := t.infos()
	probed := make([]bool, len(t.hosts))
	for _, id := range t.list {
		probed[id] = t.distance(infos[id]) != failover.DistanceIgnored
	}
	return probed
}

// pollHosts asks the HostListProvider for the host list, within the fixed probe bound.
func (c *Cluster) pollHosts(ctx context.Context) ([]failover.ProvidedHost, error) {
	pctx, cancel := withBudget(ctx, c.probeTimeout())
	defer cancel()
	return c.env.Provider.Hosts(pctx)
}

// takeHosts applies a poll's answer: a failing or invalid one keeps the last good list
// and is reported as EventHostList with Err. It must be called without c.inUse held (its
// SetHosts may then give ids of hosts that left the list to new ones).
func (c *Cluster) takeHosts(ctx context.Context, hosts []failover.ProvidedHost, err error) {
	if err == nil {
		err = c.SetHosts(hosts)
	}
	if err != nil && ctx.Err() == nil {
		c.emit(failover.Event{Kind: failover.EventHostList, Err: fmt.Errorf("host list not taken, the last good list stays: %w", err)})
	}
}

// probeTimeout is the fixed probe bound: max(CheckInterval, DefaultMinProbeTimeout), at
// most HostTimeout when that is set. It bounds a host-list poll, an attempt on a host the
// probes declared down, a probe before its host's first passed probe, and the doubling
// of a host's probe timeout (rtoEstimator.timeout).
func (c *Cluster) probeTimeout() time.Duration {
	d := max(c.cfg.CheckInterval, DefaultMinProbeTimeout)
	if c.cfg.HostTimeout > 0 {
		d = min(d, c.cfg.HostTimeout)
	}
	return d
}

// probeCeiling caps every probe timeout: HostTimeout, or DefaultMaxProbeTimeout when
// that is 0 (never below the fixed bound).
func (c *Cluster) probeCeiling() time.Duration {
	if c.cfg.HostTimeout > 0 {
		return c.cfg.HostTimeout
	}
	return max(DefaultMaxProbeTimeout, c.probeTimeout())
}

// hostProbeTimeout returns a host's probe timeout from its estimator, rto (see rto.go),
// and how long its next probe round trip waits for an answer: DefaultProbePatience times
// rto, or its stall wait (rtoEstimator.stallWait: SRTT + DefaultMaxStall +
// DefaultStallMargin) when that is longer, at most the ceiling; or rto alone once the
// probes have declared the host down (its probes then only watch for its return). m is
// the host's monitor record; it is called with m.mu held.
func (c *Cluster) hostProbeTimeout(m *monitorHost) (rto, wait time.Duration) {
	rto = m.rto.timeout(c.probeTimeout(), c.probeCeiling())
	if m.down {
		return rto, rto
	}
	wait = max(DefaultProbePatience*rto, m.rto.stallWait())
	return rto, min(wait, max(c.probeCeiling(), rto))
}

// probeTimeouts is hostProbeTimeout, taking m's lock.
func (c *Cluster) probeTimeouts(m *monitorHost) (rto, wait time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return c.hostProbeTimeout(m)
}

// Check runs one monitor round: it polls the HostListProvider (a failing or invalid
// answer keeps the last good list and is reported as EventHostList with Err), probes
// every listed host that the policy does not ignore, all at once, each with its own
// timeout on its own long-lived probe connection (opened again when broken; never a
// pool connection, never a connect-and-drop), and then acts on the results:
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
// own, each host's probes at their own fixed rate (monitor); Check is exported for tests
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
			hosts, perr = c.pollHosts(ctx)
		}()
	} else {
		close(fetched)
	}
	defer func() {
		<-fetched
		if c.env.Provider != nil {
			c.takeHosts(ctx, hosts, perr)
		}
	}()
	c.inUse.RLock()
	defer c.inUse.RUnlock() // before the host list is applied (the deferred takeHosts)
	t := c.topo()
	probed := c.probedHosts(t)
	c.probes.keepOnly(probed) // hosts that left the list, or are ignored: no probe connection
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
			c.probe(ctx, id)
			if id == active {
				close(activeDone)
			}
		}()
	}
	if probed[active] {
		select {
		case <-activeDone:
			if ctx.Err() == nil {
				c.decide()
			}
		case <-ctx.Done():
		}
	}
	wg.Wait()
	if ctx.Err() == nil {
		c.decide()
	}
}

// probe makes one probe of host id and records the result. The round trip waits as long
// as hostProbeTimeout says: DefaultProbePatience times the host's probe timeout, and at
// least its smoothed round trip plus DefaultMaxStall and DefaultStallMargin, on the
// same connection (TCP would retransmit after one timeout and double it; here a repeat
// would only queue behind the request the server has not answered, so the probe waits
// for the first answer that long instead, and an answer however late is a sample of the
// host's round trip). Opening the probe connection gets HostTimeout, or the fixed probe
// bound when HostTimeout is 0 (a far host's handshake takes several round trips and
// must not make it look dead), except while the host is in a run of failed probes: then
// the host's probe timeout, or DefaultCheckFactor times its typical connect time when
// that is longer, so that a hung host is declared down after FailoverDelay and not
// after HostTimeout, and a far one still gets its handshake done. A probe that repeats
// one whose timeout fired late (DefaultMaxLocalPause) opens its connection within the
// longer of that bound and its own wait (within HostTimeout): the late timeout closed
// the connection, and a frozen host accepts a new one and never greets. A probe
// connection that breaks without a timeout (the server killed it, or restarted) is
// opened again at once, in the same probe: a blip of the connection is not a failure of
// the host. A passed round trip is a sample of the host's estimator; a timed-out one
// doubles its timeout and has the monitor probe the host again at once.
func (c *Cluster) probe(ctx context.Context, id int) {
	defer c.replicasChanged() // health, role and lag are what the replica set is made of
	h := c.topo().host(id)
	start := c.env.Clock.Now()
	b := c.probeBudget(h, start)
	r := c.probeConn(ctx, id, h, b)
	if ctx.Err() != nil {
		return // Close: not the host's doing
	}
	if nr := Refusal(r.err); nr != nil && !r.timedOut {
		// The server refused the probe's session or query (offline_mode's 3032 to a user
		// without CONNECTION_ADMIN, Galera's 1047): it is up, and not ready.
		c.NoteRefusal(id, nr)
		r.err = nil
	}
	now := c.env.Clock.Now()
	if r.err != nil {
		c.probeFailed(h, start, now, r)
		return
	}
	if r.st != nil {
		c.noteState(id, *r.st)
	}
	c.probePassed(h, start, now, r.rtt)
}

// probeBounds is what one probe of a host may wait, read at its start (probeBudget).
type probeBounds struct {
	suspect bool          // a run of failed probes is under way
	repeat  bool          // it repeats a probe whose timeout fired late (this process paused)
	rto     time.Duration // the host's probe timeout
	wait    time.Duration // how long the round trip waits (hostProbeTimeout, runLeft)
	runLeft time.Duration // what the run of failed probes has left of FailoverDelay (-1: no run)
	typical time.Duration // the host's typical connect time
}

// probeBudget reads h's bounds for a probe that starts at start.
func (c *Cluster) probeBudget(h *hostState, start time.Time) probeBounds {
	typical := h.health().typical
	m := &h.mon
	m.mu.Lock()
	defer m.mu.Unlock()
	b := probeBounds{suspect: !m.failSince.IsZero(), repeat: m.rto.paused, runLeft: -1, typical: typical}
	b.rto, b.wait = c.hostProbeTimeout(m)
	// Within a run of failed probes, a probe (its round trip, or the opening of its
	// connection) waits no longer than the run needs to reach FailoverDelay, and at least
	// DefaultProbeMargin: the doubling alone would overshoot (225, 450, 900 ms waits for
	// a 500 ms delay). The first probe of a run keeps its whole wait, stall included: it
	// is the one that tells a host that answers late from one that does not answer.
	if b.suspect && !m.down {
		b.runLeft = max(m.failSince.Add(c.cfg.FailoverDelay).Sub(start), DefaultProbeMargin)
		b.wait = min(b.wait, b.runLeft)
	}
	return b
}

// probeResult is what one probe found. Its fields carry over from one try of the probe
// to the next (probeConn).
type probeResult struct {
	err      error
	st       *State        // what the probe read of the server's state (nil: SELECT 1)
	rtt      time.Duration // the round trip
	late     time.Duration // how far past its bound a timed-out step returned
	timedOut bool
}

// probeConn runs the probe's round trip on host id's probe connection, opened first when
// there is none, and once more on a new connection when a kept one broke without a
// timeout (see probe).
func (c *Cluster) probeConn(ctx context.Context, id int, h *hostState, b probeBounds) (r probeResult) {
	conn := c.probes.take(id)
	for again := conn != nil; ; again = false {
		if conn == nil {
			conn = c.probeDial(ctx, id, h, b, &r)
			if fullHost(r.err) {
				// The server answered that it takes no more connections: it is up and
				// its sessions work (a full host is not a down host). The probe
				// connection is opened again next round.
				r.err = nil
				return r
			}
			if r.err != nil {
				return r
			}
		}
		if c.probeRoundTrip(ctx, id, h, conn, b, &r) {
			return r
		}
		conn = nil
		if !again || r.timedOut || Classify(ctx, r.err) != Communication {
			return r
		}
	}
}

// probeDialBound is how long a probe's opening of its connection waits, and why (see
// probe).
func (c *Cluster) probeDialBound(b probeBounds) (bound time.Duration, what string) {
	bound = min(max(b.rto, DefaultCheckFactor*b.typical), c.probeCeiling())
	what = "the host's probe timeout, the host failing its probes"
	if b.runLeft >= 0 && b.runLeft < bound {
		bound, what = b.runLeft, "what its run of failed probes has left of failoverDelay"
	}
	switch {
	case !b.suspect && b.repeat:
		// The connection was closed by the late timeout: a frozen host accepts
		// the new one and never greets, and must not cost hostTimeout.
		bound, what = min(max(c.cfg.HostTimeout, c.probeTimeout()), max(bound, b.wait)), "the probe's wait, repeating a probe whose timeout fired late"
	case !b.suspect:
		bound, what = max(c.cfg.HostTimeout, c.probeTimeout()), "hostTimeout"
	}
	return bound, what
}

// probeDial opens host id's probe connection within probeDialBound, and records its
// error, and whether and how late it timed out, in r.
func (c *Cluster) probeDial(ctx context.Context, id int, h *hostState, b probeBounds, r *probeResult) driver.Conn {
	bound, what := c.probeDialBound(b)
	dctx, cancel := withBudget(ctx, bound)
	defer cancel()
	dialStart := c.env.Clock.Now()
	conn, err := c.env.Dial(dctx, id)
	if err == nil {
		h.noteConnectTime(c.env.Clock.Now().Sub(dialStart))
	}
	if err != nil {
		if dctx.Err() != nil && ctx.Err() == nil {
			r.timedOut, r.late = true, c.env.Clock.Now().Sub(dialStart)-bound
			err = fmt.Errorf("probe connection not opened within %v (%s): %w", bound, what, err)
		} else {
			err = describeDialError(err)
		}
	}
	r.err = err
	return conn
}

// probeRoundTrip runs the probe's round trip on conn and records it in r; when it
// passed, it reads the host's lag (probeMeasure) and keeps conn for the next probe. It
// reports whether the probe is over; when not, conn is closed and the probe may open a
// new one.
func (c *Cluster) probeRoundTrip(ctx context.Context, id int, h *hostState, conn driver.Conn, b probeBounds, r *probeResult) (over bool) {
	rtStart := c.env.Clock.Now()
	r.st, r.timedOut, r.err = c.roundTrip(ctx, conn, b.wait, b.rto)
	r.rtt = c.env.Clock.Now().Sub(rtStart)
	if r.timedOut {
		r.late = r.rtt - b.wait
	}
	if r.err != nil {
		_ = conn.Close()
		return false
	}
	if !c.probeMeasure(ctx, id, h, conn, r.st, b.wait) {
		_ = conn.Close() // broke while its lag was read: reopened next round
		return true
	}
	c.probes.put(id, conn)
	return true
}

// probeMeasure records host id's replica lag, with replica reads, after a passed round
// trip that read st: Galera's own counter, none for the pool's writer, or the replica
// status read on conn within wait (probeLag). It reports false when conn broke meanwhile.
func (c *Cluster) probeMeasure(ctx context.Context, id int, h *hostState, conn driver.Conn, st *State, wait time.Duration) bool {
	switch {
	case !c.cfg.ReplicaReads:
	case st != nil && st.Kind == KindGalera:
		c.noteGaleraLag(h, id == c.Active(), st.Galera) // the cluster's own counter: no replica status
	case id == c.Active():
		c.noteLag(h, LagUnknown, "the pool's writer: not read") // no lag left from its replica days
	default:
		return c.probeLag(ctx, conn, h, wait)
	}
	return true
}

// probeFailed records a failed probe of h that started at start and ended at now: unless
// it was a pause of this process (see monitorHost.failed), a step of the run of failed
// probes, and the host's transition to suspect or down.
func (c *Cluster) probeFailed(h *hostState, start, now time.Time, r probeResult) {
	err := NotBadConn(r.err, "probe failed")
	down, paused := h.mon.failed(start, now, c.cfg.FailoverDelay, r.timedOut, r.late)
	if paused {
		return
	}
	c.emit(failover.Event{Kind: failover.EventProbe, Host: h.addr, Err: err})
	s := failover.HostSuspect
	if down {
		s = failover.HostDown
	}
	h.mu.Lock()
	if h.state == failover.HostDown {
		// A failed attempt said down already: a failing probe confirms it and does
		// not take it back to suspect (down, suspect, down would flap).
		s = failover.HostDown
	}
	// Replica sessions may be on a host declared down now: decide aborts them, so that
	// reads in flight there fail at once and run again on another replica.
	h.mon.declare(down, c.cfg.ReplicaReads)
	changed := h.setState(s, err, c.env.Clock.Now())
	h.mu.Unlock()
	c.reportState(h, changed, s, err)
}

// probePassed records a passed probe of h that started at start and ended at now, with
// round trip rtt: in the monitor's record (monitorHost.passed), and the host up, out of
// backoff.
func (c *Cluster) probePassed(h *hostState, start, now time.Time, rtt time.Duration) {
	h.mu.Lock()
	h.mon.passed(h.unfitLocked(), start, now, rtt)
	h.fails, h.retryAt, h.failing = 0, 0, false
	changed := h.setState(failover.HostUp, nil, c.env.Clock.Now())
	h.mu.Unlock()
	c.reportState(h, changed, failover.HostUp, nil)
	c.emit(failover.Event{Kind: failover.EventProbePassed, Host: h.addr, Duration: now.Sub(start)})
}

// roundTrip runs the probe's query on conn within wait (see hostProbeTimeout; rto is the
// host's probe timeout, for the error): ReadState when the probe needs the server's
// state (probeReads), else probeQuery. st is what ReadState found (nil without it, or
// when it failed).
func (c *Cluster) roundTrip(ctx context.Context, conn driver.Conn, wait, rto time.Duration) (st *State, timedOut bool, err error) {
	pctx, cancel := withBudget(ctx, wait)
	defer cancel()
	if c.probeReads() {
		var s State
		if s, err = ReadState(pctx, conn, kindOf(c.cfg.Cluster)); err == nil {
			st = &s
		}
	} else {
		err = selectOne(pctx, conn)
	}
	if err != nil && pctx.Err() != nil && ctx.Err() == nil {
		return nil, true, fmt.Errorf("probe timed out after %v (the host's probe timeout is %v: its smoothed round trip plus %d deviations, at least %v, doubled after each timeout; a probe waits %d times that, and at least its smoothed round trip plus %v, until the host is declared down): %w",
			wait, rto, DefaultProbeVarianceFactor, DefaultProbeMargin, DefaultProbePatience, DefaultMaxStall+DefaultStallMargin, err)
	}
	return st, false, err
}

// probeReads reports whether a probe reads the server's state (ReadState) rather than
// run probeQuery: for the role check of targetSessionAttrs; for replica reads (a
// writable host of a replication cluster is no replica); when the cluster type has a
// readiness (Galera, Group Replication); and, with cluster=auto, until a server has said
// what the cluster is.
func (c *Cluster) probeReads() bool {
	k := c.Kind()
	return c.Target() != attrs.Any || c.cfg.ReplicaReads || k != KindReplication
}

// selectOne runs probeQuery on conn and reads its row.
func selectOne(ctx context.Context, conn driver.Conn) error {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return errors.New("mysqlfailover: the connection cannot run the probe query (no driver.QueryerContext)")
	}
	rows, err := q.QueryContext(ctx, probeQuery, nil)
	if err != nil {
		return err
	}
	vals := make([]driver.Value, len(rows.Columns()))
	for err == nil {
		err = rows.Next(vals)
	}
	cerr := rows.Close()
	if err != io.EOF {
		return err
	}
	return cerr
}

// healthy reports whether h's probes have passed without a pause for at least d, its
// role qualifies, and probes have not declared it down.
func (c *Cluster) healthy(h *hostState, now time.Time, d time.Duration) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.unfitLocked() && h.mon.passedFor(now, d)
}

// leftAfterFailure records that a connection's walk moved the pool off host id after a
// failure. The walk may beat the probes to it (a caller's deadline cuts its attempt on a
// hung host to a share of 250 ms, the probe timeout is 500 ms): decide then finds the pool
// already elsewhere, and without this record the connections still on the host (statements
// in flight, handshakes that hang) would wait for readTimeout and hostTimeout.
func (c *Cluster) leftAfterFailure(id int) {
	if h := c.topo().host(id); h != nil {
		h.mon.setAbortDue()
	}
}

// abortHost closes every connection to h, host id, which probes declared down
// (Env.Abort), and reports it with cause.
func (c *Cluster) abortHost(id int, h *hostState, cause error) {
	h.mon.clearAbortDue()
	c.aborted.Add(1)
	c.emit(failover.Event{Kind: failover.EventAbort, Host: h.addr, Err: cause})
	c.env.Abort(id)
}

// decide acts on the probes' results: see Check.
//
// It acts on the position it read: a move made meanwhile (a SwitchTo, a walk that
// landed, a new host list) stands, and its events name the hosts the pool really left
// and joined (moveFrom).
func (c *Cluster) decide() { c.decideAt(c.pos.Load()) }

// decideAt is decide on pos, the position as it was read.
func (c *Cluster) decideAt(pos *position) {
	t := pos.t
	now := c.env.Clock.Now()
	a := pos.active
	ha := t.host(a)
	if c.env.Abort != nil {
		c.abortLeft(t, a)
	}
	if v := ha.health(); v.down || v.unfit || !t.member[a] {
		c.leaveActive(pos, now)
		return
	}
	if c.Home(a) {
		return
	}
	c.returnHome(pos, now)
}

// abortLeft closes the connections to the hosts of t but a, the active one, that the
// probes declared down after a walk had moved the pool off them, as if the monitor had
// moved the pool (once).
func (c *Cluster) abortLeft(t *topo, a int) {
	for _, id := range t.list {
		if id == a {
			continue
		}
		h := t.hosts[id]
		h.mu.Lock()
		due, cause := h.mon.takeAbortDue(), h.lastErr
		h.mu.Unlock()
		if due {
			c.abortHost(id, h, cause)
		}
	}
}

// leaveActive moves the pool at pos off its active host, which the probes declared down
// or which does not qualify, to the first host of the plan whose last probe passed, and
// closes the old host's connections when it is down; with no such host the pool stays.
func (c *Cluster) leaveActive(pos *position, now time.Time) {
	t, a := pos.t, pos.active
	ha := t.host(a)
	target := -1
	for _, id := range c.order(t, plan{start: c.next(t, a), failed: a}, 0, nil, nil) {
		if id != a && c.healthy(t.hosts[id], now, 0) {
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
		cause = &RoleError{Role: role, Wanted: c.Target()}
	}
	if !c.moveFrom(pos, func(p *position) {
		p.active, p.lastResort = target, false
		if !p.t.isHome(target) {
			c.restartClocks(p, false)
		}
		p.failovers++
	}) {
		return
	}
	c.emit(failover.Event{Kind: failover.EventSwitch, Host: t.hosts[target].addr, From: ha.addr, Err: cause})
	if ha.health().down && c.env.Abort != nil {
		c.abortHost(a, ha, cause)
	}
}

// returnHome moves the pool at pos, away from home, back to the first home host of the
// plan whose probes have passed for SwitchBackDelay.
func (c *Cluster) returnHome(pos *position, now time.Time) {
	t, a := pos.t, pos.active
	ha := t.host(a)
	for _, id := range c.order(t, plan{start: t.primary, failed: -1}, 0, nil, nil) {
		if id == a || !t.isHome(id) || !c.healthy(t.hosts[id], now, c.cfg.SwitchBackDelay) {
			continue
		}
		h := t.hosts[id]
		since := h.mon.passedSince() // the first passing probe of the run that brings the pool back
		if c.moveFrom(pos, func(p *position) {
			p.active, p.lastResort = id, false
			p.fallBacks++
		}) {
			c.emit(failover.Event{Kind: failover.EventFallBack, Host: h.addr, From: ha.addr, Duration: now.Sub(since)})
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
	if t.distance(t.infos()[id]) == failover.DistanceIgnored {
		// Never connected to: localDC without usedHostsPerRemoteDC for its DC, or a
		// policy layer that ignores it.
		return fmt.Errorf("mysqlfailover: SwitchTo %s: the host policy ignores it (a remote DC beyond usedHostsPerRemoteDC, or a WithPolicy layer), and an ignored host is never connected to", t.hosts[id].addr)
	}
	conn, _, err := c.attempt(ctx, id, nil, false)
	if err != nil {
		return fmt.Errorf("mysqlfailover: SwitchTo %s: %w", t.hosts[id].addr, NotBadConn(err, ""))
	}
	_ = conn.Close()
	c.Release(id)
	c.mu.Lock()
	cur := c.pos.Load()
	nt, err := c.newTopo(cur.t.hosts, cur.t.list, id)
	if err != nil {
		c.mu.Unlock()
		return err
	}
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
