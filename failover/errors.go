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

// ErrSessionStateLost is matched (errors.Is) by the error of the first call on a
// connection whose session ended without the caller's doing (its host died, it was
// killed, it timed out while idle; with targetSessionAttrs read-write or primary, a
// write found its host demoted and the connection left it for the writer) while it
// held state that no other session can be
// given: named locks (GET_LOCK), temporary tables, user variables, or the value the call
// was about to read of the session's last statement (LAST_INSERT_ID(), ROW_COUNT(),
// FOUND_ROWS()). The error is a *SessionStateError, which says what was lost and where.
// It is returned once; the connection then carries on with a new session. The driver
// never drops such state itself: a fall-back or a pool move waits until the session
// holds none. mysqlfailover.SafeToRetry says RetryNothing: the caller must rebuild what
// relied on the state (take the lock again, create the table again) before it runs again.
var ErrSessionStateLost = errors.New("mysqlfailover: session state lost")

// CommitUnknownError is the error of a COMMIT (a Commit, a COMMIT statement, or a
// statement that commits implicitly) whose connection failed after it was sent: it
// matches ErrCommitOutcomeUnknown (errors.Is), and errors.As finds it to read whether
// the outcome was settled. Before it returns, the driver kills the COMMIT's session on
// its server through a new session and waits, for at most 5 s and within the caller's
// context, until the session's thread has left the process list: a COMMIT can still
// land after its socket failed (a semi-synchronous commit that waits for a replica's
// acknowledgement commits when its wait ends or is killed). An ErrCommitOutcomeUnknown
// without a CommitUnknownError (a prepared XA transaction, a Galera node that lost the
// Primary component during COMMIT) is not settled.
type CommitUnknownError struct {
	// Host is the host:port the COMMIT was sent to.
	Host string
	// Settled is true when the COMMIT's session is confirmed gone from Host: the
	// transaction has committed or rolled back for good, and reading what it wrote on
	// Host (or on a replica that has caught up) tells which. False when that could not
	// be confirmed (Why says why: Host did not answer, the thread did not end within
	// the bound, the caller's context ended): the commit may still land later, and data
	// read now that lacks it proves nothing.
	Settled bool
	// Why is why the session's end could not be confirmed; nil when Settled. Error
	// says it; Unwrap does not return it.
	Why error
}

// Error says whether the outcome was settled, and why not.
func (e *CommitUnknownError) Error() string {
	if e.Settled {
		return ErrCommitOutcomeUnknown.Error() + " (its session on " + e.Host + " has ended: the data there tells whether it committed)"
	}
	why := "unknown"
	if e.Why != nil {
		why = e.Why.Error()
	}
	return ErrCommitOutcomeUnknown.Error() + " (not settled: the end of its session on " + e.Host + " was not confirmed, it may still commit: " + why + ")"
}

// Is reports whether target is ErrCommitOutcomeUnknown.
func (e *CommitUnknownError) Is(target error) bool { return target == ErrCommitOutcomeUnknown }

// ErrClosed is returned, once a Connector is closed (sql.DB.Close closes it), by
// whatever needs a host: Connect, and a connection that has to switch hosts.
var ErrClosed = errors.New("mysqlfailover: closed")

