package conn

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

var kindNames = map[stmt.Kind]string{
	kPlain: "plain", kUse: "use", kBegin: "begin", kXAStart: "xa-start", kXAPrepare: "xa-prepare",
	kXACommit: "xa-commit", kXARollback: "xa-rollback", kCommit: "commit", kRollback: "rollback",
	kACOn: "autocommit-on", kACOff: "autocommit-off", kACUnknown: "autocommit-unknown",
	kCTNoChain: "completion-no-chain", kCTChain: "completion-chain", kCTRelease: "completion-release",
	kCTUnknown: "completion-unknown", kSetTx: "set-transaction", kImplicit: "implicit-commit",
	kMaybe: "maybe-commit", kLockTables: "lock-tables", kLock: "lock", kUnlock: "unlock",
	kUnknown: "unknown", kBatch: "batch", kEmpty: "empty",
}

func kindName(k stmt.Kind) string {
	s := kindNames[k&kClass]
	if s == "" {
		s = fmt.Sprintf("kind(%d)", k&kClass)
	}
	for _, f := range []struct {
		bit  stmt.Kind
		name string
	}{{fChain, "chain"}, {fNoChain, "no-chain"}, {fRelease, "release"}, {fNoRelease, "no-release"},
		{fSession, "session"}, {fTemp, "temporary"}, {fHolds, "holds"}, {fLastID, "last-insert-id"},
		{fRowCount, "row-count"}, {fFoundRows, "found-rows"}} {
		if k&f.bit != 0 {
			s += "+" + f.name
		}
	}
	return s
}

