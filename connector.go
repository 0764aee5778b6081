package mysqlfailover

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/conn"
	"github.com/mysqlfailover/mysqlfailover/policy"
)

// Connector is the driver.Connector of one pool: it owns the failover state (the host
// list, the active host, host health and, with checkInterval > 0, the monitor) that every
// connection it opens shares. It implements io.Closer; sql.DB.Close calls Close.
// ConnectorOf finds it behind any *sql.DB.
type Connector struct {
	cfg     *dsn.Config
	conns   conn.Config // what every connection gets of cfg (conn.ConfigFrom)
	cluster *cluster.Cluster
	tracker *tracker
	shared  *sharedConnector // set when Driver.Open shares it (see shared.go)
	single  bool             // one host, no host list provider: go-sql-driver's errors
}

// Option configures a Connector beyond the DSN.
type Option func(*options)

type options struct {
	onEvent  func(failover.Event)
	clock    cluster.Clock
	dial     cluster.DialFunc
	layers   []func(policy.Policy) policy.Policy
	logger   *slog.Logger
	provider failover.HostListProvider
	mapAddr  func(string) string                  // WithDiscoveryMap
	socket   func(sqldriver.Conn) *cluster.Socket // with a test dialer: its sockets
}

// WithLogger sets the structured logger that receives every state change: host states
// (up, suspect, down), switches, fall-backs, probes that failed, aborts and host lists
// (Info for changes, Warn for failures, Debug for each connection attempt and passed
// probe). An outage is told once per host and state: a failure that repeats while its
// host stays down (a failed fall-back, a failed probe, another connection's report of
// the same dead host) goes out at Warn once, then at Debug, with a reminder at Warn at
// most once a minute (attribute "repeated": how many since), until the host is up
// again. go-sql-driver's own log lines for the pool's connections go to l too, at Debug,
// with the attributes source "go-sql-driver" and host, instead of go-sql-driver's
// logger (stderr by default), unless the DSN's go-sql-driver configuration
// (Config.MySQL.Logger) has a logger other than go-sql-driver's default. Records never
// contain a password or the hostsToken. Without it the driver is silent, and
// go-sql-driver logs as it would alone.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) { o.logger = l }
}

// WithHostListProvider makes the connector poll p every checkInterval for its host list,
// instead of the DSN's hostsURL (the DSN's host list is the first list, and stays until
// p answers). A failing or invalid answer keeps the last good list and is reported
// (failover.EventHostList, the logger); the pool is never emptied. It needs
// checkInterval > 0: NewConnector fails otherwise.
func WithHostListProvider(p failover.HostListProvider) Option {
	return func(o *options) { o.provider = p }
}

// WithDiscoveryMap maps the addresses discovery finds (discoverHosts) to the ones to
// dial, where the cluster reports an address this client cannot reach (NAT, a proxy, a
// container's own address): fn receives host:port as the cluster reported it (a
// replica's report_host and report_port, a Galera node's wsrep_node_incoming_address,
// a group member's MEMBER_HOST and MEMBER_PORT) and returns the address to use, "" to
// leave the member out. Set those report fields on the servers first: they are the
// cluster's own way to say where a member is reached. A member that reaches a host the
// list already has (the same server_id, server_uuid or Galera node UUID) is that host
// whatever its address. fn is called once per member and read (every checkInterval): it
// must be fast and safe for concurrent use. Without discoverHosts it is not called.
func WithDiscoveryMap(fn func(reported string) string) Option {
	return func(o *options) { o.mapAddr = fn }
}

// WithEventHook sets a function that receives every failover.Event: each connection
// attempt (host, ok or error), each host failure, switch and fall-back, and with
// checkInterval > 0 host state changes, failed probes, aborts and host lists. It is called
// synchronously, possibly from several goroutines at once, so it must be fast and must
// not block. Events never contain a password. WithEventHook may be given more than once
// (your own hook and a metrics collector's, for example): every hook receives every
// event, in the order the options were given. A nil fn adds nothing.
func WithEventHook(fn func(failover.Event)) Option {
	return func(o *options) {
		switch prev := o.onEvent; {
		case fn == nil:
		case prev == nil:
			o.onEvent = fn
		default:
			o.onEvent = func(e failover.Event) { prev(e); fn(e) }
		}
	}
}

