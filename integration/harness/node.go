package harness

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
)

// State is what the harness last did to a node's server.
type State int

const (
	Running State = iota // started and not frozen: answering, as far as the harness knows
	Frozen               // suspended by Freeze
	Down                 // killed or stopped
)

func (s State) String() string {
	switch s {
	case Running:
		return "running"
	case Frozen:
		return "frozen"
	default:
		return "down"
	}
}

// Node is one server of a Cluster, its proxy and its admin connection. Faults on the
// server (Kill, Freeze, Stop) act on the process; faults on the network (Disable,
// Blackhole, ResetPeer, Latency) act on its proxy, so they hit only connections made
// through the DSNs, never the admin connection or replication.
type Node struct {
	c         *Cluster
	idx       int
	inst      Instance
	proxy     *toxiproxy.Proxy
	proxyAddr string
	admin     *sql.DB
	port      int
	serverID  int
	flavour   Flavour

	mu          sync.Mutex
	state       State
	readOnly    bool  // global read_only as last set by the harness; re-applied on Restart
	source      *Node // whom it replicates from (nil: a primary)
	partitioned bool
	sqlStopped  bool             // its SQL thread stopped by StopReplicaSQL
	link        *toxiproxy.Proxy // its replication's own proxy (WithReplicationLinks)
	isolated    bool             // cut off from its Galera cluster by Isolate or LoseQuorum
	unfenced    bool             // a writer beside the primary, following no one (ReturnUnfenced)
	detached    bool             // a replica taken out by Detach, following no one until Attach
	behind      bool             // left behind by a promotion: rejoins when it comes back
	behindAt    string           // the new primary's GTID position at that promotion
}

// Index is the node's number, from 1.
func (n *Node) Index() int { return n.idx }

// Port is the server's real port, what SELECT @@port returns on it.
func (n *Node) Port() int { return n.port }

// ServerID is the server's @@server_id.
func (n *Node) ServerID() int { return n.serverID }

// Addr is the server's real host:port (bypassing the proxy).
func (n *Node) Addr() string { return n.inst.Addr() }

// ProxyAddr is the host:port of the node's proxy, the address the DSNs use.
func (n *Node) ProxyAddr() string { return n.proxyAddr }

// Admin is the node's admin connection pool: root, straight to the server.
func (n *Node) Admin() *sql.DB { return n.admin }

// State is what the harness last did to the server: "running", "frozen" or "down".
func (n *Node) State() State {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.state
}

func (n *Node) setState(s State) {
	n.mu.Lock()
	n.state = s
	n.mu.Unlock()
}

func (n *Node) String() string {
	return fmt.Sprintf("node %d (%s via %s)", n.idx, n.Addr(), n.proxyAddr)
}

// --- faults on the server ---

// settle is how long Kill and Stop wait after the server process has exited. The kernel
// closes the server's sockets when it dies, but through toxiproxy a client sees that close
// only after the proxy's goroutines have passed it on; a test that uses an idle connection
// right after Kill would otherwise race the proxy instead of seeing what a client sees
// when a server dies.
const settle = 100 * time.Millisecond

// Kill ends the server with SIGKILL (thawing it first if frozen) and returns once the
// process is gone and the proxy has passed the closed connections on to its clients.
func (n *Node) Kill() error {
	err := n.inst.Kill()
	n.setState(Down)
	n.dropIdleAdmin()
	time.Sleep(settle)
	return n.wrap("kill", err)
}

// Freeze suspends the server (SIGSTOP): connections stay open and nothing answers, as a
// hung host. Thaw it, or Kill it; Close thaws before killing.
func (n *Node) Freeze() error {
	if err := n.inst.Freeze(); err != nil {
		return n.wrap("freeze", err)
	}
	n.setState(Frozen)
	return nil
}

