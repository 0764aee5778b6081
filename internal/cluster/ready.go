package cluster

// Readiness: whether a server that answers is ready for application use, in its own
// words. A Galera node outside the Primary component completes the handshake and answers
// SELECT 1, yet refuses every statement that touches a table with 1047; a MySQL server in
// offline_mode refuses non-admin sessions with 3032; a Group Replication member that is
// not ONLINE refuses transactions with 3796. The socket says nothing of it: readiness is
// read from the server (ReadState: the variables of RoleQuery, then the cluster's own
// status), or learned from its refusal (Refusal), and kept with the host's health
// (health.go), where walks, the probes' decisions and fall-back read it.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// Kind is the kind of cluster the hosts form (dsn's cluster option), which decides how
// readiness is read.
type Kind int32

const (
	// KindUnknown: cluster=auto, and no server has said yet (see Cluster.Kind).
	KindUnknown Kind = iota
	// KindReplication: asynchronous replication or single servers: a server that
	// answers is ready, unless it is in offline_mode.
	KindReplication
	// KindGalera: MariaDB Galera Cluster or Percona XtraDB Cluster (wsrep_on=ON): ready
	// only in the Primary component, synced, and neither desynced nor rejecting queries
	// (see galeraReady).
	KindGalera
	// KindGroup: MySQL Group Replication (InnoDB Cluster): ready only while the member
	// is ONLINE in a group that has quorum (see groupReady).
	KindGroup
)

// String returns "unknown", "replication", "galera" or "group": the value of dsn's
// cluster option.
func (k Kind) String() string {
	switch k {
	case KindReplication:
		return "replication"
	case KindGalera:
		return "galera"
	case KindGroup:
		return "group"
	}
	return "unknown"
}

// kindOf is the Kind a value of dsn's cluster option forces ("", "auto": none).
func kindOf(option string) Kind {
	switch option {
	case "replication":
		return KindReplication
	case "galera":
		return KindGalera
	case "group":
		return KindGroup
	}
	return KindUnknown
}

// NotReadyError says that a host answered but is not ready for application use, by the
// server's own word: its status (Reason) or its refusal of a connection or a statement
// (Cause). It is not a communication error: the host is up, a statement it refused did
// not run, and the walk goes on to the next host. No walk, connect or fall-back chooses
// the host until the server says it is ready again.
type NotReadyError struct {
	// Kind is the cluster type whose rule the host failed.
	Kind Kind
	// Reason says what the server reported ("wsrep_cluster_status=non-Primary: ...").
	Reason string
	// Cause is the server's refusal (a *mysql.MySQLError 1047, 3032, 3796 or 3799), nil
	// when the state was read from the server's status.
	Cause error
}

// Error returns "not ready: " and the reason, then the server's refusal if any.
func (e *NotReadyError) Error() string {
	s := "not ready: " + e.Reason
	if e.Cause != nil {
		s += " (" + e.Cause.Error() + ")"
	}
	return s
}

// Unwrap returns Cause.
func (e *NotReadyError) Unwrap() error { return e.Cause }

// Demoted reports true: a host left for not being ready was left for what its server
// said, not for a failed connection (a *failover.FailoverError says "left" it).
func (e *NotReadyError) Demoted() bool { return true }

// Refusal returns the NotReadyError that err says, when err is a server's refusal to run
// anything because it is not ready (dialect.NotReady: 1047, 3032, 3796, 3799), else nil.
func Refusal(err error) *NotReadyError {
	return notReadyOf(dialect.NotReady(err))
}

// LostPrimary returns the NotReadyError that err says when it is a Galera node's 1180
// with the provider status "Not connected to Primary Component" (dialect.LostPrimary):
// the node lost the Primary component while it replicated the statement's commit, and
// is not ready. Unlike a Refusal, the commit may have taken effect. Else nil.
func LostPrimary(err error) *NotReadyError {
	return notReadyOf(dialect.LostPrimary(err))
}

// notReadyOf is the NotReadyError of what a server said (nil: nil).
func notReadyOf(u *dialect.Unready) *NotReadyError {
	if u == nil {
		return nil
	}
	return &NotReadyError{Kind: kindOf(u.Cluster), Reason: u.Reason, Cause: u.Err}
}

