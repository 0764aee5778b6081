package cluster

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
)

// RetryPause is the pause between two passes over the host list, as Connector/J's 250 ms
// between retriesAllDown cycles (MariaDB CONJ-529 restored it after a hot loop).
const RetryPause = 250 * time.Millisecond

// DialFunc opens a physical connection to host (an id: Options.Hosts[i] is id i; hosts a
// HostListProvider adds get the next ids, see Cluster.Host). The context carries the
// per-host deadline and the caller's cancellation.
type DialFunc func(ctx context.Context, host int) (driver.Conn, error)

// SetupFunc restores a logical connection's session state (read-only first, then the
// current database) on a fresh physical connection to host, inside the same bounded host
// attempt as the dial. A communication error moves the walk on to the next host; any
// other error ends the walk.
type SetupFunc func(ctx context.Context, conn driver.Conn, host int) error

// Options configure a Cluster. Hosts and Dial are required.
type Options struct {
	// Hosts are the host:port addresses; Hosts[0] is the primary.
	Hosts []string
	// RetriesAllDown is the number of passes over the host list before a walk gives up
	// (count, default of the DSN: 120). 0 is treated as 1: one full pass. (Connector/J
	// then tries a single host, a quirk not copied.)
	RetriesAllDown int
	// SecondsBeforeRetryMaster is how long after leaving the primary the pool tries to
	// return to it (seconds; 0 disables the timer). As Connector/J's
	// secondsBeforeRetryMaster. Not used while probing is on (CheckInterval > 0):
	// SwitchBackDelay decides then.
	SecondsBeforeRetryMaster int
	// QueriesBeforeRetryMaster is how many statements run on a secondary, counted over
	// the whole pool, before the pool tries to return to the primary (count; 0 disables
	// the counter; after a failed attempt the count triggers no sooner than RetryPause
	// later). Both 0 disables fall-back, and the primary becomes an ordinary member of the
	// rotation. Not used while probing is on.
	QueriesBeforeRetryMaster int
	// HostTimeout bounds each host attempt: dial, handshake and session set-up
	// (duration; 0: only the caller's context bounds it).
	HostTimeout time.Duration
	// Dial opens physical connections.
	Dial DialFunc
	// Clock is the time source; nil means SystemClock.
	Clock Clock
	// OnEvent, if set, receives every event, synchronously and possibly from several
	// goroutines at once: it must be fast and must not block.
	OnEvent func(failover.Event)
	// Logger, if set, receives every event as a structured record (state changes at
	// Info, failures at Warn, connection attempts at Debug). nil: silent.
	Logger *slog.Logger

	// DCs are the hosts' data-centre labels, in Hosts' order ("" for none; nil: no
	// labels).
	DCs []string
	// LocalDC, when set, makes the plan DC-aware (see DCAware), and the primary is the
	// first host of LocalDC or without a label.
	LocalDC string
	// UsedHostsPerRemoteDC is how many hosts of each remote DC the DC-aware plan uses
	// (count, default 0: none).
	UsedHostsPerRemoteDC int
	// Target is the targetSessionAttrs every host attempt checks ("" or any: no check).
	// With read-write or primary, the primary is not left out of the first pass of a
	// walk (the writer may be anywhere after a promotion).
	Target dsn.TargetSessionAttrs
	// Layer, if set, wraps the built-in policy (Rotation, then DCAware, then
	// RoleAware) with the caller's own layers; see Policy.
	Layer func(child failover.Policy) failover.Policy

	// CheckInterval is how often the monitor probes every listed host and polls
	// Provider (duration; 0: no monitor, and SecondsBeforeRetryMaster and
	// QueriesBeforeRetryMaster decide fall-back). See Cluster.Start.
	CheckInterval time.Duration
	// FailoverDelay is how long the active host must fail its probes without a pause
	// before the pool leaves it (duration, as Pulsar's failoverDelay; 0: at the first
	// failed probe). Used only with CheckInterval > 0.
	FailoverDelay time.Duration
	// SwitchBackDelay is how long the primary must pass its probes without a pause
	// before the pool returns to it (duration, as Pulsar's switchBackDelay; 0: at the
	// first passed probe). Used only with CheckInterval > 0.
	SwitchBackDelay time.Duration
	// Provider, if set, is polled every CheckInterval for the host list (not at all
	// with CheckInterval 0, unless the caller runs Check).
	Provider failover.HostListProvider
	// Abort, if set, is called with a host that probes declared down while the pool was
	// on it, or after a connection's walk had moved the pool off it for a failure: it
	// must close every physical connection to that host so that statements in flight
	// (and handshakes) fail at once (the driver closes their sockets).
	Abort func(host int)
}

