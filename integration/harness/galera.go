package harness

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
)

// WithGalera makes the cluster a MariaDB Galera cluster instead of a primary with
// replicas: every node a member (wsrep_on, Debian's galera-4 provider libgalera_smm.so,
// binlog_format=ROW, innodb_autoinc_lock_mode=2, wsrep_sst_method=rsync,
// wsrep_gtid_mode=ON with wsrep_gtid_domain_id 1 on every node and gtid_domain_id 100+i on
// node i), no replication, no read_only. The app user and databases are created on node 1
// and reach the others through Galera. Node 1 is the writer by convention (Primary), but
// every node takes writes. It needs at least 2 nodes.
//
// The nodes start at once from a template data directory that already is a Galera state
// (made once per process, cached like the plain one on LocalBackend) with a saved primary
// component naming all of them (gvwstate.dat), so they form the cluster together: no
// bootstrap node, no state transfer at bring-up (3 nodes: 1.2 to 3 s on processes). The
// harness's provider options make a lost node noticed within about 2 s instead of Galera's
// 5 s (evs.suspect_timeout=PT2S, evs.inactive_timeout=PT4S, shorter join and reconnect
// periods, gcache.size=32M): WithGaleraOptions overrides any of them. Until the others have
// evicted a node that was killed, frozen or isolated, their writes stall (2.2 to 2.5 s
// measured; reads go on): Kill and Freeze return at once, Isolate once that is over.
//
// LocalBackend runs the servers as the mysql user when the test runs as root (rsync state
// transfers fail as root), on loopback ports of their own for group communication, IST and
// SST, picked below the kernel's ephemeral range and locked (a lock file per port) so that
// no other test process of this machine takes them; ContainerBackend lets the nodes talk
// over the cluster's Docker network by container name, on Galera's default ports, and
// publishes only the client port. A backend that cannot run Galera (no provider library:
// ErrNoServer; a MySQL image) fails StartCluster.
//
// Faults: Node.Isolate/Unisolate, SetDesync, RejectQueries, Resync, Kill then Restart
// (rejoins by IST: the harness runs mariadbd --wsrep-recover first), Stop then Restart,
// Freeze/Thaw; Cluster.LoseQuorum, RestoreQuorum, Bootstrap, WaitSynced; Node.GaleraStatus
// reads what a node says of itself. Switchover and, on LocalBackend, Partition are refused.
func WithGalera() Option { return func(o *options) { o.galera = true } }

// WithGaleraOptions appends provider options (wsrep_provider_options syntax,
// "evs.suspect_timeout=PT5S;gcache.size=128M") to the harness's own, on every node of a
// Galera cluster (WithGalera); for a repeated key the last value wins. Galera's own defaults
// are restored with "evs.suspect_timeout=PT5S;evs.inactive_timeout=PT15S;
// evs.keepalive_period=PT1S;evs.inactive_check_period=PT0.5S;evs.join_retrans_period=PT1S;
// evs.install_timeout=PT7.5S;gmcast.peer_timeout=PT3S;gmcast.time_wait=PT5S;
// pc.announce_timeout=PT3S". It implies WithGalera.
func WithGaleraOptions(providerOptions string) Option {
	return func(o *options) {
		o.galera = true
		o.galeraOptions = append(o.galeraOptions, strings.Trim(providerOptions, "; "))
	}
}

// GaleraSpec says which Galera cluster a node joins (NodeSpec.Galera). Every node of a
// cluster gets the same spec.
type GaleraSpec struct {
	// Name is the cluster's wsrep_cluster_name, unique to the cluster (the backends also
	// derive the members' Galera UUIDs from it).
	Name string
	// Nodes is the number of nodes; NodeSpec.Index is one of 1..Nodes.
	Nodes int
	// ProviderOptions are wsrep_provider_options to append after the backend's own
	// (listen addresses) and the harness's (galeraTuning).
	ProviderOptions string
}

