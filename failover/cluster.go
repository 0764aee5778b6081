package failover

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/dsn"
)

// RetryPause is the pause between two passes over the host list, as Connector/J's 250 ms
// between retriesAllDown cycles (MariaDB CONJ-529 restored it after a hot loop).
const RetryPause = 250 * time.Millisecond

// DialFunc opens a physical connection to host (an index into Options.Hosts). The
// context carries the per-host deadline and the caller's cancellation.
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
	// secondsBeforeRetryMaster.
	SecondsBeforeRetryMaster int
	// QueriesBeforeRetryMaster is how many statements run on a secondary, counted over
	// the whole pool, before the pool tries to return to the primary (count; 0 disables
	// the counter; after a failed attempt the count triggers no sooner than RetryPause
	// later). Both 0 disables fall-back, and the primary becomes an ordinary member of the
	// rotation.
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
	OnEvent func(Event)

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
	Layer func(child Policy) Policy
}

// Cluster is the failover state that every pooled connection of one connector shares:
// which host the pool uses (the active host), the fall-back clock and counter, and the
// host walk. Its methods are safe for concurrent use; none holds a lock while dialing.
//
// The walk follows Connector/J's FailoverConnectionProxy (failOver, nextHost,
// readyToFallBackToPrimaryHost), with the per-connection state moved here so that one
// failure moves the whole pool.
type Cluster struct {
	hosts   []string
	dcs     []string
	primary int
	target  dsn.TargetSessionAttrs
	policy  Policy // the whole stack, user layers included
	base    Policy // the built-in stack: user layers may reorder, never widen it
	// home says per host whether the pool, once there, has nothing to fall back to: the
	// primary; with standby, read-only or prefer-standby every local host (any standby
	// will do, and the primary, a writer, would never qualify).
	home          []bool
	standbyIntent bool
	perRemote     int
	passes        int
	secs          time.Duration
	queries       int64
	timeout       time.Duration
	dial          DialFunc
	clock         Clock
	onEvent       func(Event)

	active      atomic.Int32   // index of the host the pool uses
	leftPrimary atomic.Int64   // clock time (UnixNano) when the pool left the primary or last failed to return
	ran         atomic.Int64   // statements run on a secondary since then
	probeFailed atomic.Int64   // clock time (UnixNano) of the last failed attempt to return
	fallingBack atomic.Bool    // one fall-back attempt at a time for the whole pool
	lastResort  atomic.Bool    // prefer-standby: the pool is on a non-standby for want of a standby
	typical     []atomic.Int64 // per host: smoothed duration (ns) of its successful attempts
	roles       []atomic.Int32 // per host: the Role the last check found
	unfit       []atomic.Bool  // per host: the last check found a role the Target does not accept
	closed      atomic.Bool
}

