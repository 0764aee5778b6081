package cluster_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// FuzzClassify: any error value, built from the fuzzer's bytes as a tree of leaves (nil,
// *mysql.MySQLError with any number, SQLSTATE and message or a typed nil one, syscall
// errnos, *net.OpError, *net.DNSError, context errors, driver.ErrBadConn, go-sql-driver's
// sentinels, this module's own errors) and wrappers (fmt.Errorf with one or two %w,
// errors.Join, *failover.FailoverError, *failover.NoHostAvailableError, *net.OpError,
// *os.SyscallError, *cluster.HostTimeoutError, dialect.NotBadConn, Unwrap() error and
// Unwrap() []error types with nil entries), gets a classification and never a panic, for
// a live, a nil, a cancelled and a past-deadline context:
//
//   - with a live or nil context it is Data, Communication, NotReady or NotReadyMidway,
//     never Canceled, and the same for both;
//   - with an ended context, Communication becomes Canceled, the others stay;
//   - nil is Data;
//   - where the documented rules decide alone (see Classify), the class is theirs: a
//     context error, a *FailoverError or a *NoHostAvailableError anywhere is
//     Communication; else one MySQL error (or several of one class) decides: Galera's
//     1180 "Not connected to Primary Component" is NotReadyMidway and a refusal of a
//     server that is not ready (1047, 3032, 3796, 3799) NotReady, whatever else is
//     there, otherwise its SQLSTATE class 08 and the listed numbers; else any communication value (EOF,
//     ErrInvalidConn, ErrBadConn, net.ErrClosed, an errno, a net.Error) is
//     Communication, and nothing else is Data. A chain that mixes a MySQL error with a
//     communication value, or MySQL errors of both classes, is only checked for the
//     properties above.
//
// Left out: typed nil pointers of types whose Unwrap reads a field (*net.OpError,
// *os.SyscallError, *net.DNSError, *failover.FailoverError, *failover.NoHostAvailableError,
// *cluster.HostTimeoutError): errors.Is and errors.As themselves panic on them, in
// database/sql's own errors.Is(err, driver.ErrBadConn) as anywhere, so no classifier
// can read them.
func FuzzClassify(f *testing.F) {
	for _, s := range classifySeeds {
		f.Add(s.recipe, s.number, s.state, s.msg)
	}
	f.Fuzz(func(t *testing.T, recipe []byte, number uint16, state, msg string) {
		if len(recipe) > 64 {
			t.Skip("long recipes add nothing a short one cannot build")
		}
		n := buildErr(recipe, number, state, msg)
		checkClassify(t, n)
	})
}

// TestClassifySeedsCoverEveryClass: the fuzz seeds (which `go test` runs as tests too)
// include every class, and every leaf and wrapper of buildErr.
func TestClassifySeedsCoverEveryClass(t *testing.T) {
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	seen := map[cluster.Class]bool{}
	ops := map[int]bool{}
	for _, s := range classifySeeds {
		n := buildErr(s.recipe, s.number, s.state, s.msg)
		seen[cluster.Classify(context.Background(), n.err)] = true
		seen[cluster.Classify(ended, n.err)] = true
		for _, b := range s.recipe {
			ops[int(b)%numOps] = true
		}
	}
	for _, c := range []cluster.Class{cluster.Data, cluster.Communication, cluster.Canceled, cluster.NotReady, cluster.NotReadyMidway} {
		if !seen[c] {
			t.Errorf("no seed is classified %v", c)
		}
	}
	for op := range numOps {
		if !ops[op] {
			t.Errorf("no seed uses op %d", op)
		}
	}
}

// TestClassifyTypedNil: a typed nil *mysql.MySQLError in the chain (an error variable of
// that type returned as error) says nothing about the host and does not panic. Found by
// FuzzClassify (recipe {2}).
func TestClassifyTypedNil(t *testing.T) {
	var me *mysql.MySQLError
	for _, err := range []error{me, fmt.Errorf("w: %w", me), errors.Join(me, io.EOF)} {
		want := cluster.Data
		if errors.Is(err, io.EOF) {
			want = cluster.Communication
		}
		if got := cluster.Classify(context.Background(), err); got != want {
			t.Errorf("Classify(%v) = %v, want %v", err, got, want)
		}
	}
}

