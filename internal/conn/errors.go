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
	why   error // what else became of the transaction (a replay that failed), said as the note
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
	note := e.note
	if e.why != nil {
		note = e.why.Error()
	}
	if note != "" {
		b.WriteString(" (")
		b.WriteString(note)
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(unprefixed(e.fe.Error()))
	return b.String()
}

// Unwrap returns the sentinels, why (when set) and the FailoverError.
func (e *heldError) Unwrap() []error {
	out := append([]error(nil), e.kinds...)
	if e.why != nil {
		out = append(out, e.why)
	}
	return append(out, e.fe)
}

// heldWhy returns the heldError of kinds for fe, with why said and unwrapped.
func heldWhy(fe *failover.FailoverError, why error, kinds ...error) error {
	return &heldError{kinds: kinds, why: why, fe: fe}
}

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

// endedError is the error of a transaction the server rolled back while its session lived
// on (see endedBy): for the statement whose failure ended it, when the server's error
// alone would not say so (a 1205, which usually rolls back only the statement), and for
// every later statement of it, which is refused unsent (refused):
//
//	mysqlfailover: transaction rolled back by the server on db1:3306 (innodb_rollback_on_timeout is ON): Error 1205 (HY000): Lock wait timeout exceeded; try restarting transaction
//	mysqlfailover: transaction rolled back by the server on db1:3306 (not sent: the server rolled the transaction back earlier; ROLLBACK ends it): Error 1213 (40001): Deadlock found when trying to get lock; try restarting transaction
//
// It matches failover.ErrTxRolledBack and failover.ErrTxLost, and unwraps to the
// server's error.
type endedError struct {
	host    string
	fact    string // what the server said that shows the transaction ended, "" for none
	refused bool
	cause   error
}

func (e *endedError) Error() string {
	var b strings.Builder
	b.WriteString(failover.ErrTxRolledBack.Error())
	b.WriteString(" on ")
	b.WriteString(e.host)
	switch {
	case e.refused:
		b.WriteString(" (not sent: the server rolled the transaction back earlier; ROLLBACK ends it)")
	case e.fact != "":
		b.WriteString(" (")
		b.WriteString(e.fact)
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(e.cause.Error())
	return b.String()
}

// Unwrap returns the server's error.
func (e *endedError) Unwrap() error { return e.cause }

// Is reports whether target is failover.ErrTxRolledBack or failover.ErrTxLost.
func (e *endedError) Is(target error) bool {
	return target == failover.ErrTxRolledBack || target == failover.ErrTxLost
}

// refusal returns the error of the statements refused after e.
func (e *endedError) refusal() *endedError {
	return &endedError{host: e.host, refused: true, cause: e.cause}
}