// NewCluster validates opts and returns a Cluster on the primary.
// It returns an error when Hosts is empty or Dial is nil, or a count is negative.
func NewCluster(opts Options) (*Cluster, error) {
	if len(opts.Hosts) == 0 {
		return nil, errors.New("mysqlfailover: no hosts")
	}
	if opts.Dial == nil {
		return nil, errors.New("mysqlfailover: Options.Dial is nil")
	}
	if opts.RetriesAllDown < 0 || opts.SecondsBeforeRetryMaster < 0 || opts.QueriesBeforeRetryMaster < 0 || opts.HostTimeout < 0 || opts.UsedHostsPerRemoteDC < 0 {
		return nil, errors.New("mysqlfailover: negative retriesAllDown, secondsBeforeRetryMaster, queriesBeforeRetryMaster, hostTimeout or usedHostsPerRemoteDC")
	}
	if opts.DCs != nil && len(opts.DCs) != len(opts.Hosts) {
		return nil, errors.New("mysqlfailover: Options.DCs and Options.Hosts differ in length")
	}
	c := &Cluster{
		hosts:   append([]string(nil), opts.Hosts...),
		passes:  max(opts.RetriesAllDown, 1),
		secs:    time.Duration(opts.SecondsBeforeRetryMaster) * time.Second,
		queries: int64(opts.QueriesBeforeRetryMaster),
		timeout: opts.HostTimeout,
		dial:    opts.Dial,
		clock:   opts.Clock,
		onEvent: opts.OnEvent,
	}
	if c.clock == nil {
		c.clock = SystemClock{}
	}
	c.typical = make([]atomic.Int64, len(c.hosts))
	c.roles = make([]atomic.Int32, len(c.hosts))
	c.unfit = make([]atomic.Bool, len(c.hosts))
	c.dcs = make([]string, len(c.hosts))
	copy(c.dcs, opts.DCs)
	c.target = opts.Target
	if c.target == "" {
		c.target = dsn.TargetAny
	}
	c.policy = Rotation{}
	if opts.LocalDC != "" {
		c.primary = -1
		for i, dc := range c.dcs {
			if dc == "" || dc == opts.LocalDC {
				c.primary = i
				break
			}
		}
		if c.primary < 0 {
			return nil, fmt.Errorf("mysqlfailover: localDC %q matches no host", opts.LocalDC)
		}
		c.policy = NewDCAware(c.policy, c.hostInfos(), opts.LocalDC, opts.UsedHostsPerRemoteDC)
	}
	if c.target != dsn.TargetAny {
		c.policy = NewRoleAware(c.policy, c.target)
	}
	c.base = c.policy
	c.perRemote = opts.UsedHostsPerRemoteDC
	c.standbyIntent = c.target == dsn.TargetStandby || c.target == dsn.TargetReadOnly || c.target == dsn.TargetPreferStandby
	c.home = make([]bool, len(c.hosts))
	for i, h := range c.hostInfos() {
		c.home[i] = i == c.primary || c.standbyIntent && c.base.Distance(h) == DistanceLocal
	}
	if opts.Layer != nil {
		if c.policy = opts.Layer(c.policy); c.policy == nil {
			return nil, errors.New("mysqlfailover: Options.Layer returned a nil Policy")
		}
	}
	c.active.Store(int32(c.primary))
	return c, nil
}

// hostInfos returns what policies see of the hosts now.
func (c *Cluster) hostInfos() []HostInfo {
	hs := make([]HostInfo, len(c.hosts))
	for i := range hs {
		hs[i] = HostInfo{
			Index: i, Addr: c.hosts[i], DC: c.dcs[i],
			Role: Role(c.roles[i].Load()), ConnectTime: time.Duration(c.typical[i].Load()),
		}
	}
	return hs
}

// Primary returns the index of the primary: the first host of the DSN, or with localDC
// the first host of the local DC (or without a label). Fall-back returns to it.
func (c *Cluster) Primary() int { return c.primary }

// Home reports whether host is where the pool wants to be, so that a pool there has
// nothing to fall back to: the primary, or with targetSessionAttrs standby, read-only or
// prefer-standby any local host (unless prefer-standby had to take it as a last resort).
// It is on every statement's path: two loads.
func (c *Cluster) Home(host int) bool { return c.home[host] && !c.lastResort.Load() }

// distance rates h with the whole policy stack, but never nearer than the built-in
// layers do: a user layer may reorder hosts, not reach those that localDC ignores.
func (c *Cluster) distance(h HostInfo) Distance {
	return max(c.policy.Distance(h), c.base.Distance(h))
}

// Target returns the targetSessionAttrs that host attempts check (dsn.TargetAny when
// none).
func (c *Cluster) Target() dsn.TargetSessionAttrs { return c.target }

// Host returns the host:port of index i, or "" when i is out of range.
func (c *Cluster) Host(i int) string {
	if i < 0 || i >= len(c.hosts) {
		return ""
	}
	return c.hosts[i]
}

// Now returns the Cluster clock's time.
func (c *Cluster) Now() time.Time { return c.clock.Now() }

// Active returns the index of the host the pool uses now. Connections on another host
// move to it at their next safe point.
func (c *Cluster) Active() int { return int(c.active.Load()) }

// Close makes later walks fail with ErrClosed. It starts no goroutine and so stops none.
func (c *Cluster) Close() { c.closed.Store(true) }

// fallBackEnabled: both 0 disables fall-back (Connector/J enableFallBackToPrimaryHost).
func (c *Cluster) fallBackEnabled() bool { return c.secs > 0 || c.queries > 0 }

// NoteStatement counts one statement run while the pool is on a secondary, for
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

