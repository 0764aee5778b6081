package cluster

// The engine's own error types and the one place that cuts the driver.ErrBadConn chain
// (NotBadConn). The errors users test for (NoHostAvailableError, FailoverError,
// ErrClosed...) are package failover's.

import (
	"database/sql/driver"
	"errors"
	"time"
)

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

// notSentError replaces driver.ErrBadConn inside the errors this package returns.
// database/sql retries any error that matches driver.ErrBadConn (up to three times, on
// other connections), which is only right while nothing was sent; once the proxy has
// handled the failure itself, the error must not carry that meaning any more.
type notSentError struct{ msg string }

func (e *notSentError) Error() string { return e.msg }

// NotBadConn returns err unchanged unless it matches driver.ErrBadConn, in which case it
// returns an error with the same text (plus what) that does not: the one place where this
// package cuts the ErrBadConn chain (no silent re-execution).
func NotBadConn(err error, what string) error {
	if err == nil || !errors.Is(err, driver.ErrBadConn) {
		return err
	}
	if what == "" {
		return &notSentError{msg: err.Error()}
	}
	return &notSentError{msg: what + " (" + err.Error() + ")"}
}
