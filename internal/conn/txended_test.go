package conn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// Invariant one-host-per-transaction: a transaction the server rolled back while its session
// lived on (1213; 1205 under innodb_rollback_on_timeout; 3101) is over. Its later
// statements are refused unsent until ROLLBACK, COMMIT returns the error (never nil), so
// that no part of it commits on its own.

var (
	lockWait = &mysql.MySQLError{Number: 1205, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "Lock wait timeout exceeded; try restarting transaction"}
	grAbort  = &mysql.MySQLError{Number: 3101, SQLState: [5]byte{'4', '0', '0', '0', '0'}, Message: "Plugin instructed the server to rollback the current transaction."}
	// Galera's certification failure is a 1213 too, with its own text.
	certFailed = &mysql.MySQLError{Number: 1213, SQLState: [5]byte{'4', '0', '0', '0', '1'}, Message: "WSREP detected deadlock/conflict and aborted the transaction. Try restarting the transaction"}
)

// wantEnded checks that err is the error of a statement refused, or failed, because the
// server rolled its transaction back with cause: it matches failover.ErrTxRolledBack and
// failover.ErrTxLost, reaches the server's *mysql.MySQLError, names the host, and carries
// no FailoverError (nothing moved).
func wantEnded(t *testing.T, what string, err error, cause *mysql.MySQLError, host string) {
	t.Helper()
	var me *mysql.MySQLError
	switch {
	case err == nil:
		t.Fatalf("%s: nil, want the error of a transaction the server rolled back", what)
	case !errors.Is(err, failover.ErrTxRolledBack) || !errors.Is(err, failover.ErrTxLost):
		t.Errorf("%s: %v, want ErrTxRolledBack and ErrTxLost", what, err)
	case !errors.As(err, &me) || me.Number != cause.Number:
		t.Errorf("%s: %v does not reach the server's error %d", what, err, cause.Number)
	case errors.As(err, new(*failover.FailoverError)):
		t.Errorf("%s: %v carries a FailoverError: nothing moved", what, err)
	case !strings.Contains(err.Error(), host):
		t.Errorf("%s: %v does not name %s", what, err, host)
	}
	notBadConn(t, err)
}

// rollback scripts the ROLLBACK of a Tx.
func rollback() step { return func(m sqlmock.Sqlmock) { m.ExpectRollback() } }

// inTrx scripts MariaDB's answer to SELECT @@in_transaction.
func inTrx(v int64) step {
	return func(m sqlmock.Sqlmock) {
		m.ExpectQuery(askInTrx).WillReturnRows(sqlmock.NewRows([]string{"@@in_transaction"}).AddRow(uint64(v))) // UNSIGNED BIGINT, as MariaDB types it
	}
}

// rbOnTimeoutMySQL scripts MySQL's answers: no @@in_transaction (1193), then
// innodb_rollback_on_timeout (v, as MySQL prints it: 0 or 1).
func rbOnTimeoutMySQL(v int64) step {
	return func(m sqlmock.Sqlmock) {
		m.ExpectQuery(askInTrx).WillReturnError(noVariable)
		m.ExpectQuery(askRbOnTimout).WillReturnRows(sqlmock.NewRows([]string{"@@innodb_rollback_on_timeout"}).AddRow(v))
	}
}