// WithPolicy adds a layer on top of the host policy, as the DataStax Java driver's
// TokenAwarePolicy wraps a child policy: layer receives the policy built from the DSN
// (Connector/J's rotation, then the DC-aware layer with localDC, then the role-aware
// layer with targetSessionAttrs) and returns the policy to use, which typically rates
// hosts with the child's Distance and reorders the child's Plan (see policy.Policy and
// the example LowestConnectTimeFirst). Several WithPolicy options stack in the order
// given, the last one outermost. A layer that returns nil makes NewConnector fail.
func WithPolicy(layer func(child policy.Policy) policy.Policy) Option {
	return func(o *options) { o.layers = append(o.layers, layer) }
}

// NewConnector validates a copy of cfg (the caller's struct is never changed) and returns
// a Connector for sql.OpenDB. No connection is opened, and no goroutine started, until
// database/sql asks for the first connection; with checkInterval > 0 the monitor starts
// then and runs until Close (sql.DB.Close calls it).
// It returns cfg.Validate's error for a bad configuration, an error naming the network
// when it is not tcp, tcp4, tcp6 or unix and no dial function is registered for it with
// mysql.RegisterDialContext (nor set in cfg.MySQL.DialFunc), an error for a nil option or a
// nil WithPolicy layer, an error when a host's
// go-sql-driver configuration is rejected (for example an unknown TLS config name), when
// hostsURL is rejected, when a host list provider is given without checkInterval > 0, and
// when a WithPolicy layer returns nil.
func NewConnector(cfg *dsn.Config, opts ...Option) (*Connector, error) {
	if cfg == nil {
		return nil, fmt.Errorf("mysqlfailover: nil *dsn.Config")
	}
	cfg = cfg.Clone()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	o, err := takeOptions(opts)
	if err != nil {
		return nil, err
	}
	// One host and no host list: nothing to fail over to. As in Connector/J, whose
	// failover (and retriesAllDown) applies to URLs with several hosts, the walk makes
	// one pass, and Connect returns the host's own error, as go-sql-driver would.
	single := len(cfg.Hosts) == 1 && cfg.HostsURL == "" && o.provider == nil && !cfg.DiscoverHosts
	if single {
		cfg.RetriesAllDown = 0
	}
	tr := &tracker{now: cluster.SystemClock.Now, stampAnswers: cfg.CheckInterval > 0}
	if o.clock != nil {
		tr.now = o.clock.Now
	}
	var cl *cluster.Cluster
	dial, socket := o.dial, o.socket
	if dial == nil {
		if dial, err = hostDialer(cfg, tr, &cl, o.logger); err != nil {
			return nil, err
		}
		socket = tr.socket
	}
	provider, err := hostProvider(cfg, o.provider)
	if err != nil {
		return nil, err
	}
	// The engine reads the failover options from cfg itself (cfg is this connector's own
	// clone, never changed after Validate); Env carries what no DSN can say. With probes,
	// a probe borrows an idle pooled session of its host (lender) before it uses a
	// session of its own.
	var lender *conn.Lender
	var borrow func(int) (sqldriver.Conn, func(bool))
	if cfg.CheckInterval > 0 {
		lender = &conn.Lender{Now: tr.now, MinIdle: conn.DefaultLendIdle}
		borrow = lender.Borrow
	}
	cl, err = cluster.New(cfg, cluster.Env{
		Dial:     dial,
		Clock:    o.clock,
		OnEvent:  o.onEvent,
		Logger:   o.logger,
		Layer:    stackLayers(o.layers),
		Provider: provider,
		MapAddr:  o.mapAddr,
		Abort: func(i int) {
			tr.closeAll(cl.Host(i))
		},
		Socket:  socket,
		Answers: tr.answers,
		Borrow:  borrow,
		Waiting: tr.waiting,
		ArmWait: tr.armWait,
	})
	if err != nil {
		return nil, err
	}
	c := &Connector{cfg: cfg, cluster: cl, tracker: tr, single: single}
	c.conns = conn.ConfigFrom(cfg, c)
	c.conns.Lender = lender
	if o.dial != nil {
		c.tracker = nil // a test dialer: the tracker sees no socket (the Abort closure keeps its own)
	}
	return c, nil
}

