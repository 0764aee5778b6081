package cluster

// Causal reads (causalReads=local|global, MaxScale's causal_reads): the statements that read
// the primary's replication position after a write (ReadPosition) and make a replica wait
// until it has applied that position (WaitReplica), for MariaDB and MySQL, and the strict
// check of a position before it is written into SQL (WaitQuery).

import (
	"context"
	"database/sql/driver"
	"errors"
	"strconv"
	"strings"
	"time"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// Flavour is the server family, which decides the causal-read statements.
type Flavour int

const (
	// FlavourUnknown: not found yet; ReadPosition tries MariaDB's statement first.
	FlavourUnknown Flavour = iota
	// FlavourMariaDB: domain-server-sequence GTIDs, @@last_gtid, MASTER_GTID_WAIT.
	FlavourMariaDB
	// FlavourMySQL: uuid:interval GTID sets, @@global.gtid_executed,
	// WAIT_FOR_EXECUTED_GTID_SET.
	FlavourMySQL
)

// String returns "unknown", "MariaDB" or "MySQL".
func (f Flavour) String() string {
	switch f {
	case FlavourMariaDB:
		return "MariaDB"
	case FlavourMySQL:
		return "MySQL"
	}
	return "unknown"
}

// PositionQuery returns the statement that reads the primary's position after a write.
// MariaDB (and FlavourUnknown): global "SELECT @@global.gtid_binlog_pos" (every domain's
// last GTID in the binary log), local "SELECT @@last_gtid" (the GTID of this session's
// last transaction, "" before any; it must run on the session that wrote). MySQL, for
// both: "SELECT @@global.gtid_executed" (the set of every transaction the server has
// committed, which contains the session's own).
func PositionQuery(f Flavour, global bool) string {
	switch {
	case f == FlavourMySQL:
		return "SELECT @@global.gtid_executed"
	case global:
		return "SELECT @@global.gtid_binlog_pos"
	}
	return "SELECT @@last_gtid"
}

// ReadPosition reads the primary's position over conn with PositionQuery(f, global): one
// round trip, two when f is not FlavourMySQL and the server answers 1193
// ER_UNKNOWN_SYSTEM_VARIABLE (a MySQL server), after which it runs MySQL's statement.
// found is the flavour whose statement answered (FlavourMariaDB for FlavourUnknown
// answered by MariaDB's): the caller keeps it for the pool. pos is the value as the
// server gave it (MySQL's contains newlines after its commas), or "" for NULL or an
// empty value: no write is known (MariaDB's @@last_gtid before the session wrote, a
// server without GTIDs), and there is nothing to wait for. pos is not checked here;
// WaitQuery checks it. err is the driver's, unchanged (the caller classifies it), or a
// plain error for conn without driver.QueryerContext or an answer without a row; found
// is f then.
func ReadPosition(ctx context.Context, conn driver.Conn, f Flavour, global bool) (pos string, found Flavour, err error) {
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return "", f, errors.New("mysqlfailover: the connection cannot run the position query (no driver.QueryerContext)")
	}
	v, err := queryValue(ctx, q, PositionQuery(f, global))
	if err != nil && f != FlavourMySQL && dialect.Number(err) == dialect.ErrUnknownSystemVariable {
		f = FlavourMySQL
		v, err = queryValue(ctx, q, PositionQuery(f, global))
	}
	if err != nil {
		return "", f, err
	}
	if f == FlavourUnknown {
		f = FlavourMariaDB
	}
	if v == nil {
		return "", f, nil
	}
	return dialect.Text(v), f, nil
}

// queryValue runs query, returns the first column of its first row, reads the rest to
// the end and closes the rows. An answer without a row or a column is an error.
func queryValue(ctx context.Context, q driver.QueryerContext, query string) (driver.Value, error) {
	cols, rows, err := dialect.Query(ctx, q, query, 1)
	switch {
	case err != nil:
		return nil, err
	case len(rows) == 0 || len(cols) == 0:
		return nil, errors.New("mysqlfailover: " + query + " returned no value")
	}
	return rows[0][0], nil
}

// WaitQuery returns the statement that makes a replica wait for pos, at most timeout:
// MariaDB "SELECT MASTER_GTID_WAIT('<pos>', <seconds>)", MySQL
// "SELECT WAIT_FOR_EXECUTED_GTID_SET('<pos>', <seconds>)", seconds in decimal with
// millisecond precision, rounded up ("0.250" for 250ms, "0.001" for 1ns: never "0.000",
// which would turn a short bound into none at all).
//
// pos goes into the statement as a quoted literal (go-sql-driver without
// interpolateParams has no arguments on the text protocol), so it is checked strictly
// first: for MariaDB a comma-separated list of domain-server-sequence GTIDs ("0-1-42,1-2-7",
// domain and server 32-bit, sequence 64-bit, decimal); for MySQL a comma-separated GTID
// set of uuid:interval[:interval...] entries, interval n or n-m (1 <= n <= m < 2^63),
// uuid in the 8-4-4-4-12 hex form, and MySQL 8.3+ tags (a letter or _ then up to 31
// letters, digits or _) between the intervals
// ("3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7,..."). Whitespace is allowed only around
// the commas (gtid_executed prints ",\n") and at the ends, and is dropped. Anything else
// (an empty pos included: nothing to wait for), FlavourUnknown, or timeout <= 0 is an
// error, and no statement is returned.
func WaitQuery(f Flavour, pos string, timeout time.Duration) (string, error) {
	if timeout <= 0 {
		return "", errors.New("mysqlfailover: causal read wait needs a timeout > 0, got " + timeout.String())
	}
	var fn string
	var valid func(string) bool
	switch f {
	case FlavourMariaDB:
		fn, valid = "MASTER_GTID_WAIT", mariadbGTID
	case FlavourMySQL:
		fn, valid = "WAIT_FOR_EXECUTED_GTID_SET", mysqlGTIDEntry
	default:
		return "", errors.New("mysqlfailover: causal read wait needs the server flavour")
	}
	parts := strings.Split(pos, ",")
	for i, p := range parts {
		parts[i] = strings.Trim(p, " \t\r\n")
		if !valid(parts[i]) {
			return "", errors.New("mysqlfailover: not a " + f.String() + " GTID position: " + strconv.QuoteToASCII(pos))
		}
	}
	return "SELECT " + fn + "('" + strings.Join(parts, ",") + "', " + waitSeconds(timeout) + ")", nil
}