// Thaw resumes a frozen server (SIGCONT). A node a promotion left behind while it was
// frozen then rejoins the cluster as Restart describes.
func (n *Node) Thaw() error {
	if err := n.inst.Thaw(); err != nil {
		return n.wrap("thaw", err)
	}
	n.setState(Running)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	return n.rejoin(ctx)
}

// Stop shuts the server down cleanly (SIGTERM; clients get error 1053 or a closed
// connection) and waits for it to exit.
func (n *Node) Stop(ctx context.Context) error {
	err := n.inst.Stop(ctx)
	n.setState(Down)
	n.dropIdleAdmin()
	time.Sleep(settle)
	return n.wrap("stop", err)
}

// Restart starts the server again on the same port and data, killing it first if it still
// runs, waits until it answers and re-applies the global read_only the harness last set
// (a replica comes back read-only). A replica resumes replicating by itself; a restarted
// primary is found again by its replicas within a second.
//
// A node a promotion left behind (Cluster.Switchover ran while it was down, frozen or
// partitioned: the old primary, or a replica) rejoins the cluster as a read-only replica
// of the primary before Restart returns (see Cluster.Switchover); a node brought back
// by ReturnUnfenced stays a writer following no one.
//
// A Galera node rejoins its cluster: after a Kill the backend first runs mariadbd
// --wsrep-recover and writes the position it recovers into grastate.dat, so the node gets
// the write sets it missed by IST instead of a full SST (without that, a killed node's
// grastate.dat says seqno -1); after a clean Stop the saved position is used as it is.
// Restart then returns once the node is Synced. With no Primary component to join
// (quorum lost: Bootstrap a survivor first) the server never opens its port, and Restart
// fails after the backend's start timeout.
func (n *Node) Restart(ctx context.Context) error {
	if err := n.restart(ctx); err != nil {
		return err
	}
	return n.rejoin(ctx)
}

// restart is Restart without the rejoin: the server back on its data, read_only as the
// harness last set it.
func (n *Node) restart(ctx context.Context) error {
	if n.State() != Down {
		if err := n.inst.Kill(); err != nil {
			return n.wrap("restart: kill", err)
		}
		n.setState(Down)
		n.dropIdleAdmin()
	}
	if err := n.inst.Start(ctx); err != nil {
		return n.wrap("restart", err)
	}
	n.setState(Running)
	n.setIsolated(false) // a restarted provider starts unisolated
	if n.c.galera {
		if _, err := n.WaitStatus(ctx, "Synced", GaleraStatus.Synced); err != nil {
			return err
		}
	}
	n.mu.Lock()
	ro := n.readOnly
	n.mu.Unlock()
	if ro {
		if err := n.Exec(ctx, n.flavour.setReadOnly(true)); err != nil {
			return n.wrap("restart: read_only", err)
		}
	}
	return nil
}

// dropIdleAdmin closes the admin pool's idle connections to a server that is gone, so
// the next admin call dials instead of finding a dead connection.
func (n *Node) dropIdleAdmin() {
	n.admin.SetMaxIdleConns(0)
	n.admin.SetMaxIdleConns(2)
}

// --- faults on the network (the proxy) ---

// Disable turns the proxy off: new connections are refused (ECONNREFUSED) and every open
// connection through it is closed.
func (n *Node) Disable() error {
	n.proxy.Stop()
	return nil
}

// Enable turns the proxy back on, on the same address.
func (n *Node) Enable() error {
	if err := n.proxy.Start(); err != nil && !errors.Is(err, toxiproxy.ErrProxyAlreadyStarted) {
		return n.wrap("enable proxy", err)
	}
	return nil
}

// Blackhole drops every byte in both directions, on open connections and on new ones
// (whose TCP connect still succeeds: the proxy accepts), without FIN or RST: the timeout
// toxic with timeout 0. ClearToxics ends it and closes the connections it held.
func (n *Node) Blackhole() error {
	for _, dir := range []string{"upstream", "downstream"} {
		if err := n.addToxic("blackhole_"+dir, "timeout", dir, `{"timeout":0}`); err != nil {
			return err
		}
	}
	return nil
}

