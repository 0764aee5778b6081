package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// Exit codes.
const (
	exitHealthy  = 0
	exitDegraded = 1
	exitUnusable = 2
	exitUsage    = 3
)

// Severities of a problem, named after the exit status they lead to.
const (
	sevDegraded = "degraded"
	sevUnusable = "unusable"
)

// report is what check found; --json prints it as is.
type report struct {
	// Headline is the first line of the text output: the status and what leads it (the
	// first problem, or what makes the cluster healthy).
	Headline string `json:"headline"`
	// DSN is the DSN redacted (no password, no hostsToken); "" when it did not parse.
	DSN string `json:"dsn"`
	// Status is "healthy", "degraded" or "unusable"; ExitCode 0, 1 or 2.
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	// Timeout is --timeout, in seconds.
	Timeout float64 `json:"timeout_seconds"`
	// Hosts has one entry per host of the DSN, in list order.
	Hosts []hostReport `json:"hosts"`
	// Plan is the host plan of a new pool now (nil when the DSN did not parse).
	Plan *plan `json:"plan,omitempty"`
	// Problems lists what is wrong, with the fix, the most severe first (see
	// sortProblems): the first is the cause to act on.
	Problems []problem `json:"problems"`
}

// hostReport is one host.
type hostReport struct {
	Host string `json:"host"`
	DC   string `json:"dc"`
	// Origin is where the host comes from, as failover.HostStats.Origin names it: "dsn",
	// or with discoverHosts "discovered" (a member the cluster reports that the DSN does
	// not list; the driver adds it after the DSN's hosts).
	Origin string `json:"origin"`
	// ReportedBy is, for a discovered host, the host whose list of members named it, and
	// Reported the address it named it by; DiscoveredAt when check read that list.
	ReportedBy   string     `json:"reported_by,omitempty"`
	Reported     string     `json:"reported,omitempty"`
	DiscoveredAt *time.Time `json:"discovered_at,omitempty"`
	// Reachable: the connection (dial, TLS, authentication) succeeded.
	Reachable bool `json:"reachable"`
	// Error is why not (or the error of a query that failed afterwards).
	Error string `json:"error,omitempty"`
	// Failure is what kind of failure Error is, for an unreachable host: "refused"
	// (nothing listens: the server is not running), "closed" (the connection was closed
	// before the handshake ended: a proxy in front of a stopped server, or something
	// between that closes it), "timeout" (no answer within --timeout: a hung or frozen
	// server, or packets dropped), "auth" (access denied), "full" (too many
	// connections), "blocked" (1129: the server blocked the client's address after
	// max_connect_errors failed connections), "tls", "dns" or "other".
	Failure string `json:"failure,omitempty"`
	// HandshakeSeconds is how long the connection took to open.
	HandshakeSeconds float64 `json:"handshake_seconds"`
	Version          string  `json:"version,omitempty"`
	// ServerID is @@server_id (0: not read); check matches replicas to their source by
	// it.
	ServerID int64 `json:"server_id,omitempty"`
	// GTID is the server's applied GTID position: gtid_current_pos (MariaDB) or
	// gtid_executed (MySQL).
	GTID string `json:"gtid,omitempty"`
	// ReadOnly, SuperReadOnly, TransactionReadOnly are the global variables' values
	// ("ON", "OFF", ...); SuperReadOnly is "n/a" on servers without it (MariaDB).
	ReadOnly            string `json:"read_only,omitempty"`
	SuperReadOnly       string `json:"super_read_only,omitempty"`
	TransactionReadOnly string `json:"transaction_read_only,omitempty"`
	// Role is failover.Role's name for them: primary, read_only_primary, standby,
	// unknown.
	Role string `json:"role"`
	// Cluster is the cluster type the server says it is in, as the driver's
	// cluster=auto reads it: "galera" (wsrep_on=ON), "group" (a Group Replication
	// member) or "replication"; "" when not read.
	Cluster string `json:"cluster,omitempty"`
	// NotReady says why the server is not ready for application use, by its own word
	// (failover.HostNotReady: the driver uses no such host); "" when it is ready.
	NotReady string `json:"not_ready,omitempty"`
	// Galera is the node's wsrep status (Galera only).
	Galera      *galeraStatus `json:"galera,omitempty"`
	Replication replication   `json:"replication"`
	// TLS: the session is encrypted (TLSCipher is Ssl_cipher).
	TLS       bool   `json:"tls"`
	TLSCipher string `json:"tls_cipher,omitempty"`

	role failover.Role
	vars map[string]string
}