type classifySeed struct {
	recipe []byte
	number uint16
	state  string
	msg    string
}

var classifySeeds = []classifySeed{
	{[]byte{opNil}, 0, "", ""},
	{[]byte{opMySQL}, 1062, "23000", "Duplicate entry"},
	{[]byte{opMySQL}, 1290, "HY000", "--read-only"},
	{[]byte{opMySQL}, 1927, "70100", "Connection was killed"},
	{[]byte{opMySQL}, 1040, "", "Too many connections"},
	{[]byte{opMySQL}, 9999, "08S01", "any class 08"},
	{[]byte{opMySQL, opWrapf, opWrapf}, 1053, "08S01", "shutdown"},
	{[]byte{opMySQL}, 1047, "08S01", "WSREP has not yet prepared node for application use"},
	{[]byte{opMySQL, opEOF, opJoin}, 3032, "HY000", "The server is currently in offline mode"},
	{[]byte{opMySQL, opWrapf}, 3796, "HY000", "group_replication_consistency"},
	{[]byte{opMySQL}, 1180, "HY000", "Error while appending streaming replication fragment(provider status: Not connected to Primary Component)"},
	{[]byte{opMySQL, opEOF, opJoin}, 1180, "HY000", "Error while appending streaming replication fragment(provider status: Not connected to Primary Component)"},
	{[]byte{opMySQL, opFailoverWrap}, 1180, "HY000", "(provider status: Not connected to Primary Component)"},
	{[]byte{opMySQL, opWrapf}, 1180, "HY000", "Got error 1 during COMMIT"},
	{[]byte{opMySQL}, 1213, "40001", "WSREP detected deadlock/conflict and aborted the transaction. Try restarting the transaction"},
	{[]byte{opNilMySQL}, 0, "", ""},
	{[]byte{opNilMySQL, opEOF, opJoin}, 0, "", ""},
	{[]byte{opErrno}, uint16(syscall.ECONNRESET), "", ""},
	{[]byte{opErrno, opSyscall}, uint16(syscall.ENOENT), "", ""},
	{[]byte{opOpErr}, uint16(syscall.ECONNREFUSED), "", ""},
	{[]byte{opCanceled}, 0, "", ""},
	{[]byte{opDeadline, opWrapf}, 0, "", ""},
	{[]byte{opBadConn}, 0, "", ""},
	{[]byte{opBadConn, opNotBadConn}, 0, "", "cut"},
	{[]byte{opInvalidConn}, 0, "", ""},
	{[]byte{opEOF}, 0, "", ""},
	{[]byte{opUnexpectedEOF, opUnwrapper}, 0, "", ""},
	{[]byte{opNetClosed}, 0, "", ""},
	{[]byte{opPlain}, 0, "", "boom"},
	{[]byte{opPlain, opPlain, opJoin}, 0, "", "boom"},
	{[]byte{opOSDeadline}, 0, "", ""},
	{[]byte{opDNS}, 0, "", "db.invalid"},
	{[]byte{opNetErr, opWrapf}, 0, "", "dial: my own timeout"},
	{[]byte{opPktSync}, 0, "", ""},
	{[]byte{opErrSkip}, 0, "", ""},
	{[]byte{opFailoverLeaf}, 0, "", ""},
	{[]byte{opNoHostLeaf}, 0, "", ""},
	{[]byte{opClosed}, 0, "", ""},
	{[]byte{opHostTimeoutLeaf}, 0, "", ""},
	{[]byte{opMySQL, opFailoverWrap}, 1062, "23000", "x"},
	{[]byte{opMySQL, opNoHostWrap}, 1045, "28000", "Access denied"},
	{[]byte{opPlain, opOpErrWrap}, 0, "", "x"},
	{[]byte{opMySQL, opHostTimeoutWrap}, 1205, "HY000", "Lock wait"},
	{[]byte{opMySQL, opEOF, opWrap2}, 1213, "40001", "Deadlock"},
	{[]byte{opPlain, opMySQL, opFailover2}, 1064, "42000", "syntax"},
	{[]byte{opNil, opEOF, opPlain, opMulti}, 0, "", "m"},
	{[]byte{opMySQL, opCanceled, opJoin, opWrapf}, 1062, "23000", "dup"},
}

