package cluster

// Replica lag for replicaReads and maxReplicaLag: reading how far a replica is behind its
// source (ReadLag), from Seconds_Behind_Master (Seconds_Behind_Source on MySQL 8.0.22+), the
// column MaxScale's max_slave_replication_lag and ProxySQL's max_replication_lag also go by.

import (
	"context"
	"database/sql/driver"
	"errors"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// The two forms of the replica status statement. ReplicaStatusQuery is the one of MySQL
// 8.0.22+ and MariaDB 10.5.1+ (MySQL 8.4 removed the other); SlaveStatusQuery is the one
// of older servers, which answer the first with 1064 ER_PARSE_ERROR. Both need a
// privilege (or SUPER): MariaDB 10.5.9+ REPLICA MONITOR (alias SLAVE MONITOR; REPLICATION
// CLIENT is an alias of BINLOG MONITOR there and does not grant it), MariaDB 10.5.0-10.5.8
// REPLICATION SLAVE ADMIN, MySQL and MariaDB before 10.5 REPLICATION CLIENT (MaxScale's
// monitor documents the same grants). On MariaDB both report the default
// replication connection only (SHOW ALL REPLICAS STATUS would list every connection of a
// multi-source replica); on MySQL they list one row per replication channel.
const (
	ReplicaStatusQuery = "SHOW REPLICA STATUS"
	SlaveStatusQuery   = "SHOW SLAVE STATUS"
)

// LagUnknown is the lag ReadLag returns when it could not read one, as
// failover.HostStats.ReplicaLag reports an unknown lag.
const LagUnknown time.Duration = -1

// ReplicationStopped starts the reason ReadLag gives (after "replica lag unknown: ") for
// a replica whose replication thread is stopped or broken: such a host is no replica,
// whatever maxReplicaLag says (replicaState.skip). ReplicationReconnecting starts it for one
// whose SQL thread runs while its IO thread reconnects to its source (a dead primary): its
// lag is unknown (with maxReplicaLag it is not used), but it holds all its source sent,
// and without maxReplicaLag it serves, so that reads go on while no writer answers.
const (
	ReplicationStopped      = "replication is not running"
	ReplicationReconnecting = "replication is reconnecting to its source"
)

// ReadLag reads over conn how far the replica is behind its source, with one query (two
// when the server rejects the first form with 1064 ER_PARSE_ERROR, and the other form is
// tried once): ReplicaStatusQuery, or SlaveStatusQuery when old is set. The lag is the
// Seconds_Behind_Master (or Seconds_Behind_Source) column, found by name
// (case-insensitively) among the result's columns, in whole seconds as the server
// reports it; with several rows (one per replication channel) it is the largest. The
// rows are read to the end and closed.
//
// useOld reports which form the server took (or, when neither worked, the one tried
// last): the caller keeps it for the host and passes it as old next time, so that an old
// server costs one round trip per read, and a server upgraded past MySQL 8.4 (which
// dropped SHOW SLAVE STATUS) switches back by itself.
//
// reason is "" exactly when the lag is known. Otherwise lag is LagUnknown and reason says
// why, in words fit for failover.HostStats.ReplicaSkip ("replica lag unknown: ..."):
//
//   - the result has no rows: the server is not a replica (a primary, or replication was
//     never configured or was RESET);
//   - a row has NULL in the lag column: replication is stopped or broken; reason gives
//     the Slave_IO_Running and Slave_SQL_Running (Replica_*) columns and the error numbers
//     Last_IO_Errno and Last_SQL_Errno when not 0, never the error texts (Last_SQL_Error quotes the
//     statement that failed, which may carry a password);
//   - 1227 ER_SPECIFIC_ACCESS_DENIED_ERROR: the user lacks the privilege, which reason
//     names (see ReplicaStatusQuery), with the server's message: MariaDB 10.11 answers
//     "Access denied; you need (at least one of) the SUPER, SLAVE MONITOR privilege(s)
//     for this operation";
//   - any other error that Classify calls Data (the server answered: another error
//     number, no lag column, a value that is not a number, conn without
//     driver.QueryerContext): reason quotes it.
//
// err is non-nil only for an error Classify(ctx, err) does not call Data (a broken
// connection, a timeout, the caller's context ending): it is returned unchanged, lag is
// LagUnknown and reason "", and the caller handles it as any failed probe.
func ReadLag(ctx context.Context, conn driver.Conn, old bool) (lag time.Duration, reason string, useOld bool, err error) {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return LagUnknown, "replica lag unknown: the connection cannot run queries (no driver.QueryerContext)", old, nil
	}
	lag, reason, err = readLag(ctx, q, statusQuery(old))
	if dialect.Number(err) == dialect.ErrParse { // the server lacks this form
		old = !old
		lag, reason, err = readLag(ctx, q, statusQuery(old))
	}
	if err == nil {
		return lag, reason, old, nil
	}
	if Classify(ctx, err) != Data {
		return LagUnknown, "", old, err
	}
	if dialect.Number(err) == dialect.ErrSpecificAccessDenied {
		return LagUnknown, "replica lag unknown: the user lacks the privilege to read the replica status " +
			"(grant REPLICA MONITOR, alias SLAVE MONITOR, on MariaDB 10.5.9+; REPLICATION SLAVE ADMIN on " +
			"MariaDB 10.5.0-10.5.8; REPLICATION CLIENT on MySQL and MariaDB before 10.5): " + err.Error(), old, nil
	}
	return LagUnknown, "replica lag unknown: " + statusQuery(old) + ": " + err.Error(), old, nil
}

