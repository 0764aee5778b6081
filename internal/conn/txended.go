package conn

// Transactions the server ended (invariant one-host-per-transaction). A deadlock, a lock wait
// timeout under innodb_rollback_on_timeout and a Group Replication rollback end the whole
// transaction while the session lives on: from then on the session runs every statement
// in autocommit mode (or in a new transaction with autocommit off), so an application
// that carried on after the error would commit the rest of its transaction without the
// part the server threw away. The connection refuses those statements instead, until
// ROLLBACK, as PostgreSQL refuses the statements of an aborted transaction.

import (
	"context"
	"database/sql/driver"

	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

// The session's innodb_rollback_on_timeout (Conn.sess.rbot), read on a server without
// @@in_transaction after its first lock wait timeout inside a transaction. The variable
// is global and read-only (it needs a restart), so a session reads it at most once.
const (
	rbotUnknown uint8 = iota
	rbotOff
	rbotOn
)

// The questions timeoutEnded asks.
const (
	askInTrx      = "SELECT @@in_transaction"
	askRbOnTimout = "SELECT @@innodb_rollback_on_timeout"
)

// rollbackErrno returns the number of err when it is a server error that may end a
// transaction while its session lives on (dialect.Conflict: 1205, 1213, 3101), else 0.
// An XA branch's 1614 is left to the server (see failedWith).
func rollbackErrno(err error) uint16 {
	if n := dialect.Number(err); n != dialect.ErrXARBDeadlock && dialect.Conflict(err) {
		return n
	}
	return 0
}

// failedWith records the data error err of a call of kind k on the primary session and
// returns the error for the caller. When the server rolled the open transaction back (a
// Tx, or one opened by statements), the transaction is over: every later statement of
// it is refused unsent with an error matching failover.ErrTxRolledBack (see whileEnded,
// Tx.Commit, Tx.Rollback). The facts the server gives decide:
//
//   - 1213 (deadlock; Galera's certification failure) and 3101 (Group Replication) roll
//     back the whole transaction, always. The statement gets the server's error as it is.
//   - 1205 (lock wait timeout) rolls back the statement only, unless
//     innodb_rollback_on_timeout is ON: the server is asked (timeoutEnded). When the
//     whole transaction went, the statement gets an error that says so (matching
//     failover.ErrTxRolledBack and wrapping the 1205); otherwise the 1205 as it is.
//   - A COMMIT statement that fails with 1213 or 3101 ended its transaction by rolling it
//     back: nothing is left to refuse. Tx.Commit (kTxEnd) likewise.
//
// Outside a transaction (autocommit on, none open) these errors end nothing. An XA
// transaction is left to the server, which keeps a branch that a deadlock or timeout
// rolled back in a rollback-only state (1614, 1613) and refuses its statements itself.
func (c *Conn) failedWith(ctx context.Context, err error, k stmt.Kind) error {
	n := rollbackErrno(err)
	if n == 0 || k == kTxEnd {
		c.failedData(k)
		return err
	}
	cls := k.Kind()
	if cls == dialect.Commit {
		if chain, _, _ := c.st.completion(k); n != dialect.ErrLockWaitTimeout && !chain && (k.Clauses()&dialect.NoChain != 0 || c.st.ct != ctUnknown) {
			c.st.end(false) // rolled back, not committed, and no chain: no transaction is open
			return err
		}
		c.failedData(k)
		return err
	}
	if cls != dialect.Plain && cls != dialect.Unknown && cls != dialect.Batch {
		c.failedData(k) // a statement that commits implicitly, or sets the session up
		return err
	}
	if c.tx == nil {
		// Inside a transaction: one was open, or may be (unknown counts as open), or
		// autocommit is off (the statement opened one); a batch may have opened one
		// itself (which of its statements failed is not known). A CALL that fails in
		// an autocommit session, leaving the state unknown, is not taken for a
		// transaction the server ended.
		before := c.st
		c.failedData(k)
		inside := before.xa == xaNone && c.st.xa == xaNone &&
			(before.txn != txnNone || before.ac != acOn || cls == dialect.Batch && (c.st.txn != txnNone || c.st.ac == acOff))
		if !inside {
			return err
		}
	}
	e := &endedError{host: c.cl.Host(c.host), cause: err}
	if n == dialect.ErrLockWaitTimeout {
		ended, fact, qerr := c.timeoutEnded(ctx, k)
		if qerr != nil {
			c.tracker.markEnded(e, c.log, c.phys != nil) // unless the failed question lost the transaction already
			return qerr
		}
		if !ended {
			c.failedData(k)
			return err
		}
		e.fact = fact
		c.tracker.markEnded(e, c.log, c.phys != nil)
		return e
	}
	c.tracker.markEnded(e, c.log, c.phys != nil)
	return err
}

// markEnded records that the server rolled back the open transaction (e): a Tx refuses
// its later statements, and so does the connection for a transaction opened by
// statements, whose session (live: still there) now holds none; l, the replay record,
// forgets it. A transaction already lost (a failed
// question after the error) stays lost.
func (t *tracker) markEnded(e *endedError, l *txLog, live bool) {
	if l != nil {
		l.clear() // nothing of it is left to replay
	}
	if t.tx != nil {
		if t.tx.lost == nil {
			t.lose(t.tx, e.refusal())
		}
		return
	}
	if t.lost != nil || !live {
		return
	}
	t.st.txn, t.st.began, t.st.pending = txnNone, false, false
	t.lose(nil, e.refusal())
}

// timeoutEnded asks the server whether the lock wait timeout (1205) that a statement of
// kind k inside a transaction just got rolled back the whole transaction
// (innodb_rollback_on_timeout=ON) or the statement alone (the default), and says which
// fact told (fact, for the error). MariaDB tells directly: @@in_transaction is 0 once
// the transaction is rolled back. MySQL has no @@in_transaction (1193, remembered for
// the session); there the server's innodb_rollback_on_timeout is read, once per session.
//
// Where the server cannot be asked (results are still being read on the session) or
// does not answer, the transaction counts as ended: running all of it again after a
// ROLLBACK is right in either case, while taking the statement alone for rolled back
// could commit the rest without it. A failure of the question itself is returned (err):
// a communication failure loses the session and the transaction with it (see move), the
// caller's context ending is the context's error.
func (c *Conn) timeoutEnded(ctx context.Context, k stmt.Kind) (ended bool, fact string, err error) {
	if c.rows > 0 {
		return true, "not asked whether only the statement was rolled back: results were being read", nil
	}
	if !c.sess.noInTrans {
		v, qerr := queryOne(ctx, c.queryer, askInTrx)
		switch {
		case qerr == nil && v == "0":
			return true, "@@in_transaction is 0", nil
		case qerr == nil && v == "1":
			return false, "", nil
		case dialect.Number(qerr) == dialect.ErrUnknownSystemVariable:
			c.sess.noInTrans = true
		case qerr != nil:
			return c.unanswered(ctx, qerr, k)
		default:
			return true, "@@in_transaction is " + v, nil
		}
	}
	if c.sess.rbot == rbotUnknown {
		v, qerr := queryOne(ctx, c.queryer, askRbOnTimout)
		if qerr != nil {
			return c.unanswered(ctx, qerr, k)
		}
		switch dialect.AutocommitKind(v) { // the same words: 0, 1, ON, OFF
		case dialect.AutocommitOn:
			c.sess.rbot = rbotOn
		case dialect.AutocommitOff:
			c.sess.rbot = rbotOff
		default:
			return true, "innodb_rollback_on_timeout is " + v, nil
		}
	}
	if c.sess.rbot == rbotOn {
		return true, "innodb_rollback_on_timeout is ON", nil
	}
	return false, "", nil
}

// unanswered handles qerr, the failure of timeoutEnded's question after a 1205 of a
// statement of kind k: a data error counts as ended (see timeoutEnded); a communication
// failure moves the connection (the statement had failed: nothing of it ran) and loses
// the transaction; the caller's context ending is handled as for any call.
func (c *Conn) unanswered(ctx context.Context, qerr error, k stmt.Kind) (bool, string, error) {
	switch cluster.Classify(ctx, qerr) {
	case cluster.Data:
		return true, "whether only the statement was rolled back could not be read: " + qerr.Error(), nil
	case cluster.Canceled:
		_, out := c.fail(ctx, c.epoch, qerr, stmt.NoRetry, k)
		return true, "", out
	}
	_, out := c.move(ctx, qerr, true, stmt.NoRetry, k)
	return true, "", out
}

// queryOne runs q on the physical session (through queryer, nil: none) and returns the
// first column of its first row as text.
func queryOne(ctx context.Context, queryer driver.QueryerContext, q string) (string, error) {
	vals, err := queryRow(ctx, queryer, q, 1)
	if err != nil {
		return "", err
	}
	return dialect.Text(vals[0]), nil
}
