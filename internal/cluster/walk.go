package cluster

// The host walk: a plan (where the rotation starts, whether the primary goes first or is
// left out, which host failed) that the policy turns into an order for each pass; the
// walk over it, retriesAllDown passes with DefaultPassPause between them, each host one
// bounded attempt (attempt.go); the error that names every host when none answers; and
// landed, which moves the position where a walk ends. Connect is the walk of a
// connection that joins the pool.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
	"github.com/mysqlfailover/mysqlfailover/policy"
)

// walker is the host walk (walk.go), the lead of the walk in flight after a failure
// (flight.go), the search of home (fallback.go), the writer rules a walk applies
// (writers.go) and the verdict on a same-host check (verdict.go). It owns no state: a
// walk owns its walkRun. It reaches the rest of the Cluster through c.
type walker struct {
	c   *Cluster
	cfg settings // c.cfg
	env *Env     // &c.env
}

// plan is the shape of one walk, which the policy turns into an order per pass (see
// Walk): the rotation starts at start; in the first pass the primary is either tried
// first (fall-back due) or left out (fall-back enabled but not due; Connector/J nextHost
// without vouching); failed (-1 for none) is the host whose failure started the walk.
type plan struct {
	start        int
	failed       int
	primaryFirst bool
	skipPrimary  bool
	join         bool // a connection joining the pool: start, the pool's host, goes first
	onePass      bool // one pass only, whatever retriesAllDown says (ConnectOnePass)
}

// order returns the hosts to try in pass i of p: the policy's plan, without ignored
// hosts, hosts not in the list, out-of-range ids and repeats, and in the first pass with
// the failed host last (it has just failed; it is still tried, as in Connector/J's
// rotation). Hosts declared down by probes, and for joining connections hosts in
// backoff, are left out too, unless that would leave nothing to try: then every planned
// host is tried (all hosts down is when retriesAllDown matters).
func (wk *walker) order(t *topo, p plan, i int, tried []bool, buf []int) []int {
	out := t.planned(p, i, buf)
	if i == 0 && p.join && p.start != t.primary && !wk.c.Unfit(p.start) {
		joinFirst(t, p, out)
	}
	return wk.dropSkipped(t, p, tried, out)
}

// planned is the policy's plan for pass i of p in buf, without ignored hosts, hosts not
// in the list, out-of-range ids and repeats, and in the first pass with the failed host
// last (see order).
func (t *topo) planned(p plan, i int, buf []int) []int {
	infos := t.infos()
	w := policy.Walk{Hosts: infos, List: t.list, Primary: t.primary, Start: p.start, Failed: p.failed, Pass: i}
	if i == 0 {
		w.PrimaryFirst, w.SkipPrimary = p.primaryFirst, p.skipPrimary
	}
	raw := t.policy.Plan(&w, nil)
	seen := make([]bool, len(t.hosts))
	out := buf[:0]
	last := -1
	for _, h := range raw {
		if h < 0 || h >= len(t.hosts) || seen[h] || t.distance(infos[h]) == policy.Ignored {
			continue
		}
		seen[h] = true
		if i == 0 && h == p.failed {
			last = h
			continue
		}
		out = append(out, h)
	}
	if last >= 0 {
		out = append(out, last)
	}
	return out
}

// joinFirst moves p.start, the pool's host, to the front of out, the first pass of a
// joining connection (after the primary when fall-back is due). Once the pool has failed
// over, a connection that joins it goes to the pool's host first, whatever the layers
// prefer: a local host that is down must not cost every new connection an attempt while
// the pool works elsewhere, and the return to the primary follows the fall-back rules,
// not the first new connection.
func joinFirst(t *topo, p plan, out []int) {
	front := 0
	if p.primaryFirst && len(out) > 0 && out[0] == t.primary {
		front = 1
	}
	if k := slices.Index(out, p.start); k > front {
		copy(out[front+1:k+1], out[front:k])
		out[front] = p.start
	}
}