// galeraTuning are the provider options every Galera node gets, before WithGaleraOptions':
// on loopback or one Docker bridge a peer that stops answering is suspected after 2 s
// instead of 5 s, and joins and reconnections retry faster, so faults take 2 to 3 s
// instead of 5 to 6 s (measured). gcache.size is small because data directories live on
// tmpfs; it still holds far more write sets than a test writes while a node is down, so a
// restarted node rejoins by IST.
const galeraTuning = "gcache.size=32M;evs.suspect_timeout=PT2S;evs.inactive_timeout=PT4S;evs.keepalive_period=PT0.5S;" +
	"evs.inactive_check_period=PT0.25S;evs.join_retrans_period=PT0.25S;evs.install_timeout=PT2S;" +
	"gmcast.peer_timeout=PT1S;gmcast.time_wait=PT1S;pc.announce_timeout=PT1S"

// wsrepGTIDDomain is every node's wsrep_gtid_domain_id; node i's own gtid_domain_id is
// 100+i (MariaDB's rule for wsrep_gtid_mode=ON: the same wsrep domain on every node, a
// different local domain on each).
const wsrepGTIDDomain = 1

// galeraServerArgs are the server options of node spec.Index of a Galera cluster:
// provider is the library, peers the gcomm addresses of every node (host:port), self
// this node's group communication address, and listen the provider options that bind
// this node's ports (empty on a backend whose nodes have addresses of their own).
func galeraServerArgs(spec NodeSpec, provider string, peers []string, self, listen, sstAddr string) []string {
	g := spec.Galera
	opts := strings.Trim(strings.Join([]string{listen, galeraTuning, g.ProviderOptions}, ";"), ";")
	args := []string{
		"--wsrep-on=ON",
		"--wsrep-provider=" + provider,
		"--wsrep-cluster-name=" + g.Name,
		"--wsrep-cluster-address=gcomm://" + strings.Join(peers, ","),
		"--wsrep-node-name=" + galeraNodeName(spec.Index),
		"--wsrep-node-address=" + self,
		"--wsrep-sst-method=rsync",
		"--wsrep-provider-options=" + opts,
		"--binlog-format=ROW",
		"--innodb-autoinc-lock-mode=2",
		"--log-slave-updates=ON",
		"--wsrep-gtid-mode=ON",
		"--wsrep-gtid-domain-id=" + strconv.Itoa(wsrepGTIDDomain),
		"--gtid-domain-id=" + strconv.Itoa(100+spec.Index),
	}
	if sstAddr != "" {
		args = append(args, "--wsrep-sst-receive-address="+sstAddr)
	}
	return args
}

// galeraNodeName is node i's wsrep_node_name, the name Resync gives as the donor.
func galeraNodeName(i int) string { return "node" + strconv.Itoa(i) }

// galeraMembers are the Galera node UUIDs of a cluster's nodes, derived from its name.
func galeraMembers(name string, n int) []string {
	out := make([]string, n)
	for k := range out {
		h := sha256.Sum256([]byte(name + "\x00" + strconv.Itoa(k+1)))
		h[6] = h[6]&0x0f | 0x40 // version 4
		h[8] = h[8]&0x3f | 0x80 // RFC 4122 variant
		out[k] = fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
	}
	return out
}

// galeraViewState is node i's gvwstate.dat: the primary component of every member, as
// Galera saves it. Nodes started with it (and pc.recovery, Galera's default) form that
// component again once they all see each other, with no bootstrap: at bring-up every node
// has the template's state, so none needs a state transfer.
func galeraViewState(members []string, i int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "my_uuid: %s\n#vwbeg\nview_id: 3 %s 1\nbootstrap: 0\n", members[i-1], members[0])
	for _, m := range members {
		fmt.Fprintf(&b, "member: %s 0\n", m)
	}
	b.WriteString("#vwend\n")
	return b.String()
}

// grastate is the content of a Galera saved state file (grastate.dat).
type grastate struct {
	uuid      string
	seqno     int64
	bootstrap bool
}

func parseGrastate(s string) (grastate, error) {
	g := grastate{seqno: -1}
	var seen bool
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "uuid":
			g.uuid, seen = v, true
		case "seqno":
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return g, fmt.Errorf("grastate.dat: seqno %q", v)
			}
			g.seqno = n
		case "safe_to_bootstrap":
			g.bootstrap = v == "1"
		}
	}
	if !seen {
		return g, errors.New("grastate.dat: no uuid")
	}
	return g, nil
}

