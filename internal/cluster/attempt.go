package cluster

// One host attempt: dial, the role check of targetSessionAttrs, then the session's set-up,
// within one budget (hostTimeout, a share of the caller's time left, the same-host
// check's limit, the probe timeout for a host the probes declared down); its outcome
// moves the host's backoff and its typical connect time. describeDialError words the
// failures of the connection phase.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// attempt makes one bounded host attempt: dial, the role check of targetSessionAttrs
// (one round trip), then setup. The bound is HostTimeout and, when the caller's context
// has a deadline, a share of the time left (see DefaultTimeLeftShare, DefaultMinHostShare
// and DefaultTypicalFactor). A hung host must not eat a
// short request deadline whole, or a pool whose callers all carry deadlines below
// HostTimeout would never get past a frozen primary (the caller's own deadline is never
// blamed on a host); and a host that is merely far away (a slow TLS handshake across
// regions) must not be taken for a hung one. When the share is not shorter than the time
// left, the caller's deadline alone bounds the attempt.
//
// A host whose role does not qualify fails the attempt with a *RoleError, except that
// with prefer-standby and lastResortOK a non-standby is set up and returned with
// lastResort true, for the walk to keep aside. A failure that is the host's (not the
// caller's context, not its role, not a full host) puts the host into backoff; a success
// clears it.
func (at *attempter) attempt(ctx context.Context, h int, setup SetupFunc, lastResortOK bool) (driver.Conn, bool, error) {
	var o attemptOpts
	if lastResortOK {
		o.flags = attemptLastResort
	}
	return at.run(ctx, h, setup, o)
}

// attempter is one bounded host attempt (attempt.go) and the patience owed to a host
// that is full or closes new sessions' handshakes (storm.go, patient). It reaches the
// rest of the Cluster through c.
type attempter struct {
	c   *Cluster
	cfg settings // c.cfg
	env *Env     // &c.env

	// handshakeRetries counts closed handshakes tried again on the same host, and
	// sessionsClosed the new sessions that failed so while the host answered others
	// (storm.go; Stats().HandshakeRetries, SessionsClosed).
	handshakeRetries, sessionsClosed atomic.Int64
}

// attemptFlags shape one host attempt; the zero value is a walk's plain attempt.
type attemptFlags uint8

const (
	// attemptLastResort: with prefer-standby, a non-standby is set up and returned
	// with lastResort true, for the walk to keep aside.
	attemptLastResort attemptFlags = 1 << iota
	// attemptNoRole: no role check of targetSessionAttrs (a replica session:
	// Replicas.Open).
	attemptNoRole
	// attemptKeep: a handshake the server closed (closedHandshake) leaves the host's
	// health as it was and is not reported (EventConnect), for attempter.patient to
	// decide.
	attemptKeep
)

// attemptOpts is how one host attempt runs: its flags, and a further bound, limit (0:
// none), for the quick same-host check of Recover.
type attemptOpts struct {
	flags attemptFlags
	limit time.Duration
}

// has reports whether o has flag f.
func (o attemptOpts) has(f attemptFlags) bool { return o.flags&f != 0 }

// run is attempt as o says.
func (at *attempter) run(ctx context.Context, h int, setup SetupFunc, o attemptOpts) (conn driver.Conn, lastResort bool, err error) {
	limit, keep := o.limit, o.has(attemptKeep)
	hs := at.c.topo().host(h)
	if hs == nil {
		return nil, false, fmt.Errorf("mysqlfailover: no host with id %d", h)
	}
	actx := ctx
	budget, bound := at.cfg.attemptBudget(ctx, hs.health(), limit)
	if budget > 0 {
		var cancel context.CancelFunc
		actx, cancel = withBudget(ctx, budget) // a wall-clock bound, as every context's
		defer cancel()
	}
	timedOut := func(err error) error {
		if Ended(actx) && !Ended(ctx) {
			return &HostTimeoutError{After: budget, Cause: err, bound: bound}
		}
		return err
	}
	a := attempted{h: h, hs: hs, start: at.env.Clock.Now(), keep: keep, timedOut: timedOut}
	conn, lastResort, err = at.session(actx, &a, setup, o)
	err = at.done(ctx, a, err)
	if !keep || !closedHandshake(err) {
		at.c.emit(failover.Event{Kind: failover.EventConnect, Host: hs.addr, Err: err})
	} // else attempter.patient reports the attempt once it has decided (closedAgain)
	return conn, lastResort, err
}

