package dialect

import (
	"slices"
	"strings"
)

// Kind is what a statement does to its session's transaction state when it succeeds.
type Kind uint8

// The kinds of statements.
const (
	Plain             Kind = iota // no effect (SELECT, INSERT, SAVEPOINT, ROLLBACK TO, XA END): with autocommit off it opens a transaction
	Use                           // USE db: also the current database
	Begin                         // BEGIN [WORK], START TRANSACTION ...: commits an open transaction and opens one
	XAStart                       // XA START|BEGIN: opens an XA transaction
	XAPrepare                     // XA PREPARE: the XA transaction now survives its session
	XACommit                      // XA COMMIT: ends it; completion_type does not apply
	XARollback                    // XA ROLLBACK
	Commit                        // COMMIT [WORK] [AND [NO] CHAIN] [[NO] RELEASE]
	Rollback                      // ROLLBACK [WORK] [AND [NO] CHAIN] [[NO] RELEASE]
	AutocommitOn                  // SET autocommit = 1: commits when it was 0
	AutocommitOff                 // SET autocommit = 0
	AutocommitUnknown             // SET autocommit = <a value not read here>
	CompletionNoChain             // SET completion_type = 0 (NO_CHAIN)
	CompletionChain               // SET completion_type = 1 (CHAIN)
	CompletionRelease             // SET completion_type = 2 (RELEASE)
	CompletionUnknown             // SET completion_type = <a value not read here>
	SetTx                         // SET TRANSACTION ...: characteristics of the next transaction
	Implicit                      // commits implicitly: DDL, GRANT, FLUSH, ...
	Maybe                         // may commit implicitly: ALTER TABLE (not of a temporary table on MariaDB), TRUNCATE, replication control
	LockTables                    // LOCK TABLES: commits, and holds table locks
	Lock                          // other session locks: FLUSH TABLES ... WITH READ LOCK, LOCK INSTANCE
	Unlock                        // UNLOCK TABLES|INSTANCE
	Unknown                       // CALL, EXECUTE, compound statements, executable comments, what cannot be read
	Batch                         // several statements (multiStatements): each applies in turn
	Empty                         // only white space and comments

	// Calls is the first Kind no statement has: a caller numbers from it the kinds of
	// its calls that are not statements.
	Calls
)

// Clauses are the clauses of a COMMIT or ROLLBACK. Where a statement has neither AND
// CHAIN nor AND NO CHAIN (RELEASE nor NO RELEASE), completion_type decides.
type Clauses uint8

// The clauses.
const (
	Chain Clauses = 1 << iota
	NoChain
	Release
	NoRelease
)

// Flags say what a statement does to the state its session holds, and what it reads of
// it. Read intent never takes a statement with flags to a replica session.
type Flags uint8

// The flags. Session: the statement changes the session's own state (SET of a
// variable, the names or the role; CREATE or DROP TEMPORARY TABLE), which the replica
// sessions would never see. Temp: it creates or drops a temporary table (TempTables).
// The others come from any statement's text (heldFlags). Holds: it names a user variable
// or calls GET_LOCK, RELEASE_LOCK or RELEASE_ALL_LOCKS (ScanHeld). LastID, RowCount and
// FoundRows: it reads LAST_INSERT_ID(), ROW_COUNT() or FOUND_ROWS(), values of the
// session's last statement (Reads: any of them), so it must run on that session.
const (
	Session Flags = 1 << iota
	Temp
	Holds
	LastID
	RowCount
	FoundRows

	Reads = LastID | RowCount | FoundRows
)

// A keyword is what a statement's first word tells of its kind: k, or with next the
// kind its second word picks (k for any other), or with read the method that reads the
// rest of the statement (rest).
type keyword struct {
	k    Kind
	next []pick
	read reader
}

// A pick is a second word (lower case) and the kind it picks.
type pick struct {
	word string
	k    Kind
}

