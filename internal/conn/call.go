package conn

import (
	"context"

	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

// call says what a call on the connection is, for attempts: what ready is told before
// each attempt, and how fail judges a failure.
type call struct {
	kind   stmt.Kind  // what the call does to the session, for ready
	fails  stmt.Kind  // what fail judges a failure on the primary session as
	retry  stmt.Retry // which failures of the first attempt may run it again; none of a later one
	counts bool       // its first attempt counts towards queriesBeforeRetryMaster

	// With replica sessions (replicaReads), a statement that route may send to one.
	routes bool
	stmt   stmt.Kind // the statement's kind, for route
	rfails stmt.Kind // what fail judges a failure on a replica session as
}

// attempts is the one retry loop of a call on the connection. Each attempt first asks
// route for a replica session (o.routes) and else waits until the primary session is
// ready. run sends the call there (rs nil: the primary) and reports whether its answer
// is final: a result, or an error returned as is. Any other error goes to fail, which
// says whether the call runs again, on the new host. A replica session wrote nothing,
// so a call that failed there may run again whatever its class (failReplica decides).
//
// attempts returns errAnswered as is when ready answered the call without sending it:
// the caller turns it into its empty result. Every other error has been counted (saw).
// run must not keep its closure: attempts holds it on the stack, allocating nothing.
func (c *Conn) attempts(ctx context.Context, o call, run func(rs *rsession) (final bool, err error)) error {
	for attempt := 0; ; attempt++ {
		var rs *rsession
		if o.routes && c.sp != nil {
			var err error
			if rs, err = c.route(ctx, o.stmt, attempt == 0); err != nil {
				return c.saw(err)
			}
		}
		if rs == nil {
			if err := c.ready(ctx, o.counts && attempt == 0, o.kind); err != nil {
				if err == errAnswered {
					return err
				}
				return c.saw(err)
			}
		}
		final, err := run(rs)
		if final {
			return c.saw(err)
		}
		epoch, r, k := c.epoch, o.retry, o.fails
		if rs != nil {
			epoch, r, k = rs.epoch, stmt.RetryAlways, o.rfails
		}
		retry, out := c.fail(ctx, epoch, err, r.At(attempt), k)
		if !retry {
			return c.saw(out)
		}
	}
}