// GaleraStatusQuery reads a Galera node's state, one round trip after RoleQuery. SHOW
// needs no privilege and works on a node outside the Primary component, which refuses
// every statement that reads a table.
const GaleraStatusQuery = "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_cluster_status', 'wsrep_local_state', 'wsrep_local_state_comment', 'wsrep_cluster_state_uuid', 'wsrep_cluster_size', 'wsrep_last_committed', 'wsrep_local_index', 'wsrep_gcomm_uuid')"

// GroupMemberQuery reads a Group Replication member's own state and the group's quorum,
// one round trip after RoleQuery: the member's MEMBER_STATE, then how many members the
// group has and how many of them are UNREACHABLE from this member (a majority
// unreachable: the group has lost quorum, and blocks every write).
const GroupMemberQuery = "SELECT MEMBER_STATE, (SELECT COUNT(*) FROM performance_schema.replication_group_members), " +
	"(SELECT COUNT(*) FROM performance_schema.replication_group_members WHERE MEMBER_STATE = 'UNREACHABLE') " +
	"FROM performance_schema.replication_group_members WHERE MEMBER_ID = @@server_uuid"

// State is what ReadState found of a server: its role, its cluster type, whether it is
// ready, and for Galera what the writer's choice and the lag use.
type State struct {
	Role     failover.Role
	Kind     Kind
	NotReady *NotReadyError // nil: ready
	Galera   GaleraState    // with Kind KindGalera
	// Ident is the server's identity within its cluster, as discovery's reports name
	// it: "galera:" and the node's UUID (wsrep_gcomm_uuid, new at each start of the
	// node), "uuid:" and @@server_uuid for a Group Replication member, else "id:" and
	// @@server_id; "" when not reported.
	Ident string
}

// GaleraState is a Galera node's place in its cluster, from GaleraStatusQuery.
type GaleraState struct {
	// UUID is wsrep_cluster_state_uuid: the same on every node of one cluster history.
	UUID string
	// Size is wsrep_cluster_size: the nodes of its component (count).
	Size int
	// Seqno is wsrep_last_committed: the last write set it committed (count).
	Seqno int64
	// Index is wsrep_local_index: its index in the component (MaxScale's galeramon
	// chooses the writer by it).
	Index int
	// Node is wsrep_gcomm_uuid: the node's own UUID in the group, as
	// mysql.wsrep_cluster_members names it ("" when not reported).
	Node string
}

// ReadState reads over conn the server's role (as ReadRole), its cluster type and
// whether it is ready for application use: RoleQuery, and for Galera GaleraStatusQuery
// or for Group Replication GroupMemberQuery (two round trips then). want is the type the
// DSN forces (KindUnknown: what the server says): a server that does not run it is not
// ready, with a reason that names the option. A server in offline_mode is not ready
// whatever its type. The error is the driver's (a broken connection, a refusal), or a
// plain one when the answer lacks read_only.
func ReadState(ctx context.Context, conn driver.Conn, want Kind) (State, error) {
	return readState(ctx, conn, want, nil, time.Time{})
}

// readState is ReadState with the role read through learned (roleVars; nil: RoleQuery).
func readState(ctx context.Context, conn driver.Conn, want Kind, learned *atomic.Pointer[roleSelect], now time.Time) (State, error) {
	vars, err := roleVars(ctx, conn, learned, now)
	if err != nil {
		return State{}, err
	}
	st := State{}
	if st.Role, err = roleOf(vars); err != nil {
		return st, err
	}
	galera := on(vars["wsrep_on"])
	group := vars["group_replication_group_name"] != ""
	switch {
	case galera:
		st.Kind = KindGalera
	case group:
		st.Kind = KindGroup
	default:
		st.Kind = KindReplication
	}
	if want == KindReplication {
		st.Kind = want // the DSN says so: no cluster status is read
	}
	st.Ident = identOf(st.Kind, vars, nil)
	if want != KindUnknown && want != st.Kind {
		st.NotReady = &NotReadyError{Kind: want, Reason: notRunning(want, vars)}
		return st, nil
	}
	if on(vars["offline_mode"]) {
		st.NotReady = &NotReadyError{Kind: KindReplication, Reason: "offline_mode=ON: the server refuses sessions without CONNECTION_ADMIN"}
		return st, nil
	}
	switch st.Kind {
	case KindGalera:
		status, err := showRows(ctx, conn, GaleraStatusQuery)
		if err != nil {
			return st, err
		}
		st.Galera = galeraStateOf(status)
		st.Ident = identOf(st.Kind, vars, status)
		if why := galeraReady(vars, status); why != "" {
			st.NotReady = &NotReadyError{Kind: KindGalera, Reason: why}
		}
	case KindGroup:
		why, err := groupReady(ctx, conn)
		if err != nil {
			return st, err
		}
		if why != "" {
			st.NotReady = &NotReadyError{Kind: KindGroup, Reason: why}
		}
	}
	return st, nil
}

