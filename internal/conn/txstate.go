package conn

import (
	"github.com/mysqlfailover/mysqlfailover/internal/stmt"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// The session's autocommit (txState.ac).
const (
	acOn uint8 = iota
	acOff
	acUnknown // counts as off; SELECT @@autocommit tells
)

// The session's completion_type (txState.ct): what COMMIT and ROLLBACK without AND
// [NO] CHAIN or [NO] RELEASE do.
const (
	ctNoChain uint8 = iota
	ctChain
	ctRelease
	ctUnknown
)

// The session's transaction (txState.txn).
const (
	txnNone uint8 = iota
	txnOpen
	txnUnknown // counts as open; MariaDB's @@in_transaction tells
)

// The session's XA transaction (txState.xa).
const (
	xaNone uint8 = iota
	xaActive
	xaPrepared // it survives its session on the server (MySQL 5.7.7+, MariaDB 10.5+)
)

// txState is what the connection knows of its physical session's transaction state: from
// the DSN, and from every statement that ran on the session (see dialect.Classify). A new
// session starts with none open.
type txState struct {
	ac      uint8
	ct      uint8
	txn     uint8
	xa      uint8
	began   bool // txn was opened by BEGIN or START TRANSACTION (for error texts)
	locks   bool // LOCK TABLES, FLUSH TABLES WITH READ LOCK, LOCK INSTANCE: held until UNLOCK
	pending bool // SET TRANSACTION gave the next transaction its characteristics
}

// held reports whether the session holds state that a move would drop: a transaction
// that is open or may be, table locks, pending transaction characteristics, or an
// autocommit or completion_type it does not know (it could not restore them). The
// session then stays on its host.
func (s *txState) held() bool {
	return s.txn != txnNone || s.xa != xaNone || s.locks || s.pending || s.ac == acUnknown || s.ct == ctUnknown
}

// resolvable reports whether the server can tell what is held: only unknowns are.
func (s *txState) resolvable() bool {
	return s.txn != txnOpen && s.xa == xaNone && !s.locks && !s.pending
}

// touch records a statement that has no effect of its own: with autocommit off it opens a
// transaction (a SELECT included: its snapshot and locks are the transaction's).
func (s *txState) touch() {
	switch {
	case s.txn != txnNone:
	case s.ac == acOff:
		s.txn = txnOpen
	case s.ac == acUnknown:
		s.txn = txnUnknown
	}
}

// end records the end of the transaction; chain opens the next one (AND CHAIN).
func (s *txState) end(chain bool) {
	s.txn, s.began, s.xa, s.pending = txnNone, false, xaNone, false
	if chain {
		s.txn, s.began = txnOpen, true
	}
}

// completion returns what COMMIT or ROLLBACK of kind k does: chain, release, and whether
// that is known (completion_type unknown and no explicit clause: not).
func (s *txState) completion(k stmt.Kind) (chain, release, known bool) {
	c := k.Clauses()
	chain = c&dialect.Chain != 0 || c&dialect.NoChain == 0 && s.ct == ctChain
	release = c&dialect.Release != 0 || c&dialect.NoRelease == 0 && s.ct == ctRelease
	known = s.ct != ctUnknown || c&(dialect.Chain|dialect.NoChain) != 0 && c&(dialect.Release|dialect.NoRelease) != 0
	return chain, release, known
}

// apply records that one statement of kind k (not dialect.Batch) succeeded. It reports
// whether the server closes the session after it (RELEASE).
func (s *txState) apply(k stmt.Kind) (release bool) {
	switch c := k.Kind(); c {
	case dialect.Plain, dialect.Use:
		s.touch()
	case dialect.Begin, dialect.XAStart, dialect.XAPrepare, dialect.XACommit, dialect.XARollback, dialect.Commit, dialect.Rollback:
		return s.control(k)
	case dialect.AutocommitOn, dialect.AutocommitOff, dialect.AutocommitUnknown:
		s.setAutocommit(c)
	case dialect.CompletionNoChain:
		s.ct = ctNoChain
	case dialect.CompletionChain:
		s.ct = ctChain
	case dialect.CompletionRelease:
		s.ct = ctRelease
	case dialect.CompletionUnknown:
		s.ct = ctUnknown
	case dialect.SetTx:
		s.pending = true
	case dialect.Implicit:
		s.txn, s.began = txnNone, false
	case dialect.Maybe:
		if s.txn != txnNone {
			s.txn, s.began = txnUnknown, false
		}
	case dialect.LockTables:
		s.txn, s.began, s.locks = txnNone, false, true
	case dialect.Lock:
		s.locks = true
	case dialect.Unlock:
		// It commits only after LOCK TABLES (not after FLUSH TABLES WITH READ LOCK);
		// which one it was is not followed, so the transaction is not taken as ended.
		s.locks = false
	case dialect.Unknown:
		s.txn, s.began, s.ac, s.ct = txnUnknown, false, acUnknown, ctUnknown
	}
	return false
}

// control records a transaction-control statement of kind k that succeeded (BEGIN, XA
// START, XA PREPARE, XA COMMIT or ROLLBACK, COMMIT, ROLLBACK); it reports whether the
// server closes the session after it (RELEASE).
func (s *txState) control(k stmt.Kind) (release bool) {
	switch k.Kind() {
	case dialect.Begin:
		s.txn, s.began, s.locks = txnOpen, true, false // BEGIN also releases table locks
	case dialect.XAStart:
		s.txn, s.began, s.locks, s.xa = txnOpen, true, false, xaActive
	case dialect.XAPrepare:
		s.xa = xaPrepared
	case dialect.XACommit, dialect.XARollback:
		s.end(false)
	case dialect.Commit, dialect.Rollback:
		chain, rel, known := s.completion(k)
		if !known {
			s.txn, s.began = txnUnknown, false
			return false
		}
		s.end(chain)
		return rel
	}
	return false
}

// setAutocommit records a SET autocommit of kind c (dialect.AutocommitOn, AutocommitOff,
// AutocommitUnknown) that succeeded: turning it on from off commits; from unknown, an
// open transaction may have been committed.
func (s *txState) setAutocommit(c dialect.Kind) {
	switch c {
	case dialect.AutocommitOn:
		switch s.ac {
		case acOff:
			s.txn, s.began = txnNone, false // SET autocommit = 1 commits
		case acUnknown:
			if s.txn != txnNone {
				s.txn = txnUnknown
			}
		}
		s.ac = acOn
	case dialect.AutocommitOff:
		s.ac = acOff
	case dialect.AutocommitUnknown:
		s.ac = acUnknown
		if s.txn != txnNone {
			s.txn, s.began = txnUnknown, false
		}
	}
}

// failed records that a statement of kind k (not dialect.Batch) failed with a data error:
// the session lives on. A transaction-control statement, or one that commits implicitly,
// leaves the transaction unknown (whether its commit happened cannot be told); a failed
// SET changes nothing; any other statement counts as one that ran.
func (s *txState) failed(k stmt.Kind) {
	switch k.Kind() {
	case dialect.Begin, dialect.XAStart, dialect.XAPrepare, dialect.XACommit, dialect.XARollback, dialect.Commit, dialect.Rollback, dialect.AutocommitOn, dialect.AutocommitUnknown:
		s.txn, s.began = txnUnknown, false
	case dialect.Implicit, dialect.Maybe, dialect.LockTables, dialect.Unlock:
		if s.txn != txnNone {
			s.txn, s.began = txnUnknown, false
		}
	case dialect.Unknown:
		s.apply(k)
	case dialect.Plain, dialect.Use:
		s.touch()
	}
}

// failedBatch is failed for the statements of a multi-statement query that failed
// somewhere: every state it may have left is merged, what differs becoming unknown.
func (s *txState) failedBatch(query string) {
	ran := *s // the statements before the one that failed
	out, first := *s, true
	dialect.Statements(query, func(_ string, k stmt.Kind) bool {
		t := ran
		t.failed(k)
		if first {
			out, first = t, false
		} else {
			out.merge(t)
		}
		ran.apply(k)
		return true
	})
	*s = out
}

// mayHaveRun starts the record of a multi-statement query whose results are being read:
// go-sql-driver has read the first result only, so any number of its statements (one at
// least) may have run; what differs between those states becomes unknown (see merge).
// Each statement goes to next in turn; out is then the session's state.
func (s *txState) mayHaveRun() mayRun {
	return mayRun{ran: *s, first: true}
}

// mayRun is the record mayHaveRun starts: ran the state after the statements so far,
// out the merge of the states after each.
type mayRun struct {
	ran, out txState
	first    bool
}

// next records the next statement, of kind k.
func (m *mayRun) next(k stmt.Kind) {
	m.ran.apply(k)
	if m.first {
		m.out, m.first = m.ran, false
	} else {
		m.out.merge(m.ran)
	}
}

// merge makes s the state that may be s or t: what differs becomes unknown, and locks,
// pending characteristics and XA states count if either has them.
func (s *txState) merge(t txState) {
	if s.txn != t.txn {
		s.txn = txnUnknown
	}
	s.began = s.began && t.began
	if s.ac != t.ac {
		s.ac = acUnknown
	}
	if s.ct != t.ct {
		s.ct = ctUnknown
	}
	s.xa = max(s.xa, t.xa)
	s.locks = s.locks || t.locks
	s.pending = s.pending || t.pending
}

// A verdict is what a communication failure means for the session's transaction state
// (see txState.verdict): the session is gone, and with it what it held.
type verdict uint8

const (
	vLost     verdict = 1 << iota // what it held is lost: later statements fail until COMMIT or ROLLBACK
	vCommit                       // the statement may have committed: the open transaction, or itself under autocommit
	vEnded                        // the statement ended what was held, by a rollback
	vPrepared                     // a prepared XA transaction survives on the server
	vNone     verdict = 0         // nothing was held: the failure is an ordinary one
)

// verdict judges a communication failure of a statement of kind k (not dialect.Batch)
// that ran in state s.
func (s *txState) verdict(k stmt.Kind) verdict {
	if k == kTxEnd || !s.held() {
		return vNone
	}
	if s.xa == xaPrepared {
		return vPrepared
	}
	c := k.Kind()
	open := s.txn != txnNone
	if open && s.commits(c) {
		return vCommit
	}
	if s.keeps(c, open) {
		if c == dialect.Plain && s.mayAutocommit() {
			// What was held is lost, and the statement may have been a transaction of
			// its own that committed: its outcome is unknown, it must not run again.
			return vLost | vCommit
		}
		return vLost
	}
	return vEnded
}

// mayAutocommit reports whether a statement may run as a transaction of its own, which
// commits when it ends: autocommit is on or unknown, and no transaction is known to be
// open (table locks, pending characteristics or an unknown state held instead).
func (s *txState) mayAutocommit() bool {
	return s.ac != acOff && s.txn != txnOpen && s.xa == xaNone
}

// commits reports whether a statement of kind c commits the open transaction,
// explicitly or implicitly (BEGIN commits an open transaction).
func (s *txState) commits(c dialect.Kind) bool {
	switch c {
	case dialect.Commit, dialect.XACommit, dialect.Begin, dialect.XAStart, dialect.Implicit, dialect.Maybe, dialect.LockTables:
		return true
	case dialect.Unlock:
		return s.locks
	case dialect.AutocommitOn:
		return s.ac != acOn
	}
	return false
}

// keeps reports whether something s holds outlives a statement of kind c that did not
// commit (open: a transaction is or may be open): a transaction it does not roll back,
// locks it neither releases nor replaces, pending characteristics no transaction used or
// ended, an autocommit or completion_type it does not set.
func (s *txState) keeps(c dialect.Kind, open bool) bool {
	rollsBack := c == dialect.Rollback || c == dialect.XARollback
	begins := c == dialect.Begin || c == dialect.XAStart
	ends := c == dialect.Commit || c == dialect.Rollback || c == dialect.XACommit || c == dialect.XARollback
	return open && !rollsBack ||
		s.locks && c != dialect.Unlock && c != dialect.LockTables && !begins ||
		s.pending && !ends && !begins ||
		s.ac == acUnknown && c != dialect.AutocommitOn && c != dialect.AutocommitOff ||
		s.ct == ctUnknown && (c < dialect.CompletionNoChain || c > dialect.CompletionUnknown)
}

// verdictBatch is verdict for a multi-statement query, which may have failed at any of
// its statements (at the first, when notSent: nothing of it ran).
func (s *txState) verdictBatch(query string, notSent bool) verdict {
	t := *s
	var v verdict
	dialect.Statements(query, func(_ string, k stmt.Kind) bool {
		v |= t.verdict(k)
		t.apply(k)
		return !notSent
	})
	return v
}

// what names what the session held, for the error of a lost transaction.
func (s *txState) what() string {
	switch {
	case s.xa != xaNone:
		return "the XA transaction"
	case s.txn == txnOpen && s.began:
		return "the transaction opened by BEGIN or START TRANSACTION"
	case s.txn == txnOpen && s.ac != acOn:
		return "the transaction of the autocommit=0 session"
	case s.txn == txnOpen:
		return "the open transaction"
	case s.txn == txnUnknown:
		return "the transaction that may be open (after CALL, EXECUTE or a statement whose effect the driver cannot tell)"
	case s.locks:
		return "the locks of LOCK TABLES or FLUSH TABLES WITH READ LOCK"
	case s.pending:
		return "the characteristics SET TRANSACTION gave the next transaction"
	}
	return "the session's autocommit or completion_type, which the driver could not tell"
}

// autocommitOf reads the DSN's autocommit parameter as go-sql-driver sends it ("" when
// absent: the server's default, on).
func autocommitOf(v string) uint8 {
	if v == "" {
		return acOn
	}
	switch dialect.AutocommitKind(v) {
	case dialect.AutocommitOn:
		return acOn
	case dialect.AutocommitOff:
		return acOff
	}
	return acUnknown
}

// completionOf reads the DSN's completion_type parameter ("" when absent: NO_CHAIN).
func completionOf(v string) uint8 {
	if v == "" {
		return ctNoChain
	}
	switch dialect.CompletionKind(v) {
	case dialect.CompletionNoChain:
		return ctNoChain
	case dialect.CompletionChain:
		return ctChain
	case dialect.CompletionRelease:
		return ctRelease
	}
	return ctUnknown
}
