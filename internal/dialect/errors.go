package dialect

import (
	"database/sql/driver"
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// ServerError returns the server's error that err holds: the first *mysql.MySQLError
// of its chain, as errors.As finds it. It returns nil when there is none, or when the
// one found is a typed nil, which says nothing.
func ServerError(err error) *mysql.MySQLError {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return nil
	}
	return me
}

// Number returns the number of the server's error that err holds (ServerError), or 0
// when it holds none. It is the one way this module reads an error number.
func Number(err error) uint16 {
	if me := ServerError(err); me != nil {
		return me.Number
	}
	return 0
}

// sessionEnders are the numbers that end the session although some of them carry no
// SQLSTATE (an error packet of the handshake has none) or one outside class 08
// (1927 is 70100, 4031 is HY000).
var sessionEnders = map[uint16]bool{
	ErrConCount:                 true, // 08004: too many connections
	ErrBadHost:                  true, // 08S01
	ErrHandshake:                true, // 08S01
	ErrServerShutdown:           true, // 08S01
	ErrForcingClose:             true, // 08S01
	ErrIPSock:                   true, // 08S01
	ErrAbortingConnection:       true, // 08S01, as the ten after it
	ErrNetPacketTooLarge:        true,
	ErrNetReadErrorFromPipe:     true,
	ErrNetFcntl:                 true,
	ErrNetPacketsOutOfOrder:     true,
	ErrNetUncompress:            true,
	ErrNetRead:                  true,
	ErrNetReadInterrupted:       true,
	ErrNetErrorOnWrite:          true,
	ErrNetWriteInterrupted:      true,
	ErrNewAbortingConnection:    true,
	ErrConnectionKilled:         true, // MariaDB, 70100: KILL CONNECTION from another session
	ErrClientInteractionTimeout: true, // MySQL 8, HY000: disconnected for inactivity
}

// EndsSession reports whether err holds a server error that says the session is over,
// or never began: its SQLSTATE class is 08, or its number is one that ends the session
// (1040, 1043, 1053, 1152-1161, 1927, 4031...). 1047, a refusal of a server that is not
// ready, is of class 08 too, but its session lives on: callers ask NotReady first.
func EndsSession(err error) bool {
	me := ServerError(err)
	if me == nil {
		return false
	}
	return me.SQLState[0] == '0' && me.SQLState[1] == '8' || sessionEnders[me.Number]
}

// ShuttingDown reports whether err is the server's word that it is shutting down
// (1053, 1080).
func ShuttingDown(err error) bool {
	n := Number(err)
	return n == ErrServerShutdown || n == ErrForcingClose
}

// PacketTooLarge reports whether err says the request was bigger than the server's
// max_allowed_packet (1153, 08S01): the server closed the session without reading the
// request, so nothing of it ran.
func PacketTooLarge(err error) bool { return Number(err) == ErrNetPacketTooLarge }

// TooManySessions reports whether err is a refusal of a new session because too many
// are open: 1040 (max_connections) or 1203 (max_user_connections). Sessions end all
// the time, so a slot may free soon.
func TooManySessions(err error) bool {
	n := Number(err)
	return n == ErrConCount || n == ErrTooManyUserConnections
}

// Full reports whether err is a server's refusal of a new session for a limit: too many
// sessions (TooManySessions), 1226 (an hourly limit of the user) or 1129 (the client's
// address blocked until FLUSH HOSTS). The server is up and its other sessions work.
func Full(err error) bool {
	switch Number(err) {
	case ErrConCount, ErrTooManyUserConnections, ErrUserLimitReached, ErrHostIsBlocked:
		return true
	}
	return false
}

// ReadOnly reports whether err is the server refusing a statement because it is
// globally read-only: 1290 (which other options, such as --secure-file-priv, also
// raise) or 1836. 1792 is not one: the session made itself read-only, not the server.
func ReadOnly(err error) bool {
	n := Number(err)
	return n == ErrOptionPreventsStatement || n == ErrReadOnlyMode
}

// WriteRefused reports whether err is a statement refused as read-only: by the server
// (ReadOnly) or by a read-only session or transaction (1792).
func WriteRefused(err error) bool {
	return ReadOnly(err) || Number(err) == ErrCantExecuteInReadOnlyTransaction
}

// RolledBack reports whether err says the server rolled the whole transaction back for
// a conflict, its session living on: a deadlock 1213 (also Galera's certification
// failure), Group Replication's 3101 at COMMIT, or 1614 for an XA branch.
func RolledBack(err error) bool {
	switch Number(err) {
	case ErrLockDeadlock, ErrTransactionRollbackDuringCommit, ErrXARBDeadlock:
		return true
	}
	return false
}

