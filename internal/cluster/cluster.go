package cluster

import (
	"context"
	"database/sql/driver"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
)

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
	// the counter; after a failed attempt the count triggers no sooner than
	// DefaultFallBackPause later). Both 0 disables fall-back, and the primary becomes an ordinary member of the
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

// Target returns the targetSessionAttrs that host attempts check (dsn.TargetAny when
// none).
func (c *Cluster) Target() dsn.TargetSessionAttrs { return c.target }

// Now returns the Cluster clock's time.
func (c *Cluster) Now() time.Time { return c.clock.Now() }

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
