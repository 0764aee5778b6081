package cluster

// The engine's own error types. The errors users test for (NoHostAvailableError,
// FailoverError, ErrClosed...) are package failover's; the cut of the driver.ErrBadConn
// chain is dialect.NotBadConn.

import "time"

// HostTimeoutError is a host attempt (dial, handshake, session set-up) that did not finish
// within its bound: hostTimeout, or a share of the caller's remaining time (see
// the attempt rules under DefaultMinHostShare). It is a net.Error with Timeout() true, so
// Classify calls it a communication error, and it deliberately does not match
// context.DeadlineExceeded: that is reserved for the caller's own context.
type HostTimeoutError struct {
	// After is the per-host bound that expired.
	After time.Duration
	// Cause is the error the attempt returned when its deadline fired.
	Cause error

	bound string // which bound After is, for Error
}

// Error says which bound expired, and the cause.
func (e *HostTimeoutError) Error() string {
	s := "host attempt timed out after " + e.After.String()
	if e.bound != "" {
		s += " (" + e.bound + ")"
	}
	if e.Cause != nil {
		s += ": " + e.Cause.Error()
	}
	return s
}

// Timeout reports true (net.Error).
func (e *HostTimeoutError) Timeout() bool { return true }

// Temporary reports true (net.Error).
func (e *HostTimeoutError) Temporary() bool { return true }
