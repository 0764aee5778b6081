package harness

import (
	"fmt"
	"strconv"
	"strings"
)

// Flavour is the server family a cluster runs: the replication set-up, the GTID
// functions and the read-only switch differ between MariaDB and MySQL 8. The Cluster
// reads it from SELECT VERSION() on node 1; a ContainerBackend also uses it for the
// server options it passes (ContainerBackend.Flavour).
//
// Only MariaDB is run by this project's CI: no MySQL server can be installed on its
// machines, so the MySQL statements are checked by unit tests only (flavour_test.go).
type Flavour int

const (
	// AutoFlavour: read it from the server (Cluster) or the image name (ContainerBackend).
	AutoFlavour Flavour = iota
	// MariaDB: CHANGE MASTER TO ... MASTER_USE_GTID, START SLAVE, MASTER_GTID_WAIT,
	// gtid_binlog_pos, read_only (MariaDB 10.5 to 11.x).
	MariaDB
	// MySQL: CHANGE REPLICATION SOURCE TO ... SOURCE_AUTO_POSITION=1, START REPLICA,
	// WAIT_FOR_EXECUTED_GTID_SET, gtid_executed, super_read_only on replicas; servers run
	// with gtid_mode=ON and enforce_gtid_consistency=ON (MySQL 8.0.23 and later).
	MySQL
)

// String is "mariadb", "mysql" or "auto".
func (f Flavour) String() string {
	switch f {
	case MySQL:
		return "mysql"
	case MariaDB:
		return "mariadb"
	}
	return "auto"
}

// FlavourOf reads the flavour from a server's VERSION() ("10.11.6-MariaDB-0+deb12u1",
// "8.4.3"): MariaDB when the string names it, MySQL otherwise.
func FlavourOf(version string) Flavour {
	if strings.Contains(strings.ToLower(version), "mariadb") {
		return MariaDB
	}
	return MySQL
}

// flavourOfImage guesses the flavour from an image reference: MySQL for an image whose
// repository path has a component named mysql (mysql:8.4,
// container-registry.oracle.com/mysql/community-server:8.4) and no mention of mariadb,
// MariaDB for everything else (mariadb:11.4, mysqlfailover-mariadb:...). Set
// ContainerBackend.Flavour for an image named otherwise.
func flavourOfImage(ref string) Flavour {
	repo := ref
	if i := strings.IndexByte(repo, '@'); i >= 0 {
		repo = repo[:i]
	}
	if i := strings.LastIndexByte(repo, ':'); i > strings.LastIndexByte(repo, '/') {
		repo = repo[:i]
	}
	if strings.Contains(repo, "mariadb") {
		return MariaDB
	}
	for _, part := range strings.Split(repo, "/") {
		if part == "mysql" {
			return MySQL
		}
	}
	return MariaDB
}

// serverArgs are the replication and size options a node's server gets from a backend
// that runs it with the image's defaults (ContainerBackend): a server_id, the binary log
// with GTIDs, a 10 s net timeout on replicas, small memory.
func (f Flavour) serverArgs(serverID, port int) []string {
	common := []string{
		fmt.Sprintf("--port=%d", port),
		fmt.Sprintf("--server-id=%d", serverID),
		"--log-bin=mysql-bin",
		"--relay-log=relay-bin",
		"--binlog-format=ROW",
		"--skip-name-resolve",
		"--performance-schema=OFF",
		"--max-connections=500",
		"--innodb-buffer-pool-size=16M",
	}
	if f == MySQL {
		return append(common,
			"--gtid-mode=ON",
			"--enforce-gtid-consistency=ON",
			"--log-replica-updates=ON",
			"--replica-net-timeout=10",
			"--skip-mysqlx",
		)
	}
	return append(common,
		"--log-slave-updates=ON",
		"--slave-net-timeout=10",
		"--innodb-use-native-aio=0",
		"--innodb-log-file-size=8M",
		"--innodb-flush-method=nosync",
		"--loose-feedback=OFF",
	)
}

// replicaSource is where and how a replica replicates from.
type replicaSource struct {
	host           string
	port           int
	user, password string
	// current: start from everything the replica has already applied or written itself
	// (MariaDB MASTER_USE_GTID=current_pos), for a former primary re-pointed at its
	// successor; otherwise from what it has applied as a replica (slave_pos). MySQL's
	// auto-positioning covers both.
	current bool
}