// classifyCases is the classifier's table; it also seeds FuzzClassify. multi marks the
// cases read with multiStatements.
var classifyCases = []struct {
	q     string
	multi bool
	want  stmt.Kind
}{
	// the hot path and plain statements
	{q: "SELECT 1", want: kPlain},
	{q: "select * from t", want: kPlain},
	{q: "INSERT INTO t VALUES (1)", want: kPlain},
	{q: "UPDATE t SET a = 1", want: kPlain},
	{q: "DELETE FROM t", want: kPlain},
	{q: "delete`t`", want: kPlain},
	{q: "SELECT 1; COMMIT", want: kPlain}, // without multiStatements only the first statement exists
	{q: "REPLACE INTO t VALUES (1)", want: kPlain},
	{q: "SHOW TABLES", want: kPlain},
	{q: "DO 1", want: kPlain},
	{q: "(SELECT 1) UNION (SELECT 2)", want: kPlain},
	{q: "WITH x AS (SELECT 1) SELECT * FROM x", want: kPlain},
	{q: "SET sql_mode = 'ANSI'", want: kPlain | fSession},
	{q: "SET @autocommit = 0", want: kPlain | fSession | fHolds}, // a user variable
	{q: "SET NAMES utf8mb4", want: kPlain | fSession},
	{q: "PREPARE s FROM 'COMMIT'", want: kPlain},
	{q: "DEALLOCATE PREPARE s", want: kPlain},
	{q: "DROP PREPARE s", want: kPlain},
	{q: "LOAD DATA INFILE 'x' INTO TABLE t", want: kPlain},
	{q: "ANALYZE SELECT 1", want: kPlain},
	{q: "SELECT /*!40001 SQL_NO_CACHE */ * FROM t", want: kPlain},
	{q: "  SELECT /*!40001 SQL_NO_CACHE */ 1", want: kPlain},
	{q: "Q0", want: kPlain},
	{q: "use shop", want: kUse},
	{q: "/* c */ USE shop", want: kUse},
	// no change inside a transaction
	{q: "SAVEPOINT s1", want: kPlain},
	{q: "RELEASE SAVEPOINT s1", want: kPlain},
	{q: "ROLLBACK TO s1", want: kPlain},
	{q: "ROLLBACK TO SAVEPOINT s1", want: kPlain},
	{q: "rollback work to savepoint s1", want: kPlain},
	{q: "XA END 'x'", want: kPlain},
	{q: "XA RECOVER", want: kPlain},
	// begin
	{q: "BEGIN", want: kBegin},
	{q: "begin work", want: kBegin},
	{q: "BEGIN;", want: kBegin},
	{q: "  BEGIN  ", want: kBegin},
	{q: "START TRANSACTION", want: kBegin},
	{q: "start transaction read only", want: kBegin},
	{q: "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ WRITE", want: kBegin},
	{q: "/* app */ START TRANSACTION", want: kBegin},
	{q: "-- app\nSTART TRANSACTION", want: kBegin},
	{q: "# app\nSTART TRANSACTION", want: kBegin},
	{q: "/**/BEGIN", want: kBegin},
	{q: "\t\r\n BeGiN", want: kBegin},
	{q: "BEGIN NOT ATOMIC SELECT 1; END", want: kUnknown},
	{q: "BEGIN x", want: kUnknown},
	{q: "XA START 'x'", want: kXAStart},
	{q: "xa begin 'x'", want: kXAStart},
	// end
	{q: "COMMIT", want: kCommit},
	{q: "commit work", want: kCommit},
	{q: "COMMIT;", want: kCommit},
	{q: "COMMIT -- done", want: kCommit},
	{q: "/* tx */ COMMIT", want: kCommit},
	{q: "COMMIT AND NO CHAIN", want: kCommit | fNoChain},
	{q: "COMMIT AND CHAIN", want: kCommit | fChain},
	{q: "COMMIT WORK AND CHAIN NO RELEASE", want: kCommit | fChain | fNoRelease},
	{q: "COMMIT RELEASE", want: kCommit | fRelease},
	{q: "COMMIT AND NO CHAIN RELEASE", want: kCommit | fNoChain | fRelease},
	{q: "COMMIT AND CHAIN RELEASE", want: kUnknown}, // the server refuses it
	{q: "COMMIT AND", want: kUnknown},
	{q: "COMMIT x", want: kUnknown},
	{q: "COMMIT /*!50000 AND CHAIN */", want: kUnknown},
	{q: "ROLLBACK", want: kRollback},
	{q: "rollback work", want: kRollback},
	{q: "ROLLBACK AND CHAIN", want: kRollback | fChain},
	{q: "ROLLBACK NO RELEASE", want: kRollback | fNoRelease},
	{q: "ROLLBACK RELEASE", want: kRollback | fRelease},
	{q: "XA COMMIT 'x'", want: kXACommit},
	{q: "XA COMMIT 'x' ONE PHASE", want: kXACommit},
	{q: "XA ROLLBACK 'x'", want: kXARollback},
	{q: "XA PREPARE 'x'", want: kXAPrepare},
	{q: "XA FOO", want: kUnknown},
	// SET autocommit
	{q: "SET autocommit = 0", want: kACOff},
	{q: "SET autocommit=1", want: kACOn},
	{q: "set AUTOCOMMIT := OFF", want: kACOff},
	{q: "SET autocommit = on", want: kACOn},
	{q: "SET autocommit = TRUE", want: kACOn},
	{q: "SET autocommit = false", want: kACOff},
	{q: "SET autocommit = 'OFF'", want: kACOff},
	{q: `SET autocommit = "on"`, want: kACOn},
	{q: "SET @@autocommit = 0", want: kACOff},
	{q: "SET @@session.autocommit = 0", want: kACOff},
	{q: "SET @@SESSION.autocommit = 1", want: kACOn},
	{q: "SET @@local.autocommit = 0", want: kACOff},
	{q: "SET SESSION autocommit = 0", want: kACOff},
	{q: "SET LOCAL autocommit = 0", want: kACOff},
	{q: "SET `autocommit` = 0", want: kACOff},
	{q: "SET autocommit = 0;", want: kACOff},
	{q: "SET autocommit=0, sql_mode='x'", want: kACOff},
	{q: "SET sql_mode = CONCAT('a', ','), autocommit = 0", want: kACOff},
	{q: "SET @a = (SELECT 1, 2), autocommit = 1", want: kACOn | fHolds},
	{q: "SET GLOBAL autocommit = 0", want: kPlain | fSession},
	{q: "SET @@global.autocommit = 0", want: kPlain | fSession},
	{q: "SET PERSIST autocommit = 0", want: kPlain | fSession},
	{q: "SET GLOBAL sql_mode = '', SESSION autocommit = 0", want: kACOff},
	{q: "SET GLOBAL sql_mode = '', autocommit = 0", want: kPlain | fSession}, // GLOBAL holds for what follows
	{q: "SET GLOBAL sql_mode = '', @@autocommit = 0", want: kACUnknown},      // the scope is not clear
	{q: "SET autocommit = @v", want: kACUnknown | fHolds},
	{q: "SET autocommit = DEFAULT", want: kACUnknown},
	{q: "SET autocommit = '0'", want: kACUnknown},
	{q: "SET autocommit = 1 + 0", want: kACUnknown},
	{q: "SET autocommit = ?", want: kACUnknown},
	{q: "SET autocommit = 0, autocommit = 1", want: kUnknown},
	{q: "SET autocommit = 0 junk", want: kACUnknown},
	{q: "SET autocommit", want: kUnknown},
	{q: "SET /*!50000 GLOBAL */ autocommit = 0", want: kUnknown},
	// every item of a SET list, in any order (each checked on MariaDB 10.11)
	{q: "SET NAMES utf8mb4, autocommit = 0", want: kACOff},
	{q: "SET autocommit = 0, NAMES utf8mb4", want: kACOff},
	{q: "SET NAMES utf8mb4 COLLATE utf8mb4_bin, autocommit = 0", want: kACOff},
	{q: "SET NAMES 'utf8mb4' COLLATE 'utf8mb4_bin', autocommit = 0", want: kACOff},
	{q: "SET NAMES DEFAULT, completion_type = 1", want: kCTChain},
	{q: "SET CHARACTER SET utf8mb4, autocommit = 0", want: kACOff},
	{q: "set charset 'utf8', @@session.autocommit = 0", want: kACOff},
	{q: "SET NAMES utf8mb4, NAMES latin1, autocommit = 0", want: kACOff},
	{q: "SET @a = 1, NAMES utf8, autocommit = 0", want: kACOff | fHolds},
	{q: "SET NAMES utf8mb4, sql_mode = CONCAT('a', ','), autocommit = 0", want: kACOff},
	{q: "SET SESSION sql_mode = '', NAMES utf8mb4, autocommit = 0", want: kACOff},
	{q: "SET GLOBAL sql_mode = DEFAULT, NAMES utf8mb4, autocommit = 0", want: kPlain | fSession}, // GLOBAL holds past NAMES
	{q: "SET NAMES utf8mb4, autocommit = 0, completion_type = 1", want: kUnknown},
	{q: "SET CHARACTER utf8, autocommit = 0", want: kUnknown}, // not CHARACTER SET
	{q: "SET NAMES 'utf8, autocommit = 0", want: kUnknown},
	{q: "SET ROLE NONE, autocommit = 0", want: kACOff},
	{q: "SET autocommit = 0, ROLE NONE", want: kACOff},
	{q: "SET ROLE NONE", want: kPlain | fSession},
	{q: "SET ROLE r1, r2", want: kPlain | fSession}, // MySQL: several roles
	{q: "SET ROLE ALL EXCEPT 'r1'@'%', 'r2'", want: kPlain | fSession},
	{q: "SET DEFAULT ROLE NONE", want: kImplicit}, // it commits (MariaDB 10.11: @@in_transaction 0 after it)
	{q: "SET DEFAULT ROLE r FOR u@localhost", want: kImplicit},
	{q: "SET DEFAULT ROLE ALL TO 'u1'@'%', u2", want: kImplicit}, // MySQL
	{q: "SET sql_mode = DEFAULT, DEFAULT ROLE NONE", want: kImplicit},
	{q: "SET PASSWORD FOR 'u'@'%' = PASSWORD('x')", want: kImplicit},
	{q: "SET sql_mode = DEFAULT, PASSWORD = PASSWORD('x')", want: kImplicit},
	{q: "SET PASSWORD = 'x', autocommit = 0", want: kUnknown}, // it commits, then autocommit is off
	{q: "SET DEFAULT ROLE NONE, autocommit = 0", want: kUnknown},
	{q: "SET GLOBAL default.key_buffer_size = 1, SESSION autocommit = 0", want: kACOff},
	{q: "SET @@global.my_cache.key_buffer_size = 0", want: kPlain | fSession},
	// SET completion_type, SET TRANSACTION
	{q: "SET completion_type = 1", want: kCTChain},
	{q: "SET completion_type = 'RELEASE'", want: kCTRelease},
	{q: "SET SESSION completion_type = NO_CHAIN", want: kCTNoChain},
	{q: "SET completion_type = @x", want: kCTUnknown | fHolds},
	{q: "SET autocommit = 0, completion_type = 1", want: kUnknown},
	{q: "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", want: kSetTx},
	{q: "set transaction read only", want: kSetTx},
	{q: "SET @@transaction_isolation = 'READ-COMMITTED'", want: kSetTx},
	{q: "SET @@session.transaction_isolation = 'READ-COMMITTED'", want: kPlain | fSession},
	{q: "SET SESSION TRANSACTION READ ONLY", want: kPlain | fSession},
	{q: "SET GLOBAL TRANSACTION ISOLATION LEVEL READ COMMITTED", want: kPlain | fSession},
	{q: "SET PASSWORD = 'x'", want: kImplicit},
	{q: "SET STATEMENT max_statement_time = 1 FOR SELECT 1", want: kUnknown},
	// implicit commits
	{q: "CREATE TABLE t (a INT)", want: kImplicit},
	{q: "create or replace view v as select 1", want: kImplicit},
	{q: "CREATE USER 'u'", want: kImplicit},
	{q: "CREATE TEMPORARY TABLE t (a INT)", want: kPlain | fSession | fTemp},
	{q: "CREATE OR REPLACE TEMPORARY TABLE t (a INT)", want: kPlain | fSession | fTemp},
	{q: "CREATE /*!32312 TEMPORARY */ TABLE t (a INT)", want: kUnknown},
	{q: "DROP TABLE t", want: kImplicit},
	{q: "DROP TEMPORARY TABLE t", want: kPlain | fSession | fTemp},
	{q: "DROP USER u", want: kImplicit},
	{q: "ALTER USER u", want: kImplicit},
	{q: "ALTER DATABASE d CHARACTER SET utf8mb4", want: kImplicit},
	{q: "ALTER TABLE t ADD c INT", want: kMaybe}, // not of a temporary table on MariaDB
	{q: "ALTER ONLINE TABLE t ADD c INT", want: kMaybe},
	{q: "RENAME TABLE a TO b", want: kImplicit},
	{q: "TRUNCATE TABLE t", want: kMaybe},
	{q: "GRANT SELECT ON *.* TO u", want: kImplicit},
	{q: "REVOKE SELECT ON *.* FROM u", want: kImplicit},
	{q: "ANALYZE TABLE t", want: kImplicit},
	{q: "OPTIMIZE NO_WRITE_TO_BINLOG TABLE t", want: kImplicit},
	{q: "REPAIR LOCAL TABLE t", want: kImplicit},
	{q: "CHECK TABLE t", want: kImplicit},
	{q: "FLUSH PRIVILEGES", want: kImplicit},
	{q: "INSTALL PLUGIN p SONAME 'x'", want: kImplicit},
	{q: "CHANGE MASTER TO MASTER_HOST = 'x'", want: kMaybe},
	{q: "CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'x'", want: kMaybe},
	{q: "START SLAVE", want: kMaybe},
	{q: "STOP REPLICA", want: kMaybe},
	{q: "RESET MASTER", want: kMaybe},
	{q: "LOAD INDEX INTO CACHE t", want: kMaybe},
	{q: "CACHE INDEX t IN c", want: kMaybe},
	// locks
	{q: "LOCK TABLES t WRITE", want: kLockTables},
	{q: "lock table t read", want: kLockTables},
	{q: "LOCK INSTANCE FOR BACKUP", want: kLock},
	{q: "FLUSH TABLES WITH READ LOCK", want: kLock},
	{q: "FLUSH TABLES t FOR EXPORT", want: kLock},
	{q: "UNLOCK TABLES", want: kUnlock},
	// unknown
	{q: "CALL p()", want: kUnknown},
	{q: "call p", want: kUnknown},
	{q: "EXECUTE s", want: kUnknown},
	{q: "EXECUTE IMMEDIATE 'COMMIT'", want: kUnknown},
	{q: "IF 1 THEN COMMIT; END IF", want: kUnknown},
	{q: "l1: LOOP LEAVE l1; END LOOP", want: kUnknown},
	{q: "/*!40101 SET autocommit = 0 */", want: kUnknown},
	{q: "/*M!100101 COMMIT */", want: kUnknown},
	{q: "/*! COMMIT */", want: kUnknown},
	{q: "/* unterminated", want: kUnknown},
	{q: "@@x", want: kUnknown},
	{q: "", want: kEmpty},
	{q: "  -- only a comment", want: kEmpty},
	{q: "--x", want: kUnknown}, // not a comment: minus minus x
	// multiStatements
	{q: "SELECT 1; SELECT 2", multi: true, want: kPlain},
	{q: "SELECT 1;", multi: true, want: kPlain},
	{q: "COMMIT;", multi: true, want: kCommit},
	{q: ";; BEGIN ;", multi: true, want: kBegin},
	{q: "BEGIN; INSERT INTO t VALUES (1); COMMIT", multi: true, want: kBatch},
	{q: "SELECT 1; COMMIT", multi: true, want: kBatch},
	{q: "SELECT 'a;b'; SELECT \"c;d\"", multi: true, want: kPlain},
	{q: "SELECT 'it''s; not'; BEGIN", multi: true, want: kBatch},
	{q: `SELECT 'a\'; COMMIT'`, multi: true, want: kPlain},
	{q: "SELECT `a;b` FROM t", multi: true, want: kPlain},
	{q: "SELECT 1 -- ; COMMIT\n", multi: true, want: kPlain},
	{q: "SELECT 1 # ; COMMIT", multi: true, want: kPlain},
	{q: "SELECT 1 /* ; COMMIT */", multi: true, want: kPlain},
	{q: "SELECT 1 /*! ; COMMIT */", multi: true, want: kUnknown},
	{q: "SELECT 'unterminated; COMMIT", multi: true, want: kUnknown},
	{q: "SELECT 1 /* ; COMMIT", multi: true, want: kUnknown},
	{q: "USE a; USE b", multi: true, want: kBatch},

	// what the text does to the state its session holds (heldFlags), whatever the class
	{q: "SELECT GET_LOCK('a', 10)", want: kPlain | fHolds},
	{q: "select release_lock('a')", want: kPlain | fHolds},
	{q: "DO RELEASE_ALL_LOCKS()", want: kPlain | fHolds},
	{q: "SELECT get_lock ('a', 1), RELEASE_LOCK('b')", want: kPlain | fHolds},
	{q: "SELECT my_get_lock('a'), 'get_lock(', `get_lock`, get_lock FROM t", want: kPlain},
	{q: "SELECT is_used_lock('a'), is_free_lock('a')", want: kPlain},
	{q: "SELECT @x", want: kPlain | fHolds},
	{q: "SELECT a INTO @v FROM t", want: kPlain | fHolds},
	{q: "SELECT 'a@b.com', @@port, @@session.sql_mode -- @x", want: kPlain},
	{q: "SELECT /*! @x */ 1", want: kPlain | fHolds},
	{q: "INSERT INTO t (a) VALUES (?)", want: kPlain},
	{q: "SELECT LAST_INSERT_ID()", want: kPlain | fLastID},
	{q: "SELECT last_insert_id( )", want: kPlain | fLastID},
	{q: "UPDATE t SET id = LAST_INSERT_ID(id + 1)", want: kPlain}, // it sets the value: reads nothing
	{q: "SELECT ROW_COUNT(), FOUND_ROWS()", want: kPlain | fRowCount | fFoundRows},
	{q: "SELECT row_count FROM t", want: kPlain},
	{q: "SET @n = LAST_INSERT_ID()", want: kPlain | fSession | fHolds | fLastID},
	{q: "CALL p(@x)", want: kUnknown | fHolds},
	{q: "SELECT 1; SELECT GET_LOCK('a', 1)", want: kPlain | fHolds}, // the text is read whole (the server refuses the rest)
	{q: "SELECT 1; SELECT GET_LOCK('a', 1)", multi: true, want: kPlain | fHolds},
	{q: "BEGIN; SELECT @x := 1", multi: true, want: kBatch | fHolds},
}

