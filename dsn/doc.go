// Package dsn parses and formats the data source names of the mysqlfailover
// driver: go-sql-driver/mysql DSNs with a list of hosts and the failover
// options of MySQL Connector/J.
//
// # Syntax
//
// A DSN has go-sql-driver's shape, with a comma-separated host list where
// go-sql-driver has one address:
//
//	[user[:password]@][net[(host[:port],host[:port],...)]]/dbname[?param=value&...]
//
//	app:secret@tcp(db1:3306,db2:3307,[::1]:3308)/shop?parseTime=true&retriesAllDown=3
//
// The first host is the primary, the others are secondaries in order of
// preference, as in a Connector/J failover URL. A host without a port gets
// 3306; IPv6 literals go in brackets ("[::1]", "[::1]:3308"); no host list
// means 127.0.0.1:3306, as in go-sql-driver. net is tcp, tcp4 or tcp6 (absent
// means tcp): a unix socket cannot fail over. The DSN is cut where
// go-sql-driver cuts it (the last '/', the last '@' before it, the first '('
// after that), so the password may contain '@', ':', '/' or '('. Host names
// are not resolved when parsing; an empty entry, a bad port, unbalanced
// brackets or the same host twice are errors.
//
// # Failover options
//
// These query parameters belong to this package; keys are case-sensitive,
// and a key that differs from one of them only in case is an error (instead
// of reaching the server as "SET retriesalldown=..." through go-sql-driver).
//
//	key                       type      unit     default  meaning                                   Connector/J name
//	retriesAllDown            int       count    120      passes over the host list when all down   retriesAllDown
//	secondsBeforeRetryMaster  int       seconds  30       time on a secondary before falling back   secondsBeforeRetryMaster
//	secondsBeforeRetrySource  alias of secondsBeforeRetryMaster                                     secondsBeforeRetrySource (8.0.23+)
//	queriesBeforeRetryMaster  int       count    50       statements on a secondary before that     queriesBeforeRetryMaster
//	queriesBeforeRetrySource  alias of queriesBeforeRetryMaster                                     queriesBeforeRetrySource (8.0.23+)
//	failOverReadOnly          bool      -        true     sessions on a secondary are read-only     failOverReadOnly
//	readOnly                  bool      -        false    every session is read-only                (JDBC Connection.setReadOnly)
//	hostTimeout               duration  -        5s       bound on each host attempt, 0: none       (none)
//
// The Config fields have the same names, capitalised (RetriesAllDown,
// SecondsBeforeRetryMaster, ... HostTimeout).
//
// retriesAllDown is the number of passes over the whole host list when every
// host is down before a connection attempt fails. 0 is treated as one pass
// (package failover implements this; Connector/J would try a single host).
//
// secondsBeforeRetryMaster and queriesBeforeRetryMaster: once on a secondary,
// the pool tries to fall back to the primary after that many seconds or that
// many statements, whichever comes first; 0 disables that trigger and both 0
// disables fall-back, as in Connector/J. Connector/J 8.0.23 renamed the
// ...Master keys to ...Source; both are accepted, and giving both names with
// different values is an error.
//
// failOverReadOnly makes sessions on a secondary read-only, since a secondary
// is usually a replica. readOnly makes every session read-only, the primary's
// too: it is the initial explicit flag of every connection, which the
// connection's SetReadOnly changes until database/sql hands it to its next user.
//
// hostTimeout (time.ParseDuration syntax: "5s", "500ms"; 0 means no per-host
// bound, only the caller's context; a caller's deadline also limits each attempt
// to half of the time left, but not below 250 ms nor below four times the host's
// usual attempt time) bounds every host attempt: dial, TLS and
// MySQL handshake, and session set-up. It exists because go-sql-driver's
// timeout parameter only bounds the TCP dial, so a host that accepts the
// connection and then hangs would stall the walk down the list.
//
// Integers are decimal >= 0; booleans are what strconv.ParseBool accepts
// (true/false/1/0 among others). A key given twice must have the same value.
//
// # What goes to go-sql-driver
//
// Every other parameter (tls, timeout, readTimeout, parseTime, loc,
// charset, system variables such as sql_mode=... and so on) goes to
// mysql.ParseDSN unchanged, escaping included, together with the user,
// password, net, database and the primary as the address. The resulting
// *mysql.Config is Config.MySQL; Config.HostConfig derives from it the
// config for each host, ready for mysql.NewConnector.
//
// # Passwords
//
// Errors from Parse and Validate never contain the password or the whole
// DSN: they name the offending host entry, key or value only. Config.String
// and GoString (%v, %s, %#v) print the DSN with the password replaced by
// "xxxxx"; only FormatDSN, meant for machines, includes it.
package dsn
