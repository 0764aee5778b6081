package conn

// A call on the connection: its attempts (the one retry loop), where each runs (a
// replica session, or the primary session's host: join, fallBack), the run of a
// statement there, and how a failed attempt is judged.

import (
	"context"
	"database/sql/driver"
	"errors"

	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

// call says what a call on the connection is, for attempts: where each attempt runs,
// what ready is told before it, and how fail judges a failure.
type call struct {
	kind   stmt.Kind  // what the call does to the session, for ready
	fails  stmt.Kind  // what fail judges a failure on the primary session as
	retry  stmt.Retry // which failures of the first attempt may run it again; none of a later one
	counts bool       // its first attempt counts towards queriesBeforeRetryMaster
	at     where      // where each attempt runs

	// With replica sessions (replicaReads), a statement that route may send to one.
	stmt   stmt.Kind // the statement's kind, for route
	rfails stmt.Kind // what fail judges a failure on a replica session as

	// prepared, for a prepared statement's call (h.Attempts): its attempt says how fail
	// judges its failure (Stmt.Failed: its PREPARE's or its run's), instead of retry,
	// fails and rfails.
	prepared *stmt.Stmt
}

// where says where the attempts of a call run.
type where uint8

const (
	onPrimary where = iota // the primary session, once ready
	routed                 // a replica session when route chooses one, else the primary session
	onReplica              // a replica session only; none qualifies: attempts returns errNoReplica
)

// errNoReplica is attempts' word for a call onReplica that no replica could take: the
// caller runs it on the primary session instead. It never reaches a user.
var errNoReplica = errors.New("mysqlfailover: no replica for this call")

// attempts is the one retry loop of a call on the connection. Each attempt first takes
// a replica session where o.at says so (session) and else waits until the primary
// session is ready. run sends the call there (rs nil: the primary) and reports whether
// its answer is final: a result, or an error returned as is. Any other error goes to
// fail (failAttempt), which says whether the call runs again, on the new host. A replica
// session wrote nothing, so a call that failed there may run again whatever its class
// (failReplica decides).
//
// attempts returns errAnswered as is when ready answered the call without sending it,
// and errNoReplica when a call onReplica found none: the caller turns them into its
// empty result, or its run on the primary. Every other error has been counted (saw).
// attempts keeps neither o nor run: both stay on the caller's stack, allocating nothing.
func (c *Conn) attempts(ctx context.Context, o *call, run func(rs *rsession) (final bool, err error)) error {
	for attempt := 0; ; attempt++ {
		var rs *rsession
		if o.at != onPrimary && c.sp != nil {
			var err error
			if rs, err = c.session(ctx, o, attempt == 0); err != nil {
				return c.prim.saw(err)
			}
		}
		if rs == nil {
			if o.at == onReplica {
				return errNoReplica
			}
			if err := c.ready(ctx, o.counts && attempt == 0, o.kind); err != nil {
				if err == errAnswered {
					return err
				}
				return c.prim.saw(err)
			}
		}
		final, err := run(rs)
		if final {
			return c.prim.saw(err)
		}
		retry, out := c.failAttempt(ctx, o, rs, err, attempt)
		if !retry {
			return c.prim.saw(out)
		}
	}
}

// session returns the replica session for an attempt of call o (first: its first), or
// nil for the primary session: route's choice (routed), or onReplica the one replica
// picks for the context's routing key.
func (c *Conn) session(ctx context.Context, o *call, first bool) (*rsession, error) {
	if o.at == routed {
		return c.route(ctx, o.stmt, first)
	}
	if first {
		c.sp.tried = 0
	}
	key, _ := readIntent(ctx)
	return c.replica(ctx, key)
}

// countAway counts a statement (count) towards queriesBeforeRetryMaster when the
// session is not on the primary.
func (p *prim) countAway(count bool) {
	if count && !p.cl.Home(p.host) {
		p.counted = p.cl.NoteStatement()
	}
}

// fallBack is ready's step on the pool's host when it is a secondary: it falls back to
// the primary when that is due (cluster.Cluster.TryFallBack) and no results are being
// read here; where the session stays, the statement (count) counts.
func (p *prim) fallBack(ctx context.Context, count bool) {
	if p.rows == 0 {
		if phys, host, _ := p.cl.TryFallBack(ctx, p.setup); phys != nil {
			p.drop()
			p.attach(phys, host)
			return
		}
	}
	if count {
		p.counted = p.cl.NoteStatement()
	}
}

// join is ready's step away from the pool's host, outside a transaction: it moves the
// connection to the pool's host (or walks), unless results are still being read here.
func (c *Conn) join(ctx context.Context, count bool) error {
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
	c.prim.drop()
	connect := c.cl.Connect
	if c.cfg.AllowSourceDown && c.sp != nil && c.sp.intent {
		// For a read (no replica could serve it, or a causal read needs the writer's
		// position): one pass, not the passes a write waits for while no writer answers.
		connect = c.cl.ConnectOnePass
	}
	phys, host, err := connect(ctx, c.prim.setup)
	if err != nil {
		return c.prim.refusedWrite(err)
	}
	c.prim.attach(phys, host)
	c.prim.countAway(count)
	return nil
}

// failAttempt is fail for err, the failure of attempt (0 the first) of call o on replica
// session rs (nil: the primary session). A later attempt's failure never runs it again.
// A prepared statement's attempt says how it is judged (o.prepared); the replica
// sessions it tried go back to the pool at once.
func (c *Conn) failAttempt(ctx context.Context, o *call, rs *rsession, err error, attempt int) (bool, error) {
	epoch, r, k := c.epoch, o.retry, o.fails
	if rs != nil {
		epoch, r, k = rs.epoch, stmt.RetryAlways, o.rfails
	}
	if o.prepared != nil {
		f := o.prepared.Failed()
		c.failing = f.Query
		retry, out := c.fail(ctx, f.Epoch, err, f.Retry.At(attempt), f.Kind)
		if c.sp != nil {
			c.sp.giveBack()
		}
		return retry, out
	}
	return c.fail(ctx, epoch, err, r.At(attempt), k)
}

// runPrimary is a statement's run on the primary session, once ready (see attempts).
func (c *Conn) runPrimary(ctx context.Context, k stmt.Kind, query string, args []driver.NamedValue, how via) (driver.Result, driver.Rows, bool, error) {
	var res driver.Result
	var rows driver.Rows
	var err error
	if how&viaQuery != 0 {
		if c.queryer == nil {
			return nil, nil, true, driver.ErrSkip // database/sql prepares instead
		}
		c.mark()
		rows, err = c.queryer.QueryContext(ctx, query, args)
	} else {
		if c.execer == nil {
			return nil, nil, true, driver.ErrSkip
		}
		c.mark()
		res, err = c.execer.ExecContext(ctx, query, args)
	}
	switch {
	case err == nil:
		return c.ranHere(k, query, args, how, res), rows, true, nil
	case err == driver.ErrSkip:
		// go-sql-driver's answer to every statement with arguments unless
		// interpolateParams is set: database/sql prepares instead, and the
		// prepared statement counts itself. Nothing was sent.
		c.prim.uncount()
		return nil, nil, true, err
	}
	if c.log != nil {
		c.log.try(query, args, how, c.epoch)
	}
	c.failing = query
	return nil, nil, false, err
}

// runReplica is a statement's run on the replica session rs (see attempts).
func (c *Conn) runReplica(ctx context.Context, rs *rsession, query string, args []driver.NamedValue, how via) (driver.Result, driver.Rows, bool, error) {
	var res driver.Result
	var rows driver.Rows
	var err error
	if how&viaQuery != 0 {
		if rs.queryer == nil {
			return nil, nil, true, driver.ErrSkip
		}
		c.cl.ReplicaStart(rs.host)
		rows, err = rs.queryer.QueryContext(ctx, query, args)
	} else {
		if rs.execer == nil {
			return nil, nil, true, driver.ErrSkip
		}
		c.cl.ReplicaStart(rs.host)
		res, err = rs.execer.ExecContext(ctx, query, args)
	}
	c.cl.ReplicaDone(rs.host, err == nil)
	switch {
	case err == nil:
		return res, rows, true, nil
	case err == driver.ErrSkip:
		c.sp.prefer = rs.host // database/sql prepares it next: on the same replica
		return nil, nil, true, err
	}
	c.failing = query // for fail, which attempts calls next
	return nil, nil, false, err
}
