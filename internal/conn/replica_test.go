package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// split is the connection configuration of replicaReads=true (readFromSourceWhenNoReplicas
// at its default, true).
var splitCfg = Config{FailOverReadOnly: true, ReplicaReads: true, ReadFromSourceWhenNoReplicas: true}

func replicaReads(c *dsn.Config) { c.ReplicaReads = true }

// read is a read-intent context without a routing key.
var read = WithReadIntent(context.Background(), "")

// readOne runs q with ctx and reads its one id.
func readOne(t *testing.T, c *Conn, ctx context.Context, q string) int64 {
	t.Helper()
	v, err := readValue(c, ctx, q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return v
}

// replicaSession scripts a replica session: SET SESSION TRANSACTION READ ONLY, then steps.
func replicaSession(steps ...step) step { return all(append([]step{ok(setReadOnly)}, steps...)...) }

func TestReplicaReadsRouteByIntent(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	e.script(0, all(ok("INSERT w"), queryRows("SELECT p", 1)))
	// Round-robin from the second replica: H3, H2, H3.
	e.script(2, replicaSession(queryRows("SELECT r", 3), queryRows("SELECT r", 3)))
	e.script(1, replicaSession(queryRows("SELECT r", 2)))
	c := e.open(splitCfg)

	mustExec(t, c, "INSERT w")
	if got := readOne(t, c, context.Background(), "SELECT p"); got != 1 {
		t.Errorf("a read without intent ran on H%d, want the primary", got)
	}
	for i, want := range []int64{3, 2, 3} {
		if got := readOne(t, c, read, "SELECT r"); got != want {
			t.Errorf("read %d ran on H%d, want H%d", i, got, want)
		}
	}
	wantHost(t, c, h1) // the primary session stays where it is
	if n := e.dialed(1) + e.dialed(2); n != 2 {
		t.Errorf("%d replica sessions opened, want 2 (one per replica, reused)", n)
	}
	st := e.cl.Stats()
	if st.Hosts[1].ReplicaReads != 1 || st.Hosts[2].ReplicaReads != 2 || st.Hosts[0].ReplicaReads != 0 {
		t.Errorf("ReplicaReads per host = %d %d %d, want 0 1 2", st.Hosts[0].ReplicaReads, st.Hosts[1].ReplicaReads, st.Hosts[2].ReplicaReads)
	}
	if st.Hosts[0].ReplicaSkip != "the pool's writer" {
		t.Errorf("H1's ReplicaSkip = %q, want the pool's writer", st.Hosts[0].ReplicaSkip)
	}
	_ = c.Close()
	// The replica sessions are the pool's: idle, for the next connection's reads, until
	// the pool closes.
	for _, h := range []int{1, 2} {
		if n := e.cl.Stats().Hosts[h].ReplicaIdle; n != 1 || e.phys(h, 0).Closes() != 0 {
			t.Errorf("H%d: %d idle replica sessions, its session closed %d times, after the connection's Close: want 1, 0", h+1, n, e.phys(h, 0).Closes())
		}
	}
	e.cl.Close()
	e.closedExcept(nil)
	e.allMet()
}

func TestReplicaReadsOffOpensNothing(t *testing.T) {
	e := newEnv(t, 3)
	e.script(0, all(queryRows("SELECT r", 1)))
	c := e.open(Config{FailOverReadOnly: true})
	if got := readOne(t, c, read, "SELECT r"); got != 1 {
		t.Errorf("read ran on H%d, want H1: replicaReads is off", got)
	}
	if n := e.dialed(1) + e.dialed(2); n != 0 {
		t.Errorf("%d connections opened to the replicas, want none", n)
	}
	e.allMet()
}

func TestReplicaReadsWhatStaysOnThePrimary(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	e.script(0, all(ok("USE other"), ok("BEGIN"), queryRows("SELECT in tx", 1), ok("COMMIT"),
		ok("SET autocommit = 0"), queryRows("SELECT ac off", 1)))
	c := e.open(splitCfg)
	// Not plain statements, and statements inside a transaction opened by statements
	// or with autocommit off: the primary, whatever the intent.
	for _, q := range []string{"USE other", "BEGIN"} {
		if _, err := c.ExecContext(read, q, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := readOne(t, c, read, "SELECT in tx"); got != 1 {
		t.Errorf("a read inside BEGIN ran on H%d", got)
	}
	for _, q := range []string{"COMMIT", "SET autocommit = 0"} {
		if _, err := c.ExecContext(read, q, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := readOne(t, c, read, "SELECT ac off"); got != 1 {
		t.Errorf("a read with autocommit off ran on H%d", got)
	}
	if n := e.dialed(1) + e.dialed(2); n != 0 {
		t.Errorf("%d replica sessions opened, want none", n)
	}
	e.allMet()
}

func TestReplicaFailureRunsOnAnotherReplica(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	e.script(0, nil)
	e.script(2, replicaSession(func(m sqlmock.Sqlmock) { m.ExpectQuery("SELECT r").WillReturnError(mysql.ErrInvalidConn) }))
	e.script(1, replicaSession(queryRows("SELECT r", 2)))
	c := e.open(splitCfg)
	if got := readOne(t, c, read, "SELECT r"); got != 2 {
		t.Errorf("read ran on H%d, want H2 after H3's session failed", got)
	}
	if n := e.cl.Stats().ReplicaRetries; n != 1 {
		t.Errorf("ReplicaRetries = %d, want 1", n)
	}
	e.wantEvents(failover.EventHostFailed, "", 0)
	e.wantEvents(failover.EventSessionEnded, h3, 1)
	if e.phys(2, 0).Closes() != 1 {
		t.Error("H3's broken session not closed")
	}
	e.noHostEvents()
	e.allMet()
}

// A replica whose server refuses a read because it is not ready (offline_mode's 3032)
// is recorded as not ready, so that no walk or read chooses it, and the read runs on
// another replica: a read-only session wrote nothing.
func TestReplicaRefusalMarksHostNotReady(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	e.script(0, nil)
	e.script(2, replicaSession(func(m sqlmock.Sqlmock) { m.ExpectQuery("SELECT r").WillReturnError(fake.OfflineError) }))
	e.script(1, replicaSession(queryRows("SELECT r", 2)))
	c := e.open(splitCfg)
	if got := readOne(t, c, read, "SELECT r"); got != 2 {
		t.Errorf("read ran on H%d, want H2 after H3 refused it", got)
	}
	if s := stateOf(e, h3); s.State != failover.HostNotReady || !strings.Contains(s.LastError.Error(), "offline_mode") {
		t.Errorf("H3: %v (%v), want not-ready for offline_mode", s.State, s.LastError)
	}
	e.wantEvents(failover.EventSessionEnded, h3, 1)
	e.allMet()
}

func TestReplicaFailureWhileReadingIsReturned(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	e.script(0, nil)
	e.script(2, replicaSession(query("SELECT r", idRows(3, 1, mysql.ErrInvalidConn, nil))))
	c := e.open(splitCfg)
	rows, err := c.QueryContext(read, "SELECT r", nil)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		t.Fatal(err)
	}
	err = rows.Next(v)
	wantFailover(t, err, h3, h1, true)
	_ = rows.Close()
	e.allMet()
}

func TestNoReplicaLeft(t *testing.T) {
	for _, toPrimary := range []bool{true, false} {
		t.Run(map[bool]string{true: "primary", false: "error"}[toPrimary], func(t *testing.T) {
			e := newEnv(t, 3, replicaReads)
			if toPrimary {
				e.script(0, queryRows("SELECT r", 1))
			} else {
				e.script(0, nil)
			}
			e.refuse(1)
			e.refuse(2)
			cfg := splitCfg
			cfg.ReadFromSourceWhenNoReplicas = toPrimary
			c := e.open(cfg)
			rows, err := c.QueryContext(read, "SELECT r", nil)
			if toPrimary {
				if err != nil {
					t.Fatal(err)
				}
				_ = rows.Close()
				if n := e.cl.Stats().ReplicaToPrimary; n != 1 {
					t.Errorf("ReplicaToPrimary = %d, want 1", n)
				}
			} else {
				var nh *failover.NoHostAvailableError
				if !errors.As(err, &nh) || len(nh.Hosts) != 3 {
					t.Fatalf("error %v, want a NoHostAvailableError naming the 3 hosts", err)
				}
				notBadConn(t, err)
			}
			e.allMet()
		})
	}
}

func TestReadOnlyTxOnReplica(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	e.script(0, nil)
	e.script(2, replicaSession(begin(), queryRows("SELECT a", 3), commit(nil),
		begin(), func(m sqlmock.Sqlmock) { m.ExpectQuery("SELECT b").WillReturnError(mysql.ErrInvalidConn) }))
	c := e.open(splitCfg)
	tx, err := c.BeginTx(context.Background(), driver.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := readOne(t, c, context.Background(), "SELECT a"); got != 3 {
		t.Errorf("a statement of the read-only transaction ran on H%d, want H3", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	// A failure inside one loses it, and nothing runs again.
	tx, err = c.BeginTx(context.Background(), driver.TxOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.QueryContext(context.Background(), "SELECT b", nil)
	if !errors.Is(err, failover.ErrTxLost) {
		t.Fatalf("error %v, want ErrTxLost", err)
	}
	notBadConn(t, err)
	if _, err := c.QueryContext(context.Background(), "SELECT c", nil); !errors.Is(err, failover.ErrTxLost) {
		t.Errorf("next statement of the lost transaction: %v, want ErrTxLost", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Errorf("Rollback of the lost transaction: %v", err)
	}
	e.allMet()
}

func TestReplicaSessionCarriesTheDatabase(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	e.script(0, ok("USE `b`"))
	// One routing key: one replica, whichever it is.
	for h := 1; h <= 2; h++ {
		e.script(h, replicaSession(ok("USE `b`"), queryRows("SELECT r", 9), ok("USE `a`"), queryRows("SELECT r", 9)))
	}
	cfg := splitCfg
	cfg.DBName = "a"
	c := e.open(cfg)
	keyed := WithReadIntent(context.Background(), "k")
	mustExec(t, c, "USE `b`")
	if got := readOne(t, c, keyed, "SELECT r"); got != 9 {
		t.Fatalf("read ran on H%d", got)
	}
	c.db = "a" // as a later USE on the primary would leave it
	if got := readOne(t, c, keyed, "SELECT r"); got != 9 {
		t.Fatalf("read ran on H%d", got)
	}
	if n := e.dialed(1) + e.dialed(2); n != 1 {
		t.Errorf("%d replica sessions, want 1", n)
	}
	e.allMet()
}

// TestSetReadOnlyRoutesToReplicas: SetReadOnly(true) is a read intent: the reads after
// it go to a replica, and it sends nothing to the primary session, which no statement
// used (it would get the state before its next statement).
func TestSetReadOnlyRoutesToReplicas(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	e.script(0, trap(setReadOnly))
	e.script(2, replicaSession(queryRows("SELECT r", 3)))
	db := e.db(splitCfg, 1)
	sc := sqlConn(t, db)
	defer sc.Close()
	withProxy(t, sc, func(c *Conn) {
		if err := c.SetReadOnly(context.Background(), true); err != nil {
			t.Fatal(err)
		}
	})
	var id int64
	if err := sc.QueryRowContext(context.Background(), "SELECT r").Scan(&id); err != nil || id != 3 {
		t.Fatalf("read after SetReadOnly(true): id %d, %v; want H3", id, err)
	}
	e.untouched(0, 0, setReadOnly)
	if err := e.phys(2, 0).Mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
}

func TestPreparedReadRunsOnItsReplica(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	e.script(0, nil)
	e.script(2, replicaSession(preparedQuery("SELECT r WHERE id = ?", sqlmock.NewRows([]string{"id"}).AddRow(int64(3)))))
	c := e.open(splitCfg)
	// database/sql prepares a query with arguments (go-sql-driver answers
	// driver.ErrSkip without interpolateParams): the PREPARE and the run go to the same
	// replica, though round-robin would send the next read elsewhere.
	s, err := c.PrepareContext(read, "SELECT r WHERE id = ?")
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.(driver.StmtQueryContext).QueryContext(read, []driver.NamedValue{{Ordinal: 1, Value: int64(7)}})
	if err != nil {
		t.Fatal(err)
	}
	_ = rows.Close()
	_ = s.Close()
	if e.dialed(1) != 0 {
		t.Errorf("H2 dialled %d times: the run must follow its PREPARE", e.dialed(1))
	}
	e.allMet()
}

// gtidRows answers a position query with pos.
func gtidRows(q, pos string) step {
	return func(m sqlmock.Sqlmock) {
		m.ExpectQuery(q).WillReturnRows(sqlmock.NewRows([]string{"pos"}).AddRow([]byte(pos)))
	}
}

// waitRows answers a wait with res (0 reached, -1 timed out).
func waitRows(pos string, res int64) step {
	return func(m sqlmock.Sqlmock) {
		m.ExpectQuery("SELECT MASTER_GTID_WAIT('" + pos + "', 1.000)").
			WillReturnRows(sqlmock.NewRows([]string{"w"}).AddRow(res))
	}
}

// TestCausalReadsLocal: after a write, a read-intent read waits on its replica for the
// connection's last position (read once from the primary session); a replica session that
// reached it waits no more; a replica that does not reach it within causalReadsTimeout
// leaves the read to the primary.
func TestCausalReadsLocal(t *testing.T) {
	e := newEnv(t, 3, replicaReads, func(c *dsn.Config) { c.CausalReads, c.CausalReadsTimeout = "local", time.Second })
	e.script(0, all(ok("INSERT a"), gtidRows("SELECT @@last_gtid", "0-1-5"),
		ok("INSERT b"), gtidRows("SELECT @@last_gtid", "0-1-6"), queryRows("SELECT r", 1)))
	e.script(2, replicaSession(waitRows("0-1-5", 0), queryRows("SELECT r", 3), queryRows("SELECT r", 3)))
	e.script(1, replicaSession(waitRows("0-1-5", 0), queryRows("SELECT r", 2), waitRows("0-1-6", -1)))
	cfg := splitCfg
	cfg.CausalReads = "local"
	c := e.open(cfg)
	mustExec(t, c, "INSERT a")
	for i, want := range []int64{3, 2, 3} { // H3 waits, H2 waits, H3 has reached it
		if got := readOne(t, c, read, "SELECT r"); got != want {
			t.Fatalf("read %d on H%d, want H%d", i, got, want)
		}
	}
	mustExec(t, c, "INSERT b")
	if got := readOne(t, c, read, "SELECT r"); got != 1 {
		t.Fatalf("read behind the replica on H%d, want the primary", got)
	}
	st := e.cl.Stats()
	if st.CausalWaits != 2 || st.CausalPrimary != 1 {
		t.Errorf("CausalWaits %d, CausalPrimary %d; want 2, 1", st.CausalWaits, st.CausalPrimary)
	}
	e.allMet()
}

// TestCausalReadsGlobal: the pool's latest position, read once after the pool's writes
// (by whichever connection reads first) and shared.
func TestCausalReadsGlobal(t *testing.T) {
	e := newEnv(t, 3, replicaReads, func(c *dsn.Config) { c.CausalReads, c.CausalReadsTimeout = "global", time.Second })
	e.script(0, all(ok("INSERT a")), gtidRows("SELECT @@global.gtid_binlog_pos", "0-1-9"))
	e.script(2, replicaSession(waitRows("0-1-9", 0), queryRows("SELECT r", 3)))
	e.script(1, replicaSession(waitRows("0-1-9", 0), queryRows("SELECT r", 2)))
	cfg := splitCfg
	cfg.CausalReads = "global"
	w := e.open(cfg)
	r := e.open(cfg)
	mustExec(t, w, "INSERT a")                            // through one connection
	if got := readOne(t, r, read, "SELECT r"); got != 3 { // read through another
		t.Fatalf("read on H%d", got)
	}
	if got := readOne(t, w, read, "SELECT r"); got != 2 { // the position is shared: not read again
		t.Fatalf("read on H%d", got)
	}
	e.allMet()
}

// TestPreparedAcrossSessions: a statement run in turn on the primary (no intent) and on a
// replica (intent) is prepared once on each and kept on both.
func TestPreparedAcrossSessions(t *testing.T) {
	const q = "SELECT r WHERE id = ?"
	twice := func(m sqlmock.Sqlmock) {
		p := m.ExpectPrepare(q).WillBeClosed()
		p.ExpectExec().WithArgs(int64(1)).WillReturnResult(sqlmock.NewResult(0, 1))
		p.ExpectExec().WithArgs(int64(1)).WillReturnResult(sqlmock.NewResult(0, 1))
	}
	e := newEnv(t, 3, replicaReads)
	e.script(0, twice)
	e.script(1, replicaSession(twice))
	e.script(2, replicaSession(twice))
	c := e.open(splitCfg)
	keyed := WithReadIntent(context.Background(), "customer-1")
	s := prepare(t, c, q)
	for i, ctx := range []context.Context{keyed, context.Background(), keyed, context.Background()} {
		if _, err := s.(driver.StmtExecContext).ExecContext(ctx, []driver.NamedValue{{Ordinal: 1, Value: int64(1)}}); err != nil {
			t.Fatalf("run %d: %v", i, err)
		}
	}
	_ = s.Close()
	if n := e.dialed(1) + e.dialed(2); n != 1 {
		t.Fatalf("%d replica sessions, want 1 (the key's)", n)
	}
	for _, fc := range e.net.AllConns() {
		if err := fc.Mock.ExpectationsWereMet(); err != nil {
			t.Errorf("H%d: %v", fc.Host+1, err)
		}
	}
}

// TestBeginTxWithReadIntent: a transaction begun with a read-intent context but without
// ReadOnly is read-write (a request context that carries read intent may begin one): it
// runs on the primary and its writes work. On a connection after SetReadOnly(true) it
// runs on a replica, and the context's routing key still picks the replica.
func TestBeginTxWithReadIntent(t *testing.T) {
	const ins = "INSERT INTO t VALUES (1)"
	e := newEnv(t, 3, replicaReads)
	e.script(0, all(begin(), ok(ins), commit(nil)))
	e.script(2, replicaSession(begin(), queryRows("SELECT b", 3), commit(nil)))
	c := e.open(splitCfg)
	tx, err := c.BeginTx(read, driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, ins) // on H1: a replica would refuse it (1792)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := c.SetReadOnly(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	tx, err = c.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readOne(t, c, context.Background(), "SELECT b"); got != 3 {
		t.Errorf("SELECT b ran on H%d, want H3: after SetReadOnly(true) a transaction goes to a replica", got)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	e.wantEvents(failover.EventConnect, "", 2) // H1, H3: no failed attempt
	e.allMet()
}

// TestReplicaErrSkipKeepsTheReplica: go-sql-driver answers a query with arguments
// driver.ErrSkip (without interpolateParams) and database/sql prepares it next: the
// PREPARE goes to the replica the query was routed to, not to the next one in turn.
func TestReplicaErrSkipKeepsTheReplica(t *testing.T) {
	const q = "SELECT r WHERE id = ?"
	e := newEnv(t, 3, replicaReads)
	e.script(0, nil)
	e.script(2, replicaSession(
		func(m sqlmock.Sqlmock) { m.ExpectQuery(q).WillReturnError(driver.ErrSkip) },
		preparedQuery(q, sqlmock.NewRows([]string{"id"}).AddRow(int64(3)))))
	c := e.open(splitCfg)
	args := []driver.NamedValue{{Ordinal: 1, Value: int64(7)}}
	if _, err := c.QueryContext(read, q, args); err != driver.ErrSkip {
		t.Fatalf("query with arguments: %v, want driver.ErrSkip", err)
	}
	s, err := c.PrepareContext(read, q)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := s.(driver.StmtQueryContext).QueryContext(read, args)
	if err != nil {
		t.Fatal(err)
	}
	_ = rows.Close()
	_ = s.Close()
	if e.dialed(1) != 0 {
		t.Errorf("H2 dialled: the PREPARE left the replica the query was routed to")
	}
	e.allMet()
}

// TestCausalMissTriesAnotherReplica: a replica that does not reach the position within
// causalReadsTimeout is left for another qualifying replica, which serves the read after
// its own wait; for a timeout's length the replica that missed is skipped by causal
// reads (each new write is a new position: it would wait again), and with every replica
// behind the read goes to the primary without another wait. Then it may serve again.
func TestCausalMissTriesAnotherReplica(t *testing.T) {
	e := newEnv(t, 3, replicaReads, func(c *dsn.Config) { c.CausalReads, c.CausalReadsTimeout = "local", time.Second })
	slow := e.cl.Replicas().Pick("k", true, 0) // the key's replica
	fast := 3 - slow
	e.script(0, all(ok("INSERT a"), gtidRows("SELECT @@last_gtid", "0-1-6"), ok("INSERT b"), gtidRows("SELECT @@last_gtid", "0-1-7"), queryRows("SELECT r", 1),
		ok("INSERT c"), gtidRows("SELECT @@last_gtid", "0-1-8")))
	e.script(slow, replicaSession(waitRows("0-1-6", -1), waitRows("0-1-8", 0), queryRows("SELECT r", int64(slow+1))))
	e.script(fast, replicaSession(waitRows("0-1-6", 0), queryRows("SELECT r", int64(fast+1)), waitRows("0-1-7", -1)))
	cfg := splitCfg
	cfg.CausalReads = "local"
	c := e.open(cfg)
	keyed := WithReadIntent(context.Background(), "k")
	mustExec(t, c, "INSERT a")
	if got := readOne(t, c, keyed, "SELECT r"); got != int64(fast+1) {
		t.Fatalf("read after the key's replica missed: on H%d, want the other replica H%d", got, fast+1)
	}
	mustExec(t, c, "INSERT b")
	// The key's replica is skipped without a wait; the other misses this one: the primary.
	if got := readOne(t, c, keyed, "SELECT r"); got != 1 {
		t.Fatalf("read with every replica behind on H%d, want the primary", got)
	}
	e.clock.Advance(2 * time.Second)
	mustExec(t, c, "INSERT c")
	if got := readOne(t, c, keyed, "SELECT r"); got != int64(slow+1) {
		t.Fatalf("read after the window on H%d, want the key's replica H%d (it has the position now)", got, slow+1)
	}
	if st := e.cl.Stats(); st.CausalPrimary != 1 || st.CausalWaits != 2 {
		t.Errorf("CausalPrimary %d, CausalWaits %d; want 1, 2 (one read on the primary, two waits reached)", st.CausalPrimary, st.CausalWaits)
	}
	e.allMet()
}

// TestSessionStatementsStayOnPrimary: SET statements (of a variable, the names, the
// session's transaction characteristics) and CREATE or DROP TEMPORARY TABLE change the
// session's own state: with a read intent they run on the primary session all the same,
// where later statements see them. Once the session created a temporary table, read
// intents stay on it (a replica does not have the table), until the session ends.
func TestSessionStatementsStayOnPrimary(t *testing.T) {
	sets := []string{"SET @x = 1", "SET time_zone = '+00:00'", "SET NAMES utf8mb4", "SET SESSION TRANSACTION ISOLATION LEVEL READ COMMITTED"}
	e := newEnv(t, 3, replicaReads)
	var steps []step
	for _, q := range sets {
		steps = append(steps, ok(q))
	}
	steps = append(steps, ok("CREATE TEMPORARY TABLE tmp (id INT)"), queryRows("SELECT id FROM tmp", 1))
	e.script(0, all(steps...))
	e.script(2, replicaSession(queryRows("SELECT r", 3)))
	c := e.open(splitCfg)
	if got := readOne(t, c, read, "SELECT r"); got != 3 {
		t.Fatalf("a plain read went to H%d, want the replica H3", got)
	}
	for _, q := range sets {
		if _, err := c.ExecContext(read, q, nil); err != nil {
			t.Fatalf("%s with read intent: %v", q, err)
		}
	}
	if _, err := c.ExecContext(read, "CREATE TEMPORARY TABLE tmp (id INT)", nil); err != nil {
		t.Fatal(err)
	}
	if got := readOne(t, c, read, "SELECT id FROM tmp"); got != 1 {
		t.Errorf("a read after CREATE TEMPORARY TABLE went to H%d, want the primary H1", got)
	}
	e.allMet()
}

// TestCausalLocalAfterSessionChange: a write, then the primary session replaced on the
// same host (the host verdict after a broken session) before the position was read: the
// new session's @@last_gtid knows nothing of the write, so the read waits for the host's
// global position, which covers it. A write on a host the connection has left sends the
// read to the primary.
func TestCausalLocalAfterSessionChange(t *testing.T) {
	e := newEnv(t, 3, replicaReads, func(c *dsn.Config) { c.CausalReads = "local" })
	e.script(0, ok("INSERT a"), all(queryRows("SELECT p", 1), gtidRows("SELECT @@global.gtid_binlog_pos", "0-1-9")))
	r := e.cl.Replicas().Pick("k", true, 0)
	e.script(r, replicaSession(waitRows("0-1-9", 0), queryRows("SELECT r", int64(r+1))))
	cfg := splitCfg
	cfg.CausalReads = "local"
	c := e.open(cfg)
	mustExec(t, c, "INSERT a")
	e.phys(0, 0).Broken.Store(true) // the session is gone: the next statement finds out
	if got := readOne(t, c, context.Background(), "SELECT p"); got != 1 {
		t.Fatalf("SELECT p on H%d", got)
	}
	if e.dialed(0) != 2 {
		t.Fatalf("H1 dialled %d times, want a second session there", e.dialed(0))
	}
	if got := readOne(t, c, WithReadIntent(context.Background(), "k"), "SELECT r"); got != int64(r+1) {
		t.Fatalf("read on H%d, want the replica after its wait for the host's position", got)
	}
	e.allMet()
}

// TestCausalLocalBatchThatFailed: a multi-statement batch that failed after its first
// statement may have committed that one: it counts as a write, and the next read waits.
func TestCausalLocalBatchThatFailed(t *testing.T) {
	const batch = "INSERT a; INSERT dup"
	e := newEnv(t, 3, replicaReads, func(c *dsn.Config) { c.CausalReads = "local" })
	e.script(0, all(fails(batch, &mysql.MySQLError{Number: 1062, Message: "Duplicate entry"}), gtidRows("SELECT @@last_gtid", "0-1-4")))
	r := e.cl.Replicas().Pick("k", true, 0)
	e.script(r, replicaSession(waitRows("0-1-4", 0), queryRows("SELECT r", int64(r+1))))
	cfg := splitCfg
	cfg.CausalReads, cfg.MultiStatements = "local", true
	c := e.open(cfg)
	if err := exec(c, batch); err == nil {
		t.Fatal("batch: no error")
	}
	if got := readOne(t, c, WithReadIntent(context.Background(), "k"), "SELECT r"); got != int64(r+1) {
		t.Fatalf("read on H%d", got)
	}
	e.allMet()
}

// TestCausalGlobalAfterMove: after the pool moved (here SwitchTo), the pool's position is
// the new writer's: a connection still on the old host does not read it there (that host
// knows nothing of the writes since) and no replica waits for it; the read goes to the
// new writer instead.
func TestCausalGlobalAfterMove(t *testing.T) {
	const oldPos = "SELECT @@global.gtid_binlog_pos"
	e := newEnv(t, 3, replicaReads, func(c *dsn.Config) { c.CausalReads = "global" })
	cfg := splitCfg
	cfg.CausalReads = "global"
	keyed := WithReadIntent(context.Background(), "k")
	e.script(1, nil, ok("INSERT w"), queryRows("SELECT r", 2)) // SwitchTo's attempt, a's session, b's
	// a's session, b's (its position is not the pool's), a replica session if the key's.
	e.script(0, nil, gtidRows(oldPos, "0-1-3"), replicaSession(trap("SELECT MASTER_GTID_WAIT('0-1-3', 1.000)")))
	a := e.open(cfg)
	b := e.open(cfg)
	if err := e.cl.SwitchTo(context.Background(), "H2:3306"); err != nil {
		t.Fatal(err)
	}
	r := e.cl.Replicas().Pick("k", true, 0) // H1 or H3: the key's replica now
	replicaSeq := 0
	if r == 0 {
		replicaSeq = 2 // after a's and b's sessions
	}
	if r == 2 {
		e.script(2, replicaSession(trap("SELECT MASTER_GTID_WAIT('0-1-3', 1.000)")))
	}
	mustExec(t, a, "INSERT w") // a moves to H2 first, and writes there
	wantHost(t, a, h2)
	if got := readOne(t, b, keyed, "SELECT r"); got != 2 {
		t.Fatalf("read on H%d, want the pool's writer H2", got)
	}
	wantHost(t, b, h2)
	e.untouched(0, 1, oldPos)
	e.untouched(r, replicaSeq, "SELECT MASTER_GTID_WAIT('0-1-3', 1.000)")
}

// TestReplicaSessionOfRemovedHost: a replica session to a host that left the host list
// is closed at the connection's next check before reuse (it would otherwise keep the
// host's id held), and reads go to the replicas still listed.
func TestReplicaSessionOfRemovedHost(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	r := e.cl.Replicas().Pick("k", true, 0)
	other := 3 - r
	e.script(r, replicaSession(queryRows("SELECT r", int64(r+1))))
	e.script(other, replicaSession(queryRows("SELECT r", int64(other+1))))
	c := e.open(splitCfg)
	keyed := WithReadIntent(context.Background(), "k")
	if got := readOne(t, c, keyed, "SELECT r"); got != int64(r+1) {
		t.Fatalf("read on H%d, want H%d", got, r+1)
	}
	list := []failover.ProvidedHost{{Addr: h1}, {Addr: e.net.Addrs()[other]}}
	if err := e.cl.SetHosts(list); err != nil {
		t.Fatal(err)
	}
	if err := c.ResetSession(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.phys(r, 0).Closes(); n != 1 {
		t.Errorf("replica session to the removed H%d closed %d times, want 1", r+1, n)
	}
	if got := readOne(t, c, keyed, "SELECT r"); got != int64(other+1) {
		t.Fatalf("read after the removal on H%d, want H%d", got, other+1)
	}
	e.allMet()
}

// TestReadsWithoutWriter: with replicaReads and targetSessionAttrs read-write, while no
// writer answers (the primary refuses connections, the others are standbys), a new
// connection opens (allowSourceDownConnections, the default) without dialling anything:
// a read must not wait for a walk to a writer that may have died a moment ago or hang.
// Its read-intent statements run on the replicas and it stays valid; a write fails with
// the walk's *failover.NoHostAvailableError, as without replicas. With
// allowSourceDownConnections=false, Open walks and fails as before.
func TestReadsWithoutWriter(t *testing.T) {
	rw := func(c *dsn.Config) {
		c.ReplicaReads, c.TargetSessionAttrs, c.RetriesAllDown = true, attrs.ReadWrite, 1
	}
	cfg := splitCfg
	cfg.WriteIntent, cfg.FailOverReadOnly, cfg.AllowSourceDown = true, false, true
	e := newEnv(t, 3, rw)
	e.net.SetReadOnly(1, true)
	e.net.SetReadOnly(2, true)
	e.refuse(0)
	// Replica sessions, and the sessions of the write's walk (closed after the role check).
	for _, h := range []int{1, 2} {
		rs := replicaSession(queryRows("SELECT r", int64(h+1)))
		e.script(h, rs, rs, rs)
	}
	c, err := Open(context.Background(), e.cl, cfg)
	if err != nil {
		t.Fatalf("Open with no writer and two replicas: %v, want a connection for reads", err)
	}
	defer c.Close()
	if n := e.dialed(0) + e.dialed(1) + e.dialed(2); n != 0 {
		t.Errorf("Open dialled %d times, want none: the primary session opens with the first statement that needs it", n)
	}
	if got := readOne(t, c, read, "SELECT r"); got != 2 && got != 3 {
		t.Fatalf("read on H%d, want a replica", got)
	}
	if e.dialed(0) != 0 {
		t.Errorf("a read dialled the primary %d times", e.dialed(0))
	}
	if !c.IsValid() {
		t.Error("a connection without a primary session but with replicas is not valid")
	}
	var nh *failover.NoHostAvailableError
	if err := exec(c, "INSERT w"); !errors.As(err, &nh) {
		t.Errorf("a write with no writer: %v, want a *failover.NoHostAvailableError", err)
	}
	if !c.IsValid() {
		t.Error("after the failed write the connection is not valid: database/sql would close it")
	}
	dials := e.dialed(0)
	c2, err := Open(context.Background(), e.cl, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c2.Close()
	if e.dialed(0) != dials {
		t.Errorf("a second connection dialled the primary (%d dials, was %d)", e.dialed(0), dials)
	}
	if got := readOne(t, c2, read, "SELECT r"); got != 2 && got != 3 {
		t.Fatalf("read on H%d, want a replica", got)
	}
	strict := cfg
	strict.AllowSourceDown = false
	if _, err := Open(context.Background(), e.cl, strict); !errors.As(err, &nh) {
		t.Errorf("Open with allowSourceDownConnections=false: %v, want the walk's error", err)
	}
}

// TestPinnedReplicaSessionCheckedBeforeReuse: on a pinned connection (no check by
// database/sql between calls) a replica session that died while it sat idle (a replica
// restart, wait_timeout) is found by the liveness check before the next read and
// replaced on the same replica: the keyed read keeps to its replica.
func TestPinnedReplicaSessionCheckedBeforeReuse(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	r := e.cl.Replicas().Pick("k", true, 0)
	e.script(r, replicaSession(queryRows("SELECT r", int64(r+1))), replicaSession(queryRows("SELECT r", int64(r+1))))
	c := e.open(splitCfg)
	keyed := WithReadIntent(context.Background(), "k")
	if got := readOne(t, c, keyed, "SELECT r"); got != int64(r+1) {
		t.Fatalf("read on H%d, want H%d", got, r+1)
	}
	e.clock.Advance(2 * cluster.DefaultIdleCheck)
	e.phys(r, 0).Broken.Store(true) // closed by the server while idle
	if got := readOne(t, c, keyed, "SELECT r"); got != int64(r+1) {
		t.Fatalf("read after the idle session died on H%d, want its replica H%d again", got, r+1)
	}
	if n := e.dialed(r); n != 2 {
		t.Errorf("H%d dialled %d times, want 2 (a new session there)", r+1, n)
	}
	if st := e.cl.Stats(); st.ReplicaRetries != 0 {
		t.Errorf("ReplicaRetries %d, want 0: the dead session was found before anything was sent", st.ReplicaRetries)
	}
	e.allMet()
}
