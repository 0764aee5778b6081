package conn

import (
	"strings"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// heldError is the error of a call whose session failed while it held a transaction:
// the sentinels that say what became of the transaction (failover.ErrTxLost,
// failover.ErrCommitOutcomeUnknown, or both for a batch), anything else to say of it,
// and the FailoverError that says what became of the connection, each said once:
//
//	mysqlfailover: transaction lost: connection to db1:3306 failed: invalid connection; now on db2:3306 (the statement may have run on db1:3306)
type heldError struct {
	kinds []error
	note  string
	fe    *failover.FailoverError
}

func (e *heldError) Error() string {
	var b strings.Builder
	for i, k := range e.kinds {
		if i > 0 {
			b.WriteString(" and ")
			b.WriteString(unprefixed(k.Error()))
		} else {
			b.WriteString(k.Error())
		}
	}
	if e.note != "" {
		b.WriteString(" (")
		b.WriteString(e.note)
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(unprefixed(e.fe.Error()))
	return b.String()
}

// Unwrap returns the sentinels and the FailoverError.
func (e *heldError) Unwrap() []error { return append(append([]error(nil), e.kinds...), e.fe) }

// heldBy returns the heldError of kinds for fe.
func heldBy(fe *failover.FailoverError, note string, kinds ...error) error {
	return &heldError{kinds: kinds, note: note, fe: fe}
}

// lostError is the error of a call refused, and sent nowhere, because its transaction
// was lost earlier; why says how:
//
//	mysqlfailover: transaction lost (not sent: the transaction failed earlier on db1:3306: invalid connection)
type lostError struct{ why string }

func (e *lostError) Error() string {
	return failover.ErrTxLost.Error() + " (not sent: " + e.why + ")"
}

// Is reports whether target is failover.ErrTxLost.
func (e *lostError) Is(target error) bool { return target == failover.ErrTxLost }

// lost returns the lostError for why.
func lost(why string) error { return &lostError{why: why} }

// unprefixed drops the "mysqlfailover: " that starts this module's error texts, for an
// error said inside another one.
func unprefixed(s string) string { return strings.TrimPrefix(s, "mysqlfailover: ") }