// galeraStatus is what SHOW GLOBAL STATUS says of a Galera node.
type galeraStatus struct {
	Ready             string `json:"wsrep_ready"`
	ClusterStatus     string `json:"wsrep_cluster_status"`
	LocalState        string `json:"wsrep_local_state"`
	LocalStateComment string `json:"wsrep_local_state_comment"`
	ClusterSize       int    `json:"wsrep_cluster_size"`
	StateUUID         string `json:"wsrep_cluster_state_uuid"`
	LastCommitted     int64  `json:"wsrep_last_committed"`
	Desync            string `json:"wsrep_desync"`
	RejectQueries     string `json:"wsrep_reject_queries"`
	// NodeUUID is wsrep_gcomm_uuid: the node's own UUID in the group, as
	// mysql.wsrep_cluster_members names it.
	NodeUUID string `json:"wsrep_gcomm_uuid,omitempty"`
}

// replication is what SHOW REPLICA STATUS said.
type replication struct {
	// Status is "replica", "none" (not a replica), "unknown (no privilege)",
	// "unknown (error)" or "unknown (not reached)".
	Status string `json:"status"`
	// State is, for a replica: "running" (both threads run), "connecting" (the IO thread
	// cannot reach its source and retries), "stopped" (a thread was stopped, without an
	// error) or "broken" (a thread stopped on an error).
	State string `json:"state,omitempty"`
	// Source is host:port of its source, as the replica names it.
	Source string `json:"source,omitempty"`
	// SourceHost is the host of the DSN that Source is (the same address, or the same
	// server_id as Source_Server_Id); with SourcePresumed, the one host check could not
	// read a server_id of, taken as the source of a replica that cannot reach its own.
	SourceHost     string `json:"source_host,omitempty"`
	SourcePresumed bool   `json:"source_presumed,omitempty"`
	SourceServerID int64  `json:"source_server_id,omitempty"`
	IORunning      string `json:"io_running,omitempty"`
	SQLRunning     string `json:"sql_running,omitempty"`
	// LagSeconds is Seconds_Behind_Source; nil when unknown (NULL: a thread is not
	// running).
	LagSeconds *int64 `json:"lag_seconds"`
	// ReceivedGTID is what the IO thread has received: Gtid_IO_Pos (MariaDB) or
	// Retrieved_Gtid_Set (MySQL).
	ReceivedGTID string `json:"received_gtid,omitempty"`
	IOErrno      int    `json:"io_errno,omitempty"`
	SQLErrno     int    `json:"sql_errno,omitempty"`
	LastError    string `json:"last_error,omitempty"`
	// Privilege is the privilege needed to read it, when it was refused.
	Privilege string `json:"privilege_needed,omitempty"`
}

// problem is one finding.
type problem struct {
	Severity string `json:"severity"`
	// Kind names the finding for programs: dsn, no_host, no_writer, writers, down,
	// not_ready, replication_broken, replication_stopped, replication_connecting,
	// query_error, writer_not_first, single_host, read_timeout, discovery.
	Kind    string `json:"kind"`
	Host    string `json:"host,omitempty"`
	Problem string `json:"problem"`
	Fix     string `json:"fix"`

	short string // the headline's words for it, when shorter than Problem
	rank  int    // the order within a severity (see sortProblems)
	index int    // the host's place in the list (-1: none)
}

