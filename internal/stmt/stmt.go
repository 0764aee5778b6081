// Package stmt holds the statement and rows proxies of mysqlfailover. It never imports
// package conn: every error goes back to the owning connection through the small Owner
// interface, which decides what the error means and whether the connection moves.
//
// A Stmt outlives the physical connection it was prepared on: when its connection has
// moved to another host (nothing was sent yet), the Stmt prepares itself again on the new
// physical connection before it runs. PREPARE has no side effects, so this is always safe.
// A Rows never moves: a failure while reading results is returned to the caller, after
// the owner has switched hosts for the next statement.
package stmt

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// Retry says which failures a call may be repeated after, once, on the new host.
type Retry int

const (
	// NoRetry: the call may have had an effect (a read failed after the request was sent,
	// or results were being read). Never repeated.
	NoRetry Retry = iota
	// RetryIfNotSent: repeated only when nothing of it was sent (the owner knows: no
	// byte reached the socket) and no transaction is open.
	RetryIfNotSent
	// RetryAlways: the call has no effect on data (PREPARE, PING, BEGIN, SET SESSION
	// TRANSACTION), so it is repeated whenever the switch succeeded outside a transaction.
	RetryAlways
)

// At is r for attempt (0 the first) of a call: a call runs again once at most, so a later
// attempt's is NoRetry.
func (r Retry) At(attempt int) Retry {
	if attempt > 0 {
		return NoRetry
	}
	return r
}

// Kind is what a statement does to its session's transaction state, and to the state
// its session holds, as the owner classified it (opaque here: dialect.Class, or a kind of
// the owner's calls that are not statements). A Stmt gets its Kind from New and hands it
// back with every run, so that the owner knows whether a transaction is open without
// reading the query again. The zero Kind is a statement without such an effect; a Rows
// reports its failures with it.
type Kind = dialect.Class

// Owner is the connection a Stmt or Rows belongs to. The conn package implements it.
type Owner interface {
	// Attempts runs the call of s under way (ExecContext, QueryContext) through the
	// owner's retry loop. Before each attempt the owner moves the connection to the
	// pool's host at a safe point, or chooses one of its side sessions, and calls
	// s.Attempt with the physical connection to use and its epoch (which changes whenever
	// the physical connection does). A failure goes to the owner's judgment, which says
	// whether the statement runs again, once, on the new host. The first attempt counts
	// towards queriesBeforeRetryMaster. answered: the owner answered the statement
	// without sending it (a ROLLBACK of a transaction the server already rolled back):
	// the call succeeds and returns no rows.
	Attempts(ctx context.Context, s *Stmt) (answered bool, err error)
	// Ran is called after a statement of Kind k succeeded: query, run with args (the
	// caller's; the owner copies what it keeps); res is its result, nil for a query. It
	// returns the result to give the caller: res, or one that notes what the caller
	// reads of it (transaction replay).
	Ran(k Kind, query string, args []driver.NamedValue, res driver.Result) driver.Result
	// Fail handles err, the failure f of a reading of a statement's rows. It returns
	// the error for the caller; retry is false (f.Retry is NoRetry).
	Fail(ctx context.Context, err error, f Failure) (retry bool, out error)
	// Failing is called when the statement itself (not its PREPARE) failed, with the
	// query and the caller's args, just before Fail: the owner may record it.
	Failing(query string, args []driver.NamedValue, isQuery bool)
	// RowsOpened is called once when a Rows is made for the owner (NewRows) from its
	// physical connection of epoch, and RowsClosed once when it is closed (after its
	// physical rows; failed: their Close failed, and Fail follows): no switch happens
	// while results are being read, and a side session keeps to the owner.
	// RowsOpened returns the RowSink that sees what the caller reads of these rows, or
	// nil (the rows are not recorded), and a Rows to reuse for them, or nil: one whose
	// earlier rows were closed and that nobody reads any more (database/sql never
	// touches a driver.Rows after its Close).
	RowsOpened(epoch uint64) (sink RowSink, reuse *Rows)
	RowsClosed(epoch uint64, failed bool)
	// Prepared is called when a Stmt keeps a physical statement prepared on the
	// owner's physical connection of epoch, Unprepared when it closes it: the owner
	// keeps a side session (a replica's) while a statement is prepared on it.
	Prepared(epoch uint64)
	Unprepared(epoch uint64)
	// StmtClosed is called once when a Stmt of the owner is closed; the owner may hand
	// it to New again (database/sql never touches a driver.Stmt after its Close).
	StmtClosed(s *Stmt)
	// CheckNamedValue converts an argument as the owner's physical connection does. A Stmt
	// uses it when its physical statement has no converter of its own, as database/sql
	// would use the connection's: a Stmt that answered driver.ErrSkip would lose it.
	CheckNamedValue(nv *driver.NamedValue) error
}

// Failure says which call failed, for Owner.Fail, or how a failed Attempt is judged.
type Failure struct {
	Epoch uint64 // the owner's physical connection that returned the error
	Retry Retry  // which failures may run the call again
	Kind  Kind   // the statement's Kind; 0 for its PREPARE or a read of its rows
	// Query is the statement when its run or the reading of its rows failed, "" for
	// its PREPARE: the owner tells a read that may run again by it.
	Query string
}

