package cluster

// Fall-back without probes: the clock and counter of secondsBeforeRetryMaster and
// queriesBeforeRetryMaster (FallBackDue, NoteStatement, ForgetStatement, restartClocks),
// the claim that lets one attempt to return home run at a time, and the attempt itself
// (TryFallBack, findHome). With probes (checkInterval > 0) the monitor returns the pool
// instead (decide.go).

import (
	"context"
	"database/sql/driver"
	"errors"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// fallBackEnabled: both 0 disables fall-back (Connector/J enableFallBackToPrimaryHost);
// with probing on, the monitor decides instead (SwitchBackDelay).
func (cfg settings) fallBackEnabled() bool {
	return cfg.CheckInterval == 0 && (cfg.SecondsBeforeRetryMaster > 0 || cfg.QueriesBeforeRetryMaster > 0)
}

// NoteStatement counts one statement run while the pool is away from home, for
// QueriesBeforeRetryMaster. Call it after FallBackDue, once per statement. It reports
// whether the statement was counted (for ForgetStatement).
func (c *Cluster) NoteStatement() (counted bool) {
	if c.cfg.QueriesBeforeRetryMaster > 0 && !c.pos.Load().home {
		c.ran.Add(1)
		return true
	}
	return false
}

// ForgetStatement takes back one NoteStatement that counted, for a statement that was
// handed back without running (driver.ErrSkip: database/sql runs it as a prepared
// statement, which counts itself).
func (c *Cluster) ForgetStatement() {
	if c.cfg.QueriesBeforeRetryMaster > 0 {
		c.ran.Add(-1)
	}
}

// FallBackDue reports whether the pool is away from home and SecondsBeforeRetryMaster
// have passed or QueriesBeforeRetryMaster statements ran since it left (or since the
// last failed attempt to return). As Connector/J readyToFallBackToPrimaryHost, with one
// difference: after a failed attempt the statement count triggers the next one no sooner
// than DefaultFallBackPause later. A busy pool runs 50 statements in milliseconds, and
// without the pause a dead primary would get a connection attempt every few milliseconds
// for as long as it stays down. Always false while probing is on: the monitor returns
// the pool then. It is on the path of every statement away from home (TryFallBack asks
// it first): one load of the position, then the counter and a clock reading.
func (c *Cluster) FallBackDue() bool {
	p := c.pos.Load()
	if p.home || !c.cfg.fallBackEnabled() {
		return false
	}
	var now int64
	if q := int64(c.cfg.QueriesBeforeRetryMaster); q > 0 && c.ran.Load() >= q {
		now = c.env.Clock.Now().UnixNano()
		if now-p.failedAt >= int64(DefaultFallBackPause) {
			return true
		}
	}
	secs := time.Duration(c.cfg.SecondsBeforeRetryMaster) * time.Second
	if secs == 0 {
		return false
	}
	if now == 0 {
		now = c.env.Clock.Now().UnixNano()
	}
	return now-p.since >= int64(secs)
}

// restartClocks starts the fall-back timer and counter of p again, now (Connector/J
// resetAutoFallBackCounters); failed says the way home was just tried in vain. It is
// called with c.mu held, on the position about to be published.
func (c *Cluster) restartClocks(p *position, failed bool) {
	now := c.env.Clock.Now().UnixNano()
	p.since = now
	if failed {
		p.failedAt = now
	}
	c.ran.Store(0)
}

// claimFallBack claims the one attempt to return home that the pool makes at a time
// (TryFallBack, or a walk that tries the primary first), and reports whether it got it.
// releaseFallBack gives it back.
func (c *Cluster) claimFallBack() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.fallingBack {
		return false
	}
	c.fallingBack = true
	return true
}

// releaseFallBack gives back the claim of claimFallBack.
func (c *Cluster) releaseFallBack() {
	c.mu.Lock()
	c.fallingBack = false
	c.mu.Unlock()
}

// probeOnce lets one walk at a time try the primary first when fall-back is due: the
// others skip it in their first pass, so a burst of new connections (database/sql growing
// the pool) does not pay a dead or hung primary's timeout once each. It returns the
// release function.
func (c *Cluster) probeOnce(p *plan) func() {
	if !p.primaryFirst {
		return func() {}
	}
	if !c.claimFallBack() {
		p.primaryFirst, p.skipPrimary = false, true
		return func() {}
	}
	return c.releaseFallBack
}

// TryFallBack is called by a connection away from home (see Home) at a safe point
// (outside a transaction, before a statement). If fall-back is due and no other
// connection is already trying, it makes one attempt on the primary (with the role check
// of targetSessionAttrs), or with a standby target one strict pass over the other local
// hosts: on success the pool's active host becomes that host and the new physical
// connection and its host are returned; on failure the pool stays, the clocks restart,
// and (nil, -1, err) is returned for the record: the caller's statement goes on where it
// was, silently. (nil, -1, nil) means nothing was attempted. As Connector/J
// fallBackToPrimaryIfAvailable, with one rule more: a fall-back never moves the pool from
// one writable host to another (see fallBackGate). When the primary and the pool's host
// are both writable, the pool returns only if the cluster follows the primary (its
// replicas); otherwise it stays, and err is a *WritersError naming both.
func (c *Cluster) TryFallBack(ctx context.Context, setup SetupFunc) (driver.Conn, int, error) {
	c.inUse.RLock()
	defer c.inUse.RUnlock()
	if !c.FallBackDue() || !c.claimFallBack() {
		return nil, -1, nil
	}
	defer c.releaseFallBack()
	from := c.Active()
	if c.Home(from) {
		return nil, -1, nil
	}
	var conn driver.Conn
	var err error
	began := c.env.Clock.Now() // Event.Duration of the fall-back
	h := c.Primary()
	if c.cfg.standbyIntent() {
		conn, h, err = c.walks.findHome(ctx, from, setup)
	} else {
		conn, _, err = c.att.attempt(ctx, h, setup, false)
		if err == nil {
			// One writer: never from one writable host to another, unless the cluster
			// follows home.
			if err = c.walks.fallBackGate(ctx, conn, h, from); err != nil {
				_ = conn.Close()
				c.Release(h)
				conn = nil
			}
		}
	}
	if err != nil {
		if !Ended(ctx) { // the hosts failed, not the caller
			c.update(func(p *position) { c.restartClocks(p, true) })
			c.emit(failover.Event{Kind: failover.EventFallBackFailed, Host: c.Host(h), From: c.Host(from), Err: err})
		}
		return nil, -1, err
	}
	c.update(func(p *position) {
		p.active, p.lastResort = h, false
		p.fallBacks++
	})
	c.emit(failover.Event{Kind: failover.EventFallBack, Host: c.Host(h), From: c.Host(from), Duration: c.env.Clock.Now().Sub(began)})
	return conn, h, nil
}

// findHome is TryFallBack's search with a standby target: one pass, in plan order, over
// the home hosts other than from, each attempt strict (no last resort). It returns the
// first that qualifies, or the last error (h is then the last host tried, or -1).
func (wk *walker) findHome(ctx context.Context, from int, setup SetupFunc) (driver.Conn, int, error) {
	err := errors.New("mysqlfailover: no other local host to return to")
	last := -1
	t := wk.c.topo()
	for _, h := range wk.order(t, plan{start: from, failed: -1}, 0, nil, nil) {
		if h == from || !t.isHome(h) {
			continue
		}
		conn, _, aerr := wk.c.att.attempt(ctx, h, setup, false)
		if aerr == nil {
			return conn, h, nil
		}
		err, last = aerr, h
		if Ended(ctx) {
			break
		}
	}
	return nil, last, err
}