// notRunning says why a server is not of the kind the DSN wants.
func notRunning(want Kind, vars map[string]string) string {
	if want == KindGalera {
		v := vars["wsrep_on"]
		if v == "" {
			v = "absent"
		}
		return "cluster=galera, but the server does not run Galera (wsrep_on " + v + ")"
	}
	return "cluster=group, but the server is not a Group Replication member (group_replication_group_name is empty or absent)"
}

// galeraReady says why a Galera node is not ready ("" when it is), from its variables
// (RoleQuery) and status (GaleraStatusQuery), as MaxScale's galeramon judges a node:
// wsrep_ready ON, wsrep_cluster_status Primary, wsrep_local_state 4 (Synced), or 2
// (Donor/Desynced) while it donates with a state transfer that does not block it
// (mariabackup, xtrabackup, clone: galeramon's available_when_donor), not desynced
// (wsrep_desync), not rejecting queries (wsrep_reject_queries NONE). Which cluster the
// majority of the listed nodes is in is the Cluster's to judge (noteGalera).
func galeraReady(vars, status map[string]string) string {
	if v := status["wsrep_ready"]; !on(v) {
		return "wsrep_ready=" + orAbsent(v) + ": the node does not accept queries"
	}
	if v := status["wsrep_cluster_status"]; !strings.EqualFold(v, "Primary") {
		return "wsrep_cluster_status=" + orAbsent(v) + ": the node is outside the Primary component (it lost quorum)"
	}
	if v := vars["wsrep_reject_queries"]; v != "" && !strings.EqualFold(v, "NONE") {
		return "wsrep_reject_queries=" + v + ": the node refuses client queries"
	}
	if on(vars["wsrep_desync"]) {
		return "wsrep_desync=ON: the node is desynced from the cluster and may fall behind"
	}
	state := status["wsrep_local_state"]
	comment := status["wsrep_local_state_comment"]
	switch state {
	case "4":
		return ""
	case "2":
		if m := strings.ToLower(vars["wsrep_sst_method"]); nonBlockingSST(m) {
			return "" // donating with a state transfer that does not block it
		}
		return "wsrep_local_state=2 (" + orAbsent(comment) + "): the node is a donor whose state transfer (wsrep_sst_method=" +
			orAbsent(vars["wsrep_sst_method"]) + ") blocks it"
	}
	return "wsrep_local_state=" + orAbsent(state) + " (" + orAbsent(comment) + "): the node is not synced with the cluster"
}

// nonBlockingSST reports whether a donor keeps serving during a state transfer of method
// m: the backup-tool methods copy a live node, rsync and mysqldump lock it.
func nonBlockingSST(m string) bool {
	return strings.HasPrefix(m, "mariabackup") || strings.HasPrefix(m, "xtrabackup") || m == "clone"
}

// galeraStateOf reads a node's place in its cluster from its status.
func galeraStateOf(status map[string]string) GaleraState {
	g := GaleraState{UUID: status["wsrep_cluster_state_uuid"], Size: -1, Seqno: -1, Index: -1}
	if n, err := strconv.Atoi(status["wsrep_cluster_size"]); err == nil {
		g.Size = n
	}
	if n, err := strconv.ParseInt(status["wsrep_last_committed"], 10, 64); err == nil {
		g.Seqno = n
	}
	if n, err := strconv.Atoi(status["wsrep_local_index"]); err == nil {
		g.Index = n
	}
	g.Node = status["wsrep_gcomm_uuid"]
	return g
}

// identOf is a server's State.Ident, from its variables (RoleQuery) and, for Galera,
// its status (GaleraStatusQuery; nil: not read yet).
func identOf(k Kind, vars, status map[string]string) string {
	switch k {
	case KindGalera:
		if u := status["wsrep_gcomm_uuid"]; u != "" {
			return identGalera + strings.ToLower(u)
		}
		return ""
	case KindGroup:
		if u := vars["server_uuid"]; u != "" {
			return identUUID + strings.ToLower(u)
		}
		return ""
	}
	if id := vars["server_id"]; id != "" {
		return identID + id
	}
	return ""
}

// The prefixes of State.Ident, one per cluster type.
const (
	identGalera = "galera:"
	identUUID   = "uuid:"
	identID     = "id:"
)

