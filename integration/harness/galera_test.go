//go:build unix

package harness

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
)

// TestGaleraHarness runs one 3-node Galera cluster on the backend MYSQLFAILOVER_BACKEND
// names (processes by default; make containers-all runs it on containers) and applies
// every Galera fault the harness offers, each undone before the next subtest, asserting
// what the servers say and answer. It logs each step's time as FIGURE lines.
func TestGaleraHarness(t *testing.T) {
	c := Start(t, 3, WithGalera())
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	figure := func(name string, begin time.Time) {
		t.Logf("FIGURE TestGaleraHarness: %s_ms=%d", name, time.Since(begin).Milliseconds())
	}
	t.Logf("FIGURE TestGaleraHarness: bring_up_ms=%d", c.BringUp().Milliseconds())
	must := func(t *testing.T, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	dbs := map[int]*sql.DB{}
	app := func(i int) *sql.DB {
		if dbs[i] == nil {
			db, err := sql.Open("mysql", c.HostDSN(i, "timeout=2s&readTimeout=10s"))
			if err != nil {
				t.Fatal(err)
			}
			dbs[i] = db
		}
		return dbs[i]
	}
	defer func() {
		for _, db := range dbs {
			db.Close()
		}
	}()
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.t (id INT PRIMARY KEY, v INT)"))
	must(t, c.Node(1).Exec(ctx, "INSERT INTO app.t VALUES (1, 0), (2, 0)"))
	must(t, c.WaitSynced(ctx))
	// broken means a subtest left the cluster in pieces: the next ones would only repeat it.
	whole := func(t *testing.T) {
		t.Helper()
		if err := c.WaitSynced(ctx); err != nil {
			t.Fatalf("the subtest left the cluster broken: %v", err)
		}
	}

	t.Run("bring-up", func(t *testing.T) {
		if !c.Galera() || c.Primary() != c.Node(1) {
			t.Errorf("Galera %v, primary %v", c.Galera(), c.Primary())
		}
		indexes := map[int]bool{}
		for _, n := range c.Nodes() {
			s, err := n.GaleraStatus(ctx)
			must(t, err)
			if !s.Synced() || s.ClusterSize != 3 || s.Desync || s.RejectQueries != "NONE" || s.ClusterConfID < 0 {
				t.Errorf("node %d: %v, want synced in a cluster of 3", n.Index(), s)
			}
			indexes[s.LocalIndex] = true
			for q, want := range map[string]string{
				"SELECT @@wsrep_on":             "1",
				"SELECT @@binlog_format":        "ROW",
				"SELECT @@wsrep_sst_method":     "rsync",
				"SELECT @@wsrep_gtid_mode":      "1",
				"SELECT @@wsrep_gtid_domain_id": "1",
				"SELECT @@gtid_domain_id":       fmt.Sprint(100 + n.Index()),
				"SELECT @@wsrep_node_name":      galeraNodeName(n.Index()),
				"SELECT @@read_only":            "0",
			} {
				if got, err := n.QueryString(ctx, q); err != nil || got != want {
					t.Errorf("node %d: %s = %q (%v), want %q", n.Index(), q, got, err, want)
				}
			}
			if v, err := n.QueryInt(ctx, "SELECT @@innodb_autoinc_lock_mode"); err != nil || v != 2 {
				t.Errorf("node %d: innodb_autoinc_lock_mode %d (%v), want 2", n.Index(), v, err)
			}
		}
		if len(indexes) != 3 {
			t.Errorf("wsrep_local_index values %v, want 3 distinct", indexes)
		}
		if !strings.Contains(c.DSN(""), c.Node(1).ProxyAddr()+","+c.Node(2).ProxyAddr()+","+c.Node(3).ProxyAddr()) {
			t.Errorf("DSN %s does not list the proxies in node order", c.DSN(""))
		}
		// The app user writes on node 3 and the write is on node 1: Galera replicated the
		// user, the databases and the row.
		_, err := app(3).ExecContext(ctx, "INSERT INTO app.t VALUES (3, 3)")
		must(t, err)
		must(t, c.WaitReplicasCaughtUp(ctx))
		if v, err := c.Node(1).QueryInt(ctx, "SELECT v FROM app.t WHERE id = 3"); err != nil || v != 3 {
			t.Errorf("node 1 reads %d (%v) of node 3's write, want 3", v, err)
		}
		if err := c.Switchover(ctx, 2); err == nil {
			t.Error("Switchover on a Galera cluster: no error")
		}
		if _, ok := c.Node(1).inst.(Partitioner); !ok {
			if err := c.Node(1).Partition(ctx); err == nil || !strings.Contains(err.Error(), "Isolate") {
				t.Errorf("Partition of a local Galera node: %v, want an error naming Isolate", err)
			}
		}
	})

	t.Run("isolate", func(t *testing.T) {
		defer whole(t)
		// A transaction open on node 3 before it is cut off.
		tx, err := app(3).BeginTx(ctx, nil)
		must(t, err)
		defer tx.Rollback()
		_, err = tx.ExecContext(ctx, "UPDATE app.t SET v = v + 1 WHERE id = 1")
		must(t, err)
		begin := time.Now()
		must(t, c.Node(3).Isolate(ctx))
		figure("isolate", begin)
		s, err := c.Node(3).GaleraStatus(ctx)
		must(t, err)
		if s.Ready || s.ClusterStatus != "non-Primary" || s.LocalState != LocalStateInitialized || s.ClusterSize != 1 || s.ClusterConfID != -1 {
			t.Errorf("isolated node: %v, want not ready, non-Primary, state 0, size 1, conf -1", s)
		}
		if _, err := c.Node(1).WaitStatus(ctx, "size 2", func(s GaleraStatus) bool { return s.Synced() && s.ClusterSize == 2 }); err != nil {
			t.Error(err)
		}
		assertRefusals(t, ctx, app(3))
		wantMySQLError(t, "UPDATE in the open transaction", execErr(tx.ExecContext(ctx, "UPDATE app.t SET v = v + 1 WHERE id = 2")), 1047)
		if v, err := txInt(ctx, tx, "SELECT @@in_transaction"); err != nil || v != 1 {
			t.Errorf("@@in_transaction after the refused UPDATE: %d (%v), want 1 (the transaction is still open)", v, err)
		}
		begin = time.Now()
		must(t, c.Node(3).Unisolate(ctx))
		figure("unisolate", begin)
		// The transaction survived: a COMMIT now commits the first UPDATE.
		if v, err := txInt(ctx, tx, "SELECT @@in_transaction"); err != nil || v != 1 {
			t.Errorf("@@in_transaction after the rejoin: %d (%v), want 1", v, err)
		}
		must(t, tx.Commit())
		must(t, c.WaitReplicasCaughtUp(ctx))
		if v, err := c.Node(1).QueryInt(ctx, "SELECT v FROM app.t WHERE id = 1"); err != nil || v != 1 {
			t.Errorf("node 1 reads v=%d (%v) after the late COMMIT, want 1", v, err)
		}
	})

	t.Run("desync", func(t *testing.T) {
		defer whole(t)
		begin := time.Now()
		must(t, c.Node(2).SetDesync(ctx, true))
		figure("desync_on", begin)
		s, err := c.Node(2).GaleraStatus(ctx)
		must(t, err)
		if !s.Ready || s.ClusterStatus != "Primary" || s.LocalState != LocalStateDonor || s.LocalStateComment != "Donor/Desynced" || !s.Desync || s.DesyncCount != 1 {
			t.Errorf("desynced node: %v, want ready, Primary, state 2 Donor/Desynced, desync", s)
		}
		if _, err := app(2).ExecContext(ctx, "UPDATE app.t SET v = v + 1 WHERE id = 2"); err != nil {
			t.Errorf("a write on a desynced node: %v, want it taken", err)
		}
		begin = time.Now()
		must(t, c.Node(2).SetDesync(ctx, false))
		figure("desync_off", begin)
	})

	t.Run("reject queries", func(t *testing.T) {
		defer whole(t)
		defer c.Node(2).RejectQueries(ctx, RejectNone)
		open, err := app(2).Conn(ctx)
		must(t, err)
		defer open.Close()
		must(t, open.PingContext(ctx))
		must(t, c.Node(2).RejectQueries(ctx, RejectAll))
		s, err := c.Node(2).GaleraStatus(ctx)
		must(t, err)
		if !s.Synced() || s.RejectQueries != "ALL" {
			t.Errorf("node rejecting queries: %v, want Synced (ready, Primary) and reject ALL", s)
		}
		assertRefusals(t, ctx, app(2))
		var one int
		if err := open.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
			t.Errorf("SELECT 1 on a session open before ALL: %v", err)
		}
		must(t, c.Node(2).RejectQueries(ctx, RejectAllKill))
		err = open.QueryRowContext(ctx, "SELECT 1").Scan(&one)
		if !errors.Is(err, mysql.ErrInvalidConn) && !errors.Is(err, driver.ErrBadConn) {
			t.Errorf("a session open when ALL_KILL was set: %v, want it closed by the server (invalid connection)", err)
		}
		must(t, c.Node(2).RejectQueries(ctx, RejectNone))
		if _, err := app(2).ExecContext(ctx, "UPDATE app.t SET v = v + 1 WHERE id = 2"); err != nil {
			t.Errorf("a write after NONE: %v", err)
		}
		if err := c.Node(2).RejectQueries(ctx, "SOME"); err == nil {
			t.Error("RejectQueries(SOME): no error")
		}
	})

	t.Run("certification conflict", func(t *testing.T) {
		defer whole(t)
		// A is idle inside a transaction on node 1 when B's write of the same row, committed
		// on node 2, is applied there: A's next statement gets 1213 and A is over.
		a, err := app(1).Conn(ctx)
		must(t, err)
		defer a.Close()
		_, err = a.ExecContext(ctx, "BEGIN")
		must(t, err)
		_, err = a.ExecContext(ctx, "UPDATE app.t SET v = v + 10 WHERE id = 2")
		must(t, err)
		_, err = app(2).ExecContext(ctx, "UPDATE app.t SET v = v + 100 WHERE id = 2")
		must(t, err)
		must(t, c.WaitReplicasCaughtUp(ctx))
		wantMySQLError(t, "the next statement of the aborted transaction", execErr(a.ExecContext(ctx, "SELECT 1 FROM app.t LIMIT 1")), 1213)
		var inTx int
		must(t, a.QueryRowContext(ctx, "SELECT @@in_transaction").Scan(&inTx))
		if inTx != 0 {
			t.Errorf("@@in_transaction after 1213: %d, want 0", inTx)
		}
	})

	t.Run("gtid", func(t *testing.T) {
		conn, err := app(1).Conn(ctx)
		must(t, err)
		defer conn.Close()
		_, err = conn.ExecContext(ctx, "UPDATE app.t SET v = v + 1 WHERE id = 3")
		must(t, err)
		var gtid string
		must(t, conn.QueryRowContext(ctx, "SELECT WSREP_LAST_WRITTEN_GTID()").Scan(&gtid))
		if !strings.HasPrefix(gtid, fmt.Sprint(wsrepGTIDDomain)+"-") {
			t.Errorf("WSREP_LAST_WRITTEN_GTID() = %q, want domain %d", gtid, wsrepGTIDDomain)
		}
		var reached int
		must(t, app(2).QueryRowContext(ctx, "SELECT WSREP_SYNC_WAIT_UPTO_GTID(?, 5)", gtid).Scan(&reached))
		if reached != 1 {
			t.Errorf("WSREP_SYNC_WAIT_UPTO_GTID(%s) on node 2 = %d, want 1", gtid, reached)
		}
		if pos, err := c.Node(2).QueryString(ctx, "SELECT @@gtid_binlog_pos"); err != nil || !strings.Contains(pos, gtid) {
			t.Errorf("node 2's gtid_binlog_pos %q (%v) does not hold %s: wsrep_gtid_mode should make GTIDs the same on every node", pos, err, gtid)
		}
	})

	t.Run("freeze and thaw", func(t *testing.T) {
		defer whole(t)
		must(t, c.Node(3).Freeze())
		qctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err := c.Node(3).GaleraStatus(qctx)
		cancel()
		if err == nil {
			t.Error("a frozen node answered")
		}
		must(t, c.Node(3).Thaw())
	})

	t.Run("kill and rejoin by IST", func(t *testing.T) {
		defer whole(t)
		begin := time.Now()
		must(t, c.Node(3).Kill())
		if _, err := c.Node(1).WaitStatus(ctx, "size 2", func(s GaleraStatus) bool { return s.Synced() && s.ClusterSize == 2 }); err != nil {
			t.Fatal(err)
		}
		figure("kill_noticed", begin)
		_, err := app(1).ExecContext(ctx, "INSERT INTO app.t VALUES (4, 4)")
		must(t, err)
		mark := logMark(c.Node(3))
		begin = time.Now()
		must(t, c.Node(3).Restart(ctx))
		figure("restart_after_kill", begin)
		log := logSince(c.Node(3), mark)
		if !strings.Contains(log, "IST received") || strings.Contains(log, "rsync SST completed") {
			t.Errorf("the killed node did not rejoin by IST alone; its log since the restart:\n%s", tail(log, 40))
		}
		if v, err := c.Node(3).QueryInt(ctx, "SELECT v FROM app.t WHERE id = 4"); err != nil || v != 4 {
			t.Errorf("node 3 reads %d (%v) of the write it missed, want 4", v, err)
		}
	})

	t.Run("stop and start", func(t *testing.T) {
		defer whole(t)
		begin := time.Now()
		must(t, c.Node(2).Stop(ctx))
		figure("clean_stop", begin)
		if s, err := c.Node(1).GaleraStatus(ctx); err != nil || s.ClusterSize != 2 || !s.Synced() {
			t.Errorf("node 1 right after node 2's clean stop: %v (%v), want Synced in a cluster of 2 (a clean leave is announced)", s, err)
		}
		begin = time.Now()
		must(t, c.Node(2).Restart(ctx))
		figure("start_after_stop", begin)
	})

	t.Run("quorum loss and rejoin", func(t *testing.T) {
		defer whole(t)
		begin := time.Now()
		must(t, c.LoseQuorum(ctx, 1))
		figure("lose_quorum", begin)
		for _, n := range c.Nodes() {
			if s, err := n.GaleraStatus(ctx); err != nil || s.Ready || s.ClusterStatus != "non-Primary" {
				t.Errorf("node %d after the quorum loss: %v (%v), want non-Primary", n.Index(), s, err)
			}
		}
		wantMySQLError(t, "a read on the survivor", execErr(app(1).ExecContext(ctx, "SELECT COUNT(*) FROM app.t")), 1047)
		begin = time.Now()
		must(t, c.RestoreQuorum(ctx))
		figure("restore_quorum", begin)
	})

	t.Run("quorum loss and bootstrap", func(t *testing.T) {
		defer whole(t)
		begin := time.Now()
		must(t, eachNode([]*Node{c.Node(2), c.Node(3)}, (*Node).Kill))
		if _, err := c.Node(1).WaitStatus(ctx, "non-Primary", func(s GaleraStatus) bool { return s.ClusterStatus == "non-Primary" }); err != nil {
			t.Fatal(err)
		}
		figure("kill_two_noticed", begin)
		wantMySQLError(t, "a write on the survivor", execErr(app(1).ExecContext(ctx, "INSERT INTO app.t VALUES (5, 5)")), 1047)
		begin = time.Now()
		must(t, c.Bootstrap(ctx, 1))
		figure("bootstrap", begin)
		if s, err := c.Node(1).GaleraStatus(ctx); err != nil || !s.Synced() || s.ClusterSize != 1 {
			t.Errorf("node 1 after Bootstrap: %v (%v), want Synced alone", s, err)
		}
		_, err := app(1).ExecContext(ctx, "INSERT INTO app.t VALUES (5, 5)")
		must(t, err)
		begin = time.Now()
		must(t, eachNode([]*Node{c.Node(2), c.Node(3)}, func(n *Node) error { return n.Restart(ctx) }))
		figure("restart_two", begin)
		must(t, c.WaitSynced(ctx))
		for _, i := range []int{2, 3} {
			if v, err := c.Node(i).QueryInt(ctx, "SELECT v FROM app.t WHERE id = 5"); err != nil || v != 5 {
				t.Errorf("node %d reads %d (%v) of the write made while it was down, want 5", i, v, err)
			}
		}
	})

	t.Run("resync from a donor", func(t *testing.T) {
		defer whole(t)
		// Watch the donor while node 3 is wiped and resynced from it.
		var mu sync.Mutex
		states := map[string]bool{}
		var donorFirst, donorLast time.Time
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(10 * time.Millisecond):
				}
				qctx, cancel := context.WithTimeout(ctx, time.Second)
				s, err := c.Node(2).GaleraStatus(qctx)
				cancel()
				if err == nil {
					mu.Lock()
					states[fmt.Sprintf("%d %s", s.LocalState, s.LocalStateComment)] = true
					if s.LocalState == LocalStateDonor {
						if donorFirst.IsZero() {
							donorFirst = time.Now()
						}
						donorLast = time.Now()
					}
					mu.Unlock()
				}
			}
		}()
		_, err := app(1).ExecContext(ctx, "INSERT INTO app.t VALUES (6, 6)")
		must(t, err)
		mark := logMark(c.Node(3))
		begin := time.Now()
		err = c.Node(3).Resync(ctx, c.Node(2))
		close(stop)
		wg.Wait()
		must(t, err)
		figure("resync", begin)
		log := logSince(c.Node(3), mark)
		if !strings.Contains(log, "rsync SST completed") {
			t.Errorf("node 3 did not get a full SST; its log since:\n%s", tail(log, 40))
		}
		if !strings.Contains(log, "requested state transfer from 'node2,'") {
			t.Errorf("node 3 did not ask node 2 for its state (wsrep_sst_donor); its log since:\n%s", tail(log, 40))
		}
		if !states["2 Donor/Desynced"] {
			t.Errorf("node 2's states during the resync: %v, want 2 Donor/Desynced among them", states)
		} else {
			t.Logf("FIGURE TestGaleraHarness: donor_state_ms=%d", donorLast.Sub(donorFirst).Milliseconds())
		}
		if v, err := c.Node(3).QueryInt(ctx, "SELECT v FROM app.t WHERE id = 6"); err != nil || v != 6 {
			t.Errorf("node 3 reads %d (%v) after its SST, want 6", v, err)
		}
	})

	if _, ok := c.Node(1).inst.(Partitioner); ok {
		t.Run("partition", func(t *testing.T) {
			defer whole(t)
			begin := time.Now()
			must(t, c.Node(3).Partition(ctx))
			if _, err := c.Node(3).WaitStatus(ctx, "non-Primary", func(s GaleraStatus) bool { return s.ClusterStatus == "non-Primary" }); err != nil {
				t.Fatal(err)
			}
			figure("partition", begin)
			begin = time.Now()
			must(t, c.Node(3).Heal(ctx))
			if _, err := c.Node(3).WaitStatus(ctx, "Synced", GaleraStatus.Synced); err != nil {
				t.Fatal(err)
			}
			figure("heal", begin)
		})
	}
}

