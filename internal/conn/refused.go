package conn

import (
	"database/sql/driver"
	"errors"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// refusedWrite counts err in the pool's Stats().WriteRefusals when it says a write could
// not be served, and returns it unchanged. It is the one place that decides what counts:
//
//   - a statement the server refused as read-only: 1290 ER_OPTION_PREVENTS_STATEMENT and
//     1836 ER_READ_ONLY_MODE (the server's read_only), 1792
//     ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION (a read-only session: failOverReadOnly on
//     a secondary, readOnly, SetReadOnly);
//   - no host to use: a *failover.NoHostAvailableError (as is, or as a FailoverError's
//     Reconnect) of a walk that tried at least one host. With targetSessionAttrs
//     read-write or primary that is a write that found no writer; a walk the caller's
//     context ended before it tried anything is the caller's doing, not counted.
//
// The connection calls it where those errors reach it: fail (the server's refusals, seen
// before a demoted host's rejection is acted on), move (no host after a failure), ready
// and Open (no host for a connection that joins the pool).
func (p *prim) refusedWrite(err error) error {
	if err != nil && writeRefusal(err) {
		p.cl.NoteWriteRefused()
	}
	return err
}

// saw counts err in the pool's Stats().CallerErrors when it is an error a caller gets
// because a host failed, refused or was missing (callerError), and returns it unchanged.
// The methods through which errors leave the driver call it on what they return: the
// connection's statements, Begin, Commit, Rollback, Ping, SetReadOnly, a Stmt's and a
// Rows' calls (Owner.Attempts and Fail), and Open. What the driver absorbs (a statement it
// ran again on the new host) never reaches it.
func (p *prim) saw(err error) error {
	if err != nil {
		p.sawErr(err) // out of line: saw inlines to a nil check where errors leave
	}
	return err
}

// sawErr counts err, not nil, when callerError says so.
//
//go:noinline
func (p *prim) sawErr(err error) {
	if err != driver.ErrSkip && callerError(err) {
		p.cl.NoteCallerError()
	}
}

// callerError reports whether err is one saw counts: a *failover.FailoverError, a
// *failover.NoHostAvailableError (unless the caller's context ended the walk before it
// tried a host), failover.ErrTxLost but not failover.ErrTxRolledBack (the server rolled
// back for a deadlock: the application's), failover.ErrCommitOutcomeUnknown, and a
// server's read-only refusal (writeRefusal).
func callerError(err error) bool {
	var fe *failover.FailoverError
	var nh *failover.NoHostAvailableError
	switch {
	case errors.Is(err, failover.ErrTxRolledBack):
		return false
	case errors.As(err, &fe), errors.Is(err, failover.ErrTxLost), errors.Is(err, failover.ErrCommitOutcomeUnknown):
		return true
	case errors.As(err, &nh):
		return nh.Err == nil || tried(nh)
	}
	return writeRefusal(err)
}

// tried reports whether the walk nh tells of tried at least one host.
func tried(nh *failover.NoHostAvailableError) bool {
	for _, h := range nh.Hosts {
		if h.Err != nil {
			return true
		}
	}
	return false
}

// writeRefusal reports whether err is one refusedWrite counts.
func writeRefusal(err error) bool {
	if dialect.WriteRefused(err) {
		return true
	}
	var nh *failover.NoHostAvailableError
	return errors.As(err, &nh) && tried(nh)
}
