package conn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// Causal reads count every write, whatever path it took to the primary: a
// statement run with ExecContext, a write sent with QueryContext (INSERT ... RETURNING),
// a statement with arguments (go-sql-driver answers ExecContext and QueryContext with
// driver.ErrSkip unless interpolateParams is set, and database/sql prepares it: the
// prepared statement's run is the write), and a transaction's COMMIT. Each write is
// followed by a read-intent read, which must first wait on the replica for the position
// read from the primary after the write.

const causalPos = "0-1-7"

// causalEnv is H1 (primary) and H2 (its one replica) with causalReads=mode and a 1 s
// timeout, and the connection configuration that goes with it.
func causalEnv(t *testing.T, mode string) (*env, Config) {
	t.Helper()
	e := newEnv(t, 2, replicaReads, func(c *dsn.Config) { c.CausalReads, c.CausalReadsTimeout = mode, time.Second })
	cfg := splitCfg
	cfg.CausalReads = mode
	return e, cfg
}

// positionQuery is the statement that reads the primary's position for mode (MariaDB).
func positionQuery(mode string) string {
	if mode == "global" {
		return "SELECT @@global.gtid_binlog_pos"
	}
	return "SELECT @@last_gtid"
}

// readOnReplica reads SELECT r with a read intent through sc and checks that the replica
// (H2, which answers 2) served it.
func readOnReplica(t *testing.T, sc *sql.Conn) {
	t.Helper()
	var host int64
	if err := sc.QueryRowContext(read, "SELECT r").Scan(&host); err != nil {
		t.Fatalf("read-intent read: %v", err)
	}
	if host != 2 {
		t.Fatalf("read-intent read served by H%d, want the replica H2", host)
	}
}

// TestCausalReadsCountEveryWritePath: after a write through each path, under local and
// global, the next read-intent read reads the primary's position once and waits for it on
// the replica (one CausalWaits) before the replica serves it. Without the write counted,
// nothing is waited for and the read may miss the write.
func TestCausalReadsCountEveryWritePath(t *testing.T) {
	const ins = "INSERT INTO t (v) VALUES (1)"
	const insArg = "INSERT INTO t (v) VALUES (?)"
	const ret = "INSERT INTO t (v) VALUES (1) RETURNING id"
	const retArg = "INSERT INTO t (v) VALUES (?) RETURNING id"
	paths := []struct {
		name   string
		script step                                          // what the primary session sees of the write
		write  func(ctx context.Context, sc *sql.Conn) error // through database/sql, as a user writes
	}{
		{"exec", ok(ins), func(ctx context.Context, sc *sql.Conn) error {
			_, err := sc.ExecContext(ctx, ins)
			return err
		}},
		{"query", queryRows(ret, 41), func(ctx context.Context, sc *sql.Conn) error {
			var id int64
			return sc.QueryRowContext(ctx, ret).Scan(&id)
		}},
		{"prepared exec", all(
			// go-sql-driver without interpolateParams: driver.ErrSkip, then database/sql
			// prepares the statement and runs it.
			func(m sqlmock.Sqlmock) { m.ExpectExec(insArg).WillReturnError(driver.ErrSkip) },
			prepared(insArg, 1, nil)),
			func(ctx context.Context, sc *sql.Conn) error {
				_, err := sc.ExecContext(ctx, insArg, int64(1))
				return err
			}},
		{"prepared query", all(
			func(m sqlmock.Sqlmock) { m.ExpectQuery(retArg).WillReturnError(driver.ErrSkip) },
			func(m sqlmock.Sqlmock) {
				m.ExpectPrepare(retArg).WillBeClosed().ExpectQuery().WithArgs(int64(1)).
					WillReturnRows(sqlmock.NewRows([]string{"id"}).AddRow(int64(41)))
			}),
			func(ctx context.Context, sc *sql.Conn) error {
				var id int64
				return sc.QueryRowContext(ctx, retArg, int64(1)).Scan(&id)
			}},
		{"transaction", all(begin(), ok(ins), commit(nil)), func(ctx context.Context, sc *sql.Conn) error {
			tx, err := sc.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, ins); err != nil {
				_ = tx.Rollback()
				return err
			}
			return tx.Commit()
		}},
	}
	for _, mode := range []string{"local", "global"} {
		for _, p := range paths {
			t.Run(mode+"/"+p.name, func(t *testing.T) {
				ctx := fake.Context(t)
				e, cfg := causalEnv(t, mode)
				e.script(0, all(p.script, gtidRows(positionQuery(mode), causalPos)))
				e.script(1, replicaSession(waitRows(causalPos, 0), queryRows("SELECT r", 2)))
				sc := sqlConn(t, e.db(cfg, 1))
				defer sc.Close()
				if err := p.write(ctx, sc); err != nil {
					t.Fatalf("write: %v", err)
				}
				readOnReplica(t, sc)
				if st := e.cl.Stats(); st.CausalWaits != 1 || st.CausalPrimary != 0 {
					t.Errorf("CausalWaits %d, CausalPrimary %d; want 1, 0: the write through %s was not counted for the read after it",
						st.CausalWaits, st.CausalPrimary, p.name)
				}
				e.allMet()
			})
		}
	}
}