// dropSkipped removes from out the hosts p's walk skips now (those the probes declared
// down; for a joining connection, those in backoff or not ready while a healthy host is
// planned), unless that would leave nothing to try.
func (wk *walker) dropSkipped(t *topo, p plan, tried []bool, out []int) []int {
	now := wk.env.Clock.Now().UnixNano()
	// Backoff is for connections that join the pool (new ones, and followers of a pool
	// that moved): they are many, and must not each pay a dead host's timeout while a
	// healthy host is in the plan (one that answers with a role the target accepts: a
	// standby is no help to a writer). The one walk that moves the pool after a failure
	// keeps Connector/J's order, each host once per pass; so does a walk in which every
	// host has failed lately (all down), and a walk never skips a host it has tried
	// itself in an earlier pass. Hosts the probes declared down are skipped by every
	// walk; the host whose failure started a walk keeps its place (last of the first
	// pass).
	healthy := false
	for _, h := range out {
		v := t.hosts[h].health()
		healthy = healthy || !v.failing && !v.down && !v.unfit
	}
	k := 0
	for _, h := range out {
		v := t.hosts[h].health()
		// A host whose server said it is not ready waits as one in backoff does: the
		// joining connections go where the pool is, and the walk that moves the pool
		// reads it again (attempt) before it could choose it.
		backingOff := p.join && healthy && (v.retryAt > now || v.notReady) && (tried == nil || !tried[h])
		if h == p.failed || !v.down && !backingOff {
			out[k] = h
			k++
		}
	}
	if k > 0 {
		out = out[:k]
	}
	return out
}

// skipPrimaryNow reports whether a walk's first pass leaves the primary out: fall-back is
// enabled and not due, unless the walk looks for a writer (targetSessionAttrs read-write
// or primary), which after a promotion may well be the primary again.
func (wk *walker) skipPrimaryNow(due bool) bool {
	return !due && wk.cfg.fallBackEnabled() && !WriteIntent(wk.c.Target())
}

// joinPlan is the plan for a connection that joins the pool: a new connection, or one
// whose host is no longer the active one.
func (wk *walker) joinPlan() plan {
	pos := wk.c.pos.Load()
	a := pos.active
	if pos.home {
		return plan{start: a, failed: -1, join: true}
	}
	due := wk.c.FallBackDue()
	// With a standby target the way home is TryFallBack's search, not the primary.
	return plan{start: a, failed: -1, join: true, primaryFirst: due && !wk.cfg.standbyIntent(), skipPrimary: wk.skipPrimaryNow(due)}
}

// Connect opens a physical connection for a connection that joins the pool: to the active
// host, or along the walk when it does not answer. When the pool is on a secondary and
// fall-back is due, the primary is tried first. setup runs inside each host attempt.
// It returns the connection and its host id, or a *NoHostAvailableError, or the data
// error (wrapped with the host) that ended the walk. It never returns an error that
// matches driver.ErrBadConn.
func (c *Cluster) Connect(ctx context.Context, setup SetupFunc) (driver.Conn, int, error) {
	c.inUse.RLock()
	defer c.inUse.RUnlock()
	p := c.walks.joinPlan()
	defer c.probeOnce(&p)()
	return c.walks.walk(ctx, p, nil, setup)
}

// ConnectOnePass is Connect with one pass over the host list, whatever retriesAllDown
// says: for a connection that can serve without the pool's host (replica reads while no
// writer answers, conn.Open), so that its first read does not wait for the passes a
// write would.
func (c *Cluster) ConnectOnePass(ctx context.Context, setup SetupFunc) (driver.Conn, int, error) {
	c.inUse.RLock()
	defer c.inUse.RUnlock()
	p := c.walks.joinPlan()
	p.onePass = true
	defer c.probeOnce(&p)()
	return c.walks.walk(ctx, p, nil, setup)
}

// next returns the host after failed in the list (the rotation's start), or the list's
// first host when failed is not in it.
func (t *topo) next(failed int) int {
	if k := slices.Index(t.list, failed); k >= 0 {
		return t.list[(k+1)%len(t.list)]
	}
	return t.list[0]
}

