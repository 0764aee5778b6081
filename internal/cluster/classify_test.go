package cluster_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

func myErr(n uint16, state string, msg string) *mysql.MySQLError {
	e := &mysql.MySQLError{Number: n, Message: msg}
	copy(e.SQLState[:], state)
	return e
}

// lostPrimaryMsg is the message of MariaDB 10.11's 1180 from a Galera node that lost the
// Primary component while it replicated a commit.
const lostPrimaryMsg = "Error while appending streaming replication fragment(provider status: Not connected to Primary Component)"

func TestClassify(t *testing.T) {
	opErr := func(err error) error {
		return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", err)}
	}
	tests := []struct {
		name string
		err  error
		want cluster.Class
	}{
		{"nil", nil, cluster.Data},
		// communication: server error packets
		{"1040 too many connections 08004", myErr(1040, "08004", "Too many connections"), cluster.Communication},
		{"1040 at handshake, no SQLSTATE", myErr(1040, "", "Too many connections"), cluster.Communication},
		{"1043 bad handshake", myErr(1043, "08S01", "Bad handshake"), cluster.Communication},
		// not ready: refusals of a server that answers (the session lives on)
		{"1047 Galera not prepared", myErr(1047, "08S01", "WSREP has not yet prepared node for application use"), cluster.NotReady},
		{"3032 offline mode", myErr(3032, "HY000", "The server is currently in offline mode"), cluster.NotReady},
		{"3796 group member not ONLINE", myErr(3796, "HY000", "The option group_replication_consistency cannot be used on the current member state"), cluster.NotReady},
		{"3799 group replication stopping", myErr(3799, "HY000", "Transaction cannot be executed while Group Replication is stopping"), cluster.NotReady},
		{"NotReadyError", &cluster.NotReadyError{Kind: cluster.KindGalera, Reason: "wsrep_ready=OFF"}, cluster.NotReady},
		{"wrapped 1047", fmt.Errorf("exec: %w", myErr(1047, "08S01", "WSREP has not yet prepared node for application use")), cluster.NotReady},
		{"FailoverError over 1047", &failover.FailoverError{Failed: "a:1", Err: myErr(1047, "08S01", "x")}, cluster.Communication},
		// not ready midway: a Galera node that lost the Primary component while it
		// replicated the commit (it may have reached the others); any other 1180 is data
		{"1180 not connected to Primary", myErr(1180, "HY000", lostPrimaryMsg), cluster.NotReadyMidway},
		{"1180 not connected to Primary, wrapped", fmt.Errorf("exec: %w", myErr(1180, "HY000", lostPrimaryMsg)), cluster.NotReadyMidway},
		{"1180 not connected to Primary beside EOF", errors.Join(io.EOF, myErr(1180, "HY000", lostPrimaryMsg)), cluster.NotReadyMidway},
		{"NotReadyError over the 1180", cluster.LostPrimary(myErr(1180, "HY000", lostPrimaryMsg)), cluster.NotReadyMidway},
		{"FailoverError over the 1180", &failover.FailoverError{Failed: "a:1", Err: myErr(1180, "HY000", lostPrimaryMsg)}, cluster.Communication},
		{"1180 engine error during COMMIT", myErr(1180, "HY000", "Got error 1 \"Operation not permitted\" during COMMIT"), cluster.Data},
		{"1180 provider in bad state", myErr(1180, "HY000", "Error while appending streaming replication fragment(provider status: Provider in bad state, needs to be reinitialized.)"), cluster.Data},
		{"1213 certification failure", myErr(1213, "40001", "WSREP detected deadlock/conflict and aborted the transaction. Try restarting the transaction"), cluster.Data},
		{"another number with the Primary text", myErr(1105, "HY000", lostPrimaryMsg), cluster.Data},
		{"1053 server shutdown", myErr(1053, "08S01", "Server shutdown in progress"), cluster.Communication},
		{"1152 aborting connection", myErr(1152, "08S01", "Aborted connection"), cluster.Communication},
		{"1153 packet too large", myErr(1153, "08S01", "Got a packet bigger"), cluster.Communication},
		{"1156 packets out of order", myErr(1156, "08S01", "Got packets out of order"), cluster.Communication},
		{"1159 net read interrupted", myErr(1159, "08S01", "Got timeout reading"), cluster.Communication},
		{"1161 net write interrupted", myErr(1161, "08S01", "Got timeout writing"), cluster.Communication},
		{"1927 connection killed", myErr(1927, "70100", "Connection was killed"), cluster.Communication},
		{"any 08 class", myErr(9999, "08007", "x"), cluster.Communication},
		// communication: go-sql-driver and Go values
		{"mysql.ErrInvalidConn", mysql.ErrInvalidConn, cluster.Communication},
		{"driver.ErrBadConn", driver.ErrBadConn, cluster.Communication},
		{"io.EOF", io.EOF, cluster.Communication},
		{"io.ErrUnexpectedEOF", io.ErrUnexpectedEOF, cluster.Communication},
		{"net.ErrClosed", fmt.Errorf("read: %w", net.ErrClosed), cluster.Communication},
		{"*net.OpError refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, cluster.Communication},
		{"ECONNREFUSED bare", syscall.ECONNREFUSED, cluster.Communication},
		{"ECONNRESET", opErr(syscall.ECONNRESET), cluster.Communication},
		{"EPIPE", opErr(syscall.EPIPE), cluster.Communication},
		{"i/o timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, cluster.Communication},
		{"DNS no such host", &net.DNSError{Err: "no such host", Name: "db-b.invalid", IsNotFound: true}, cluster.Communication},
		{"host attempt timeout", &cluster.HostTimeoutError{After: 5e9, Cause: context.DeadlineExceeded}, cluster.Communication},
		// a deadline that is not the caller's (the caller's context is live): a timeout
		{"context.Canceled, caller live", context.Canceled, cluster.Communication},
		{"context.DeadlineExceeded, caller live", context.DeadlineExceeded, cluster.Communication},
		{"dial timeout of a user DialFunc", dialTimeout(t), cluster.Communication},
		// data errors
		{"1062 duplicate key", myErr(1062, "23000", "Duplicate entry"), cluster.Data},
		{"1064 syntax", myErr(1064, "42000", "You have an error"), cluster.Data},
		{"1213 deadlock", myErr(1213, "40001", "Deadlock found"), cluster.Data},
		{"1205 lock wait timeout", myErr(1205, "HY000", "Lock wait timeout"), cluster.Data},
		{"1045 access denied", myErr(1045, "28000", "Access denied"), cluster.Data},
		{"1290 read-only option", myErr(1290, "HY000", "--read-only option"), cluster.Data},
		{"1792 read-only transaction", myErr(1792, "25006", "Cannot execute statement in a READ ONLY transaction"), cluster.Data},
		{"1836 read-only mode", myErr(1836, "HY000", "Running in read-only mode"), cluster.Data},
		{"mysql.ErrPktSync", mysql.ErrPktSync, cluster.Data},
		{"driver.ErrSkip", driver.ErrSkip, cluster.Data},
		{"plain error", errors.New("boom"), cluster.Data},
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := cluster.Classify(context.Background(), tt.err); got != tt.want {
				t.Fatalf("Classify(live, %v) = %v, want %v", tt.err, got, tt.want)
			}
			// With the caller's context ended, every communication error is the caller's
			// cancellation; data errors stay data errors.
			want := tt.want
			if want == cluster.Communication {
				want = cluster.Canceled
			}
			if got := cluster.Classify(ended, tt.err); got != want {
				t.Fatalf("Classify(ended, %v) = %v, want %v", tt.err, got, want)
			}
		})
	}
	//lint:ignore SA1012 a nil context is documented input of Classify
	if got := cluster.Classify(nil, io.EOF); got != cluster.Communication {
		t.Fatalf("Classify(nil ctx, EOF) = %v, want communication", got)
	}
}