// The ops of buildErr: a leaf pushes an error, a wrapper pops one (or two) and pushes the
// wrapped error. recipe[i] % numOps is the op; a wrapper on a short stack pushes a leaf
// instead (the byte's value picks it).
const (
	// leaves
	opNil = iota
	opMySQL
	opNilMySQL
	opErrno
	opOpErr
	opCanceled
	opDeadline
	opBadConn
	opInvalidConn
	opEOF
	opUnexpectedEOF
	opNetClosed
	opPlain
	opOSDeadline
	opDNS
	opNetErr
	opPktSync
	opErrSkip
	opFailoverLeaf
	opNoHostLeaf
	opClosed
	opHostTimeoutLeaf
	numLeaves
	// wrappers of one
	opWrapf = iota - 1
	opFailoverWrap
	opNoHostWrap
	opOpErrWrap
	opSyscall
	opHostTimeoutWrap
	opNotBadConn
	opUnwrapper
	// wrappers of two
	opJoin
	opWrap2
	opFailover2
	opMulti
	numOps
)

// node is a built error and what the documented rules say of it.
type node struct {
	err error
	// forced: a context error, *FailoverError, *NoHostAvailableError or NotBadConn's
	// replacement is in the chain: Communication whatever else is there.
	forced bool
	// mysql holds the class of each non-nil *mysql.MySQLError.
	mysql []cluster.Class
	// comm: a communication value other than those is in the chain.
	comm bool
	// nilMySQL: a typed nil *mysql.MySQLError is in the chain; errors.As may stop there
	// before a real one, so a chain with both is not decided by the rules alone.
	nilMySQL bool
}

func buildErr(recipe []byte, number uint16, state, msg string) node {
	var stack []node
	for _, b := range recipe {
		op := int(b) % numOps
		switch {
		case op >= opJoin && len(stack) >= 2:
			x, y := stack[len(stack)-2], stack[len(stack)-1]
			stack = append(stack[:len(stack)-2], wrap2(op, x, y))
		case op >= numLeaves && op < opJoin && len(stack) >= 1:
			stack[len(stack)-1] = wrap1(op, stack[len(stack)-1], msg)
		case op >= numLeaves:
			stack = append(stack, leaf(int(b)%numLeaves, number, state, msg))
		default:
			stack = append(stack, leaf(op, number, state, msg))
		}
		if len(stack) > 16 {
			stack = stack[len(stack)-16:]
		}
	}
	switch len(stack) {
	case 0:
		return node{}
	case 1:
		return stack[0]
	}
	// Several left: join them all, as one error.
	out := stack[0]
	for _, n := range stack[1:] {
		out = wrap2(opJoin, out, n)
	}
	return out
}

