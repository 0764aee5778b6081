// Package mysqlfailover is a database/sql driver for MySQL and MariaDB with
// client-side multi-host failover, as MySQL Connector/J's failover mode. When
// the host under a connection dies, hangs or is restarted, the connection
// moves to the next host, restores its session and only then returns the
// error, so the next statement runs on the new host. All connections of a pool
// share one failover state: one failure moves the whole pool, and the pool
// returns to the primary together when it is back. go-sql-driver/mysql speaks
// the protocol underneath, and every one of its DSN parameters still works.
//
// Importing the package registers the driver as "mysqlfailover":
//
//	import _ "github.com/mysqlfailover/mysqlfailover"
//
//	db, err := sql.Open("mysqlfailover",
//		"app:secret@tcp(db1:3306,db2:3306,db3:3306)/shop?readTimeout=2s&writeTimeout=2s")
//	if err != nil {
//		return err
//	}
//
// A configuration built in code goes through NewConnector and sql.OpenDB:
//
//	cfg, err := dsn.Parse("app:secret@tcp(db1:3306,db2:3306)/shop") // or dsn.NewConfig
//	if err != nil {
//		return err
//	}
//	cfg.RetriesAllDown = 5
//	c, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithLogger(slog.Default()))
//	if err != nil {
//		return err
//	}
//	db := sql.OpenDB(c) // db.Close closes c too
//
// One sql.DB has one Connector. Package dsn has Config and the option table,
// package failover the errors, events and statistics, package policy the types
// of a host policy layer (WithPolicy); package driver is the deprecated former
// import path.
//
// # The DSN
//
// A DSN is go-sql-driver's, with a comma-separated host list: the first host
// is the primary, the others are secondaries in order of preference
// ("db1:3306,db2:3306;dc=east"). Every parameter that is not one of the
// failover options goes to go-sql-driver, for every host. Set readTimeout (and
// writeTimeout): a host that stops answering without closing its connections
// is only noticed when a read times out. Package dsn has the syntax and the
// option table, the one description of every option
// (https://pkg.go.dev/github.com/mysqlfailover/mysqlfailover/dsn#hdr-Options).
//
// # Networks and dialers
//
// Every network go-sql-driver accepts works (package dsn, section Networks),
// dialled as go-sql-driver dials it: through the function registered with
// mysql.RegisterDialContext for the DSN's network when there is one, else with
// net.Dialer (a Config.MySQL.DialFunc set in code comes first). So an SSH
// tunnel or SOCKS dialer registered for "tcp" carries every connection, probes
// included, and a network of its own works with a host list and failover:
//
//	mysql.RegisterDialContext("tunnel", func(ctx context.Context, addr string) (net.Conn, error) {
//		return sshClient.DialContext(ctx, "tcp", addr)
//	})
//	db, err := sql.Open("mysqlfailover", "app:secret@tunnel(db1:3306,db2:3306)/shop")
//	if err != nil {
//		return err
//	}
//
// Register the function before sql.Open: a network that is neither tcp, tcp4,
// tcp6, unix nor registered makes sql.Open (NewConnector) fail with an error
// naming it. The driver wraps every socket the dialer returns, to count it
// (Stats) and to close it when active health leaves its host.
//
// A DSN of one host (one tcp host, or a unix socket) and no hostsURL (nor
// discoverHosts) has no failover: a connection is one attempt (retriesAllDown does not apply, as in
// Connector/J, whose failover needs several hosts) and a host that does not
// answer returns its own error, exactly as go-sql-driver would (the dialer's
// error, a *net.OpError, mysql.ErrNoTLS), not a *failover.NoHostAvailableError;
// errors of a session that breaks are the same as with several hosts.
//
// # What the caller sees
//
// Errors are values to test with errors.Is and errors.As; the driver never
// adds a password to one.
//
//   - A statement whose connection fails on a host that does not answer (down,
//     frozen, unreachable, shutting down) returns a *failover.FailoverError with
//     Failed != Current. By then the connection, and with it the whole pool, is
//     on the next host with its session restored; the statement was not run
//     again. MaybeExecuted says whether it may have run on Failed, Read
//     whether it was a read that may simply run again (a SELECT outside a
//     transaction that the driver can tell changes nothing: no locking clause, no
//     INTO, only built-in functions without effects, so not SLEEP, GET_LOCK,
//     NEXTVAL or a stored function; SafeToRetry says RetryStatement), and
//     errors.Is and errors.As reach the cause. Such an error is never Settled:
//     should Failed come back (a frozen host that resumes), the statement may
//     still run there, and data read there that lacks it proves nothing.
//   - A statement whose session ends while its host answers (a KILL, a packet
//     over max_allowed_packet, net_write_timeout, a query longer than
//     readTimeout, 1927, 4031) returns a FailoverError with Failed == Current:
//     the connection has a new session on the same host and the pool stays.
//     MaybeExecuted is false only when the statement provably did not run (1153).
//     Its server thread may still be running it (an UPDATE past readTimeout
//     that waits for a row lock lands when it gets the lock), and an autocommit
//     write is its own COMMIT: so, as for a COMMIT (below), a statement that may
//     have written is settled before the error returns. The driver kills its old
//     session through a new one and waits, at most 5 s within the caller's
//     context, until it has left the process list: with Settled the data is
//     final and tells whether the statement ran; without, Unsettled says why.
//     Inside a transaction the same frees the lost transaction's locks. A read
//     (Read) is killed without the wait, so that the server stops the work.
//   - A connection found broken before anything was sent (go-sql-driver's
//     driver.ErrBadConn, or its liveness check after an idle timeout, a KILL of
//     a sleeping connection, a restart) returns nothing: the statement runs
//     once, on a new session on the same host if it answers, else on the next
//     (inside a transaction, ErrTxLost: nothing was sent).
//   - A call on a connection whose session ended without the caller's doing
//     (its host died, a KILL, wait_timeout; with targetSessionAttrs read-write
//     or primary, its host found demoted at a write) while it held a named lock, a
//     temporary table or user variables, or that reads LAST_INSERT_ID(),
//     ROW_COUNT() or FOUND_ROWS() of that session, returns an error matching
//     failover.ErrSessionStateLost, once: see Session state.
//   - A failure inside a transaction (see Transactions) returns an error
//     matching failover.ErrTxLost and the FailoverError. Every later statement
//     of the transaction fails with ErrTxLost alone without running anywhere,
//     Commit (or a COMMIT statement) returns it, Rollback (or ROLLBACK) returns
//     nil, and the next transaction runs on the new host.
//   - A transaction the server rolled back while its session lived on (see
//     Transactions) is over: the statement that a deadlock (1213, also
//     Galera's certification failure) hit returns the server's
//     *mysql.MySQLError; a lock wait timeout (1205) that rolled back the whole
//     transaction returns it wrapped in an error matching
//     failover.ErrTxRolledBack. Every later statement of the transaction fails
//     with failover.ErrTxRolledBack without being sent, Commit (or COMMIT)
//     returns it, never nil, and Rollback (or ROLLBACK) returns nil.
//   - A failure during COMMIT (Commit, the statement, or one that commits
//     implicitly) matches failover.ErrCommitOutcomeUnknown and the
//     FailoverError: the commit may or may not have happened. A COMMIT can
//     still land after its socket failed (a semi-synchronous one commits when
//     its wait for an acknowledgement ends, even when killed), so before the
//     error returns the driver kills the old session through a new session to
//     its host and waits, at most 5 s within the caller's context, until it has
//     left the process list. The error is then a *failover.CommitUnknownError:
//     with Settled, the transaction has committed or rolled back for good, and
//     reading what it wrote tells which; without (the host did not answer, the
//     session did not end in time: Why says), the commit may still land, and
//     data read now that lacks it proves nothing.
//   - A statement that may have sent any byte to the server is never sent
//     again, whatever the underlying driver calls the failure: the socket
//     counts what was written. A LOAD DATA LOCAL INFILE cut mid-file (which
//     go-sql-driver reports as driver.ErrBadConn) gets the FailoverError with
//     MaybeExecuted, and its reader is not handed out again.
//   - When no host answers, the error is a *failover.NoHostAvailableError
//     (with a single host, the host's own error: see Networks and dialers)
//     naming every host with its last error, or why it was not tried (a host of
//     the wrong role reads "skipped: role is standby, wanted read-write"; with a
//     single host of the wrong role, too). With targetSessionAttrs read-write or
//     primary this is what every write gets while there is no writer (the primary
//     died or was demoted, nothing is promoted yet) although the replicas answer:
//     nothing was sent (SafeToRetry says RetryStatement), and the walk that follows
//     a promotion finds the new writer wherever it is in the list. When
//     the caller's context ended the walk, its Err is the context error, so
//     errors.Is(err, context.DeadlineExceeded) holds: test that first. The next
//     call walks again.
//   - A new connection that finds its host full (1040, 1203) waits for a slot,
//     25 ms doubling to 400 ms, for at most hostTimeout (5 s when hostTimeout is
//     0, which otherwise leaves only the caller's context), and the
//     caller sees nothing if one frees; then, or at once for 1226 and 1129, the
//     host's *mysql.MySQLError, wrapped with its address. The pool stays, and so
//     do the connections already on that host.
//   - A new connection whose handshake the pool's host closes or resets after
//     accepting the TCP connection (an overloaded listener during a deploy or
//     an autoscaling step, when many pools open their sessions at once) is
//     tried again on that host, 4 tries in all with pauses of 20-40 ms, then
//     40-80 ms, then 80-160 ms (within hostTimeout): the caller sees nothing if
//     one gets in. When every try is closed while the host answered the
//     connector otherwise (another session opened or read, a probe passed),
//     the caller gets an error naming the host and the attempts, wrapping the
//     driver's (never driver.ErrBadConn: nothing was sent), and the pool stays,
//     as for a full host; Stats counts HandshakeRetries and SessionsClosed. A
//     host that answers nothing meanwhile, or that another failure already put
//     into backoff, is down: the pool moves as before. A refused dial, a dial
//     that times out and a handshake that times out (a frozen host accepts TCP
//     and never greets) move it at once, as before.
//   - A host that refuses the credentials or lacks the database returns its
//     *mysql.MySQLError (1045, 1049, ...) wrapped with the host, and the walk
//     ends at once: every host would answer the same.
//   - When the caller's context ends, the error is context.Canceled or
//     context.DeadlineExceeded. That is not a host failure: nothing moves.
//   - A host that answers but refuses to work because it is not ready (a
//     Galera node outside the Primary component, 1047; MySQL's offline_mode,
//     3032; a Group Replication member not ONLINE, 3796) did not run the
//     statement: the pool leaves it, and the statement runs on the next ready
//     host without an error (inside a transaction, ErrTxLost; a refused COMMIT
//     committed nothing). See package failover, Readiness.
//   - A Galera node that leaves the Primary component while it replicates a
//     commit answers 1180 "Not connected to Primary Component": the pool leaves
//     it too, but the other nodes may have committed the write, so the caller
//     gets a FailoverError with MaybeExecuted (at COMMIT,
//     ErrCommitOutcomeUnknown; inside a transaction, ErrTxLost), never the raw
//     1180, and nothing runs again.
//   - A data error (duplicate key, syntax, the read-only rejections 1290 and
//     1792, a deadlock outside a transaction) is go-sql-driver's
//     *mysql.MySQLError, untouched, and the
//     connection stays. With targetSessionAttrs read-write or primary, a write
//     that a demoted primary rejects moves the pool instead (see package
//     failover, Roles).
//   - A return to the primary is silent.
//
// No error the driver returns matches driver.ErrBadConn once a statement may
// have reached a server, so database/sql never silently runs a statement a
// second time. SafeToRetry tells what may be run again:
//
//	switch mysqlfailover.SafeToRetry(err) {
//	case mysqlfailover.RetryStatement: // nothing of it ran, or it was a read: run the statement again
//	case mysqlfailover.RetryTransaction: // nothing of it is left: roll back, run the whole transaction again
//	case mysqlfailover.RetryNothing: // it may have run, or committed: read the data first, once Settled says it is final
//	}
//
// # Failover
//
// The pool moves as one: when a host is left, every other pooled connection on
// it switches at its next safe point, with nothing sent and no error for its
// caller, and database/sql's ResetSession and IsValid retire the connections
// that cannot. A safe point is before a statement or BeginTx outside a
// transaction (after Commit or Rollback, the next call), or when a connection
// opens.
//
// A dead session is not a dead host. go-sql-driver reports most failures of a
// session (a crash, a reset, a read timeout, and on MariaDB a KILL of a busy
// connection) as mysql.ErrInvalidConn or EOF, which say only that one session
// died. Before such a failure moves the pool, the driver decides whether the
// host is down: it is when the pool has already left it, its probes failed, a
// connection attempt to it failed a moment ago, or the server said it is
// shutting down (1053, 1080). Otherwise one attempt opens a new session on the
// same host, shared by every session of the host that fails at the same
// moment. When the server itself ended the session (1927, 4031, 1153,
// 1159/1161) the attempt gets the usual bounds; otherwise at most four times
// the host's usual connect time, at least 50 ms, so that a frozen host (which
// accepts TCP and never greets) costs the pool 50 ms more, not hostTimeout. A
// host that answers keeps the pool (failover.EventSessionEnded); one that does
// not is left (EventHostFailed, EventSwitch). So a query that outlives
// readTimeout on a live primary fails alone, and readTimeout remains the
// detector of a host that hangs without closing its sockets.
//
// Failures to connect that belong to one host (a refusal, a timeout, a full
// host, a TLS handshake or certificate failure, a malformed greeting) send the
// walk on to the next host, and the NoHostAvailableError lists each host's own
// error. A refusal every host would repeat (access denied, an unknown database,
// any other server error, an authentication plugin go-sql-driver cannot use)
// ends the walk at once. Package failover describes the host order, the
// backoff of failing hosts, roles, data centres and host policies.
//
// A host that hangs (frozen, blackholed: no reset, no close) is only noticed
// through a timeout: the statement in flight fails after readTimeout with the
// FailoverError and the connection moves on. A caller's context alone cannot
// tell a hung host from a slow query, so it never blames the host; the
// reconnect that follows is bounded by hostTimeout and by a share of the
// caller's remaining time, so the walk still gets past a hung primary within
// request deadlines down to about 300 ms. Below that, or for a primary whose
// handshakes are slow, only readTimeout and hostTimeout detect it, or active
// health.
//
// Active health (checkInterval > 0) probes every host from a monitor
// goroutine, leaves a failing host after failoverDelay, aborting the
// statements in flight there, and returns after switchBackDelay of passed
// probes: package failover, section Active health, describes it, and package
// dsn's Options give the probe timeouts and the bound they set on detection.
//
// Wrappers that call only the driver's Open method, not OpenConnector (a
// driver.Driver wrapper without driver.DriverContext), get connections that
// share one Connector per DSN string, so their pool moves as one and probes
// and hostsURL work there too. Their sql.DB.Close cannot reach that Connector,
// so it counts its open connections and closes itself 5 s after
// the last one closed, unless a connection is opened meanwhile: its monitor
// stops and its probe connections close, and the next connection makes a new
// Connector with a fresh state. ConnectorOf finds it; its Close ends it at once.
// Wrappers that pass OpenConnector on (ngrok/sqlmw, luna-duclos/instrumentedsql)
// get one Connector per sql.DB, but if their connector is not an io.Closer,
// sql.DB.Close does not reach ours either: close it yourself (ConnectorOf(ctx, db).Close).
//
// # Fall-back
//
// Once on a secondary, the pool returns to the primary at a safe point when
// secondsBeforeRetryMaster have passed or queriesBeforeRetryMaster statements
// ran (counted over the whole pool); both 0 disable it. One connection tries
// the primary for the whole pool; if it does not answer, or answers with an
// error (a locked account, say), the pool stays and both clocks restart,
// silently. Each failed attempt costs one caller one connection attempt: quick
// when refused, up to hostTimeout when the primary hangs. After a failed
// attempt the statement count triggers again no sooner than 250 ms later
// (Connector/J has no such pause; without it a busy pool would try a dead
// primary every few milliseconds); set queriesBeforeRetryMaster=0 to rely on
// the timer alone. Idle connections still on the old host drop their session
// in ResetSession when database/sql hands them out, and join the pool's host
// before the caller's statement. A fall-back never moves the pool from one
// writable host to another unless the cluster's replicas follow the primary
// (package failover, Two writers).
//
// # Transactions
//
// A transaction lives and dies on one host: inside one there is no switch and
// no fall-back, and a failure loses it (ErrTxLost) while the connection still
// moves, ready for the next one. Inside means the server session's state,
// however it was opened. The server flags an open transaction in every OK
// packet, but go-sql-driver keeps the flag to itself, so the driver follows
// the statements (case and leading comments do not matter; with
// multiStatements each one counts): BEGIN, START TRANSACTION and XA START open
// one; COMMIT, ROLLBACK and XA COMMIT|ROLLBACK end it (AND CHAIN opens the
// next; after RELEASE the session is replaced on the same host), ROLLBACK TO
// SAVEPOINT does not; with autocommit=0 (DSN or SET) every statement opens one;
// implicit commits (DDL, GRANT, ...; not CREATE or DROP TEMPORARY TABLE) end
// it; LOCK TABLES holds until UNLOCK TABLES. After CALL, EXECUTE, an executable
// comment or a failed COMMIT the state is unknown and counts as open: before
// moving, the driver asks MariaDB (SELECT @@in_transaction); MySQL has no such
// variable, so there it stays open until COMMIT or ROLLBACK. A transaction
// opened by statements counts as one opened by BeginTx: once lost, every call
// (Ping, Prepare and BeginTx too) fails with ErrTxLost unsent, until ROLLBACK
// (nil) or COMMIT (ErrTxLost), and IsValid is false meanwhile, so database/sql
// retires such a pooled connection instead of handing it on.
//
// The server ends a transaction on its own too, while the session lives on: a
// deadlock (1213) always rolls back the whole transaction, on MySQL and
// MariaDB, and so does Galera's certification failure (also a 1213) and Group
// Replication's (3101, at COMMIT); a lock wait timeout (1205) rolls back only
// the statement unless innodb_rollback_on_timeout is ON. From then on the
// server runs each statement on its own (autocommit), so code that logs the
// error and carries on would commit the rest of its transaction without the
// part the server threw away. The driver refuses those statements instead,
// as PostgreSQL refuses those of an aborted transaction: inside a Tx or a
// transaction opened by statements, every later call fails with
// failover.ErrTxRolledBack (which also matches ErrTxLost and wraps the
// server's error) without being sent, until ROLLBACK, which runs and returns
// nil. Commit and COMMIT do not run: ROLLBACK runs instead (with COMMIT's AND
// CHAIN or RELEASE), and they return the error, never nil, so no part of the
// transaction commits. After a 1205 the driver asks the server what it rolled
// back, once: MariaDB's @@in_transaction (0: the transaction), or on MySQL,
// which has no such variable, innodb_rollback_on_timeout (read once per
// session); a 1205 that rolled back only the statement passes through as it
// is, and the transaction goes on. When the server cannot be asked (results
// still being read) or does not answer, the transaction counts as rolled back.
// A COMMIT that fails with 1213 or 3101 ended its transaction; an XA
// transaction is left to the server, which refuses the statements of a
// rolled-back branch itself (1614). After CALL or EXECUTE, whose effect the
// driver cannot see, an open transaction counts as possible: a deadlock then
// refuses the later statements too, until ROLLBACK.
//
// RunInTx runs a function in a transaction and runs it again, in a fresh
// transaction, whenever nothing of the last one committed (SafeToRetry says
// RetryTransaction or RetryStatement): after a failover on the pool's new
// host, after a deadlock on the same one. Because the function runs again,
// not a record of its statements, everything it computes is computed afresh
// (NOW(), UUID(), auto-increment ids, the reads its decisions rest on); it
// must have no effects outside the transaction. After a COMMIT whose outcome
// is unknown it runs again only when the driver settled it and
// RunOptions.Committed then says the commit did not happen. A deadlock or
// another conflict is run again until the transaction commits (at most
// RunOptions.ConflictAttempts runs, 50), failures of the connection at most
// RunOptions.Attempts (5):
//
//	func takeOne(ctx context.Context, db *sql.DB, item int) error {
//		return mysqlfailover.RunInTx(ctx, db, nil, func(tx *sql.Tx) error {
//			_, err := tx.ExecContext(ctx, "UPDATE stock SET n = n - 1 WHERE item = ?", item)
//			return err
//		})
//	}
//
// # Transaction replay
//
// For code that cannot be restructured around RunInTx, transactionReplay=true
// (off by default; package dsn has the limits) makes the driver itself run a
// transaction again when its connection fails inside it, as MaxScale's
// transaction_replay and MariaDB Connector/J's transactionReplay do. While a
// transaction is open (a Tx, or one opened by statements) every statement
// that succeeded or failed is recorded with a copy of its arguments and a
// digest of what the application saw: the rows affected and the insert id
// when it asked for them, the error it got, every value of every row it read
// (the columns and how many rows, and whether it read to the end). When the
// connection fails, the driver switches, then on the new session runs BEGIN
// with the same options and each statement again (prepared again where it
// was prepared), comparing each result with the record; then the interrupted
// statement runs there and its own result goes to the caller. A difference
// (NOW(), UUID(), @@server_id, an auto-increment id the application read, a
// row the new primary lacks, an error that is not the same) rolls the
// replay back (a replay that had switched the session's database or run a
// SET closes that session instead: the next statement runs on a new one, in
// the database the connection is in), and the caller gets failover.ErrTxLost
// with an error that names the statement; a replay whose new session fails
// too runs again on the next one. Stats counts the replays (TxReplays), the differences
// (TxReplayMismatches) and the transactions refused (TxReplayTooBig,
// TxReplayUnsafe); failover.EventTxReplay reports each.
//
// A COMMIT is never replayed, in any spelling (COMMIT, commit work behind a
// comment, a prepared COMMIT, Tx.Commit), nor a statement that commits
// implicitly: its failure stays failover.ErrCommitOutcomeUnknown (Connector/J
// matches the text "COMMIT" and can commit twice). An autocommit statement is
// never recorded, so never replayed. These transactions fail with
// failover.ErrTxLost, as without replay, the error saying why: one that used
// what a new session lacks (a temporary table, a user variable, GET_LOCK,
// LOCK TABLES, anywhere on the session), characteristics SET TRANSACTION
// gave it (BeginTx's TxOptions are replayed), XA, CALL and EXECUTE and other
// statements whose effect the driver cannot read, LOAD DATA LOCAL, a
// multi-statement batch, an argument that cannot be copied, or more than
// transactionReplayMaxSize recorded (1 MiB). A failure while the application
// reads a result loses the transaction too: the rows it has read cannot be
// given again.
//
// What no replay can catch: the comparison covers what the application saw,
// not what the statements did unseen. After an asynchronous failover the new
// primary may lack commits the old one made: a blind UPDATE c = c + 1 (or an
// INSERT ... SELECT, a DELETE ... LIMIT) replays with the same rows-affected
// count on different data, and only a read of the row would show it; read
// what a transaction's decisions rest on (SELECT ... FOR UPDATE), or use
// semi-synchronous replication or Galera. Writes to tables of
// non-transactional engines (MyISAM, Aria, MEMORY) and sequences (NEXTVAL)
// do not roll back with the old session, so a replay repeats them. A
// statement's effect outside the database (a UDF, a trigger calling out) runs
// again. A session variable set by hand before the transaction (SET SESSION
// sql_mode) is not carried to the new session (see Session state), so the
// replay may run under other rules. Where those matter, use RunInTx, whose
// reruns compute everything afresh.
//
// # Session state
//
// A switch carries the read-only state, the current database (the DSN's, or
// the last USE of a bare, backquoted or (ANSI_QUOTES) double-quoted name run
// through the connection, with comments around it or inside a multi-statement), autocommit and completion_type when a SET changed them,
// and everything set through DSN parameters (go-sql-driver applies system
// variables, charset, collation and time zone to every new physical
// connection). It does not carry state set by hand with SET SESSION, user
// variables, temporary tables or locks: put session settings in the DSN
// instead (...?sql_mode='STRICT_ALL_TABLES'&time_zone='%2B00:00'). A *sql.Stmt
// prepares itself again on the new host before it runs.
//
// State that cannot move is never dropped silently. From each statement's
// text the driver follows what a session holds that no other session can be
// given: named locks (each GET_LOCK counts, whatever it returned, until as
// many RELEASE_LOCK or one RELEASE_ALL_LOCKS), temporary tables (from CREATE
// TEMPORARY TABLE until a DROP [TEMPORARY] TABLE of that name; one renamed
// counts under its first name) and user variables (once a statement names
// one: a session cannot unset it). While a session holds any of them the
// driver does not move it: the fall-back and the pool's moves (another
// connection's failover, SwitchTo, the monitor) wait, as for a transaction,
// and its statements run where it is until one finds it holding none. A
// statement that reads a value of the last statement, LAST_INSERT_ID()
// without an argument, ROW_COUNT() or FOUND_ROWS(), is never the first on a
// session the driver moved to. When the session ends anyway (its host died,
// a KILL, wait_timeout; with targetSessionAttrs read-write or primary, a write
// found its host demoted: the connection leaves for the writer, and the write
// is not run), the next call on the connection returns an error
// matching failover.ErrSessionStateLost, once, and the connection carries on.
// Its *failover.SessionStateError names the host and what was lost; it wraps
// the FailoverError when that call met the failure (it is not run again, even
// when it was not sent), else the call was not sent. SafeToRetry says
// RetryNothing: rebuild the state, then run again what relied on it. A Tx
// that took the state itself reports ErrTxLost alone: running it again takes
// the state again, so RunInTx does.
//
// What is not covered: LAST_INSERT_ID() and ROW_COUNT() are known lost only
// when the call that reads them is the first after the session ended; read
// later, they are the new session's. Result.LastInsertId and RowsAffected
// come with a statement's own answer and never depend on the session: prefer
// them. State set where the driver cannot read it (inside a stored procedure
// or trigger, through PREPARE ... FROM) is not known, and a statement that
// fails counts for nothing.
//
// Pools: database/sql gives a pooled call no claim on what an earlier call
// left on a session, since each call may get another connection. So when it
// hands a connection to its next user (ResetSession), the driver forgets what
// the session held: the connection then moves with the pool, and what it held
// is lost without a word. Keep state that must last across calls on one
// *sql.Conn (DB.Conn) or in a *sql.Tx. Such a connection stays on its host
// while the pool has moved, and its statements run there (after a failover,
// beside the host the pool writes to): release the state, or close the
// *sql.Conn, to let it follow.
//
// Read-only: on the primary a session follows the explicit flag (DSN readOnly,
// Conn.SetReadOnly); on a secondary with failOverReadOnly=true (which
// targetSessionAttrs read-write and primary switch off) it is always
// read-only (SetReadOnly(false) is recorded and applied once back on the
// primary, as in Connector/J), and with failOverReadOnly=false it follows the
// flag. A pooled connection gets the DSN's flag back when database/sql hands
// it to its next user. BeginTx with ReadOnly works as in go-sql-driver. On a
// replica whose global read_only is on, a write in a read-only session gets
// either error: MariaDB 10.11 answers a plain statement with 1290 and a
// prepared one (any Exec with arguments) with 1792, so code that recognises a
// replica's refusal must match both.
//
// Idle connections: database/sql runs go-sql-driver's liveness check (a
// non-blocking read) when it hands a pooled connection out, and the driver
// runs it too before the next call of a pinned *sql.Conn or a transaction that
// sat idle for a second or more. A session the server closed meanwhile
// (wait_timeout, a KILL of a sleeping connection, also behind a TCP proxy) is
// replaced on the same host before anything is sent. A physical connection
// that go-sql-driver closed because its caller cancelled is replaced on the
// pool's host at the next call (or database/sql discards it).
//
// # Read/write splitting
//
// With replicaReads=true, statements that carry a read intent go to a replica:
// a host other than the one the pool writes to, whose probes pass, that is
// read-only, within maxReplicaLag, of the local DC first. The intents are a
// context from WithReadIntent, BeginTx with sql.TxOptions{ReadOnly: true}, and
// a connection after SetReadOnly(true) (see WithReadIntent for what stays on
// the primary all the same). An autocommit read that fails on a replica before
// its result started runs once more on another one; inside a read-only
// transaction the failure is failover.ErrTxLost, as on the primary. Package
// dsn's Read/write splitting section has the options: how replicas are chosen
// and bounded, the replica sessions the pool's connections share, what a read
// does with no replica left, and causal reads. Stats and failover.EventReplica
// say which replica served, or why a host serves none.
//
// # Reaching the Connector and the connection
//
// ConnectorOf finds the Connector behind any *sql.DB (sql.Open, sql.OpenDB,
// GORM, sqlx, otelsql), for Stats and SwitchTo. ConnOf finds the Conn behind
// the value (*sql.Conn).Raw passes, through wrappers, for Host, ReadOnly and
// SetReadOnly:
//
//	err = sqlConn.Raw(func(dc any) error {
//		c, ok := mysqlfailover.ConnOf(dc)
//		if !ok {
//			return errors.New("not a mysqlfailover connection")
//		}
//		log.Printf("on %s, read-only %v", c.Host(), c.ReadOnly())
//		return c.SetReadOnly(ctx, true)
//	})
//
// # Logs and events
//
// The driver logs nothing of its own unless given WithLogger, which logs every
// state change to a *slog.Logger; WithEventHook receives each failover.Event.
// Neither ever carries a password. WithEventHook may be given more than once:
// a hook of yours and a metrics collector's each receive every event. The log
// tells an outage once per host and state: a host that went down is one Warn
// record, the switch another; while it stays down, the failed fall-backs, the
// failed attempts and every other connection's report of it are Debug records,
// with a Warn reminder at most once a minute; its return is one Info record.
//
// # Metrics
//
// Three packages export Stats and the events as metrics, each outside this
// module's dependencies except the last: metrics/prometheus (a
// prometheus.Collector, package mysqlfailoverprom), metrics/otel (OpenTelemetry
// instruments, package mysqlfailoverotel), both nested modules, and
// metrics/expvar (the standard library's expvar, package mysqlfailoverexpvar).
// The first two need the events for their histograms (probe latency, walk
// duration), so build the connector with their Option:
//
//	col := mysqlfailoverprom.New()
//	c, err := mysqlfailover.NewConnector(cfg, col.Option())
//	if err != nil {
//		return err
//	}
//	col.SetConnector(c)
//	prometheus.MustRegister(col)
//
// The command mysqlfailover check (cmd/mysqlfailover, a nested module) shows
// each host of a DSN, the host plan and the problems it finds.
//
// go-sql-driver logs on its own: when a connection breaks it prints lines such as
//
//	[mysql] 2026/12/01 10:00:00 packets.go:58 unexpected EOF
//
// before this driver handles the failure, one per connection. With WithLogger
// they go to its logger instead, at Debug, with the host and source
// "go-sql-driver", unless Config.MySQL.Logger holds a logger of your own
// (other than go-sql-driver's default). Without WithLogger they go to
// go-sql-driver's logger (stderr by default), as without this driver:
// mysql.SetLogger, called before the DSN is parsed (before sql.Open), routes or
// silences them; Config.MySQL.Logger does it for one pool.
package mysqlfailover