// FailoverError is returned, wrapped or as is, for a statement whose connection failed
// with a communication error. By the time the caller sees it the proxy has a new session
// (on Current) with the session state restored, so the next statement on the same
// connection runs there. When the host still answered (one session ended: a KILL, a
// packet over max_allowed_packet, a query past readTimeout), Current equals Failed and
// the pool stayed, and a statement that may have written there was settled first
// (Settled: its old session's end confirmed, so the data there tells whether it ran);
// otherwise the pool moved with the connection. errors.Is and
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
	// Settled is true when the statement's session on Failed is confirmed gone: before
	// the error returned, the driver killed the session's server thread through a new
	// session and saw it leave the process list, so nothing of the statement runs any
	// more and the data on Failed is final: it tells whether the statement ran. A
	// statement past readTimeout goes on running on its server thread (an UPDATE waiting
	// for a row lock lands when it gets the lock), so this is tried for a statement that
	// may have run (MaybeExecuted) and may have written (not Read) while Failed still
	// answers (Current == Failed), within the caller's context and at most 5 s; inside a
	// transaction too, whose locks then go with it. False when nothing was tried: a read
	// (its thread is only killed, so that the server stops the work), or Failed did not
	// answer, where the statement may still run should the host come back (a frozen host
	// that resumes): data read there that lacks it proves nothing.
	Settled bool
	// Unsettled is why the settling that was tried could not confirm the session's end
	// (the thread was still there after 5 s, KILL was refused, its id on the server is
	// not known, the caller's context ended); nil when Settled or when nothing was
	// tried. Error says it; Unwrap does not return it.
	Unsettled error
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
		switch {
		case e.Settled:
			b.WriteString("; its session there has ended: the data there is final")
		case e.Unsettled != nil:
			b.WriteString(", and may still: its session's end there was not confirmed: ")
			b.WriteString(e.Unsettled.Error())
		}
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

// SessionStateError is the error that matches ErrSessionStateLost: what a session held
// when it ended, where, and why it ended (Err, which errors.Is and errors.As reach: a
// *FailoverError, and ErrTxLost when a transaction went with it). It never matches
// driver.ErrBadConn.
type SessionStateError struct {
	// Host is the host:port of the session that held the state.
	Host string
	// NamedLocks is the number of GET_LOCK calls the session had not released with
	// RELEASE_LOCK or RELEASE_ALL_LOCKS; 0 for none. A GET_LOCK that timed out counts
	// too: the driver does not read results.
	NamedLocks int
	// TempTables names the temporary tables the session had created and not dropped,
	// each as database.table (".table" when the session had no current database).
	TempTables []string
	// UserVariables is true when a statement of the session named a user variable
	// (@name): the server has no way to unset one.
	UserVariables bool
	// Reads names what the failed call was about to read of the lost session's last
	// statement: "LAST_INSERT_ID()", "ROW_COUNT()" or "FOUND_ROWS()" (several joined by
	// ", "); "" for none.
	Reads string
	// Err is why the session ended.
	Err error
}

// Error names the host, what was lost, and why, never a password:
//
//	mysqlfailover: session state lost on db1:3306 (1 named lock (GET_LOCK), the temporary table shop.tmp): not sent: the server closed the connection while it sat idle
func (e *SessionStateError) Error() string {
	var b strings.Builder
	b.WriteString(ErrSessionStateLost.Error())
	b.WriteString(" on ")
	b.WriteString(e.Host)
	var what []string
	switch {
	case e.NamedLocks == 1:
		what = append(what, "1 named lock (GET_LOCK)")
	case e.NamedLocks > 1:
		what = append(what, strconv.Itoa(e.NamedLocks)+" named locks (GET_LOCK)")
	}
	switch len(e.TempTables) {
	case 0:
	case 1:
		what = append(what, "the temporary table "+e.TempTables[0])
	default:
		what = append(what, "the temporary tables "+strings.Join(e.TempTables, ", "))
	}
	if e.UserVariables {
		what = append(what, "user variables")
	}
	if e.Reads != "" {
		what = append(what, "the "+e.Reads+" the statement reads")
	}
	if len(what) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(what, ", "))
		b.WriteString(")")
	}
	if e.Err != nil {
		b.WriteString(": ")
		b.WriteString(strings.TrimPrefix(e.Err.Error(), "mysqlfailover: "))
	}
	return b.String()
}

// Is reports whether target is ErrSessionStateLost.
func (e *SessionStateError) Is(target error) bool { return target == ErrSessionStateLost }

// Unwrap returns why the session ended.
func (e *SessionStateError) Unwrap() error { return e.Err }