// The "carry-on" case, through database/sql: after a deadlock inside a *sql.Tx
// (or a Galera certification failure, or Group Replication's 3101 on a statement) the
// failing statement gets the server's error itself, every later statement of the Tx (Exec,
// Query, a prepared statement) is refused unsent, Commit returns the error and sends
// ROLLBACK instead of COMMIT, Rollback returns nil after ROLLBACK. The connection stays,
// and the next statement autocommits there.
func TestServerEndedTx(t *testing.T) {
	const ins1, ins2, ins3, next = "INSERT INTO t VALUES(1)", "INSERT INTO t VALUES(2)", "INSERT INTO t VALUES(3)", "SELECT 1"
	for _, cause := range []*mysql.MySQLError{deadlock, certFailed, grAbort} {
		for _, end := range []string{"commit", "rollback"} {
			t.Run(strings.Fields(cause.Message)[0]+" "+end, func(t *testing.T) {
				ctx := context.Background()
				e := newEnv(t, 2)
				e.script(0, all(begin(), ok(ins1), fails(ins2, cause), rollback(), ok(next), trap(ins3)))
				db := e.db(seqB, 1)
				tx, err := db.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.ExecContext(ctx, ins1); err != nil {
					t.Fatal(err)
				}
				_, err = tx.ExecContext(ctx, ins2)
				if me, ok := err.(*mysql.MySQLError); !ok || me != cause {
					t.Fatalf("%s: %v (%T), want the server's error itself", ins2, err, err)
				}
				_, err = tx.ExecContext(ctx, ins3)
				wantEnded(t, ins3, err, cause, h1)
				_, err = tx.QueryContext(ctx, "SELECT * FROM t")
				wantEnded(t, "a query", err, cause, h1)
				_, err = tx.PrepareContext(ctx, ins3)
				wantEnded(t, "a prepare", err, cause, h1)
				if end == "commit" {
					err := tx.Commit()
					wantEnded(t, "Commit", err, cause, h1)
					if errors.Is(err, failover.ErrCommitOutcomeUnknown) {
						t.Errorf("Commit: %v matches ErrCommitOutcomeUnknown: nothing was committed", err)
					}
				} else if err := tx.Rollback(); err != nil {
					t.Errorf("Rollback: %v, want nil", err)
				}
				if _, err := db.ExecContext(ctx, next); err != nil {
					t.Fatalf("%s after the transaction: %v", next, err)
				}
				e.untouched(0, 0, ins3)
				e.noHostEvents()
				if e.dialed(0) != 1 || e.dialed(1) != 0 {
					t.Errorf("dialed H1 %d, H2 %d times; want 1, 0", e.dialed(0), e.dialed(1))
				}
			})
		}
	}
}

// The "partial transaction" case: a lock wait timeout (1205) inside a Tx rolled
// back the whole transaction when the server says so (MariaDB: @@in_transaction is 0;
// MySQL: innodb_rollback_on_timeout is ON). Then the statement's error says so and
// matches ErrTxRolledBack (the bare 1205 would say "run the statement again"), and the
// rest is refused. When the server says the transaction is still open, the 1205 passes
// through as it is and the transaction goes on. A question the server cannot answer
// counts as ended. MySQL's variable is read once per session.
func TestLockWaitTimeoutInsideTx(t *testing.T) {
	const ins1, upd, upd2, ins3 = "INSERT INTO t VALUES(1)", "UPDATE t SET a = 2", "UPDATE t SET a = 3", "INSERT INTO t VALUES(3)"
	unreadable := &mysql.MySQLError{Number: 1227, SQLState: [5]byte{'4', '2', '0', '0', '0'}, Message: "Access denied"}
	for _, tc := range []struct {
		name   string
		answer step // the server's answers after the 1205
		ended  bool
		fact   string
	}{
		{"MariaDB, rolled back", inTrx(0), true, "@@in_transaction is 0"},
		{"MariaDB, statement only", inTrx(1), false, ""},
		{"MySQL, innodb_rollback_on_timeout=ON", rbOnTimeoutMySQL(1), true, "innodb_rollback_on_timeout is ON"},
		{"MySQL, innodb_rollback_on_timeout=OFF", rbOnTimeoutMySQL(0), false, ""},
		{"no answer", func(m sqlmock.Sqlmock) { m.ExpectQuery(askInTrx).WillReturnError(unreadable) }, true, "could not be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			e := newEnv(t, 2)
			rest := all(ok(ins3), commit(nil))
			if tc.ended {
				rest = all(rollback(), trap(ins3))
			}
			e.script(0, all(begin(), ok(ins1), fails(upd, lockWait), tc.answer, rest))
			db := e.db(seqB, 1)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, ins1); err != nil {
				t.Fatal(err)
			}
			_, err = tx.ExecContext(ctx, upd)
			if !tc.ended {
				if err != error(lockWait) {
					t.Fatalf("%s: %v, want the 1205 itself (the statement alone was rolled back)", upd, err)
				}
				if _, err := tx.ExecContext(ctx, ins3); err != nil {
					t.Fatalf("%s: %v", ins3, err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatalf("Commit: %v", err)
				}
				e.allMet()
				return
			}
			wantEnded(t, upd, err, lockWait, h1)
			if !strings.Contains(err.Error(), tc.fact) {
				t.Errorf("%s: %v does not say what the server said (%q)", upd, err, tc.fact)
			}
			_, err = tx.ExecContext(ctx, ins3)
			wantEnded(t, ins3, err, lockWait, h1)
			wantEnded(t, "Commit", tx.Commit(), lockWait, h1)
			e.untouched(0, 0, ins3)
		})
	}
	t.Run("MySQL's variable is read once per session", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(execs("BEGIN", ins1), fails(upd, lockWait), rbOnTimeoutMySQL(0), fails(upd2, lockWait), execs("COMMIT"),
			execs("BEGIN"), fails(upd, lockWait), execs("ROLLBACK")))
		c := e.open(seqB)
		mustExecAll(t, c, "BEGIN", ins1)
		for _, q := range []string{upd, upd2} {
			if err := exec(c, q); err != error(lockWait) {
				t.Fatalf("%s: %v, want the 1205 itself", q, err)
			}
		}
		mustExecAll(t, c, "COMMIT", "BEGIN")
		if err := exec(c, upd); err != error(lockWait) {
			t.Fatalf("%s: %v, want the 1205 itself", upd, err)
		}
		mustExec(t, c, "ROLLBACK")
		e.allMet()
	})
	t.Run("a new session asks again", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(execs("BEGIN"), fails(upd, lockWait), rbOnTimeoutMySQL(0), execs("ROLLBACK"), fails("B", mysql.ErrInvalidConn)))
		e.script(1, all(execs("BEGIN"), fails(upd, lockWait), inTrx(0), execs("ROLLBACK")))
		c := e.open(seqB)
		mustExec(t, c, "BEGIN")
		if err := exec(c, upd); err != error(lockWait) {
			t.Fatalf("%s: %v", upd, err)
		}
		mustExec(t, c, "ROLLBACK")
		e.refuse(0)
		wantFailover(t, exec(c, "B"), h1, h2, true)
		mustExec(t, c, "BEGIN")
		wantEnded(t, upd+" on H2", exec(c, upd), lockWait, h2)
		mustExec(t, c, "ROLLBACK")
		e.allMet()
	})
}

