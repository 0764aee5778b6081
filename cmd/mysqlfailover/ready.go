package main

// Readiness as the driver judges it (package failover, Readiness): a server that
// answers may say it is not ready for application use (a Galera node outside the
// Primary component, desynced, rejecting queries or not synced; offline_mode; a Group
// Replication member that is not ONLINE), and the driver then uses no such host
// (failover.HostNotReady). check reads the same variables and status with its own
// queries and says why.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// galeraStatusQuery reads a Galera node's state; SHOW needs no privilege and works on a
// node outside the Primary component, which refuses every statement that reads a table.
const galeraStatusQuery = "SHOW GLOBAL STATUS WHERE Variable_name IN ('wsrep_ready', 'wsrep_cluster_status', 'wsrep_local_state', " +
	"'wsrep_local_state_comment', 'wsrep_cluster_state_uuid', 'wsrep_cluster_size', 'wsrep_last_committed', 'wsrep_gcomm_uuid')"

// groupMemberQuery reads a Group Replication member's own state and how many of the
// group's members are UNREACHABLE from it.
const groupMemberQuery = "SELECT MEMBER_STATE, (SELECT COUNT(*) FROM performance_schema.replication_group_members), " +
	"(SELECT COUNT(*) FROM performance_schema.replication_group_members WHERE MEMBER_STATE = 'UNREACHABLE') " +
	"FROM performance_schema.replication_group_members WHERE MEMBER_ID = @@server_uuid"

// readReadiness reads the cluster type of hr's server and whether it is ready, as the
// driver's ReadState does with the DSN's cluster option (want): offline_mode, and for a
// Galera node its wsrep status, for a Group Replication member its membership. It sets
// hr.Cluster, hr.Galera and hr.NotReady; the error is a query's that failed.
func readReadiness(ctx context.Context, conn *sql.Conn, want string, hr *hostReport) error {
	vars := hr.vars
	kind := "replication"
	switch {
	case on(vars["wsrep_on"]):
		kind = "galera"
	case vars["group_replication_group_name"] != "":
		kind = "group"
	}
	if want == "replication" {
		kind = want // the DSN says so: the driver reads no cluster status
	}
	hr.Cluster = kind
	if want != "" && want != "auto" && want != kind {
		if want == "galera" {
			hr.NotReady = "cluster=galera, but the server does not run Galera (wsrep_on " + orAbsent(vars["wsrep_on"]) + ")"
		} else {
			hr.NotReady = "cluster=group, but the server is not a Group Replication member (group_replication_group_name is empty or absent)"
		}
		return nil
	}
	if on(vars["offline_mode"]) {
		hr.NotReady = "offline_mode=ON: the server refuses sessions without CONNECTION_ADMIN"
		return nil
	}
	switch kind {
	case "galera":
		status, err := showRows(ctx, conn, galeraStatusQuery)
		if err != nil {
			return err
		}
		g := &galeraStatus{Ready: status["wsrep_ready"], ClusterStatus: status["wsrep_cluster_status"], LocalState: status["wsrep_local_state"],
			LocalStateComment: status["wsrep_local_state_comment"], StateUUID: status["wsrep_cluster_state_uuid"], ClusterSize: -1, LastCommitted: -1,
			Desync: vars["wsrep_desync"], RejectQueries: vars["wsrep_reject_queries"], NodeUUID: status["wsrep_gcomm_uuid"]}
		if n, err := strconv.Atoi(status["wsrep_cluster_size"]); err == nil {
			g.ClusterSize = n
		}
		if n, err := strconv.ParseInt(status["wsrep_last_committed"], 10, 64); err == nil {
			g.LastCommitted = n
		}
		hr.Galera = g
		hr.NotReady = galeraReady(g, vars["wsrep_sst_method"])
	case "group":
		var state string
		var members, unreachable int
		err := conn.QueryRowContext(ctx, groupMemberQuery).Scan(&state, &members, &unreachable)
		var me *mysql.MySQLError
		switch {
		case errors.Is(err, sql.ErrNoRows):
			hr.NotReady = "not a member of its group: no row for @@server_uuid in performance_schema.replication_group_members (Group Replication is not running)"
		case errors.As(err, &me):
			return nil // no privilege on performance_schema: the membership is unknown, as for the driver
		case err != nil:
			return err
		case !strings.EqualFold(state, "ONLINE"):
			hr.NotReady = "MEMBER_STATE=" + state + ": the Group Replication member is not ONLINE"
		case 2*unreachable >= members && unreachable > 0:
			hr.NotReady = fmt.Sprintf("%d of the group's %d members are UNREACHABLE from it: the group lost quorum and blocks every write", unreachable, members)
		}
	}
	return nil
}

