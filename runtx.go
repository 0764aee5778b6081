package mysqlfailover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// The defaults of RunOptions.
const (
	defaultRunAttempts      = 5
	defaultConflictAttempts = 50
	defaultRunBackoff       = 20 * time.Millisecond
	defaultRunMaxBackoff    = time.Second
)

// RunOptions are RunInTx's: the transaction's options and when to run it again. The
// zero value (or nil) means the defaults.
type RunOptions struct {
	// TxOptions go to BeginTx for every attempt (isolation level, read-only); the zero
	// value is the server's defaults.
	TxOptions sql.TxOptions
	// Attempts bounds the runs of the function after failures of the connection or of
	// its host (failover.ErrTxLost, no host answered BeginTx, a host not ready), the
	// first run included (count; 0 means 5, 1 means no rerun after them).
	Attempts int
	// ConflictAttempts bounds the runs after the server rolled the transaction back
	// while its session lived on, for a conflict with other transactions: a deadlock
	// (1213, also Galera's certification failure), a lock wait timeout (1205, also when
	// it rolled back only the statement), Group Replication's 3101, an XA branch rolled
	// back for a deadlock (1614), failover.ErrTxRolledBack. Under contention these
	// repeat; the first run is included (count; 0 means 50, as CockroachDB's ExecuteTx;
	// 1 means no rerun after them). Runs after either kind count only towards their
	// own bound; the context bounds them all.
	ConflictAttempts int
	// Backoff is the wait before the first rerun (0 means 20 ms); it doubles before each
	// later one, up to MaxBackoff (0 means 1 s). Each wait is drawn at random between
	// half of it and all of it, so that transactions that failed together (the two sides
	// of a deadlock, a pool's worth at a failover) do not collide again, and ends when
	// the context does.
	Backoff, MaxBackoff time.Duration
	// Committed, when set, says whether the transaction of an attempt whose Commit
	// returned failover.ErrCommitOutcomeUnknown committed after all: it reads what the
	// transaction wrote (a row with the attempt's idempotency key, a version column it
	// advanced) through a new connection, which the driver has already moved to a host
	// that answers. true ends RunInTx with nil; false runs the function again; an error
	// ends RunInTx with the ErrCommitOutcomeUnknown error, which then wraps it.
	//
	// Reading the data tells only once the COMMIT can no longer land: a semi-synchronous
	// COMMIT whose socket failed while it waited for a replica's acknowledgement commits
	// seconds later, even when its session is killed. So RunInTx calls Committed only when
	// the error is a *failover.CommitUnknownError with Settled set (the driver killed the
	// COMMIT's session and saw it leave the server's process list); otherwise (the old
	// host did not answer, the session did not end in time) it returns the error without
	// calling Committed. After a failover away from a host that died, the outcome stays
	// unsettled: the new primary may lack the commit now and the old one still hold it.
	// Without Committed, RunInTx returns the ErrCommitOutcomeUnknown error: running the
	// function again could commit it twice. A function that checks its own idempotency
	// key first (and does nothing when it finds it) may set Committed to one that
	// returns false.
	Committed func(ctx context.Context) (bool, error)
}

// RunInTx runs fn in a transaction of db (BeginTx with opts.TxOptions) and commits it when
// fn returns nil, as CockroachDB's crdb.ExecuteTx does; when fn returns an error, it rolls
// the transaction back and returns that error. A panic in fn rolls back and goes on.
//
// It runs fn again, in a fresh transaction, on any connection of db (after a failover,
// on the pool's new host) when the error says nothing of the transaction committed:
// SafeToRetry says RetryTransaction (failover.ErrTxLost, failover.ErrTxRolledBack, a
// deadlock 1213, Galera's certification failure, Group Replication's 3101) or
// RetryStatement (no host answered BeginTx, a lock wait timeout that rolled back one
// statement: the rest is rolled back now). Errors fn returns of its own (not the
// driver's) are returned as they are, and so are data errors. Because fn itself runs
// again, and not a record of its statements, everything it computed is computed again
// on the new transaction: NOW(), UUID(), auto-increment ids, and the reads its decisions
// rest on. So fn must have no effects outside the transaction (send the e-mail after
// RunInTx returns), must not commit or roll back tx itself, and must not keep what it
// read in a run that failed.
//
// After ErrCommitOutcomeUnknown it runs fn again only when the driver settled the
// outcome (failover.CommitUnknownError.Settled) and opts.Committed then says the commit
// did not happen (see RunOptions). It waits between attempts (see RunOptions.Backoff)
// within ctx; when ctx ends first, or the attempts are used up (RunOptions.Attempts for
// failures of the connection or its host, RunOptions.ConflictAttempts for transactions
// the server rolled back for a conflict, such as deadlocks, which repeat under
// contention), it returns the last attempt's error, wrapped with what ended the runs
// (errors.Is reaches ctx's error and the driver's: SafeToRetry still says what the last
// error allows).
//
// With a mysqlfailover pool (sql.Open, sql.OpenDB, or behind a wrapper such as otelsql)
// every rerun counts in the Connector's Stats (TxReruns; TxGaveUp, TxCommitChecks) and
// is reported to the event hook (failover.EventTxRerun). On any other *sql.DB it works
// the same, without counting.
func RunInTx(ctx context.Context, db *sql.DB, opts *RunOptions, fn func(tx *sql.Tx) error) error {
	o := withDefaults(opts)
	cn := connectorOfDB(db)
	wait := o.Backoff
	failed, conflicts := 1, 1 // the runs that count towards Attempts, and ConflictAttempts
	for attempt := 1; ; attempt++ {
		err := runOnce(ctx, db, &o.TxOptions, fn, &cn)
		if err == nil {
			return nil
		}
		bound, used := o.Attempts, &failed
		if errors.Is(err, failover.ErrCommitOutcomeUnknown) {
			if again, out := checkCommit(ctx, &o, cn, err); !again {
				return out
			}
		} else if r := SafeToRetry(err); r != RetryTransaction && r != RetryStatement {
			return err
		} else if conflict(err) {
			bound, used = o.ConflictAttempts, &conflicts
		}
		if *used >= bound {
			if cn != nil {
				cn.cluster.NoteGaveUp()
			}
			return fmt.Errorf("mysqlfailover: RunInTx gave up after %d attempts: %w", attempt, err)
		}
		d := wait/2 + rand.N(wait/2+1) // between half the backoff and all of it
		wait = min(2*wait, o.MaxBackoff)
		if cerr := sleep(ctx, cn, d); cerr != nil {
			if cn != nil {
				cn.cluster.NoteGaveUp()
			}
			return fmt.Errorf("mysqlfailover: RunInTx stopped after %d attempts (%w): %w", attempt, cerr, err)
		}
		if cn != nil {
			cn.cluster.NoteRerun(err, d)
		}
		*used++
	}
}