func (g grastate) String() string {
	b := 0
	if g.bootstrap {
		b = 1
	}
	return fmt.Sprintf("# GALERA saved state\nversion: 2.1\nuuid:    %s\nseqno:   %d\nsafe_to_bootstrap: %d\n", g.uuid, g.seqno, b)
}

// zeroGrastate is the saved state of a node that has none: its next start asks for a full
// state transfer (SST).
var zeroGrastate = grastate{uuid: "00000000-0000-0000-0000-000000000000", seqno: -1}

// recoveredPosition finds the position `mariadbd --wsrep-recover` logs ("WSREP: Recovered
// position: <uuid>:<seqno>", with ",<GTID>" after it under wsrep_gtid_mode); the last one
// wins.
func recoveredPosition(log string) (uuid string, seqno int64, err error) {
	const mark = "WSREP: Recovered position: "
	i := strings.LastIndex(log, mark)
	if i < 0 {
		return "", 0, errors.New("mariadbd --wsrep-recover logged no recovered position")
	}
	pos := strings.Fields(log[i+len(mark):])
	if len(pos) == 0 {
		return "", 0, errors.New("mariadbd --wsrep-recover: empty position")
	}
	p, _, _ := strings.Cut(pos[0], ",")
	u, s, ok := strings.Cut(p, ":")
	if !ok {
		return "", 0, fmt.Errorf("mariadbd --wsrep-recover: position %q", pos[0])
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return "", 0, fmt.Errorf("mariadbd --wsrep-recover: position %q", pos[0])
	}
	return u, n, nil
}

// galeraInstance is what a backend's instance of a Galera node offers beyond Instance.
// Both backends' instances also run mariadbd --wsrep-recover in Start after a Kill, so the
// node rejoins by IST.
type galeraInstance interface {
	// forgetState makes the stopped server's next Start join by a full state transfer
	// (SST), from the node named donor when it is not "" (wsrep_sst_donor, the others
	// allowed when it cannot donate), by resetting its saved Galera state.
	forgetState(ctx context.Context, donor string) error
}

// LocalState values of wsrep_local_state (GaleraStatus.LocalState).
const (
	LocalStateInitialized = 0 // not in a Primary component (non-Primary, isolated)
	LocalStateJoining     = 1 // asking for or receiving a state transfer
	LocalStateDonor       = 2 // "Donor/Desynced": sending a state transfer, or wsrep_desync=ON
	LocalStateJoined      = 3 // state received, catching up
	LocalStateSynced      = 4 // in step with the cluster
)

// GaleraStatus is what a Galera node says of itself (Node.GaleraStatus): its wsrep_ status
// variables and the variables that refuse work.
type GaleraStatus struct {
	Ready             bool   // wsrep_ready=ON: the node accepts queries (still true under wsrep_reject_queries)
	Connected         bool   // wsrep_connected=ON: the provider is connected to the group
	ClusterStatus     string // wsrep_cluster_status: "Primary", "non-Primary" or "Disconnected"
	LocalState        int    // wsrep_local_state (the LocalState constants)
	LocalStateComment string // wsrep_local_state_comment: "Synced", "Donor/Desynced", "Initialized", "Joining", "Joined"
	Desync            bool   // @@GLOBAL.wsrep_desync
	DesyncCount       int    // wsrep_desync_count: desync requests in force (wsrep_desync and donations)
	RejectQueries     string // @@GLOBAL.wsrep_reject_queries: "NONE", "ALL" or "ALL_KILL"
	ClusterSize       int    // wsrep_cluster_size: the nodes of the component it is in (1 when isolated)
	ClusterConfID     int64  // wsrep_cluster_conf_id: -1 outside a Primary component
	StateUUID         string // wsrep_cluster_state_uuid: the cluster's history, the same on every member
	LocalIndex        int    // wsrep_local_index: its place in the component, ordered by node UUID (not by node number)
	LastCommitted     int64  // wsrep_last_committed: the cluster-wide seqno of the last write set it applied
}

