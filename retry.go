package mysqlfailover

import (
	"errors"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// Retry says what SafeToRetry found may be run again without anything running twice.
type Retry int

const (
	// RetryNothing: run nothing again before reading the data. The statement may have
	// run (a FailoverError with MaybeExecuted, unless it was a read: Read; the data tells
	// only once it is settled, FailoverError.Settled: until its session's thread is gone it
	// may still land), a commit's
	// outcome is unknown (failover.ErrCommitOutcomeUnknown; the data tells only once it is
	// settled, see failover.CommitUnknownError), the caller's context ended during a statement
	// (it may have run until then), or the error is not one a retry can cure (a data
	// error, a closed pool, nil). A Galera node that left the Primary component while it
	// replicated a commit answers 1180 "Not connected to Primary Component": the other
	// nodes may have committed it, so an autocommit statement gets a FailoverError with
	// MaybeExecuted wrapping the 1180 (the connection has left the node), a COMMIT
	// failover.ErrCommitOutcomeUnknown; a statement inside a transaction loses the
	// transaction (RetryTransaction). Also after failover.ErrSessionStateLost, even when
	// the statement did not run and a transaction went with the session: what relied on
	// the lost lock, temporary table or variables (or on the value LAST_INSERT_ID() would
	// have read) must first be rebuilt by the caller, which the driver cannot do.
	RetryNothing Retry = iota
	// RetryStatement: the statement provably did not run (a FailoverError without
	// MaybeExecuted), or it was a read that changes nothing when it runs again (a
	// FailoverError with Read: a plain SELECT outside a transaction; a read that
	// outlived readTimeout will likely do so again); no connection could be opened, a
	// *failover.NoHostAvailableError,
	// also when the caller's context ended the walk or, with a single host, that host
	// has the wrong role for targetSessionAttrs; a full host refused the connection;
	// a lock wait timeout, 1205, rolled back the statement alone; a server that is not
	// ready for application use refused it, 1047, 3032, 3796 or 3799): run it again. Outside a
	// transaction that is all there is to it; inside one, only this statement failed.
	// A 1205 that rolled back the whole transaction (innodb_rollback_on_timeout) comes
	// wrapped in an error matching failover.ErrTxRolledBack: RetryTransaction.
	RetryStatement
	// RetryTransaction: the whole transaction was rolled back, on the server or with its
	// session, and nothing of it committed: failover.ErrTxLost (its session died),
	// failover.ErrTxRolledBack (the server rolled it back: a deadlock, a lock wait
	// timeout under innodb_rollback_on_timeout, and every statement refused after it),
	// a deadlock 1213 (also Galera's certification failure), Group Replication's 3101 at
	// COMMIT, an XA branch rolled back for a deadlock (1614). Roll back (Tx.Rollback,
	// or a ROLLBACK statement) and run the whole transaction again, from its first
	// statement: RunInTx does that.
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
// may have run or it was a read (FailoverError.Read), never after another FailoverError
// with MaybeExecuted, failover.ErrCommitOutcomeUnknown or failover.ErrSessionStateLost.
// It reads the error's values (errors.Is, errors.As), never its text. As pgconn's
// SafeToRetry, with the transaction case added.
func SafeToRetry(err error) Retry {
	var fe *failover.FailoverError
	var nh *failover.NoHostAvailableError
	var sc *cluster.SessionClosedError // the host closed a new connection's handshakes
	switch {
	case err == nil, errors.Is(err, failover.ErrCommitOutcomeUnknown), errors.Is(err, failover.ErrClosed):
		return RetryNothing
	case errors.Is(err, failover.ErrSessionStateLost): // before ErrTxLost and MaybeExecuted: either may come with it
		return RetryNothing
	case errors.Is(err, failover.ErrTxLost), errors.Is(err, failover.ErrTxRolledBack):
		return RetryTransaction
	case errors.As(err, &fe):
		if fe.MaybeExecuted && !fe.Read {
			return RetryNothing // it may have run, and it may have written
		}
		return RetryStatement
	case errors.As(err, &nh), errors.As(err, &sc):
		return RetryStatement // a connection that was never opened sent nothing
	case dialect.RolledBack(err): // the server rolled the transaction back
		return RetryTransaction
	case dialect.Number(err) == dialect.ErrLockWaitTimeout: // the statement alone was rolled back
		return RetryStatement
	case dialect.TooManySessions(err): // a full host refused the connection: nothing was sent
		return RetryStatement
	case dialect.NotReady(err) != nil: // a server not ready for application use refused it: it did not run
		return RetryStatement
	case dialect.Number(err) == dialect.ErrErrorDuringCommit: // the commit may have taken effect (Galera: on the other nodes)
		return RetryNothing
	}
	return RetryNothing
}