// takeOptions applies opts in order; a nil option or a nil WithPolicy layer is an error
// naming its position.
func takeOptions(opts []Option) (*options, error) {
	var o options
	for i, opt := range opts {
		if opt == nil {
			return nil, fmt.Errorf("mysqlfailover: option %d of NewConnector is nil", i+1)
		}
		opt(&o)
	}
	for i, l := range o.layers {
		if l == nil {
			return nil, fmt.Errorf("mysqlfailover: WithPolicy layer %d is nil", i+1)
		}
	}
	return &o, nil
}

// hostDialer returns the engine's dial function: host i's go-sql-driver connector
// (made when first needed, also for hosts a host list adds) through tr. It fails when the
// network cannot be dialled or a host's go-sql-driver configuration is rejected. *cl is
// the engine, set once it is made (the dial and the drop of unlisted hosts ask it);
// logger is WithLogger's (nil: none), which go-sql-driver's lines go to (driverLogger).
func hostDialer(cfg *dsn.Config, tr *tracker, cl **cluster.Cluster, logger *slog.Logger) (func(context.Context, int) (sqldriver.Conn, error), error) {
	if err := checkDialable(cfg); err != nil {
		return nil, err
	}
	hc := &hostConnectors{cfg: cfg, tracker: tr, logger: logger, byAddr: map[string]sqldriver.Connector{}}
	for i := range cfg.Hosts {
		if _, err := hc.get(cfg.Hosts[i].Addr()); err != nil {
			return nil, err
		}
	}
	hc.listed = func(addr string) bool { return (*cl).Listed(addr) }
	return func(ctx context.Context, i int) (sqldriver.Conn, error) {
		c, err := hc.get((*cl).Host(i))
		if err != nil {
			return nil, err
		}
		var tc *trackedConn
		phys, err := c.Connect(withDialed(ctx, &tc))
		if err == nil && tc != nil {
			tr.bind(phys, tc)
		}
		return phys, closedByServer(ctx, err, tc)
	}, nil
}

// hostProvider returns the host list provider: p (WithHostListProvider), else hostsURL's,
// else nil. A provider needs checkInterval > 0, as it is polled every checkInterval.
func hostProvider(cfg *dsn.Config, p failover.HostListProvider) (failover.HostListProvider, error) {
	if p == nil && cfg.HostsURL != "" {
		hp, err := cluster.NewHTTPHostList(cfg.HostsURL, cfg.HostsToken, cfg.HostsAllowHTTP, nil)
		if err != nil {
			return nil, err
		}
		p = hp
	}
	if p != nil && cfg.CheckInterval <= 0 {
		return nil, fmt.Errorf("mysqlfailover: a host list provider needs checkInterval > 0 (it is polled every checkInterval)")
	}
	return p, nil
}

// stackLayers returns the WithPolicy layers as one, the first innermost, or nil for none.
// The stack returns nil when a layer does (NewConnector then fails).
func stackLayers(layers []func(policy.Policy) policy.Policy) func(policy.Policy) policy.Policy {
	if len(layers) == 0 {
		return nil
	}
	return func(p policy.Policy) policy.Policy {
		for _, l := range layers {
			if p = l(p); p == nil {
				return nil
			}
		}
		return p
	}
}

// hostConnectors makes and keeps one go-sql-driver connector per host address, also for
// hosts a host list provider adds later. When it makes one, it drops those of addresses
// that listed (when set) says are no longer in the host list: a connector holds only its
// configuration, and one is made again if its host comes back.
type hostConnectors struct {
	cfg     *dsn.Config
	tracker *tracker
	logger  *slog.Logger // WithLogger's, or nil
	listed  func(addr string) bool
	mu      sync.Mutex
	byAddr  map[string]sqldriver.Connector
}

