package cluster

// The verdict on a session that failed, and the full host. A communication error proves
// only that one session died. A KILL, a packet over max_allowed_packet,
// net_write_timeout, or a query that outlived readTimeout end one session on a healthy
// host; moving the whole pool to a read-only secondary for it makes every writer fail
// with 1290 until the fall-back. So before a session's failure blames its host, Recover
// asks for a verdict: what the driver already knows (probe state, a failed attempt a
// moment ago, the server's own words), and otherwise one bounded attempt to open a new
// session on the same host. A host that answers full (1040, 1203) is up: the
// connections that must stay on it wait for it (attempter.patient).

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// check is one same-host check after a session on the host ended, which the
// connections whose sessions there end at the same moment wait for instead of each
// making their own.
type check struct {
	done    chan struct{}
	alive   bool // the host answered
	decided bool // false: the leader's caller ended first, decide again
	waiters int  // connections waiting for it (under the host's mu)
}

// Recover handles a communication error (cause) on an established session to host: it
// decides whether the host is down or only this session ended, and returns a new physical
// connection (set up by setup) and its host.
//
// The host is taken for down, and the pool moves as with Failover, when the pool has
// already left it, it was found demoted (cause is a *RoleError) or not ready (a
// *NotReadyError: the server refused the statement, see NoteRefusal), probes declared it down or saw its last probe fail, a connection
// attempt to it failed a moment ago (it is in backoff), or the server said it is shutting
// down (1053, 1080). Otherwise one attempt opens a new session on the same host; the
// connections whose sessions on the host end meanwhile wait for it. When the server
// itself ended the session (1927 KILL, 4031 inactivity, 1153 packet too large, 1159/1161
// net timeouts...), the attempt gets the usual bounds; otherwise (a bare EOF, a reset, a
// read timeout) also at most max(DefaultMinCheck, DefaultCheckFactor x the host's usual
// connect time), so that a frozen host is left quickly.
//
// When the host answers, the returned host equals host, the pool stays, and an
// EventSessionEnded reports it; a host that answers full (1040, 1203) is waited for (see
// Connect), and a host that answers with another refusal (access denied) returns it, the
// pool staying. A host that answers with the wrong role for targetSessionAttrs is left.
// It never returns an error that matches driver.ErrBadConn.
func (c *Cluster) Recover(ctx context.Context, host int, cause error, setup SetupFunc) (driver.Conn, int, error) {
	if c.closed.Load() {
		return nil, -1, failover.ErrClosed
	}
	c.inUse.RLock()
	defer c.inUse.RUnlock()
	t := c.topo()
	hs := t.host(host)
	var re *RoleError
	var nr *NotReadyError
	if hs == nil || !t.member[host] || host != c.Active() || errors.As(cause, &re) || errors.As(cause, &nr) || c.att.knownDown(hs, cause) {
		return c.Failover(ctx, host, cause, setup)
	}
	var limit time.Duration
	if !serverEndedSession(cause) {
		limit = max(DefaultMinCheck, DefaultCheckFactor*hs.health().typical)
	}
	for {
		hs.mu.Lock()
		k := hs.check
		if k == nil && (hs.retryAt > c.env.Clock.Now().UnixNano() || hs.mon.failing() || host != c.Active()) {
			// A check ended, or a walk moved the pool, between knownDown and here (a
			// busy machine widens the gap): its verdict stands, no second attempt.
			hs.mu.Unlock()
			return c.Failover(ctx, host, cause, setup)
		}
		if k == nil {
			k = &check{done: make(chan struct{})}
			hs.check = k
			hs.mu.Unlock()
			conn, _, err := c.att.patient(ctx, host, setup, false, limit)
			k.alive = err == nil || answered(err)
			k.decided = err == nil || !Ended(ctx)
			hs.mu.Lock()
			hs.check = nil
			hs.mu.Unlock()
			close(k.done)
			return c.walks.checked(ctx, host, cause, setup, checkResult{conn, err})
		}
		k.waiters++
		hs.mu.Unlock()
		select {
		case <-k.done:
		case <-ctx.Done():
			return nil, -1, ctx.Err()
		}
		if !k.decided {
			continue // the leader's caller gave up: check again
		}
		if !k.alive {
			return c.Failover(ctx, host, cause, setup)
		}
		// The host answers: a session of this connection's own, with the usual bounds.
		conn, _, err := c.att.patient(ctx, host, setup, false, 0)
		return c.walks.checked(ctx, host, cause, setup, checkResult{conn, err})
	}
}

// checkResult is the outcome of a same-host attempt of Recover: its session, or err.
type checkResult struct {
	conn driver.Conn
	err  error
}

// checked acts on the outcome r of a same-host attempt of Recover.
func (wk *walker) checked(ctx context.Context, host int, cause error, setup SetupFunc, r checkResult) (driver.Conn, int, error) {
	conn, err := r.conn, r.err
	var re *RoleError
	switch {
	case err == nil:
		wk.c.emit(failover.Event{Kind: failover.EventSessionEnded, Host: wk.c.Host(host), Err: dialect.NotBadConn(cause, "")})
		return conn, host, nil
	case Ended(ctx):
		return nil, -1, err // the caller's context ended: no verdict on the host
	case errors.As(err, &re), Classify(ctx, err) == NotReady, Classify(ctx, err) == NotReadyMidway:
		return wk.c.Failover(ctx, host, cause, setup) // up, but no longer of the wanted role, or not ready
	case answered(err):
		return nil, -1, err // up but refusing (full for longer than we wait, access denied)
	}
	return wk.c.Failover(ctx, host, cause, setup)
}