// dialTimeout returns the error of a real dial whose own deadline passed: it matches
// context.DeadlineExceeded although no caller cancelled anything.
func dialTimeout(t *testing.T) error {
	d := net.Dialer{Deadline: time.Now().Add(-time.Second)}
	_, err := d.Dial("tcp", "127.0.0.1:1")
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("dial with a past deadline: %v, want an error matching context.DeadlineExceeded", err)
	}
	return err
}

func TestNotBadConnCutsTheChain(t *testing.T) {
	err := dialect.NotBadConn(driver.ErrBadConn, "connection closed by the server before it was ready")
	if errors.Is(err, driver.ErrBadConn) {
		t.Fatal("NotBadConn result still matches driver.ErrBadConn")
	}
	if got := err.Error(); got != "connection closed by the server before it was ready (driver: bad connection)" {
		t.Fatalf("message = %q", got)
	}
	other := mysql.ErrInvalidConn
	if dialect.NotBadConn(other, "x") != other {
		t.Fatal("NotBadConn changed an error that is not ErrBadConn")
	}
	fe := &failover.FailoverError{Failed: "a:1", Current: "b:2", Err: dialect.NotBadConn(fmt.Errorf("w: %w", driver.ErrBadConn), "")}
	if errors.Is(fe, driver.ErrBadConn) {
		t.Fatal("FailoverError matches driver.ErrBadConn")
	}
}

// WriteIntent is true for read-write and primary only.
func TestWriteIntent(t *testing.T) {
	for target, want := range map[string]bool{
		attrs.Any: false, attrs.ReadWrite: true, attrs.ReadOnly: false, attrs.Primary: true,
		attrs.Standby: false, attrs.PreferStandby: false, "": false,
	} {
		if got := cluster.WriteIntent(target); got != want {
			t.Errorf("WriteIntent(%q) = %v, want %v", target, got, want)
		}
	}
}