// groupReady says why a Group Replication member is not ready ("" when it is): its own
// MEMBER_STATE is not ONLINE, or a majority of the group is UNREACHABLE from it (it
// lost quorum). An error the server answers with (the user may not read
// performance_schema) leaves the membership unknown, and the member is taken as ready:
// its refusals still count (Refusal). A communication error is returned.
func groupReady(ctx context.Context, conn driver.Conn) (string, error) {
	rows, err := queryRows(ctx, conn, GroupMemberQuery)
	if err != nil {
		var me *mysql.MySQLError
		if errors.As(err, &me) && Refusal(err) == nil {
			return "", nil
		}
		return "", err
	}
	if len(rows) == 0 {
		return "not a member of its group: no row for @@server_uuid in performance_schema.replication_group_members (Group Replication is not running)", nil
	}
	r := rows[0]
	state := dialect.Text(r[0])
	total, _ := strconv.Atoi(dialect.Text(r[1]))
	unreachable, _ := strconv.Atoi(dialect.Text(r[2]))
	if !strings.EqualFold(state, "ONLINE") {
		return "the Group Replication member is " + orAbsent(state) + ", not ONLINE", nil
	}
	if total > 0 && 2*unreachable >= total {
		return fmt.Sprintf("the group lost quorum: %d of its %d members are UNREACHABLE from this one", unreachable, total), nil
	}
	return "", nil
}

// roleOf is ReadRole's verdict on RoleQuery's answer.
func roleOf(vars map[string]string) (failover.Role, error) {
	ro, seen := vars["read_only"]
	if !seen {
		return failover.RoleUnknown, errors.New("mysqlfailover: the server did not report read_only")
	}
	switch {
	case set(ro) || set(vars["super_read_only"]):
		return failover.RoleStandby, nil
	case set(vars["transaction_read_only"]) || set(vars["tx_read_only"]):
		return failover.RoleReadOnlyPrimary, nil
	}
	return failover.RolePrimary, nil
}

// set reports whether a read-only variable's value v is other than OFF (MariaDB 11's
// NO_LOCK values too); "" (absent) is not.
func set(v string) bool { return v != "" && !strings.EqualFold(v, "OFF") && v != "0" }

// on reports whether a boolean variable's value v is ON (or 1).
func on(v string) bool { return strings.EqualFold(v, "ON") || v == "1" }

func orAbsent(v string) string {
	if v == "" {
		return "(absent)"
	}
	return v
}

// showRows runs a SHOW ... WHERE Variable_name IN (...) query over conn and returns its
// name-value pairs, names in lower case.
func showRows(ctx context.Context, conn driver.Conn, query string) (map[string]string, error) {
	rows, err := queryRows(ctx, conn, query)
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, len(rows))
	for _, r := range rows {
		if len(r) >= 2 {
			m[strings.ToLower(dialect.Text(r[0]))] = dialect.Text(r[1])
		}
	}
	return m, nil
}

// queryRows runs query over conn and returns every row, read to the end and closed.
func queryRows(ctx context.Context, conn driver.Conn, query string) ([][]driver.Value, error) {
	out, _, err := queryColumns(ctx, conn, query)
	return out, err
}

// queryColumns is queryRows, with the result's column names.
func queryColumns(ctx context.Context, conn driver.Conn, query string) ([][]driver.Value, []string, error) {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return nil, nil, errors.New("mysqlfailover: the connection cannot run the role query (no driver.QueryerContext)")
	}
	cols, out, err := dialect.Query(ctx, q, query, dialect.All)
	return out, cols, err
}

// Kind returns the cluster type: the one dsn's cluster option forces, else the one the
// servers reported (KindUnknown until one has).
func (c *Cluster) Kind() Kind { return Kind(c.kind.Load()) }

// MultiWriter reports whether every ready host takes writes (Galera), so that
// failOverReadOnly does not make the sessions on a secondary read-only: the node the pool
// moves to is as much a writer as the one it left.
func (c *Cluster) MultiWriter() bool { return c.Kind() == KindGalera }

// learnKind records k, what a server reported of itself, as the cluster type when none
// is known yet (cluster=auto). The first report stands: a DSN names one cluster.
func (rc *recorder) learnKind(k Kind) {
	if k != KindUnknown {
		rc.c.kind.CompareAndSwap(int32(KindUnknown), int32(k))
	}
}

