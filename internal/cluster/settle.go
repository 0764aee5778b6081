package cluster

// A statement whose outcome is unknown, settled: what the driver learns of a physical
// connection's socket as its bytes pass (Socket: the bytes written, the server's id of the
// session), and Settle, which ends the old session's server thread through a new session
// and waits until it is gone. A semi-synchronous COMMIT whose socket failed (a read
// timeout while it waits for a replica's acknowledgement) still commits when its wait ends
// or is killed, and an autocommit write past readTimeout (one waiting for a row lock)
// still lands when it gets there: until the thread is gone, reading the data proves
// nothing. Kill ends the thread of a read nobody waits for any more, without the wait.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// Socket is what the connector's socket tracker learns of one physical connection's
// socket as its bytes pass, without a statement of its own: how many bytes were written
// to it, the server's id of the session (the connection id of the server's greeting,
// the id KILL takes and the process list shows), and when it was dialled. Its methods
// are safe for concurrent use and allocate nothing.
type Socket struct {
	written atomic.Uint64
	wfailed atomic.Uint64 // writes that failed
	thread  atomic.Uint64 // the id + 1; 0 while it is not known
	opened  atomic.Int64  // when its dial began (UnixNano, the Cluster's clock); 0: not known
}

// Wrote adds n bytes to the count of bytes written (n <= 0 adds nothing).
func (s *Socket) Wrote(n int) {
	if n > 0 {
		s.written.Add(uint64(n))
	}
}

// Written returns the count of bytes written so far. A call that sees it unchanged
// across a failed request sent no byte of it: the server cannot have run it.
func (s *Socket) Written() uint64 { return s.written.Load() }

// WriteFailed counts a write that failed.
func (s *Socket) WriteFailed() { s.wfailed.Add(1) }

// WriteFailures returns the count of writes that failed so far.
func (s *Socket) WriteFailures() uint64 { return s.wfailed.Load() }

// SetThread records the server's id of the session.
func (s *Socket) SetThread(id uint32) { s.thread.Store(uint64(id) + 1) }

// Thread returns the server's id of the session, and whether it is known.
func (s *Socket) Thread() (id uint32, ok bool) {
	v := s.thread.Load()
	return uint32(v - 1), v != 0
}

// SetOpened records when the socket's dial began, on the Cluster's clock: the session
// cannot have opened on its server before.
func (s *Socket) SetOpened(t time.Time) { s.opened.Store(t.UnixNano()) }

// Opened returns when the socket's dial began, and whether that is known.
func (s *Socket) Opened() (time.Time, bool) {
	v := s.opened.Load()
	return time.Unix(0, v), v != 0
}

// SocketOf returns what the connector knows of phys's socket (Env.Socket), or nil.
func (c *Cluster) SocketOf(phys driver.Conn) *Socket {
	if c.env.Socket == nil || phys == nil {
		return nil
	}
	return c.env.Socket(phys)
}

// ProcessQuery is the query of Settle's wait: one row while the thread of the id is in
// the server's process list. A session sees its own user's threads without the PROCESS
// privilege, and Settle's session has the same user as the one it waits for.
const ProcessQuery = "SELECT ID FROM information_schema.PROCESSLIST WHERE ID = "

// UptimeQuery reads how long the server has run (whole seconds), before Settle kills a
// thread: a server that started again after the session opened gives thread ids out
// anew, and the id may now be another session's. MySQL and MariaDB both answer it.
const UptimeQuery = "SHOW GLOBAL STATUS LIKE 'Uptime'"

// Settle makes sure that the server thread of a session whose last statement's outcome
// is unknown (a COMMIT, an autocommit write, a statement of a transaction that is lost)
// has ended, so that what it did is final: committed or rolled back for good. old is
// what the socket tracker knew of the session's socket: the server's id of the session,
// and when it was opened. Through a new session to host (an id; addr is its
// host:port, as the failed session knew it), it runs KILL CONNECTION with the id, then
// reads the process list until the thread is gone, waiting DefaultSettlePoll at first
// and twice as long each time up to DefaultSettleMaxPoll. It returns nil when the thread
// is gone (a KILL that finds no such thread, 1094, counts: it ended before).
//
// A server that started again after the session opened gives thread ids out anew, so
// the id may be another session's by then: Settle kills only when the server's uptime
// (UptimeQuery, whole seconds) is at least the session's age, and otherwise only waits
// for the id to leave the process list (after a restart it is gone at once, unless
// another session has it now: then the wait runs out).
//
// It returns why it could not confirm the thread is gone: the id is not known, the host
// is no longer at addr in the host list, no session could be opened, KILL was refused
// (1095: not the owner), the uptime or the process list could not be read, the thread
// was still there after DefaultSettleTimeout (on the Cluster's clock, and in wall time),
// or ctx ended. The new session is closed before it returns. The error never matches
// driver.ErrBadConn.
func (c *Cluster) Settle(ctx context.Context, host int, addr string, old *Socket) error {
	return c.settle(ctx, host, addr, old, untilGone)
}

