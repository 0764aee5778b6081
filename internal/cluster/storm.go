package cluster

// A new session whose handshake the server closed. An overloaded listener (a deploy or
// an autoscaling step opening every pool at once) closes or resets some handshakes
// while its other sessions answer; one closed handshake is evidence about that session,
// not about the host, as a 1040 is (verdict.go). So a connection that must not leave its
// host (attempter.patient) tries the handshake again on the same host, a few times with
// growing, jittered pauses (which also spread the storm), and the host is blamed (its
// backoff, the walk to the next host) only when it gave no sign of life meanwhile: no
// other session of the connector opened or read from it, no probe passed. Once
// something else blames the host (another attempt failed, a failover reported it, the
// probes fail it), its closed handshakes are the host's again: no more tries, so that a
// dead server behind a proxy (which accepts, then closes) costs what it did. A refused
// dial, a dial that times out and a handshake that times out (a frozen host greets no
// one) are the host's, as before. The attempt is reported once (EventConnect), with
// its outcome; Stats counts the handshakes tried again and the sessions that failed so.

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// HandshakeClosedError is a new session's failure after its TCP connection was
// established: the server, or a proxy in front of it, closed or reset the connection
// (an EOF, ECONNRESET or EPIPE on the socket) before the session was set up. The
// connector's dialer returns it when its socket tracker saw the close; a timeout or a
// refused dial is never one. It unwraps to the driver's error.
type HandshakeClosedError struct {
	// Err is the driver's error (go-sql-driver's driver.ErrBadConn or
	// mysql.ErrInvalidConn; never driver.ErrBadConn once the engine returns it).
	Err error
}

// Error says the server closed the handshake, and the driver's error.
func (e *HandshakeClosedError) Error() string {
	return "connection closed by the server during the handshake: " + e.Err.Error()
}

// Unwrap returns the driver's error.
func (e *HandshakeClosedError) Unwrap() error { return e.Err }

// SessionClosedError is the error of a new session whose handshakes the pool's host
// closed (each a *HandshakeClosedError, errors.As finds the last) while the host
// answered other sessions of the connector or its probes: the session failed, the host
// did not, and the pool stays on it, as for a full host (1040). Nothing was sent: it
// never matches driver.ErrBadConn.
type SessionClosedError struct {
	// Host is the host's address (host:port).
	Host string
	// Attempts counts the handshakes tried (count).
	Attempts int
	// Waited is the time from the first attempt to the last.
	Waited time.Duration
	// Err is the last attempt's error.
	Err error
}

// Error names the host, the attempts and the last error.
func (e *SessionClosedError) Error() string {
	return fmt.Sprintf("mysqlfailover: host %s closed this new session's handshake (%d attempts over %v) while it answered other sessions; the pool stays on it: %v",
		e.Host, e.Attempts, e.Waited.Round(time.Millisecond), e.Err)
}

// Unwrap returns the last attempt's error.
func (e *SessionClosedError) Unwrap() error { return e.Err }

// closedHandshake reports whether err, from a connection attempt, is a handshake the
// server closed after the TCP connection was established (not a timeout of the
// attempt's bound).
func closedHandshake(err error) bool {
	var hc *HandshakeClosedError
	var to *HostTimeoutError
	return errors.As(err, &hc) && !errors.As(err, &to)
}

// sessionClosed reports whether err is a *SessionClosedError.
func sessionClosed(err error) bool {
	var sc *SessionClosedError
	return errors.As(err, &sc)
}

// hostStays reports whether err is how attempter.patient gives up on a new session while
// its host is up: the host is full (*fullError), or it closed this session's handshakes
// while it answered others (*SessionClosedError). The pool stays on the host.
func hostStays(err error) bool {
	var full *fullError
	return errors.As(err, &full) || sessionClosed(err)
}

// life is a count that moves whenever host hs shows a sign of life: an attempt of the
// connector succeeds or is answered (full, refused, of another role), a probe passes
// (both clear its backoff), or, with the connector's socket tracker (Env.Answers), a
// session of the connector reads from it.
func (at *attempter) life(hs *hostState) uint64 {
	n := hs.answers.Load()
	if at.env.Answers != nil {
		n += at.env.Answers(hs.addr)
	}
	return n
}

// handshakePause is the jittered pause before the next handshake after the n-th closed
// one (n from 1): DefaultHandshakePause doubling, at most DefaultHandshakePauseMax,
// drawn from its upper half.
func handshakePause(n int) time.Duration {
	p := DefaultHandshakePause
	for i := 1; i < n && p < DefaultHandshakePauseMax; i++ {
		p *= 2
	}
	p = min(p, DefaultHandshakePauseMax)
	return p/2 + rand.N(p/2+1)
}

// blamed reports whether something other than a closed handshake says host hs is down
// now: an attempt failed (another session's, a failover's report), or the probes
// declared it down or see it failing.
func (at *attempter) blamed(hs *hostState) bool {
	v := hs.health()
	return v.failing || v.probeFailing || v.skipped(at.env.Clock.Now().UnixNano())
}

// handshakeTries is where a patient attempt stands when a handshake was closed (see
// closedAgain).
type handshakeTries struct {
	hs    *hostState    // the host
	n     int           // the closed handshakes so far, this one included (from 1)
	start time.Time     // when the patient attempt began
	total time.Duration // what it may take in all
	life0 uint64        // the host's life count at start
}

// closedAgain decides on a closed handshake, the t.n-th of a patient attempt on host
// t.hs that began at t.start when the host's life count was t.life0. It returns retry
// true, after the pause, while another try is due within t.total and nothing blames the
// host (blamed). Otherwise it reports the attempt (EventConnect) and returns the error
// it ends with: a *SessionClosedError when the host showed a sign of life meanwhile and
// nothing blames it (the host is left as it is); else err, the host put into backoff as
// for any failed attempt (unless ctx ended).
func (at *attempter) closedAgain(ctx context.Context, t handshakeTries, err error) (retry bool, out error) {
	hs, n, start, total := t.hs, t.n, t.start, t.total
	waited := at.env.Clock.Now().Sub(start)
	pause := handshakePause(n)
	blamed := at.blamed(hs)
	if !Ended(ctx) && !blamed && n < DefaultHandshakeTries && waited+pause <= total {
		at.handshakeRetries.Add(1)
		serr := at.env.Clock.Sleep(ctx, pause)
		if serr == nil {
			return true, nil
		}
		err = serr
	}
	switch {
	case Ended(ctx):
	case !blamed && at.life(hs) != t.life0:
		err = &SessionClosedError{Host: hs.addr, Attempts: n, Waited: waited, Err: err}
		at.sessionsClosed.Add(1)
	default:
		at.c.rec.attemptFailed(hs, err) // no sign of life, or blamed: the host's failure
	}
	at.c.emit(failover.Event{Kind: failover.EventConnect, Host: hs.addr, Err: err})
	return false, err
}