// RowSink sees what the caller of a Rows reads (transaction replay records it): the
// column names, each row it read (the values are the caller's buffer: read them at
// once), and the end of the rows (io.EOF).
type RowSink interface {
	Columns(cols []string)
	Row(dest []driver.Value)
	End()
}

// Stmt is the prepared-statement proxy.
type Stmt struct {
	own      Owner
	query    string
	inner    driver.Stmt
	epoch    uint64
	numInput int
	kind     Kind
	// spare holds up to maxSpare earlier preparations on other physical connections of
	// the owner (its replica sessions beside its primary one: replicaReads), so that a
	// statement run on each in turn is not prepared again every time. One whose
	// connection is gone is closed when it is evicted, or with the Stmt.
	spare []Prepared

	// The call under way, for Attempt: its arguments, whether it is a query, and its
	// answer (cleared when the call returns), or how its last failure is judged (Failed).
	args    []driver.NamedValue
	isQuery bool
	res     driver.Result
	rows    driver.Rows
	failed  Failure
}

// Prepared is one physical preparation of a Stmt: the physical statement, prepared on
// the owner's physical connection of Epoch.
type Prepared struct {
	Inner driver.Stmt
	Epoch uint64
}

// maxSpare bounds Stmt.spare: the replicas a connection uses at once, in practice.
const maxSpare = 3

// SideEpoch is the bit of the epochs of an owner's side sessions (its replica sessions),
// which live beside its main one: a Stmt moving between the main session and a side one
// keeps its other preparation (spare), where a new epoch of the main session means the
// old connection is gone.
const SideEpoch = 1 << 63

// New wraps p, prepared from query, a statement of Kind k: in reuse, a closed Stmt the
// owner got from StmtClosed (no allocation), or in a new one when reuse is nil.
func New(reuse *Stmt, own Owner, query string, k Kind, p Prepared) *Stmt {
	if reuse == nil {
		reuse = new(Stmt)
	}
	*reuse = Stmt{own: own, query: query, inner: p.Inner, epoch: p.Epoch, numInput: p.Inner.NumInput(), kind: k,
		spare: reuse.spare[:0]}
	own.Prepared(p.Epoch)
	return reuse
}

// Close closes the physical statement, and then hands the Stmt back to its owner
// (StmtClosed). A statement whose physical connection is already gone has nothing left
// to close on the server, so its error is not reported.
func (s *Stmt) Close() error {
	if s.inner == nil {
		return nil
	}
	err := s.inner.Close()
	s.inner = nil
	s.own.Unprepared(s.epoch)
	for i, p := range s.spare {
		_ = p.Inner.Close() // on another session, or on one that is gone
		s.own.Unprepared(p.Epoch)
		s.spare[i] = Prepared{}
	}
	s.spare = s.spare[:0]
	s.own.StmtClosed(s)
	if errors.Is(err, driver.ErrBadConn) {
		return nil
	}
	return err
}

// Kind returns the statement's Kind, as New got it.
func (s *Stmt) Kind() Kind { return s.kind }

// NumInput returns the placeholder count of the first preparation (-1: unknown).
func (s *Stmt) NumInput() int { return s.numInput }

// Exec implements driver.Stmt for callers without a context.
func (s *Stmt) Exec(args []driver.Value) (driver.Result, error) {
	return s.ExecContext(context.Background(), valuesToNamed(args))
}

// Query implements driver.Stmt for callers without a context.
func (s *Stmt) Query(args []driver.Value) (driver.Rows, error) {
	return s.QueryContext(context.Background(), valuesToNamed(args))
}

// physical returns the physical statement for epoch, preparing it again when the
// owner's physical connection changed since it was prepared.
func (s *Stmt) physical(ctx context.Context, phys driver.Conn, epoch uint64) (driver.Stmt, error) {
	if epoch == s.epoch && s.inner != nil {
		return s.inner, nil
	}
	for i, p := range s.spare {
		if p.Epoch == epoch {
			if s.inner != nil {
				s.spare[i] = Prepared{s.inner, s.epoch}
			} else {
				s.spare = append(s.spare[:i], s.spare[i+1:]...)
			}
			s.inner, s.epoch = p.Inner, p.Epoch
			return s.inner, nil
		}
	}
	inner, err := prepare(ctx, phys, s.query)
	if err != nil {
		return nil, err
	}
	s.own.Prepared(epoch)
	if s.inner != nil && (s.epoch|epoch)&SideEpoch == 0 {
		_ = s.inner.Close() // it belongs to a physical connection that is gone
		s.own.Unprepared(s.epoch)
	} else if s.inner != nil {
		// One of the two is a side session of the owner (a replica's): the other may
		// well be used again, so it is kept for a while (see spare).
		if len(s.spare) == maxSpare {
			_ = s.spare[0].Inner.Close()
			s.own.Unprepared(s.spare[0].Epoch)
			s.spare = append(s.spare[:0], s.spare[1:]...)
		}
		s.spare = append(s.spare, Prepared{s.inner, s.epoch})
	}
	s.inner, s.epoch = inner, epoch
	return inner, nil
}