func statusQuery(old bool) string {
	if old {
		return SlaveStatusQuery
	}
	return ReplicaStatusQuery
}

// readLag runs one form of the status query and reads its rows. An error is the driver's,
// or a plain one for an answer without a usable lag column; reason is set for the answers
// that say the lag is unknown (no rows, NULL).
func readLag(ctx context.Context, q driver.QueryerContext, query string) (time.Duration, string, error) {
	cols, rows, err := dialect.Query(ctx, q, query, dialect.All)
	if err != nil {
		return LagUnknown, "", err
	}
	r := lagRows{cols: cols, sc: findStatusCols(cols)}
	for _, vals := range rows {
		r.add(vals)
	}
	return r.result(query)
}

// statusCols are the indexes of the replica status columns readLag reads (-1: absent).
type statusCols struct {
	lag, io, sql, ioErr, sqlErr int
}

// findStatusCols finds the replica status columns among cols, by name,
// case-insensitively.
func findStatusCols(cols []string) statusCols {
	sc := statusCols{-1, -1, -1, -1, -1}
	for i, c := range cols {
		switch strings.ToLower(c) {
		case "seconds_behind_master", "seconds_behind_source":
			sc.lag = i
		case "slave_io_running", "replica_io_running":
			sc.io = i
		case "slave_sql_running", "replica_sql_running":
			sc.sql = i
		case "last_io_errno":
			sc.ioErr = i
		case "last_sql_errno":
			sc.sqlErr = i
		}
	}
	return sc
}

// lagRows is what readLag has read of the status rows so far.
type lagRows struct {
	cols    []string
	sc      statusCols
	n       int
	max     time.Duration
	stopped string // the first row with NULL lag, described
	bad     error  // the first value that is not a number
}

// add reads one status row. After the first row that makes the lag unknown (stopped,
// or a value that is not a number) the rows are only counted, still read to the end.
func (r *lagRows) add(vals []driver.Value) {
	r.n++
	if r.sc.lag < 0 || r.stopped != "" || r.bad != nil {
		return // read to the end all the same
	}
	if vals[r.sc.lag] == nil {
		r.stopped = r.stoppedReason(vals)
		return
	}
	secs, perr := seconds(vals[r.sc.lag])
	if perr != nil {
		r.bad = perr
		return
	}
	if d := secondsDuration(secs); d > r.max {
		r.max = d
	}
}

// stoppedReason describes a row whose lag is NULL: its replication threads' states and
// error numbers (never their texts).
func (r *lagRows) stoppedReason(vals []driver.Value) string {
	sc := r.sc
	// The SQL thread applies what the replica has: while it runs and the IO
	// thread is only reconnecting (its source is gone, a dead primary), the data is
	// as fresh as the source's last write. Stopped (an operator, an error) the data
	// ends where it stopped.
	stopped := ReplicationStopped
	if sc.sql >= 0 && strings.EqualFold(dialect.Text(vals[sc.sql]), "Yes") && sc.io >= 0 && strings.EqualFold(dialect.Text(vals[sc.io]), "Connecting") {
		stopped = ReplicationReconnecting
	}
	stopped += " (Seconds_Behind_Master is NULL"
	for _, c := range []int{sc.io, sc.sql, sc.ioErr, sc.sqlErr} {
		if c < 0 || vals[c] == nil {
			continue
		}
		if v := dialect.Text(vals[c]); v != "0" || c == sc.io || c == sc.sql {
			stopped += ", " + r.cols[c] + "=" + v
		}
	}
	return stopped + ")"
}

// result is readLag's answer from the rows of query, all read.
func (r *lagRows) result(query string) (time.Duration, string, error) {
	switch {
	case r.n == 0:
		return LagUnknown, "replica lag unknown: not a replica (" + query + " returned no rows)", nil
	case r.sc.lag < 0:
		return LagUnknown, "", errors.New("no Seconds_Behind_Master or Seconds_Behind_Source column")
	case r.bad != nil:
		return LagUnknown, "", r.bad
	case r.stopped != "":
		return LagUnknown, "replica lag unknown: " + r.stopped, nil
	}
	return r.max, "", nil
}

// seconds reads a lag value (dialect.Int): text from the text protocol, an integer type
// from the binary protocol or another driver.
func seconds(v driver.Value) (int64, error) {
	s, ok := dialect.Int(v)
	if !ok || s < 0 {
		return 0, errors.New("Seconds_Behind_Master is not a number of seconds: " + strconv.Quote(dialect.Text(v)))
	}
	return s, nil
}

// secondsDuration converts whole seconds to a Duration, saturating at the largest one.
func secondsDuration(s int64) time.Duration {
	if s > int64(math.MaxInt64/time.Second) {
		return math.MaxInt64
	}
	return time.Duration(s) * time.Second
}
