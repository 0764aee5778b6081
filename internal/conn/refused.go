package conn

import (
	"errors"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
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
func (c *Conn) refusedWrite(err error) error {
	if err != nil && writeRefusal(err) {
		c.cl.NoteWriteRefused()
	}
	return err
}

// writeRefusal reports whether err is one refusedWrite counts.
func writeRefusal(err error) bool {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1290, 1836, 1792:
			return true
		}
	}
	var nh *failover.NoHostAvailableError
	if errors.As(err, &nh) {
		for _, h := range nh.Hosts {
			if h.Err != nil {
				return true
			}
		}
	}
	return false
}