// Outside a transaction a deadlock or lock wait timeout ends nothing: the error passes
// through, no question is asked, and the next statement runs. A CALL that deadlocks in
// an autocommit session is not taken for an ended transaction either.
func TestServerErrorOutsideTransaction(t *testing.T) {
	for _, cause := range []*mysql.MySQLError{deadlock, lockWait, grAbort} {
		t.Run(cause.Message, func(t *testing.T) {
			e := newEnv(t, 2)
			e.script(0, all(fails("UPDATE t SET a = 1", cause), fails("CALL p()", cause), execs("UPDATE t SET a = 2")))
			c := e.open(seqB)
			if err := exec(c, "UPDATE t SET a = 1"); err != error(cause) {
				t.Fatalf("UPDATE: %v, want the server's error itself", err)
			}
			if err := exec(c, "CALL p()"); err != error(cause) {
				t.Fatalf("CALL: %v, want the server's error itself", err)
			}
			mustExec(t, c, "UPDATE t SET a = 2")
			if !c.IsValid() {
				t.Error("IsValid false")
			}
			e.allMet()
		})
	}
}

// A transaction opened by statements (BEGIN, START TRANSACTION, autocommit=0 from the DSN
// or a SET, a multi-statement batch, a state the driver cannot tell) that the server
// rolled back: later statements (Exec, Query, Prepare, a prepared statement, Ping,
// BeginTx) are refused unsent and IsValid is false; ROLLBACK runs and ends it; COMMIT does
// not run: ROLLBACK runs instead, with COMMIT's clauses (AND CHAIN opens the next
// transaction; RELEASE replaces the session), and COMMIT returns the error.
func TestServerEndedStatementTransaction(t *testing.T) {
	const upd, later = "UPDATE t SET a = 1", "INSERT INTO t VALUES(2)"
	for _, tc := range []struct {
		name     string
		cfg      Config
		open     []string
		fail     string
		end      string // the statement that ends the refusals
		sent     string // what reaches the server for it
		after    []string
		released bool // the session is replaced (RELEASE)
	}{
		{name: "BEGIN, ROLLBACK", open: []string{"BEGIN"}, fail: upd, end: "ROLLBACK", sent: "ROLLBACK", after: []string{later}},
		{name: "START TRANSACTION, COMMIT", open: []string{"START TRANSACTION"}, fail: upd, end: "COMMIT", sent: "ROLLBACK", after: []string{later}},
		{name: "autocommit=0 from the DSN, COMMIT WORK", cfg: Config{Autocommit: "0"}, fail: upd, end: "commit work", sent: "ROLLBACK", after: []string{later, "COMMIT"}},
		{name: "SET autocommit=0, ROLLBACK", open: []string{"SET autocommit = 0", "INSERT INTO t VALUES(1)"}, fail: upd, end: "ROLLBACK", sent: "ROLLBACK", after: []string{later}},
		{name: "COMMIT AND CHAIN", open: []string{"BEGIN"}, fail: upd, end: "COMMIT AND CHAIN", sent: "ROLLBACK AND CHAIN", after: []string{later, "COMMIT"}},
		{name: "COMMIT RELEASE", open: []string{"BEGIN"}, fail: upd, end: "COMMIT RELEASE", sent: "ROLLBACK RELEASE", released: true},
		{name: "ROLLBACK AND CHAIN", open: []string{"BEGIN"}, fail: upd, end: "ROLLBACK AND CHAIN", sent: "ROLLBACK AND CHAIN", after: []string{later, "COMMIT"}},
		{name: "CALL inside BEGIN", open: []string{"BEGIN", "CALL p()"}, fail: upd, end: "ROLLBACK", sent: "ROLLBACK", after: []string{later}},
		{name: "the failing CALL inside BEGIN", open: []string{"BEGIN"}, fail: "CALL p()", end: "ROLLBACK", sent: "ROLLBACK", after: []string{later}},
		{name: "a batch", cfg: Config{MultiStatements: true}, fail: "BEGIN; UPDATE t SET a = 1", end: "ROLLBACK", sent: "ROLLBACK", after: []string{later}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			first := all(execs(tc.open...), fails(tc.fail, deadlock), execs(tc.sent), execs(tc.after...), trap(later))
			e.script(0, first)
			e.script(1) // nothing ever reaches H2
			c := e.open(tc.cfg)
			mustExecAll(t, c, tc.open...)
			if err := exec(c, tc.fail); err != error(deadlock) {
				t.Fatalf("%s: %v, want the deadlock itself", tc.fail, err)
			}
			wantEnded(t, "Exec", exec(c, later), deadlock, h1)
			_, err := c.QueryContext(context.Background(), "SELECT * FROM t", nil)
			wantEnded(t, "Query", err, deadlock, h1)
			_, err = c.PrepareContext(context.Background(), later)
			wantEnded(t, "Prepare", err, deadlock, h1)
			wantEnded(t, "Ping", c.Ping(context.Background()), deadlock, h1)
			_, err = c.BeginTx(context.Background(), driver.TxOptions{})
			wantEnded(t, "BeginTx", err, deadlock, h1)
			wantEnded(t, "ROLLBACK TO SAVEPOINT", exec(c, "ROLLBACK TO SAVEPOINT s"), deadlock, h1)
			if c.IsValid() {
				t.Error("IsValid true while the transaction is refused")
			}
			err = exec(c, tc.end)
			if strings.HasPrefix(strings.ToUpper(tc.end), "COMMIT") {
				wantEnded(t, tc.end, err, deadlock, h1)
			} else if err != nil {
				t.Fatalf("%s: %v, want nil", tc.end, err)
			}
			if tc.released {
				if n := e.phys(0, 0).Closes(); n != 1 {
					t.Errorf("the released session closed %d times, want 1", n)
				}
				e.untouched(0, 0, later)
				return
			}
			if !c.IsValid() {
				t.Error("IsValid false after the end")
			}
			mustExecAll(t, c, tc.after...)
			wantHost(t, c, h1)
			e.untouched(0, 0, later)
			e.noHostEvents()
		})
	}
}