// attemptBudget is the bound of an attempt on a host of health hv within ctx, further
// bounded by limit (0: none), and its name for the error (see attempt); 0: the caller's
// context alone.
func (cfg settings) attemptBudget(ctx context.Context, hv health, limit time.Duration) (budget time.Duration, bound string) {
	budget, bound = cfg.HostTimeout, "hostTimeout"
	if dl, ok := ctx.Deadline(); ok {
		left := timeLeft(dl) // the caller's deadline is on the wall clock
		share := max(left/DefaultTimeLeftShare, DefaultMinHostShare, DefaultTypicalFactor*hv.typical)
		if share < left && (budget == 0 || share < budget) {
			budget, bound = share, "a share of the caller's time left"
		}
	}
	if limit > 0 && (budget == 0 || limit < budget) {
		budget, bound = limit, "the check of a host whose session ended"
	}
	if hv.down && cfg.CheckInterval > 0 {
		// Declared down by the probes, after this attempt was planned (walks leave such
		// hosts out): it gets no more than a probe would, so that a socket opened after
		// the monitor closed the host's connections does not wait for hostTimeout.
		if pt := cfg.probeTimeout(); budget == 0 || pt < budget {
			budget, bound = pt, "the probe timeout: the probes declared the host down"
		}
	}
	return budget, bound
}

// session is the attempt's work within actx, its bound: take the probes' idle session
// of the host, when a probe passed on it within watchEvery (probeSet.adopt), or dial
// one, and make it ready (ready). An adopted session that fails with a communication
// error is replaced by a dialled one. conn is nil when err is not.
func (at *attempter) session(actx context.Context, a *attempted, setup SetupFunc, o attemptOpts) (conn driver.Conn, lastResort bool, err error) {
	if conn = at.adoptable(a, o); conn != nil {
		a.adopted = true
		if lastResort, err = at.readyAdopted(actx, a, conn, setup, o); err == nil {
			return conn, lastResort, nil
		}
		if Classify(actx, err) != Communication {
			return nil, false, err
		}
		a.adopted = false
	}
	conn, err = at.env.Dial(actx, a.h)
	if err != nil {
		if e := a.timedOut(err); e != err {
			return nil, false, e
		}
		return nil, false, describeDialError(err)
	}
	if lastResort, err = at.ready(actx, a, conn, setup, o); err != nil {
		return nil, false, err
	}
	return conn, lastResort, nil
}

// adoptable returns the probes' idle session of the attempt's host when the attempt may
// take it (probeSet.adopt): only a walk's plain attempt on a host the pool moves to (not
// the pool's own host, attemptKeep, whose closed handshakes are judged by what the host
// answers meanwhile; not the check of a host whose session ended, o.limit, which asks
// whether the host takes a new session; not a replica session, attemptNoRole), and only
// while nothing says the host is in trouble (its probes pass, its attempts do not fail).
func (at *attempter) adoptable(a *attempted, o attemptOpts) driver.Conn {
	if o.limit > 0 || o.has(attemptKeep) || o.has(attemptNoRole) {
		return nil
	}
	v := a.hs.health()
	if v.down || v.probeFailing || v.failing || v.retryAt > a.start.UnixNano() {
		return nil
	}
	conn, mark := at.c.mon.probes.adopt(a.h, a.start.Add(-at.cfg.watchEvery()))
	if conn != nil {
		a.hs.adopted.Store(true)
		a.mark = mark
	}
	return conn
}