// walk runs plan p. cause describes the failure that started it, for the switch event.
// With prefer-standby, the first host that answers without being a standby is kept
// aside and used when no standby answers in the same pass (libpq's last resort).
func (wk *walker) walk(ctx context.Context, p plan, cause error, setup SetupFunc) (driver.Conn, int, error) {
	if wk.c.closed.Load() {
		return nil, -1, failover.ErrClosed
	}
	t := wk.c.topo()
	n := len(t.hosts)
	w := &walkRun{t: t, p: p, cause: cause, began: wk.env.Clock.Now(), errs: make([]error, n), tried: make([]bool, n), spareHost: -1}
	defer func() {
		if w.spare != nil {
			_ = w.spare.Close()
			wk.c.Release(w.spareHost)
		}
	}()
	var buf [8]int
	order := buf[:0]
	passesAll := wk.cfg.passes()
	if p.onePass {
		passesAll = 1
	}
	var seen uint64 // the news when the last pass began
	for i := 0; i < passesAll; i++ {
		if i > 0 {
			if err := wk.pause(ctx, w, seen); err != nil {
				return nil, -1, wk.noHost(w, EndErr(ctx))
			}
		}
		w.passes++
		seen = wk.c.news.seen()
		order = wk.order(t, p, i, w.tried, order)
		if conn, h, over, err := wk.pass(ctx, w, i, order, setup); over {
			return conn, h, err
		}
	}
	return nil, -1, wk.noHost(w, nil)
}

// pause is the pause before w's next pass: DefaultPassPause, ended early by news
// (passNews). While hosts answered the last pass with a role the target does not want
// (a standby, for read-write), and the monitor keeps their probes' sessions, their roles
// are read again every DefaultRolePeek on those sessions (attempter.peek): a role that
// now qualifies is news, and the next pass takes the host. A fleet whose primary died
// then sees the promotion within DefaultRolePeek, and costs the standbys one SELECT a
// peek and no handshake. It returns ctx's error when ctx ended.
func (wk *walker) pause(ctx context.Context, w *walkRun, seen uint64) error {
	var buf [8]int
	peek := buf[:0]
	for _, h := range w.t.list {
		var re *RoleError
		if w.tried[h] && errors.As(w.errs[h], &re) {
			peek = append(peek, h)
		}
	}
	if len(peek) == 0 || wk.cfg.CheckInterval <= 0 {
		return wk.c.news.pause(ctx, wk.env.Clock, DefaultPassPause, seen)
	}
	for left := DefaultPassPause; left > 0; left -= DefaultRolePeek {
		if err := wk.c.news.pause(ctx, wk.env.Clock, min(DefaultRolePeek, left), seen); err != nil || wk.c.news.seen() != seen {
			return err
		}
		if left > DefaultRolePeek {
			for _, h := range peek {
				if wk.c.att.peek(ctx, h) {
					return nil
				}
			}
		}
	}
	return nil
}

// walkRun is what one walk keeps from host to host and pass to pass.
type walkRun struct {
	t            *topo
	p            plan
	cause        error     // the failure that started the walk
	began        time.Time // Event.Duration of the move this walk may make
	errs         []error   // by host id, its last error in this walk
	tried        []bool    // by host id, whether this walk tried it
	triedPrimary bool
	spare        driver.Conn // prefer-standby's last resort, on spareHost
	spareHost    int
	passes       int
}

// pass tries the hosts of order, pass i of w, and reports whether the walk is over
// (with a connection and its host, or the error that ends it).
func (wk *walker) pass(ctx context.Context, w *walkRun, i int, order []int, setup SetupFunc) (conn driver.Conn, host int, over bool, err error) {
	t, p := w.t, w.p
	for _, h := range order {
		if Ended(ctx) {
			return nil, -1, true, wk.noHost(w, EndErr(ctx))
		}
		w.tried[h] = true
		w.triedPrimary = w.triedPrimary || h == t.primary
		conn, lastResort, err := wk.attempt(ctx, w, h, setup)
		if p.join && h == p.start && hostStays(err) {
			return nil, -1, true, err
		}
		if err == nil && lastResort {
			w.spare, w.spareHost = conn, h
			w.errs[h] = &RoleError{Role: t.hosts[h].health().role, Wanted: wk.c.Target()}
			continue
		}
		if err == nil {
			var to int
			if conn, to, err = wk.chooseWriter(ctx, w, h, conn, setup); err == nil {
				h = to
			}
		}
		if err == nil {
			wk.landed(w, h, false)
			return conn, h, true, nil
		}
		var we *WritersError
		if errors.As(err, &we) {
			w.errs[h] = err // two writers: the walk goes on (to the pool's host, for a join)
			continue
		}
		w.errs[h] = err
		if Ended(ctx) {
			return nil, -1, true, wk.noHost(w, EndErr(ctx))
		}
		if stopsWalk(ctx, err) && !(i == 0 && h == t.primary && p.primaryFirst) {
			// Access denied, unknown database...: every host would say the same,
			// and hiding it behind retries would cost minutes. A fall-back probe of
			// the primary is the exception: the pool's own host is still there to
			// go to. The host is in backoff now, so the next walk tries the others
			// first.
			return nil, -1, true, fmt.Errorf("mysqlfailover: host %s: %w", t.hosts[h].addr, err)
		}
	}
	if w.spare != nil {
		conn, h := w.spare, w.spareHost
		w.spare = nil
		wk.landed(w, h, true)
		return conn, h, true, nil
	}
	return nil, -1, false, nil
}