// Kill ends the server thread of a session whose statement nobody waits for any more (a
// read past readTimeout, which may simply run again), so that its server stops the
// work: as Settle, through a new session to host and with the same uptime guard, but
// it does not wait for the thread to leave the process list. It returns nil once KILL
// CONNECTION was accepted (or found no such thread, 1094), and otherwise why not,
// Settle's reasons; a server that may have given the id to another session since (see
// Settle) is left alone, with an error that says so. Its bound is Settle's,
// DefaultSettleTimeout, within ctx.
func (c *Cluster) Kill(ctx context.Context, host int, addr string, old *Socket) error {
	return c.settle(ctx, host, addr, old, untilKilled)
}

// until is how far settle goes: the KILL alone (Kill), or on until the thread is gone
// (Settle).
type until bool

const (
	untilKilled until = false
	untilGone   until = true
)

// settle is Settle and Kill.
func (c *Cluster) settle(ctx context.Context, host int, addr string, old *Socket, end until) error {
	var thread uint32
	known := false
	if old != nil {
		thread, known = old.Thread()
	}
	if !known {
		return errors.New("the session's id on the server is not known")
	}
	c.inUse.RLock() // host keeps its id while the session is opened
	defer c.inUse.RUnlock()
	if c.Host(host) != addr {
		return fmt.Errorf("%s is no longer in the host list", addr)
	}
	sctx, cancel := withBudget(ctx, DefaultSettleTimeout)
	defer cancel()
	conn, err := c.env.Dial(sctx, host)
	if err != nil {
		return settleErr(ctx, "no new session to "+addr, err)
	}
	defer conn.Close()
	id := strconv.FormatUint(uint64(thread), 10)
	ex, ok := conn.(driver.ExecerContext)
	q, ok2 := conn.(driver.QueryerContext)
	if !ok || !ok2 {
		return errors.New("the connection cannot run KILL (no driver.ExecerContext or driver.QueryerContext)")
	}
	notKilled := ""
	if opened, ok := old.Opened(); ok {
		up, err := uptime(sctx, q)
		if err != nil {
			return settleErr(ctx, "reading the uptime of "+addr+" failed", err)
		}
		if age := c.env.Clock.Now().Sub(opened); up < age {
			notKilled = fmt.Sprintf(" (not killed: %s has run %v, the session was opened %v ago, and after a restart the id may be another session's)",
				addr, up, age.Round(time.Millisecond))
		}
	}
	if notKilled == "" {
		if _, err := ex.ExecContext(sctx, "KILL CONNECTION "+id, nil); err != nil && dialect.Number(err) != dialect.ErrNoSuchThread {
			return settleErr(ctx, "KILL CONNECTION "+id+" on "+addr+" failed", err)
		}
	}
	if end == untilKilled {
		if notKilled != "" {
			return errors.New("the session's thread " + id + " was left running" + notKilled)
		}
		return nil
	}
	start := c.env.Clock.Now()
	for wait := DefaultSettlePoll; ; wait = min(2*wait, DefaultSettleMaxPoll) {
		there, err := threadListed(sctx, q, ProcessQuery+id)
		switch {
		case err != nil:
			return settleErr(ctx, "reading the process list of "+addr+" failed", err)
		case !there:
			return nil
		case c.env.Clock.Now().Sub(start) >= DefaultSettleTimeout:
			return fmt.Errorf("the session's thread %s was still in the process list of %s after %v%s", id, addr, DefaultSettleTimeout, notKilled)
		}
		if err := c.env.Clock.Sleep(sctx, wait); err != nil {
			return settleErr(ctx, "waiting for the session's thread "+id+" on "+addr+" to end", err)
		}
	}
}

// settleErr words Settle's failure to do what, with err: the caller's context error when
// ctx ended, the bound's when the settle bound ran out.
func settleErr(ctx context.Context, what string, err error) error {
	switch {
	case Ended(ctx):
		return fmt.Errorf("%s: %w", what, EndErr(ctx))
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled):
		return fmt.Errorf("%s within %v: %w", what, DefaultSettleTimeout, dialect.NotBadConn(err, ""))
	}
	return fmt.Errorf("%s: %w", what, dialect.NotBadConn(err, ""))
}

// uptime reads the server's uptime (UptimeQuery) on q; the server counts whole seconds.
func uptime(ctx context.Context, q driver.QueryerContext) (time.Duration, error) {
	_, rows, err := dialect.Query(ctx, q, UptimeQuery, 1)
	if err != nil {
		return 0, fmt.Errorf("no uptime in the answer to %s (%v)", UptimeQuery, err)
	}
	if len(rows) == 0 || len(rows[0]) < 2 {
		return 0, fmt.Errorf("no uptime in the answer to %s", UptimeQuery)
	}
	vals := rows[0]
	secs, err := strconv.ParseInt(dialect.Text(vals[1]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("the uptime %q: %w", dialect.Text(vals[1]), err)
	}
	return time.Duration(secs) * time.Second, nil
}

// threadListed runs query (ProcessQuery) on q and reports whether it returned a row.
func threadListed(ctx context.Context, q driver.QueryerContext, query string) (bool, error) {
	_, rows, err := dialect.Query(ctx, q, query, 1)
	return len(rows) > 0, err
}