// Cluster is the failover state that every pooled connection of one connector shares:
// which host the pool uses (the active host), the fall-back clock and counter, each
// host's health and backoff, and the host walk. Its methods are safe for concurrent use;
// none holds a lock while dialing.
//
// The walk follows Connector/J's FailoverConnectionProxy (failOver, nextHost,
// readyToFallBackToPrimaryHost), with the per-connection state moved here so that one
// failure moves the whole pool, and one walk at a time runs for it (see Failover).
type Cluster struct {
	t      atomic.Pointer[topo]
	topoMu sync.Mutex // serialises SetHosts and SwitchTo
	// inUse is held for reading by every operation that uses host ids of a list it
	// loaded for longer than one call (walks, checks, fall-backs, monitor rounds), so
	// that SetHosts gives no id away under it. Its writer only ever uses TryLock, so a
	// reader never waits and may take it again inside another reader.
	inUse sync.RWMutex

	target        dsn.TargetSessionAttrs
	localDC       string
	perRemote     int
	layer         func(failover.Policy) failover.Policy
	standbyIntent bool
	passes        int
	secs          time.Duration
	queries       int64
	timeout       time.Duration
	dial          DialFunc
	clock         Clock
	onEvent       func(failover.Event)
	logger        *slog.Logger

	interval   time.Duration
	failDelay  time.Duration
	backDelay  time.Duration
	provider   failover.HostListProvider
	abort      func(int)
	stop       context.CancelFunc
	started    atomic.Bool
	startMu    sync.Mutex // with started: Start and Close do not race
	monitorRun sync.WaitGroup
	probes     probeSet

	active      atomic.Int32 // id of the host the pool uses
	leftPrimary atomic.Int64 // clock time (UnixNano) when the pool left home or last failed to return
	ran         atomic.Int64 // statements run away from home since then
	probeFailed atomic.Int64 // clock time (UnixNano) of the last failed attempt to return
	fallingBack atomic.Bool  // one fall-back attempt at a time for the whole pool
	lastResort  atomic.Bool  // prefer-standby: the pool is on a non-standby for want of a standby
	closed      atomic.Bool

	flightMu sync.Mutex
	flight   *flight // the walk in progress after a failure, if any

	failovers, fallBacks, aborted atomic.Int64
}

// NewCluster validates opts and returns a Cluster on the primary.
// It returns an error when Hosts is empty, Dial is nil, a count or duration is negative,
// DCs and Hosts differ in length, LocalDC matches no host, or Layer returns nil.
func NewCluster(opts Options) (*Cluster, error) {
	if len(opts.Hosts) == 0 {
		return nil, errors.New("mysqlfailover: no hosts")
	}
	if opts.Dial == nil {
		return nil, errors.New("mysqlfailover: Options.Dial is nil")
	}
	if opts.RetriesAllDown < 0 || opts.SecondsBeforeRetryMaster < 0 || opts.QueriesBeforeRetryMaster < 0 || opts.HostTimeout < 0 ||
		opts.UsedHostsPerRemoteDC < 0 || opts.CheckInterval < 0 || opts.FailoverDelay < 0 || opts.SwitchBackDelay < 0 {
		return nil, errors.New("mysqlfailover: negative retriesAllDown, secondsBeforeRetryMaster, queriesBeforeRetryMaster, hostTimeout, usedHostsPerRemoteDC, checkInterval, failoverDelay or switchBackDelay")
	}
	if opts.DCs != nil && len(opts.DCs) != len(opts.Hosts) {
		return nil, errors.New("mysqlfailover: Options.DCs and Options.Hosts differ in length")
	}
	c := &Cluster{
		passes:    max(opts.RetriesAllDown, 1),
		secs:      time.Duration(opts.SecondsBeforeRetryMaster) * time.Second,
		queries:   int64(opts.QueriesBeforeRetryMaster),
		timeout:   opts.HostTimeout,
		dial:      opts.Dial,
		clock:     opts.Clock,
		onEvent:   opts.OnEvent,
		logger:    opts.Logger,
		target:    opts.Target,
		localDC:   opts.LocalDC,
		perRemote: opts.UsedHostsPerRemoteDC,
		layer:     opts.Layer,
		interval:  opts.CheckInterval,
		failDelay: opts.FailoverDelay,
		backDelay: opts.SwitchBackDelay,
		provider:  opts.Provider,
		abort:     opts.Abort,
	}
	if c.clock == nil {
		c.clock = SystemClock{}
	}
	if c.target == "" {
		c.target = dsn.TargetAny
	}
	c.standbyIntent = c.target == dsn.TargetStandby || c.target == dsn.TargetReadOnly || c.target == dsn.TargetPreferStandby
	hosts := make([]*hostState, len(opts.Hosts))
	list := make([]int, len(opts.Hosts))
	for i, a := range opts.Hosts {
		dc := ""
		if opts.DCs != nil {
			dc = opts.DCs[i]
		}
		hosts[i], list[i] = newHostState(a, dc), i
	}
	t, err := c.newTopo(hosts, list, -1)
	if err != nil {
		return nil, err
	}
	c.t.Store(t)
	c.active.Store(int32(t.primary))
	return c, nil
}

// host returns the state of host id i in t, or nil.
func (t *topo) host(i int) *hostState {
	if i < 0 || i >= len(t.hosts) {
		return nil
	}
	return t.hosts[i]
}