// Synced reports whether the node is ready in a Primary component and in step with it
// (wsrep_ready ON, Primary, local state 4). It says nothing of wsrep_desync and
// wsrep_reject_queries, which leave a node synced.
func (s GaleraStatus) Synced() bool {
	return s.Ready && s.ClusterStatus == "Primary" && s.LocalState == LocalStateSynced
}

// String is the status on one line, for logs and test failures: "ready=true
// status=Primary state=4(Synced) desync=false reject=NONE size=3 conf=5 uuid=... index=1
// last_committed=12".
func (s GaleraStatus) String() string {
	return fmt.Sprintf("ready=%v status=%s state=%d(%s) desync=%v reject=%s size=%d conf=%d uuid=%s index=%d last_committed=%d",
		s.Ready, s.ClusterStatus, s.LocalState, s.LocalStateComment, s.Desync, s.RejectQueries, s.ClusterSize,
		s.ClusterConfID, s.StateUUID, s.LocalIndex, s.LastCommitted)
}

const galeraStatusQuery = "SELECT LOWER(variable_name), variable_value FROM information_schema.GLOBAL_STATUS WHERE variable_name IN " +
	"('wsrep_ready','wsrep_connected','wsrep_cluster_status','wsrep_local_state','wsrep_local_state_comment'," +
	"'wsrep_desync_count','wsrep_cluster_size','wsrep_cluster_conf_id','wsrep_cluster_state_uuid','wsrep_local_index','wsrep_last_committed') " +
	"UNION ALL SELECT 'desync', @@GLOBAL.wsrep_desync UNION ALL SELECT 'reject_queries', @@GLOBAL.wsrep_reject_queries"

// GaleraStatus reads the node's wsrep status as root (one query on
// information_schema.GLOBAL_STATUS and two variables, which every state answers, a
// non-Primary node and wsrep_reject_queries=ALL too). A frozen or down node gives ctx's
// error or the connection's; a node of a cluster started without WithGalera an error.
func (n *Node) GaleraStatus(ctx context.Context) (GaleraStatus, error) {
	var s GaleraStatus
	if err := n.needGalera("wsrep status"); err != nil {
		return s, err
	}
	rows, err := n.admin.QueryContext(ctx, galeraStatusQuery)
	if err != nil {
		return s, n.wrap("wsrep status", err)
	}
	defer rows.Close()
	seen := 0
	for rows.Next() {
		var name string
		var v sql.NullString
		if err := rows.Scan(&name, &v); err != nil {
			return s, n.wrap("wsrep status", err)
		}
		seen++
		val := v.String
		num := func() int64 {
			i, err := strconv.ParseInt(val, 10, 64)
			if err != nil {
				if u, uerr := strconv.ParseUint(val, 10, 64); uerr == nil {
					return int64(u) // 18446744073709551615 outside a Primary component: -1
				}
			}
			return i
		}
		switch name {
		case "wsrep_ready":
			s.Ready = val == "ON"
		case "wsrep_connected":
			s.Connected = val == "ON"
		case "wsrep_cluster_status":
			s.ClusterStatus = val
		case "wsrep_local_state":
			s.LocalState = int(num())
		case "wsrep_local_state_comment":
			s.LocalStateComment = val
		case "wsrep_desync_count":
			s.DesyncCount = int(num())
		case "wsrep_cluster_size":
			s.ClusterSize = int(num())
		case "wsrep_cluster_conf_id":
			s.ClusterConfID = num()
		case "wsrep_cluster_state_uuid":
			s.StateUUID = val
		case "wsrep_local_index":
			s.LocalIndex = int(num())
		case "wsrep_last_committed":
			s.LastCommitted = num()
		case "desync":
			s.Desync = val == "1" || val == "ON"
		case "reject_queries":
			s.RejectQueries = val
		}
	}
	if err := rows.Err(); err != nil {
		return s, n.wrap("wsrep status", err)
	}
	if seen < 4 {
		return s, n.wrap("wsrep status", errors.New("no wsrep status: not a Galera node"))
	}
	return s, nil
}

// galeraPoll is how often the harness reads a Galera node's status while it waits.
const galeraPoll = 20 * time.Millisecond