// peek reads host h's state on the probes' idle session, when they keep one, records it
// (noteState: a role that now qualifies is news for the walks that pause, passNews) and
// gives the session back; it reports whether the host qualifies now. With no idle probe
// session it reads nothing and reports false: a peek never opens a session. Unlike an
// adoption it takes a session however long it sat idle: a read that fails only closes
// it, as a dead idle probe session, without a verdict on the host (the probes give one).
// The read waits as long as a probe of the host would (its probe wait, rto.go).
func (at *attempter) peek(ctx context.Context, h int) bool {
	hs := at.c.topo().host(h)
	if hs == nil {
		return false
	}
	conn, mark := at.c.mon.probes.adopt(h, time.Time{})
	if conn == nil {
		return false
	}
	_, wait := at.cfg.probeTimeouts(&hs.mon)
	rctx, cancel := withBudget(ctx, wait)
	defer cancel()
	st, err := ReadState(rctx, conn, kindOf(at.cfg.Cluster))
	if err != nil {
		_ = conn.Close()
		return false
	}
	ok := at.c.rec.noteState(h, st)
	at.c.mon.probes.giveBack(h, conn, mark, at.env.Clock.Now())
	return ok
}

// readyAdopted is ready for a session the probes kept: one whose state the attempt does
// not read is pinged first, so that a session that died while it sat idle is never
// handed to the pool as new.
func (at *attempter) readyAdopted(actx context.Context, a *attempted, conn driver.Conn, setup SetupFunc, o attemptOpts) (lastResort bool, err error) {
	if p, ok := conn.(driver.Pinger); ok && !at.readsState(o) {
		if err = p.Ping(actx); err != nil {
			_ = conn.Close()
			return false, dialect.NotBadConn(a.timedOut(err), "ping of the probes' idle session failed")
		}
	}
	return at.ready(actx, a, conn, setup, o)
}

// ready checks the state of conn, a new session of the attempt a, when the attempt
// needs it (checkState), and sets it up; it closes conn when either fails. timedOut
// words an error as the bound's when actx ended first.
func (at *attempter) ready(actx context.Context, a *attempted, conn driver.Conn, setup SetupFunc, o attemptOpts) (lastResort bool, err error) {
	if lastResort, err = at.checkState(actx, a.h, conn, o); err != nil {
		var re *RoleError
		if a.adopted && errors.As(err, &re) {
			at.c.mon.probes.giveBack(a.h, conn, a.mark, at.env.Clock.Now())
		} else {
			_ = conn.Close()
		}
		return false, a.timedOut(err)
	}
	if setup != nil {
		if err = setup(actx, conn, a.h); err != nil {
			_ = conn.Close()
			return false, dialect.NotBadConn(a.timedOut(err), "session set-up failed")
		}
	}
	return lastResort, nil
}

// attempted is the attempt done records: on hs, host h, begun at start; with
// keep, a closed handshake is not recorded (attemptKeep).
type attempted struct {
	h        int
	hs       *hostState
	start    time.Time
	keep     bool
	adopted  bool              // the session is the probes' (session): no connect time to note
	mark     *atomic.Bool      // an adopted session's probe mark (probeSet.adopt), for giveBack
	timedOut func(error) error // words an error as the attempt's bound's
}