// plan is the host plan of a new pool.
type plan struct {
	TargetSessionAttrs   string     `json:"target_session_attrs"`
	LocalDC              string     `json:"local_dc,omitempty"`
	UsedHostsPerRemoteDC int        `json:"used_hosts_per_remote_dc,omitempty"`
	Order                []planHost `json:"order"`
	Ignored              []string   `json:"ignored,omitempty"`
	// Writer is the host that takes the pool's writes: the host whose role is primary,
	// of several the one most replicas follow, then the first (for Galera, the first
	// ready node of the plan); "" for none.
	Writer string `json:"writer"`
	// Connect is the host a new connection would use now ("" for none), and Why.
	Connect string `json:"connect"`
	Why     string `json:"why"`
	// Promote is the replica to promote when there is no writer (see promotion): the
	// one furthest ahead; PromoteWhy gives the positions and lags it was chosen by.
	Promote    string `json:"promote,omitempty"`
	PromoteWhy string `json:"promote_why,omitempty"`
}

type planHost struct {
	Host      string `json:"host"`
	DC        string `json:"dc,omitempty"`
	Local     bool   `json:"local"`
	Qualifies bool   `json:"qualifies"`
	Reason    string `json:"reason"`
}

// check runs the whole check of dsnStr.
func check(ctx context.Context, dsnStr string, timeout time.Duration) *report {
	r := &report{Timeout: timeout.Seconds(), Hosts: []hostReport{}, Problems: []problem{}}
	cfg, err := dsn.Parse(dsnStr)
	if err != nil {
		r.add(problem{Severity: sevUnusable, Kind: "dsn", Problem: "the driver rejects the DSN: " + err.Error(), Fix: dsnFix(err)})
		r.finish()
		return r
	}
	r.DSN = cfg.String()
	if cfg.MySQL != nil {
		switch n := cfg.MySQL.Net; n {
		case "", "tcp", "tcp4", "tcp6", "unix":
		default:
			// A network name other than these is one a program registers with
			// mysql.RegisterDialContext; this command has no such dialer, and dialling the
			// hosts over plain TCP instead would check something else.
			r.add(problem{Severity: sevUnusable, Kind: "dsn",
				Problem: fmt.Sprintf("network %q is not one this command can dial: a program registers it with mysql.RegisterDialContext (or it is a misspelling of tcp)", n),
				Fix:     fmt.Sprintf("check the hosts with tcp(...) in place of %s(...) from where that dialer reaches them, or correct the spelling", n)})
			r.finish()
			return r
		}
	}
	r.Hosts = checkHosts(ctx, cfg, cfg.Hosts, timeout)
	if cfg.DiscoverHosts {
		cfg = r.discover(ctx, cfg, timeout)
	}
	judgeReadiness(r.Hosts)
	matchSources(r.Hosts)
	r.Plan = makePlan(cfg, r.Hosts)
	r.findProblems(cfg)
	r.finish()
	return r
}

func (r *report) add(p problem) {
	if p.index == 0 && p.Host == "" {
		p.index = -1
	}
	r.Problems = append(r.Problems, p)
}

// finish sorts the problems and sets Status, ExitCode and Headline from them.
func (r *report) finish() {
	sortProblems(r.Problems)
	r.Status, r.ExitCode = "healthy", exitHealthy
	for _, p := range r.Problems {
		switch {
		case p.Severity == sevUnusable:
			r.Status, r.ExitCode = "unusable", exitUnusable
		case r.ExitCode == exitHealthy:
			r.Status, r.ExitCode = "degraded", exitDegraded
		}
	}
	if len(r.Problems) > 0 {
		p := r.Problems[0]
		host := ""
		if p.Host != "" {
			host = p.Host + ": "
		}
		what := p.Problem
		if p.short != "" {
			what = p.short
		}
		r.Headline = r.Status + ": " + host + what
		switch n := len(r.Problems) - 1; {
		case n == 1:
			r.Headline += ". 1 more problem below" // a sentence of its own: not read as part of the last item
		case n > 1:
			r.Headline += fmt.Sprintf(". %d more problems below", n)
		}
		return
	}
	r.Headline = "healthy: " + r.healthySummary()
}

