package cluster

// Classification: what an error says about the host that returned it (Classify), the
// first step of every decision on an error.

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"syscall"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// Class is what an error says about the host that returned it.
type Class int

const (
	// Data errors come from a healthy connection: the server answered (duplicate key,
	// syntax, access denied, deadlock, read-only rejections 1290/1792/1836...). They are
	// returned to the caller untouched and never move the connection.
	Data Class = iota
	// Communication errors mean the connection to the host is gone or unusable: the
	// proxy closes it, marks the host and moves to the next one.
	Communication
	// Canceled errors are the caller's own context ending (context.Canceled,
	// context.DeadlineExceeded). The host is healthy: at most the physical connection
	// is replaced on the same host.
	Canceled
	// NotReady errors are a server's refusal to run anything because it is not ready
	// for application use (see Refusal: Galera's 1047, offline_mode's 3032, Group
	// Replication's 3796 and 3799), or a *NotReadyError. The host is up, and the
	// statement did not run: the proxy leaves the host for the next ready one and runs
	// the statement there, outside a transaction.
	NotReady
	// NotReadyMidway errors are a server's word that it stopped being ready while it ran
	// the statement, whose effect is then unknown (see LostPrimary: Galera's 1180 "Not
	// connected to Primary Component" at a commit the other nodes may have committed).
	// The host is up and left as for NotReady, but nothing runs again: outside a
	// transaction the statement may have taken effect, a COMMIT's outcome is unknown.
	NotReadyMidway
)

// String returns "data", "communication", "canceled", "not-ready" or
// "not-ready-midway".
func (c Class) String() string {
	switch c {
	case Communication:
		return "communication"
	case NotReady:
		return "not-ready"
	case NotReadyMidway:
		return "not-ready-midway"
	case Canceled:
		return "canceled"
	default:
		return "data"
	}
}

// commErrnosSys are socket errors that mean the peer or the path is gone.
var commErrnosSys = []syscall.Errno{
	syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE,
	syscall.ETIMEDOUT, syscall.EHOSTUNREACH, syscall.ENETUNREACH, syscall.ENETDOWN,
}

// Classify tells communication errors from data errors (the README's "What the caller sees"),
// and the caller's own cancellation from both. ctx is the caller's context of the call that
// got err; nil means one that never ends.
//
// NotReady: a server's refusal because it is not ready (Refusal: 1047, 3032, 3796, 3799;
// 1047 is of SQLSTATE class 08, but the session lives on), or a *NotReadyError, whether
// ctx has ended or not (the statement did not run either way), unless one of the values
// that make an error Communication whatever else it holds is there too (a context error,
// a *FailoverError...).
//
// NotReadyMidway: Galera's 1180 with the provider status "Not connected to Primary
// Component" (LostPrimary), also inside a *NotReadyError, on the same terms as NotReady;
// where both could apply it wins (the statement may have run).
//
// Communication: a *mysql.MySQLError whose SQLSTATE class is 08 or whose number ends the
// session (dialect.EndsSession: 1040, 1043, 1053, 1152-1161, 1927, ...); mysql.ErrInvalidConn;
// driver.ErrBadConn; io.EOF; io.ErrUnexpectedEOF; net.ErrClosed; any net.Error (timeouts,
// *net.OpError, *net.DNSError); ECONNREFUSED, ECONNRESET, EPIPE and their kin; this
// package's own *FailoverError and *NoHostAvailableError, and driver.ErrBadConn after
// dialect.NotBadConn replaced it; and context.Canceled or context.DeadlineExceeded while ctx is
// still live: a deadline of the driver's own (a dial timeout, a host attempt's budget) is a
// host that did not answer in time.
//
// Canceled: any of these while ctx has ended. Whether the caller cancelled is read from the
// caller's context, never from the error value: a dial timeout matches
// context.DeadlineExceeded too, as pgconn's normalizeTimeoutError also decides from the
// context.
//
// Everything else, nil included, is Data, also when ctx has ended (a duplicate key that
// arrived as the deadline passed is still a duplicate key). Like Connector/J's
// shouldExceptionTriggerConnectionSwitch, the decision is made on values, never on
// message text, with one exception: Galera's 1180 says which of its cases it is only in
// its text, which LostPrimary reads (it says why that text can be relied on).
func Classify(ctx context.Context, err error) Class {
	if err == nil {
		return Data
	}
	if !forced(err) {
		if LostPrimary(err) != nil {
			return NotReadyMidway
		}
		if notReady(err) {
			return NotReady
		}
	}
	if !communication(err) {
		return Data
	}
	if Ended(ctx) {
		return Canceled
	}
	return Communication
}

// Judge classifies err as Classify does and, when it is NotReady or NotReadyMidway, also
// returns the *NotReadyError that err is or says: all a connection needs of a failure,
// judged once and carried down (classify-then-judge).
func Judge(ctx context.Context, err error) (Class, *NotReadyError) {
	class := Classify(ctx, err)
	if class != NotReady && class != NotReadyMidway {
		return class, nil
	}
	return class, notReadyIn(err)
}

// notReadyIn returns the *NotReadyError that err, which Classify calls NotReady or
// NotReadyMidway, is or says.
func notReadyIn(err error) *NotReadyError {
	var nr *NotReadyError
	if errors.As(err, &nr) {
		return nr
	}
	if nr := Refusal(err); nr != nil {
		return nr
	}
	return LostPrimary(err)
}

// forced reports whether err holds a value that is a communication error whatever else
// it holds: a context error, this package's *FailoverError, *NoHostAvailableError, or
// dialect.NotBadConn's replacement of driver.ErrBadConn.
func forced(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var fe *failover.FailoverError
	var nh *failover.NoHostAvailableError
	return errors.As(err, &fe) || errors.As(err, &nh) || dialect.BadConnCut(err)
}

// notReady reports whether err is a refusal of a server that is not ready, or a
// *NotReadyError (see Classify).
func notReady(err error) bool {
	var nr *NotReadyError
	return errors.As(err, &nr) || Refusal(err) != nil
}

// communication reports whether err, as a value, says that the connection is gone or did
// not answer in time (see Classify). A refusal of a server that is not ready is not one
// (notReady), although 1047's SQLSTATE is of class 08.
func communication(err error) bool {
	if forced(err) {
		return true
	}
	if notReady(err) {
		return false
	}
	if dialect.ServerError(err) != nil { // a server's error decides alone
		return dialect.EndsSession(err)
	}
	if errors.Is(err, mysql.ErrInvalidConn) || errors.Is(err, driver.ErrBadConn) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	for _, e := range commErrnosSys {
		if errors.Is(err, e) {
			return true
		}
	}
	var ne net.Error
	return errors.As(err, &ne)
}