// conflict reports whether err, which SafeToRetry lets run again, says the server rolled
// the transaction (or its last statement) back for a conflict with other transactions,
// its session living on: RunOptions.ConflictAttempts bounds those reruns.
func conflict(err error) bool {
	if errors.Is(err, failover.ErrTxRolledBack) {
		return true
	}
	return dialect.Conflict(err)
}

// withDefaults returns opts (nil: the zero value) with the defaults of RunOptions in
// place of its zero fields.
func withDefaults(opts *RunOptions) RunOptions {
	var o RunOptions
	if opts != nil {
		o = *opts
	}
	if o.Attempts <= 0 {
		o.Attempts = defaultRunAttempts
	}
	if o.ConflictAttempts <= 0 {
		o.ConflictAttempts = defaultConflictAttempts
	}
	if o.Backoff <= 0 {
		o.Backoff = defaultRunBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = defaultRunMaxBackoff
	}
	return o
}

// checkCommit is RunInTx's answer to err, an attempt's failover.ErrCommitOutcomeUnknown:
// again when o.Committed says the settled commit did not happen (the function runs
// again), else RunInTx returns out (nil: it committed). Committed is asked only once the
// driver settled the outcome (failover.CommitUnknownError.Settled).
func checkCommit(ctx context.Context, o *RunOptions, cn *Connector, err error) (again bool, out error) {
	var cu *failover.CommitUnknownError
	if o.Committed == nil || !errors.As(err, &cu) || !cu.Settled {
		return false, err // the commit may still land: no check can say it did not
	}
	if cn != nil {
		cn.cluster.NoteCommitCheck()
	}
	committed, cerr := o.Committed(ctx)
	switch {
	case cerr != nil:
		return false, fmt.Errorf("%w (the commit check failed: %w)", err, cerr)
	case committed:
		return false, nil
	}
	return true, nil
}

// runOnce is one attempt of RunInTx: a connection of db, a transaction on it, fn, and
// Commit or Rollback. It sets *cn to the connection's Connector when it finds one.
func runOnce(ctx context.Context, db *sql.DB, opts *sql.TxOptions, fn func(*sql.Tx) error, cn **Connector) (err error) {
	if err := ctx.Err(); err != nil {
		return err
	}
	sc, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer sc.Close()
	if *cn == nil {
		_ = sc.Raw(func(dc any) error {
			if p := proxyOf(dc); p != nil {
				*cn, _ = p.Owner().(*Connector)
			}
			return nil
		})
	}
	tx, err := sc.BeginTx(ctx, opts)
	if err != nil {
		return err
	}
	done := false
	defer func() {
		if !done {
			_ = tx.Rollback() // fn panicked: the panic goes on after the rollback
		}
	}()
	if err := fn(tx); err != nil {
		done = true
		_ = tx.Rollback() // a lost or server-ended transaction answers nil
		return err
	}
	done = true
	return tx.Commit()
}

// sleep waits for d within ctx, on cn's clock when there is a Connector.
func sleep(ctx context.Context, cn *Connector, d time.Duration) error {
	if cn != nil {
		return cn.cluster.Sleep(ctx, d)
	}
	return cluster.SystemClock.Sleep(ctx, d)
}

// connectorOfDB returns the Connector of a pool opened with sql.Open("mysqlfailover")
// or sql.OpenDB(connector), without taking a connection; nil for any other pool
// (a wrapper's: RunInTx then finds it through its first connection).
func connectorOfDB(db *sql.DB) *Connector {
	if d, ok := db.Driver().(drv); ok {
		return d.c
	}
	return nil
}