func (h *hostConnectors) get(addr string) (sqldriver.Connector, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c := h.byAddr[addr]; c != nil {
		return c, nil
	}
	if h.listed != nil {
		for a := range h.byAddr {
			if !h.listed(a) {
				delete(h.byAddr, a)
			}
		}
	}
	m := hostConfig(h.cfg, addr)
	m.DialFunc = h.tracker.dialFunc(m.DialFunc)
	m.Logger = driverLogger(m.Logger, h.logger, addr)
	c, err := mysql.NewConnector(m)
	if err != nil {
		return nil, fmt.Errorf("mysqlfailover: host %s: %w", addr, err)
	}
	h.byAddr[addr] = c
	return c, nil
}

// Connect implements driver.Connector: it opens a connection on the pool's host (the
// primary unless the pool has failed over), walking the host list as needed within ctx.
// It never returns driver.ErrBadConn (database/sql would repeat the whole walk); when no
// host answers it returns a *failover.NoHostAvailableError naming every host and its
// cause, and a data error from a host (access denied, unknown database) ends the walk and
// is returned wrapped with the host. With one host and no host list (hostsURL or
// WithHostListProvider) there is no failover: one attempt (retriesAllDown does not
// apply, as in Connector/J), and a host that does not answer returns its own error, as
// go-sql-driver does (the dial function's, a *net.OpError, mysql.ErrNoTLS, ...); a host
// that answers with the wrong role for targetSessionAttrs returns the
// *failover.NoHostAvailableError, which names it and its role. After Close it returns
// failover.ErrClosed.
func (c *Connector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	if c.shared != nil {
		// Driver.Open's shared Connector counts its open connections (see openLinger);
		// conns.Closed releases this one.
		c.shared.reg.ref(c.shared)
	}
	c.cluster.Start() // the monitor, with checkInterval > 0: from the first connection on
	cn, err := conn.Open(ctx, c.cluster, c.conns)
	if err != nil {
		if c.shared != nil {
			c.shared.reg.release(c.shared)
		}
		return nil, c.hostError(err)
	}
	return cn, nil
}

// hostError returns, for a Connector of one host, the host's own error instead of the
// *failover.NoHostAvailableError that names it (when the host was tried and the caller's
// context did not end the walk): what go-sql-driver returns for the same DSN. A host
// passed over for its role (targetSessionAttrs) has no error of go-sql-driver's to
// return: the NoHostAvailableError stays, naming the host and its role
// ("db1:3306: skipped: role is standby, wanted read-write"), and SafeToRetry says
// RetryStatement (nothing was sent).
func (c *Connector) hostError(err error) error {
	var nh *failover.NoHostAvailableError
	if !c.single || !errors.As(err, &nh) || nh.Err != nil || len(nh.Hosts) != 1 || nh.Hosts[0].Err == nil {
		return err
	}
	var re *cluster.RoleError
	if errors.As(nh.Hosts[0].Err, &re) {
		return err
	}
	return nh.Hosts[0].Err
}

// Driver implements driver.Connector.
func (c *Connector) Driver() sqldriver.Driver { return drv{c: c} }

// Close stops the connector: later Connect calls fail with failover.ErrClosed, and the
// monitor (checkInterval > 0) stops; Close waits for its goroutines and closes the probe
// connections. Connections already open are closed by database/sql. Close always
// returns nil. sql.DB.Close calls it, so a Connector given to sql.OpenDB belongs to
// that one sql.DB: a second sql.DB over the same Connector fails with ErrClosed once
// the first is closed. Closing the Connector that Driver.Open shares between the
// connections of a DSN (it closes itself 5 s after its last connection) also drops it: the next Driver.Open of that DSN
// makes a new one.
func (c *Connector) Close() error {
	if c.shared != nil {
		c.shared.reg.forget(c.shared)
	}
	c.cluster.Close()
	return nil
}

// SwitchTo moves the pool to host (host:port as in the host list) for an operator: one
// bounded attempt checks the host (and its role with targetSessionAttrs), and then every
// connection moves at its next safe point, never inside a transaction, without an error
// for its caller. The host becomes the primary (the one the pool returns to, and where
// failOverReadOnly does not apply) until the next SwitchTo or a host list that differs
// from the current one. It returns an error naming the host when it is not in the list,
// the host policy ignores it (localDC's remote hosts beyond usedHostsPerRemoteDC are never
// connected to), or it does not answer; ctx's error when ctx has already ended; and
// failover.ErrClosed after Close. The pool then stays. As Pulsar's
// ControlledClusterFailover.
func (c *Connector) SwitchTo(ctx context.Context, host string) error {
	return c.cluster.SwitchTo(ctx, host)
}