// WaitStatus reads the node's GaleraStatus every 20 ms until cond holds and returns that
// status; at ctx's end (default: 60 s) the error says what it waited for (what: "Synced",
// "size 2") and names the last status read, or the last error.
func (n *Node) WaitStatus(ctx context.Context, what string, cond func(GaleraStatus) bool) (GaleraStatus, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	t := time.NewTicker(galeraPoll)
	defer t.Stop()
	var last GaleraStatus
	var lastErr error
	for {
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		s, err := n.GaleraStatus(qctx)
		cancel()
		if err == nil && cond(s) {
			return s, nil
		}
		if err == nil {
			last, lastErr = s, nil
		} else {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return last, n.wrap("wait until "+what, fmt.Errorf("%w (last error: %v)", ctx.Err(), lastErr))
			}
			return last, n.wrap("wait until "+what, fmt.Errorf("%w; last status: %v", ctx.Err(), last))
		case <-t.C:
		}
	}
}

func (n *Node) needGalera(what string) error {
	if !n.c.galera {
		return n.wrap(what, errors.New("not a Galera cluster (start it WithGalera)"))
	}
	return nil
}

// setGmcastIsolate sets gmcast.isolate (Galera closes its group connections and refuses
// new ones, or reconnects) and records it for Isolated.
func (n *Node) setGmcastIsolate(ctx context.Context, on bool) error {
	v := 0
	if on {
		v = 1
	}
	if err := n.Exec(ctx, fmt.Sprintf("SET GLOBAL wsrep_provider_options='gmcast.isolate=%d'", v)); err != nil {
		return err
	}
	n.setIsolated(on)
	return nil
}

func (n *Node) setIsolated(on bool) {
	n.mu.Lock()
	n.isolated = on
	n.mu.Unlock()
}

// Isolated reports whether Isolate or LoseQuorum cut the node off (and Unisolate or
// RestoreQuorum have not undone it).
func (n *Node) Isolated() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.isolated
}

// Isolate cuts the node off from the other members of its Galera cluster
// (SET GLOBAL wsrep_provider_options='gmcast.isolate=1': Galera closes its group
// connections and refuses new ones) and returns once it reports non-Primary and the others
// go on as a Primary component without it (about 2.4 s; Galera's default timeouts: 5 s;
// meanwhile their writes stall).
// The isolated node still answers: handshakes, SELECT 1, SET, USE, SHOW and reads of
// variables and of information_schema work, every statement on a table, BEGIN, COMMIT,
// ROLLBACK and DO get error 1047 (08S01) "WSREP has not yet prepared node for application
// use"; it reports wsrep_ready OFF, cluster_status non-Primary, local state 0
// (Initialized), cluster size 1, conf id -1. A transaction open on it stays open through
// those refusals (ROLLBACK is refused too) and after Unisolate. Unisolate undoes it.
func (n *Node) Isolate(ctx context.Context) error {
	if err := n.needGalera("isolate"); err != nil {
		return err
	}
	if err := n.setGmcastIsolate(ctx, true); err != nil {
		return err
	}
	if _, err := n.WaitStatus(ctx, "non-Primary", func(s GaleraStatus) bool { return s.ClusterStatus != "Primary" }); err != nil {
		return err
	}
	return n.c.waitSettled(ctx)
}

// waitSettled waits until every running node that is not cut off has installed the view
// without the nodes that are: Synced in a component of the running, reachable nodes, or
// non-Primary when they are no majority. Until the others have evicted a node that stopped
// answering, their writes stall (2.2 to 2.5 s measured after an isolation, a SIGKILL or a
// SIGSTOP of a node; Galera's defaults: about 5 s).
func (c *Cluster) waitSettled(ctx context.Context) error {
	var up []*Node
	for _, o := range c.list() {
		if o.State() == Running && !o.Isolated() && !o.Partitioned() {
			up = append(up, o)
		}
	}
	return eachNode(up, func(o *Node) error {
		_, err := o.WaitStatus(ctx, fmt.Sprintf("a component of %d or none", len(up)), func(s GaleraStatus) bool {
			return s.ClusterStatus != "Primary" || s.Synced() && s.ClusterSize == len(up)
		})
		return err
	})
}