// The readers of a keyword's rest: named, not func values, because an indirect call
// would move every statement's lexer to the heap.
type reader uint8

const (
	readNone reader = iota
	readBegin
	readCommit
	readRollback
	readSet
	readFlush
	readCreate
	readMaintenance
	readDrop
)

// rest reads the rest of the statement with r.
func (l *lexer) rest(r reader) Class {
	switch r {
	case readBegin:
		return Class(l.begin())
	case readCommit:
		return l.clauses(Commit)
	case readRollback:
		return l.rollback()
	case readSet:
		return l.setStatement()
	case readFlush:
		return Class(l.flush())
	case readCreate:
		return l.create()
	case readMaintenance:
		return Class(l.maintenance())
	case readDrop:
		return l.drop()
	}
	return Class(Unknown) // readNone: not reached
}

// keywords is the statement table, by first keyword in lower case (see find).
var keywords = map[string]keyword{
	"select": {k: Plain}, "insert": {k: Plain}, "update": {k: Plain}, "delete": {k: Plain},
	"replace": {k: Plain}, "savepoint": {k: Plain},
	"use":   {k: Use},
	"begin": {read: readBegin},
	"start": {k: Unknown, next: []pick{
		{"transaction", Begin},
		{"slave", Maybe}, {"replica", Maybe}, {"group_replication", Maybe}, {"all", Maybe},
	}},
	"commit":   {read: readCommit},
	"rollback": {read: readRollback},
	"xa": {k: Unknown, next: []pick{
		{"start", XAStart}, {"begin", XAStart},
		{"end", Plain}, {"recover", Plain},
		{"prepare", XAPrepare},
		{"commit", XACommit},
		{"rollback", XARollback},
	}},
	"release": {k: Unknown, next: []pick{{"savepoint", Plain}}},
	"set":     {read: readSet},
	"lock":    {k: Lock, next: []pick{{"table", LockTables}, {"tables", LockTables}}},
	"unlock":  {k: Unlock},
	"flush":   {read: readFlush},
	"create":  {read: readCreate},
	"drop":    {read: readDrop},
	"alter": {k: Implicit, next: []pick{ // MariaDB: not of a temporary table or sequence
		{"table", Maybe}, {"online", Maybe}, {"ignore", Maybe}, {"sequence", Maybe},
		{"instance", Maybe}, {"resource", Maybe},
	}},
	"rename": {k: Implicit}, "grant": {k: Implicit}, "revoke": {k: Implicit},
	"install": {k: Implicit}, "uninstall": {k: Implicit},
	"truncate": {k: Maybe}, "change": {k: Maybe}, "stop": {k: Maybe}, "reset": {k: Maybe},
	"backup": {k: Maybe}, "cache": {k: Maybe}, "import": {k: Maybe},
	"load":    {k: Plain, next: []pick{{"index", Maybe}}}, // LOAD DATA | XML: a commit only on NDB
	"analyze": {read: readMaintenance}, "optimize": {read: readMaintenance},
	"repair": {read: readMaintenance}, "check": {read: readMaintenance},
	"call": {k: Unknown}, "execute": {k: Unknown}, "if": {k: Unknown}, "while": {k: Unknown},
	"loop": {k: Unknown}, "repeat": {k: Unknown}, "case": {k: Unknown}, "declare": {k: Unknown},
	"for": {k: Unknown},
}

// initials indexes keywords by the first letter of their word: find compares a few
// lengths, and hashes nothing (Classify reads every statement that does not start with
// SELECT, INSERT, UPDATE or DELETE).
var initials = func() (t [26][]spelled) {
	for w, kw := range keywords {
		t[w[0]-'a'] = append(t[w[0]-'a'], spelled{w, kw})
	}
	for _, words := range t {
		slices.SortFunc(words, func(a, b spelled) int { return strings.Compare(a.word, b.word) }) // one order every run
	}
	return t
}()

// spelled is a keyword with its word (lower case).
type spelled struct {
	word string
	keyword
}

