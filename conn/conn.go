package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/stmt"
)

// Config is the per-connection part of the DSN.
type Config struct {
	// ReadOnly is the initial explicit read-only flag (DSN readOnly, default false). It is
	// restored when database/sql hands the connection to its next user (ResetSession).
	ReadOnly bool
	// FailOverReadOnly makes the connection read-only while it is on a secondary (DSN
	// failOverReadOnly, default true), as Connector/J.
	FailOverReadOnly bool
	// DBName is the DSN's database: the one every new physical session starts in.
	DBName string
	// WriteIntent is set for targetSessionAttrs read-write and primary: a statement the
	// server rejects as read-only (1290, 1836) makes the connection check the host's
	// role and, if it was demoted, move to a writable host (see Conn.fail).
	WriteIntent bool
	// MultiStatements is go-sql-driver's multiStatements: a rejected statement is then
	// not run again after such a move, since earlier statements of its batch may have
	// run.
	MultiStatements bool
}

// Conn is the proxy around one physical go-sql-driver connection at a time: the
// driver.Conn that database/sql pools. database/sql uses a driver.Conn from one goroutine
// at a time, so Conn has no lock; the state it shares with the pool lives in the
// failover.Cluster.
//
// Besides the driver interfaces, users reach three methods through (*sql.Conn).Raw:
// SetReadOnly, ReadOnly and Host.
type Conn struct {
	cl  *failover.Cluster
	cfg Config

	phys  driver.Conn // nil when lost: the next call joins the pool's host
	host  int         // index of phys's host
	epoch uint64      // changes with phys; statements prepared on an older one re-prepare

	// the physical connection's optional interfaces, looked up once per connection
	execer  driver.ExecerContext
	queryer driver.QueryerContext
	checker driver.NamedValueChecker // kept from the last physical connection: it is stateless

	explicitRO bool   // the last SetReadOnly value, or Config.ReadOnly
	appliedRO  bool   // the read-only state of the physical session
	db         string // the current database: the DSN's or the last USE
	tx         *Tx    // the open transaction, if any
	rows       int    // open result sets: no switch while results are being read
	counted    bool   // the last ready counted a statement towards queriesBeforeRetryMaster
	lastUsed   int64  // cluster clock (UnixNano) of the last call that talked to the server
	checked    bool   // ResetSession just ran the liveness check: the next ready skips its own
	closed     bool
}

// Open returns a connection on the pool's host, walking the host list if needed, with
// the session state (read-only, database) set up. It never returns driver.ErrBadConn.
func Open(ctx context.Context, cl *failover.Cluster, cfg Config) (*Conn, error) {
	c := &Conn{cl: cl, cfg: cfg, explicitRO: cfg.ReadOnly, db: cfg.DBName}
	phys, host, err := cl.Connect(ctx, c.setup)
	if err != nil {
		return nil, err
	}
	c.attach(phys, host)
	return c, nil
}

// attach makes phys, on host, the physical connection.
func (c *Conn) attach(phys driver.Conn, host int) {
	c.phys, c.host = phys, host
	c.appliedRO = c.readOnlyOn(host) // setup applied it
	c.lastUsed = c.cl.Now().UnixNano()
	c.epoch++
	c.execer, _ = phys.(driver.ExecerContext)
	c.queryer, _ = phys.(driver.QueryerContext)
	if ch, ok := phys.(driver.NamedValueChecker); ok {
		c.checker = ch
	}
}

// drop closes the physical connection; the logical one lives on.
func (c *Conn) drop() {
	if c.closePhys() {
		c.cl.Release(c.host)
	}
}

// closePhys closes the physical connection without releasing its host's id (see
// failover.Cluster.Release), and reports whether there was one.
func (c *Conn) closePhys() bool {
	if c.phys == nil {
		return false
	}
	_ = c.phys.Close()
	c.phys, c.execer, c.queryer = nil, nil, nil
	c.epoch++
	return true
}

// h exposes the stmt.Owner methods without adding them to Conn's method set, which users
// see through (*sql.Conn).Raw. The conversion costs nothing.
type h Conn

