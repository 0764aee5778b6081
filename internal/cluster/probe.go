package cluster

// One probe of one host (probe), step by step: its bounds (probeBudget: the host's probe
// timeout from its estimator, rto.go, and what its run of failed probes has left of
// failoverDelay), the session it runs on (probeConn: an idle pooled session of the host
// that the pool lends, Env.Borrow, else the host's long-lived probe connection, opened
// by probeDial), the round trip (probeRoundTrip: ReadState or SELECT 1), the lag read
// (probeMeasure), and what the result does to the host: a pause of this process, a step
// of a run of failed probes and the transition to suspect or down, or a passed probe
// (probeFailed, probePassed; the monitor's record of the host is monitorHost,
// monitorhost.go). The probe connections are the probeSet's, under its own small lock;
// a borrowed session is never kept there.
//
// A probe borrows rather than opens because a fleet is the unit of cost: with a probe
// connection per host, every instance of a service costs the primary one session more
// than its pool. A borrowed session is one database/sql holds idle (conn.Lender):
// outside any transaction, autocommit on, no session state held, no statement
// prepared; the probe's reads (SELECT 1, SHOW GLOBAL VARIABLES, SHOW GLOBAL STATUS,
// performance_schema and replica status reads) change nothing its next user can rely
// on (they reset the session's warning list and its ROW_COUNT() and FOUND_ROWS(), which
// database/sql never promises across two uses of its pool anyway).

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// probeQuery is the probe's round trip when it has no state to read (see probeReads);
// otherwise the probe runs ReadState, which reads the role and the readiness on the way.
const probeQuery = "SELECT 1"

// probeSet holds the long-lived probe connection of each host, and knows which hosts'
// probe connections a probe has taken out (take to put or done).
type probeSet struct {
	mu    sync.Mutex
	conns map[int]driver.Conn
	out   map[int]bool
	marks map[int]*atomic.Bool // each open probe connection's ProbeMark
	putAt map[int]time.Time    // when each kept connection was put back, its probe passed
}

// has reports whether a probe connection of host id is open: kept, or in use by a probe.
func (p *probeSet) has(id int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.conns[id] != nil || p.out[id]
}

// take takes host id's probe connection out for a probe (nil: none kept).
func (p *probeSet) take(id int) driver.Conn {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.conns[id]
	delete(p.conns, id)
	if c != nil {
		p.using(id)
	}
	return c
}

// opened records that a probe opened a probe connection of host id, dialled with mark
// (WithProbe), in use until put or done.
func (p *probeSet) opened(id int, mark *atomic.Bool) {
	p.mu.Lock()
	p.using(id)
	if p.marks == nil {
		p.marks = map[int]*atomic.Bool{}
	}
	p.marks[id] = mark
	p.mu.Unlock()
}

// adopt hands host id's idle probe connection to a session of the pool, so that the
// first session on a host the pool moves to needs no handshake: the probes kept one
// open there, and read its role moments ago. It returns nil when none is idle, or when
// the last probe on it passed before since (it may have died while it sat idle). Its
// socket counts as traffic from now on (its mark cleared); the host's next probe
// borrows a pooled session or opens a probe connection anew.
func (p *probeSet) adopt(id int, since time.Time) (driver.Conn, *atomic.Bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.conns[id]
	if c == nil || p.putAt[id].Before(since) {
		return nil, nil
	}
	m := p.marks[id]
	delete(p.conns, id)
	delete(p.putAt, id)
	if m != nil {
		m.Store(false)
	}
	delete(p.marks, id)
	return c, m
}

// giveBack returns c, host id's probe connection that adopt handed out, with its mark,
// to the probes at now, after the attempt that took it found the host of a role the
// pool does not want (it answered: the session is sound). A walk that waits for a
// promotion then reads the standbys' roles on the probes' sessions, pass after pass,
// instead of each pass costing every standby a handshake and the probes another. When
// the probes opened another connection meanwhile, c is closed.
func (p *probeSet) giveBack(id int, c driver.Conn, mark *atomic.Bool, now time.Time) {
	p.mu.Lock()
	if p.conns[id] != nil || p.out[id] {
		p.mu.Unlock()
		_ = c.Close()
		return
	}
	if p.conns == nil {
		p.conns, p.putAt = map[int]driver.Conn{}, map[int]time.Time{}
	}
	if p.marks == nil {
		p.marks = map[int]*atomic.Bool{}
	}
	p.conns[id], p.putAt[id] = c, now
	if mark != nil {
		mark.Store(true)
		p.marks[id] = mark
	}
	p.mu.Unlock()
}