// waitSeconds formats d as decimal seconds with millisecond precision, rounded up.
func waitSeconds(d time.Duration) string {
	ms := d / time.Millisecond
	if d%time.Millisecond != 0 {
		ms++
	}
	frac := strconv.FormatInt(int64(ms%1000), 10)
	return strconv.FormatInt(int64(ms/1000), 10) + "." + strings.Repeat("0", 3-len(frac)) + frac
}

// mariadbGTID reports whether s is one MariaDB GTID, domain-server-sequence.
func mariadbGTID(s string) bool {
	f := strings.Split(s, "-")
	return len(f) == 3 && decimal(f[0], 32) && decimal(f[1], 32) && decimal(f[2], 64)
}

// decimal reports whether s is an unsigned decimal number of at most bits bits, digits
// only (no sign, no space).
func decimal(s string, bits int) bool {
	if s == "" || len(s) > 20 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	_, err := strconv.ParseUint(s, 10, bits)
	return err == nil
}

// mysqlGTIDEntry reports whether s is one entry of a MySQL GTID set:
// uuid(:tag)?:interval(:interval|:tag:interval)*.
func mysqlGTIDEntry(s string) bool {
	f := strings.Split(s, ":")
	if len(f) < 2 || !uuid(f[0]) {
		return false
	}
	for i := 1; i < len(f); i++ {
		if gtidTag(f[i]) {
			if i == len(f)-1 || gtidTag(f[i+1]) {
				return false // a tag is followed by an interval
			}
			continue
		}
		if !gtidInterval(f[i]) {
			return false
		}
	}
	return true
}

// uuid reports whether s is a UUID in the 8-4-4-4-12 hex form.
func uuid(s string) bool {
	if len(s) != 36 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case i == 8 || i == 13 || i == 18 || i == 23:
			if c != '-' {
				return false
			}
		case '0' <= c && c <= '9', 'a' <= c && c <= 'f', 'A' <= c && c <= 'F':
		default:
			return false
		}
	}
	return true
}

// gtidTag reports whether s is a MySQL 8.3+ GTID tag: a letter or _, then up to 31
// letters, digits or _.
func gtidTag(s string) bool {
	if s == "" || len(s) > 32 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', c == '_':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// gtidInterval reports whether s is n or n-m with 1 <= n <= m < 2^63.
func gtidInterval(s string) bool {
	lo, hi, isRange := strings.Cut(s, "-")
	if !isRange {
		hi = lo
	}
	if !decimal(lo, 63) || !decimal(hi, 63) {
		return false
	}
	n, _ := strconv.ParseUint(lo, 10, 63)
	m, _ := strconv.ParseUint(hi, 10, 63)
	return n >= 1 && n <= m
}

// WaitReplica makes the replica on conn wait until it has applied pos, at most timeout
// (and the caller's ctx: the driver closes the connection when ctx ends first), with
// WaitQuery(f, pos, timeout): one round trip. reached is true when the function answered
// 0; false for a timeout (MariaDB -1, MySQL 1) and for NULL (MariaDB: the wait could not
// be done, e.g. the server is not a replica); the caller then reads on the primary. err is
// WaitQuery's error (nothing is sent), the driver's error unchanged (the caller
// classifies it: a communication error, or a data error such as MySQL's for a server
// without GTIDs), or a plain error for an answer that is not one of those values.
func WaitReplica(ctx context.Context, conn driver.Conn, f Flavour, pos string, timeout time.Duration) (reached bool, err error) {
	query, err := WaitQuery(f, pos, timeout)
	if err != nil {
		return false, err
	}
	q, ok := conn.(driver.QueryerContext)
	if !ok {
		return false, errors.New("mysqlfailover: the connection cannot run the causal read wait (no driver.QueryerContext)")
	}
	v, err := queryValue(ctx, q, query)
	if err != nil {
		return false, err
	}
	if v == nil {
		return false, nil
	}
	var n int64
	switch v := v.(type) {
	case int64:
		n = v
	case []byte, string:
		n, err = strconv.ParseInt(dialect.Text(v), 10, 64)
		if err != nil {
			n = 2 // not a value either function returns
		}
	default:
		n = 2
	}
	timedOut := int64(1)
	if f == FlavourMariaDB {
		timedOut = -1
	}
	switch n {
	case 0:
		return true, nil
	case timedOut:
		return false, nil
	}
	return false, errors.New("mysqlfailover: unexpected answer of the causal read wait: " + strconv.Quote(dialect.Text(v)))
}
