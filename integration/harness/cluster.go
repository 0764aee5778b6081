package harness

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	"github.com/go-sql-driver/mysql"
	"github.com/rs/zerolog"
)

// The application user and databases every cluster has. The user has ALL on the two
// databases and one global privilege, the one that reads the replica status (SLAVE
// MONITOR; MySQL REPLICATION CLIENT) for the driver's lag probes; none that bypasses
// read_only (no SUPER, no READ_ONLY ADMIN), so read_only really stops its writes.
const (
	AppUser     = "app"
	AppPassword = "apppw"
	AppDB       = "app"
	AppDB2      = "app2"

	replUser     = "repl"
	replPassword = "replpw"
)

// EnvCI, when true, turns "no server binary" from a skip into a failure.
const EnvCI = "CI"

// Option configures StartCluster and Start.
type Option func(*options)

type options struct {
	backend  Backend
	logf     func(format string, args ...any)
	timeout  time.Duration
	nodeArgs map[int][]string
	links    bool

	galera        bool     // WithGalera
	galeraOptions []string // WithGaleraOptions
}

// WithBackend runs the cluster on b instead of a new LocalBackend. The cluster closes b.
func WithBackend(b Backend) Option { return func(o *options) { o.backend = b } }

// WithLogf sends the harness's progress lines to logf (Start uses t.Logf).
func WithLogf(logf func(format string, args ...any)) Option {
	return func(o *options) { o.logf = logf }
}

// WithNodeArgs gives node i (from 1) extra server options, on every start of that node
// (Restart too), after the harness's own options and LocalBackend.Args, so they override
// both: "--ssl-cert=/path/cert.pem", "--max-allowed-packet=1M". Given twice for the same
// node, the options add up. StartCluster fails for a node the cluster does not have.
// Options that stop the server from starting, or from answering the harness's root
// admin connection (no password, plain TCP), fail StartCluster with the server's log.
func WithNodeArgs(i int, args ...string) Option {
	return func(o *options) {
		if o.nodeArgs == nil {
			o.nodeArgs = map[int][]string{}
		}
		o.nodeArgs[i] = append(o.nodeArgs[i], args...)
	}
}

// WithReplicationLinks sends each replica's replication through a toxiproxy proxy of its
// own (in process, on loopback), so that Node.Partition can cut a node off from the
// others on a backend that has no network of its own to cut (LocalBackend). A backend
// whose instances implement Partitioner (ContainerBackend) ignores it: replication
// there runs over the cluster's Docker network.
func WithReplicationLinks() Option { return func(o *options) { o.links = true } }

// WithTimeout bounds Start's whole bring-up (default 2 minutes; StartCluster uses its
// context).
func WithTimeout(d time.Duration) Option { return func(o *options) { o.timeout = d } }

// Cluster is N servers, node 1 the primary and the others GTID replicas of it with
// read_only=ON, each behind its own toxiproxy proxy. Nodes are numbered from 1.
type Cluster struct {
	backend Backend
	tox     *toxiproxy.ApiServer
	nodesMu sync.RWMutex // guards nodes (AddNode appends to a copy)
	nodes   []*Node
	logf    func(format string, args ...any)
	bringUp time.Duration
	flavour Flavour
	links   bool // replication through per-replica proxies (WithReplicationLinks)
	galera  bool // a Galera cluster (WithGalera)
	gspec   *GaleraSpec

	topoMu  sync.Mutex // serialises Switchover, Partition, Heal and the rejoins
	primary atomic.Int32
	base    map[string]bool // dropQueries' statements for what the template has (Node.rebuild)

	closeOnce sync.Once
	closeErr  error
}