// Host returns the host:port of id i, or "" when there is no such host.
func (c *Cluster) Host(i int) string {
	if h := c.t.Load().host(i); h != nil {
		return h.addr
	}
	return ""
}

// Listed reports whether addr (host:port, as Host returns it) is in the current host
// list.
func (c *Cluster) Listed(addr string) bool {
	t := c.t.Load()
	for _, id := range t.list {
		if t.hosts[id].addr == addr {
			return true
		}
	}
	return false
}

// Primary returns the id of the primary: the first host of the list, or with localDC
// the first host of the local DC (or without a label), or the host of the last SwitchTo.
// Fall-back returns to it.
func (c *Cluster) Primary() int { return c.t.Load().primary }

// Home reports whether host is where the pool wants to be, so that a pool there has
// nothing to fall back to: the primary, or with targetSessionAttrs standby, read-only or
// prefer-standby any local host (unless prefer-standby had to take it as a last resort).
// It is on every statement's path: three loads.
func (c *Cluster) Home(host int) bool { return c.home(c.t.Load(), host) && !c.lastResort.Load() }

// Place is where a connection's host stands for its next statement (see Cluster.Place).
type Place int

const (
	// PlaceAway: not the pool's host, or unfit (see Unfit): the connection joins the
	// pool's host before it sends anything.
	PlaceAway Place = iota
	// PlaceActive: the pool's host, but not home: the statement may first fall back.
	PlaceActive
	// PlaceHome: the pool's host and home (see Home): nothing to do.
	PlaceHome
)

// Place tells a connection on host what its next statement needs: Active, Unfit and
// Home in one, with one read of the host list. It is on every statement's path.
func (c *Cluster) Place(host int) Place {
	if int(c.active.Load()) != host {
		return PlaceAway
	}
	t := c.t.Load()
	h := t.host(host)
	switch {
	case h == nil || h.unfit.Load() || !t.member[host]:
		return PlaceAway
	case c.home(t, host) && !c.lastResort.Load():
		return PlaceHome
	}
	return PlaceActive
}

// Target returns the targetSessionAttrs that host attempts check (dsn.TargetAny when
// none).
func (c *Cluster) Target() dsn.TargetSessionAttrs { return c.target }

// Now returns the Cluster clock's time.
func (c *Cluster) Now() time.Time { return c.clock.Now() }

// Active returns the id of the host the pool uses now. Connections on another host move
// to it at their next safe point.
func (c *Cluster) Active() int { return int(c.active.Load()) }

// Unfit reports whether a connection on host must move before its next statement or
// transaction although the host may be the active one: the last role check found a role
// that targetSessionAttrs does not accept (a connection on a demoted primary joins the
// walk instead of sending there while another connection looks for the writer), or the
// host left the list. Always false with targetSessionAttrs any and a fixed list.
func (c *Cluster) Unfit(host int) bool {
	t := c.t.Load()
	h := t.host(host)
	return h == nil || h.unfit.Load() || !t.member[host]
}

// Release tells the Cluster that a physical connection to host that it returned (from
// Connect, Failover, Recover or TryFallBack) is closed. The id of a host that has left
// the list is given to a new host only once every such connection is released.
func (c *Cluster) Release(host int) {
	if h := c.t.Load().host(host); h != nil {
		h.refs.Add(-1)
	}
}

// Close makes later walks fail with ErrClosed and stops the monitor, waiting for its
// goroutines (probe connections are closed) before it returns; a provider with a
// CloseIdleConnections method (HTTPHostList) has it called.
func (c *Cluster) Close() {
	c.startMu.Lock()
	c.closed.Store(true)
	stop := c.stop
	c.startMu.Unlock()
	if stop != nil {
		stop()
	}
	c.monitorRun.Wait()
	c.probes.closeAll() // also those of Check calls made without Start
	if p, ok := c.provider.(interface{ CloseIdleConnections() }); ok {
		p.CloseIdleConnections() // HTTPHostList: no keep-alive goroutine outlives Close
	}
}

// fallBackEnabled: both 0 disables fall-back (Connector/J enableFallBackToPrimaryHost);
// with probing on, the monitor decides instead (SwitchBackDelay).
func (c *Cluster) fallBackEnabled() bool { return c.interval == 0 && (c.secs > 0 || c.queries > 0) }

// NoteStatement counts one statement run while the pool is away from home, for
// QueriesBeforeRetryMaster. Call it after FallBackDue, once per statement. It reports
// whether the statement was counted (for ForgetStatement).
func (c *Cluster) NoteStatement() (counted bool) {
	if c.queries > 0 && !c.Home(int(c.active.Load())) {
		c.ran.Add(1)
		return true
	}
	return false
}

// ForgetStatement takes back one NoteStatement that counted, for a statement that was handed back
// without running (driver.ErrSkip: database/sql runs it as a prepared statement, which
// counts itself).
func (c *Cluster) ForgetStatement() {
	if c.queries > 0 {
		c.ran.Add(-1)
	}
}

