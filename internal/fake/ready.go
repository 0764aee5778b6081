package fake

import (
	"database/sql/driver"
	"sort"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// The answers of real servers that are not ready for application use, as their
// refusals of a statement (MariaDB 10.11 Galera, MySQL 8.0).
var (
	// NotPreparedError is what a Galera node outside the Primary component, not synced,
	// or with wsrep_reject_queries set, answers a statement that touches a table, BEGIN
	// and COMMIT.
	NotPreparedError = &mysql.MySQLError{Number: dialect.ErrUnknownCom, SQLState: [5]byte{'0', '8', 'S', '0', '1'},
		Message: "WSREP has not yet prepared node for application use"}
	// LostPrimaryError is what a Galera node answers a commit (an autocommit statement's,
	// a COMMIT, a streaming replication fragment) it could not replicate because it left
	// the Primary component meanwhile; the other nodes may have committed it.
	LostPrimaryError = &mysql.MySQLError{Number: dialect.ErrErrorDuringCommit, SQLState: [5]byte{'H', 'Y', '0', '0', '0'},
		Message: "Error while appending streaming replication fragment(provider status: Not connected to Primary Component)"}
	// OfflineError is what MySQL in offline_mode answers a user without
	// CONNECTION_ADMIN, at connect and on its next statement.
	OfflineError = &mysql.MySQLError{Number: dialect.ErrServerOfflineMode, SQLState: [5]byte{'H', 'Y', '0', '0', '0'},
		Message: "The server is currently in offline mode"}
	// GroupNotOnlineError is what a Group Replication member that is not ONLINE answers
	// a transaction with group_replication_consistency BEFORE or stronger.
	GroupNotOnlineError = &mysql.MySQLError{Number: dialect.ErrGrpTrxConsistencyNotAllowed, SQLState: [5]byte{'H', 'Y', '0', '0', '0'},
		Message: "The option group_replication_consistency cannot be used on the current member state."}
)

// SetVars sets global variables host i answers to the role query (SHOW GLOBAL VARIABLES
// ...) besides read_only and tx_read_only, as name, value pairs; a value of "" removes
// the variable.
func (n *Net) SetVars(i int, kv ...string) { n.setMap(i, false, kv) }

// SetStatus sets status variables host i answers to SHOW GLOBAL STATUS ..., as name,
// value pairs ("" removes one).
func (n *Net) SetStatus(i int, kv ...string) { n.setMap(i, true, kv) }

func (n *Net) setMap(i int, status bool, kv []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	h := n.hosts[i]
	m := &h.vars
	if status {
		m = &h.status
	}
	if *m == nil {
		*m = map[string]string{}
	}
	for k := 0; k+1 < len(kv); k += 2 {
		if kv[k+1] == "" {
			delete(*m, kv[k])
		} else {
			(*m)[kv[k]] = kv[k+1]
		}
	}
}

// Galera makes host i a Galera node in the state named (its variables and status as a
// MariaDB 10.11 node reports them): "synced", "non-primary" (isolated from the Primary
// component), "desynced", "rejecting" (wsrep_reject_queries=ALL), "donor" (rsync: a
// blocking state transfer), "joined". uuid and size are its cluster's state UUID and
// size. A node that is not "synced" also refuses statements as the real one does
// (Refuse with NotPreparedError), except "desynced" and "donor", which still serve.
func (n *Net) Galera(i int, state, uuid string, size int) {
	ready, cstatus, local, comment := "ON", "Primary", "4", "Synced"
	desync, reject := "OFF", "NONE"
	var refuse error
	switch state {
	case "synced":
	case "non-primary":
		ready, cstatus, local, comment, size = "OFF", "non-Primary", "0", "Initialized", 1
		refuse = NotPreparedError
	case "desynced":
		desync, local, comment = "ON", "2", "Donor/Desynced"
	case "rejecting":
		reject = "ALL"
		refuse = NotPreparedError
	case "donor":
		local, comment = "2", "Donor/Desynced"
	case "joined":
		local, comment = "3", "Joined"
		refuse = NotPreparedError
	default:
		panic("fake: unknown Galera state " + state)
	}
	n.SetVars(i, "wsrep_on", "ON", "wsrep_desync", desync, "wsrep_reject_queries", reject, "wsrep_sst_method", "rsync")
	n.SetStatus(i, "wsrep_ready", ready, "wsrep_cluster_status", cstatus, "wsrep_local_state", local,
		"wsrep_local_state_comment", comment, "wsrep_cluster_state_uuid", uuid, "wsrep_cluster_size", strconv.Itoa(size),
		"wsrep_last_committed", "100", "wsrep_local_index", strconv.Itoa(i), "wsrep_gcomm_uuid", galeraNode(i))
	n.Refuse(i, refuse)
}

// GroupMember makes host i a Group Replication member (group_replication_group_name
// set) whose own MEMBER_STATE is state ("ONLINE", "RECOVERING", "ERROR", "OFFLINE"; ""
// for no row of its own), in a group of total members of which unreachable are
// UNREACHABLE from it. primary says whether it is the group's primary (super_read_only
// OFF) or a secondary (ON).
func (n *Net) GroupMember(i int, state string, total, unreachable int, primary bool) {
	sro := "ON"
	if primary {
		sro = "OFF"
	}
	n.SetVars(i, "group_replication_group_name", "8a94f357-aab4-11df-86ab-c80aa9429562", "super_read_only", sro)
	n.mu.Lock()
	defer n.mu.Unlock()
	h := n.hosts[i]
	h.members = nil
	if state != "" {
		h.members = [][]driver.Value{{[]byte(state), int64(total), int64(unreachable)}}
	}
}

// GroupMemberError makes host i answer err to the Group Replication member query (a
// user that may not read performance_schema gets 1142).
func (n *Net) GroupMemberError(i int, err error) {
	n.mu.Lock()
	n.hosts[i].memberErr = err
	n.mu.Unlock()
}

// Refuse makes host i answer err (NotPreparedError, OfflineError...) to every statement
// but SELECT 1, SHOW, SET, USE and SELECT @@..., and to BEGIN and COMMIT, as a Galera node
// outside the Primary component does (nil: serve again). Already open connections are
// refused too.
func (n *Net) Refuse(i int, err error) {
	n.mu.Lock()
	n.hosts[i].refuse = err
	n.mu.Unlock()
}

// RefuseDial makes host i refuse new connections with err during the handshake
// (OfflineError: MySQL's offline_mode; nil: accept again).
func (n *Net) RefuseDial(i int, err error) { n.Set(i, err, nil) }

// refusal is what host i's connection answers query while the host refuses (Refuse):
// err, or nil for the statements that work on a node that is not ready.
func (c *Conn) refusal(query string) error {
	c.net.mu.Lock()
	err := c.net.hosts[c.Host].refuse
	c.net.mu.Unlock()
	if err == nil {
		return nil
	}
	q := strings.ToUpper(strings.TrimSpace(query))
	for _, ok := range []string{"SELECT 1", "SHOW ", "SET ", "USE ", "SELECT @@"} {
		if strings.HasPrefix(q, ok) {
			return nil
		}
	}
	return err
}

// stateAnswer answers SHOW GLOBAL STATUS and the Group Replication member query from the
// host's state; ok is false for other queries.
func (c *Conn) stateAnswer(query string) (driver.Rows, error, bool) {
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	h := c.net.hosts[c.Host]
	switch {
	case strings.HasPrefix(query, "SHOW GLOBAL STATUS"):
		return &rows{vals: pairs(h.status)}, nil, true
	case strings.Contains(query, "performance_schema.replication_group_members"):
		if h.memberErr != nil {
			return nil, h.memberErr, true
		}
		return &rows{cols: []string{"MEMBER_STATE", "total", "unreachable"}, vals: h.members}, nil, true
	}
	return nil, nil, false
}

// pairs returns m as Variable_name, Value rows, by name.
func pairs(m map[string]string) [][]driver.Value {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([][]driver.Value, 0, len(keys))
	for _, k := range keys {
		out = append(out, []driver.Value{[]byte(k), []byte(m[k])})
	}
	return out
}