// pointReplica returns the statements that make a server replicate from src and start
// doing so (after stopReplica when it replicated from someone else).
func (f Flavour) pointReplica(src replicaSource) []string {
	if f == MySQL {
		return []string{
			fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_HOST='%s', SOURCE_PORT=%d, SOURCE_USER='%s', "+
				"SOURCE_PASSWORD='%s', SOURCE_AUTO_POSITION=1, SOURCE_CONNECT_RETRY=1, GET_SOURCE_PUBLIC_KEY=1",
				src.host, src.port, src.user, src.password),
			f.startReplica(),
		}
	}
	pos := "slave_pos"
	if src.current {
		pos = "current_pos"
	}
	return []string{
		fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='%s', MASTER_PORT=%d, MASTER_USER='%s', "+
			"MASTER_PASSWORD='%s', MASTER_USE_GTID=%s, MASTER_CONNECT_RETRY=1",
			src.host, src.port, src.user, src.password, pos),
		f.startReplica(),
	}
}

// startReplica starts the replication threads again (after stopReplica(false)).
func (f Flavour) startReplica() string {
	if f == MySQL {
		return "START REPLICA"
	}
	return "START SLAVE"
}

// stopReplica stops replication; forget=true also drops the source (the server is a
// primary from then on).
func (f Flavour) stopReplica(forget bool) []string {
	stop, reset := "STOP SLAVE", "RESET SLAVE ALL"
	if f == MySQL {
		stop, reset = "STOP REPLICA", "RESET REPLICA ALL"
	}
	if forget {
		return []string{stop, reset}
	}
	return []string{stop}
}

// appSetUp is what the application gets on a new cluster: AppDB and AppDB2, AppUser with
// every privilege on both, and monitorGrant's (the driver's probes read replica lag for
// replicaReads with maxReplicaLag).
func (f Flavour) appSetUp() []string {
	user := "'" + AppUser + "'@'%'"
	return []string{
		"CREATE DATABASE " + AppDB,
		"CREATE DATABASE " + AppDB2,
		"CREATE USER " + user + " IDENTIFIED BY '" + AppPassword + "'",
		"GRANT ALL ON " + AppDB + ".* TO " + user,
		"GRANT ALL ON " + AppDB2 + ".* TO " + user,
		f.monitorGrant(user),
	}
}

// monitorGrant is the GRANT that lets user read the replica status (SHOW REPLICA STATUS),
// as mysqlfailover's probes do for maxReplicaLag: SLAVE MONITOR on MariaDB 10.5.9+,
// REPLICATION CLIENT on MySQL. Neither bypasses read_only.
func (f Flavour) monitorGrant(user string) string {
	if f == MySQL {
		return "GRANT REPLICATION CLIENT ON *.* TO " + user
	}
	return "GRANT SLAVE MONITOR ON *.* TO " + user
}

// monitorRevoke takes monitorGrant's privilege from user again.
func (f Flavour) monitorRevoke(user string) string {
	if f == MySQL {
		return "REVOKE REPLICATION CLIENT ON *.* FROM " + user
	}
	return "REVOKE SLAVE MONITOR ON *.* FROM " + user
}

// setReadOnly switches a server's global read-only mode. On MySQL a replica gets
// super_read_only (which sets read_only too) so that not even root writes there; turning
// read_only off turns super_read_only off too.
func (f Flavour) setReadOnly(on bool) string {
	switch {
	case on && f == MySQL:
		return "SET GLOBAL super_read_only = ON"
	case on:
		return "SET GLOBAL read_only = ON"
	default:
		return "SET GLOBAL read_only = OFF"
	}
}

// gtidExecutedQuery returns the GTID set a server has written or applied, the argument
// of waitGTIDQuery.
func (f Flavour) gtidExecutedQuery() string {
	if f == MySQL {
		return "SELECT @@GLOBAL.gtid_executed"
	}
	return "SELECT @@GLOBAL.gtid_binlog_pos"
}

// waitGTIDQuery waits (arguments: the GTID set, the timeout in seconds) until the server
// has applied a GTID set; it returns 0 once it has (MariaDB MASTER_GTID_WAIT: -1 on
// timeout; MySQL WAIT_FOR_EXECUTED_GTID_SET: 1).
func (f Flavour) waitGTIDQuery() string {
	if f == MySQL {
		return "SELECT WAIT_FOR_EXECUTED_GTID_SET(?, ?)"
	}
	return "SELECT MASTER_GTID_WAIT(?, ?)"
}

// replicaSQLThread returns the statement that stops (start false) or starts a replica's
// SQL thread alone (the applier): the I/O thread keeps fetching the source's binary log,
// so the replica falls behind while it is stopped and catches up once it runs again.
func (f Flavour) replicaSQLThread(start bool) string {
	verb := "STOP"
	if start {
		verb = "START"
	}
	if f == MySQL {
		return verb + " REPLICA SQL_THREAD"
	}
	return verb + " SLAVE SQL_THREAD"
}