func TestClassify(t *testing.T) {
	for _, tc := range classifyCases {
		if got := classify(tc.q, tc.multi); got != tc.want {
			t.Errorf("classify(%q, multi=%v) = %s, want %s", tc.q, tc.multi, kindName(got), kindName(tc.want))
		}
		if got := classifySlow(tc.q, tc.multi); got != tc.want {
			t.Errorf("classifySlow(%q, multi=%v) = %s, want %s", tc.q, tc.multi, kindName(got), kindName(tc.want))
		}
	}
}

// The statements of a multi-statement query, in order, each with its kind; reading
// stops after an unknown one (a compound statement's ';' splits it here, not on the
// server).
func TestStatements(t *testing.T) {
	for _, tc := range []struct {
		q    string
		want []string
	}{
		{"BEGIN; INSERT INTO t VALUES (';'); COMMIT AND CHAIN;", []string{"BEGIN:begin", " INSERT INTO t VALUES (';'):plain", " COMMIT AND CHAIN:commit+chain"}},
		{"SET autocommit=0;;USE `a;b`", []string{"SET autocommit=0:autocommit-off", "USE `a;b`:use"}},
		{"IF 1 THEN SELECT 1; COMMIT; END IF", []string{"IF 1 THEN SELECT 1:unknown"}},
		{"SELECT 'x", []string{"SELECT 'x:unknown"}},
	} {
		var got []string
		statements(tc.q, func(s string, k stmt.Kind) bool {
			got = append(got, s+":"+kindName(k))
			return true
		})
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("statements(%q) = %q, want %q", tc.q, got, tc.want)
		}
	}
}

