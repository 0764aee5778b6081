// Package conn is the proxy connection of mysqlfailover: the driver.Conn that
// database/sql pools, around one physical go-sql-driver connection at a time, and its
// transaction proxy and session state.
//
// # Lifecycle
//
// Open asks the cluster.Cluster for a physical connection on the pool's host and sets
// the session up there. Before every call that talks to the server the connection passes
// a safe point (outside a transaction): if the pool has moved, it joins the pool's host,
// and if the pool is on a secondary and fall-back is due, it tries the primary; nothing
// has been sent, so the caller sees no error either way. One loop runs each call
// (attempts; a prepared statement's too, through stmt.Owner.Attempts): ready, the call,
// then fail's verdict.
//
// ExecContext and QueryContext share one path (statement): the query is classified once
// there (dialect.Classify), and its kind goes down with it, each file once: call.go runs
// the attempts; ready.go holds the safe point, txtrack.go what the kind meets there (a
// lost session state, a lost or ended transaction); call.go where the session goes
// (join, fallBack) and the run itself (runPrimary, runReplica); ran.go the one step after
// a statement succeeded on the primary session (ranHere), for every path: the tracker
// applies its effect on the transaction state, the database and what the session holds,
// and the txLog records it for replay. The rows are wrapped once, by statement.
//
// The primary session is a prim, which Conn embeds: the cluster handle, the physical
// connection, its tracker and txLog, and the methods that attach, drop, replace, set up
// and replay it. Conn keeps the driver's methods and those that decide (ready, fail).
//
// When a call fails, the error goes to one function, fail, which judges it once
// (failure.go: failureOf, from cluster.Judge) and carries that judgement to the helpers that
// act on it; the engine is told of a refusal once (Cluster.NoteRefusal). It decides:
//
//   - A data error is returned untouched and the connection stays.
//   - The caller's context ending is returned as the context error; the host is not
//     blamed, and a physical connection that go-sql-driver closed on cancel is replaced
//     on the pool's host at the next call.
//   - A communication error closes the physical connection, reports the host, walks to
//     the next host and restores the session there (read-only first, then the current
//     database, then autocommit and completion_type where a SET changed them), and only
//     then returns a *failover.FailoverError. A call that provably
//     sent nothing outside a transaction is repeated once on the new host instead:
//     no byte of it was written to the socket (sent; without the connector's socket
//     tracker, go-sql-driver's driver.ErrBadConn says so), whatever the error's name;
//     calls with no effect on data (PREPARE, PING, BEGIN, SET SESSION TRANSACTION) are
//     repeated once after any successful switch. A statement that may have run on a
//     host that answered the new session (Current == Failed) may still be running on
//     its old server thread: one that may have written is settled as a COMMIT is
//     (settleRun: the thread killed and gone, FailoverError.Settled), also inside a
//     lost transaction; a read's thread is only killed.
//
// Inside a transaction there is no switch and no fall-back. A communication error loses
// the transaction: that statement and every later statement of it return an error
// matching failover.ErrTxLost without running anywhere, Commit returns it too, and
// Rollback returns nil. A failure during COMMIT itself returns
// failover.ErrCommitOutcomeUnknown, once the old session's server thread is confirmed
// gone or could not be (settled: a *failover.CommitUnknownError says which). The
// connection has moved already, so the next transaction runs on the new host.
//
// A transaction BeginTx never saw counts the same. Every statement is classified on its
// way (a few byte comparisons for SELECT, INSERT, UPDATE and DELETE), and the connection
// follows its session's state: BEGIN, START TRANSACTION or XA START run as statements,
// any statement while autocommit is off (from the DSN or SET autocommit), table locks,
// pending SET TRANSACTION characteristics, until COMMIT, ROLLBACK, an implicit commit or
// UNLOCK TABLES end them. A state the statements do not tell (CALL, EXECUTE, an
// executable comment, a failed COMMIT) counts as open; before a move, MariaDB is asked
// (@@in_transaction). Once such a transaction is lost, every later call fails with
// failover.ErrTxLost, without being sent, until a COMMIT statement (which returns that
// error) or a ROLLBACK statement (which returns nil); IsValid is false meanwhile.
//
// A transaction the server rolled back while the session lived on (a deadlock, a lock
// wait timeout under innodb_rollback_on_timeout, Group Replication's 3101: failedWith in
// txended.go decides, asking the server after a 1205) is over the same way, in a Tx or
// opened by statements: its later calls fail with failover.ErrTxRolledBack unsent;
// ROLLBACK runs and ends that; COMMIT (and Tx.Commit) runs ROLLBACK instead and returns
// the error.
//
// State a session holds that no other session can be given (held.go) is followed the
// same way: dialect.Classify flags a statement whose text names a user variable, takes or
// releases a named lock, or reads LAST_INSERT_ID(), ROW_COUNT() or FOUND_ROWS() (two byte
// searches on the hot path), and ran records the locks, user variables and temporary
// tables in sessionFacts.has. While the session holds any, ready keeps it where it is
// (stays), as inside a transaction; ResetSession forgets them for the next user. A
// session lost anyway (discard, reconnect: noteGone) makes the next call fail with
// failover.ErrSessionStateLost, once (lostState).
//
// With transactionReplay (replay.go) the statements of an open transaction are recorded
// (noteStmt, noteFailed; rows through stmt.RowSink), and move runs them again on the new
// session (replayHere) before the failed call repeats there; stale does so for a
// session found dead while the transaction sat idle. A replay that differs is abandoned:
// its session is rolled back, or closed when the replay changed it beyond the
// transaction (a USE, a SET), so that no session is left in a state the connection does
// not believe. Without the option prim.log is nil.
//
// # Read-only
//
// The effective read-only state is the explicit flag (DSN readOnly, SetReadOnly) on the
// primary, and on a secondary true with failOverReadOnly or else the explicit flag, as
// Connector/J. It is applied with SET SESSION TRANSACTION READ ONLY / READ WRITE, on
// every switch before the error returns. ResetSession restores the DSN's flag for the
// next user of a pooled connection. With replicaReads, SetReadOnly and ResetSession
// send nothing to the primary session (SetReadOnly(true) is a read intent, and a read
// must not wait on the writer): the state is applied before its next statement (ready,
// applyReadOnly).
//
// # Pool hooks
//
// ResetSession is forwarded to the physical connection, so go-sql-driver's liveness
// check of idle connections keeps working. A physical connection that check finds stale,
// or whose host the pool has left, is dropped there, and the next call joins the pool's
// host before it sends anything; a session inside a transaction stays where it is.
// ResetSession never answers driver.ErrBadConn, which database/sql would pass as is to a
// caller queued at MaxOpenConns. IsValid is false once the physical connection is gone
// (with AllowSourceDown: unless a replica qualifies; a closed one is dropped first), and
// while a transaction opened by statements is lost.
//
// # Replica sessions
//
// With replicaReads (replica.go) a connection also uses read-only replica sessions, the
// pool's shared ones (cluster.Replicas.Take), holding one only while something needs it.
// route sends a read-intent statement there (the context's WithReadIntent, a ReadOnly
// BeginTx, SetReadOnly(true)) when it is a plain statement outside any transaction of
// the primary session, with autocommit on, using no user variable; the
// cluster chooses the replica. With AllowSourceDown, while a replica qualifies, Open
// opens no primary session: the first statement that needs one does (ready). Replica
// sessions have epochs with the replicaEpoch bit, so fail knows a replica's error from
// the primary's: failReplica runs the statement once more when its session broke before
// the result (nothing was written: the session is read-only), on the same replica when
// an idle session broke at once (its server restarted under it), else on another; it
// loses a read-only transaction, and never blames the host. A read-only transaction on
// a replica is judged by its own session only (primaryTx: the primary session's
// liveness, moves and failures never touch it; Ping pings its session), and its session
// goes back to the shared ones only after its COMMIT or ROLLBACK succeeded there and no
// statement of it changed the session (Tx.releaseReplica). Causal reads wait on the
// replica for the position of the connection's (or the pool's) last write, else the
// primary serves the read.
package conn
