package fake

import (
	"database/sql/driver"
	"io"
	"strconv"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// SetReadOnly sets host i's global read_only (all hosts start OFF). While it is ON, every
// INSERT, UPDATE, DELETE or REPLACE on the host's connections fails with 1290, as a
// MariaDB replica answers a user without SUPER, before reaching the script.
func (n *Net) SetReadOnly(i int, on bool) {
	n.mu.Lock()
	n.hosts[i].readOnly = on
	n.mu.Unlock()
}

// SetTxReadOnly sets host i's global transaction_read_only (all hosts start OFF).
func (n *Net) SetTxReadOnly(i int, on bool) {
	n.mu.Lock()
	n.hosts[i].txReadOnly = on
	n.mu.Unlock()
}

// SetLag sets what host i answers to SHOW REPLICA STATUS and SHOW SLAVE STATUS:
// Seconds_Behind_Master = secs (all hosts start at 0); LagNull answers NULL (a
// replication thread stopped), LagNone an empty result (not a replica).
func (n *Net) SetLag(i int, secs int64) {
	n.mu.Lock()
	n.hosts[i].lag = secs
	n.mu.Unlock()
}

// Follow makes host i replicate from host src (-1: from none, a primary): its replica
// status names src's server_id (Master_Server_Id), and src lists it among its replicas
// (SHOW REPLICA HOSTS). Host i's server_id is i+1 (SELECT @@server_id).
func (n *Net) Follow(i, src int) {
	n.mu.Lock()
	n.hosts[i].source = src
	n.mu.Unlock()
}

// DenyReplicaHosts makes SHOW REPLICA HOSTS (and SHOW SLAVE HOSTS) on host i fail with
// 1227, as MariaDB answers a user without REPLICATION MASTER ADMIN.
func (n *Net) DenyReplicaHosts(i int, deny bool) {
	n.mu.Lock()
	n.hosts[i].hostsDenied = deny
	n.mu.Unlock()
}

// DenyReplicaStatus makes SHOW REPLICA STATUS (and SHOW SLAVE STATUS) on host i fail
// with 1227, as MariaDB answers a user without SLAVE MONITOR.
func (n *Net) DenyReplicaStatus(i int, deny bool) {
	n.mu.Lock()
	n.hosts[i].statusDenied = deny
	n.mu.Unlock()
}

// ReplicaStatusDenied is MariaDB 10.11's answer to SHOW REPLICA STATUS from a user
// without SLAVE MONITOR.
var ReplicaStatusDenied = &mysql.MySQLError{Number: dialect.ErrSpecificAccessDenied, SQLState: [5]byte{'4', '2', '0', '0', '0'},
	Message: "Access denied; you need (at least one of) the SUPER, SLAVE MONITOR privilege(s) for this operation"}

// ReplicaHostsDenied is MariaDB 10.11's answer to SHOW REPLICA HOSTS from a user
// without REPLICATION MASTER ADMIN.
var ReplicaHostsDenied = &mysql.MySQLError{Number: dialect.ErrSpecificAccessDenied, SQLState: [5]byte{'4', '2', '0', '0', '0'},
	Message: "Access denied; you need (at least one of) the REPLICATION MASTER ADMIN privilege(s) for this operation"}

// SetLag's special values.
const (
	LagNull int64 = -1
	LagNone int64 = -2
)

// HangRoleReads makes the next k role reads on host i (on any of its connections) hang
// until their context ends, as on a server that froze after it had answered before; each
// then fails with the context's error.
func (n *Net) HangRoleReads(i, k int) {
	n.mu.Lock()
	n.hosts[i].hangRoles = k
	n.mu.Unlock()
}

// hangRole reports whether query is a role read of c's host that HangRoleReads says to
// hang, and counts it.
func (c *Conn) hangRole(query string) bool {
	if !strings.HasPrefix(query, "SHOW GLOBAL VARIABLES") && !strings.HasPrefix(query, "SELECT @@global.read_only") {
		return false
	}
	c.net.mu.Lock()
	defer c.net.mu.Unlock()
	h := c.net.hosts[c.Host]
	if h.hangRoles == 0 {
		return false
	}
	h.hangRoles--
	return true
}

// RoleChecks returns how many role queries (SHOW GLOBAL VARIABLES ...) host i answered.
func (n *Net) RoleChecks(i int) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hosts[i].roleChecks
}

// ReadOnlyError is the error a MariaDB server with read_only=ON gives a write.
var ReadOnlyError = &mysql.MySQLError{Number: dialect.ErrOptionPreventsStatement, SQLState: [5]byte{'H', 'Y', '0', '0', '0'},
	Message: "The MariaDB server is running with the --read-only option so it cannot execute this statement"}

// Probes returns how many probe queries (SELECT 1) host i answered.
func (n *Net) Probes(i int) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.hosts[i].probes
}

