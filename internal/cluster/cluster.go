package cluster

// The Cluster itself: one per connector, shared by every connection the connector opens.
// This file holds its construction from the DSN's Config and an Env, its lifecycle
// (Close), the accessors the driver uses, and the reporting of events (emit). Each
// mechanism has its own file; doc.go lists them.

import (
	"context"
	"database/sql/driver"
	"errors"
	"log/slog"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/policy"
)

// DialFunc opens a physical connection to host (an id: Config.Hosts[i] is id i; hosts a
// HostListProvider adds get the next ids, see Cluster.Host). The context carries the
// per-host deadline and the caller's cancellation.
type DialFunc func(ctx context.Context, host int) (driver.Conn, error)

// SetupFunc restores a logical connection's session state (read-only first, then the
// current database) on a fresh physical connection to host, inside the same bounded host
// attempt as the dial. A communication error moves the walk on to the next host; any
// other error ends the walk.
type SetupFunc func(ctx context.Context, conn driver.Conn, host int) error

// Env is what a Cluster needs besides its configuration: what no DSN can say. Dial is
// required.
type Env struct {
	// Dial opens physical connections.
	Dial DialFunc
	// Clock is the time source of every wait and every clock reading (see Clock); nil
	// means the system clock.
	Clock Clock
	// OnEvent, if set, receives every event, synchronously and possibly from several
	// goroutines at once: it must be fast and must not block.
	OnEvent func(failover.Event)
	// Logger, if set, receives every event as a structured record (state changes at
	// Info, failures at Warn, connection attempts at Debug). nil: silent.
	Logger *slog.Logger
	// Layer, if set, wraps the built-in policy (Rotation, then DCAware with localDC,
	// then RoleAware with targetSessionAttrs) with the caller's own layers; see
	// policy.Policy. It must not return nil.
	Layer func(child policy.Policy) policy.Policy
	// Provider, if set, is polled every checkInterval for the host list (not at all
	// with checkInterval 0, unless the caller runs Check).
	Provider failover.HostListProvider
	// Abort, if set, is called with a host that probes declared down while the pool was
	// on it, or after a connection's walk had moved the pool off it for a failure: it
	// must close every physical connection to that host so that statements in flight
	// (and handshakes) fail at once (the driver closes their sockets).
	Abort func(host int)
	// MapAddr, if set, maps an address discovery found (discoverHosts: host:port as the
	// cluster reported it) to the one to dial, "" to leave the member out. It must be
	// fast and safe for concurrent use.
	MapAddr func(reported string) string
	// Socket, if set, returns what the connector's socket tracker knows of a physical
	// connection that Dial returned (nil when it knows nothing of it): the bytes written
	// to its socket, which tell whether a failed request was sent, and the server's id of
	// its session, which Settle kills.
	Socket func(driver.Conn) *Socket
	// Answers, if set, returns a count that moves whenever a session of the connector
	// to addr reads from its socket after the server's greeting (the socket tracker):
	// a sign that the host answers, which keeps a closed handshake from being blamed on
	// it (storm.go). It must be fast and safe for concurrent use.
	Answers func(addr string) uint64
	// Borrow, if set, lends a probe an idle pooled session of host: its physical
	// connection, on which no statement runs until giveBack is called (the connection's
	// next user waits for it), and giveBack, which the probe calls once, with broken true
	// when its round trip failed or timed out there: the lender then closes that session
	// (its protocol state is unknown) and the connection's next user gets a new one. It
	// returns a nil conn when the pool holds no idle session of host that may be lent.
	// It must be fast and must not block.
	Borrow func(host int) (conn driver.Conn, giveBack func(broken bool))
	// Waiting, if set, returns when the oldest read still waiting for an answer on a
	// socket to addr (host:port as listed) started, on Clock; zero when none waits. Only
	// the sockets of the pool's connections count, never those of probes and idle
	// connections. With checkInterval > 0 and calmCheckInterval > 0 the monitor calls it
	// every checkInterval/DefaultActiveProbes for each host while it watches traffic (see
	// ArmWait): it must be cheap and safe for concurrent use. A wait that lasts that long
	// puts the host on the monitor's alert cadence (cadence.go). nil: traffic is not
	// watched, and a host that froze while it looked well is found by its next calm
	// probe.
	Waiting func(addr string) time.Time
	// ArmWait, if set with Waiting, arms wake: the next read that starts to wait for an
	// answer on a socket of the pool's connections (as Waiting counts them) calls wake,
	// once, from the reading goroutine (wake never blocks), and the arming ends. When a
	// read waits already it keeps nothing and reports true. The monitor arms it instead
	// of looking at the waits every checkInterval/DefaultActiveProbes while none has been
	// seen for DefaultIdleAfter: an idle instance then wakes for its calm probes only.
	// It must be cheap on the read's side (an atomic load). nil: the monitor looks every
	// checkInterval/DefaultActiveProbes while it watches traffic.
	ArmWait func(wake func()) (waiting bool)
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
	// cfg is the configuration, read where an option is used and never written: the
	// failover options (retriesAllDown, secondsBeforeRetryMaster,
	// queriesBeforeRetryMaster, hostTimeout, targetSessionAttrs, localDC,
	// usedHostsPerRemoteDC, checkInterval, failoverDelay, switchBackDelay) and the
	// first host list. The rest of it (MySQL, FailOverReadOnly, ReadOnly, hostsURL) is
	// the driver's.
	cfg settings
	env Env // as given to New, with the Clock filled in

	// mu is the Cluster's one lock. It serialises every change of the pool's position
	// (pos; see position.go), the host list included, and guards the claim of the one
	// fall-back attempt (fallingBack), the walk in flight after a failure (flight) and
	// the monitor's start and stop (stop). It is never held while dialing, sleeping or
	// reporting (events, Abort, the provider); the only calls out under it are the
	// Clock's Now and newTopo's call of Env.Layer for a new host list.
	mu          sync.Mutex
	pos         atomic.Pointer[position] // the position now: replaced under mu, never modified
	fallingBack bool                     // under mu: one fall-back attempt at a time for the whole pool
	flight      *flight                  // under mu: the walk in progress after a failure, if any
	stop        context.CancelFunc       // under mu: stops the monitor (nil: not started)

	// ran counts the statements run away from home since the fall-back clock last
	// started (queriesBeforeRetryMaster). It stays an atomic beside the position: it
	// changes with every statement while the pool is away, and a lock or a new position
	// per statement would serialise the whole pool on it. It is reset under mu together
	// with the clock; a statement counted in between counts for one run or the other.
	ran atomic.Int64
	// closed is set once, by Close, and read without the lock at the start of every
	// walk, check and recovery.
	closed atomic.Bool
	// news ends the pause of the walks between two passes when the pool moved or a host
	// came to qualify (walk.go).
	news passNews
	// writeRefusals counts the callers' errors that say a write could not be served
	// (NoteWriteRefused; Stats().WriteRefusals).
	writeRefusals atomic.Int64

	// inUse is held for reading by every operation that uses host ids of a list it
	// loaded for longer than one call (walks, checks, fall-backs, monitor rounds), so
	// that SetHosts gives no id away under it. Its writer only ever uses TryLock, so a
	// reader never waits for a writer to come and may take it again inside another
	// reader.
	inUse sync.RWMutex

	mon   monitor   // the monitor: probes, cadence, decisions (monitor.go)
	att   attempter // one host attempt, patient with a full host or a storm (attempt.go)
	walks walker    // the host walk, the flight's lead, the return home (walk.go)
	rec   recorder  // what attempts and probes learn of a host (health.go, ready.go)
	lists hostLists // the host list's changes (topology.go)

	rep      replicaState // replica reads (replicas.go)
	replicas Replicas     // their exported side (replicas.go)
	rpool    replicaPool  // the replica sessions the pool's connections share (replicapool.go)
	tx       txCounters   // transactions run again (txcount.go)

	writers writerState // the last look at the writable hosts (writers.go)
	disc    discovery   // the members the cluster reports (discover.go)

	// kind is the cluster type (a Kind): the DSN's, or the first one a server reported
	// (ready.go). It is an atomic beside the position: set at most once after New, read
	// by every attempt.
	kind atomic.Int32

	// callerErrors counts the errors returned to callers for a host that failed,
	// refused or was missing (NoteCallerError; Stats().CallerErrors).
	callerErrors atomic.Int64
	// logs is what the logger remembers of the failures that repeat (event.go), so
	// that an outage is told once per host and state.
	logs logRuns
}

