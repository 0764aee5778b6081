package fake

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"net"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/dsn"
)

var dsnSeq atomic.Int64

// threadSeq numbers the fake connections' server threads across the process (socket.go).
var threadSeq atomic.Int64

// Refused is the dial error of a down host: what net.Dialer returns for a closed port.
func Refused(addr string) error {
	return &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED), Addr: fakeAddr(addr)}
}

type fakeAddr string

func (a fakeAddr) Network() string { return "tcp" }
func (a fakeAddr) String() string  { return string(a) }

// Net is a set of fake hosts H1:3306 .. Hn:3306, in the spirit of Connector/J's
// UnreliableSocketFactory: a down host refuses new connections and its existing
// connections fail every call. Physical connections are go-sqlmock connections,
// scripted per host by Script.
type Net struct {
	t     testing.TB
	mu    sync.Mutex
	hosts []*host
	seq   int
	conns []*Conn

	sockets bool             // TrackSockets
	now     func() time.Time // TrackSockets: stamps the sockets' greeting
}

type host struct {
	addr    string
	dialErr error
	ioErr   error
	script  func(int, sqlmock.Sqlmock)

	accept               int   // with refuseAfter set: dials still accepted (AcceptOnly)
	refuseAfter          bool  // AcceptOnly: refuse once accept reaches 0
	readOnly, txReadOnly bool  // answered to the role query; readOnly rejects writes
	lag                  int64 // answered to SHOW REPLICA STATUS (SetLag)
	source               int   // the host it replicates from (Follow; -1: none)
	hostsDenied          bool  // SHOW REPLICA HOSTS fails with 1227 (DenyReplicaHosts)
	statusDenied         bool  // SHOW REPLICA STATUS fails with 1227 (DenyReplicaStatus)
	roleChecks           int
	probes               int
	hangRoles            int // role reads still to hang until their context ends (HangRoleReads)

	vars, status map[string]string // more of the role query's answer, and SHOW GLOBAL STATUS (ready.go)
	members      [][]driver.Value  // the Group Replication member query's answer
	memberErr    error             // or its error
	refuse       error             // what a statement gets while the host is not ready (Refuse)

	kills        []uint32 // the thread ids KILL CONNECTION was sent for (socket.go)
	killErr      error    // what KILL answers instead (KillErr)
	linger       int      // process-list reads that still show a killed thread (Linger)
	processReads int
	uptime       time.Duration // answered to cluster.UptimeQuery (SetUptime)
	uptimeReads  int

	report      string // the address it reports of itself (Report; members.go)
	reportSet   bool
	membersErr  error // DenyMembers
	groupCols   []string
	groupRows   [][]driver.Value // GroupMembers
	memberReads int
}

// NewNet returns n hosts, all up, whose connections expect nothing: a primary (H1) and
// its replicas (H2 .. Hn replicate from H1: see Follow), all writable (SetReadOnly).
func NewNet(t testing.TB, n int) *Net {
	fn := &Net{t: t}
	for i := 0; i < n; i++ {
		src := 0
		if i == 0 {
			src = -1
		}
		fn.hosts = append(fn.hosts, &host{addr: "H" + strconv.Itoa(i+1) + ":3306", source: src, uptime: DefaultUptime})
	}
	return fn
}

// Addrs returns "H1:3306", "H2:3306", ...
func (n *Net) Addrs() []string {
	out := make([]string, len(n.hosts))
	for i, h := range n.hosts {
		out[i] = h.addr
	}
	return out
}

// Hosts returns the hosts as a DSN lists them: {H1 3306}, {H2 3306}, ..., without DC
// labels, for a *dsn.Config.
func (n *Net) Hosts() []dsn.Host {
	out := make([]dsn.Host, len(n.hosts))
	for i := range n.hosts {
		out[i] = dsn.Host{Name: "H" + strconv.Itoa(i+1), Port: 3306}
	}
	return out
}

// Down makes host i refuse new connections (ECONNREFUSED) and fail every call on its
// open connections with mysql.ErrInvalidConn (a read failed after the request was sent).
func (n *Net) Down(i int) { n.Set(i, Refused(n.hosts[i].addr), mysql.ErrInvalidConn) }