// roleAnswer answers the role query from the host's state, the probe query (SELECT 1)
// with one row, the replica status, and the readiness queries (stateAnswer); ok is false
// for other queries.
func (c *Conn) roleAnswer(query string) (driver.Rows, error, bool) {
	if query == "SELECT 1" {
		c.net.mu.Lock()
		c.net.hosts[c.Host].probes++
		c.net.mu.Unlock()
		return &rows{vals: [][]driver.Value{{int64(1), int64(1)}}}, nil, true
	}
	if strings.HasPrefix(query, "SHOW REPLICA STATUS") || strings.HasPrefix(query, "SHOW SLAVE STATUS") {
		c.net.mu.Lock()
		lag, src, denied := c.net.hosts[c.Host].lag, c.net.hosts[c.Host].source, c.net.hosts[c.Host].statusDenied
		c.net.mu.Unlock()
		if denied {
			return nil, ReplicaStatusDenied, true
		}
		r := &rows{cols: []string{"Slave_IO_State", "Seconds_Behind_Master"}}
		switch lag {
		case LagNone:
		case LagNull:
			r.vals = [][]driver.Value{{[]byte("Waiting for master"), nil}}
		default:
			r.vals = [][]driver.Value{{[]byte("Waiting for master"), []byte(strconv.FormatInt(lag, 10))}}
		}
		if src >= 0 && len(r.vals) > 0 {
			r.cols = append(r.cols, "Master_Server_Id")
			r.vals[0] = append(r.vals[0], []byte(strconv.Itoa(src+1)))
		}
		return r, nil, true
	}
	if query == "SELECT @@server_id" {
		return &rows{cols: []string{"@@server_id"}, vals: [][]driver.Value{{int64(c.Host + 1)}}}, nil, true
	}
	c.net.mu.Lock()
	r, err, ok := c.memberAnswer(c.net.hosts[c.Host], query)
	c.net.mu.Unlock()
	if ok {
		return r, err, true
	}
	if r, err, ok := c.stateAnswer(query); ok {
		return r, err, true
	}
	if strings.HasPrefix(query, "SELECT @@global.read_only") { // the learned role query begins so
		return c.selectGlobals(strings.Split(strings.TrimPrefix(query, "SELECT @@global."), ", @@global."))
	}
	if !strings.HasPrefix(query, "SHOW GLOBAL VARIABLES") {
		return nil, nil, false
	}
	return &rows{vals: c.globals()}, nil, true
}

// selectGlobals answers SELECT @@global.a, @@global.b, ... (the probes' learned role
// query) from the same variables as SHOW GLOBAL VARIABLES; a role check as that is. A
// name the host lacks fails with 1193, as a server does.
func (c *Conn) selectGlobals(names []string) (driver.Rows, error, bool) {
	vars := map[string]driver.Value{}
	for _, p := range c.globals() {
		vars[string(p[0].([]byte))] = p[1]
	}
	row := make([]driver.Value, len(names))
	cols := make([]string, len(names))
	for i, n := range names {
		v, ok := vars[n]
		if !ok {
			return nil, &mysql.MySQLError{Number: 1193, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "Unknown system variable '" + n + "'"}, true
		}
		row[i], cols[i] = v, "@@global."+n
	}
	return &rows{cols: cols, vals: [][]driver.Value{row}}, nil, true
}

// globals is the host's answer to SHOW GLOBAL VARIABLES: name-value pairs; each call
// counts as a role check.
func (c *Conn) globals() [][]driver.Value {
	c.net.mu.Lock()
	h := c.net.hosts[c.Host]
	h.roleChecks++
	ro, tx := h.readOnly, h.txReadOnly
	c.net.mu.Unlock()
	onOff := func(b bool) string {
		if b {
			return "ON"
		}
		return "OFF"
	}
	vals := [][]driver.Value{
		{[]byte("read_only"), []byte(onOff(ro))},
		{[]byte("tx_read_only"), []byte(onOff(tx))},
		{[]byte("server_id"), []byte(strconv.Itoa(c.Host + 1))},
	}
	c.net.mu.Lock()
	vals = append(vals, pairs(h.vars)...)
	c.net.mu.Unlock()
	return vals
}

// rejectWrite returns 1290 for a write while the host is read-only.
func (c *Conn) rejectWrite(query string) error {
	q := strings.ToUpper(strings.TrimSpace(query))
	write := false
	for _, w := range []string{"INSERT", "UPDATE", "DELETE", "REPLACE"} {
		write = write || strings.HasPrefix(q, w)
	}
	c.net.mu.Lock()
	ro := c.net.hosts[c.Host].readOnly
	c.net.mu.Unlock()
	if write && ro {
		return ReadOnlyError
	}
	return nil
}

// rows is a fixed two-column result.
type rows struct {
	cols []string // nil: Variable_name, Value
	vals [][]driver.Value
	i    int
}

func (r *rows) Columns() []string {
	if r.cols != nil {
		return r.cols
	}
	return []string{"Variable_name", "Value"}
}
func (r *rows) Close() error { return nil }
func (r *rows) Next(dest []driver.Value) error {
	if r.i >= len(r.vals) {
		return io.EOF
	}
	copy(dest, r.vals[r.i])
	r.i++
	return nil
}