// healthySummary says what makes a cluster without problems healthy.
func (r *report) healthySummary() string {
	if r.Plan == nil {
		return "no problem found"
	}
	var replicas []string
	var maxLag *int64
	for _, h := range r.Hosts {
		if h.Replication.Status == "replica" {
			replicas = append(replicas, h.Host)
			if l := h.Replication.LagSeconds; l != nil && (maxLag == nil || *l > *maxLag) {
				maxLag = l
			}
		}
	}
	s := fmt.Sprintf("every host answers; writes go to %s", orNone(r.Plan.Writer))
	switch {
	case len(r.Hosts) > 0 && r.Hosts[0].Cluster == "galera":
		s += fmt.Sprintf(", %d Galera nodes ready", len(r.Hosts))
	case len(replicas) > 0 && maxLag != nil:
		s += fmt.Sprintf(", %d replicas running (lag at most %d s)", len(replicas), *maxLag)
	case len(replicas) > 0:
		s += fmt.Sprintf(", %d replicas running", len(replicas))
	}
	return s
}

// dsnFix is the fix for a DSN the driver rejects; its message already names the key,
// value or host (and for a misspelt key or localDC the right one).
func dsnFix(err error) string {
	switch {
	case errors.Is(err, dsn.ErrInvalidOption):
		return "correct the option named above (the message gives the right key, or the known DCs)"
	case errors.Is(err, dsn.ErrInvalidHost):
		return "correct the host entry named above: host[:port][;dc=LABEL], IPv6 in brackets"
	case errors.Is(err, dsn.ErrNotTCP):
		return "list TCP hosts: user:pw@tcp(db1:3306,db2:3306)/db"
	}
	return "write the DSN as [user[:password]@]tcp(host[:port],...)/dbname[?param=value&...]"
}

// checkHosts checks hosts at once, each as checkHostBounded, and returns their reports
// in order (origin dsn).
func checkHosts(ctx context.Context, cfg *dsn.Config, hosts []dsn.Host, timeout time.Duration) []hostReport {
	out := make([]hostReport, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = checkHostBounded(ctx, cfg, h, timeout)
			out[i].Origin = failover.OriginDSN.String()
		}()
	}
	wg.Wait()
	return out
}

// checkHostBounded is checkHost, given up after the timeout and a grace period whatever
// the driver does (a frozen host must not hang the command).
func checkHostBounded(ctx context.Context, cfg *dsn.Config, h dsn.Host, timeout time.Duration) hostReport {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	done := make(chan hostReport, 1)
	go func() { done <- checkHost(ctx, cfg, h, timeout) }()
	select {
	case hr := <-done:
		return hr
	case <-time.After(timeout + timeout/2):
		return hostReport{Host: h.Addr(), DC: h.DC, Role: "unknown", Error: fmt.Sprintf("no answer within %v", timeout), Failure: "timeout",
			Replication: replication{Status: "unknown (not reached)"}}
	}
}

// hostConfig is go-sql-driver's configuration for one host: the DSN's own (user, TLS,
// parameters) with the host's address and every timeout bounded by timeout.
func hostConfig(cfg *dsn.Config, h dsn.Host, timeout time.Duration) *mysql.Config {
	var m *mysql.Config
	if cfg.MySQL != nil {
		m = cfg.MySQL.Clone()
	} else {
		m = mysql.NewConfig()
	}
	if m.Net != "tcp4" && m.Net != "tcp6" && m.Net != "unix" {
		m.Net = "tcp"
	}
	m.Addr = h.Addr()
	for _, d := range []*time.Duration{&m.Timeout, &m.ReadTimeout, &m.WriteTimeout} {
		if *d <= 0 || *d > timeout {
			*d = timeout
		}
	}
	return m
}

