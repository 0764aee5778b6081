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
//   - lex.go: the one SQL lexer: comments, quotes, identifiers, whitespace.
//   - classify.go, set.go: what a statement does (Classify, Statements: a Class packs
//     its Kind, the Clauses of a COMMIT or ROLLBACK and its routing Flags), and SET.
//   - held.go, state.go, reread.go: the scanners of session state a statement holds or
//     changes (ScanHeld, TempTables, SessionState, ParseUse) and whether a failed read
//     may run again (Rereadable).
package dialect