// ExecContext runs the statement; a failure that provably sent nothing is retried once
// on the new host, outside transactions.
func (s *Stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	s.args, s.isQuery = args, false
	answered, err := s.own.Attempts(ctx, s)
	res := s.res
	s.args, s.res = nil, nil
	switch {
	case err != nil:
		return nil, err
	case answered:
		return driver.RowsAffected(0), nil
	}
	return res, nil
}

// QueryContext runs the statement and wraps its rows.
func (s *Stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	s.args, s.isQuery = args, true
	answered, err := s.own.Attempts(ctx, s)
	rows := s.rows
	s.args, s.rows = nil, nil
	switch {
	case err != nil:
		return nil, err
	case answered:
		return noRows{}, nil
	}
	return rows, nil
}

// Attempt is one attempt of the call under way, for Owner.Attempts: it prepares the
// statement on phys, the owner's physical connection of epoch, unless it is prepared
// there already, and runs it. A failure records how the owner judges it (Failed).
func (s *Stmt) Attempt(ctx context.Context, phys driver.Conn, epoch uint64) error {
	inner, err := s.physical(ctx, phys, epoch)
	if err != nil {
		s.failed = Failure{Epoch: epoch, Retry: RetryAlways}
		return err
	}
	if err = s.run(ctx, inner, epoch); err != nil {
		s.failed = Failure{epoch, RetryIfNotSent, s.kind, s.query}
	}
	return err
}

// Failed says how the owner judges the failure of the last Attempt: only its PREPARE
// was sent (RetryAlways, Kind 0, no Query: PREPARE has no effect, and the statement did
// not run), or the statement ran (RetryIfNotSent, its Kind and query).
func (s *Stmt) Failed() Failure { return s.failed }

// run runs the call under way on inner, the physical statement for the session of
// epoch, and keeps its answer (res, rows).
func (s *Stmt) run(ctx context.Context, inner driver.Stmt, epoch uint64) (err error) {
	if !s.isQuery {
		if s.res, err = execStmt(ctx, inner, s.args); err == nil {
			s.res = s.own.Ran(s.kind, s.query, s.args, s.res)
			return nil
		}
		s.own.Failing(s.query, s.args, false)
		return err
	}
	if s.rows, err = queryStmt(ctx, inner, s.args); err == nil {
		s.own.Ran(s.kind, s.query, s.args, nil)
		s.rows = NewRows(s.own, ctx, s.rows, epoch, s.query)
		return nil
	}
	s.own.Failing(s.query, s.args, true)
	return err
}

// CheckNamedValue forwards to the physical statement, or else to the owner's physical
// connection (database/sql's order), so that go-sql-driver's value converter keeps
// working; driver.ErrSkip from the owner lets database/sql use its default.
func (s *Stmt) CheckNamedValue(nv *driver.NamedValue) error {
	if c, ok := s.inner.(driver.NamedValueChecker); ok {
		return c.CheckNamedValue(nv)
	}
	return s.own.CheckNamedValue(nv)
}

// noRows is the result of a query the owner answered without sending it.
type noRows struct{}

func (noRows) Columns() []string         { return nil }
func (noRows) Close() error              { return nil }
func (noRows) Next([]driver.Value) error { return io.EOF }

func prepare(ctx context.Context, c driver.Conn, query string) (driver.Stmt, error) {
	if p, ok := c.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.Prepare(query)
}

func execStmt(ctx context.Context, s driver.Stmt, args []driver.NamedValue) (driver.Result, error) {
	if e, ok := s.(driver.StmtExecContext); ok {
		return e.ExecContext(ctx, args)
	}
	vals, err := namedToValues(args)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.Exec(vals) //nolint:staticcheck // fallback for drivers without StmtExecContext
}

func queryStmt(ctx context.Context, s driver.Stmt, args []driver.NamedValue) (driver.Rows, error) {
	if q, ok := s.(driver.StmtQueryContext); ok {
		return q.QueryContext(ctx, args)
	}
	vals, err := namedToValues(args)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return s.Query(vals) //nolint:staticcheck // fallback for drivers without StmtQueryContext
}

func namedToValues(named []driver.NamedValue) ([]driver.Value, error) {
	vals := make([]driver.Value, len(named))
	for i, nv := range named {
		if nv.Name != "" {
			return nil, errors.New("mysqlfailover: the driver does not support named parameters")
		}
		vals[i] = nv.Value
	}
	return vals, nil
}

func valuesToNamed(vals []driver.Value) []driver.NamedValue {
	named := make([]driver.NamedValue, len(vals))
	for i, v := range vals {
		named[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return named
}

var (
	_ driver.Stmt              = (*Stmt)(nil)
	_ driver.StmtExecContext   = (*Stmt)(nil)
	_ driver.StmtQueryContext  = (*Stmt)(nil)
	_ driver.NamedValueChecker = (*Stmt)(nil)
	_ driver.Rows              = noRows{}
)
