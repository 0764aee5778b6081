// Package dialect is what MySQL and MariaDB servers say and what they mean: what a
// statement's text does, their error numbers, what each error says of the session and
// the server, and how their answers read as rows and values. It holds no state and makes no decision: whether to fail
// over, retry or report is judged by its callers (internal/cluster, internal/conn and
// the module root), from the meanings named here.
//
// It imports only go-sql-driver/mysql, database/sql/driver and the standard library.
//
// # Files
//
//   - codes.go: every server error number the driver reads, one named constant each,
//     by MySQL's (or MariaDB's) own name.
//   - errors.go: what an error means: the server error an error holds (ServerError,
//     Number), a session the server ended (EndsSession), a refusal of a new session
//     (Full), a server not ready (NotReady, LostPrimary), read-only refusals, the
//     transactions the server rolled back (RolledBack, Conflict), and the one cut of the
//     driver.ErrBadConn chain (NotBadConn), for the engine's errors and the connection's.
//   - rows.go: one reader of a result's rows (Query, ReadRows), bounded and copied.
//   - values.go: one reader of a column value as text or integer (Text, Int).
//   - lex.go: the reading of a statement's text, in one place: the one SQL lexer
//     (comments, quotes, identifiers, whitespace), Classify, Statements and Each (a
//     Class packs a statement's Kind, the Clauses of a COMMIT or ROLLBACK and its routing
//     Flags), and the scanners of what it holds or changes (ScanHeld, TempTables,
//     ParseUse).
//   - classify.go, set.go: the kinds, clauses and flags, the keyword table and the
//     readers of each statement's rest, and SET.
//   - state.go, reread.go: what a statement leaves on its session that a replay lacks
//     (SessionState), and whether a failed read may run again (Rereadable).
package dialect
