package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
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
	// Problems lists what is wrong, with the fix.
	Problems []problem `json:"problems"`
}

// hostReport is one host.
type hostReport struct {
	Host string `json:"host"`
	DC   string `json:"dc"`
	// Reachable: the connection (dial, TLS, authentication) succeeded.
	Reachable bool `json:"reachable"`
	// Error is why not (or the error of a query that failed afterwards).
	Error string `json:"error,omitempty"`
	// HandshakeSeconds is how long the connection took to open.
	HandshakeSeconds float64 `json:"handshake_seconds"`
	Version          string  `json:"version,omitempty"`
	// ReadOnly, SuperReadOnly, TransactionReadOnly are the global variables' values
	// ("ON", "OFF", ...); SuperReadOnly is "n/a" on servers without it (MariaDB).
	ReadOnly            string `json:"read_only,omitempty"`
	SuperReadOnly       string `json:"super_read_only,omitempty"`
	TransactionReadOnly string `json:"transaction_read_only,omitempty"`
	// Role is failover.Role's name for them: primary, read_only_primary, standby,
	// unknown.
	Role        string      `json:"role"`
	Replication replication `json:"replication"`
	// TLS: the session is encrypted (TLSCipher is Ssl_cipher).
	TLS       bool   `json:"tls"`
	TLSCipher string `json:"tls_cipher,omitempty"`

	role failover.Role
}

// replication is what SHOW REPLICA STATUS said.
type replication struct {
	// Status is "replica", "none" (not a replica), "unknown (no privilege)",
	// "unknown (error)" or "unknown (not reached)".
	Status string `json:"status"`
	// Source is host:port of its source.
	Source     string `json:"source,omitempty"`
	IORunning  string `json:"io_running,omitempty"`
	SQLRunning string `json:"sql_running,omitempty"`
	// LagSeconds is Seconds_Behind_Source; nil when unknown (NULL: a thread stopped).
	LagSeconds *int64 `json:"lag_seconds"`
	LastError  string `json:"last_error,omitempty"`
	// Privilege is the privilege needed to read it, when it was refused.
	Privilege string `json:"privilege_needed,omitempty"`
}

// problem is one finding.
type problem struct {
	Severity string `json:"severity"`
	Host     string `json:"host,omitempty"`
	Problem  string `json:"problem"`
	Fix      string `json:"fix"`
}

// plan is the host plan of a new pool.
type plan struct {
	TargetSessionAttrs   string     `json:"target_session_attrs"`
	LocalDC              string     `json:"local_dc,omitempty"`
	UsedHostsPerRemoteDC int        `json:"used_hosts_per_remote_dc,omitempty"`
	Order                []planHost `json:"order"`
	Ignored              []string   `json:"ignored,omitempty"`
	// Writer is the host whose role is primary ("" for none; the first of several).
	Writer string `json:"writer"`
	// Connect is the host a new connection would use now ("" for none), and Why.
	Connect string `json:"connect"`
	Why     string `json:"why"`
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
	cfg, err := mysqlfailover.ParseDSN(dsnStr)
	if err != nil {
		r.add(sevUnusable, "", "the driver rejects the DSN: "+err.Error(), dsnFix(err))
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
			r.add(sevUnusable, "", fmt.Sprintf("network %q is not one this command can dial: a program registers it with mysql.RegisterDialContext (or it is a misspelling of tcp)", n),
				fmt.Sprintf("check the hosts with tcp(...) in place of %s(...) from where that dialer reaches them, or correct the spelling", n))
			r.finish()
			return r
		}
	}
	r.Hosts = make([]hostReport, len(cfg.Hosts))
	var wg sync.WaitGroup
	for i, h := range cfg.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.Hosts[i] = checkHostBounded(ctx, cfg, h, timeout)
		}()
	}
	wg.Wait()
	r.Plan = makePlan(cfg, r.Hosts)
	r.findProblems(cfg)
	r.finish()
	return r
}

func (r *report) add(sev, host, what, fix string) {
	r.Problems = append(r.Problems, problem{Severity: sev, Host: host, Problem: what, Fix: fix})
}