// done records the outcome err of attempt a in the host's health (its backoff,
// typical connect time, readiness and connections out), and returns err, a refusal as
// its *NotReadyError. With a.keep, a closed handshake is not recorded: the caller
// decides (attempter.patient).
func (at *attempter) done(ctx context.Context, a attempted, err error) error {
	h, hs, start, keep := a.h, a.hs, a.start, a.keep
	var re *RoleError
	var nr *NotReadyError
	if err != nil && !errors.As(err, &nr) {
		if nr = Refusal(err); nr != nil {
			// Refused at connect (offline_mode's 3032), or while the state was read.
			at.c.NoteRefusal(h, nr)
			err = nr
		}
	}
	switch {
	case err == nil:
		if !a.adopted {
			hs.noteConnectTime(at.env.Clock.Now().Sub(start))
		}
		hs.refs.Add(1) // until Release
		at.c.rec.attemptSucceeded(hs)
		if !at.c.rec.needsState(at.c.topo()) {
			at.c.rec.setReady(h, nil) // a refusal's verdict ends with a session that works
		}
	case errors.As(err, &re), nr != nil, dialect.Full(err):
		// The host answers; the walk skips it for its role or its readiness, or it is full.
		at.c.rec.attemptSucceeded(hs)
	case keep && closedHandshake(err):
		// One session's failure, maybe: attempter.patient tries again and decides.
	case !Ended(ctx):
		at.c.rec.attemptFailed(hs, err)
	}
	return err
}

// checkState reads the state of conn's server, a new session to host h, when the attempt
// needs it (see needsState; a replica session, attemptNoRole, only for the
// readiness of a Galera or Group Replication cluster), and records it (noteState). It
// fails the attempt with the *NotReadyError of a server that is not ready, a *RoleError
// when o checks the role and it does not qualify, or the read's own error; with
// prefer-standby and attemptLastResort a non-standby is kept aside (lastResort) instead.
func (at *attempter) checkState(ctx context.Context, h int, conn driver.Conn, o attemptOpts) (lastResort bool, err error) {
	if !at.readsState(o) {
		return false, nil
	}
	role, lastResortOK := !o.has(attemptNoRole) && at.c.Target() != attrs.Any, o.has(attemptLastResort)
	st, err := ReadState(ctx, conn, kindOf(at.cfg.Cluster))
	if err != nil {
		if Refusal(err) != nil {
			return false, err // attemptDone records it
		}
		return false, dialect.NotBadConn(err, "role check failed")
	}
	at.c.rec.noteState(h, st)
	switch {
	case st.NotReady != nil:
		return false, st.NotReady
	case !role, Accepts(at.c.Target(), st.Role):
		return false, nil
	case lastResortOK && at.c.Target() == attrs.PreferStandby:
		return true, nil
	}
	return false, &RoleError{Role: st.Role, Wanted: at.c.Target()}
}

// readsState reports whether an attempt as o says reads the new session's state
// (checkState): to check its role, or the readiness of a Galera or Group Replication
// server.
func (at *attempter) readsState(o attemptOpts) bool {
	checkRole := !o.has(attemptNoRole)
	if checkRole && at.c.Target() != attrs.Any {
		return true
	}
	if checkRole {
		return at.c.rec.needsState(at.c.topo())
	}
	return at.c.Kind().readinessKind()
}

// readinessKind reports whether the cluster type has a readiness to read beyond a
// working session: Galera and Group Replication.
func (k Kind) readinessKind() bool {
	return k == KindGalera || k == KindGroup
}

// describeDialError says what a connection-phase failure means. go-sql-driver reports a
// server that accepts TCP and then closes before or during the handshake (a stopped server
// behind a proxy, max_connections, a crash) as mysql.ErrInvalidConn or driver.ErrBadConn,
// the same words as a connection lost mid-query; an operator reading the all-hosts-down
// error needs to know it happened at connect.
func describeDialError(err error) error {
	const what = "connection closed by the server during the handshake"
	var hc *HandshakeClosedError
	if errors.As(err, &hc) {
		// The connector's tracker saw the server close the socket: the type says it.
		return &HandshakeClosedError{Err: dialect.NotBadConn(hc.Err, "")}
	}
	if errors.Is(err, driver.ErrBadConn) {
		return dialect.NotBadConn(err, what)
	}
	if errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return err
}
