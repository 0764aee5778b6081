package fake

import (
	"context"
	"database/sql/driver"
	"sync/atomic"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// Conn is one fake physical connection: a go-sqlmock connection that also fails every
// call with its host's I/O error while the host is down, counts Close calls, and offers
// driver.SessionResetter and driver.Validator (sqlmock has neither) under test control.
type Conn struct {
	Host int // index of the host
	Seq  int // sequence number among the host's connections
	Mock sqlmock.Sqlmock
	// Sock is the connection's socket (socket.go): the bytes its calls wrote, its
	// server thread id.
	Sock cluster.Socket

	inner  driver.Conn
	net    *Net
	closes atomic.Int32
	resets atomic.Int32
	// ResetErr, if set, is what ResetSession returns (go-sql-driver returns
	// driver.ErrBadConn for a stale idle connection).
	ResetErr atomic.Value
	// Broken makes IsValid false and every call return driver.ErrBadConn, as a
	// go-sql-driver connection closed by its context watcher.
	Broken atomic.Bool
	// FailWrite makes every call count a failed write on Sock after its first bytes, as
	// go-sql-driver's write of a LOAD DATA LOCAL file packet that fails.
	FailWrite atomic.Bool
	dead      bool // its server was killed: it never works again (guarded by net.mu)
}

// Closes returns how many times Close was called.
func (c *Conn) Closes() int { return int(c.closes.Load()) }

// Resets returns how many times ResetSession was called.
func (c *Conn) Resets() int { return int(c.resets.Load()) }

// check is the start of every call: driver.ErrBadConn, nothing written, on a closed or
// Broken connection; else the request is written (Sock counts it) and the host's I/O
// error, if any, comes back as the read of the answer failing.
func (c *Conn) check() error {
	if c.closes.Load() > 0 || c.Broken.Load() {
		return driver.ErrBadConn
	}
	c.Sock.Wrote(1)
	if c.FailWrite.Load() {
		c.Sock.WriteFailed()
	}
	return c.net.ioErr(c)
}

// Close counts the call; the sqlmock close expectation is not checked.
func (c *Conn) Close() error {
	if c.closes.Add(1) == 1 {
		_ = c.inner.Close()
	}
	return nil
}

// Begin implements driver.Conn.
func (c *Conn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}

// BeginTx implements driver.ConnBeginTx.
func (c *Conn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := c.refusal("BEGIN"); err != nil {
		return nil, err
	}
	tx, err := c.inner.(driver.ConnBeginTx).BeginTx(ctx, opts)
	if err != nil {
		return nil, err
	}
	return &Tx{c: c, inner: tx}, nil
}

// Prepare implements driver.Conn.
func (c *Conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext implements driver.ConnPrepareContext.
func (c *Conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := c.refusal(query); err != nil {
		return nil, err
	}
	s, err := c.inner.(driver.ConnPrepareContext).PrepareContext(ctx, query)
	if err != nil {
		return nil, err
	}
	return &Stmt{c: c, inner: s}, nil
}

// ExecContext implements driver.ExecerContext.
func (c *Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if err := c.refusal(query); err != nil {
		return nil, err
	}
	if _, err, ok := c.threadAnswer(query); ok {
		if err != nil {
			return nil, err
		}
		return driver.RowsAffected(0), nil
	}
	if err := c.rejectWrite(query); err != nil {
		return nil, err
	}
	return c.inner.(driver.ExecerContext).ExecContext(ctx, query, args)
}

// QueryContext implements driver.QueryerContext.
func (c *Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	if err := c.check(); err != nil {
		return nil, err
	}
	if r, err, ok := c.threadAnswer(query); ok {
		return r, err
	}
	if c.hangRole(query) {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	if r, err, ok := c.roleAnswer(query); ok {
		return r, err
	}
	if err := c.refusal(query); err != nil {
		return nil, err
	}
	return c.inner.(driver.QueryerContext).QueryContext(ctx, query, args)
}

// Ping implements driver.Pinger; sqlmock does not monitor pings here.
func (c *Conn) Ping(ctx context.Context) error { return c.check() }

// CheckNamedValue implements driver.NamedValueChecker.
func (c *Conn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.inner.(driver.NamedValueChecker).CheckNamedValue(nv)
}

// ResetSession implements driver.SessionResetter.
func (c *Conn) ResetSession(ctx context.Context) error {
	c.resets.Add(1)
	if err, _ := c.ResetErr.Load().(error); err != nil {
		return err
	}
	if c.closes.Load() > 0 || c.Broken.Load() || c.net.killed(c) {
		return driver.ErrBadConn
	}
	return nil
}

// IsValid implements driver.Validator.
func (c *Conn) IsValid() bool { return c.closes.Load() == 0 && !c.Broken.Load() }

// Tx fails Commit and Rollback with the host's I/O error while the host is down.
type Tx struct {
	c     *Conn
	inner driver.Tx
}

// Commit implements driver.Tx.
func (t *Tx) Commit() error {
	if err := t.c.check(); err != nil {
		return err
	}
	if err := t.c.refusal("COMMIT"); err != nil {
		return err
	}
	return t.inner.Commit()
}

// Rollback implements driver.Tx.
func (t *Tx) Rollback() error {
	if err := t.c.check(); err != nil {
		return err
	}
	return t.inner.Rollback()
}

// Stmt fails every call with the host's I/O error while the host is down.
type Stmt struct {
	c      *Conn
	inner  driver.Stmt
	closes atomic.Int32
}

// Close implements driver.Stmt.
func (s *Stmt) Close() error { s.closes.Add(1); return s.inner.Close() }

// NumInput implements driver.Stmt.
func (s *Stmt) NumInput() int { return s.inner.NumInput() }

// Exec implements driver.Stmt.
func (s *Stmt) Exec(args []driver.Value) (driver.Result, error) { panic("fake: Exec without context") }

// Query implements driver.Stmt.
func (s *Stmt) Query(args []driver.Value) (driver.Rows, error) { panic("fake: Query without context") }

// ExecContext implements driver.StmtExecContext.
func (s *Stmt) ExecContext(ctx context.Context, args []driver.NamedValue) (driver.Result, error) {
	if err := s.c.check(); err != nil {
		return nil, err
	}
	return s.inner.(driver.StmtExecContext).ExecContext(ctx, args)
}

// QueryContext implements driver.StmtQueryContext.
func (s *Stmt) QueryContext(ctx context.Context, args []driver.NamedValue) (driver.Rows, error) {
	if err := s.c.check(); err != nil {
		return nil, err
	}
	return s.inner.(driver.StmtQueryContext).QueryContext(ctx, args)
}

var (
	_ driver.ConnBeginTx        = (*Conn)(nil)
	_ driver.ConnPrepareContext = (*Conn)(nil)
	_ driver.ExecerContext      = (*Conn)(nil)
	_ driver.QueryerContext     = (*Conn)(nil)
	_ driver.Pinger             = (*Conn)(nil)
	_ driver.NamedValueChecker  = (*Conn)(nil)
	_ driver.SessionResetter    = (*Conn)(nil)
	_ driver.Validator          = (*Conn)(nil)
	_ driver.StmtExecContext    = (*Stmt)(nil)
	_ driver.StmtQueryContext   = (*Stmt)(nil)
)
