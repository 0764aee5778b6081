package dialect

// The server error numbers the driver reads (mysql.MySQLError.Number), one constant
// each, named as MySQL's (or MariaDB's) ER_ names. Each comment says what the server
// means by it; errors.go groups them by meaning.
const (
	// ErrConCount is 1040 ER_CON_COUNT_ERROR (08004): max_connections is reached; the
	// server takes no new session now, and its others work.
	ErrConCount uint16 = 1040
	// ErrBadHost is 1042 ER_BAD_HOST_ERROR (08S01): the server cannot resolve the
	// client's address.
	ErrBadHost uint16 = 1042
	// ErrHandshake is 1043 ER_HANDSHAKE_ERROR (08S01): a bad handshake.
	ErrHandshake uint16 = 1043
	// ErrDBAccessDenied is 1044 ER_DBACCESS_DENIED_ERROR: the user may not use the
	// database.
	ErrDBAccessDenied uint16 = 1044
	// ErrAccessDenied is 1045 ER_ACCESS_DENIED_ERROR: a wrong user or password.
	ErrAccessDenied uint16 = 1045
	// ErrUnknownCom is 1047 ER_UNKNOWN_COM_ERROR (08S01). Galera sends it as "WSREP has
	// not yet prepared node for application use" from a node outside the Primary
	// component, not synced, or with wsrep_reject_queries set. A server without wsrep
	// sends it for a protocol command it does not know. Either way nothing ran.
	ErrUnknownCom uint16 = 1047
	// ErrBadDB is 1049 ER_BAD_DB_ERROR: the database does not exist.
	ErrBadDB uint16 = 1049
	// ErrServerShutdown is 1053 ER_SERVER_SHUTDOWN (08S01): the server is shutting
	// down.
	ErrServerShutdown uint16 = 1053
	// ErrParse is 1064 ER_PARSE_ERROR: a syntax error, also the answer of a server
	// that lacks a statement (SHOW REPLICA STATUS before MySQL 8.0.22, MariaDB 10.5.1).
	ErrParse uint16 = 1064
	// ErrForcingClose is 1080 ER_FORCING_CLOSE (08S01): the server closes the session
	// as it shuts down.
	ErrForcingClose uint16 = 1080
	// ErrIPSock is 1081 ER_IPSOCK_ERROR (08S01): the server cannot create its socket.
	ErrIPSock uint16 = 1081
	// ErrNoSuchThread is 1094 ER_NO_SUCH_THREAD: KILL found no such thread: it has
	// ended.
	ErrNoSuchThread uint16 = 1094
	// ErrHostIsBlocked is 1129 ER_HOST_IS_BLOCKED: max_connect_errors blocked the
	// client's address until an operator runs FLUSH HOSTS.
	ErrHostIsBlocked uint16 = 1129
	// ErrTableAccessDenied is 1142 ER_TABLEACCESS_DENIED_ERROR: the user may not read
	// or write the table.
	ErrTableAccessDenied uint16 = 1142
	// ErrAbortingConnection is 1152 ER_ABORTING_CONNECTION (08S01): the session was
	// aborted.
	ErrAbortingConnection uint16 = 1152
	// ErrNetPacketTooLarge is 1153 ER_NET_PACKET_TOO_LARGE (08S01): the request was
	// bigger than max_allowed_packet; the server closed the session without reading it.
	ErrNetPacketTooLarge uint16 = 1153
	// ErrNetReadErrorFromPipe is 1154 ER_NET_READ_ERROR_FROM_PIPE (08S01).
	ErrNetReadErrorFromPipe uint16 = 1154
	// ErrNetFcntl is 1155 ER_NET_FCNTL_ERROR (08S01).
	ErrNetFcntl uint16 = 1155
	// ErrNetPacketsOutOfOrder is 1156 ER_NET_PACKETS_OUT_OF_ORDER (08S01).
	ErrNetPacketsOutOfOrder uint16 = 1156
	// ErrNetUncompress is 1157 ER_NET_UNCOMPRESS_ERROR (08S01).
	ErrNetUncompress uint16 = 1157
	// ErrNetRead is 1158 ER_NET_READ_ERROR (08S01).
	ErrNetRead uint16 = 1158
	// ErrNetReadInterrupted is 1159 ER_NET_READ_INTERRUPTED (08S01): net_read_timeout
	// ran out while the server read the request.
	ErrNetReadInterrupted uint16 = 1159
	// ErrNetErrorOnWrite is 1160 ER_NET_ERROR_ON_WRITE (08S01).
	ErrNetErrorOnWrite uint16 = 1160
	// ErrNetWriteInterrupted is 1161 ER_NET_WRITE_INTERRUPTED (08S01):
	// net_write_timeout ran out while the server wrote the results.
	ErrNetWriteInterrupted uint16 = 1161
	// ErrErrorDuringCommit is 1180 ER_ERROR_DURING_COMMIT (HY000). A storage engine
	// answers it to a COMMIT it could not write. MariaDB's Galera answers it to a
	// commit it could not replicate, with the provider's status in the message
	// (LostPrimary).
	ErrErrorDuringCommit uint16 = 1180
	// ErrNewAbortingConnection is 1184 ER_NEW_ABORTING_CONNECTION (08S01).
	ErrNewAbortingConnection uint16 = 1184
	// ErrUnknownSystemVariable is 1193 ER_UNKNOWN_SYSTEM_VARIABLE: the server lacks the
	// variable, as MySQL lacks MariaDB's @@in_transaction and @@last_gtid.
	ErrUnknownSystemVariable uint16 = 1193
	// ErrTooManyUserConnections is 1203 ER_TOO_MANY_USER_CONNECTIONS: the user's
	// max_user_connections is reached.
	ErrTooManyUserConnections uint16 = 1203
	// ErrLockWaitTimeout is 1205 ER_LOCK_WAIT_TIMEOUT: the statement was rolled back,
	// or the whole transaction with innodb_rollback_on_timeout.
	ErrLockWaitTimeout uint16 = 1205
	// ErrLockDeadlock is 1213 ER_LOCK_DEADLOCK (40001): the whole transaction was
	// rolled back, always (InnoDB; Galera's certification failure too).
	ErrLockDeadlock uint16 = 1213
	// ErrUserLimitReached is 1226 ER_USER_LIMIT_REACHED: an hourly limit of the user
	// (max_connections_per_hour and its kin) is reached.
	ErrUserLimitReached uint16 = 1226
	// ErrSpecificAccessDenied is 1227 ER_SPECIFIC_ACCESS_DENIED_ERROR: the user lacks
	// a privilege the statement needs.
	ErrSpecificAccessDenied uint16 = 1227
	// ErrOptionPreventsStatement is 1290 ER_OPTION_PREVENTS_STATEMENT: an option
	// forbids the statement, most often read_only (also --secure-file-priv and others).
	ErrOptionPreventsStatement uint16 = 1290
	// ErrXARBDeadlock is 1614 ER_XA_RBDEADLOCK: the XA branch was rolled back for a
	// deadlock.
	ErrXARBDeadlock uint16 = 1614
	// ErrAccessDeniedNoPassword is 1698 ER_ACCESS_DENIED_NO_PASSWORD_ERROR: access
	// denied to a user without a password (an auth_socket user).
	ErrAccessDeniedNoPassword uint16 = 1698
	// ErrCantExecuteInReadOnlyTransaction is 1792
	// ER_CANT_EXECUTE_IN_READ_ONLY_TRANSACTION: a write in a read-only session or
	// transaction. The session made itself read-only, not the server.
	ErrCantExecuteInReadOnlyTransaction uint16 = 1792
	// ErrReadOnlyMode is 1836 ER_READ_ONLY_MODE: the server is read-only.
	ErrReadOnlyMode uint16 = 1836
	// ErrConnectionKilled is 1927 ER_CONNECTION_KILLED (MariaDB, 70100): KILL
	// CONNECTION from another session ended this one.
	ErrConnectionKilled uint16 = 1927
	// ErrServerOfflineMode is 3032 ER_SERVER_OFFLINE_MODE (HY000): MySQL's
	// offline_mode refuses sessions of users without CONNECTION_ADMIN (SUPER), at
	// connect and on their next statement.
	ErrServerOfflineMode uint16 = 3032
	// ErrTransactionRollbackDuringCommit is 3101
	// ER_TRANSACTION_ROLLBACK_DURING_COMMIT: Group Replication's certification failed
	// at COMMIT, and the transaction was rolled back.
	ErrTransactionRollbackDuringCommit uint16 = 3101
	// ErrGrpTrxConsistencyNotAllowed is 3796 ER_GRP_TRX_CONSISTENCY_NOT_ALLOWED: a
	// transaction with group_replication_consistency BEFORE or stronger, refused on a
	// member that is not ONLINE.
	ErrGrpTrxConsistencyNotAllowed uint16 = 3796
	// ErrGrpTrxConsistencyBeginNotAllowed is 3799
	// ER_GRP_TRX_CONSISTENCY_BEGIN_NOT_ALLOWED: Group Replication is stopping on the
	// member, which takes no new transaction.
	ErrGrpTrxConsistencyBeginNotAllowed uint16 = 3799
	// ErrClientInteractionTimeout is 4031 ER_CLIENT_INTERACTION_TIMEOUT (MySQL 8,
	// HY000): the server disconnected the idle session.
	ErrClientInteractionTimeout uint16 = 4031
)
