package dialect

import (
	"fmt"
	"strings"
	"testing"
)

var kindNames = map[Kind]string{
	Plain: "plain", Use: "use", Begin: "begin", XAStart: "xa-start", XAPrepare: "xa-prepare",
	XACommit: "xa-commit", XARollback: "xa-rollback", Commit: "commit", Rollback: "rollback",
	AutocommitOn: "autocommit-on", AutocommitOff: "autocommit-off", AutocommitUnknown: "autocommit-unknown",
	CompletionNoChain: "completion-no-chain", CompletionChain: "completion-chain", CompletionRelease: "completion-release",
	CompletionUnknown: "completion-unknown", SetTx: "set-transaction", Implicit: "implicit-commit",
	Maybe: "maybe-commit", LockTables: "lock-tables", Lock: "lock", Unlock: "unlock",
	Unknown: "unknown", Batch: "batch", Empty: "empty",
}

func kindName(k Class) string {
	s := kindNames[k.Kind()]
	if s == "" {
		s = fmt.Sprintf("kind(%d)", k.Kind())
	}
	for _, c := range []struct {
		bit  Clauses
		name string
	}{{Chain, "chain"}, {NoChain, "no-chain"}, {Release, "release"}, {NoRelease, "no-release"}} {
		if k.Clauses()&c.bit != 0 {
			s += "+" + c.name
		}
	}
	for _, f := range []struct {
		bit  Flags
		name string
	}{{Session, "session"}, {Temp, "temporary"}, {Holds, "holds"}, {LastID, "last-insert-id"},
		{RowCount, "row-count"}, {FoundRows, "found-rows"}} {
		if k.Flags()&f.bit != 0 {
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
	want  Kind    // the statement's kind
	c     Clauses // its clauses
	f     Flags   // its flags
}{
	// the hot path and plain statements
	{q: "SELECT 1", want: Plain},
	{q: "select * from t", want: Plain},
	{q: "INSERT INTO t VALUES (1)", want: Plain},
	{q: "UPDATE t SET a = 1", want: Plain},
	{q: "DELETE FROM t", want: Plain},
	{q: "delete`t`", want: Plain},
	{q: "SELECT 1; COMMIT", want: Plain}, // without multiStatements only the first statement exists
	{q: "REPLACE INTO t VALUES (1)", want: Plain},
	{q: "SHOW TABLES", want: Plain},
	{q: "DO 1", want: Plain},
	{q: "(SELECT 1) UNION (SELECT 2)", want: Plain},
	{q: "WITH x AS (SELECT 1) SELECT * FROM x", want: Plain},
	{q: "SET sql_mode = 'ANSI'", want: Plain, f: Session},
	{q: "SET @autocommit = 0", want: Plain, f: Session | Holds}, // a user variable
	{q: "SET NAMES utf8mb4", want: Plain, f: Session},
	{q: "PREPARE s FROM 'COMMIT'", want: Plain},
	{q: "DEALLOCATE PREPARE s", want: Plain},
	{q: "DROP PREPARE s", want: Plain},
	{q: "LOAD DATA INFILE 'x' INTO TABLE t", want: Plain},
	{q: "ANALYZE SELECT 1", want: Plain},
	{q: "SELECT /*!40001 SQL_NO_CACHE */ * FROM t", want: Plain},
	{q: "  SELECT /*!40001 SQL_NO_CACHE */ 1", want: Plain},
	{q: "Q0", want: Plain},
	{q: "use shop", want: Use},
	{q: "/* c */ USE shop", want: Use},
	// no change inside a transaction
	{q: "SAVEPOINT s1", want: Plain},
	{q: "RELEASE SAVEPOINT s1", want: Plain},
	{q: "ROLLBACK TO s1", want: Plain},
	{q: "ROLLBACK TO SAVEPOINT s1", want: Plain},
	{q: "rollback work to savepoint s1", want: Plain},
	{q: "XA END 'x'", want: Plain},
	{q: "XA RECOVER", want: Plain},
	// begin
	{q: "BEGIN", want: Begin},
	{q: "begin work", want: Begin},
	{q: "BEGIN;", want: Begin},
	{q: "  BEGIN  ", want: Begin},
	{q: "START TRANSACTION", want: Begin},
	{q: "start transaction read only", want: Begin},
	{q: "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ WRITE", want: Begin},
	{q: "/* app */ START TRANSACTION", want: Begin},
	{q: "-- app\nSTART TRANSACTION", want: Begin},
	{q: "# app\nSTART TRANSACTION", want: Begin},
	{q: "/**/BEGIN", want: Begin},
	{q: "\t\r\n BeGiN", want: Begin},
	{q: "BEGIN NOT ATOMIC SELECT 1; END", want: Unknown},
	{q: "BEGIN x", want: Unknown},
	{q: "XA START 'x'", want: XAStart},
	{q: "xa begin 'x'", want: XAStart},
	// end
	{q: "COMMIT", want: Commit},
	{q: "commit work", want: Commit},
	{q: "COMMIT;", want: Commit},
	{q: "COMMIT -- done", want: Commit},
	{q: "/* tx */ COMMIT", want: Commit},
	{q: "COMMIT AND NO CHAIN", want: Commit, c: NoChain},
	{q: "COMMIT AND CHAIN", want: Commit, c: Chain},
	{q: "COMMIT WORK AND CHAIN NO RELEASE", want: Commit, c: Chain | NoRelease},
	{q: "COMMIT RELEASE", want: Commit, c: Release},
	{q: "COMMIT AND NO CHAIN RELEASE", want: Commit, c: NoChain | Release},
	{q: "COMMIT AND CHAIN RELEASE", want: Unknown}, // the server refuses it
	{q: "COMMIT AND", want: Unknown},
	{q: "COMMIT x", want: Unknown},
	{q: "COMMIT /*!50000 AND CHAIN */", want: Unknown},
	{q: "ROLLBACK", want: Rollback},
	{q: "rollback work", want: Rollback},
	{q: "ROLLBACK AND CHAIN", want: Rollback, c: Chain},
	{q: "ROLLBACK NO RELEASE", want: Rollback, c: NoRelease},
	{q: "ROLLBACK RELEASE", want: Rollback, c: Release},
	{q: "XA COMMIT 'x'", want: XACommit},
	{q: "XA COMMIT 'x' ONE PHASE", want: XACommit},
	{q: "XA ROLLBACK 'x'", want: XARollback},
	{q: "XA PREPARE 'x'", want: XAPrepare},
	{q: "XA FOO", want: Unknown},
	// SET autocommit
	{q: "SET autocommit = 0", want: AutocommitOff},
	{q: "SET autocommit=1", want: AutocommitOn},
	{q: "set AUTOCOMMIT := OFF", want: AutocommitOff},
	{q: "SET autocommit = on", want: AutocommitOn},
	{q: "SET autocommit = TRUE", want: AutocommitOn},
	{q: "SET autocommit = false", want: AutocommitOff},
	{q: "SET autocommit = 'OFF'", want: AutocommitOff},
	{q: `SET autocommit = "on"`, want: AutocommitOn},
	{q: "SET @@autocommit = 0", want: AutocommitOff},
	{q: "SET @@session.autocommit = 0", want: AutocommitOff},
	{q: "SET @@SESSION.autocommit = 1", want: AutocommitOn},
	{q: "SET @@local.autocommit = 0", want: AutocommitOff},
	{q: "SET SESSION autocommit = 0", want: AutocommitOff},
	{q: "SET LOCAL autocommit = 0", want: AutocommitOff},
	{q: "SET `autocommit` = 0", want: AutocommitOff},
	{q: "SET autocommit = 0;", want: AutocommitOff},
	{q: "SET autocommit=0, sql_mode='x'", want: AutocommitOff},
	{q: "SET sql_mode = CONCAT('a', ','), autocommit = 0", want: AutocommitOff},
	{q: "SET @a = (SELECT 1, 2), autocommit = 1", want: AutocommitOn, f: Holds},
	{q: "SET GLOBAL autocommit = 0", want: Plain, f: Session},
	{q: "SET @@global.autocommit = 0", want: Plain, f: Session},
	{q: "SET PERSIST autocommit = 0", want: Plain, f: Session},
	{q: "SET GLOBAL sql_mode = '', SESSION autocommit = 0", want: AutocommitOff},
	{q: "SET GLOBAL sql_mode = '', autocommit = 0", want: Plain, f: Session},   // GLOBAL holds for what follows
	{q: "SET GLOBAL sql_mode = '', @@autocommit = 0", want: AutocommitUnknown}, // the scope is not clear
	{q: "SET autocommit = @v", want: AutocommitUnknown, f: Holds},
	{q: "SET autocommit = DEFAULT", want: AutocommitUnknown},
	{q: "SET autocommit = '0'", want: AutocommitUnknown},
	{q: "SET autocommit = 1 + 0", want: AutocommitUnknown},
	{q: "SET autocommit = ?", want: AutocommitUnknown},
	{q: "SET autocommit = 0, autocommit = 1", want: Unknown},
	{q: "SET autocommit = 0 junk", want: AutocommitUnknown},
	{q: "SET autocommit", want: Unknown},
	{q: "SET /*!50000 GLOBAL */ autocommit = 0", want: Unknown},
	// every item of a SET list, in any order (each checked on MariaDB 10.11)
	{q: "SET NAMES utf8mb4, autocommit = 0", want: AutocommitOff},
	{q: "SET autocommit = 0, NAMES utf8mb4", want: AutocommitOff},
	{q: "SET NAMES utf8mb4 COLLATE utf8mb4_bin, autocommit = 0", want: AutocommitOff},
	{q: "SET NAMES 'utf8mb4' COLLATE 'utf8mb4_bin', autocommit = 0", want: AutocommitOff},
	{q: "SET NAMES DEFAULT, completion_type = 1", want: CompletionChain},
	{q: "SET CHARACTER SET utf8mb4, autocommit = 0", want: AutocommitOff},
	{q: "set charset 'utf8', @@session.autocommit = 0", want: AutocommitOff},
	{q: "SET NAMES utf8mb4, NAMES latin1, autocommit = 0", want: AutocommitOff},
	{q: "SET @a = 1, NAMES utf8, autocommit = 0", want: AutocommitOff, f: Holds},
	{q: "SET NAMES utf8mb4, sql_mode = CONCAT('a', ','), autocommit = 0", want: AutocommitOff},
	{q: "SET SESSION sql_mode = '', NAMES utf8mb4, autocommit = 0", want: AutocommitOff},
	{q: "SET GLOBAL sql_mode = DEFAULT, NAMES utf8mb4, autocommit = 0", want: Plain, f: Session}, // GLOBAL holds past NAMES
	{q: "SET NAMES utf8mb4, autocommit = 0, completion_type = 1", want: Unknown},
	{q: "SET CHARACTER utf8, autocommit = 0", want: Unknown}, // not CHARACTER SET
	{q: "SET NAMES 'utf8, autocommit = 0", want: Unknown},
	{q: "SET ROLE NONE, autocommit = 0", want: AutocommitOff},
	{q: "SET autocommit = 0, ROLE NONE", want: AutocommitOff},
	{q: "SET ROLE NONE", want: Plain, f: Session},
	{q: "SET ROLE r1, r2", want: Plain, f: Session}, // MySQL: several roles
	{q: "SET ROLE ALL EXCEPT 'r1'@'%', 'r2'", want: Plain, f: Session},
	{q: "SET DEFAULT ROLE NONE", want: Implicit}, // it commits (MariaDB 10.11: @@in_transaction 0 after it)
	{q: "SET DEFAULT ROLE r FOR u@localhost", want: Implicit},
	{q: "SET DEFAULT ROLE ALL TO 'u1'@'%', u2", want: Implicit}, // MySQL
	{q: "SET sql_mode = DEFAULT, DEFAULT ROLE NONE", want: Implicit},
	{q: "SET PASSWORD FOR 'u'@'%' = PASSWORD('x')", want: Implicit},
	{q: "SET sql_mode = DEFAULT, PASSWORD = PASSWORD('x')", want: Implicit},
	{q: "SET PASSWORD = 'x', autocommit = 0", want: Unknown}, // it commits, then autocommit is off
	{q: "SET DEFAULT ROLE NONE, autocommit = 0", want: Unknown},
	{q: "SET GLOBAL default.key_buffer_size = 1, SESSION autocommit = 0", want: AutocommitOff},
	{q: "SET @@global.my_cache.key_buffer_size = 0", want: Plain, f: Session},
	// SET completion_type, SET TRANSACTION
	{q: "SET completion_type = 1", want: CompletionChain},
	{q: "SET completion_type = 'RELEASE'", want: CompletionRelease},
	{q: "SET SESSION completion_type = NO_CHAIN", want: CompletionNoChain},
	{q: "SET completion_type = @x", want: CompletionUnknown, f: Holds},
	{q: "SET autocommit = 0, completion_type = 1", want: Unknown},
	{q: "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE", want: SetTx},
	{q: "set transaction read only", want: SetTx},
	{q: "SET @@transaction_isolation = 'READ-COMMITTED'", want: SetTx},
	{q: "SET @@session.transaction_isolation = 'READ-COMMITTED'", want: Plain, f: Session},
	{q: "SET SESSION TRANSACTION READ ONLY", want: Plain, f: Session},
	{q: "SET GLOBAL TRANSACTION ISOLATION LEVEL READ COMMITTED", want: Plain, f: Session},
	{q: "SET PASSWORD = 'x'", want: Implicit},
	{q: "SET STATEMENT max_statement_time = 1 FOR SELECT 1", want: Unknown},
	// implicit commits
	{q: "CREATE TABLE t (a INT)", want: Implicit},
	{q: "create or replace view v as select 1", want: Implicit},
	{q: "CREATE USER 'u'", want: Implicit},
	{q: "CREATE TEMPORARY TABLE t (a INT)", want: Plain, f: Session | Temp},
	{q: "CREATE OR REPLACE TEMPORARY TABLE t (a INT)", want: Plain, f: Session | Temp},
	{q: "CREATE /*!32312 TEMPORARY */ TABLE t (a INT)", want: Unknown},
	{q: "DROP TABLE t", want: Implicit},
	{q: "DROP TEMPORARY TABLE t", want: Plain, f: Session | Temp},
	{q: "DROP USER u", want: Implicit},
	{q: "ALTER USER u", want: Implicit},
	{q: "ALTER DATABASE d CHARACTER SET utf8mb4", want: Implicit},
	{q: "ALTER TABLE t ADD c INT", want: Maybe}, // not of a temporary table on MariaDB
	{q: "ALTER ONLINE TABLE t ADD c INT", want: Maybe},
	{q: "RENAME TABLE a TO b", want: Implicit},
	{q: "TRUNCATE TABLE t", want: Maybe},
	{q: "GRANT SELECT ON *.* TO u", want: Implicit},
	{q: "REVOKE SELECT ON *.* FROM u", want: Implicit},
	{q: "ANALYZE TABLE t", want: Implicit},
	{q: "OPTIMIZE NO_WRITE_TO_BINLOG TABLE t", want: Implicit},
	{q: "REPAIR LOCAL TABLE t", want: Implicit},
	{q: "CHECK TABLE t", want: Implicit},
	{q: "FLUSH PRIVILEGES", want: Implicit},
	{q: "INSTALL PLUGIN p SONAME 'x'", want: Implicit},
	{q: "CHANGE MASTER TO MASTER_HOST = 'x'", want: Maybe},
	{q: "CHANGE REPLICATION SOURCE TO SOURCE_HOST = 'x'", want: Maybe},
	{q: "START SLAVE", want: Maybe},
	{q: "STOP REPLICA", want: Maybe},
	{q: "RESET MASTER", want: Maybe},
	{q: "LOAD INDEX INTO CACHE t", want: Maybe},
	{q: "CACHE INDEX t IN c", want: Maybe},
	// locks
	{q: "LOCK TABLES t WRITE", want: LockTables},
	{q: "lock table t read", want: LockTables},
	{q: "LOCK INSTANCE FOR BACKUP", want: Lock},
	{q: "FLUSH TABLES WITH READ LOCK", want: Lock},
	{q: "FLUSH TABLES t FOR EXPORT", want: Lock},
	{q: "UNLOCK TABLES", want: Unlock},
	// unknown
	{q: "CALL p()", want: Unknown},
	{q: "call p", want: Unknown},
	{q: "EXECUTE s", want: Unknown},
	{q: "EXECUTE IMMEDIATE 'COMMIT'", want: Unknown},
	{q: "IF 1 THEN COMMIT; END IF", want: Unknown},
	{q: "l1: LOOP LEAVE l1; END LOOP", want: Unknown},
	{q: "/*!40101 SET autocommit = 0 */", want: Unknown},
	{q: "/*M!100101 COMMIT */", want: Unknown},
	{q: "/*! COMMIT */", want: Unknown},
	{q: "/* unterminated", want: Unknown},
	{q: "@@x", want: Unknown},
	{q: "", want: Empty},
	{q: "  -- only a comment", want: Empty},
	{q: "--x", want: Unknown}, // not a comment: minus minus x
	// multiStatements
	{q: "SELECT 1; SELECT 2", multi: true, want: Plain},
	{q: "SELECT 1;", multi: true, want: Plain},
	{q: "COMMIT;", multi: true, want: Commit},
	{q: ";; BEGIN ;", multi: true, want: Begin},
	{q: "BEGIN; INSERT INTO t VALUES (1); COMMIT", multi: true, want: Batch},
	{q: "SELECT 1; COMMIT", multi: true, want: Batch},
	{q: "SELECT 'a;b'; SELECT \"c;d\"", multi: true, want: Plain},
	{q: "SELECT 'it''s; not'; BEGIN", multi: true, want: Batch},
	{q: `SELECT 'a\'; COMMIT'`, multi: true, want: Plain},
	{q: "SELECT `a;b` FROM t", multi: true, want: Plain},
	{q: "SELECT 1 -- ; COMMIT\n", multi: true, want: Plain},
	{q: "SELECT 1 # ; COMMIT", multi: true, want: Plain},
	{q: "SELECT 1 /* ; COMMIT */", multi: true, want: Plain},
	{q: "SELECT 1 /*! ; COMMIT */", multi: true, want: Unknown},
	{q: "SELECT 'unterminated; COMMIT", multi: true, want: Unknown},
	{q: "SELECT 1 /* ; COMMIT", multi: true, want: Unknown},
	{q: "USE a; USE b", multi: true, want: Batch},

	// what the text does to the state its session holds (heldFlags), whatever the class
	{q: "SELECT GET_LOCK('a', 10)", want: Plain, f: Holds},
	{q: "select release_lock('a')", want: Plain, f: Holds},
	{q: "DO RELEASE_ALL_LOCKS()", want: Plain, f: Holds},
	{q: "SELECT get_lock ('a', 1), RELEASE_LOCK('b')", want: Plain, f: Holds},
	{q: "SELECT my_get_lock('a'), 'get_lock(', `get_lock`, get_lock FROM t", want: Plain},
	{q: "SELECT is_used_lock('a'), is_free_lock('a')", want: Plain},
	{q: "SELECT @x", want: Plain, f: Holds},
	{q: "SELECT a INTO @v FROM t", want: Plain, f: Holds},
	{q: "SELECT 'a@b.com', @@port, @@session.sql_mode -- @x", want: Plain},
	{q: "SELECT /*! @x */ 1", want: Plain, f: Holds},
	{q: "INSERT INTO t (a) VALUES (?)", want: Plain},
	{q: "SELECT LAST_INSERT_ID()", want: Plain, f: LastID},
	{q: "SELECT last_insert_id( )", want: Plain, f: LastID},
	{q: "UPDATE t SET id = LAST_INSERT_ID(id + 1)", want: Plain}, // it sets the value: reads nothing
	{q: "SELECT ROW_COUNT(), FOUND_ROWS()", want: Plain, f: RowCount | FoundRows},
	{q: "SELECT row_count FROM t", want: Plain},
	{q: "SET @n = LAST_INSERT_ID()", want: Plain, f: Session | Holds | LastID},
	{q: "CALL p(@x)", want: Unknown, f: Holds},
	{q: "SELECT 1; SELECT GET_LOCK('a', 1)", want: Plain, f: Holds}, // the text is read whole (the server refuses the rest)
	{q: "SELECT 1; SELECT GET_LOCK('a', 1)", multi: true, want: Plain, f: Holds},
	{q: "BEGIN; SELECT @x := 1", multi: true, want: Batch, f: Holds},
}

func TestClassify(t *testing.T) {
	for _, tc := range classifyCases {
		want := Of(tc.want, tc.c, tc.f)
		if got := Classify(tc.q, tc.multi); got != want {
			t.Errorf("Classify(%q, multi=%v) = %s, want %s", tc.q, tc.multi, kindName(got), kindName(want))
		}
		if got := classifySlow(tc.q, tc.multi); got != want {
			t.Errorf("classifySlow(%q, multi=%v) = %s, want %s", tc.q, tc.multi, kindName(got), kindName(want))
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
		Statements(tc.q, func(s string, k Class) bool {
			got = append(got, s+":"+kindName(k))
			return true
		})
		if strings.Join(got, "|") != strings.Join(tc.want, "|") {
			t.Errorf("Statements(%q) = %q, want %q", tc.q, got, tc.want)
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
		k := Classify(q, multi)
		if slow := classifySlow(q, multi); slow != k {
			t.Fatalf("Classify(%q, %v) = %s, classifySlow = %s", q, multi, kindName(k), kindName(slow))
		}
		flags, kind := k.Flags()&(Session|Temp), k.Kind()
		if kindNames[kind] == "" || k&^Of(0xff, 0xff, 0xff) != 0 ||
			k.Clauses() != 0 && kind != Commit && kind != Rollback ||
			flags != 0 && (kind != Plain || flags&Temp != 0 && flags&Session == 0) {
			t.Fatalf("Classify(%q, %v) = %s: not a statement kind", q, multi, kindName(k))
		}
		if text := k.Flags() & (Holds | Reads); text != heldFlags(q) || text != ScanHeld(q, nil) {
			t.Fatalf("Classify(%q, %v) = %s: the flags of its text are %s (ScanHeld: %s)", q, multi, kindName(k),
				kindName(Of(0, 0, heldFlags(q))), kindName(Of(0, 0, ScanHeld(q, nil))))
		}
		ascii := true
		for i := 0; i < len(q); i++ {
			ascii = ascii && q[i] < 0x80
		}
		if ascii {
			if u, l := Classify(strings.ToUpper(q), multi), Classify(strings.ToLower(q), multi); u != l {
				t.Fatalf("Classify(%q): upper case %s, lower case %s", q, kindName(u), kindName(l))
			}
		}
		if k != Class(Empty) {
			if c := Classify("/* c */ \n"+q, multi); c != k {
				t.Fatalf("Classify(%q) = %s, with a leading comment %s", q, kindName(k), kindName(c))
			}
		}
		if multi && strings.IndexByte(q, ';') >= 0 {
			if _, _, ok := nextStatement(q, 0); !ok && k.Kind() != Unknown {
				t.Fatalf("Classify(%q, multi) = %s for text that cannot be split", q, kindName(k))
			}
		}
		if len(q) > 4 && is(q[:3], "set") && q[3] == ' ' {
			switch k.Kind() {
			case AutocommitOn, AutocommitOff, AutocommitUnknown, CompletionNoChain, CompletionChain, CompletionRelease, CompletionUnknown, Implicit:
				for _, item := range []string{"NAMES utf8mb4, ", "NAMES 'utf8mb4' COLLATE 'utf8mb4_bin', ",
					"CHARACTER SET utf8mb4, ", "CHARSET DEFAULT, ", "ROLE NONE, ", "@u = CONCAT('a', ','), "} {
					want := k
					if item[0] == '@' {
						want = want.with(Holds) // a user variable set is state the session holds
					}
					if c := Classify(q[:4]+item+q[4:], multi); c != want {
						t.Fatalf("Classify(%q) = %s, with %q first in its list %s", q, kindName(want), item, kindName(c))
					}
				}
			}
		}
		Statements(q, func(s string, k Class) bool { return true })
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
				if Classify(q, multi).Kind() == Empty {
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