// ready is the safe-point check before every call that talks to the server. It first
// replaces a physical connection that went stale while idle (see stale; skipped right
// after database/sql's checkout, which ran the same check). Outside a transaction it then
// moves the connection to the pool's host (nothing has been sent, so the caller sees no
// error) and falls back to the primary when that is due; inside one it only refuses
// statements of a lost transaction. count marks statements.
func (c *Conn) ready(ctx context.Context, count bool) error {
	c.counted = false
	if c.checked {
		c.checked = false // database/sql's checkout just checked it: no clock read needed
	} else if c.stale(ctx) && c.tx != nil && c.tx.lost == nil {
		c.tx.lost = fmt.Errorf("%w; not sent (the server closed the connection while the transaction sat idle)", failover.ErrTxLost)
	}
	if c.tx != nil {
		if c.tx.lost != nil {
			return c.tx.lost
		}
		if count && !c.cl.Home(c.host) {
			c.counted = c.cl.NoteStatement()
		}
		return nil
	}
	place := failover.PlaceAway
	if c.phys != nil {
		place = c.cl.Place(c.host)
	}
	if place == failover.PlaceHome {
		return nil // the hot path
	}
	if place == failover.PlaceActive {
		if c.rows == 0 {
			if phys, host, _ := c.cl.TryFallBack(ctx, c.setup); phys != nil {
				c.drop()
				c.attach(phys, host)
				return nil
			}
		}
		if count {
			c.counted = c.cl.NoteStatement()
		}
		return nil
	}
	if c.closed {
		return driver.ErrBadConn
	}
	if c.phys != nil && c.rows > 0 {
		return nil // results are still being read here; move at the next safe point
	}
	// The pool moved (another connection saw this host fail, or fell back), or this
	// connection lost its physical one, or its host no longer has the wanted role (a
	// demoted primary: another connection is looking for the writer): join the pool's
	// host, or the walk.
	c.drop()
	phys, host, err := c.cl.Connect(ctx, c.setup)
	if err != nil {
		return err
	}
	c.attach(phys, host)
	if count && !c.cl.Home(host) {
		c.counted = c.cl.NoteStatement()
	}
	return nil
}

// idleCheck is how long a connection may sit unused before its next call first runs
// go-sql-driver's liveness check (a non-blocking read, no round trip). database/sql runs
// that check itself (through ResetSession) only when it hands a pooled connection out,
// not between the calls of a pinned *sql.Conn or a transaction: without this, a session
// the server closed while it sat idle (wait_timeout, a KILL of a sleeping connection)
// would fail its next statement with mysql.ErrInvalidConn and move the whole pool away
// from a healthy host.
const idleCheck = time.Second

// stale runs the liveness check on a connection idle for idleCheck or more and drops a
// physical connection that fails it, without blaming its host (the next call joins the
// pool's host). It reports whether it dropped one.
func (c *Conn) stale(ctx context.Context) bool {
	now := c.cl.Now().UnixNano()
	idle := now-c.lastUsed >= int64(idleCheck)
	c.lastUsed = now
	if !idle || c.phys == nil || c.rows > 0 {
		return false
	}
	r, ok := c.phys.(driver.SessionResetter)
	if !ok || r.ResetSession(ctx) == nil {
		return false
	}
	c.drop()
	return true
}

// uncount takes back the statement the last ready counted.
func (c *Conn) uncount() {
	if c.counted {
		c.cl.ForgetStatement()
		c.counted = false
	}
}