// Unisolate ends Isolate (gmcast.isolate=0): the node reconnects and rejoins by IST, by
// itself, and Unisolate returns once it is Synced in a Primary component (about 3 s). When
// the nodes it reconnects to have no Primary component either (quorum lost), it waits until
// they get one: end the isolation of several nodes at once with RestoreQuorum.
func (n *Node) Unisolate(ctx context.Context) error {
	if err := n.needGalera("unisolate"); err != nil {
		return err
	}
	if err := n.setGmcastIsolate(ctx, false); err != nil {
		return err
	}
	_, err := n.WaitStatus(ctx, "Synced", GaleraStatus.Synced)
	return err
}

// SetDesync sets wsrep_desync: on, the node leaves flow control and may fall behind
// (wsrep_local_state 2, "Donor/Desynced", wsrep_desync_count 1) while it goes on taking
// reads and writes as before (nothing is refused); off, it is Synced again (within about
// 50 ms when it has not fallen behind). It returns once the node reports the state.
func (n *Node) SetDesync(ctx context.Context, on bool) error {
	if err := n.needGalera("desync"); err != nil {
		return err
	}
	v, want := "OFF", LocalStateSynced
	if on {
		v, want = "ON", LocalStateDonor
	}
	if err := n.Exec(ctx, "SET GLOBAL wsrep_desync="+v); err != nil {
		return err
	}
	_, err := n.WaitStatus(ctx, "wsrep_local_state "+strconv.Itoa(want), func(s GaleraStatus) bool {
		return s.LocalState == want && s.Desync == on
	})
	return err
}

// RejectMode is a value of wsrep_reject_queries.
type RejectMode string

// The values of wsrep_reject_queries.
const (
	RejectNone    RejectMode = "NONE"     // take queries (the default)
	RejectAll     RejectMode = "ALL"      // refuse them; open sessions stay open
	RejectAllKill RejectMode = "ALL_KILL" // refuse them and close every other open session
)