// Conflict reports whether err says the server rolled back the transaction
// (RolledBack) or its last statement (a lock wait timeout, 1205; the whole transaction
// with innodb_rollback_on_timeout) for a conflict with other transactions.
func Conflict(err error) bool {
	return RolledBack(err) || Number(err) == ErrLockWaitTimeout
}

// Unready is a server's word that it is not ready for application use.
type Unready struct {
	// Err is the server's error.
	Err *mysql.MySQLError
	// Cluster is the kind of cluster whose servers say it, as dsn's cluster option
	// names it: "galera", "replication" or "group".
	Cluster string
	// Reason says what the server means.
	Reason string
}

// NotReady returns what err says when it is a server's refusal to run anything because
// it is not ready for application use, else nil. The refusal is sent instead of running
// the statement (or before the handshake completes), so nothing of it ran:
//
//   - 1047 from Galera: outside the Primary component, not synced, or rejecting queries;
//   - 3032: MySQL's offline_mode;
//   - 3796: a Group Replication member that is not ONLINE;
//   - 3799: Group Replication is stopping on the member.
func NotReady(err error) *Unready {
	me := ServerError(err)
	if me == nil {
		return nil
	}
	switch me.Number {
	case ErrUnknownCom:
		return &Unready{Err: me, Cluster: "galera", Reason: "the node refused the statement (Galera: outside the Primary component, not synced, or rejecting queries)"}
	case ErrServerOfflineMode:
		return &Unready{Err: me, Cluster: "replication", Reason: "offline_mode: the server refuses sessions without CONNECTION_ADMIN"}
	case ErrGrpTrxConsistencyNotAllowed:
		return &Unready{Err: me, Cluster: "group", Reason: "the Group Replication member is not ONLINE"}
	case ErrGrpTrxConsistencyBeginNotAllowed:
		return &Unready{Err: me, Cluster: "group", Reason: "Group Replication is stopping on the member"}
	}
	return nil
}

// notPrimaryStatus is the provider status of a 1180 that a Galera node answers to a
// commit (or a streaming replication fragment) it could not replicate because it is not
// in the Primary component: MariaDB 10.4+ writes "Error while appending streaming
// replication fragment(provider status: Not connected to Primary Component)", whatever
// was being replicated. The text is the server's own and can be relied on: it is made
// of two literals (MariaDB's format in wsrep_override_error and wsrep-lib's name of the
// provider's connection failure), which lc_messages does not translate and no statement
// or data can put there, and no other 1180 carries it.
const notPrimaryStatus = "Not connected to Primary Component"

// LostPrimary returns what err says when it is a Galera node's 1180 with the provider
// status "Not connected to Primary Component": the node lost the Primary component
// while it replicated the statement's commit, and is not ready. Unlike a NotReady
// refusal, the commit may have taken effect: the write set may have reached the other
// nodes before they evicted this one, and they commit what they received (seen on
// MariaDB 10.11 with galera-4: 8 of 60 such autocommit INSERTs were on the other nodes
// afterwards). Galera's replication code returns the same status for a write set it
// never sent, so the error cannot tell the two apart. Else nil.
func LostPrimary(err error) *Unready {
	me := ServerError(err)
	if me == nil || me.Number != ErrErrorDuringCommit || !strings.Contains(me.Message, notPrimaryStatus) {
		return nil
	}
	return &Unready{Err: me, Cluster: "galera", Reason: "the node left the Primary component while it replicated the commit " +
		"(the other nodes may have committed it)"}
}

// notSentError replaces driver.ErrBadConn inside the errors the driver returns.
// database/sql retries any error that matches driver.ErrBadConn (up to three times, on
// other connections), which is only right while nothing was sent; once the driver has
// handled the failure itself, the error must not carry that meaning any more.
type notSentError struct{ msg string }

func (e *notSentError) Error() string { return e.msg }

// NotBadConn returns err unchanged unless it matches driver.ErrBadConn, in which case it
// returns an error with the same text (plus what) that does not: the one place where the
// driver cuts the ErrBadConn chain (invariant no-silent-rerun).
func NotBadConn(err error, what string) error {
	if err == nil || !errors.Is(err, driver.ErrBadConn) {
		return err
	}
	if what == "" {
		return &notSentError{msg: err.Error()}
	}
	return &notSentError{msg: what + " (" + err.Error() + ")"}
}

// BadConnCut reports whether err holds NotBadConn's replacement of driver.ErrBadConn:
// a connection's failure the driver has already handled.
func BadConnCut(err error) bool {
	var ns *notSentError
	return errors.As(err, &ns)
}