// A prepared statement inside a Tx that deadlocks ends the Tx as a plain one does; a
// prepared COMMIT of a transaction opened by statements runs ROLLBACK instead and returns
// the error; UNLOCK TABLES still reaches the server (the rollback kept the table locks).
func TestServerEndedPreparedAndLocks(t *testing.T) {
	t.Run("prepared statement in a Tx", func(t *testing.T) {
		ctx := context.Background()
		e := newEnv(t, 2)
		e.script(0, all(begin(), prepared("UPDATE t SET a = ?", 1, deadlock), rollback()))
		db := e.db(seqB, 1)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		s, err := tx.PrepareContext(ctx, "UPDATE t SET a = ?")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := s.ExecContext(ctx, 1); !errors.Is(err, deadlock) {
			t.Fatalf("prepared UPDATE: %v", err)
		}
		_, err = s.ExecContext(ctx, 2)
		wantEnded(t, "prepared UPDATE again", err, deadlock, h1)
		wantEnded(t, "Commit", tx.Commit(), deadlock, h1)
		e.allMet()
	})
	t.Run("prepared COMMIT", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(execs("BEGIN"), fails("UPDATE t SET a = 1", deadlock), func(m sqlmock.Sqlmock) {
			m.ExpectPrepare("COMMIT").WillBeClosed()
		}, execs("ROLLBACK")))
		c := e.open(seqB)
		mustExec(t, c, "BEGIN")
		if err := exec(c, "UPDATE t SET a = 1"); err != error(deadlock) {
			t.Fatal(err)
		}
		s := prepare(t, c, "COMMIT")
		_, err := s.(driver.StmtExecContext).ExecContext(context.Background(), nil)
		wantEnded(t, "prepared COMMIT", err, deadlock, h1)
		_ = s.Close()
		e.allMet()
	})
	t.Run("UNLOCK TABLES", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(execs("SET autocommit = 0", "LOCK TABLES t WRITE"), fails("UPDATE t SET a = 1", deadlock),
			execs("UNLOCK TABLES", "ROLLBACK", "SELECT 2")))
		c := e.open(seqB)
		mustExecAll(t, c, "SET autocommit = 0", "LOCK TABLES t WRITE")
		if err := exec(c, "UPDATE t SET a = 1"); err != error(deadlock) {
			t.Fatal(err)
		}
		mustExec(t, c, "UNLOCK TABLES")
		wantEnded(t, "after UNLOCK TABLES", exec(c, "SELECT 1"), deadlock, h1)
		mustExecAll(t, c, "ROLLBACK", "SELECT 2")
		e.allMet()
	})
}