// TestCausalGlobalCommitAfterPositionRead: under global, a position read while a
// transaction is open on another connection (after its INSERT, before its COMMIT) does
// not cover the commit: the read after the COMMIT reads the position again and waits for
// the new one, although the replica session already reached the older one.
func TestCausalGlobalCommitAfterPositionRead(t *testing.T) {
	e, cfg := causalEnv(t, "global")
	e.script(0,
		all(begin(), ok("INSERT a"), commit(nil)), // the writer's session
		all(gtidRows("SELECT @@global.gtid_binlog_pos", "0-1-8"), // the reader's: before the COMMIT
			gtidRows("SELECT @@global.gtid_binlog_pos", "0-1-9"))) // and after it
	e.script(1, replicaSession(waitRows("0-1-8", 0), queryRows("SELECT r", 2), waitRows("0-1-9", 0), queryRows("SELECT r", 2)))
	w, r := e.open(cfg), e.open(cfg)
	tx, err := w.BeginTx(fake.Context(t), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, w, "INSERT a")
	if got := readOne(t, r, read, "SELECT r"); got != 2 {
		t.Fatalf("read during the transaction on H%d, want H2", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if got := readOne(t, r, read, "SELECT r"); got != 2 {
		t.Fatalf("read after the COMMIT on H%d, want H2", got)
	}
	if st := e.cl.Stats(); st.CausalWaits != 2 {
		t.Errorf("CausalWaits %d, want 2: the read after the COMMIT must wait for the commit's position", st.CausalWaits)
	}
	e.allMet()
}

// TestCausalReachedPositionGlobal: once a replica session has reached the pool's latest
// position, the reads after it that need no newer one are served without another wait or
// position read, through database/sql, under global (TestCausalReadsLocal covers local on
// the driver's own connection). A new write makes the next read wait again.
func TestCausalReachedPositionGlobal(t *testing.T) {
	e, cfg := causalEnv(t, "global")
	e.script(0, all(ok("INSERT a"), gtidRows("SELECT @@global.gtid_binlog_pos", "0-1-5"),
		ok("INSERT b"), gtidRows("SELECT @@global.gtid_binlog_pos", "0-1-6")))
	e.script(1, replicaSession(waitRows("0-1-5", 0), waitRows("0-1-6", 0),
		queryRows("SELECT r", 2), queryRows("SELECT r", 2), queryRows("SELECT r", 2), queryRows("SELECT r", 2)))
	ctx := fake.Context(t)
	sc := sqlConn(t, e.db(cfg, 1))
	defer sc.Close()
	if _, err := sc.ExecContext(ctx, "INSERT a"); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		readOnReplica(t, sc)
	}
	if st := e.cl.Stats(); st.CausalWaits != 1 {
		t.Fatalf("CausalWaits %d after three reads of one position, want 1 (the first read's)", st.CausalWaits)
	}
	if _, err := sc.ExecContext(ctx, "INSERT b"); err != nil {
		t.Fatal(err)
	}
	readOnReplica(t, sc)
	if st := e.cl.Stats(); st.CausalWaits != 2 {
		t.Errorf("CausalWaits %d after a new write, want 2", st.CausalWaits)
	}
	e.allMet()
}