// Kill is Down for a killed server process: its sockets are closed too, so go-sql-driver's
// liveness check of idle connections (ResetSession) sees them dead.
func (n *Net) Kill(i int) {
	n.Down(i)
	n.mu.Lock()
	for _, c := range n.conns {
		if c.Host == i {
			c.dead = true
		}
	}
	n.mu.Unlock()
}

// Up undoes Down and Kill (for new connections; killed ones stay dead).
func (n *Net) Up(i int) { n.Set(i, nil, nil) }

// Set sets the error new connections to host i get (nil: they succeed) and the error
// every call on its open connections gets (nil: calls go to the script).
func (n *Net) Set(i int, dialErr, ioErr error) {
	n.mu.Lock()
	n.hosts[i].dialErr, n.hosts[i].ioErr = dialErr, ioErr
	n.mu.Unlock()
}

// AcceptOnly makes host i accept k more new connections and refuse the ones after
// (ECONNREFUSED), as a host that dies after a session was opened to it; its open
// connections keep following their scripts.
func (n *Net) AcceptOnly(i, k int) {
	n.mu.Lock()
	n.hosts[i].accept, n.hosts[i].refuseAfter = k, true
	n.mu.Unlock()
}

// Script sets what every new connection to host i expects. f receives the connection's
// sequence number on that host (0 for the first) and its mock, unordered.
func (n *Net) Script(i int, f func(seq int, m sqlmock.Sqlmock)) {
	n.mu.Lock()
	n.hosts[i].script = f
	n.mu.Unlock()
}

// Conns returns every physical connection opened to host i, oldest first.
func (n *Net) Conns(i int) []*Conn {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []*Conn
	for _, c := range n.conns {
		if c.Host == i {
			out = append(out, c)
		}
	}
	return out
}

// AllConns returns every physical connection opened.
func (n *Net) AllConns() []*Conn {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]*Conn(nil), n.conns...)
}

func (n *Net) ioErr(c *Conn) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	if c.dead {
		return mysql.ErrInvalidConn
	}
	return n.hosts[c.Host].ioErr
}

func (n *Net) killed(c *Conn) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return c.dead
}

// Dial is a cluster.DialFunc.
func (n *Net) Dial(ctx context.Context, i int) (driver.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	n.mu.Lock()
	h := n.hosts[i]
	if h.refuseAfter {
		if h.accept == 0 {
			n.mu.Unlock()
			return nil, Refused(h.addr)
		}
		h.accept--
	}
	if h.dialErr != nil {
		n.mu.Unlock()
		return nil, h.dialErr
	}
	n.seq++
	// sqlmock keeps every DSN it saw for the life of the process: a process-wide
	// sequence keeps them unique across tests (a Net's address can be reused).
	dsn := fmt.Sprintf("fake-%s-%d", h.addr, dsnSeq.Add(1))
	seq := 0
	for _, c := range n.conns {
		if c.Host == i {
			seq++
		}
	}
	script := h.script
	n.mu.Unlock()

	db, mock, err := sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(sqlmock.QueryMatcherEqual),
		sqlmock.ValueConverterOption(driver.DefaultParameterConverter))
	if err != nil {
		return nil, err
	}
	n.t.Cleanup(func() { _ = db.Close() })
	mock.MatchExpectationsInOrder(false)
	if script != nil {
		script(seq, mock)
	}
	inner, err := db.Driver().Open(dsn)
	if err != nil {
		return nil, err
	}
	c := &Conn{Host: i, Seq: seq, Mock: mock, inner: inner, net: n}
	c.Sock.SetThread(uint32(FirstThread + threadSeq.Add(1) - 1))
	n.mu.Lock()
	if n.now != nil {
		c.Sock.SetOpened(n.now())
	}
	n.mu.Unlock()
	n.mu.Lock()
	n.conns = append(n.conns, c)
	n.mu.Unlock()
	return c, nil
}

// DB is a helper for tests that want a *sql.DB over a connector.
func DB(t testing.TB, c driver.Connector) *sql.DB {
	db := sql.OpenDB(c)
	t.Cleanup(func() { _ = db.Close() })
	return db
}