// New returns a Cluster over cfg's hosts, on the primary. It keeps cfg and reads its
// failover options where they are used, so the caller must not change cfg afterwards
// (the Connector gives it the validated clone it keeps itself); only the failover
// options and Hosts are read. It checks what the engine relies on, not the whole of
// cfg.Validate: it returns an error when cfg is nil or has no hosts, env.Dial is nil, a
// count or duration is negative, LocalDC matches no host, or env.Layer returns nil.
func New(cfg *dsn.Config, env Env) (*Cluster, error) {
	if cfg == nil {
		return nil, errors.New("mysqlfailover: nil *dsn.Config")
	}
	if len(cfg.Hosts) == 0 {
		return nil, errors.New("mysqlfailover: no hosts")
	}
	if env.Dial == nil {
		return nil, errors.New("mysqlfailover: Env.Dial is nil")
	}
	if cfg.RetriesAllDown < 0 || cfg.SecondsBeforeRetryMaster < 0 || cfg.QueriesBeforeRetryMaster < 0 || cfg.HostTimeout < 0 ||
		cfg.UsedHostsPerRemoteDC < 0 || cfg.CheckInterval < 0 || cfg.FailoverDelay < 0 || cfg.SwitchBackDelay < 0 {
		return nil, errors.New("mysqlfailover: negative retriesAllDown, secondsBeforeRetryMaster, queriesBeforeRetryMaster, hostTimeout, usedHostsPerRemoteDC, checkInterval, failoverDelay or switchBackDelay")
	}
	if env.Clock == nil {
		env.Clock = SystemClock
	}
	c := &Cluster{cfg: settings{cfg}, env: env}
	c.mon.c, c.mon.cfg, c.mon.env = c, c.cfg, &c.env
	c.att.c, c.att.cfg, c.att.env = c, c.cfg, &c.env
	c.walks.c, c.walks.cfg, c.walks.env = c, c.cfg, &c.env
	c.rec.c, c.rec.cfg, c.rec.env = c, c.cfg, &c.env
	c.lists.c, c.lists.cfg, c.lists.env = c, c.cfg, &c.env
	c.replicas.c = c
	if calm := c.cfg.calmEvery(); calm > 0 {
		c.mon.calmPhase = rand.N(calm) // each connector its own phase: a fleet does not probe in step
	}
	c.kind.Store(int32(kindOf(cfg.Cluster)))
	hosts := make([]*hostState, len(cfg.Hosts))
	list := make([]int, len(cfg.Hosts))
	for i, h := range cfg.Hosts {
		hosts[i], list[i] = newHostState(h.Addr(), h.DC), i
	}
	t, err := c.lists.newTopo(hosts, list, -1)
	if err != nil {
		return nil, err
	}
	c.publish(position{t: t, active: t.primary}) // not shared yet: no lock needed
	c.rpool.ids, c.rpool.size = c, cfg.ReplicaPoolSize
	c.writers.cl, c.writers.rec, c.writers.cfg, c.writers.dial = c, &c.rec, c.cfg, env.Dial
	c.rep.cfg, c.rep.pos, c.rep.kind, c.rep.emit = c.cfg, &c.pos, &c.kind, c.emit
	c.disc.init(c.cfg, env.MapAddr)
	return c, nil
}