// Start brings up an n-node cluster for t and closes it when t ends (passed, failed or
// panicked). With no server binary the test is skipped, or fails when CI=true. It logs the
// bring-up time, and on failure the tail of every server's log.
func Start(t testing.TB, n int, opts ...Option) *Cluster {
	t.Helper()
	o := options{timeout: 2 * time.Minute}
	for _, opt := range append([]Option{WithLogf(t.Logf)}, opts...) {
		opt(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
	defer cancel()
	c, err := StartCluster(ctx, n, append(opts[:len(opts):len(opts)], WithLogf(o.logf))...)
	if err != nil {
		if errors.Is(err, ErrNoDocker) {
			t.Skipf("harness: %v: the container backend needs one", err)
		}
		if errors.Is(err, ErrNoServer) {
			if ci, _ := strconv.ParseBool(os.Getenv(EnvCI)); ci {
				t.Fatalf("harness: %v (CI=true: a server is required)", err)
			}
			t.Skipf("harness: %v", err)
		}
		t.Fatalf("harness: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			c.logServerLogs(t.Logf)
		}
		if err := c.Close(); err != nil {
			t.Errorf("harness: close: %v", err)
		}
	})
	return c
}

// StartCluster brings up an n-node cluster: n servers started in parallel, one proxy
// each, the app user and databases on node 1, replication from node 1 to the others,
// and returns once every replica has caught up. On error everything started is stopped.
// The caller must Close the cluster.
func StartCluster(ctx context.Context, n int, opts ...Option) (*Cluster, error) {
	if n < 1 {
		return nil, fmt.Errorf("harness: need at least one node, got %d", n)
	}
	o := options{logf: func(string, ...any) {}}
	for _, opt := range opts {
		opt(&o)
	}
	if o.galera && n < 2 {
		// A lone member's gcomm address names only itself, which Galera refuses ("No address
		// to connect"); it would have to bootstrap on every start.
		return nil, fmt.Errorf("harness: a Galera cluster needs at least 2 nodes, got %d", n)
	}
	for i := range o.nodeArgs {
		if i < 1 || i > n {
			return nil, fmt.Errorf("harness: WithNodeArgs for node %d of a %d-node cluster", i, n)
		}
	}
	if o.backend == nil {
		b, err := BackendFromEnv(o.logf)
		if err != nil {
			return nil, err
		}
		o.backend = b
	}
	begin := time.Now()
	c := &Cluster{
		backend: o.backend,
		tox:     toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		nodes:   make([]*Node, n),
		logf:    o.logf,
	}
	c.primary.Store(1)
	c.links = o.links
	if o.galera {
		var id [4]byte
		rand.Read(id[:])
		c.galera = true
		c.gspec = &GaleraSpec{Name: "mysqlfailover-" + hex.EncodeToString(id[:]), Nodes: n,
			ProviderOptions: strings.Join(o.galeraOptions, ";")}
	}
	err := c.startNodes(ctx, o.nodeArgs)
	started := time.Since(begin)
	if err == nil && c.galera {
		err = c.setUpGalera(ctx)
	} else if err == nil {
		err = c.setUpReplication(ctx)
	}
	if err != nil {
		return nil, errors.Join(err, c.Close())
	}
	c.bringUp = time.Since(begin)
	kind, setUp := "", "replication"
	if c.galera {
		kind, setUp = " Galera", "users and sync"
	}
	c.logf("harness: %d-node%s cluster up in %v (servers %v, %s %v); proxies %s",
		n, kind, c.bringUp.Round(time.Millisecond), started.Round(time.Millisecond), setUp,
		(c.bringUp - started).Round(time.Millisecond), c.describe())
	return c, nil
}

func (c *Cluster) startNodes(ctx context.Context, nodeArgs map[int][]string) error {
	errs := make([]error, len(c.list()))
	var wg sync.WaitGroup
	for k := range c.list() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = c.startNode(ctx, k+1, nodeArgs[k+1])
		}()
	}
	wg.Wait()
	// A backend that cannot start at all (no image, no engine) fails every node alike:
	// say it once.
	seen := map[string]bool{}
	var uniq []error
	for _, err := range errs {
		if err != nil && !seen[err.Error()] {
			seen[err.Error()] = true
			uniq = append(uniq, err)
		}
	}
	return errors.Join(uniq...)
}

func (c *Cluster) startNode(ctx context.Context, idx int, args []string) error {
	_, err := c.newNode(ctx, NodeSpec{Index: idx, ServerID: idx, Args: args, Galera: c.gspec}, "127.0.0.1:0", func(n *Node) {
		c.nodesMu.Lock()
		c.nodes[idx-1] = n
		c.nodesMu.Unlock()
	})
	return err
}

// newNode starts the server of spec, gives the node to place before anything else can
// fail (so that Close finds it), opens its admin connection and starts its proxy on
// listen ("127.0.0.1:0": any port).
func (c *Cluster) newNode(ctx context.Context, spec NodeSpec, listen string, place func(*Node)) (*Node, error) {
	idx := spec.Index
	inst, err := c.backend.StartNode(ctx, spec)
	if err != nil {
		return nil, err
	}
	n := &Node{c: c, idx: idx, inst: inst, state: Running}
	place(n)

	cfg, err := mysql.ParseDSN(inst.AdminDSN())
	if err != nil {
		return nil, fmt.Errorf("harness: node %d: admin DSN: %w", idx, err)
	}
	cfg.Timeout = 5 * time.Second
	cfg.ReadTimeout = 30 * time.Second
	cfg.WriteTimeout = 30 * time.Second
	connector, err := mysql.NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	n.admin = sql.OpenDB(connector)
	var version string
	if err := n.admin.QueryRowContext(ctx, "SELECT @@port, @@server_id, VERSION()").Scan(&n.port, &n.serverID, &version); err != nil {
		return nil, fmt.Errorf("harness: node %d: %w", idx, err)
	}
	n.flavour = FlavourOf(version)

	n.proxy = toxiproxy.NewProxy(c.tox, "node"+strconv.Itoa(idx), listen, inst.Addr())
	if err := n.proxy.Start(); err != nil {
		return nil, fmt.Errorf("harness: node %d: proxy: %w", idx, err)
	}
	n.proxyAddr = n.proxy.Listen // the bound address, set by Start
	return n, nil
}