// attempt is w's attempt on host h. The pool's own host, for a connection that
// joins the pool, is waited for when full rather than left (1040 is not a down host),
// and its closed handshakes are tried again (storm.go); a lasting refusal, or handshakes
// closed while the host answered others, is its error (pass ends the walk), the pool
// staying where it is.
func (wk *walker) attempt(ctx context.Context, w *walkRun, h int, setup SetupFunc) (driver.Conn, bool, error) {
	if w.p.join && h == w.p.start {
		return wk.c.att.patient(ctx, h, setup, w.spare == nil, 0)
	}
	return wk.c.att.attempt(ctx, h, setup, w.spare == nil)
}

func (wk *walker) noHost(w *walkRun, ctxErr error) error {
	t, passes, errs, tried, p := w.t, w.passes, w.errs, w.tried, w.p
	e := &failover.NoHostAvailableError{Passes: passes, Hosts: make([]failover.HostError, 0, len(t.list)), Err: ctxErr}
	infos := t.infos()
	now := wk.env.Clock.Now().UnixNano()
	for _, i := range t.list {
		he := failover.HostError{Host: t.hosts[i].addr, Err: errs[i]}
		if errs[i] == nil {
			switch {
			case t.base.Distance(infos[i]) == policy.Ignored:
				he.Skipped = fmt.Sprintf("ignored: dc %s is remote, and usedHostsPerRemoteDC=%d uses only the first %d host(s) of each remote DC",
					infos[i].DC, wk.cfg.UsedHostsPerRemoteDC, wk.cfg.UsedHostsPerRemoteDC)
			case t.distance(infos[i]) == policy.Ignored:
				he.Skipped = "ignored by a policy layer (mysqlfailover.WithPolicy)"
			case ctxErr != nil && !tried[i]:
				he.Skipped = "the caller's context ended first"
			case i == t.primary && p.skipPrimary:
				he.Skipped = "fall-back to the primary not due yet; it is tried from the second pass, and retriesAllDown allows one"
			case t.hosts[i].health().skipped(now):
				he.Skipped = "in backoff after failing (or declared down by probes), while other hosts were tried"
			case !tried[i]:
				he.Skipped = "left out by the host policy"
			default:
				he.Skipped = "not reached"
			}
		}
		e.Hosts = append(e.Hosts, he)
	}
	return e
}

// why is the cause of a switch for its event: the failure that started the walk, or
// for a connection that joined the pool the error the pool's host gave it in this walk.
func (wk *walker) why(cause error, errs []error) error {
	if a := wk.c.Active(); cause == nil && a < len(errs) {
		return errs[a]
	}
	return cause
}

// landed records that a walk ended on host h, lastResort when prefer-standby had to
// take a non-standby, of a walk that began at began. A move away from the pool's host
// counts as a failover.
func (wk *walker) landed(w *walkRun, h int, lastResort bool) {
	triedPrimary, pl, cause, began := w.triedPrimary, w.p, wk.why(w.cause, w.errs), w.began
	failed := pl.failed
	wk.c.mu.Lock()
	prev := wk.c.pos.Load()
	if pl.join && prev.active != pl.start {
		// The pool moved while this connection was joining it (another connection's
		// failover, a new host list, SwitchTo, the monitor): the pool's newer position
		// stands, and this connection joins it at its next safe point.
		wk.c.mu.Unlock()
		return
	}
	p := *prev
	// The flag describes the host the pool lands on, whatever it left: a pool that
	// leaves a remote standby for a local writer as a last resort is not home there.
	p.active, p.lastResort, p.settled = h, lastResort, true
	home := !lastResort && p.t.isHome(h)
	if !home && (prev.home || triedPrimary) {
		// Left home, or the primary was tried and did not answer: the fall-back clock
		// starts now (Connector/J resets it when the walk began at or passed the primary).
		wk.c.restartClocks(&p, triedPrimary)
	}
	fellBack := failed < 0 && home && !prev.home // a new connection found fall-back due and home answering
	switch {
	case prev.active == h:
	case fellBack:
		p.fallBacks++
	default:
		p.failovers++
	}
	wk.c.publish(p)
	wk.c.mu.Unlock()
	switch {
	case prev.active == h:
	case fellBack:
		wk.c.emit(failover.Event{Kind: failover.EventFallBack, Host: wk.c.Host(h), From: wk.c.Host(prev.active), Duration: wk.env.Clock.Now().Sub(began)})
	default:
		e := failover.Event{Kind: failover.EventSwitch, Host: wk.c.Host(h), From: wk.c.Host(prev.active), Err: dialect.NotBadConn(cause, ""),
			Duration: wk.env.Clock.Now().Sub(began)}
		if failed >= 0 {
			e.From = wk.c.Host(failed)
		}
		wk.c.emit(e)
		wk.c.mon.leftAfterFailure(prev.active)
	}
}

