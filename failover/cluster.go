package failover

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
)

// Primary is the index of the primary host: the first host of the DSN.
const Primary = 0

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
	passes  int
	secs    time.Duration
	queries int64
	timeout time.Duration
	dial    DialFunc
	clock   Clock
	onEvent func(Event)

	active      atomic.Int32   // index of the host the pool uses
	leftPrimary atomic.Int64   // clock time (UnixNano) when the pool left the primary or last failed to return
	ran         atomic.Int64   // statements run on a secondary since then
	probeFailed atomic.Int64   // clock time (UnixNano) of the last failed attempt to return
	fallingBack atomic.Bool    // one fall-back attempt at a time for the whole pool
	typical     []atomic.Int64 // per host: smoothed duration (ns) of its successful attempts
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
	if opts.RetriesAllDown < 0 || opts.SecondsBeforeRetryMaster < 0 || opts.QueriesBeforeRetryMaster < 0 || opts.HostTimeout < 0 {
		return nil, errors.New("mysqlfailover: negative retriesAllDown, secondsBeforeRetryMaster, queriesBeforeRetryMaster or hostTimeout")
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
	return c, nil
}

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
	if c.queries > 0 && c.active.Load() != Primary {
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
	if c.active.Load() == Primary || !c.fallBackEnabled() {
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

// plan is the order of one walk: pass p visits the rotation that starts at start, except
// that in the first pass the primary is either tried first (fall-back due) or skipped
// (fall-back enabled but not due; Connector/J nextHost without vouching). From the second
// pass on the primary is an ordinary member.
type plan struct {
	start        int
	primaryFirst bool
	skipPrimary  bool
}

func (p plan) pass(n, i int, buf []int) []int {
	buf = buf[:0]
	if i == 0 && p.primaryFirst {
		buf = append(buf, Primary)
	}
	for k := 0; k < n; k++ {
		h := (p.start + k) % n
		if h == Primary && i == 0 && (p.primaryFirst || p.skipPrimary) {
			continue
		}
		buf = append(buf, h)
	}
	return buf
}

// joinPlan is the order for a connection that joins the pool: a new connection, or one
// whose host is no longer the active one.
func (c *Cluster) joinPlan() plan {
	a := int(c.active.Load())
	if a == Primary {
		return plan{start: Primary}
	}
	due := c.FallBackDue()
	return plan{start: a, primaryFirst: due, skipPrimary: !due && c.fallBackEnabled()}
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
	return c.walk(ctx, p, -1, nil, setup)
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
// for up to RetriesAllDown passes with RetryPause between them, all within ctx.
func (c *Cluster) Failover(ctx context.Context, failed int, cause error, setup SetupFunc) (driver.Conn, int, error) {
	c.emit(Event{Kind: EventHostFailed, Host: c.Host(failed), Err: NotBadConn(cause, "")})
	var p plan
	if int(c.active.Load()) != failed {
		p = c.joinPlan()
	} else {
		p.start = (failed + 1) % len(c.hosts)
		if failed != Primary {
			due := c.FallBackDue()
			p.primaryFirst = due
			p.skipPrimary = !due && c.fallBackEnabled()
		}
	}
	defer c.probeOnce(&p)()
	return c.walk(ctx, p, failed, cause, setup)
}

// Reconnect makes one bounded attempt on host for a connection whose session ended while
// the host may be fine (see SessionEnded). It does not move the pool; a failed attempt is
// returned as is, and the caller goes on with Failover.
func (c *Cluster) Reconnect(ctx context.Context, host int, setup SetupFunc) (driver.Conn, error) {
	if c.closed.Load() {
		return nil, ErrClosed
	}
	return c.attempt(ctx, host, setup)
}

// TryFallBack is called by a connection on a secondary at a safe point (outside a
// transaction, before a statement). If fall-back is due and no other connection is
// already trying, it makes one attempt on the primary: on success the pool's active host
// becomes the primary and the new physical connection is returned; on failure the pool
// stays, the clocks restart, and (nil, err) is returned for the record: the caller's
// statement goes on where it was, silently. (nil, nil) means nothing was attempted.
// As Connector/J fallBackToPrimaryIfAvailable.
func (c *Cluster) TryFallBack(ctx context.Context, setup SetupFunc) (driver.Conn, error) {
	if !c.FallBackDue() || !c.fallingBack.CompareAndSwap(false, true) {
		return nil, nil
	}
	defer c.fallingBack.Store(false)
	from := int(c.active.Load())
	if from == Primary {
		return nil, nil
	}
	conn, err := c.attempt(ctx, Primary, setup)
	if err != nil {
		if ctx.Err() == nil { // the primary failed, not the caller
			c.restartClocks(true)
			c.emit(Event{Kind: EventFallBackFailed, Host: c.Host(Primary), From: c.Host(from), Err: err})
		}
		return nil, err
	}
	c.active.Store(Primary)
	c.emit(Event{Kind: EventFallBack, Host: c.Host(Primary), From: c.Host(from)})
	return conn, nil
}

// walk runs plan p. failed (-1 for none) and cause describe the failure that started it,
// for the switch event.
func (c *Cluster) walk(ctx context.Context, p plan, failed int, cause error, setup SetupFunc) (driver.Conn, int, error) {
	if c.closed.Load() {
		return nil, -1, ErrClosed
	}
	n := len(c.hosts)
	errs := make([]error, n)
	triedPrimary := false
	var buf [8]int
	order := buf[:0]
	passes := 0
	for i := 0; i < c.passes; i++ {
		if i > 0 {
			if err := c.clock.Sleep(ctx, RetryPause); err != nil {
				return nil, -1, c.noHost(passes, errs, ctx.Err(), p)
			}
		}
		passes++
		order = p.pass(n, i, order)
		for _, h := range order {
			if ctx.Err() != nil {
				return nil, -1, c.noHost(passes, errs, ctx.Err(), p)
			}
			triedPrimary = triedPrimary || h == Primary
			conn, err := c.attempt(ctx, h, setup)
			if err == nil {
				c.landed(h, triedPrimary, failed, cause)
				return conn, h, nil
			}
			errs[h] = err
			if ctx.Err() != nil {
				return nil, -1, c.noHost(passes, errs, ctx.Err(), p)
			}
			if Classify(err) != Communication && !(i == 0 && h == Primary && p.primaryFirst) {
				// Access denied, unknown database...: every host would say the same
				// (pgx stops its walk on these too), and hiding it behind retries
				// would cost minutes. A fall-back probe of the primary is the
				// exception: the pool's own host is still there to go to.
				return nil, -1, fmt.Errorf("mysqlfailover: host %s: %w", c.hosts[h], err)
			}
		}
	}
	return nil, -1, c.noHost(passes, errs, nil, p)
}

func (c *Cluster) noHost(passes int, errs []error, ctxErr error, p plan) error {
	e := &NoHostAvailableError{Passes: passes, Hosts: make([]HostError, len(c.hosts)), Err: ctxErr}
	for i, h := range c.hosts {
		e.Hosts[i] = HostError{Host: h, Err: errs[i]}
		if errs[i] == nil {
			switch {
			case ctxErr != nil:
				e.Hosts[i].Skipped = "the caller's context ended first"
			case i == Primary && p.skipPrimary:
				e.Hosts[i].Skipped = "fall-back to the primary not due yet; it is tried from the second pass, and retriesAllDown allows one"
			default:
				e.Hosts[i].Skipped = "not reached"
			}
		}
	}
	return e
}

// landed records that a walk ended on host h.
func (c *Cluster) landed(h int, triedPrimary bool, failed int, cause error) {
	prev := int(c.active.Swap(int32(h)))
	if h != Primary && (prev == Primary || triedPrimary) {
		// Left the primary, or it was tried and did not answer: the fall-back clock
		// starts now (Connector/J resets it when the walk began at or passed the primary).
		c.restartClocks(triedPrimary)
	}
	switch {
	case prev == h:
	case failed < 0 && h == Primary:
		// A new connection found fall-back due and the primary answering.
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

// attempt makes one bounded host attempt: dial, then setup. The bound is HostTimeout and,
// when the caller's context has a deadline, a share of the time left: half of it, but at
// least MinHostShare and at least four times what this host's attempts usually take. A
// hung host must not eat a short request deadline whole, or a pool whose callers all
// carry deadlines below HostTimeout would never get past a frozen primary (the caller's
// own deadline is never blamed on a host); and a host that is merely far away (a slow
// TLS handshake across regions) must not be taken for a hung one. When the share is not
// shorter than the time left, the caller's deadline alone bounds the attempt.
func (c *Cluster) attempt(ctx context.Context, h int, setup SetupFunc) (driver.Conn, error) {
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
	conn, err := c.dial(actx, h)
	switch {
	case err != nil && actx.Err() != nil && ctx.Err() == nil:
		err = &HostTimeoutError{After: budget, Cause: err}
	case err != nil:
		err = describeDialError(err)
	case setup != nil:
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
	return conn, err
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