// FallBackDue reports whether the pool is away from home and SecondsBeforeRetryMaster
// have passed or QueriesBeforeRetryMaster statements ran since it left (or since the
// last failed attempt to return). As Connector/J readyToFallBackToPrimaryHost, with one
// difference: after a failed attempt the statement count triggers the next one no sooner
// than RetryPause later. A busy pool runs 50 statements in milliseconds, and without the
// pause a dead primary would get a connection attempt every few milliseconds for as long
// as it stays down. Always false while probing is on: the monitor returns the pool then.
func (c *Cluster) FallBackDue() bool {
	if c.Home(int(c.active.Load())) || !c.fallBackEnabled() {
		return false
	}
	var now int64
	if c.queries > 0 && c.ran.Load() >= c.queries {
		now = c.clock.Now().UnixNano()
		if now-c.probeFailed.Load() >= int64(RetryPause) {
			return true
		}
	}
	if c.secs == 0 {
		return false
	}
	if now == 0 {
		now = c.clock.Now().UnixNano()
	}
	return now-c.leftPrimary.Load() >= int64(c.secs)
}

// restartClocks starts the fall-back timer and counter again (Connector/J
// resetAutoFallBackCounters); probeFailed says the primary was just tried in vain.
func (c *Cluster) restartClocks(probeFailed bool) {
	now := c.clock.Now().UnixNano()
	c.leftPrimary.Store(now)
	c.ran.Store(0)
	if probeFailed {
		c.probeFailed.Store(now)
	}
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
}