// varsQuery reads, with one query that needs no privilege, what the driver's own role
// and readiness query reads (the role, offline_mode and the cluster type's variables),
// and the server id and GTID position check uses to match replicas to their source and
// choose the one to promote. A variable the server does not have is absent.
const varsQuery = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('read_only', 'super_read_only', 'transaction_read_only', 'tx_read_only', " +
	"'offline_mode', 'wsrep_on', 'wsrep_desync', 'wsrep_reject_queries', 'wsrep_sst_method', 'group_replication_group_name', " +
	"'server_id', 'server_uuid', 'gtid_current_pos', 'gtid_executed')"

// checkHost connects to h and reads what the report shows.
func checkHost(ctx context.Context, cfg *dsn.Config, h dsn.Host, timeout time.Duration) hostReport {
	hr := hostReport{Host: h.Addr(), DC: h.DC, Role: "unknown", Replication: replication{Status: "unknown (not reached)"}}
	m := hostConfig(cfg, h, timeout)
	lg := &hostLogger{}
	m.Logger = lg // go-sql-driver's lines join the host's error, not stderr
	connector, err := mysql.NewConnector(m)
	if err != nil {
		hr.Error, hr.Failure = err.Error(), "other"
		return hr
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	db.SetMaxOpenConns(1)
	start := time.Now()
	conn, err := db.Conn(ctx)
	hr.HandshakeSeconds = time.Since(start).Seconds()
	if err != nil {
		hr.Failure = failureOf(ctx, err)
		if errors.Is(err, mysql.ErrInvalidConn) {
			if why := lg.last(); why != "" {
				err = fmt.Errorf("%w (%s)", err, why)
			}
		}
		hr.Error = describe(ctx, err, timeout)
		if time.Since(start) >= timeout && !strings.HasPrefix(hr.Error, "no answer") {
			hr.Error = fmt.Sprintf("no answer within %v (%s)", timeout, hr.Error)
			hr.Failure = "timeout"
		}
		if nr := refusalReason(err); nr != "" {
			// The server answered, and refused the session because it is not ready.
			hr.NotReady = nr
		}
		return hr
	}
	defer conn.Close()
	hr.Reachable = true
	var errs []string
	note := func(what string, err error) {
		if err != nil {
			errs = append(errs, what+": "+describe(ctx, err, timeout))
		}
	}
	note("version", conn.QueryRowContext(ctx, "SELECT VERSION()").Scan(&hr.Version))
	vars, err := showRows(ctx, conn, varsQuery)
	if nr := refusalReason(err); nr != "" {
		hr.NotReady, err = nr, nil // the server refuses statements: not ready
	}
	note("role", err)
	if err == nil {
		hr.vars = vars
		hr.ReadOnly, hr.SuperReadOnly = vars["read_only"], vars["super_read_only"]
		hr.TransactionReadOnly = vars["transaction_read_only"]
		if hr.TransactionReadOnly == "" {
			hr.TransactionReadOnly = vars["tx_read_only"]
		}
		hr.role = roleOf(hr.ReadOnly, hr.SuperReadOnly, hr.TransactionReadOnly)
		hr.Role = roleName(hr.role)
		if hr.SuperReadOnly == "" {
			hr.SuperReadOnly = "n/a"
		}
		hr.ServerID, _ = strconv.ParseInt(vars["server_id"], 10, 64)
		hr.GTID = vars["gtid_current_pos"]
		if hr.GTID == "" {
			hr.GTID = vars["gtid_executed"]
		}
		hr.GTID = strings.ReplaceAll(hr.GTID, "\n", "")
	}
	var name string
	if err := conn.QueryRowContext(ctx, "SHOW SESSION STATUS LIKE 'Ssl_cipher'").Scan(&name, &hr.TLSCipher); err != nil && !errors.Is(err, sql.ErrNoRows) {
		note("tls", err)
	}
	hr.TLS = hr.TLSCipher != ""
	hr.Replication = replicaStatus(ctx, conn)
	if hr.Replication.Status == "unknown (error)" {
		errs = append(errs, "replication: "+hr.Replication.LastError)
		hr.Replication.LastError = ""
	}
	if vars != nil {
		note("readiness", readReadiness(ctx, conn, cfg.Cluster, &hr))
	}
	hr.Error = strings.Join(errs, "; ")
	return hr
}

// failureOf names the kind of a failed connection's error (see hostReport.Failure).
func failureOf(ctx context.Context, err error) string {
	var me *mysql.MySQLError
	var dnsErr *net.DNSError
	switch {
	case ctx.Err() != nil || errors.Is(err, context.DeadlineExceeded) || isTimeout(err):
		return "timeout"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "refused"
	case errors.As(err, &dnsErr):
		return "dns"
	case errors.As(err, &me):
		switch me.Number {
		case dialect.ErrAccessDenied, dialect.ErrDBAccessDenied, dialect.ErrBadDB, dialect.ErrAccessDeniedNoPassword:
			return "auth"
		case dialect.ErrConCount, dialect.ErrTooManyUserConnections:
			return "full"
		case dialect.ErrHostIsBlocked: // max_connect_errors
			return "blocked"
		}
		return "other"
	case errors.Is(err, mysql.ErrInvalidConn), errors.Is(err, mysql.ErrMalformPkt):
		return "closed"
	case strings.Contains(err.Error(), "tls") || strings.Contains(err.Error(), "x509"):
		return "tls"
	}
	return "other"
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// describe is err for the report: a timeout says so.
func describe(ctx context.Context, err error, timeout time.Duration) string {
	if ctx.Err() != nil {
		return fmt.Sprintf("no answer within %v (%v)", timeout, err)
	}
	return err.Error()
}

// showRows runs a SHOW ... (name, value) query and returns its rows, names in lower
// case.
func showRows(ctx context.Context, conn *sql.Conn, query string) (map[string]string, error) {
	rows, err := conn.QueryContext(ctx, query)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]string{}
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return nil, err
		}
		out[strings.ToLower(k)] = v
	}
	return out, rows.Err()
}

