package failover

import (
	"errors"
	"strconv"
	"strings"
)

// ErrTxLost is matched (errors.Is) by every error that ends a transaction because its
// connection failed inside it (or, with targetSessionAttrs read-write or primary, its
// host was found demoted and the connection left it): the statement that hit the
// failure, every later statement of the same transaction (which never runs anywhere) and
// its Commit. The server rolled the transaction back when its session died; nothing of it
// was replayed on another host. It is also matched by every error that matches
// ErrTxRolledBack: either way nothing of the transaction is left, and the whole of it
// may run again (mysqlfailover.SafeToRetry says RetryTransaction).
// As MariaDB Connector/J's 25S03 "In progress transaction was lost".
var ErrTxLost = errors.New("mysqlfailover: transaction lost")

// ErrTxRolledBack is matched (errors.Is) by the errors of a transaction that the server
// rolled back while its session lived on: a lock wait timeout (1205) that rolled back the
// whole transaction, not only the statement (innodb_rollback_on_timeout=ON; on MariaDB
// @@in_transaction is 0 afterwards), and every later statement of a transaction that a
// deadlock (1213, also Galera's certification failure), a lock wait timeout of that kind
// or a Group Replication rollback (3101) ended. Those later statements are refused
// without being sent, until ROLLBACK (which runs and returns nil) or COMMIT (which runs
// ROLLBACK instead and returns the error, never nil), so that no part of the transaction
// commits on its own, as PostgreSQL refuses the statements of an aborted transaction.
// The error says which host rolled the transaction back and wraps the server's error
// (errors.As with *mysql.MySQLError finds it). It also matches ErrTxLost, with no
// FailoverError: the connection stayed where it was. The statement that a deadlock or a
// 3101 hit gets the server's *mysql.MySQLError itself, as go-sql-driver returns it.
var ErrTxRolledBack = errors.New("mysqlfailover: transaction rolled back by the server")

// ErrCommitOutcomeUnknown is matched (errors.Is) by the error of a Commit whose connection
// failed after COMMIT was sent: the transaction may or may not have been committed, and
// only reading the data can tell. It is never returned for a transaction known to be lost
// (see ErrTxLost). As Connector/J's SQLSTATE 08007 "Transaction resolution unknown".
var ErrCommitOutcomeUnknown = errors.New("mysqlfailover: commit outcome unknown")

// ErrClosed is returned, once a Connector is closed (sql.DB.Close closes it), by
// whatever needs a host: Connect, and a connection that has to switch hosts.
var ErrClosed = errors.New("mysqlfailover: closed")

// FailoverError is returned, wrapped or as is, for a statement whose connection failed
// with a communication error. By the time the caller sees it the proxy has a new session
// (on Current) with the session state restored, so the next statement on the same
// connection runs there. When the host still answered (one session ended: a KILL, a
// packet over max_allowed_packet, a query past readTimeout), Current equals Failed and
// the pool stayed; otherwise the pool moved with the connection. errors.Is and
// errors.As reach the cause (Err) and, when no session could be opened, the reason
// (Reconnect). It never matches driver.ErrBadConn, so database/sql does not run the
// statement again.
type FailoverError struct {
	// Failed is the host:port whose connection failed.
	Failed string
	// Current is the host:port the connection uses now (Failed itself when only the
	// session ended), or "" when no session could be opened.
	Current string
	// MaybeExecuted is true when the request may have reached Failed before the failure,
	// so the statement may have run there; false when it was provably never sent.
	MaybeExecuted bool
	// Read is true when the statement was one the driver classified as a read, outside
	// any transaction: a single SELECT without a locking clause (FOR UPDATE, FOR SHARE,
	// LOCK IN SHARE MODE), without INTO or an assignment, whose every call is to a
	// built-in function without effects (not GET_LOCK, SLEEP, NEXTVAL, a stored
	// function). Running it again changes no data even if it ran on Failed, so
	// mysqlfailover.SafeToRetry says RetryStatement. When the driver cannot tell, Read
	// is false. It is also set when the failure came while the rows were being read.
	Read bool
	// Err is the communication error from Failed, or why Failed was left although it
	// answers: its role no longer qualifies for targetSessionAttrs (a demoted primary),
	// or its server refused the statement as not ready for application use (Galera's
	// 1047, offline_mode's 3032, Group Replication's 3796 or 3799, which errors.As
	// reaches as the *mysql.MySQLError; the statement did not run: MaybeExecuted is
	// false).
	Err error
	// Reconnect is non-nil when no session could be opened: a *NoHostAvailableError,
	// the caller's context error, a host that stayed full, or the data error (such as
	// access denied) a host gave.
	Reconnect error
}