// A COMMIT statement that fails with a deadlock (Galera's certification failure) or 3101
// (Group Replication) rolled its transaction back: nothing is left open, so nothing is
// refused, and a move needs no question. Tx.Commit returns the server's error itself.
// A COMMIT AND CHAIN that fails leaves the state unknown.
func TestCommitRolledBack(t *testing.T) {
	for _, cause := range []*mysql.MySQLError{certFailed, grAbort} {
		t.Run(cause.Message, func(t *testing.T) {
			e := newEnv(t, 2)
			e.script(0, all(execs("BEGIN", "A1"), fails("COMMIT", cause), execs("A2")), fails("B1", mysql.ErrInvalidConn))
			e.script(1, nil, execs("A3"))
			a, b := e.open(seqB), e.open(seqB)
			mustExecAll(t, a, "BEGIN", "A1")
			if err := exec(a, "COMMIT"); err != error(cause) {
				t.Fatalf("COMMIT: %v, want the server's error itself", err)
			}
			mustExec(t, a, "A2") // autocommit: not refused
			movePool(t, e, b)
			mustExec(t, a, "A3") // the session holds nothing: it follows the pool, unasked
			wantHost(t, a, h2)
			e.allMet()
		})
		t.Run("Tx.Commit "+cause.Message, func(t *testing.T) {
			e := newEnv(t, 2)
			e.script(0, all(begin(), ok("A1"), commit(cause), ok("A2")))
			db := e.db(seqB, 1)
			tx, err := db.Begin()
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.Exec("A1"); err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != error(cause) {
				t.Fatalf("Commit: %v, want the server's error itself", err)
			}
			if _, err := db.Exec("A2"); err != nil {
				t.Fatal(err)
			}
			e.allMet()
		})
	}
	t.Run("COMMIT AND CHAIN", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(execs("BEGIN"), fails("COMMIT AND CHAIN", certFailed), asked(1, "NO_CHAIN", 0)), fails("B1", mysql.ErrInvalidConn))
		e.script(1, nil, execs("A3"))
		a, b := e.open(seqB), e.open(seqB)
		mustExec(t, a, "BEGIN")
		if err := exec(a, "COMMIT AND CHAIN"); err != error(certFailed) {
			t.Fatalf("COMMIT AND CHAIN: %v", err)
		}
		movePool(t, e, b)
		mustExec(t, a, "A3")
		wantHost(t, a, h2)
		e.allMet()
	})
}