// RejectQueries sets wsrep_reject_queries. ALL: the node refuses what a non-Primary node
// refuses, with the same error 1047 (08S01), while its status still says ready, Primary
// and Synced (only @@wsrep_reject_queries tells); open sessions and their transactions
// stay open (their COMMIT and ROLLBACK get 1047). ALL_KILL also closes every other session
// at once, the harness's idle admin connections included (a client's next statement on one
// reads EOF: go-sql-driver's ErrInvalidConn); new sessions are accepted. NONE ends it.
func (n *Node) RejectQueries(ctx context.Context, mode RejectMode) error {
	if err := n.needGalera("reject queries"); err != nil {
		return err
	}
	switch mode {
	case RejectNone, RejectAll, RejectAllKill:
	default:
		return n.wrap("reject queries", fmt.Errorf("mode %q: want NONE, ALL or ALL_KILL", mode))
	}
	// One connection for the statement and its check: with ALL_KILL the session that sets
	// it is the only one the server keeps.
	conn, err := n.admin.Conn(ctx)
	if err != nil {
		return n.wrap("reject queries", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "SET GLOBAL wsrep_reject_queries="+string(mode)); err != nil {
		return n.wrap("reject queries", err)
	}
	if mode == RejectAllKill {
		n.dropIdleAdmin()
	}
	return nil
}

// Resync wipes the node's Galera state and lets it join again by a full state transfer
// (rsync SST) from donor (nil: any node Galera chooses), as a node whose data was lost:
// it shuts the server down cleanly, resets its saved state (grastate.dat), starts it with
// wsrep_sst_donor naming donor (the others allowed when donor cannot donate) and returns
// once it is Synced. Meanwhile donor reports wsrep_local_state 2 ("Donor/Desynced") for
// the transfer's duration (about a second for a test's data; rsync blocks the donor's
// writes with FLUSH TABLES WITH READ LOCK while it copies), then Synced again.
func (n *Node) Resync(ctx context.Context, donor *Node) error {
	if err := n.needGalera("resync"); err != nil {
		return err
	}
	if donor == n {
		return n.wrap("resync", errors.New("a node cannot be its own donor"))
	}
	gi, ok := n.inst.(galeraInstance)
	if !ok {
		return n.wrap("resync", fmt.Errorf("%T cannot reset a Galera node's state", n.inst))
	}
	if err := n.Stop(ctx); err != nil {
		return err
	}
	name := ""
	if donor != nil {
		name = galeraNodeName(donor.idx)
	}
	if err := gi.forgetState(ctx, name); err != nil {
		return n.wrap("resync", err)
	}
	return n.Restart(ctx)
}

// Bootstrap makes node i's component the Primary component
// (SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'), as an operator does after a
// quorum loss, and returns once the node is Synced in it (within 30 ms on a lone
// survivor). Killed nodes then rejoin it by Restart; isolated ones by Unisolate. Bootstrap
// a node of the component that should win: a second Primary component on the other side
// of a partition splits the cluster's history.
func (c *Cluster) Bootstrap(ctx context.Context, i int) error {
	n := c.Node(i)
	if err := n.needGalera("bootstrap"); err != nil {
		return err
	}
	if err := n.Exec(ctx, "SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'"); err != nil {
		return err
	}
	_, err := n.WaitStatus(ctx, "Synced", GaleraStatus.Synced)
	return err
}

// LoseQuorum isolates every node but survivor at once (gmcast.isolate=1, as Isolate) and
// returns once each of them and survivor report non-Primary: no component has a majority,
// so every node refuses work with 1047 (about 2 s). RestoreQuorum undoes it; so does
// Bootstrap(survivor) followed by Unisolate of the others.
func (c *Cluster) LoseQuorum(ctx context.Context, survivor int) error {
	s := c.Node(survivor)
	if err := s.needGalera("lose quorum"); err != nil {
		return err
	}
	var others []*Node
	for _, n := range c.list() {
		if n != s && n.State() == Running {
			others = append(others, n)
		}
	}
	if err := eachNode(others, func(n *Node) error { return n.setGmcastIsolate(ctx, true) }); err != nil {
		return err
	}
	return eachNode(append(others, s), func(n *Node) error {
		_, err := n.WaitStatus(ctx, "non-Primary", func(st GaleraStatus) bool { return st.ClusterStatus != "Primary" })
		return err
	})
}

// RestoreQuorum ends the isolation of every isolated node at once (gmcast.isolate=0) and
// waits until the cluster is whole again (WaitSynced): the nodes of the last Primary
// component find each other and form it again by themselves (about 3 s). Nodes that are
// down (killed, stopped) it cannot bring back: WaitSynced fails on them; Restart them
// first, after a Bootstrap of a survivor when no component has quorum.
func (c *Cluster) RestoreQuorum(ctx context.Context) error {
	if !c.galera {
		return errors.New("harness: restore quorum: not a Galera cluster (start it WithGalera)")
	}
	var isolated []*Node
	for _, n := range c.list() {
		if n.Isolated() {
			isolated = append(isolated, n)
		}
	}
	if err := eachNode(isolated, func(n *Node) error { return n.setGmcastIsolate(ctx, false) }); err != nil {
		return err
	}
	return c.WaitSynced(ctx)
}

// WaitSynced waits until the Galera cluster is whole: every node Synced (ready, Primary,
// local state 4) in a component of all N nodes, with the same state UUID and, once no write
// is in flight, the same wsrep_last_committed. A node that is down, frozen, isolated or
// partitioned is an error at once (it cannot become whole); at ctx's end (default 60 s) the error names each
// node's last status.
func (c *Cluster) WaitSynced(ctx context.Context) error {
	if !c.galera {
		return errors.New("harness: wait synced: not a Galera cluster (start it WithGalera)")
	}
	for _, n := range c.list() {
		if st := n.State(); st != Running {
			return fmt.Errorf("harness: wait synced: node %d is %s", n.idx, st)
		}
		if n.Isolated() || n.Partitioned() {
			return fmt.Errorf("harness: wait synced: node %d is isolated or partitioned", n.idx)
		}
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Minute)
		defer cancel()
	}
	N := len(c.list())
	t := time.NewTicker(galeraPoll)
	defer t.Stop()
	last := make([]string, N)
	for {
		sts := make([]GaleraStatus, N)
		errs := make([]error, N)
		var wg sync.WaitGroup
		for k, n := range c.list() {
			wg.Add(1)
			go func() {
				defer wg.Done()
				qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				defer cancel()
				sts[k], errs[k] = n.GaleraStatus(qctx)
			}()
		}
		wg.Wait()
		whole := true
		for k := range sts {
			s := sts[k]
			if errs[k] != nil {
				last[k] = errs[k].Error()
				whole = false
				continue
			}
			last[k] = s.String()
			if !s.Synced() || s.ClusterSize != N || s.StateUUID != sts[0].StateUUID || s.LastCommitted != sts[0].LastCommitted {
				whole = false
			}
		}
		if whole {
			return nil
		}
		select {
		case <-ctx.Done():
			var parts []string
			for k, l := range last {
				parts = append(parts, fmt.Sprintf("node %d: %s", k+1, l))
			}
			return fmt.Errorf("harness: the Galera cluster is not whole: %w; %s", ctx.Err(), strings.Join(parts, "; "))
		case <-t.C:
		}
	}
}