// order returns the hosts to try in pass i of p: the policy's plan, without ignored
// hosts, hosts not in the list, out-of-range ids and repeats, and in the first pass with
// the failed host last (it has just failed; it is still tried, as in Connector/J's
// rotation). Hosts declared down by probes, and for joining connections hosts in
// backoff, are left out too, unless that would leave nothing to try: then every planned
// host is tried (all hosts down is when retriesAllDown matters).
func (c *Cluster) order(t *topo, p plan, i int, tried []bool, buf []int) []int {
	infos := t.infos()
	w := failover.Walk{Hosts: infos, List: t.list, Primary: t.primary, Start: p.start, Failed: p.failed, Pass: i}
	if i == 0 {
		w.PrimaryFirst, w.SkipPrimary = p.primaryFirst, p.skipPrimary
	}
	raw := t.policy.Plan(&w, nil)
	seen := make([]bool, len(t.hosts))
	out := buf[:0]
	last := -1
	for _, h := range raw {
		if h < 0 || h >= len(t.hosts) || seen[h] || t.distance(infos[h]) == failover.DistanceIgnored {
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
	if i == 0 && p.join && p.start != t.primary && !c.Unfit(p.start) {
		// Once the pool has failed over, a connection that joins it goes to the pool's
		// host first (after the primary when fall-back is due), whatever the layers
		// prefer: a local host that is down must not cost every new connection an
		// attempt while the pool works elsewhere, and the return to the primary
		// follows the fall-back rules, not the first new connection.
		front := 0
		if p.primaryFirst && len(out) > 0 && out[0] == t.primary {
			front = 1
		}
		if k := slices.Index(out, p.start); k > front {
			copy(out[front+1:k+1], out[front:k])
			out[front] = p.start
		}
	}
	now := c.clock.Now().UnixNano()
	// Backoff is for connections that join the pool (new ones, and followers of a pool
	// that moved): they are many, and must not each pay a dead host's timeout while a
	// healthy host is in the plan. The one walk that moves the pool after a failure
	// keeps Connector/J's order, each host once per pass; so does a walk in which every
	// host has failed lately (all down), and a walk never skips a host it has tried
	// itself in an earlier pass. Hosts the probes declared down are skipped by every
	// walk; the host whose failure started a walk keeps its place (last of the first
	// pass).
	healthy := false
	for _, h := range out {
		healthy = healthy || !t.hosts[h].failing.Load() && !t.hosts[h].down.Load()
	}
	k := 0
	for _, h := range out {
		hs := t.hosts[h]
		backingOff := p.join && healthy && hs.retryAt.Load() > now && (tried == nil || !tried[h])
		if h == p.failed || !hs.down.Load() && !backingOff {
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
func (c *Cluster) skipPrimaryNow(due bool) bool {
	return !due && c.fallBackEnabled() && !WriteIntent(c.target)
}

// joinPlan is the plan for a connection that joins the pool: a new connection, or one
// whose host is no longer the active one.
func (c *Cluster) joinPlan() plan {
	a := int(c.active.Load())
	if c.Home(a) {
		return plan{start: a, failed: -1, join: true}
	}
	due := c.FallBackDue()
	// With a standby target the way home is TryFallBack's search, not the primary.
	return plan{start: a, failed: -1, join: true, primaryFirst: due && !c.standbyIntent, skipPrimary: c.skipPrimaryNow(due)}
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
	p := c.joinPlan()
	defer c.probeOnce(&p)()
	return c.walk(ctx, p, nil, setup)
}

// probeOnce lets one walk at a time try the primary first when fall-back is due: the
// others skip it in their first pass, so a burst of new connections (database/sql growing
// the pool) does not pay a dead or hung primary's timeout once each. It returns the
// release function.
func (c *Cluster) probeOnce(p *plan) func() {
	if !p.primaryFirst {
		return func() {}
	}
	if !c.fallingBack.CompareAndSwap(false, true) {
		p.primaryFirst, p.skipPrimary = false, true
		return func() {}
	}
	return func() { c.fallingBack.Store(false) }
}

// flight is one walk that moves the pool after a failure, which the connections that
// fail at the same time wait for instead of walking themselves.
type flight struct {
	failed  int
	done    chan struct{}
	host    int   // where the walk landed (valid when err is nil)
	err     error // the walk's error
	ctxEnd  bool  // the walk ended because its leader's context ended
	waiters atomic.Int32
}

// FollowerJitter is the spread of the connections that waited for another connection's
// walk: each waits a random time in [0, FollowerJitter x waiters), at most MaxJitter,
// before it opens its own connection to the host that walk found, so that a large pool
// does not open all its connections to the new host in the same millisecond.
const (
	FollowerJitter = 2 * time.Millisecond
	MaxJitter      = 200 * time.Millisecond
)

// Failover handles a communication error (cause) on a connection to host failed: it
// reports the failure, puts the host into backoff and opens a physical connection to the
// next host, as Connector/J FailoverConnectionProxy.failOver: if another connection
// already moved the pool, to the pool's host; else if fall-back is due, to the primary
// first; else round-robin from the host after failed, skipping the primary in the first
// pass while fall-back is enabled, for up to RetriesAllDown passes with RetryPause
// between them, all within ctx. The policy (localDC, targetSessionAttrs, user layers)
// orders and filters each pass.
//
// One walk at a time runs for the whole pool: connections whose host fails while
// another connection is walking wait for that walk (each within its own ctx) and then
// connect to the host it found, spread over a short jitter (FollowerJitter); when it
// found none they get its error. So a dead host gets one attempt per pass from the
// connector, not one per pooled connection.
func (c *Cluster) Failover(ctx context.Context, failed int, cause error, setup SetupFunc) (driver.Conn, int, error) {
	c.inUse.RLock()
	defer c.inUse.RUnlock()
	c.emit(failover.Event{Kind: failover.EventHostFailed, Host: c.Host(failed), Err: NotBadConn(cause, "")})
	var re *RoleError
	if h := c.t.Load().host(failed); h != nil && !errors.As(cause, &re) && communication(cause) {
		// Into backoff, unless already there (a failed Reconnect just put it there, or
		// another connection reported the same failure a moment ago): one failure, one
		// step of backoff, however many connections saw it. The compare-and-swap claims
		// the report; attemptFailed then sets the real end of the backoff.
		now := c.clock.Now().UnixNano()
		if old := h.retryAt.Load(); old <= now && h.retryAt.CompareAndSwap(old, now+1) {
			c.attemptFailed(h, NotBadConn(cause, ""))
		}
	}
	for {
		c.flightMu.Lock()
		f := c.flight
		if f == nil && int(c.active.Load()) != failed {
			// Another connection already moved the pool: follow it.
			c.flightMu.Unlock()
			p := c.joinPlan()
			p.failed = failed
			defer c.probeOnce(&p)()
			return c.walk(ctx, p, cause, setup)
		}
		if f == nil {
			f = &flight{failed: failed, done: make(chan struct{})}
			c.flight = f
			c.flightMu.Unlock()
			return c.lead(ctx, f, cause, setup)
		}
		n := f.waiters.Add(1)
		c.flightMu.Unlock()
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
		if err := c.clock.Sleep(ctx, jitter(n)); err != nil {
			return nil, -1, err
		}
		conn, _, err := c.attemptPatient(ctx, f.host, setup, false, 0)
		if err == nil {
			return conn, f.host, nil
		}
		var full *fullError
		if errors.As(err, &full) {
			return nil, -1, err // the pool's new host is up but full: it stays there
		}
		if Classify(ctx, err) != Communication {
			var re *RoleError
			if !errors.As(err, &re) {
				return nil, -1, fmt.Errorf("mysqlfailover: host %s: %w", c.Host(f.host), err)
			}
		}
		failed, cause = f.host, err // the new host failed too: walk from there
	}
}

// lead runs the walk of flight f and publishes its result.
func (c *Cluster) lead(ctx context.Context, f *flight, cause error, setup SetupFunc) (driver.Conn, int, error) {
	defer func() {
		c.flightMu.Lock()
		c.flight = nil
		c.flightMu.Unlock()
		close(f.done)
	}()
	t := c.t.Load()
	p := plan{start: c.next(t, f.failed), failed: f.failed}
	if f.failed != t.primary {
		due := c.FallBackDue()
		p.primaryFirst = due && !c.standbyIntent
		p.skipPrimary = c.skipPrimaryNow(due)
	}
	defer c.probeOnce(&p)()
	conn, h, err := c.walk(ctx, p, cause, setup)
	f.host, f.err = h, err
	var nh *failover.NoHostAvailableError
	f.ctxEnd = err != nil && (ctx.Err() != nil || errors.As(err, &nh) && nh.Err != nil)
	return conn, h, err
}

// next returns the host after failed in the list (the rotation's start), or the list's
// first host when failed is not in it.
func (c *Cluster) next(t *topo, failed int) int {
	if k := slices.Index(t.list, failed); k >= 0 {
		return t.list[(k+1)%len(t.list)]
	}
	return t.list[0]
}

func jitter(waiters int32) time.Duration {
	w := min(time.Duration(waiters)*FollowerJitter, MaxJitter)
	if w <= 0 {
		return 0
	}
	return rand.N(w)
}

// NoteRole records role, found on host by a check outside the walk (a write rejected as
// read-only makes the connection read the role again), and reports whether it qualifies
// for the Target. A host that no longer qualifies is then left by the connection that
// found out, with Failover and a *RoleError as the cause, which moves the pool.
func (c *Cluster) NoteRole(host int, role failover.Role) (qualifies bool) {
	return c.setRole(host, role)
}

// setRole records the role a check found on host and reports whether it qualifies.
func (c *Cluster) setRole(host int, role failover.Role) bool {
	ok := Accepts(c.target, role)
	h := c.t.Load().host(host)
	if h == nil {
		return ok
	}
	h.role.Store(int32(role))
	// prefer-standby takes any host as a last resort: a connection there stays.
	h.unfit.Store(!ok && c.target != dsn.TargetPreferStandby)
	return ok
}

// TryFallBack is called by a connection away from home (see Home) at a safe point
// (outside a transaction, before a statement). If fall-back is due and no other
// connection is already trying, it makes one attempt on the primary (with the role check
// of targetSessionAttrs), or with a standby target one strict pass over the other local
// hosts: on success the pool's active host becomes that host and the new physical
// connection and its host are returned; on failure the pool stays, the clocks restart,
// and (nil, -1, err) is returned for the record: the caller's statement goes on where it
// was, silently. (nil, -1, nil) means nothing was attempted. As Connector/J
// fallBackToPrimaryIfAvailable.
func (c *Cluster) TryFallBack(ctx context.Context, setup SetupFunc) (driver.Conn, int, error) {
	c.inUse.RLock()
	defer c.inUse.RUnlock()
	if !c.FallBackDue() || !c.fallingBack.CompareAndSwap(false, true) {
		return nil, -1, nil
	}
	defer c.fallingBack.Store(false)
	from := int(c.active.Load())
	if c.Home(from) {
		return nil, -1, nil
	}
	var conn driver.Conn
	var err error
	h := c.Primary()
	if c.standbyIntent {
		conn, h, err = c.findHome(ctx, from, setup)
	} else {
		conn, _, err = c.attempt(ctx, h, setup, false)
	}
	if err != nil {
		if ctx.Err() == nil { // the hosts failed, not the caller
			c.restartClocks(true)
			c.emit(failover.Event{Kind: failover.EventFallBackFailed, Host: c.Host(h), From: c.Host(from), Err: err})
		}
		return nil, -1, err
	}
	c.lastResort.Store(false)
	c.active.Store(int32(h))
	c.fallBacks.Add(1)
	c.emit(failover.Event{Kind: failover.EventFallBack, Host: c.Host(h), From: c.Host(from)})
	return conn, h, nil
}

// findHome is TryFallBack's search with a standby target: one pass, in plan order, over
// the home hosts other than from, each attempt strict (no last resort). It returns the
// first that qualifies, or the last error (h is then the last host tried, or -1).
func (c *Cluster) findHome(ctx context.Context, from int, setup SetupFunc) (driver.Conn, int, error) {
	err := errors.New("mysqlfailover: no other local host to return to")
	last := -1
	t := c.t.Load()
	for _, h := range c.order(t, plan{start: from, failed: -1}, 0, nil, nil) {
		if h == from || !c.home(t, h) {
			continue
		}
		conn, _, aerr := c.attempt(ctx, h, setup, false)
		if aerr == nil {
			return conn, h, nil
		}
		err, last = aerr, h
		if ctx.Err() != nil {
			break
		}
	}
	return nil, last, err
}

// walk runs plan p. cause describes the failure that started it, for the switch event.
// With prefer-standby, the first host that answers without being a standby is kept
// aside and used when no standby answers in the same pass (libpq's last resort).
func (c *Cluster) walk(ctx context.Context, p plan, cause error, setup SetupFunc) (driver.Conn, int, error) {
	if c.closed.Load() {
		return nil, -1, failover.ErrClosed
	}
	t := c.t.Load()
	n := len(t.hosts)
	errs := make([]error, n)
	tried := make([]bool, n)
	triedPrimary := false
	var spare driver.Conn
	spareHost := -1
	defer func() {
		if spare != nil {
			_ = spare.Close()
			c.Release(spareHost)
		}
	}()
	var buf [8]int
	order := buf[:0]
	passes := 0
	for i := 0; i < c.passes; i++ {
		if i > 0 {
			if err := c.clock.Sleep(ctx, RetryPause); err != nil {
				return nil, -1, c.noHost(t, passes, errs, tried, ctx.Err(), p)
			}
		}
		passes++
		order = c.order(t, p, i, tried, order)
		for _, h := range order {
			if ctx.Err() != nil {
				return nil, -1, c.noHost(t, passes, errs, tried, ctx.Err(), p)
			}
			tried[h] = true
			triedPrimary = triedPrimary || h == t.primary
			var conn driver.Conn
			var lastResort bool
			var err error
			if p.join && h == p.start {
				// The pool's own host: a connection that joins the pool waits for a full
				// host rather than leave it (1040 is not a down host), and a lasting
				// refusal is its error, the pool staying where it is.
				conn, lastResort, err = c.attemptPatient(ctx, h, setup, spare == nil, 0)
				var fe *fullError
				if errors.As(err, &fe) {
					return nil, -1, err
				}
			} else {
				conn, lastResort, err = c.attempt(ctx, h, setup, spare == nil)
			}
			if err == nil && lastResort {
				spare, spareHost = conn, h
				errs[h] = &RoleError{Role: failover.Role(t.hosts[h].role.Load()), Wanted: c.target}
				continue
			}
			if err == nil {
				c.landed(h, triedPrimary, p.failed, c.why(cause, errs), false)
				return conn, h, nil
			}
			errs[h] = err
			if ctx.Err() != nil {
				return nil, -1, c.noHost(t, passes, errs, tried, ctx.Err(), p)
			}
			if stopsWalk(ctx, err) && !(i == 0 && h == t.primary && p.primaryFirst) {
				// Access denied, unknown database...: every host would say the same,
				// and hiding it behind retries would cost minutes. A fall-back probe of
				// the primary is the exception: the pool's own host is still there to
				// go to. The host is in backoff now, so the next walk tries the others
				// first.
				return nil, -1, fmt.Errorf("mysqlfailover: host %s: %w", t.hosts[h].addr, err)
			}
		}
		if spare != nil {
			conn, h := spare, spareHost
			spare = nil
			c.landed(h, triedPrimary, p.failed, c.why(cause, errs), true)
			return conn, h, nil
		}
	}
	return nil, -1, c.noHost(t, passes, errs, tried, nil, p)
}

func (c *Cluster) noHost(t *topo, passes int, errs []error, tried []bool, ctxErr error, p plan) error {
	e := &failover.NoHostAvailableError{Passes: passes, Hosts: make([]failover.HostError, 0, len(t.list)), Err: ctxErr}
	infos := t.infos()
	now := c.clock.Now().UnixNano()
	for _, i := range t.list {
		he := failover.HostError{Host: t.hosts[i].addr, Err: errs[i]}
		if errs[i] == nil {
			switch {
			case t.base.Distance(infos[i]) == failover.DistanceIgnored:
				he.Skipped = fmt.Sprintf("ignored: dc %s is remote, and usedHostsPerRemoteDC=%d uses only the first %d host(s) of each remote DC",
					infos[i].DC, c.perRemote, c.perRemote)
			case t.distance(infos[i]) == failover.DistanceIgnored:
				he.Skipped = "ignored by a policy layer (driver.WithPolicy)"
			case ctxErr != nil && !tried[i]:
				he.Skipped = "the caller's context ended first"
			case i == t.primary && p.skipPrimary:
				he.Skipped = "fall-back to the primary not due yet; it is tried from the second pass, and retriesAllDown allows one"
			case c.skipped(t.hosts[i], now):
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
func (c *Cluster) why(cause error, errs []error) error {
	if a := c.Active(); cause == nil && a < len(errs) {
		return errs[a]
	}
	return cause
}

// landed records that a walk ended on host h, lastResort when prefer-standby had to
// take a non-standby. A move away from the pool's host counts as a failover.
func (c *Cluster) landed(h int, triedPrimary bool, failed int, cause error, lastResort bool) {
	t := c.t.Load()
	prev := int(c.active.Swap(int32(h)))
	// The flag describes the host the pool lands on, whatever it left: a pool that
	// leaves a remote standby for a local writer as a last resort is not home there.
	wasLastResort := c.lastResort.Swap(lastResort)
	prevHome := c.home(t, prev) && !wasLastResort
	if !c.Home(h) && (prevHome || triedPrimary) {
		// Left home, or the primary was tried and did not answer: the fall-back clock
		// starts now (Connector/J resets it when the walk began at or passed the primary).
		c.restartClocks(triedPrimary)
	}
	switch {
	case prev == h:
	case failed < 0 && c.Home(h) && !prevHome:
		// A new connection found fall-back due and home answering.
		c.fallBacks.Add(1)
		c.emit(failover.Event{Kind: failover.EventFallBack, Host: c.Host(h), From: c.Host(prev)})
	default:
		c.failovers.Add(1)
		e := failover.Event{Kind: failover.EventSwitch, Host: c.Host(h), From: c.Host(prev), Err: NotBadConn(cause, "")}
		if failed >= 0 {
			e.From = c.Host(failed)
		}
		c.emit(e)
		c.leftAfterFailure(prev)
	}
}

// MinHostShare is the smallest per-host budget that a caller's deadline can impose (see
// attempt).
const MinHostShare = 250 * time.Millisecond

// attempt makes one bounded host attempt: dial, the role check of targetSessionAttrs
// (one round trip), then setup. The bound is HostTimeout and, when the caller's context
// has a deadline, a share of the time left: half of it, but at least MinHostShare and at
// least four times what this host's attempts usually take. A hung host must not eat a
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
func (c *Cluster) attempt(ctx context.Context, h int, setup SetupFunc, lastResortOK bool) (driver.Conn, bool, error) {
	return c.attemptWithin(ctx, h, setup, lastResortOK, 0)
}

// attemptWithin is attempt with a further bound, limit (0: none), for the quick
// same-host check of Recover.
func (c *Cluster) attemptWithin(ctx context.Context, h int, setup SetupFunc, lastResortOK bool, limit time.Duration) (conn driver.Conn, lastResort bool, err error) {
	hs := c.t.Load().host(h)
	if hs == nil {
		return nil, false, fmt.Errorf("mysqlfailover: no host with id %d", h)
	}
	actx, budget, bound := ctx, c.timeout, "hostTimeout"
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl) // the caller's deadline is on the wall clock
		share := max(left/2, MinHostShare, 4*time.Duration(hs.typical.Load()))
		if share < left && (budget == 0 || share < budget) {
			budget, bound = share, "a share of the caller's time left"
		}
	}
	if limit > 0 && (budget == 0 || limit < budget) {
		budget, bound = limit, "the check of a host whose session ended"
	}
	if hs.down.Load() && c.interval > 0 {
		// Declared down by the probes, after this attempt was planned (walks leave such
		// hosts out): it gets no more than a probe would, so that a socket opened after
		// the monitor closed the host's connections does not wait for hostTimeout.
		if pt := c.probeTimeout(); budget == 0 || pt < budget {
			budget, bound = pt, "the probe timeout: the probes declared the host down"
		}
	}
	if budget > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	timedOut := func(err error) error {
		if actx.Err() != nil && ctx.Err() == nil {
			return &HostTimeoutError{After: budget, Cause: err, bound: bound}
		}
		return err
	}
	start := c.clock.Now()
	conn, err = c.dial(actx, h)
	if err != nil {
		if e := timedOut(err); e != err {
			err = e
		} else {
			err = describeDialError(err)
		}
	}
	if err == nil && c.target != dsn.TargetAny {
		role, rerr := ReadRole(actx, conn)
		switch {
		case rerr != nil:
			err = NotBadConn(timedOut(rerr), "role check failed")
		case Accepts(c.target, role):
		case lastResortOK && c.target == dsn.TargetPreferStandby:
			lastResort = true
		default:
			err = &RoleError{Role: role, Wanted: c.target}
		}
		if rerr == nil {
			c.setRole(h, role)
		}
		if err != nil {
			_ = conn.Close()
			conn = nil
		}
	}
	if err == nil && setup != nil {
		if err = setup(actx, conn, h); err != nil {
			_ = conn.Close()
			conn = nil
			err = NotBadConn(timedOut(err), "session set-up failed")
		}
	}
	var re *RoleError
	switch {
	case err == nil:
		d := int64(c.clock.Now().Sub(start))
		if old := hs.typical.Load(); old > 0 {
			d = (3*old + d) / 4
		}
		hs.typical.Store(d)
		hs.refs.Add(1) // until Release
		c.attemptSucceeded(hs)
	case errors.As(err, &re), fullHost(err):
		c.attemptSucceeded(hs) // the host answers; the walk skips it for its role, or it is full
	case ctx.Err() == nil:
		c.attemptFailed(hs, err)
	}
	c.emit(failover.Event{Kind: failover.EventConnect, Host: hs.addr, Err: err})
	return conn, lastResort, err
}

// describeDialError says what a connection-phase failure means. go-sql-driver reports a
// server that accepts TCP and then closes before or during the handshake (a stopped server
// behind a proxy, max_connections, a crash) as mysql.ErrInvalidConn or driver.ErrBadConn,
// the same words as a connection lost mid-query; an operator reading the all-hosts-down
// error needs to know it happened at connect.
func describeDialError(err error) error {
	const what = "connection closed by the server during the handshake"
	if errors.Is(err, driver.ErrBadConn) {
		return NotBadConn(err, what)
	}
	if errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%s: %w", what, err)
	}
	return err
}

func (c *Cluster) emit(e failover.Event) {
	if c.onEvent == nil && c.logger == nil {
		return
	}
	e.Time = c.clock.Now()
	if c.onEvent != nil {
		c.onEvent(e)
	}
	if c.logger != nil {
		c.log(e)
	}
}