// find returns the keyword w is, in any ASCII case (as is compares), or nil. w is not
// empty. b|0x20 lowers an ASCII letter and maps no other byte onto one.
func find(w string) *keyword {
	if c := w[0] | 0x20; 'a' <= c && c <= 'z' {
		t := initials[c-'a']
		for i := range t {
			if is(w, t[i].word) {
				return &t[i].keyword
			}
		}
	}
	return nil
}

// begin reads the rest of BEGIN [WORK].
func (l *lexer) begin() Kind {
	w := l.word()
	if is(w, "work") {
		w = l.word()
	}
	if w == "" && l.end() {
		return Begin
	}
	return Unknown // BEGIN NOT ATOMIC: a MariaDB compound statement
}

// rollback reads the rest of ROLLBACK: ROLLBACK [WORK] TO SAVEPOINT, or its clauses.
func (l *lexer) rollback() Class {
	save := l.i
	w := l.word()
	if is(w, "work") {
		w = l.word()
	}
	if is(w, "to") {
		return Class(Plain) // ROLLBACK TO SAVEPOINT: the transaction stays open
	}
	l.i = save
	return l.clauses(Rollback)
}

// setStatement reads the rest of SET.
func (l *lexer) setStatement() Class {
	k := l.set()
	if k == Plain {
		return Class(Plain).with(Session) // SET NAMES, SET @x, SET time_zone...: the session's own state
	}
	return Class(k)
}

// flush reads the rest of FLUSH.
func (l *lexer) flush() Kind {
	for t := l.token(); t != ""; t = l.token() {
		if is(t, "lock") || is(t, "export") {
			return Lock // FLUSH TABLES ... WITH READ LOCK | FOR EXPORT
		}
	}
	return Implicit
}

// create reads the rest of CREATE [OR REPLACE].
func (l *lexer) create() Class {
	w := l.word()
	if is(w, "or") && is(l.word(), "replace") {
		w = l.word()
	}
	if is(w, "temporary") {
		return Class(Plain).with(Session | Temp) // CREATE TEMPORARY TABLE does not commit
	}
	return Class(Implicit)
}

// drop reads the rest of DROP.
func (l *lexer) drop() Class {
	switch w := l.word(); {
	case is(w, "temporary"):
		return Class(Plain).with(Session | Temp) // DROP TEMPORARY TABLE does not commit
	case is(w, "prepare"):
		return Class(Plain)
	}
	return Class(Implicit)
}

// maintenance reads the rest of ANALYZE, OPTIMIZE, REPAIR and CHECK.
func (l *lexer) maintenance() Kind {
	w := l.word()
	if is(w, "no_write_to_binlog") || is(w, "local") {
		w = l.word()
	}
	if is(w, "table") || is(w, "tables") {
		return Implicit
	}
	return Plain // MariaDB's ANALYZE SELECT, CHECK VIEW ...: not known to commit
}

// clauses reads the rest of COMMIT or ROLLBACK: [WORK] [AND [NO] CHAIN] [[NO] RELEASE].
func (l *lexer) clauses(k Kind) Class {
	var c Clauses
	w := l.word()
	if is(w, "work") {
		w = l.word()
	}
	if is(w, "and") {
		if w = l.word(); is(w, "no") {
			c |= NoChain
			w = l.word()
		} else {
			c |= Chain
		}
		if !is(w, "chain") {
			return Class(Unknown)
		}
		w = l.word()
	}
	switch {
	case is(w, "no"):
		if !is(l.word(), "release") {
			return Class(Unknown)
		}
		c |= NoRelease
		w = l.word()
	case is(w, "release"):
		c |= Release
		w = l.word()
	}
	if w != "" || !l.end() || c&Chain != 0 && c&Release != 0 {
		return Class(Unknown) // AND CHAIN RELEASE: the server refuses it
	}
	return Of(k, c, 0)
}