// assertRefusals checks what a node that refuses work (non-Primary, or
// wsrep_reject_queries=ALL) answers to the app user: the handshake, SELECT 1, SET, USE,
// SHOW and reads of variables and status work; statements on tables, BEGIN, COMMIT and DO
// get 1047 (08S01).
func assertRefusals(t *testing.T, ctx context.Context, db *sql.DB) {
	t.Helper()
	for _, q := range []string{"SELECT 1", "SET SESSION sql_mode = 'STRICT_TRANS_TABLES'", "USE app", "SHOW TABLES",
		"SELECT @@read_only", "SHOW GLOBAL STATUS LIKE 'wsrep_ready'",
		"SELECT variable_value FROM information_schema.GLOBAL_STATUS WHERE variable_name = 'wsrep_cluster_status'",
		"SELECT WSREP_LAST_SEEN_GTID()"} {
		if err := execErr(db.ExecContext(ctx, q)); err != nil {
			t.Errorf("%s: %v, want it answered", q, err)
		}
	}
	for _, q := range []string{"SELECT COUNT(*) FROM app.t", "INSERT INTO app.t VALUES (100, 0)", "BEGIN", "COMMIT", "DO 1"} {
		wantMySQLError(t, q, execErr(db.ExecContext(ctx, q)), 1047)
	}
}

