package cluster

// One walk per pool after a failure: Failover reports the failure and puts the host into
// backoff; the first connection to fail leads the walk (a flight), and the connections
// that fail meanwhile wait for it and then follow it to the host it found, spread over a
// short jitter, so that a dead host gets one attempt per pass, not one per connection.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// flight is one walk that moves the pool after a failure, which the connections that
// fail at the same time wait for instead of walking themselves.
type flight struct {
	failed  int
	done    chan struct{}
	host    int   // where the walk landed (valid when err is nil)
	err     error // the walk's error
	ctxEnd  bool  // the walk ended because its leader's context ended
	waiters int   // connections that wait for it (under Cluster.mu)
}

// Failover handles a communication error (cause) on a connection to host failed: it
// reports the failure, puts the host into backoff and opens a physical connection to the
// next host, as Connector/J FailoverConnectionProxy.failOver: if another connection
// already moved the pool, to the pool's host; else if fall-back is due, to the primary
// first; else round-robin from the host after failed, skipping the primary in the first
// pass while fall-back is enabled, for up to RetriesAllDown passes with
// DefaultPassPause between them, all within ctx. The policy (localDC, targetSessionAttrs, user layers)
// orders and filters each pass.
//
// One walk at a time runs for the whole pool: connections whose host fails while
// another connection is walking wait for that walk (each within its own ctx) and then
// connect to the host it found, spread over a short jitter (DefaultFollowerJitter); when
// it found none they get its error. So a dead host gets one attempt per pass from the
// connector, not one per pooled connection.
func (c *Cluster) Failover(ctx context.Context, failed int, cause error, setup SetupFunc) (driver.Conn, int, error) {
	c.inUse.RLock()
	defer c.inUse.RUnlock()
	c.emit(failover.Event{Kind: failover.EventHostFailed, Host: c.Host(failed), Err: dialect.NotBadConn(cause, "")})
	var re *RoleError
	if h := c.topo().host(failed); h != nil && !errors.As(cause, &re) && communication(cause) {
		// Into backoff, unless already there (a failed Reconnect just put it there, or
		// another connection reported the same failure a moment ago): one failure, one
		// step of backoff, however many connections saw it.
		c.rec.backOff(h, dialect.NotBadConn(cause, ""), true)
	}
	for {
		c.mu.Lock()
		f := c.flight
		if f == nil && c.pos.Load().active != failed {
			// Another connection already moved the pool: follow it.
			c.mu.Unlock()
			p := c.walks.joinPlan()
			p.failed = failed
			defer c.probeOnce(&p)()
			return c.walks.walk(ctx, p, cause, setup)
		}
		if f == nil {
			f = &flight{failed: failed, done: make(chan struct{})}
			c.flight = f
			c.mu.Unlock()
			return c.walks.lead(ctx, f, cause, setup)
		}
		f.waiters++
		n := f.waiters
		c.mu.Unlock()
		select {
		case <-f.done:
		case <-ctx.Done():
			return nil, -1, ctx.Err()
		}
		if f.ctxEnd {
			continue // the leader gave up for its own reasons: walk again
		}
		if f.err != nil {
			return nil, -1, f.err
		}
		if err := c.env.Clock.Sleep(ctx, jitter(n)); err != nil {
			return nil, -1, err
		}
		conn, _, err := c.att.patient(ctx, f.host, setup, false, 0)
		if err == nil {
			return conn, f.host, nil
		}
		if hostStays(err) {
			return nil, -1, err // the pool's new host is up but full, or closed this session: it stays there
		}
		if cl := Classify(ctx, err); cl != Communication && cl != NotReady && cl != NotReadyMidway {
			var re *RoleError
			if !errors.As(err, &re) {
				return nil, -1, fmt.Errorf("mysqlfailover: host %s: %w", c.Host(f.host), err)
			}
		}
		failed, cause = f.host, err // the new host failed too: walk from there
	}
}

// lead runs the walk of flight f and publishes its result.
func (wk *walker) lead(ctx context.Context, f *flight, cause error, setup SetupFunc) (driver.Conn, int, error) {
	defer func() {
		wk.c.mu.Lock()
		wk.c.flight = nil
		wk.c.mu.Unlock()
		close(f.done)
	}()
	t := wk.c.topo()
	p := plan{start: t.next(f.failed), failed: f.failed}
	if f.failed != t.primary {
		due := wk.c.FallBackDue()
		p.primaryFirst = due && !wk.cfg.standbyIntent()
		p.skipPrimary = wk.skipPrimaryNow(due)
	}
	defer wk.c.probeOnce(&p)()
	conn, h, err := wk.walk(ctx, p, cause, setup)
	f.host, f.err = h, err
	var nh *failover.NoHostAvailableError
	f.ctxEnd = err != nil && (Ended(ctx) || errors.As(err, &nh) && nh.Err != nil)
	return conn, h, err
}

// jitter is the random wait of the connection that was the n-th to wait for another's
// walk (see DefaultFollowerJitter).
func jitter(n int) time.Duration {
	w := min(time.Duration(n)*DefaultFollowerJitter, DefaultMaxJitter)
	if w <= 0 {
		return 0
	}
	return rand.N(w)
}