// roleOf is failover.Role by the rules of the driver's role check.
func roleOf(readOnly, superReadOnly, txReadOnly string) failover.Role {
	switch {
	case on(readOnly) || on(superReadOnly):
		return failover.RoleStandby
	case on(txReadOnly):
		return failover.RoleReadOnlyPrimary
	}
	return failover.RolePrimary
}

// on reports whether a variable's value is set: anything but "", OFF and 0 ("": the
// server has no such variable).
func on(v string) bool { return v != "" && !strings.EqualFold(v, "OFF") && v != "0" }

func roleName(r failover.Role) string {
	switch r {
	case failover.RolePrimary:
		return "primary"
	case failover.RoleReadOnlyPrimary:
		return "read_only_primary"
	case failover.RoleStandby:
		return "standby"
	}
	return "unknown"
}

// replicaStatus runs SHOW REPLICA STATUS (SHOW SLAVE STATUS where the server does not
// know it).
func replicaStatus(ctx context.Context, conn *sql.Conn) replication {
	rows, err := conn.QueryContext(ctx, "SHOW REPLICA STATUS")
	if dialect.Number(err) == dialect.ErrParse { // before MySQL 8.0.22, MariaDB 10.5.1
		rows, err = conn.QueryContext(ctx, "SHOW SLAVE STATUS")
	}
	switch dialect.Number(err) {
	case dialect.ErrSpecificAccessDenied, dialect.ErrTableAccessDenied, dialect.ErrDBAccessDenied:
		return replication{Status: "unknown (no privilege)",
			Privilege: "REPLICATION CLIENT (MySQL, MariaDB before 10.5.9) or REPLICA MONITOR (MariaDB 10.5.9 and later)"}
	}
	if err != nil {
		return replication{Status: "unknown (error)", LastError: err.Error()}
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return replication{Status: "unknown (error)", LastError: err.Error()}
	}
	if !rows.Next() {
		if err := rows.Err(); err != nil {
			return replication{Status: "unknown (error)", LastError: err.Error()}
		}
		return replication{Status: "none"}
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return replication{Status: "unknown (error)", LastError: err.Error()}
	}
	get := func(names ...string) (string, bool) {
		for _, n := range names {
			for i, c := range cols {
				if strings.EqualFold(c, n) {
					return vals[i].String, vals[i].Valid
				}
			}
		}
		return "", false
	}
	return replicationOf(get)
}