// fail is the one place that decides what an error from the physical connection of the
// given epoch means, and whether the call that got it may run again (see stmt.Retry).
//
//   - Data errors pass through untouched; the connection stays.
//   - The caller's context ending is not a host failure: the error goes back as the
//     context error, and a physical connection go-sql-driver closed on cancel is dropped,
//     to be replaced on the pool's host.
//   - A communication error closes the physical connection, reports the host, walks to
//     the next one and restores the session there, and only then returns a
//     *failover.FailoverError. Inside a transaction the transaction is lost (ErrTxLost)
//     and nothing is repeated. Outside one, a call that provably sent nothing
//     (driver.ErrBadConn) is repeated once on the new host; driver.ErrBadConn itself never
//     goes back to database/sql, which would repeat the call up to three times however
//     much of it ran (go-sql-driver#582, golang/go#11978).
func (c *Conn) fail(ctx context.Context, epoch uint64, err error, r stmt.Retry) (bool, error) {
	if epoch != c.epoch {
		// The physical connection this came from is already gone (a Rows closed after
		// its failure was handled): nothing more to decide.
		return false, failover.NotBadConn(err, "")
	}
	switch failover.Classify(ctx, err) {
	case failover.Data:
		if c.cfg.WriteIntent && failover.ReadOnlyRejection(err) && ctx.Err() == nil {
			return c.rejected(ctx, err, r, c.cfg.MultiStatements)
		}
		c.dropIfInvalid(err)
		return false, err
	case failover.Canceled:
		c.dropIfInvalid(err)
		if cerr := ctx.Err(); !errors.Is(err, cerr) {
			return false, fmt.Errorf("%w (%v)", cerr, failover.NotBadConn(err, ""))
		}
		return false, err
	}
	return c.move(ctx, err, errors.Is(err, driver.ErrBadConn), r)
}

// rejected handles a write the server refused because it is read-only (1290, 1836) on a
// connection that wants a writer (targetSessionAttrs read-write or primary): one query
// reads the host's role. If it still qualifies (1290 is also --secure-file-priv and
// others) the rejection is an ordinary data error. Otherwise the topology changed (a
// demoted primary): the host's role is recorded and the connection moves as for a
// communication error, with a *failover.RoleError wrapping the rejection as the cause.
// The rejected statement did not run, so outside a transaction it runs again on the new
// host, unless it may be a batch (multiStatements: earlier statements of it may have run).
func (c *Conn) rejected(ctx context.Context, err error, r stmt.Retry, batch bool) (bool, error) {
	role, rerr := failover.ReadRole(ctx, c.phys)
	if rerr != nil {
		switch failover.Classify(ctx, rerr) {
		case failover.Data:
			return false, err // the role is unknown: leave the rejection as it is
		case failover.Canceled:
			return c.fail(ctx, c.epoch, rerr, stmt.NoRetry)
		}
		// The connection broke right after the rejection: the rejected statement did
		// not run, but with multiStatements earlier statements of its batch may have.
		return c.move(ctx, rerr, !batch, r)
	}
	if c.cl.NoteRole(c.host, role) {
		return false, err
	}
	return c.move(ctx, &failover.RoleError{Role: role, Wanted: c.cl.Target(), Cause: err}, !batch, r)
}

// move closes the physical connection, whose host failed with err, walks to the next
// host and restores the session there, then says whether the call may run again (r, and
// notSent: nothing of it ran) or returns the *failover.FailoverError.
func (c *Conn) move(ctx context.Context, err error, notSent bool, r stmt.Retry) (bool, error) {
	failed := c.host
	held := c.closePhys() // the id stays held until Recover has used it
	fe := &failover.FailoverError{
		Failed:        c.cl.Host(failed),
		MaybeExecuted: !notSent && !packetRefused(err),
		Err:           failover.NotBadConn(err, "the connection was broken before the request was sent"),
	}
	// The cluster decides whether the host or only this session is gone, and returns a
	// new session on the same host, or on the next one.
	phys, host, werr := c.cl.Recover(ctx, failed, err, c.setup)
	if held {
		c.cl.Release(failed)
	}
	if werr != nil {
		fe.Reconnect = werr
	} else {
		c.attach(phys, host)
		fe.Current = c.cl.Host(host)
	}
	if c.tx != nil {
		c.tx.lost = fmt.Errorf("%w; not sent (the transaction failed earlier: %v)", failover.ErrTxLost, fe)
		return false, fmt.Errorf("%w: %w", failover.ErrTxLost, fe)
	}
	if werr == nil && (r == stmt.RetryAlways || r == stmt.RetryIfNotSent && notSent) {
		return true, nil
	}
	return false, fe
}