// needsState reports whether an attempt on a new session reads the server's state
// (ReadState) before using it: for the role check of targetSessionAttrs; when the
// cluster type has a readiness to read (Galera, Group Replication); and, with
// cluster=auto, until a server has said what the cluster is (one round trip, once per
// pool: a single host with no host list has nowhere else to go, and is not asked).
func (rc *recorder) needsState(t *topo) bool {
	switch rc.c.Kind() {
	case KindGalera, KindGroup:
		return true
	case KindUnknown:
		if len(t.list) > 1 || rc.env.Provider != nil || rc.cfg.HostsURL != "" || rc.cfg.DiscoverHosts {
			return true
		}
	}
	return rc.c.Target() != attrs.Any
}

// noteState records st, what a read of host id's state found (an attempt's or a probe's):
// its role (as setRole), the cluster type, its readiness, and for Galera its place in
// the cluster, a node in a smaller cluster than another listed node's being not ready
// (noteGalera). It reports whether the host is ready and qualifies for the target.
func (rc *recorder) noteState(id int, st State) bool {
	rc.learnKind(st.Kind)
	nr := st.NotReady
	if nr == nil && st.Kind == KindGalera {
		nr = rc.noteGalera(id, st.Galera)
	}
	if dup := rc.noteIdent(id, st.Ident); nr == nil {
		nr = dup
	}
	qualifies := rc.setRole(id, st.Role)
	rc.setReady(id, nr)
	return qualifies && nr == nil
}

// NoteRefusal records that host refused a connection or a statement because it is not
// ready (nr, from Refusal): it is left by the connection that got it (as for a role that
// no longer qualifies), and by every walk until a read of its state says it is ready
// again. A Galera refusal tells the cluster type when it was not known.
func (c *Cluster) NoteRefusal(host int, nr *NotReadyError) {
	if nr.Kind != KindReplication {
		c.rec.learnKind(nr.Kind)
	}
	c.rec.setReady(host, nr)
}

// setReady records host's readiness (nr nil: ready), reports a change (EventHostState:
// HostNotReady with nr, or HostUp), and publishes the position again when the host is
// the active one, whose fitness it changes (Place).
func (rc *recorder) setReady(host int, nr *NotReadyError) {
	h := rc.c.topo().host(host)
	if h == nil {
		return
	}
	h.mu.Lock()
	was := h.notReady
	h.notReady = nr
	if nr != nil {
		h.mon.endPassRun() // a run of passed probes starts when it is ready again
	}
	h.mu.Unlock()
	if (was == nil) == (nr == nil) {
		return
	}
	rc.c.writers.gen.Add(1) // a look at the writable hosts is out of date
	rc.c.rep.changed()
	rc.c.refit(host)
	if nr != nil {
		rc.c.emit(failover.Event{Kind: failover.EventHostState, Host: h.addr, State: failover.HostNotReady, Err: nr})
	} else {
		rc.c.emit(failover.Event{Kind: failover.EventHostState, Host: h.addr, State: failover.HostUp})
	}
}

// noteGalera records g, host id's place in its Galera cluster, and returns why the host
// is not ready when another listed node, read within DefaultClusterViewAge, is in a
// Primary component of another cluster history (wsrep_cluster_state_uuid) with more
// nodes (wsrep_cluster_size): two Primary components exist only when an operator
// bootstrapped a minority (pc.bootstrap) while the majority lived on, and writes to the
// smaller one would be lost when they meet. MaxScale's galeramon likewise uses only the
// nodes of the cluster most nodes are in.
func (rc *recorder) noteGalera(id int, g GaleraState) *NotReadyError {
	t := rc.c.topo()
	h := t.host(id)
	if h == nil {
		return nil
	}
	now := rc.env.Clock.Now()
	h.gal.set(g, now)
	for _, o := range t.list {
		if o == id {
			continue
		}
		oh := t.hosts[o]
		oh.mu.Lock()
		nr := oh.notReady
		og, at := oh.gal.get()
		oh.mu.Unlock()
		if at.IsZero() || now.Sub(at) > DefaultClusterViewAge || nr != nil || og.UUID == "" || g.UUID == "" {
			continue
		}
		if og.UUID != g.UUID && og.Size > g.Size {
			return &NotReadyError{Kind: KindGalera, Reason: fmt.Sprintf(
				"in a smaller cluster than %s: state UUID %s with %d node(s), against %s with %d (a minority bootstrapped apart)",
				oh.addr, g.UUID, g.Size, og.UUID, og.Size)}
		}
	}
	return nil
}