// replicationOf reads one row of SHOW REPLICA STATUS through get (a column's value by
// any of its names, and whether it is not NULL).
func replicationOf(get func(names ...string) (string, bool)) replication {
	rep := replication{Status: "replica"}
	host, _ := get("Source_Host", "Master_Host")
	port, _ := get("Source_Port", "Master_Port")
	if host != "" {
		rep.Source = net.JoinHostPort(host, port)
	}
	rep.IORunning, _ = get("Replica_IO_Running", "Slave_IO_Running")
	rep.SQLRunning, _ = get("Replica_SQL_Running", "Slave_SQL_Running")
	if lag, ok := get("Seconds_Behind_Source", "Seconds_Behind_Master"); ok {
		if n, err := strconv.ParseInt(lag, 10, 64); err == nil {
			rep.LagSeconds = &n
		}
	}
	if id, _ := get("Source_Server_Id", "Master_Server_Id"); id != "" {
		rep.SourceServerID, _ = strconv.ParseInt(id, 10, 64)
	}
	rep.ReceivedGTID, _ = get("Gtid_IO_Pos", "Retrieved_Gtid_Set")
	rep.ReceivedGTID = strings.ReplaceAll(rep.ReceivedGTID, "\n", "")
	n, _ := get("Last_IO_Errno")
	rep.IOErrno, _ = strconv.Atoi(n)
	n, _ = get("Last_SQL_Errno")
	rep.SQLErrno, _ = strconv.Atoi(n)
	ioErr, _ := get("Last_IO_Error")
	sqlErr, _ := get("Last_SQL_Error")
	rep.LastError = strings.TrimSpace(strings.Join(nonEmpty(ioErr, sqlErr), "; "))
	io, sqlRun := strings.ToLower(rep.IORunning), strings.ToLower(rep.SQLRunning)
	switch {
	case sqlRun != "yes" && rep.SQLErrno != 0, io == "no" && rep.IOErrno != 0:
		rep.State = "broken"
	case io == "connecting":
		rep.State = "connecting"
	case io != "yes" || sqlRun != "yes":
		rep.State = "stopped"
	default:
		rep.State = "running"
	}
	return rep
}

// matchSources names, for each replica, the host of the DSN it replicates from: the host
// listed with its Source address, else the host whose server_id is its
// Source_Server_Id, else, for a replica whose IO thread is not running, the one host
// whose server_id is unknown (not reachable), presumed. A source outside the list
// keeps SourceHost "".
func matchSources(hosts []hostReport) {
	unknown := -1
	for i, h := range hosts {
		if h.ServerID == 0 {
			if unknown >= 0 {
				unknown = -2 // more than one: no guess
				break
			}
			unknown = i
		}
	}
	for i := range hosts {
		rep := &hosts[i].Replication
		if rep.Status != "replica" {
			continue
		}
		for _, s := range hosts {
			if strings.EqualFold(s.Host, rep.Source) || rep.SourceServerID != 0 && s.ServerID == rep.SourceServerID {
				rep.SourceHost = s.Host
				break
			}
		}
		if rep.SourceHost == "" && unknown >= 0 && unknown != i && !strings.EqualFold(rep.IORunning, "Yes") {
			rep.SourceHost, rep.SourcePresumed = hosts[unknown].Host, true
		}
	}
}

func nonEmpty(s ...string) []string {
	var out []string
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}

var sourceLine = regexp.MustCompile(`^[a-z_]+\.go:[0-9]+ *`)

// hostLogger keeps go-sql-driver's log lines of one host: "invalid connection" says
// little, the line before it (unexpected EOF, i/o timeout) says why.
type hostLogger struct {
	mu    sync.Mutex
	lines []string
}

func (l *hostLogger) Print(v ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	parts := make([]string, 0, len(v))
	for _, x := range v {
		if p := strings.TrimSpace(fmt.Sprint(x)); p != "" {
			parts = append(parts, p)
		}
	}
	l.lines = append(l.lines, sourceLine.ReplaceAllString(strings.Join(parts, " "), "")) // "packets.go:58 unexpected EOF"
}

func (l *hostLogger) last() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.lines) == 0 {
		return ""
	}
	return l.lines[len(l.lines)-1]
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