// packetRefused reports whether err is the server's answer that the request's packet was
// bigger than its max_allowed_packet (1153, 08S01): the server closes the session
// without reading the request, so nothing of it ran (but it is not run again: it would
// be refused again).
func packetRefused(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == 1153
}

// dropIfInvalid drops a physical connection that go-sql-driver has closed (after a
// cancel, or a protocol error): the host is fine, the next call reconnects to the pool's
// host.
// Inside a transaction that loses the transaction.
func (c *Conn) dropIfInvalid(err error) {
	if v, ok := c.phys.(driver.Validator); ok && !v.IsValid() {
		c.drop()
		if c.tx != nil && c.tx.lost == nil {
			c.tx.lost = fmt.Errorf("%w; not sent (the connection broke earlier: %v)", failover.ErrTxLost, failover.NotBadConn(err, ""))
		}
	}
}

// Ready implements stmt.Owner.
func (o *h) Ready(ctx context.Context, count bool) (driver.Conn, uint64, error) {
	c := (*Conn)(o)
	if err := c.ready(ctx, count); err != nil {
		return nil, 0, err
	}
	return c.phys, c.epoch, nil
}

// Fail implements stmt.Owner.
func (o *h) Fail(ctx context.Context, epoch uint64, err error, r stmt.Retry) (bool, error) {
	return (*Conn)(o).fail(ctx, epoch, err, r)
}

// RowsOpened implements stmt.Owner: every Rows, of a plain query or of a prepared
// statement, counts, so that the count never goes negative and no switch or fall-back
// closes a physical connection whose results are still being read.
func (o *h) RowsOpened() { o.rows++ }

// RowsClosed implements stmt.Owner.
func (o *h) RowsClosed() { o.rows-- }

// CheckNamedValue implements stmt.Owner.
func (o *h) CheckNamedValue(nv *driver.NamedValue) error {
	return (*Conn)(o).CheckNamedValue(nv)
}

// ExecContext implements driver.ExecerContext.
func (c *Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	for attempt := 0; ; attempt++ {
		if err := c.ready(ctx, attempt == 0); err != nil {
			return nil, err
		}
		if c.execer == nil {
			return nil, driver.ErrSkip // database/sql prepares instead
		}
		res, err := c.execer.ExecContext(ctx, query, args)
		if err == nil {
			c.track(query)
			return res, nil
		}
		if err == driver.ErrSkip {
			// go-sql-driver's answer to every statement with arguments unless
			// interpolateParams is set: database/sql prepares instead, and the
			// prepared statement counts itself. Nothing was sent.
			c.uncount()
			return nil, err
		}
		retry, out := c.fail(ctx, c.epoch, err, retryFor(attempt, stmt.RetryIfNotSent))
		if !retry {
			return nil, out
		}
	}
}

// QueryContext implements driver.QueryerContext.
func (c *Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	for attempt := 0; ; attempt++ {
		if err := c.ready(ctx, attempt == 0); err != nil {
			return nil, err
		}
		if c.queryer == nil {
			return nil, driver.ErrSkip
		}
		rows, err := c.queryer.QueryContext(ctx, query, args)
		if err == nil {
			c.track(query)
			return stmt.NewRows((*h)(c), ctx, rows, c.epoch), nil
		}
		if err == driver.ErrSkip {
			c.uncount()
			return nil, err // database/sql prepares instead; see ExecContext
		}
		retry, out := c.fail(ctx, c.epoch, err, retryFor(attempt, stmt.RetryIfNotSent))
		if !retry {
			return nil, out
		}
	}
}