// FallBackDue reports whether the pool is on a secondary and SecondsBeforeRetryMaster
// have passed or QueriesBeforeRetryMaster statements ran since it left the primary (or
// since the last failed attempt to return). As Connector/J readyToFallBackToPrimaryHost,
// with one difference: after a failed attempt the statement count triggers the next one
// no sooner than RetryPause later. A busy pool runs 50 statements in milliseconds, and
// without the pause a dead primary would get a connection attempt every few milliseconds
// for as long as it stays down.
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

func (c *Cluster) emit(e Event) {
	if c.onEvent != nil {
		e.Time = c.clock.Now()
		c.onEvent(e)
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
// hosts, out-of-range indexes and repeats, and in the first pass with the failed host
// last (it has just failed; it is still tried, as in Connector/J's rotation).
func (c *Cluster) order(p plan, i int, buf []int) []int {
	w := Walk{Hosts: c.hostInfos(), Primary: c.primary, Start: p.start, Failed: p.failed, Pass: i}
	if i == 0 {
		w.PrimaryFirst, w.SkipPrimary = p.primaryFirst, p.skipPrimary
	}
	raw := c.policy.Plan(&w, nil)
	seen := make([]bool, len(c.hosts))
	out := buf[:0]
	last := -1
	for _, h := range raw {
		if h < 0 || h >= len(c.hosts) || seen[h] || c.distance(w.Hosts[h]) == DistanceIgnored {
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
	if i == 0 && p.join && p.start != c.primary && !c.unfit[p.start].Load() {
		// Once the pool has failed over, a connection that joins it goes to the pool's
		// host first (after the primary when fall-back is due), whatever the layers
		// prefer: a local host that is down must not cost every new connection an
		// attempt while the pool works elsewhere, and the return to the primary
		// follows the fall-back rules, not the first new connection.
		front := 0
		if p.primaryFirst && len(out) > 0 && out[0] == c.primary {
			front = 1
		}
		if k := slices.Index(out, p.start); k > front {
			copy(out[front+1:k+1], out[front:k])
			out[front] = p.start
		}
	}
	return out
}

// skipPrimaryNow reports whether a walk's first pass leaves the primary out: fall-back is
// enabled and not due, unless the walk looks for a writer (targetSessionAttrs read-write
// or primary), which after a promotion may well be the primary again.
func (c *Cluster) skipPrimaryNow(due bool) bool {
	return !due && c.fallBackEnabled() && !c.target.WriteIntent()
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
// It returns the connection and its host index, or a *NoHostAvailableError, or the
// data error (wrapped with the host) that ended the walk. It never returns an error that
// matches driver.ErrBadConn.
func (c *Cluster) Connect(ctx context.Context, setup SetupFunc) (driver.Conn, int, error) {
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

// Failover handles a communication error (cause) on a connection to host failed: it
// reports the failure and opens a physical connection to the next host, as Connector/J
// FailoverConnectionProxy.failOver: if another connection already moved the pool, to the
// pool's host; else if fall-back is due, to the primary first; else round-robin from the
// host after failed, skipping the primary in the first pass while fall-back is enabled,
// for up to RetriesAllDown passes with RetryPause between them, all within ctx. The
// policy (localDC, targetSessionAttrs, user layers) orders and filters each pass.
func (c *Cluster) Failover(ctx context.Context, failed int, cause error, setup SetupFunc) (driver.Conn, int, error) {
	c.emit(Event{Kind: EventHostFailed, Host: c.Host(failed), Err: NotBadConn(cause, "")})
	var p plan
	if int(c.active.Load()) != failed {
		p = c.joinPlan() // another connection already moved the pool: follow it
		p.failed = failed
	} else {
		p = plan{start: (failed + 1) % len(c.hosts), failed: failed}
		if failed != c.primary {
			due := c.FallBackDue()
			p.primaryFirst = due && !c.standbyIntent
			p.skipPrimary = c.skipPrimaryNow(due)
		}
	}
	defer c.probeOnce(&p)()
	return c.walk(ctx, p, cause, setup)
}

// NoteRole records role, found on host by a check outside the walk (a write rejected as
// read-only makes the connection read the role again), and reports whether it qualifies
// for the Target. A host that no longer qualifies is then left by the connection that
// found out, with Failover and a *RoleError as the cause, which moves the pool.
func (c *Cluster) NoteRole(host int, role Role) (qualifies bool) {
	return c.setRole(host, role)
}

// setRole records the role a check found on host and reports whether it qualifies.
func (c *Cluster) setRole(host int, role Role) bool {
	ok := Accepts(c.target, role)
	c.roles[host].Store(int32(role))
	// prefer-standby takes any host as a last resort: a connection there stays.
	c.unfit[host].Store(!ok && c.target != dsn.TargetPreferStandby)
	return ok
}

// Unfit reports whether the last role check of host found a role that targetSessionAttrs
// does not accept: a connection on it, even on the active host while a walk is still
// looking for a qualifying one, joins the walk before its next statement or transaction
// instead of sending it there. Always false with targetSessionAttrs any.
func (c *Cluster) Unfit(host int) bool { return c.unfit[host].Load() }

// Reconnect makes one bounded attempt on host for a connection whose session ended while
// the host may be fine (see SessionEnded). It does not move the pool; a failed attempt is
// returned as is, and the caller goes on with Failover.
func (c *Cluster) Reconnect(ctx context.Context, host int, setup SetupFunc) (driver.Conn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	conn, _, err := c.attempt(ctx, host, setup, false)
	return conn, err
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
	h := c.primary
	if c.standbyIntent {
		conn, h, err = c.findHome(ctx, from, setup)
	} else {
		conn, _, err = c.attempt(ctx, h, setup, false)
	}
	if err != nil {
		if ctx.Err() == nil { // the hosts failed, not the caller
			c.restartClocks(true)
			c.emit(Event{Kind: EventFallBackFailed, Host: c.Host(h), From: c.Host(from), Err: err})
		}
		return nil, -1, err
	}
	c.lastResort.Store(false)
	c.active.Store(int32(h))
	c.emit(Event{Kind: EventFallBack, Host: c.Host(h), From: c.Host(from)})
	return conn, h, nil
}

// findHome is TryFallBack's search with a standby target: one pass, in plan order, over
// the home hosts other than from, each attempt strict (no last resort). It returns the
// first that qualifies, or the last error (h is then the last host tried, or -1).
func (c *Cluster) findHome(ctx context.Context, from int, setup SetupFunc) (driver.Conn, int, error) {
	err := errors.New("mysqlfailover: no other local host to return to")
	last := -1
	for _, h := range c.order(plan{start: from, failed: -1}, 0, nil) {
		if h == from || !c.home[h] {
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
		return nil, -1, ErrClosed
	}
	n := len(c.hosts)
	errs := make([]error, n)
	tried := make([]bool, n)
	triedPrimary := false
	var spare driver.Conn
	spareHost := -1
	defer func() {
		if spare != nil {
			_ = spare.Close()
		}
	}()
	var buf [8]int
	order := buf[:0]
	passes := 0
	for i := 0; i < c.passes; i++ {
		if i > 0 {
			if err := c.clock.Sleep(ctx, RetryPause); err != nil {
				return nil, -1, c.noHost(passes, errs, tried, ctx.Err(), p)
			}
		}
		passes++
		order = c.order(p, i, order)
		for _, h := range order {
			if ctx.Err() != nil {
				return nil, -1, c.noHost(passes, errs, tried, ctx.Err(), p)
			}
			tried[h] = true
			triedPrimary = triedPrimary || h == c.primary
			conn, lastResort, err := c.attempt(ctx, h, setup, spare == nil)
			if err == nil && lastResort {
				spare, spareHost = conn, h
				errs[h] = &RoleError{Role: Role(c.roles[h].Load()), Wanted: c.target}
				continue
			}
			if err == nil {
				c.landed(h, triedPrimary, p.failed, cause, false)
				return conn, h, nil
			}
			errs[h] = err
			if ctx.Err() != nil {
				return nil, -1, c.noHost(passes, errs, tried, ctx.Err(), p)
			}
			var re *RoleError
			if Classify(err) != Communication && !errors.As(err, &re) && !(i == 0 && h == c.primary && p.primaryFirst) {
				// Access denied, unknown database...: every host would say the same
				// (pgx stops its walk on these too), and hiding it behind retries
				// would cost minutes. A fall-back probe of the primary is the
				// exception: the pool's own host is still there to go to.
				return nil, -1, fmt.Errorf("mysqlfailover: host %s: %w", c.hosts[h], err)
			}
		}
		if spare != nil {
			conn, h := spare, spareHost
			spare = nil
			c.landed(h, triedPrimary, p.failed, cause, true)
			return conn, h, nil
		}
	}
	return nil, -1, c.noHost(passes, errs, tried, nil, p)
}

func (c *Cluster) noHost(passes int, errs []error, tried []bool, ctxErr error, p plan) error {
	e := &NoHostAvailableError{Passes: passes, Hosts: make([]HostError, len(c.hosts)), Err: ctxErr}
	infos := c.hostInfos()
	for i, h := range c.hosts {
		e.Hosts[i] = HostError{Host: h, Err: errs[i]}
		if errs[i] == nil {
			switch {
			case c.base.Distance(infos[i]) == DistanceIgnored:
				e.Hosts[i].Skipped = fmt.Sprintf("ignored: dc %s is remote, and usedHostsPerRemoteDC=%d uses only the first %d host(s) of each remote DC",
					infos[i].DC, c.perRemote, c.perRemote)
			case c.distance(infos[i]) == DistanceIgnored:
				e.Hosts[i].Skipped = "ignored by a policy layer (driver.WithPolicy)"
			case ctxErr != nil:
				e.Hosts[i].Skipped = "the caller's context ended first"
			case i == c.primary && p.skipPrimary:
				e.Hosts[i].Skipped = "fall-back to the primary not due yet; it is tried from the second pass, and retriesAllDown allows one"
			case !tried[i]:
				e.Hosts[i].Skipped = "left out by the host policy"
			default:
				e.Hosts[i].Skipped = "not reached"
			}
		}
	}
	return e
}

// landed records that a walk ended on host h, lastResort when prefer-standby had to
// take a non-standby.
func (c *Cluster) landed(h int, triedPrimary bool, failed int, cause error, lastResort bool) {
	prev := int(c.active.Swap(int32(h)))
	prevHome := c.home[prev] && !c.lastResort.Swap(lastResort)
	if !c.Home(h) && (prevHome || triedPrimary) {
		// Left home, or the primary was tried and did not answer: the fall-back clock
		// starts now (Connector/J resets it when the walk began at or passed the primary).
		c.restartClocks(triedPrimary)
	}
	switch {
	case prev == h:
	case failed < 0 && c.Home(h) && !prevHome:
		// A new connection found fall-back due and home answering.
		c.emit(Event{Kind: EventFallBack, Host: c.hosts[h], From: c.hosts[prev]})
	default:
		e := Event{Kind: EventSwitch, Host: c.hosts[h], From: c.hosts[prev], Err: NotBadConn(cause, "")}
		if failed >= 0 {
			e.From = c.hosts[failed]
		}
		c.emit(e)
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
// lastResort true, for the walk to keep aside.
func (c *Cluster) attempt(ctx context.Context, h int, setup SetupFunc, lastResortOK bool) (conn driver.Conn, lastResort bool, err error) {
	actx, budget := ctx, c.timeout
	if dl, ok := ctx.Deadline(); ok {
		left := time.Until(dl)
		share := max(left/2, MinHostShare, 4*time.Duration(c.typical[h].Load()))
		if share < left && (budget == 0 || share < budget) {
			budget = share
		}
	}
	if budget > 0 {
		var cancel context.CancelFunc
		actx, cancel = context.WithTimeout(ctx, budget)
		defer cancel()
	}
	start := time.Now()
	conn, err = c.dial(actx, h)
	if err != nil {
		if actx.Err() != nil && ctx.Err() == nil {
			err = &HostTimeoutError{After: budget, Cause: err}
		} else {
			err = describeDialError(err)
		}
	}
	if err == nil && c.target != dsn.TargetAny {
		role, rerr := ReadRole(actx, conn)
		switch {
		case rerr != nil:
			if actx.Err() != nil && ctx.Err() == nil {
				rerr = &HostTimeoutError{After: budget, Cause: rerr}
			}
			err = NotBadConn(rerr, "role check failed")
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
			if actx.Err() != nil && ctx.Err() == nil {
				err = &HostTimeoutError{After: budget, Cause: err}
			}
			err = NotBadConn(err, "session set-up failed")
		}
	}
	if err == nil {
		d := int64(time.Since(start))
		if old := c.typical[h].Load(); old > 0 {
			d = (3*old + d) / 4
		}
		c.typical[h].Store(d)
	}
	c.emit(Event{Kind: EventConnect, Host: c.hosts[h], Err: err})
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