// chooseWriter applies the one-writer rules to walk w, which connected to host h over
// conn: a connection that joins the pool away from home and reached home is a fall-back,
// which fallBackGate may refuse (the clocks then restart, as after a failed attempt);
// a new pool's first walk takes the writer the cluster follows (firstWriter). It returns
// the connection and host to land on, or (nil, h, err) with conn closed: a *WritersError
// when the walk goes on past h, or the error that broke conn.
func (wk *walker) chooseWriter(ctx context.Context, w *walkRun, h int, conn driver.Conn, setup SetupFunc) (driver.Conn, int, error) {
	p := w.p
	if p.join && p.failed < 0 && h != p.start && w.t.isHome(h) && !w.t.isHome(p.start) {
		if err := wk.fallBackGate(ctx, conn, h, p.start); err != nil {
			_ = conn.Close()
			wk.c.Release(h)
			if !Ended(ctx) {
				wk.c.update(func(pos *position) { wk.c.restartClocks(pos, true) })
				wk.c.emit(failover.Event{Kind: failover.EventFallBackFailed, Host: wk.c.Host(h), From: wk.c.Host(p.start), Err: err})
			}
			return nil, h, err
		}
		return conn, h, nil
	}
	next, to, err := wk.firstWriter(ctx, w, h, conn, setup)
	if err != nil {
		return nil, h, err
	}
	return next, to, nil
}

// passNews ends the pause between two passes of a walk early when something happened
// that the next pass may find (see Cluster.news): the pool moved to another host (a
// walk landed, the monitor moved it, SwitchTo, a new host list), or a host came to
// qualify (a probe or an attempt read a role the target accepts where the last read
// did not). A walk waiting for a writer after its primary died then takes the promoted
// host as soon as this process learns of it, not up to DefaultPassPause later. Bad news
// (a host down, a role lost) does not end a pause: the next pass would find nothing
// new. A host that answers probes again after it was down is not news either: its
// walks' own attempts find it at the next pass.
type passNews struct {
	mu    sync.Mutex
	n     uint64                           // news so far
	wakes map[*context.CancelFunc]struct{} // the pauses under way
}

// seen returns the news so far, for a later pause.
func (pn *passNews) seen() uint64 {
	pn.mu.Lock()
	defer pn.mu.Unlock()
	return pn.n
}

// post records news and ends every pause under way. It never blocks (it may be called
// under Cluster.mu).
func (pn *passNews) post() {
	pn.mu.Lock()
	pn.n++
	for w := range pn.wakes {
		(*w)()
	}
	clear(pn.wakes)
	pn.mu.Unlock()
}

// pause waits d on clk, unless news came after since (at once) or comes meanwhile; it
// returns ctx.Err() when ctx ended.
func (pn *passNews) pause(ctx context.Context, clk Clock, d time.Duration, since uint64) error {
	pn.mu.Lock()
	if pn.n != since {
		pn.mu.Unlock()
		return ctx.Err()
	}
	sctx, cancel := context.WithCancel(ctx)
	if pn.wakes == nil {
		pn.wakes = map[*context.CancelFunc]struct{}{}
	}
	pn.wakes[&cancel] = struct{}{}
	pn.mu.Unlock()
	_ = clk.Sleep(sctx, d)
	pn.mu.Lock()
	delete(pn.wakes, &cancel)
	pn.mu.Unlock()
	cancel()
	return ctx.Err()
}