func execErr(_ sql.Result, err error) error { return err }

func txInt(ctx context.Context, tx *sql.Tx, q string) (int64, error) {
	var v int64
	err := tx.QueryRowContext(ctx, q).Scan(&v)
	return v, err
}

// wantMySQLError checks err is the server's error number (1047: 08S01 "WSREP has not yet
// prepared node for application use"; 1213: 40001 "Deadlock found when trying to get
// lock; try restarting transaction").
func wantMySQLError(t *testing.T, what string, err error, number uint16) {
	t.Helper()
	want := map[uint16][2]string{
		1047: {"08S01", "WSREP has not yet prepared node for application use"},
		1213: {"40001", "Deadlock found when trying to get lock; try restarting transaction"},
	}[number]
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		t.Errorf("%s: %v, want error %d", what, err, number)
		return
	}
	if me.Number != number || string(me.SQLState[:]) != want[0] || me.Message != want[1] {
		t.Errorf("%s: %d (%s) %q, want %d (%s) %q", what, me.Number, me.SQLState[:], me.Message, number, want[0], want[1])
	}
}

// logMark and logSince give the part of a node's server log written after the mark.
func logMark(n *Node) int { return len(serverLog(n)) }

func logSince(n *Node, mark int) string {
	log := serverLog(n)
	if mark > len(log) {
		return log
	}
	return log[mark:]
}

func serverLog(n *Node) string {
	if lt, ok := n.inst.(interface{ LogTail(int) string }); ok {
		return lt.LogTail(1 << 30)
	}
	return ""
}