// The DSN's autocommit and completion_type as go-sql-driver sends them.
func TestDSNValues(t *testing.T) {
	for v, want := range map[string]uint8{"": acOn, "1": acOn, "ON": acOn, "true": acOn, "'on'": acOn,
		"0": acOff, "OFF": acOff, "false": acOff, "'OFF'": acOff, "DEFAULT": acUnknown, "2": acUnknown, "@x": acUnknown} {
		if got := autocommitOf(v); got != want {
			t.Errorf("autocommitOf(%q) = %d, want %d", v, got, want)
		}
	}
	for v, want := range map[string]uint8{"": ctNoChain, "0": ctNoChain, "NO_CHAIN": ctNoChain, "1": ctChain,
		"'CHAIN'": ctChain, "2": ctRelease, "release": ctRelease, "3": ctUnknown} {
		if got := completionOf(v); got != want {
			t.Errorf("completionOf(%q) = %d, want %d", v, got, want)
		}
	}
}

// FuzzClassify: the classifier never panics, the shortcut agrees with the full reading,
// case does not matter, and leading white space or a comment changes nothing. Text
// that cannot be split (an unterminated quote or comment) is unknown. Every item of a
// SET list is read: one that changes no transaction state (NAMES, CHARACTER SET, ROLE,
// a user variable), put first, changes nothing of what the list does.
func FuzzClassify(f *testing.F) {
	for _, tc := range classifyCases {
		f.Add(tc.q, tc.multi)
	}
	f.Fuzz(func(t *testing.T, q string, multi bool) {
		k := classify(q, multi)
		if slow := classifySlow(q, multi); slow != k {
			t.Fatalf("classify(%q, %v) = %s, classifySlow = %s", q, multi, kindName(k), kindName(slow))
		}
		flags, class := k&^(kClass|fHolds|fReads), k&kClass
		if kindNames[class] == "" || flags&^(fSession|fTemp) != 0 && class != kCommit && class != kRollback ||
			flags&(fSession|fTemp) != 0 && (class != kPlain || flags&fTemp != 0 && flags&fSession == 0) {
			t.Fatalf("classify(%q, %v) = %s: not a statement kind", q, multi, kindName(k))
		}
		if text := k & (fHolds | fReads); text != heldFlags(q) || text != scanHeld(q, nil) {
			t.Fatalf("classify(%q, %v) = %s: the flags of its text are %s (scanHeld: %s)", q, multi, kindName(k),
				kindName(heldFlags(q)), kindName(scanHeld(q, nil)))
		}
		ascii := true
		for i := 0; i < len(q); i++ {
			ascii = ascii && q[i] < 0x80
		}
		if ascii {
			if u, l := classify(strings.ToUpper(q), multi), classify(strings.ToLower(q), multi); u != l {
				t.Fatalf("classify(%q): upper case %s, lower case %s", q, kindName(u), kindName(l))
			}
		}
		if k != kEmpty {
			if c := classify("/* c */ \n"+q, multi); c != k {
				t.Fatalf("classify(%q) = %s, with a leading comment %s", q, kindName(k), kindName(c))
			}
		}
		if multi && strings.IndexByte(q, ';') >= 0 {
			if _, _, ok := nextStatement(q, 0); !ok && k&kClass != kUnknown {
				t.Fatalf("classify(%q, multi) = %s for text that cannot be split", q, kindName(k))
			}
		}
		if len(q) > 4 && is(q[:3], "set") && q[3] == ' ' {
			switch k & kClass {
			case kACOn, kACOff, kACUnknown, kCTNoChain, kCTChain, kCTRelease, kCTUnknown, kImplicit:
				for _, item := range []string{"NAMES utf8mb4, ", "NAMES 'utf8mb4' COLLATE 'utf8mb4_bin', ",
					"CHARACTER SET utf8mb4, ", "CHARSET DEFAULT, ", "ROLE NONE, ", "@u = CONCAT('a', ','), "} {
					want := k
					if item[0] == '@' {
						want |= fHolds // a user variable set is state the session holds
					}
					if c := classify(q[:4]+item+q[4:], multi); c != want {
						t.Fatalf("classify(%q) = %s, with %q first in its list %s", q, kindName(want), item, kindName(c))
					}
				}
			}
		}
		statements(q, func(s string, k stmt.Kind) bool { return true })
	})
}