// settings is the configuration and what follows from it alone: the walk's passes, the
// probes' cadence and timeouts, whether fall-back is on. It embeds the *dsn.Config.
type settings struct{ *dsn.Config }

// passes is the number of passes of a walk: retriesAllDown, and 0 counts as 1, one full
// pass. (Connector/J then tries a single host, a quirk not copied.)
func (cfg settings) passes() int { return max(cfg.RetriesAllDown, 1) }

// standbyIntent reports whether the target asks for a standby (standby, read-only,
// prefer-standby): home is then any local host, and the way home is TryFallBack's
// search, not the primary.
func (cfg settings) standbyIntent() bool {
	switch cfg.target() {
	case attrs.Standby, attrs.ReadOnly, attrs.PreferStandby:
		return true
	}
	return false
}

// Host returns the host:port of id i, or "" when there is no such host.
func (c *Cluster) Host(i int) string {
	if h := c.topo().host(i); h != nil {
		return h.addr
	}
	return ""
}

// Member reports whether host (an id) is in the current host list.
func (c *Cluster) Member(host int) bool {
	t := c.topo()
	return host >= 0 && host < len(t.member) && t.member[host]
}

// Listed reports whether addr (host:port, as Host returns it) is in the current host
// list.
func (c *Cluster) Listed(addr string) bool {
	t := c.topo()
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
func (c *Cluster) Primary() int { return c.topo().primary }

// Target returns the targetSessionAttrs that host attempts check (attrs.Any when
// none).
func (c *Cluster) Target() string { return c.cfg.target() }

// target is Target.
func (cfg settings) target() string {
	if t := cfg.TargetSessionAttrs; t != "" {
		return t
	}
	return attrs.Any
}

// Now returns the Cluster clock's time.
func (c *Cluster) Now() time.Time { return c.env.Clock.Now() }

// Release tells the Cluster that a physical connection to host that it returned (from
// Connect, Failover, Recover or TryFallBack) is closed. The id of a host that has left
// the list is given to a new host only once every such connection is released.
func (c *Cluster) Release(host int) {
	if h := c.topo().host(host); h != nil {
		h.refs.Add(-1)
	}
}

// Close makes later walks fail with ErrClosed and stops the monitor, waiting for its
// goroutines (probe connections are closed) before it returns; a provider with a
// CloseIdleConnections method (HTTPHostList) has it called.
func (c *Cluster) Close() {
	c.mu.Lock()
	c.closed.Store(true)
	stop := c.stop
	c.mu.Unlock()
	if stop != nil {
		stop()
	}
	c.mon.run.Wait()
	c.mon.probes.closeAll() // also those of Check calls made without Start
	c.rpool.close()
	if p, ok := c.env.Provider.(interface{ CloseIdleConnections() }); ok {
		p.CloseIdleConnections() // HTTPHostList: no keep-alive goroutine outlives Close
	}
}

// emit reports e, stamped with the clock's time, to Env.OnEvent and Env.Logger. It is
// never called with a lock held: both are the caller's code.
func (c *Cluster) emit(e failover.Event) {
	if c.cfg.CheckInterval > 0 && c.cfg.CalmCheckInterval > 0 {
		c.mon.alerts.noteEvent(e, c.env.Clock.Now())
	}
	if c.env.OnEvent == nil && c.env.Logger == nil {
		return
	}
	e.Time = c.env.Clock.Now()
	if c.env.OnEvent != nil {
		c.env.OnEvent(e)
	}
	if c.env.Logger != nil {
		c.logs.log(c.env.Logger, c.env.Clock, e)
	}
}