// knownDown reports whether what the Cluster already knows says host hs is down after
// one of its sessions failed with cause, so that no check is worth making.
func (at *attempter) knownDown(hs *hostState, cause error) bool {
	if v := hs.health(); v.skipped(at.env.Clock.Now().UnixNano()) || v.probeFailing {
		return true // declared down by probes or failing them, or an attempt failed a moment ago
	}
	return dialect.ShuttingDown(cause)
}

// serverEndedSession reports whether cause is the server's own word that it ended this
// session (dialect.EndsSession, other than a shutdown): the server was up when it said
// so. A connection found closed before anything was sent (driver.ErrBadConn) is not
// such proof.
func serverEndedSession(cause error) bool {
	return !dialect.ShuttingDown(cause) && dialect.EndsSession(cause)
}

// answered reports whether err, from a connection attempt, came from a server that is
// up: it answered full, not ready, or refused with a data error (access denied, unknown
// database), or it closed the handshakes of this session while it answered others
// (*SessionClosedError).
func answered(err error) bool {
	if dialect.Full(err) || notReady(err) || sessionClosed(err) {
		return true
	}
	var me *mysql.MySQLError
	return errors.As(err, &me) && !communication(err)
}

// fullError is the error of a connection that gave up on a full host.
type fullError struct {
	host     string
	err      error // the server's answer (a *mysql.MySQLError)
	attempts int
	waited   time.Duration
}

func (e *fullError) Error() string {
	if e.attempts <= 1 {
		return fmt.Sprintf("mysqlfailover: host %s is full: %v", e.host, e.err)
	}
	return fmt.Sprintf("mysqlfailover: host %s is full: %v (%d attempts over %v)", e.host, e.err, e.attempts, e.waited.Round(time.Millisecond))
}

func (e *fullError) Unwrap() error { return e.err }

// patient is attempt for a host the connection must not leave: the pool's own
// host for a connection that joins it, or a host whose session ended. A host that
// answers full (1040, 1203) is tried again after DefaultFullWaitBase, doubling up to
// DefaultFullWaitMax, for at most hostTimeout (DefaultFullWait when 0) and within ctx;
// then, or at once for 1226 and 1129, the caller gets an error naming the host and
// wrapping the server's answer. The host's state is never touched by it: a full host is
// up. limit as attemptOpts'.
//
// Without limit (not the quick check of a host whose session ended), a handshake the
// server closed (a *HandshakeClosedError) is tried again on the same host after
// handshakePause, DefaultHandshakeTries tries in all within the same total, while
// nothing else blames the host; when every try was closed, the caller gets a
// *SessionClosedError and the host is left as it is if the host showed a sign of life
// meanwhile (life: another session of the connector opened or read, a probe passed) and
// nothing blames it, else the last error with the host in backoff, as before (see
// storm.go, closedAgain).
func (at *attempter) patient(ctx context.Context, h int, setup SetupFunc, lastResortOK bool, limit time.Duration) (driver.Conn, bool, error) {
	total := at.cfg.HostTimeout
	if total <= 0 {
		total = DefaultFullWait
	}
	start := at.env.Clock.Now()
	wait := DefaultFullWaitBase
	hs := at.c.topo().host(h)
	keep := limit == 0 && hs != nil
	var life0 uint64
	if keep {
		life0 = at.life(hs)
	}
	o := attemptOpts{limit: limit}
	if lastResortOK {
		o.flags |= attemptLastResort
	}
	if keep {
		o.flags |= attemptKeep
	}
	closed := 0
	for n := 1; ; n++ {
		conn, lastResort, err := at.run(ctx, h, setup, o)
		if keep && closedHandshake(err) {
			closed++
			retry, out := at.closedAgain(ctx, handshakeTries{hs: hs, n: closed, start: start, total: total, life0: life0}, err)
			if retry {
				continue
			}
			return nil, false, out
		}
		if err == nil || !dialect.Full(err) { // a full host is not a down host
			return conn, lastResort, err
		}
		waited := at.env.Clock.Now().Sub(start)
		if !dialect.TooManySessions(err) || waited+wait > total { // 1226 and 1129 free no slot soon
			return nil, false, &fullError{host: at.c.Host(h), err: err, attempts: n, waited: waited}
		}
		if serr := at.env.Clock.Sleep(ctx, wait); serr != nil {
			return nil, false, serr
		}
		wait = min(2*wait, DefaultFullWaitMax)
	}
}

// stopsWalk reports whether err, from a connection attempt, is one that every host
// would repeat, so that walking on would only hide it behind retries (pgx stops its walk
// on these too): a server's refusal (access denied 1045, unknown database 1049, a bad
// system variable from the DSN...) and go-sql-driver's account-configuration errors
// (an authentication plugin it cannot or may not use). Every other failure belongs to
// the host that gave it, and the walk goes on: a host that is full, of the wrong role,
// unreachable or too slow; a TLS handshake that fails (a certificate that is expired,
// for another name or from an unknown authority; a server without TLS,
// mysql.ErrNoTLS); a malformed or out-of-sync greeting (mysql.ErrMalformPkt,
// ErrOldProtocol, ErrPktSync). ctx is the caller's context; its end is handled by the
// walk.
func stopsWalk(ctx context.Context, err error) bool {
	if dialect.Full(err) || Classify(ctx, err) != Data {
		return false
	}
	var re *RoleError
	if errors.As(err, &re) {
		return false
	}
	var me *mysql.MySQLError
	return errors.As(err, &me) || errors.Is(err, mysql.ErrCleartextPassword) ||
		errors.Is(err, mysql.ErrNativePassword) || errors.Is(err, mysql.ErrOldPassword) ||
		errors.Is(err, mysql.ErrUnknownPlugin)
}