// ResetPeer makes the next data chunk in one direction reset the connection (reset_peer
// toxic, timeout 0). upstream=true: the request is lost before the server sees it;
// false: the server runs the request and the reply is lost. The toxic stays (and hits new
// connections at their greeting) until ClearToxics.
func (n *Node) ResetPeer(upstream bool) error {
	dir := "downstream"
	if upstream {
		dir = "upstream"
	}
	return n.addToxic("reset_peer_"+dir, "reset_peer", dir, `{"timeout":0}`)
}

// Latency delays every server-to-client chunk by d (latency toxic, downstream); 0
// removes it.
func (n *Node) Latency(d time.Duration) error {
	const name = "latency_downstream"
	if n.proxy.Toxics.GetToxic(name) != nil {
		if err := n.proxy.Toxics.RemoveToxic(context.Background(), name); err != nil {
			return n.wrap("latency", err)
		}
	}
	if d <= 0 {
		return nil
	}
	return n.addToxic(name, "latency", "downstream", fmt.Sprintf(`{"latency":%d,"jitter":0}`, d.Milliseconds()))
}

// LatencyJitter delays every server-to-client chunk by latency plus or minus a random
// part of jitter, drawn anew for each chunk (latency toxic, downstream, as Latency);
// latency 0 and jitter 0 remove it. LatencyJitter(100ms, 100ms) gives delays between 0
// and 200 ms.
func (n *Node) LatencyJitter(latency, jitter time.Duration) error {
	const name = "latency_downstream"
	if n.proxy.Toxics.GetToxic(name) != nil {
		if err := n.proxy.Toxics.RemoveToxic(context.Background(), name); err != nil {
			return n.wrap("latency", err)
		}
	}
	if latency <= 0 && jitter <= 0 {
		return nil
	}
	return n.addToxic(name, "latency", "downstream", fmt.Sprintf(`{"latency":%d,"jitter":%d}`, latency.Milliseconds(), jitter.Milliseconds()))
}

// ClearToxics removes every toxic from the node's proxy. Removing a blackhole closes the
// connections it was holding.
func (n *Node) ClearToxics() error {
	n.proxy.Toxics.ResetToxics(context.Background())
	return nil
}

// ResetSome resets a fraction (0 to 1) of the connections to the node, each drawn when
// the proxy accepts it (or, for those open, when the toxic is added), at its first
// server-to-client chunk: the greeting of a new connection. It plays an overloaded
// listener that closes some handshakes while its other sessions answer (reset_peer
// toxic, timeout 0, downstream, with toxicity fraction). ClearToxics ends it.
func (n *Node) ResetSome(fraction float64) error {
	return n.addToxicP("reset_some", "reset_peer", "downstream", `{"timeout":0}`, fraction)
}

func (n *Node) addToxic(name, typ, stream, attrs string) error {
	return n.addToxicP(name, typ, stream, attrs, 1)
}

// addToxicP adds a toxic that applies to each connection with probability toxicity.
func (n *Node) addToxicP(name, typ, stream, attrs string, toxicity float64) error {
	body := fmt.Sprintf(`{"name":%q,"type":%q,"stream":%q,"toxicity":%g,"attributes":%s}`, name, typ, stream, toxicity, attrs)
	if _, err := n.proxy.Toxics.AddToxicJson(strings.NewReader(body)); err != nil {
		return n.wrap("add toxic "+name, err)
	}
	return nil
}

// --- server state through the admin connection ---

// SetReadOnly sets the server's global read_only (the app user has no privilege that
// bypasses it; on MySQL on=true sets super_read_only, which stops root too). Restart
// re-applies it.
func (n *Node) SetReadOnly(ctx context.Context, on bool) error {
	if err := n.Exec(ctx, n.flavour.setReadOnly(on)); err != nil {
		return err
	}
	n.mu.Lock()
	n.readOnly = on
	n.mu.Unlock()
	return nil
}