func leaf(op int, number uint16, state, msg string) node {
	switch op {
	case opNil:
		return node{}
	case opMySQL:
		e := &mysql.MySQLError{Number: number, Message: msg}
		copy(e.SQLState[:], state)
		return node{err: e, mysql: []cluster.Class{mysqlClass(e)}}
	case opNilMySQL:
		var e *mysql.MySQLError
		return node{err: e, nilMySQL: true}
	case opErrno:
		// syscall.Errno has Timeout and Temporary: every errno is a net.Error.
		return node{err: syscall.Errno(number), comm: true}
	case opOpErr:
		return node{err: &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.Errno(number))}, comm: true}
	case opCanceled:
		return node{err: context.Canceled, forced: true}
	case opDeadline:
		return node{err: context.DeadlineExceeded, forced: true}
	case opBadConn:
		return node{err: driver.ErrBadConn, comm: true}
	case opInvalidConn:
		return node{err: mysql.ErrInvalidConn, comm: true}
	case opEOF:
		return node{err: io.EOF, comm: true}
	case opUnexpectedEOF:
		return node{err: io.ErrUnexpectedEOF, comm: true}
	case opNetClosed:
		return node{err: net.ErrClosed, comm: true}
	case opPlain:
		return node{err: errors.New(msg)}
	case opOSDeadline:
		return node{err: os.ErrDeadlineExceeded, comm: true}
	case opDNS:
		return node{err: &net.DNSError{Err: "no such host", Name: msg, IsNotFound: true}, comm: true}
	case opNetErr:
		return node{err: netErr{msg}, comm: true}
	case opPktSync:
		return node{err: mysql.ErrPktSync}
	case opErrSkip:
		return node{err: driver.ErrSkip}
	case opFailoverLeaf:
		return node{err: &failover.FailoverError{Failed: "a:1", Current: "b:2"}, forced: true}
	case opNoHostLeaf:
		return node{err: &failover.NoHostAvailableError{Passes: 1}, forced: true}
	case opClosed:
		return node{err: failover.ErrClosed}
	case opHostTimeoutLeaf:
		return node{err: &cluster.HostTimeoutError{After: time.Second}, comm: true}
	}
	panic(fmt.Sprintf("no leaf %d", op))
}

func wrap1(op int, x node, msg string) node {
	switch op {
	case opWrapf:
		x.err = fmt.Errorf("%s: %w", msg, x.err)
	case opFailoverWrap:
		x.err = &failover.FailoverError{Failed: "a:1", Err: x.err, MaybeExecuted: len(msg)%2 == 0}
		x.forced = true
	case opNoHostWrap:
		x.err = &failover.NoHostAvailableError{Passes: 2, Hosts: []failover.HostError{{Host: "a:1", Err: x.err}, {Host: "b:2", Skipped: msg}}}
		x.forced = true
	case opOpErrWrap:
		x.err = &net.OpError{Op: "dial", Net: "tcp", Err: x.err}
		x.comm = true
	case opSyscall:
		x.err = &os.SyscallError{Syscall: "connect", Err: x.err} // Timeout only: no net.Error
	case opHostTimeoutWrap:
		// No Unwrap: the cause (a context error of the attempt's own deadline, say) is
		// hidden, so that it does not read as the caller's.
		x = node{err: &cluster.HostTimeoutError{After: 5 * time.Second, Cause: x.err}, comm: true}
	case opNotBadConn:
		if nb, ok := notBadConn(x.err, msg); ok {
			x = node{err: nb, forced: true}
		}
	case opUnwrapper:
		x.err = unwrapper{x.err}
	default:
		panic(fmt.Sprintf("no wrapper %d", op))
	}
	return x
}

// notBadConn is dialect.NotBadConn, which builds its message from err.Error(): an error
// whose Error panics (a typed nil *mysql.MySQLError joined with ErrBadConn) is left as
// it is, since the property under test is Classify's, not that of the error's text.
func notBadConn(err error, msg string) (out error, cut bool) {
	defer func() {
		if recover() != nil {
			out, cut = err, false
		}
	}()
	out = dialect.NotBadConn(err, msg)
	return out, out != err
}

func wrap2(op int, x, y node) node {
	n := node{forced: x.forced || y.forced, mysql: append(append([]cluster.Class(nil), x.mysql...), y.mysql...),
		comm: x.comm || y.comm, nilMySQL: x.nilMySQL || y.nilMySQL}
	switch op {
	case opJoin:
		n.err = errors.Join(x.err, y.err)
	case opWrap2:
		n.err = fmt.Errorf("%w and %w", x.err, y.err)
	case opFailover2:
		n.err = &failover.FailoverError{Failed: "a:1", Err: x.err, Reconnect: y.err}
		n.forced = true
	case opMulti:
		n.err = multi{x.err, nil, y.err}
	default:
		panic(fmt.Sprintf("no wrapper %d", op))
	}
	return n
}