// using marks host id's probe connection as in use; p.mu is held.
func (p *probeSet) using(id int) {
	if p.out == nil {
		p.out = map[int]bool{}
	}
	p.out[id] = true
}

// done records that the probe connection of host id taken out was closed.
func (p *probeSet) done(id int) {
	p.mu.Lock()
	delete(p.out, id)
	delete(p.marks, id)
	delete(p.putAt, id)
	p.mu.Unlock()
}

// put keeps c, host id's probe connection, idle at now after a probe passed on it.
func (p *probeSet) put(id int, c driver.Conn, now time.Time) {
	p.mu.Lock()
	if p.conns == nil {
		p.conns, p.putAt = map[int]driver.Conn{}, map[int]time.Time{}
	}
	old := p.conns[id]
	p.conns[id], p.putAt[id] = c, now
	delete(p.out, id)
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
			delete(p.marks, id)
			delete(p.putAt, id)
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
	p.conns, p.marks, p.putAt = nil, nil, nil
	p.mu.Unlock()
	for _, c := range cs {
		_ = c.Close()
	}
}

// probeTimeout is the fixed probe bound: max(CheckInterval, DefaultMinProbeTimeout), at
// most HostTimeout when that is set. It bounds a host-list poll, an attempt on a host the
// probes declared down, a probe before its host's first passed probe, and the doubling
// of a host's probe timeout (rtoEstimator.timeout).
func (cfg settings) probeTimeout() time.Duration {
	d := max(cfg.CheckInterval, DefaultMinProbeTimeout)
	if cfg.HostTimeout > 0 {
		d = min(d, cfg.HostTimeout)
	}
	return d
}

// probeCeiling caps every probe timeout: HostTimeout, or DefaultMaxProbeTimeout when
// that is 0 (never below the fixed bound).
func (cfg settings) probeCeiling() time.Duration {
	if cfg.HostTimeout > 0 {
		return cfg.HostTimeout
	}
	return max(DefaultMaxProbeTimeout, cfg.probeTimeout())
}

// hostProbeTimeout returns a host's probe timeout from its estimator, rto (see rto.go),
// and how long its next probe round trip waits for an answer: DefaultProbePatience times
// rto, or its stall wait (rtoEstimator.stallWait: SRTT + DefaultMaxStall +
// DefaultStallMargin) when that is longer, at most the ceiling; or rto alone once the
// probes have declared the host down (its probes then only watch for its return). m is
// the host's monitor record; it is called with m.mu held.
func (cfg settings) hostProbeTimeout(m *monitorHost) (rto, wait time.Duration) {
	rto = m.rto.timeout(cfg.probeTimeout(), cfg.probeCeiling())
	if m.down {
		return rto, rto
	}
	wait = max(DefaultProbePatience*rto, m.rto.stallWait())
	return rto, min(wait, max(cfg.probeCeiling(), rto))
}

// probeTimeouts is hostProbeTimeout, taking m's lock.
func (cfg settings) probeTimeouts(m *monitorHost) (rto, wait time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return cfg.hostProbeTimeout(m)
}