// galeraReady says why a Galera node is not ready ("" when it is), by the rules of the
// driver (and of MaxScale's galeramon): wsrep_ready ON, wsrep_cluster_status Primary,
// wsrep_reject_queries NONE, wsrep_desync OFF, wsrep_local_state 4 (Synced), or 2
// (Donor/Desynced) while donating with a state transfer that does not block it.
func galeraReady(g *galeraStatus, sst string) string {
	switch {
	case !on(g.Ready):
		return "wsrep_ready=" + orAbsent(g.Ready) + ": the node does not accept queries"
	case !strings.EqualFold(g.ClusterStatus, "Primary"):
		return "wsrep_cluster_status=" + orAbsent(g.ClusterStatus) + ": the node is outside the Primary component (it lost quorum)"
	case g.RejectQueries != "" && !strings.EqualFold(g.RejectQueries, "NONE"):
		return "wsrep_reject_queries=" + g.RejectQueries + ": the node refuses client queries"
	case on(g.Desync):
		return "wsrep_desync=ON: the node is desynced from the cluster and may fall behind"
	case g.LocalState == "4":
		return ""
	case g.LocalState == "2":
		m := strings.ToLower(sst)
		if strings.HasPrefix(m, "mariabackup") || strings.HasPrefix(m, "xtrabackup") || m == "clone" {
			return "" // donating with a state transfer that does not block it
		}
		return "wsrep_local_state=2 (" + orAbsent(g.LocalStateComment) + "): the node is a donor whose state transfer (wsrep_sst_method=" +
			orAbsent(sst) + ") blocks it"
	}
	return "wsrep_local_state=" + orAbsent(g.LocalState) + " (" + orAbsent(g.LocalStateComment) + "): the node is not synced with the cluster"
}

// judgeReadiness applies the rule that needs every host: a Galera node that is ready by
// its own status but in a smaller cluster (another wsrep_cluster_state_uuid, fewer
// nodes) than another listed node's is a minority bootstrapped apart, not ready.
func judgeReadiness(hosts []hostReport) {
	biggest := -1
	for i, h := range hosts {
		if h.Galera != nil && h.NotReady == "" && (biggest < 0 || h.Galera.ClusterSize > hosts[biggest].Galera.ClusterSize) {
			biggest = i
		}
	}
	if biggest < 0 {
		return
	}
	b := hosts[biggest]
	for i := range hosts {
		h := &hosts[i]
		if h.Galera != nil && h.NotReady == "" && h.Galera.StateUUID != b.Galera.StateUUID && h.Galera.ClusterSize < b.Galera.ClusterSize {
			h.NotReady = fmt.Sprintf("in a cluster of %d node(s) (wsrep_cluster_state_uuid %s), smaller than %s's of %d: a minority bootstrapped apart",
				h.Galera.ClusterSize, h.Galera.StateUUID, b.Host, b.Galera.ClusterSize)
		}
	}
}

// refusalReason is the readiness reason a refused connection gives ("" for none): the
// server answered the handshake with a refusal because it is not ready.
func refusalReason(err error) string {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return ""
	}
	switch me.Number {
	case dialect.ErrUnknownCom:
		return "the node refused the session (Galera: outside the Primary component, not synced, or rejecting queries): " + me.Message
	case dialect.ErrServerOfflineMode:
		return "offline_mode: the server refuses sessions without CONNECTION_ADMIN"
	}
	return ""
}

// notReadyFix is the fix for a host whose server says it is not ready for reason.
func notReadyFix(reason string) string {
	const after = "; the driver uses it again once it says it is ready (with probing, after switchBackDelay of ready probes for a return to it)"
	switch {
	case strings.HasPrefix(reason, "wsrep_cluster_status="), strings.HasPrefix(reason, "in a cluster of"):
		return "the node cannot reach a majority of its cluster: check the network between the nodes; it rejoins the Primary component by itself when it reaches them. " +
			"Only if no node is in a Primary component, bootstrap the most advanced one (highest wsrep_last_committed): SET GLOBAL wsrep_provider_options='pc.bootstrap=YES'" + after
	case strings.HasPrefix(reason, "wsrep_reject_queries="):
		return "SET GLOBAL wsrep_reject_queries=NONE on it once the maintenance that set it is over" + after
	case strings.HasPrefix(reason, "wsrep_desync="):
		return "SET GLOBAL wsrep_desync=OFF on it once the backup or maintenance that desynced it is over" + after
	case strings.HasPrefix(reason, "wsrep_local_state="), strings.HasPrefix(reason, "wsrep_ready="):
		return "it is joining the cluster or serving a state transfer: wait for wsrep_local_state=4 (Synced); if it stays there, read its error log" + after
	case strings.HasPrefix(reason, "offline_mode"):
		return "SET GLOBAL offline_mode=OFF on it once the maintenance is over" + after
	case strings.HasPrefix(reason, "cluster="):
		return "correct the DSN's cluster option (cluster=auto lets the servers say what they run), or the host list"
	case strings.HasPrefix(reason, "MEMBER_STATE="), strings.Contains(reason, "Group Replication"):
		return "START GROUP_REPLICATION on it, or read its error log for why it left the group" + after
	case strings.Contains(reason, "quorum"):
		return "bring the unreachable members back, or force a new membership from the reachable ones (group_replication_force_members)" + after
	}
	return "read the server's error log" + after
}

func orAbsent(s string) string {
	if s == "" {
		return "absent"
	}
	return s
}