// BenchmarkClassify is classify's cost per statement: the hot path (a query starting with
// SELECT, INSERT, UPDATE or DELETE) and a few that take the full reading.
func BenchmarkClassify(b *testing.B) {
	for _, q := range []string{
		"UPDATE t SET n=n+1 WHERE id=1",
		"SELECT n FROM t WHERE id=1",
		"  SELECT n FROM t WHERE id=1",
		"COMMIT",
		"SET autocommit = 0, sql_mode = 'ANSI'",
		"BEGIN; INSERT INTO t VALUES (1); COMMIT",
	} {
		b.Run(strings.Fields(q)[0], func(b *testing.B) {
			multi := strings.Contains(q, ";")
			for b.Loop() {
				if classify(q, multi) == kEmpty {
					b.Fatal("empty")
				}
			}
		})
	}
}

// Every word of the keyword table can be found, in any case: is compares with a lower
// case keyword, and find looks a word up by its first letter.
func TestKeywords(t *testing.T) {
	lower := func(w string) {
		if w == "" || w != strings.ToLower(w) || w[0] < 'a' || w[0] > 'z' {
			t.Errorf("keyword %q: not lower case, or not starting with a letter", w)
		}
	}
	for w, kw := range keywords {
		lower(w)
		if find(strings.ToUpper(w)) == nil || find(w).k != kw.k || find(w).read != kw.read {
			t.Errorf("find(%q) does not find its keyword", w)
		}
		for _, p := range kw.next {
			lower(p.word)
		}
	}
}