// finish sets Status and ExitCode from the problems.
func (r *report) finish() {
	r.Status, r.ExitCode = "healthy", exitHealthy
	for _, p := range r.Problems {
		switch {
		case p.Severity == sevUnusable:
			r.Status, r.ExitCode = "unusable", exitUnusable
		case r.ExitCode == exitHealthy:
			r.Status, r.ExitCode = "degraded", exitDegraded
		}
	}
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
		return hostReport{Host: h.Addr(), DC: h.DC, Role: "unknown", Error: fmt.Sprintf("no answer within %v", timeout),
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

// checkHost connects to h and reads what the report shows.
func checkHost(ctx context.Context, cfg *dsn.Config, h dsn.Host, timeout time.Duration) hostReport {
	hr := hostReport{Host: h.Addr(), DC: h.DC, Role: "unknown", Replication: replication{Status: "unknown (not reached)"}}
	m := hostConfig(cfg, h, timeout)
	lg := &hostLogger{}
	m.Logger = lg // go-sql-driver's lines join the host's error, not stderr
	connector, err := mysql.NewConnector(m)
	if err != nil {
		hr.Error = err.Error()
		return hr
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	db.SetMaxOpenConns(1)
	start := time.Now()
	conn, err := db.Conn(ctx)
	hr.HandshakeSeconds = time.Since(start).Seconds()
	if err != nil {
		if errors.Is(err, mysql.ErrInvalidConn) {
			if why := lg.last(); why != "" {
				err = fmt.Errorf("%w (%s)", err, why)
			}
		}
		hr.Error = describe(ctx, err, timeout)
		if time.Since(start) >= timeout && !strings.HasPrefix(hr.Error, "no answer") {
			hr.Error = fmt.Sprintf("no answer within %v (%s)", timeout, hr.Error)
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
	vars, err := variables(ctx, conn)
	note("role", err)
	if err == nil {
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
	hr.Error = strings.Join(errs, "; ")
	return hr
}

// describe is err for the report: a timeout says so.
func describe(ctx context.Context, err error, timeout time.Duration) string {
	if ctx.Err() != nil {
		return fmt.Sprintf("no answer within %v (%v)", timeout, err)
	}
	return err.Error()
}

// variables reads the role variables, as the driver's role check does (no privilege).
func variables(ctx context.Context, conn *sql.Conn) (map[string]string, error) {
	rows, err := conn.QueryContext(ctx, "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('read_only', 'super_read_only', 'transaction_read_only', 'tx_read_only')")
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
		out[strings.ToLower(k)] = strings.ToUpper(v)
	}
	return out, rows.Err()
}

// roleOf is failover.Role by the rules of the driver's role check.
func roleOf(readOnly, superReadOnly, txReadOnly string) failover.Role {
	on := func(v string) bool { return v != "" && v != "OFF" && v != "0" } // "": the server has no such variable
	switch {
	case on(readOnly) || on(superReadOnly):
		return failover.RoleStandby
	case on(txReadOnly):
		return failover.RoleReadOnlyPrimary
	}
	return failover.RolePrimary
}

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
	var me *mysql.MySQLError
	if errors.As(err, &me) && me.Number == 1064 { // before MySQL 8.0.22, MariaDB 10.5.1
		rows, err = conn.QueryContext(ctx, "SHOW SLAVE STATUS")
	}
	if errors.As(err, &me) && (me.Number == 1227 || me.Number == 1142 || me.Number == 1044) {
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
	rep := replication{Status: "replica"}
	host, _ := get("Source_Host", "Master_Host")
	port, _ := get("Source_Port", "Master_Port")
	if host != "" {
		rep.Source = host + ":" + port
	}
	rep.IORunning, _ = get("Replica_IO_Running", "Slave_IO_Running")
	rep.SQLRunning, _ = get("Replica_SQL_Running", "Slave_SQL_Running")
	if lag, ok := get("Seconds_Behind_Source", "Seconds_Behind_Master"); ok {
		if n, err := strconv.ParseInt(lag, 10, 64); err == nil {
			rep.LagSeconds = &n
		}
	}
	ioErr, _ := get("Last_IO_Error")
	sqlErr, _ := get("Last_SQL_Error")
	rep.LastError = strings.TrimSpace(strings.Join(nonEmpty(ioErr, sqlErr), "; "))
	return rep
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