// XA: the server keeps a branch that a deadlock rolled back rollback-only and refuses its
// statements itself; the driver passes everything through.
func TestServerEndedXALeftToTheServer(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, all(execs("XA START 'x'"), fails("UPDATE t SET a = 1", deadlock), execs("XA END 'x'", "XA ROLLBACK 'x'")))
	c := e.open(seqB)
	mustExec(t, c, "XA START 'x'")
	if err := exec(c, "UPDATE t SET a = 1"); err != error(deadlock) {
		t.Fatal(err)
	}
	mustExecAll(t, c, "XA END 'x'", "XA ROLLBACK 'x'")
	e.allMet()
}

// A 1205 whose question breaks the session loses the transaction (ErrTxLost with the
// FailoverError; the statement had failed, so it did not run); one that comes while
// results are still being read counts as ended without a question; one whose rows
// deadlock mid-read ends the Tx.
func TestLockWaitTimeoutEdges(t *testing.T) {
	t.Run("the question breaks the session", func(t *testing.T) {
		e := newEnv(t, 2)
		e.script(0, all(execs("BEGIN"), fails("UPDATE t SET a = 1", lockWait), func(m sqlmock.Sqlmock) {
			m.ExpectQuery(askInTrx).WillReturnError(mysql.ErrInvalidConn)
		}))
		e.script(1, execs("SELECT 2"))
		c := e.open(seqB)
		mustExec(t, c, "BEGIN")
		e.refuse(0)
		err := exec(c, "UPDATE t SET a = 1")
		if !errors.Is(err, failover.ErrTxLost) || errors.Is(err, failover.ErrTxRolledBack) {
			t.Errorf("UPDATE: %v, want ErrTxLost (the session died), not ErrTxRolledBack", err)
		}
		wantFailover(t, err, h1, h2, false)
		wantLost(t, "later", exec(c, "SELECT 1"))
		mustExec(t, c, "ROLLBACK") // answered: the server rolled it back with the session
		mustExec(t, c, "SELECT 2")
		e.allMet()
	})
	t.Run("rows still open", func(t *testing.T) {
		ctx := context.Background()
		e := newEnv(t, 2)
		e.script(0, all(begin(), query("SELECT a FROM t", idRows(3, 1, lockWait, nil)), rollback()))
		db := e.db(seqB, 1)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.QueryContext(ctx, "SELECT a FROM t")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
		}
		wantEnded(t, "rows", rows.Err(), lockWait, h1)
		_ = rows.Close()
		_, err = tx.ExecContext(ctx, "UPDATE t SET a = 1")
		wantEnded(t, "after the rows", err, lockWait, h1)
		if err := tx.Rollback(); err != nil {
			t.Errorf("Rollback: %v", err)
		}
		e.allMet()
	})
	t.Run("rows deadlock", func(t *testing.T) {
		ctx := context.Background()
		e := newEnv(t, 2)
		e.script(0, all(begin(), query("SELECT a FROM t FOR UPDATE", idRows(3, 1, deadlock, nil)), rollback()))
		db := e.db(seqB, 1)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.QueryContext(ctx, "SELECT a FROM t FOR UPDATE")
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
		}
		if !errors.Is(rows.Err(), deadlock) {
			t.Fatalf("rows: %v", rows.Err())
		}
		_ = rows.Close()
		wantEnded(t, "Commit", tx.Commit(), deadlock, h1)
		e.allMet()
	})
}

var _ = sql.ErrTxDone