// probe makes one probe of host id and records the result. The round trip waits as long
// as hostProbeTimeout says: DefaultProbePatience times the host's probe timeout, and at
// least its smoothed round trip plus DefaultMaxStall and DefaultStallMargin, on the
// same connection (TCP would retransmit after one timeout and double it; here a repeat
// would only queue behind the request the server has not answered, so the probe waits
// for the first answer that long instead, and an answer however late is a sample of the
// host's round trip). The probe runs on an idle pooled session of the host when the
// pool lends one, and then closes the host's probe connection if one is kept; else on
// that connection. Opening the probe connection gets HostTimeout, or the fixed probe
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
func (mon *monitor) probe(ctx context.Context, id int) {
	defer mon.c.rep.changed() // health, role and lag are what the replica set is made of
	h := mon.c.topo().host(id)
	start := mon.env.Clock.Now()
	b := mon.probeBudget(h, start)
	life0 := mon.c.att.life(h)
	r := mon.probeConn(ctx, id, h, b)
	if ctx.Err() != nil {
		return // Close: not the host's doing
	}
	if nr := Refusal(r.err); nr != nil && !r.timedOut {
		// The server refused the probe's session or query (offline_mode's 3032 to a user
		// without CONNECTION_ADMIN, Galera's 1047): it is up, and not ready.
		mon.c.NoteRefusal(id, nr)
		r.err = nil
	}
	now := mon.env.Clock.Now()
	if mon.cfg.ReplicaReads && (r.err != nil || r.broke) {
		// The host failed, or its server closed the probe's session (a restart): the
		// replica sessions idle meanwhile are checked before their next use.
		mon.c.rpool.suspect(id, now.UnixNano())
	}
	if r.err != nil {
		if r.timedOut && mon.c.att.life(h) != life0 && h.mon.answeredMeanwhile() {
			// Other sessions of the connector read from the host while the probe waited:
			// it is slow (a starved CPU, a stall), not down. The probe is repeated at
			// once.
			return
		}
		mon.probeFailed(h, start, now, r)
		return
	}
	if r.st != nil {
		mon.c.rec.noteState(id, *r.st)
	}
	mon.probePassed(h, start, now, r.rtt)
	mon.probeLooks(ctx, id, r.st)
}

// probeBounds is what one probe of a host may wait, read at its start (probeBudget).
type probeBounds struct {
	suspect bool          // a run of failed probes is under way
	repeat  bool          // it repeats a probe whose timeout fired late (this process paused)
	rto     time.Duration // the host's probe timeout
	wait    time.Duration // how long the round trip waits (hostProbeTimeout, runLeft)
	runLeft time.Duration // what the run of failed probes has left of FailoverDelay (-1: no run)
	typical time.Duration // the host's typical connect time
	// borrowed: the host's probes have run on pooled sessions, or the pool took their
	// session (adopted), so the monitor has no probe connection of its own there to
	// wait on (probeDialBound)
	borrowed bool
}

// probeBudget reads h's bounds for a probe that starts at start.
func (mon *monitor) probeBudget(h *hostState, start time.Time) probeBounds {
	typical := h.health().typical
	m := &h.mon
	m.mu.Lock()
	defer m.mu.Unlock()
	b := probeBounds{suspect: !m.failSince.IsZero(), repeat: m.rto.paused, runLeft: -1, typical: typical, borrowed: h.lent.Load() > 0 || h.adopted.Load()}
	b.rto, b.wait = mon.cfg.hostProbeTimeout(m)
	// Within a run of failed probes, a probe (its round trip, or the opening of its
	// connection) waits no longer than the run needs to reach FailoverDelay, and at least
	// DefaultProbeMargin: the doubling alone would overshoot (225, 450, 900 ms waits for
	// a 500 ms delay). The first probe of a run keeps its whole wait, stall included: it
	// is the one that tells a host that answers late from one that does not answer.
	if b.suspect && !m.down {
		b.runLeft = max(m.failSince.Add(mon.cfg.FailoverDelay).Sub(start), DefaultProbeMargin)
		b.wait = min(b.wait, b.runLeft)
	}
	return b
}

// probed is the host of a probe's round trip: its id, its state and the session the
// probe runs on.
type probed struct {
	id   int
	h    *hostState
	conn driver.Conn
}

// probeResult is what one probe found. Its fields carry over from one try of the probe
// to the next (probeConn).
type probeResult struct {
	err      error
	st       *State        // what the probe read of the server's state (nil: SELECT 1)
	rtt      time.Duration // the round trip
	late     time.Duration // how far past its bound a timed-out step returned
	timedOut bool
	broke    bool // the kept probe connection broke without a timeout (a restart, a kill): opened again
}