// replicaDelay returns the statements that make a replica apply each event no sooner
// than seconds after it was written on the source (delayed replication: MariaDB
// MASTER_DELAY, MySQL SOURCE_DELAY; 0 ends it). The replica's Seconds_Behind_Master
// then grows towards seconds while the source writes. Replication is stopped and started
// again around the change; the replica keeps its source and position.
func (f Flavour) replicaDelay(seconds int) []string {
	if f == MySQL {
		return []string{"STOP REPLICA", fmt.Sprintf("CHANGE REPLICATION SOURCE TO SOURCE_DELAY=%d", seconds), "START REPLICA"}
	}
	return []string{"STOP SLAVE", fmt.Sprintf("CHANGE MASTER TO MASTER_DELAY=%d", seconds), "START SLAVE"}
}

// threadColumns are the columns of replicaStatus's statement that say whether a replica's
// two threads run ("Yes", "No", "Connecting", "Preparing") and what it has received from
// its source (MariaDB a GTID position, MySQL a GTID set).
func (f Flavour) threadColumns() (io, sql, received string) {
	if f == MySQL {
		return "Replica_IO_Running", "Replica_SQL_Running", "Retrieved_Gtid_Set"
	}
	return "Slave_IO_Running", "Slave_SQL_Running", "Gtid_IO_Pos"
}

// forgetTransactions returns the statements that make a server forget every transaction
// it has written or applied (its binary log and GTID position), so that it replays its
// new source's binary log from the start: for a node whose data are rebuilt (Node.rebuild).
// MySQL: nil; RESET MASTER became RESET BINARY LOGS AND GTIDS in 8.4 and no MySQL server
// runs here to check either, so rebuilding is MariaDB's alone.
func (f Flavour) forgetTransactions() []string {
	if f == MySQL {
		return nil
	}
	return []string{"RESET MASTER", "SET GLOBAL gtid_slave_pos = ''"}
}

// mariadbCovers reports whether MariaDB GTID position have ("0-1-8,1-2-3") holds every
// transaction of want: for each replication domain of want, have's GTID in that domain has
// a sequence number at least want's. That is MASTER_GTID_WAIT's own test, applied to any
// position: MASTER_GTID_WAIT reads gtid_slave_pos alone, so it never counts what a server
// wrote itself (a former primary's own transactions).
func mariadbCovers(have, want string) (bool, error) {
	h, err := parseMariaDBPos(have)
	if err != nil {
		return false, err
	}
	w, err := parseMariaDBPos(want)
	if err != nil {
		return false, err
	}
	for domain, seq := range w {
		if got, ok := h[domain]; !ok || got < seq {
			return false, nil
		}
	}
	return true, nil
}

// parseMariaDBPos reads a MariaDB GTID position, a list of domain-server-sequence
// triples, into each domain's sequence number.
func parseMariaDBPos(pos string) (map[uint64]uint64, error) {
	seqs := map[uint64]uint64{}
	for _, g := range strings.Split(pos, ",") {
		if g = strings.TrimSpace(g); g == "" {
			continue
		}
		parts := strings.Split(g, "-")
		if len(parts) != 3 {
			return nil, fmt.Errorf("GTID %q in position %q: want domain-server-sequence", g, pos)
		}
		var nums [3]uint64
		for k, p := range parts {
			v, err := strconv.ParseUint(p, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("GTID %q in position %q: %w", g, pos, err)
			}
			nums[k] = v
		}
		seqs[nums[0]] = nums[2]
	}
	return seqs, nil
}

// lagColumn is the column of replicaStatus's statement that holds the replica's lag in
// whole seconds (NULL while a replication thread is stopped).
func (f Flavour) lagColumn() string {
	if f == MySQL {
		return "Seconds_Behind_Source"
	}
	return "Seconds_Behind_Master"
}

// replicaStatus is the statement that shows a replica's threads and last errors, and
// the columns worth printing from it.
func (f Flavour) replicaStatus() (query string, columns []string) {
	if f == MySQL {
		return "SHOW REPLICA STATUS", []string{"Replica_IO_Running", "Replica_SQL_Running",
			"Last_IO_Error", "Last_SQL_Error", "Executed_Gtid_Set"}
	}
	return "SHOW SLAVE STATUS", []string{"Slave_IO_Running", "Slave_SQL_Running",
		"Last_IO_Error", "Last_SQL_Error", "Gtid_IO_Pos"}
}