// Stats returns a snapshot of the pool's hosts for operators: per host of the current
// list its address, DC label, origin (the DSN, the host list, or discovery and since
// when), state (unknown, up, suspect, down, backoff, wrong-role),
// role, last error (password-free), time of the last change, end of its backoff, open
// physical connections (probe connections included; -1 with a test dialer), last probe
// latency; the totals of failovers, fall-backs and abort rounds; the active host and the
// primary. See failover.Stats for units.
func (c *Connector) Stats() failover.Stats {
	s := c.cluster.Stats()
	if c.tracker == nil {
		return s // a test dialer: sockets are not seen (OpenConns -1)
	}
	for i := range s.Hosts {
		s.Hosts[i].OpenConns = c.tracker.open(s.Hosts[i].Addr)
	}
	return s
}

// String describes the connector without its password.
func (c *Connector) String() string { return "mysqlfailover.Connector(" + c.cfg.String() + ")" }

var _ sqldriver.Connector = (*Connector)(nil)

// hostConfig returns the go-sql-driver config for the host at addr, ready for
// mysql.NewConnector: a Clone of cfg.MySQL (mysql.NewConfig() when nil) with Net the
// configured network ("tcp" when empty) and Addr addr. Changing it does not change cfg.
func hostConfig(cfg *dsn.Config, addr string) *mysql.Config {
	var m *mysql.Config
	if cfg.MySQL != nil {
		m = cfg.MySQL.Clone()
	} else {
		m = mysql.NewConfig()
	}
	if m.Net == "" {
		m.Net = "tcp"
	}
	m.Addr = addr
	return m
}

// checkDialable returns an error naming the network when cfg's network is neither one
// net.Dialer knows (tcp, tcp4, tcp6, unix) nor registered with mysql.RegisterDialContext,
// and cfg.MySQL has no DialFunc of its own: go-sql-driver would fail every dial with
// "unknown network".
func checkDialable(cfg *dsn.Config) error {
	if cfg.MySQL == nil || cfg.MySQL.DialFunc != nil {
		return nil
	}
	switch n := cfg.MySQL.Net; n {
	case "", "tcp", "tcp4", "tcp6", "unix":
		return nil
	default:
		if registeredDial(n) == nil {
			return fmt.Errorf("mysqlfailover: network %q is not registered: call mysql.RegisterDialContext(%q, dial) before opening the DSN, or use tcp", n, n)
		}
	}
	return nil
}

// driverLogger returns the logger go-sql-driver gets for the connections to addr: the
// configuration's own (own) when there is no pool logger (WithLogger) or own is not
// go-sql-driver's default (a logger set in Config.MySQL is kept), else one that writes
// go-sql-driver's lines to pool at Debug. They tell in go-sql-driver's words
// ("packets.go:58 unexpected EOF", "closing bad idle connection") failures the driver
// handles and logs itself, one line per connection: printed raw, a failover scattered
// tens of them over stderr.
func driverLogger(own mysql.Logger, pool *slog.Logger, addr string) mysql.Logger {
	if pool == nil || !sameLogger(own, mysql.NewConfig().Logger) {
		return own
	}
	return goSQLLog{l: pool, host: addr}
}

// sameLogger reports whether a and b are the same logger, without the panic of == on a
// logger whose type cannot be compared.
func sameLogger(a, b mysql.Logger) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	ta, tb := reflect.TypeOf(a), reflect.TypeOf(b)
	return ta == tb && ta.Comparable() && a == b
}

// goSQLLog is go-sql-driver's logger for the connections to one host, writing to the
// pool's slog logger.
type goSQLLog struct {
	l    *slog.Logger
	host string
}

// Print logs go-sql-driver's line at Debug, with the host.
func (g goSQLLog) Print(v ...any) {
	g.l.LogAttrs(context.Background(), slog.LevelDebug, "mysqlfailover: go-sql-driver",
		slog.String("source", "go-sql-driver"), slog.String("host", g.host),
		slog.String("message", strings.TrimSpace(fmt.Sprint(v...))))
}
