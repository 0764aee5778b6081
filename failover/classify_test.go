package failover_test

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
)

func myErr(n uint16, state string, msg string) *mysql.MySQLError {
	e := &mysql.MySQLError{Number: n, Message: msg}
	copy(e.SQLState[:], state)
	return e
}

func TestClassify(t *testing.T) {
	opErr := func(err error) error {
		return &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", err)}
	}
	tests := []struct {
		name string
		err  error
		want failover.Class
	}{
		{"nil", nil, failover.Data},
		// communication: server error packets
		{"1040 too many connections 08004", myErr(1040, "08004", "Too many connections"), failover.Communication},
		{"1040 at handshake, no SQLSTATE", myErr(1040, "", "Too many connections"), failover.Communication},
		{"1043 bad handshake", myErr(1043, "08S01", "Bad handshake"), failover.Communication},
		{"1047 unknown command", myErr(1047, "08S01", "Unknown command"), failover.Communication},
		{"1053 server shutdown", myErr(1053, "08S01", "Server shutdown in progress"), failover.Communication},
		{"1152 aborting connection", myErr(1152, "08S01", "Aborted connection"), failover.Communication},
		{"1153 packet too large", myErr(1153, "08S01", "Got a packet bigger"), failover.Communication},
		{"1156 packets out of order", myErr(1156, "08S01", "Got packets out of order"), failover.Communication},
		{"1159 net read interrupted", myErr(1159, "08S01", "Got timeout reading"), failover.Communication},
		{"1161 net write interrupted", myErr(1161, "08S01", "Got timeout writing"), failover.Communication},
		{"1927 connection killed", myErr(1927, "70100", "Connection was killed"), failover.Communication},
		{"any 08 class", myErr(9999, "08007", "x"), failover.Communication},
		// communication: go-sql-driver and Go values
		{"mysql.ErrInvalidConn", mysql.ErrInvalidConn, failover.Communication},
		{"driver.ErrBadConn", driver.ErrBadConn, failover.Communication},
		{"io.EOF", io.EOF, failover.Communication},
		{"io.ErrUnexpectedEOF", io.ErrUnexpectedEOF, failover.Communication},
		{"net.ErrClosed", fmt.Errorf("read: %w", net.ErrClosed), failover.Communication},
		{"*net.OpError refused", &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}, failover.Communication},
		{"ECONNREFUSED bare", syscall.ECONNREFUSED, failover.Communication},
		{"ECONNRESET", opErr(syscall.ECONNRESET), failover.Communication},
		{"EPIPE", opErr(syscall.EPIPE), failover.Communication},
		{"i/o timeout", &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}, failover.Communication},
		{"DNS no such host", &net.DNSError{Err: "no such host", Name: "db-b.invalid", IsNotFound: true}, failover.Communication},
		{"host attempt timeout", &failover.HostTimeoutError{After: 5e9, Cause: context.DeadlineExceeded}, failover.Communication},
		// a deadline that is not the caller's (the caller's context is live): a timeout
		{"context.Canceled, caller live", context.Canceled, failover.Communication},
		{"context.DeadlineExceeded, caller live", context.DeadlineExceeded, failover.Communication},
		{"dial timeout of a user DialFunc", dialTimeout(t), failover.Communication},
		// data errors
		{"1062 duplicate key", myErr(1062, "23000", "Duplicate entry"), failover.Data},
		{"1064 syntax", myErr(1064, "42000", "You have an error"), failover.Data},
		{"1213 deadlock", myErr(1213, "40001", "Deadlock found"), failover.Data},
		{"1205 lock wait timeout", myErr(1205, "HY000", "Lock wait timeout"), failover.Data},
		{"1045 access denied", myErr(1045, "28000", "Access denied"), failover.Data},
		{"1290 read-only option", myErr(1290, "HY000", "--read-only option"), failover.Data},
		{"1792 read-only transaction", myErr(1792, "25006", "Cannot execute statement in a READ ONLY transaction"), failover.Data},
		{"1836 read-only mode", myErr(1836, "HY000", "Running in read-only mode"), failover.Data},
		{"mysql.ErrPktSync", mysql.ErrPktSync, failover.Data},
		{"driver.ErrSkip", driver.ErrSkip, failover.Data},
		{"plain error", errors.New("boom"), failover.Data},
	}
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := failover.Classify(context.Background(), tt.err); got != tt.want {
				t.Fatalf("Classify(live, %v) = %v, want %v", tt.err, got, tt.want)
			}
			// With the caller's context ended, every communication error is the caller's
			// cancellation; data errors stay data errors.
			want := tt.want
			if want == failover.Communication {
				want = failover.Canceled
			}
			if got := failover.Classify(ended, tt.err); got != want {
				t.Fatalf("Classify(ended, %v) = %v, want %v", tt.err, got, want)
			}
		})
	}
	if got := failover.Classify(nil, io.EOF); got != failover.Communication {
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
	err := failover.NotBadConn(driver.ErrBadConn, "connection closed by the server before it was ready")
	if errors.Is(err, driver.ErrBadConn) {
		t.Fatal("NotBadConn result still matches driver.ErrBadConn")
	}
	if got := err.Error(); got != "connection closed by the server before it was ready (driver: bad connection)" {
		t.Fatalf("message = %q", got)
	}
	other := mysql.ErrInvalidConn
	if failover.NotBadConn(other, "x") != other {
		t.Fatal("NotBadConn changed an error that is not ErrBadConn")
	}
	fe := &failover.FailoverError{Failed: "a:1", Current: "b:2", Err: failover.NotBadConn(fmt.Errorf("w: %w", driver.ErrBadConn), "")}
	if errors.Is(fe, driver.ErrBadConn) {
		t.Fatal("FailoverError matches driver.ErrBadConn")
	}
}