// waitGaleraApplied waits until every running node of the Primary component has applied
// the last write set any of them has (wsrep_last_committed): Galera's
// WaitReplicasCaughtUp. Isolated, frozen, down and non-Primary nodes are left out.
func (c *Cluster) waitGaleraApplied(ctx context.Context) error {
	var nodes []*Node
	for _, n := range c.list() {
		if n.State() == Running && !n.Isolated() {
			nodes = append(nodes, n)
		}
	}
	var target int64
	var mu sync.Mutex
	var primary []*Node
	if err := eachNode(nodes, func(n *Node) error {
		s, err := n.GaleraStatus(ctx)
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		if s.ClusterStatus == "Primary" {
			primary = append(primary, n)
			target = max(target, s.LastCommitted)
		}
		return nil
	}); err != nil {
		return err
	}
	return eachNode(primary, func(n *Node) error {
		_, err := n.WaitStatus(ctx, fmt.Sprintf("wsrep_last_committed >= %d", target), func(s GaleraStatus) bool {
			return s.LastCommitted >= target
		})
		return err
	})
}

// setUpGalera creates the users and databases on node 1 (Galera replicates them) and waits
// until the cluster is whole with them.
func (c *Cluster) setUpGalera(ctx context.Context) error {
	p := c.list()[0]
	c.flavour = p.flavour
	if c.flavour != MariaDB {
		return fmt.Errorf("harness: node 1 runs %s: Galera clusters are MariaDB only", c.flavour)
	}
	// Every node Synced in one Primary component first: a node that has just joined may
	// still refuse work with 1047 (seen on a fresh machine, the CPU busy with builds:
	// node 1 refused the CREATE DATABASE below).
	if err := c.WaitSynced(ctx); err != nil {
		return fmt.Errorf("harness: Galera set-up: %w", err)
	}
	// A node takes the domain of its wsrep GTIDs from the cluster's state over
	// wsrep_gtid_domain_id (seen: nodes started with wsrep_gtid_domain_id=1 wrote GTIDs
	// 0-1-n); setting the variable again while they run takes effect at once, and the
	// nodes that join later get the domain from their donor.
	if err := eachNode(c.list(), func(n *Node) error {
		return n.Exec(ctx, "SET GLOBAL wsrep_gtid_domain_id = "+strconv.Itoa(wsrepGTIDDomain))
	}); err != nil {
		return fmt.Errorf("harness: Galera set-up: %w", err)
	}
	for _, q := range c.flavour.appSetUp() {
		if err := p.Exec(ctx, q); err != nil {
			return fmt.Errorf("harness: Galera set-up: %w", err)
		}
	}
	return c.WaitSynced(ctx)
}

// Galera reports whether the cluster is a Galera cluster (WithGalera).
func (c *Cluster) Galera() bool { return c.galera }

// eachNode runs f on every node at once and joins the errors.
func eachNode(nodes []*Node, f func(*Node) error) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for k, n := range nodes {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[k] = f(n)
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