// Exec runs a statement on the server as root, bypassing the proxy.
func (n *Node) Exec(ctx context.Context, query string, args ...any) error {
	_, err := n.admin.ExecContext(ctx, query, args...)
	return n.wrap(query, err)
}

// QueryInt runs a query returning one integer as root, bypassing the proxy.
func (n *Node) QueryInt(ctx context.Context, query string, args ...any) (int64, error) {
	var v int64
	err := n.admin.QueryRowContext(ctx, query, args...).Scan(&v)
	return v, n.wrap(query, err)
}

// QueryString runs a query returning one string as root, bypassing the proxy. NULL is "".
func (n *Node) QueryString(ctx context.Context, query string, args ...any) (string, error) {
	var v sql.NullString
	err := n.admin.QueryRowContext(ctx, query, args...).Scan(&v)
	return v.String, n.wrap(query, err)
}

// Connections is the server's Connections status counter: connection attempts since it
// started, successful or not (a restart resets it).
func (n *Node) Connections(ctx context.Context) (int64, error) {
	var name string
	var v int64
	err := n.admin.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Connections'").Scan(&name, &v)
	return v, n.wrap("Connections", err)
}

// AppSessions is the number of the app user's sessions open on the server now.
func (n *Node) AppSessions(ctx context.Context) (int64, error) {
	return n.QueryInt(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ?", AppUser)
}

// GTIDPos is the server's @@gtid_current_pos (MySQL: @@gtid_executed).
func (n *Node) GTIDPos(ctx context.Context) (string, error) {
	if n.flavour == MySQL {
		return n.QueryString(ctx, "SELECT @@GLOBAL.gtid_executed")
	}
	return n.QueryString(ctx, "SELECT @@GLOBAL.gtid_current_pos")
}

// replicaState is what SHOW SLAVE STATUS (SHOW REPLICA STATUS) says of a node's
// replication.
type replicaState struct {
	replica  bool   // the statement returned a row: the node has a source
	io, sql  string // its threads: Yes, No, Connecting, Preparing
	received string // what it has received from its source (Gtid_IO_Pos, Retrieved_Gtid_Set)
	summary  string // the columns worth printing in an error
}

// stopped reports whether a thread of a replica is stopped, by hand or by an error: it
// gets nothing more until someone starts it.
func (s replicaState) stopped() bool { return s.replica && (s.io == "No" || s.sql == "No") }

// replicaState reads n's replication status as root.
func (n *Node) replicaState(ctx context.Context) (replicaState, error) {
	query, columns := n.flavour.replicaStatus()
	rows, err := n.admin.QueryContext(ctx, query)
	if err != nil {
		return replicaState{}, n.wrap(query, err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return replicaState{}, n.wrap(query, err)
	}
	if !rows.Next() {
		return replicaState{summary: "not a replica"}, n.wrap(query, rows.Err())
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for k := range vals {
		ptrs[k] = &vals[k]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return replicaState{}, n.wrap(query, err)
	}
	want := map[string]bool{}
	for _, c := range columns {
		want[c] = true
	}
	io, sqlThread, received := n.flavour.threadColumns()
	st := replicaState{replica: true}
	var parts []string
	for k, c := range cols {
		switch c {
		case io:
			st.io = vals[k].String
		case sqlThread:
			st.sql = vals[k].String
		case received:
			st.received = vals[k].String
		}
		if want[c] {
			parts = append(parts, c+"="+vals[k].String)
		}
	}
	st.summary = strings.Join(parts, " ")
	return st, nil
}

// replicationStatus summarises SHOW SLAVE STATUS (SHOW REPLICA STATUS) for error
// messages.
func (n *Node) replicationStatus() string {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	st, err := n.replicaState(ctx)
	if err != nil {
		return err.Error()
	}
	return st.summary
}

func (n *Node) wrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("harness: node %d: %s: %w", n.idx, what, err)
}