// probeConn runs the probe's round trip on an idle pooled session of host id when the
// pool lends one (borrow), and then closes the host's own probe session if one is kept;
// else on host id's probe session, opened first when there is none. It runs once more,
// on a new probe session, when the session it used broke without a timeout (see probe;
// a pooled session the server ended while it sat idle, wait_timeout, is no failure of
// the host either).
func (mon *monitor) probeConn(ctx context.Context, id int, h *hostState, b probeBounds) (r probeResult) {
	conn, giveBack := mon.borrow(id)
	if conn != nil {
		if own := mon.probes.take(id); own != nil {
			_ = own.Close() // the pool holds a session there: the probes use it
			mon.probes.done(id)
		}
		h.lent.Add(1)
	} else {
		conn = mon.probes.take(id)
	}
	for again := conn != nil; ; again = false {
		if conn == nil {
			conn = mon.probeDial(ctx, id, h, b, &r)
			if dialect.Full(r.err) {
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
		if giveBack == nil {
			h.own.Add(1)
		}
		over, keep := mon.probeRoundTrip(ctx, probed{id, h, conn}, b, &r)
		switch {
		case giveBack != nil:
			giveBack(!keep) // a broken one is closed by its lender
			giveBack = nil
		case keep:
			mon.probes.put(id, conn, mon.env.Clock.Now())
		default:
			_ = conn.Close()
			mon.probes.done(id)
		}
		if over {
			return r
		}
		conn = nil
		if !again || r.timedOut || Classify(ctx, r.err) != Communication {
			return r
		}
		r.broke = true
	}
}

// borrow returns an idle pooled session of host id and the function that gives it back
// (Env.Borrow), or a nil conn when none may be lent.
func (mon *monitor) borrow(id int) (driver.Conn, func(broken bool)) {
	if mon.env.Borrow == nil {
		return nil, nil
	}
	return mon.env.Borrow(id)
}

// probeKey marks the context of a probe connection's dial (ProbeMark).
type probeKey struct{}

// WithProbe returns ctx marked as the context of a probe connection's dial, with mark
// set (ProbeMark).
func WithProbe(ctx context.Context, mark *atomic.Bool) context.Context {
	mark.Store(true)
	return context.WithValue(ctx, probeKey{}, mark)
}

// ProbeMark returns the mark of a probe connection's dial (nil: ctx is not one). While
// the mark holds, the socket tracker does not count the socket's waits as traffic
// (Env.Waiting); it is cleared when the pool adopts the connection (probeSet.adopt).
func ProbeMark(ctx context.Context) *atomic.Bool {
	m, _ := ctx.Value(probeKey{}).(*atomic.Bool)
	return m
}

// probeDialBound is how long a probe's opening of its connection waits, and why (see
// probe).
func (cfg settings) probeDialBound(b probeBounds) (bound time.Duration, what string) {
	bound = min(max(b.rto, DefaultCheckFactor*b.typical), cfg.probeCeiling())
	what = "the host's probe timeout, the host failing its probes"
	if b.runLeft >= 0 && b.runLeft < bound {
		bound, what = b.runLeft, "what its run of failed probes has left of failoverDelay"
	}
	switch {
	case !b.suspect && b.repeat:
		// The connection was closed by the late timeout: a frozen host accepts
		// the new one and never greets, and must not cost hostTimeout.
		bound, what = min(max(cfg.HostTimeout, cfg.probeTimeout()), max(bound, b.wait)), "the probe's wait, repeating a probe whose timeout fired late"
	case !b.suspect && b.borrowed:
		// The probes ran on pooled sessions, and none is idle now: the pool's sessions
		// may all be stuck on a host that froze. Had the probe kept a connection, its
		// round trip would have waited b.wait: so does the opening of one (a frozen host
		// accepts it and never greets), and a far host still gets its handshake done.
		bound, what = min(max(cfg.HostTimeout, cfg.probeTimeout()), max(bound, b.wait)), "the probe's wait, every pooled session of the host busy"
	case !b.suspect:
		bound, what = max(cfg.HostTimeout, cfg.probeTimeout()), "hostTimeout"
	}
	return bound, what
}

// probeDial opens host id's probe connection within probeDialBound, and records its
// error, and whether and how late it timed out, in r.
func (mon *monitor) probeDial(ctx context.Context, id int, h *hostState, b probeBounds, r *probeResult) driver.Conn {
	bound, what := mon.cfg.probeDialBound(b)
	mark := new(atomic.Bool)
	dctx, cancel := withBudget(WithProbe(ctx, mark), bound)
	defer cancel()
	dialStart := mon.env.Clock.Now()
	conn, err := mon.env.Dial(dctx, id)
	if err == nil {
		h.noteConnectTime(mon.env.Clock.Now().Sub(dialStart))
	}
	if err != nil {
		if dctx.Err() != nil && ctx.Err() == nil {
			r.timedOut, r.late = true, mon.env.Clock.Now().Sub(dialStart)-bound
			err = fmt.Errorf("probe connection not opened within %v (%s): %w", bound, what, err)
		} else {
			err = describeDialError(err)
		}
	}
	r.err = err
	if conn != nil {
		mon.probes.opened(id, mark)
	}
	return conn
}

// probeRoundTrip runs the probe's round trip on conn and records it in r; when it
// passed, it reads the host's lag (probeMeasure) and the cluster's members
// (probeDiscover). It reports whether the probe is over (when not, it may run again on
// a new connection), and whether conn may serve the next probe: not when a read on it
// failed, as its protocol state is then unknown.
func (mon *monitor) probeRoundTrip(ctx context.Context, p probed, b probeBounds, r *probeResult) (over, keep bool) {
	id, h, conn := p.id, p.h, p.conn
	rtStart := mon.env.Clock.Now()
	var read *hostState // whose state the probe reads (nil: SELECT 1)
	if mon.stateDue(id, h, rtStart) {
		read = h
	}
	r.st, r.timedOut, r.err = mon.roundTrip(ctx, conn, b, read)
	r.rtt = mon.env.Clock.Now().Sub(rtStart)
	if r.timedOut {
		r.late = r.rtt - b.wait
	}
	if r.err != nil {
		return false, false
	}
	if !mon.probeMeasure(ctx, p, r.st, b.wait) || !mon.probeDiscover(ctx, id, conn, r.st, b.wait) {
		return true, false // broke while its lag or the cluster's members were read: reopened next round
	}
	return true, true
}

// probeMeasure records host id's replica lag, with replica reads, after a passed round
// trip that read st: Galera's own counter, none for the pool's writer, or the replica
// status read on conn within wait (probeLag). It reports false when conn broke meanwhile.
func (mon *monitor) probeMeasure(ctx context.Context, p probed, st *State, wait time.Duration) bool {
	id, h, conn := p.id, p.h, p.conn
	switch {
	case !mon.cfg.ReplicaReads:
	case st != nil && st.Kind == KindGalera:
		mon.noteGaleraLag(h, id == mon.c.Active(), st.Galera) // the cluster's own counter: no replica status
	case id == mon.c.Active():
		mon.c.rep.noteLag(h, LagUnknown, "the pool's writer: not read") // no lag left from its replica days
	default:
		return mon.c.rep.probeLag(ctx, conn, h, wait)
	}
	return true
}

// probeFailed records a failed probe of h that started at start and ended at now: unless
// it was a pause of this process (see monitorHost.failed), a step of the run of failed
// probes, and the host's transition to suspect or down.
func (mon *monitor) probeFailed(h *hostState, start, now time.Time, r probeResult) {
	err := dialect.NotBadConn(r.err, "probe failed")
	down, paused := h.mon.failed(start, now, mon.downDelay(h), r.timedOut, r.late)
	if paused {
		return
	}
	mon.c.emit(failover.Event{Kind: failover.EventProbe, Host: h.addr, Err: err})
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
	if down {
		h.mon.declareDown(mon.cfg.ReplicaReads)
	}
	changed := h.setState(s, err, mon.env.Clock.Now())
	h.mu.Unlock()
	mon.c.rec.reportState(h, changed, s, err)
}

// probePassed records a passed probe of h that started at start and ended at now, with
// round trip rtt: in the monitor's record (monitorHost.passed), and the host up, out of
// backoff, unless a failure of the host was recorded after the probe started (a
// session's, an attempt's: backOff): the probe's answer is older news than that failure,
// and the host stays down until a probe that started after it passes. Without that rule a
// probe in flight when the host died turned it up again for a moment, and the outage was
// told twice (TestOutageLogs, under load).
func (mon *monitor) probePassed(h *hostState, start, now time.Time, rtt time.Duration) {
	h.mu.Lock()
	h.mon.passed(h.unfitLocked(), start, now, rtt)
	changed := false
	if h.state == failover.HostUp || h.changed.Before(start) {
		h.clearBackoffLocked()
		changed = h.setState(failover.HostUp, nil, mon.env.Clock.Now())
	}
	h.mu.Unlock()
	mon.c.rec.reportState(h, changed, failover.HostUp, nil)
	mon.c.emit(failover.Event{Kind: failover.EventProbePassed, Host: h.addr, Duration: now.Sub(start)})
}

// roundTrip runs the probe's query on conn within b's wait (see hostProbeTimeout; its rto
// is the host's probe timeout, for the error): the state of read when it is not nil
// (stateDue), with the role query read learned (roleselect.go), else probeQuery. st is
// what ReadState found (nil without it, or when it failed).
func (mon *monitor) roundTrip(ctx context.Context, conn driver.Conn, b probeBounds, read *hostState) (st *State, timedOut bool, err error) {
	wait, rto := b.wait, b.rto
	pctx, cancel := withBudget(ctx, wait)
	defer cancel()
	if read != nil {
		var s State
		if s, err = readState(pctx, conn, kindOf(mon.cfg.Cluster), &read.roleSel, mon.env.Clock.Now()); err == nil {
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

// stateDue reports whether a probe of host id that starts at now reads the server's
// state (probeReads). The pool's own host of a replication cluster, while its role
// qualifies, has it read once per watchEvery, and in between is only asked whether it
// answers (probeQuery): on the alert schedule, because its statements wait, a role read
// every probe would cost the server a SHOW GLOBAL VARIABLES twenty times a second per
// instance, and the pool's statements meet a changed role themselves (1290). A host
// whose role does not qualify has it read by every probe: the pool waits for it.
func (mon *monitor) stateDue(id int, h *hostState, now time.Time) bool {
	if !mon.probeReads() {
		return false
	}
	if id != mon.c.Active() || mon.c.Kind() != KindReplication || mon.cfg.DiscoverHosts || h.isUnfit() {
		return true
	}
	return h.mon.claimStateRead(now.Add(-mon.cfg.watchEvery()), now)
}

// probeReads reports whether a probe reads the server's state (ReadState) rather than
// run probeQuery: for the role check of targetSessionAttrs; for replica reads (a
// writable host of a replication cluster is no replica); when the cluster type has a
// readiness (Galera, Group Replication); and, with cluster=auto, until a server has said
// what the cluster is; and for discovery (a member found is checked before any use, and
// its identity read).
func (mon *monitor) probeReads() bool {
	k := mon.c.Kind()
	return mon.c.Target() != attrs.Any || mon.cfg.ReplicaReads || k != KindReplication || mon.cfg.DiscoverHosts
}

// selectOne runs probeQuery on conn and reads its row.
func selectOne(ctx context.Context, conn driver.Conn) error {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return errors.New("mysqlfailover: the connection cannot run the probe query (no driver.QueryerContext)")
	}
	_, _, err := dialect.Query(ctx, q, probeQuery, 0)
	return err
}

// downDelay is how long host h's probes must fail without a pause before they declare
// it down: failoverDelay for the pool's host, which the pool must leave in time; for
// another host at least DefaultTargetDownDelay, as its verdict only keeps the walks
// from trying it, and a host that a fleet's failover overloads for a moment (its
// probes time out while connections reach it) must not be left out of every walk.
func (mon *monitor) downDelay(h *hostState) time.Duration {
	if t := mon.c.topo(); t.host(mon.c.Active()) == h {
		return mon.cfg.FailoverDelay
	}
	return max(mon.cfg.FailoverDelay, DefaultTargetDownDelay)
}