// demotion is a cause that says its host was left for what its server said (a demoted
// primary's role, or that it is not ready for application use), not for a failed
// connection.
type demotion interface{ Demoted() bool }

// Error names both hosts and the cause, never a password.
func (e *FailoverError) Error() string {
	var b strings.Builder
	var d demotion
	switch {
	case errors.As(e.Err, &d) && d.Demoted():
		b.WriteString("mysqlfailover: left ")
		b.WriteString(e.Failed)
		b.WriteString(", ")
	case e.Failed != "" && e.Failed == e.Current:
		b.WriteString("mysqlfailover: session on ")
		b.WriteString(e.Failed)
		b.WriteString(" ended: ")
	default:
		b.WriteString("mysqlfailover: connection to ")
		b.WriteString(e.Failed)
		b.WriteString(" failed: ")
	}
	if e.Err != nil {
		b.WriteString(e.Err.Error())
	} else {
		b.WriteString("communication error")
	}
	switch {
	case e.Current != "" && e.Current == e.Failed:
		b.WriteString("; the host answers, a new session is open there")
	case e.Current != "":
		b.WriteString("; now on ")
		b.WriteString(e.Current)
	case e.Reconnect != nil:
		b.WriteString("; no new session: ")
		b.WriteString(strings.TrimPrefix(e.Reconnect.Error(), "mysqlfailover: "))
	}
	if e.MaybeExecuted {
		b.WriteString(" (the statement may have run on ")
		b.WriteString(e.Failed)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the cause and, if set, the reconnect error.
func (e *FailoverError) Unwrap() []error {
	errs := make([]error, 0, 2)
	for _, err := range []error{e.Err, e.Reconnect} {
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errs
}

// HostError is one host's part of a NoHostAvailableError.
type HostError struct {
	// Host is the host:port.
	Host string
	// Err is the last error of the last attempt on Host; nil when Host was not tried.
	Err error
	// Skipped says why Host was not tried when Err is nil.
	Skipped string
}

// Error returns "host: cause" or "host: not tried (reason)".
func (e *HostError) Error() string {
	if e.Err == nil {
		return e.Host + ": not tried (" + e.Skipped + ")"
	}
	return e.Host + ": " + e.Err.Error()
}

// Unwrap returns the host's error.
func (e *HostError) Unwrap() error { return e.Err }

// NoHostAvailableError is returned when a walk over the host list ends without a
// connection: after RetriesAllDown passes, or earlier when the caller's context ended.
// It names every configured host, in DSN order, with its last error or the reason it was
// not tried. It never matches driver.ErrBadConn, so database/sql does not repeat the walk.
type NoHostAvailableError struct {
	// Passes is the number of passes over the host list that were started.
	Passes int
	// Hosts has one entry per configured host, in DSN order.
	Hosts []HostError
	// Err is the caller's context error when the context ended the walk, else nil.
	Err error
}

// Error lists every host and its cause.
func (e *NoHostAvailableError) Error() string {
	var b strings.Builder
	b.WriteString("mysqlfailover: no host available after ")
	b.WriteString(strconv.Itoa(e.Passes))
	if e.Passes == 1 {
		b.WriteString(" pass")
	} else {
		b.WriteString(" passes")
	}
	if e.Err != nil {
		b.WriteString(" (")
		b.WriteString(e.Err.Error())
		b.WriteString(")")
	}
	for i := range e.Hosts {
		if i == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(e.Hosts[i].Error())
	}
	return b.String()
}

// Unwrap returns the context error, if any, and every host's error.
func (e *NoHostAvailableError) Unwrap() []error {
	errs := make([]error, 0, len(e.Hosts)+1)
	if e.Err != nil {
		errs = append(errs, e.Err)
	}
	for i := range e.Hosts {
		if e.Hosts[i].Err != nil {
			errs = append(errs, &e.Hosts[i])
		}
	}
	return errs
}