// unwrapper and multi are wrappers of the caller's own (as any library has).
type unwrapper struct{ err error }

func (u unwrapper) Error() string { return "wrapped" }
func (u unwrapper) Unwrap() error { return u.err }

type multi []error

// netErr is a net.Error of the caller's own (a DialFunc's timeout, say).
type netErr struct{ msg string }

func (e netErr) Error() string   { return e.msg }
func (e netErr) Timeout() bool   { return true }
func (e netErr) Temporary() bool { return false }

func (m multi) Error() string   { return "multi" }
func (m multi) Unwrap() []error { return m }

// mysqlClass is the documented rule for one MySQL error (Classify's doc comment,
// LostPrimary, Refusal and dialect.EndsSession): Galera's 1180 "Not connected to Primary
// Component", a refusal of a server that is not ready (1047, 3032, 3796, 3799), then
// SQLSTATE class 08, or a number that ends the session.
func mysqlClass(e *mysql.MySQLError) cluster.Class {
	switch n := e.Number; {
	case n == 1180 && strings.Contains(e.Message, "Not connected to Primary Component"):
		return cluster.NotReadyMidway
	case n == 1047, n == 3032, n == 3796, n == 3799:
		return cluster.NotReady
	case e.SQLState[0] == '0' && e.SQLState[1] == '8':
		return cluster.Communication
	case n == 1040, n == 1042, n == 1043, n == 1053, n == 1080, n == 1081,
		n >= 1152 && n <= 1161, n == 1184, n == 1927, n == 4031:
		return cluster.Communication
	}
	return cluster.Data
}

// want is the class the documented rules give n with a live context, and whether they
// decide it alone.
func (n node) want() (cluster.Class, bool) {
	switch {
	case n.err == nil:
		return cluster.Data, true
	case n.forced:
		return cluster.Communication, true
	case len(n.mysql) == 0 && n.comm:
		return cluster.Communication, true
	case len(n.mysql) == 0:
		return cluster.Data, true
	case n.nilMySQL:
		return 0, false // a typed nil MySQL error may stop errors.As before a real one
	}
	for _, c := range n.mysql[1:] {
		if c != n.mysql[0] {
			return 0, false
		}
	}
	switch {
	case n.mysql[0] == cluster.NotReady, n.mysql[0] == cluster.NotReadyMidway:
		return n.mysql[0], true // a refusal beats the communication values beside it
	case n.comm:
		return 0, false // a MySQL error next to a communication value
	}
	return n.mysql[0], true
}

func checkClassify(t *testing.T, n node) {
	t.Helper()
	live := cluster.Classify(context.Background(), n.err)
	if live == cluster.Canceled {
		t.Fatalf("Classify(live, %v) = %v: only data, communication or not-ready while the caller's context lives", n.err, live)
	}
	var never context.Context // nil: Classify's "a context that never ends"
	if got := cluster.Classify(never, n.err); got != live {
		t.Fatalf("Classify(nil, %v) = %v, with a live context %v", n.err, got, live)
	}
	if want, ok := n.want(); ok && live != want {
		t.Fatalf("Classify(live, %v) = %v, want %v (%+v)", n.err, live, want, n)
	}
	wantEnded := live
	if live == cluster.Communication {
		wantEnded = cluster.Canceled
	}
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	if got := cluster.Classify(canceled, n.err); got != wantEnded {
		t.Fatalf("Classify(cancelled, %v) = %v, want %v", n.err, got, wantEnded)
	}
	past, cancel2 := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel2()
	if got := cluster.Classify(past, n.err); got != wantEnded {
		t.Fatalf("Classify(past deadline, %v) = %v, want %v", n.err, got, wantEnded)
	}
}