// setUpReplication creates the users and databases on node 1 and points the other nodes
// at it. The replicas start from the same empty data directory, so they replay node 1's
// whole binary log, users and databases included.
func (c *Cluster) setUpReplication(ctx context.Context) error {
	p := c.list()[0]
	c.flavour = p.flavour
	for _, r := range c.list()[1:] {
		if r.flavour != c.flavour {
			return fmt.Errorf("harness: node 1 runs %s, node %d %s: one flavour per cluster", c.flavour, r.idx, r.flavour)
		}
	}
	if c.flavour == MariaDB {
		// What the template holds, before anything replicates: what Node.rebuild keeps.
		c.base = map[string]bool{}
		for _, q := range dropQueries {
			stmts, err := p.queryStrings(ctx, q)
			if err != nil {
				return fmt.Errorf("harness: primary set-up: %w", err)
			}
			for _, s := range stmts {
				c.base[s] = true
			}
		}
	}
	repl := []string{
		"CREATE USER '" + replUser + "'@'%' IDENTIFIED BY '" + replPassword + "'",
		"GRANT REPLICATION SLAVE ON *.* TO '" + replUser + "'@'%'",
	}
	for _, q := range append(repl, c.flavour.appSetUp()...) {
		if err := p.Exec(ctx, q); err != nil {
			return fmt.Errorf("harness: primary set-up: %w", err)
		}
	}
	errs := make([]error, len(c.list()))
	var wg sync.WaitGroup
	for _, r := range c.list()[1:] {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.readOnly = true
			if err := r.Exec(ctx, c.flavour.setReadOnly(true)); err != nil {
				errs[r.idx-1] = fmt.Errorf("harness: replica %d set-up: %w", r.idx, err)
				return
			}
			if err := r.replicateFrom(ctx, p, false); err != nil {
				errs[r.idx-1] = fmt.Errorf("harness: replica %d set-up: %w", r.idx, err)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return c.WaitReplicasCaughtUp(ctx)
}

// WaitReplicasCaughtUp waits until every running replica (not killed, stopped, frozen,
// partitioned, with its SQL thread stopped by Node.StopReplicaSQL, or brought back as a
// second writer by Node.ReturnUnfenced) holds everything the primary (node 1, or the node
// Switchover made the primary) has written so far (MariaDB: its gtid_binlog_pos; MySQL:
// its gtid_executed), within ctx or 30 s. A replica whose own position already holds it
// has caught up, whoever wrote it (a former primary holds its own writes). Any other
// running node fails it at once, with an error naming the node and why (Node.CatchUp):
// one that replicates from no one ("node 1 is not a replica: it replicates from no one"),
// one whose replication is stopped (its threads and last errors), one whose source is
// another node that is down; on ctx's end or after 30 s the error gives the replica's
// position and replication status. On a Galera cluster it waits until every running node
// of the Primary component has applied the last write set any of them has
// (wsrep_last_committed); isolated and non-Primary nodes are left out.
func (c *Cluster) WaitReplicasCaughtUp(ctx context.Context) error {
	if c.galera {
		return c.waitGaleraApplied(ctx)
	}
	primary := c.Primary()
	pos, err := primary.QueryString(ctx, c.flavour.gtidExecutedQuery())
	if err != nil {
		return fmt.Errorf("harness: primary's GTID position: %w", err)
	}
	errs := make([]error, len(c.list()))
	var wg sync.WaitGroup
	for _, r := range c.list() {
		if r == primary || r.State() != Running || r.Partitioned() || primary.Partitioned() || r.ReplicaSQLStopped() || r.Unfenced() || r.Detached() {
			continue
		}
		wg.Go(func() { errs[r.idx-1] = r.waitApplied(ctx, primary, pos) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// list returns the nodes, node 1 first: the slice is never changed once AddNode has
// replaced it, so the caller may range over it without a lock.
func (c *Cluster) list() []*Node {
	c.nodesMu.RLock()
	defer c.nodesMu.RUnlock()
	return c.nodes
}

// N is the number of nodes.
func (c *Cluster) N() int { return len(c.list()) }

// Node returns node i, counted from 1 (node 1 is the primary). It panics on a bad index.
func (c *Cluster) Node(i int) *Node {
	if i < 1 || i > len(c.list()) {
		panic(fmt.Sprintf("harness: no node %d in a %d-node cluster", i, len(c.list())))
	}
	return c.list()[i-1]
}

// Nodes returns every node, node 1 first.
func (c *Cluster) Nodes() []*Node { return append([]*Node(nil), c.list()...) }

// Primary is the node the cluster set up as the writer: node 1, until Switchover makes
// another node the primary.
func (c *Cluster) Primary() *Node { return c.list()[c.primary.Load()-1] }

// Flavour is the servers' flavour, read from VERSION() on node 1.
func (c *Cluster) Flavour() Flavour { return c.flavour }

// BringUp is how long StartCluster took, from nothing to caught-up replicas.
func (c *Cluster) BringUp() time.Duration { return c.bringUp }

// DSN is the app user's multi-host DSN through the proxies, in node order, on database
// app: "app:apppw@tcp(127.0.0.1:pA,127.0.0.1:pB,127.0.0.1:pC)/app?" + params.
func (c *Cluster) DSN(params string) string {
	addrs := make([]string, len(c.list()))
	for k, n := range c.list() {
		addrs[k] = n.proxyAddr
	}
	return appDSN(strings.Join(addrs, ","), params)
}

// HostDSN is the app user's DSN for node i alone, through its proxy.
func (c *Cluster) HostDSN(i int, params string) string {
	return appDSN(c.Node(i).proxyAddr, params)
}

// DirectDSN is the app user's DSN for node i alone, straight to the server (no proxy).
func (c *Cluster) DirectDSN(i int, params string) string {
	return appDSN(c.Node(i).inst.Addr(), params)
}

// DirectClusterDSN is the app user's multi-host DSN straight to the servers, in node order,
// without the proxies: for faults that need no proxy, and for a client that sends a large
// request the server rejects half-way (a packet over max_allowed_packet). toxiproxy 2.5.0
// leaks the goroutines of a link whose destination stops taking data while its source
// still sends (they block on an internal channel forever), which goleak then reports.
// Errors and Stats name these hosts by their real address (Node.Addr).
func (c *Cluster) DirectClusterDSN(params string) string {
	addrs := make([]string, len(c.list()))
	for k, n := range c.list() {
		addrs[k] = n.inst.Addr()
	}
	return appDSN(strings.Join(addrs, ","), params)
}

func appDSN(hosts, params string) string {
	dsn := AppUser + ":" + AppPassword + "@tcp(" + hosts + ")/" + AppDB
	if params = strings.TrimPrefix(params, "?"); params != "" {
		dsn += "?" + params
	}
	return dsn
}

// NodeByPort returns the index of the node whose server reports port as @@port (its real
// port, not its proxy's), or 0.
func (c *Cluster) NodeByPort(port int) int {
	for _, n := range c.list() {
		if n.port == port {
			return n.idx
		}
	}
	return 0
}

// NodeByAddr returns the index of the node whose proxy address or real address is
// hostport (as mysqlfailover.Conn.Host or failover errors name hosts), or 0.
func (c *Cluster) NodeByAddr(hostport string) int {
	for _, n := range c.list() {
		if hostport == n.proxyAddr || hostport == n.inst.Addr() {
			return n.idx
		}
	}
	return 0
}

// Close kills every server, stops every proxy, closes the admin connections and the
// backend. It is safe to call more than once.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		var errs []error
		for _, n := range c.list() {
			if n != nil {
				errs = append(errs, n.inst.Kill()) // thaws first if frozen
			}
		}
		for _, n := range c.list() {
			if n == nil {
				continue
			}
			if n.proxy != nil {
				n.proxy.Toxics.ResetToxics(context.Background())
				n.proxy.Stop()
			}
			if n.link != nil {
				n.link.Stop()
			}
			if n.admin != nil {
				// The server is already dead: the COM_QUIT that closing an idle
				// connection sends may meet a reset, which is no failure of the test.
				_ = n.admin.Close()
			}
		}
		errs = append(errs, c.backend.Close())
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

func (c *Cluster) describe() string {
	parts := make([]string, len(c.list()))
	for k, n := range c.list() {
		parts[k] = fmt.Sprintf("node%d %s->%s", n.idx, n.proxyAddr, n.inst.Addr())
	}
	return strings.Join(parts, ", ")
}

// logServerLogs logs the end of every server's log, for backends that keep one.
func (c *Cluster) logServerLogs(logf func(string, ...any)) {
	for _, n := range c.list() {
		if n == nil {
			continue
		}
		if lt, ok := n.inst.(interface{ LogTail(int) string }); ok {
			logf("harness: node %d server log (end):\n%s", n.idx, lt.LogTail(15))
		}
	}
}
