package mysqlfailover

import (
	"errors"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// Retry says what SafeToRetry found may be run again without anything running twice.
type Retry int

const (
	// RetryNothing: run nothing again before reading the data. The statement may have
	// run (a FailoverError with MaybeExecuted), a commit's outcome is unknown
	// (failover.ErrCommitOutcomeUnknown), the caller's context ended during a statement
	// (it may have run until then), or the error is not one a retry can cure (a data
	// error, a closed pool, nil).
	RetryNothing Retry = iota
	// RetryStatement: the statement provably did not run (a FailoverError without
	// MaybeExecuted; no connection could be opened, a *failover.NoHostAvailableError,
	// also when the caller's context ended the walk; a full host refused the connection;
	// a lock wait timeout, 1205, rolled back the statement alone; a server that is not
	// ready for application use refused it, 1047, 3032, 3796 or 3799): run it again. Outside a
	// transaction that is all there is to it; inside one, only this statement failed.
	RetryStatement
	// RetryTransaction: the server rolled the whole transaction back
	// (failover.ErrTxLost, a deadlock 1213): run the whole transaction again, from its
	// first statement.
	RetryTransaction
)

// String returns "nothing", "statement" or "transaction".
func (r Retry) String() string {
	switch r {
	case RetryStatement:
		return "statement"
	case RetryTransaction:
		return "transaction"
	}
	return "nothing"
}

// SafeToRetry reports what may be run again after err, an error of a call through this
// driver: the whole transaction after failover.ErrTxLost, the statement when nothing of it
// may have run, never after a FailoverError with MaybeExecuted or
// failover.ErrCommitOutcomeUnknown. It reads the error's values (errors.Is, errors.As),
// never its text. As pgconn's SafeToRetry, with the transaction case added.
func SafeToRetry(err error) Retry {
	var fe *failover.FailoverError
	var nh *failover.NoHostAvailableError
	var me *mysql.MySQLError
	switch {
	case err == nil, errors.Is(err, failover.ErrCommitOutcomeUnknown), errors.Is(err, failover.ErrClosed):
		return RetryNothing
	case errors.Is(err, failover.ErrTxLost):
		return RetryTransaction
	case errors.As(err, &fe):
		if fe.MaybeExecuted {
			return RetryNothing
		}
		return RetryStatement
	case errors.As(err, &nh):
		return RetryStatement // a connection that was never opened sent nothing
	case errors.As(err, &me):
		switch me.Number {
		case 1213: // ER_LOCK_DEADLOCK: the server rolled the transaction back
			return RetryTransaction
		case 1205: // ER_LOCK_WAIT_TIMEOUT: the statement alone was rolled back
			return RetryStatement
		case 1040, 1203: // a full host refused the connection: nothing was sent
			return RetryStatement
		case 1047, 3032, 3796, 3799: // a server not ready for application use refused it: it did not run
			return RetryStatement
		}
	}
	return RetryNothing
}