// Prepare implements driver.Conn.
func (c *Conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext implements driver.ConnPrepareContext. PREPARE has no side effects, so a
// communication failure is retried once on the new host (outside transactions).
func (c *Conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	for attempt := 0; ; attempt++ {
		if err := c.ready(ctx, false); err != nil {
			return nil, err
		}
		var s driver.Stmt
		var err error
		if p, ok := c.phys.(driver.ConnPrepareContext); ok {
			s, err = p.PrepareContext(ctx, query)
		} else {
			s, err = c.phys.Prepare(query)
		}
		if err == nil {
			return stmt.New((*h)(c), query, s, c.epoch), nil
		}
		retry, out := c.fail(ctx, c.epoch, err, retryFor(attempt, stmt.RetryAlways))
		if !retry {
			return nil, out
		}
	}
}

// Ping implements driver.Pinger; a failed ping moves the connection and pings the new
// host once.
func (c *Conn) Ping(ctx context.Context) error {
	for attempt := 0; ; attempt++ {
		if err := c.ready(ctx, false); err != nil {
			return err
		}
		p, ok := c.phys.(driver.Pinger)
		if !ok {
			return nil
		}
		err := p.Ping(ctx)
		if err == nil {
			return nil
		}
		retry, out := c.fail(ctx, c.epoch, err, retryFor(attempt, stmt.RetryAlways))
		if !retry {
			return out
		}
	}
}

// CheckNamedValue forwards to the physical connection so that go-sql-driver's value
// converter is kept; driver.ErrSkip lets database/sql use its default.
func (c *Conn) CheckNamedValue(nv *driver.NamedValue) error {
	if c.checker != nil {
		return c.checker.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// ResetSession is called by database/sql before it hands a pooled connection to its next
// user. It repairs rather than retires: a physical connection whose host the pool has
// left or that lost its wanted role (Cluster.Unfit), or that go-sql-driver's liveness
// check (forwarded here, go-sql-driver#657) finds stale, is dropped without blaming its
// host, and the next call joins the pool's host before it sends anything (ready). It
// never returns driver.ErrBadConn: when database/sql hands a connection to a caller
// queued at MaxOpenConns, it passes that error to the caller as is. It restores the DSN's read-only flag for the next user. A connection that
// cannot join any host fails its next call with the walk's error and is then discarded
// (IsValid).
func (c *Conn) ResetSession(ctx context.Context) error {
	if c.closed {
		return driver.ErrBadConn // database/sql never resets a closed connection
	}
	c.explicitRO = c.cfg.ReadOnly
	if c.phys != nil && (c.host != c.cl.Active() || c.cl.Unfit(c.host)) {
		c.drop()
	}
	if r, ok := c.phys.(driver.SessionResetter); ok && r.ResetSession(ctx) != nil {
		c.drop()
	}
	c.checked = true
	if c.phys == nil {
		return nil // setup applies the restored read-only flag on the new session
	}
	if want := c.readOnlyOn(c.host); want != c.appliedRO {
		if err := c.exec(ctx, c.phys, readOnlySQL(want)); err != nil {
			c.drop() // the SET ran or not: a new session starts clean
			return nil
		}
		c.appliedRO = want
	}
	return nil
}

// IsValid implements driver.Validator: false once the physical connection is gone.
func (c *Conn) IsValid() bool {
	if c.phys == nil || c.closed {
		return false
	}
	if v, ok := c.phys.(driver.Validator); ok {
		return v.IsValid()
	}
	return true
}

// Close closes the physical connection, exactly once.
func (c *Conn) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if c.phys == nil {
		return nil
	}
	err := c.phys.Close()
	c.cl.Release(c.host)
	c.phys, c.execer, c.queryer = nil, nil, nil
	return failover.NotBadConn(err, "")
}

func retryFor(attempt int, r stmt.Retry) stmt.Retry {
	if attempt > 0 {
		return stmt.NoRetry
	}
	return r
}

var (
	_ driver.Conn               = (*Conn)(nil)
	_ driver.ConnBeginTx        = (*Conn)(nil)
	_ driver.ConnPrepareContext = (*Conn)(nil)
	_ driver.ExecerContext      = (*Conn)(nil)
	_ driver.QueryerContext     = (*Conn)(nil)
	_ driver.Pinger             = (*Conn)(nil)
	_ driver.NamedValueChecker  = (*Conn)(nil)
	_ driver.SessionResetter    = (*Conn)(nil)
	_ driver.Validator          = (*Conn)(nil)
	_ stmt.Owner                = (*h)(nil)
)
