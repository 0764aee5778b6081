// Package dsn parses and formats the data source names of the mysqlfailover
// driver: go-sql-driver/mysql DSNs with a list of hosts and the failover
// options of MySQL Connector/J.
//
// # Syntax
//
// A DSN has go-sql-driver's shape, with a comma-separated host list where
// go-sql-driver has one address:
//
//	[user[:password]@][net[(host[:port][;dc=LABEL],host[:port][;dc=LABEL],...)]]/dbname[?param=value&...]
//
//	app:secret@tcp(db1:3306,db2:3307,[::1]:3308)/shop?parseTime=true&retriesAllDown=3
//	app:secret@tcp(db1:3306;dc=east,db2;dc=west,[::1]:3308;dc=east)/shop?localDC=east
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
// # Host attributes
//
// A host entry may end with attributes, each written ";key=value" after the
// optional port (and after the brackets of an IPv6 literal: "[::1];dc=east",
// "[::1]:3308;dc=east"). The only key is dc, the host's data-centre label
// (Host.DC): 1..64 bytes of A-Z a-z 0-9 '.' '_' '-', case-sensitive. A host
// without one has no label and counts as local. An empty label (";dc="), a
// character outside that set, another key (";zone=x", ";DC=x"), a key
// without "=" and dc given twice are errors, and so are ';' and '=' in host
// names. Labels do not make hosts different: "db1;dc=east,db1;dc=west" is
// the same host twice. Labels only matter with localDC; without it they
// are informational, printed by Host.String and kept by FormatDSN.
//
// # Failover options
//
// These query parameters belong to this package; keys are case-sensitive,
// and a key that differs from one of them only in case ("localdc",
// DataStax's "usedHostsPerRemoteDc") or, for keys of 8 characters or more, by
// one or two letters ("retriesAllDwn", libpq's "target_session_attrs") is an
// error that says what was meant (instead of reaching the server as
// "SET retriesalldown=..." through go-sql-driver).
//
//	key                       type      unit     default  meaning                                   reference name
//	retriesAllDown            int       count    120      passes over the host list when all down   Connector/J retriesAllDown
//	secondsBeforeRetryMaster  int       seconds  30       time on a secondary before falling back   Connector/J secondsBeforeRetryMaster
//	secondsBeforeRetrySource  alias of secondsBeforeRetryMaster                                     Connector/J secondsBeforeRetrySource (8.0.23+)
//	queriesBeforeRetryMaster  int       count    50       statements on a secondary before that     Connector/J queriesBeforeRetryMaster
//	queriesBeforeRetrySource  alias of queriesBeforeRetryMaster                                     Connector/J queriesBeforeRetrySource (8.0.23+)
//	failOverReadOnly          bool      -        true     sessions on a secondary are read-only     Connector/J failOverReadOnly
//	readOnly                  bool      -        false    every session is read-only                (JDBC Connection.setReadOnly)
//	hostTimeout               duration  -        5s       bound on each host attempt, 0: none       (none)
//	targetSessionAttrs        enum      -        any      kind of session a host must give          libpq target_session_attrs
//	localDC                   dc label  -        ""       data centre whose hosts are tried first   DataStax DCAwareRoundRobinPolicy localDc
//	usedHostsPerRemoteDC      int       count    0        hosts used of each other data centre      DataStax DCAwareRoundRobinPolicy usedHostsPerRemoteDc
//	checkInterval             duration  -        0        probe and hostsURL poll interval, 0: off  Pulsar AutoClusterFailover checkInterval
//	failoverDelay             duration  -        1s       time failing probes before moving away    Pulsar AutoClusterFailover failoverDelay
//	switchBackDelay           duration  -        30s      time passing probes before moving back    Pulsar AutoClusterFailover switchBackDelay
//	hostsURL                  URL       -        ""       http(s) URL polled for the host list      (none)
//	hostsToken                secret    -        ""       bearer token sent to hostsURL             (none)
//	hostsAllowHTTP            bool      -        false    plain http to a non-loopback hostsURL     (none)
//
// The Config fields have the same names, capitalised (RetriesAllDown,
// SecondsBeforeRetryMaster, ... HostTimeout, TargetSessionAttrs, LocalDC,
// UsedHostsPerRemoteDC, CheckInterval, FailoverDelay, SwitchBackDelay),
// except that hostsURL, hostsToken and hostsAllowHTTP are HostsURL,
// HostsToken and HostsAllowHTTP.
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
// different values is an error. With probing on (checkInterval > 0, below),
// switchBackDelay replaces both as the fall-back trigger.
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
// targetSessionAttrs (Config.TargetSessionAttrs, named and spelt as libpq's
// and pgx's target_session_attrs) is the kind of session a connection must
// get; a host whose session does not qualify is passed over for the next
// one. The checks are on MySQL's global read_only, super_read_only and
// transaction_read_only (the default of every new session):
//
//	any             no check (the default)
//	read-write      read_only, super_read_only and transaction_read_only all OFF
//	read-only       read_only or super_read_only ON, or transaction_read_only ON
//	primary         read_only and super_read_only OFF
//	standby         read_only or super_read_only ON
//	prefer-standby  standbys first; any host as a last resort
//
// Values are case-sensitive; "read_write" or "Primary" is an error that says
// what was meant.
//
// localDC (Config.LocalDC, as the DataStax Java driver's
// DCAwareRoundRobinPolicy localDc) names the local data centre: its hosts,
// and the unlabelled ones, are tried first, in the usual rotation over the
// DSN order, and the first of them is the primary; hosts labelled
// with another ("remote") data centre come after them, and only as
// usedHostsPerRemoteDC allows. It must be the label of at least one host,
// exactly (labels are case-sensitive); a localDC without labelled hosts, or
// matching none of them, is an error that lists the known labels.
//
// usedHostsPerRemoteDC (Config.UsedHostsPerRemoteDC, as
// DCAwareRoundRobinPolicy's usedHostsPerRemoteDc) is how many hosts of each
// remote data centre may be used: the first ones of that data centre in DSN
// order; the others are never connected to. The default 0 keeps
// connections in the local data centre. A value > 0 needs localDC (and so
// labelled hosts).
//
// # Active health probes
//
// checkInterval, failoverDelay and switchBackDelay (Config.CheckInterval,
// FailoverDelay, SwitchBackDelay, named after the Pulsar Java client's
// AutoClusterFailover options; durations in time.ParseDuration syntax) turn
// on and tune active health probes. With checkInterval > 0 (it must then be
// at least 10ms, minCheckInterval) each host is probed every checkInterval
// with a real SQL round trip, on one long-lived probe connection per host.
// When the host the pool uses has failed its probes without a pause for
// failoverDelay (default 1s), the pool moves away from it proactively,
// before a statement fails there; when the pool is elsewhere and the
// primary has passed its probes without a pause for switchBackDelay
// (default 30s), the pool moves back to it. With probing on,
// switchBackDelay is the fall-back trigger: secondsBeforeRetryMaster and
// queriesBeforeRetryMaster are not used. The default checkInterval 0 turns
// probing off; failoverDelay and switchBackDelay are then ignored.
//
// # Host list provider
//
// hostsURL (Config.HostsURL) is an http or https URL whose JSON document
// gives the host list; it is fetched every checkInterval, which must then be
// > 0 (package driver implements the fetch and documents the JSON). The
// value is query-escaped, as url.QueryEscape writes it and FormatDSN
// writes it:
//
//	tcp(db1,db2)/shop?checkInterval=5s&hostsURL=https%3A%2F%2Fcfg.example%2Fdb%3Fcluster%3Da
//
// A URL without '&', '%' or '+' may also be written as it is
// ("?checkInterval=5s&hostsURL=https://cfg.example/hosts.json"): its '/' do
// not end the address list. A raw value ends at the next '&', and '+' in it
// means a blank, as in any query string. The URL must be https, or http to
// a loopback host (127.0.0.0/8, ::1, localhost), and have a host. Plain http
// to another host is an error unless hostsAllowHTTP=true
// (Config.HostsAllowHTTP), as the host list and the token would cross the
// network unencrypted. The URL must not hold user info
// ("https://user:pw@cfg.example/"): it is shown by String and in errors, so
// credentials go in hostsToken.
//
// hostsToken (Config.HostsToken) is sent to hostsURL as
// "Authorization: Bearer <token>"; it needs hostsURL. It must be an
// RFC 6750 b64token: 1 or more of A-Z a-z 0-9 - . _ ~ + / followed by
// optional '=' padding. It may be written as it is ('/' included) or
// %XX-escaped; unlike in other values, '+' stays '+'. FormatDSN escapes it
// with url.QueryEscape. It is a secret, treated as the password (see
// Passwords).
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
// Errors from Parse and Validate never contain the password, hostsToken or
// the whole DSN: they name the offending host entry, key or value only (a
// hostsToken value is "(not shown)", and so is a hostsURL that may hold
// user info). Config.String and GoString (%v, %s, %#v of a *Config) print
// the DSN with the password and hostsToken replaced by "xxxxx"; only
// FormatDSN, meant for machines, includes them. Formatting a Config value
// (not a pointer) with fmt prints its fields, HostsToken included.
package dsn
