package integration

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Read/write splitting on real replicas: replicaReads, maxReplicaLag,
// replicaSelection, causalReads, routing keys, replica sessions, and replicas or the
// primary killed under read-intent load. Who served a statement is read from the
// statement itself (@@port, @@server_id), never from the driver. Counts are asserted;
// times are reported as FIGURE lines and never asserted (each wait has a generous hang
// guard instead).

// replicaParams are the DSN options every scenario here starts from: replica reads, and
// probes every 100 ms (they read the replicas' roles, and their lag with maxReplicaLag).
const replicaParams = "replicaReads=true&checkInterval=100ms"

// readIntent marks ctx's statements as reads a replica may serve, without a routing key.
func readIntent(ctx context.Context) context.Context { return mysqlfailover.WithReadIntent(ctx, "") }

// hostOf returns node i's HostStats in p's Stats (zero value when the pool lists no such
// host).
func hostOf(c *harness.Cluster, p *faultPool, i int) failover.HostStats {
	h, _ := healthHost(p.cn.Stats(), c.Node(i).ProxyAddr())
	return h
}

// replicaReadsOf returns HostStats.ReplicaReads of every node, by node index.
func replicaReadsOf(c *harness.Cluster, st failover.Stats) map[int]int64 {
	out := map[int]int64{}
	for _, h := range st.Hosts {
		out[c.NodeByAddr(h.Addr)] = h.ReplicaReads
	}
	return out
}

// replicaSummary is each host's replica fields of st, for failure messages and figures.
func replicaSummary(c *harness.Cluster, st failover.Stats) string {
	var parts []string
	for _, h := range st.Hosts {
		parts = append(parts, fmt.Sprintf("node%d{state=%v lag=%v reads=%d skip=%q}",
			c.NodeByAddr(h.Addr), h.State, h.ReplicaLag, h.ReplicaReads, h.ReplicaSkip))
	}
	return fmt.Sprintf("active=node%d %s retries=%d to_primary=%d causal_waits=%d causal_primary=%d",
		c.NodeByAddr(st.Active), strings.Join(parts, " "), st.ReplicaRetries, st.ReplicaToPrimary, st.CausalWaits, st.CausalPrimary)
}

// waitReplicasServe runs read-intent reads on p (SELECT @@port) until each of nodes has
// served one, for at most 10 s: the probes have found the replicas and the pool routes to
// them. It fails the test otherwise, or on a read's error.
func waitReplicasServe(t *testing.T, ctx context.Context, c *harness.Cluster, p *faultPool, nodes ...int) {
	t.Helper()
	seen := map[int]bool{}
	var err error
	ok := waitFor(10*time.Second, func() bool {
		var n int
		if n, err = nodeOf(readIntent(ctx), c, p.db); err != nil {
			return true
		}
		seen[n] = true
		for _, want := range nodes {
			if !seen[want] {
				return false
			}
		}
		return true
	})
	if err != nil {
		t.Fatalf("read-intent read while waiting for the replicas: %v", err)
	}
	if !ok {
		t.Fatalf("within 10 s read-intent reads were served by %v, want each of nodes %v; %s",
			seen, nodes, replicaSummary(c, p.cn.Stats()))
	}
}

// waitQualifiesAgain waits (10 s at most) until node has qualified as a replica
// (ReplicaSkip "") through 3 check intervals of replicaParams (100ms) on end, after its
// replication was stopped and started: a probe that ran between the two took it out until
// its next probe, and its result may be published only after a first look found "".
func waitQualifiesAgain(t *testing.T, c *harness.Cluster, p *faultPool, node int) {
	t.Helper()
	var since time.Time
	if !waitFor(10*time.Second, func() bool {
		if hostOf(c, p, node).ReplicaSkip != "" {
			since = time.Time{}
			return false
		}
		if since.IsZero() {
			since = time.Now()
		}
		return time.Since(since) >= 300*time.Millisecond
	}) {
		t.Fatalf("node %d not a replica again within 10 s of its replication restarting: %s", node, replicaSummary(c, p.cn.Stats()))
	}
}

// pctl summarises ds: median, p99 and max, rounded to the microsecond.
func pctl(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(time.Microsecond) }
	return fmt.Sprintf("median=%v p99=%v max=%v n=%d", r(s[len(s)/2]), r(s[len(s)*99/100]), r(s[len(s)-1]), len(s))
}

// setConnReadOnly calls mysqlfailover.Conn.SetReadOnly(on) on the failover connection
// behind sc, reached through mysqlfailover.ConnOf inside Raw.
func setConnReadOnly(ctx context.Context, sc *sql.Conn, on bool) error {
	return sc.Raw(func(dc any) error {
		fc, ok := mysqlfailover.ConnOf(dc)
		if !ok {
			return fmt.Errorf("ConnOf(%T): not a mysqlfailover connection", dc)
		}
		return fc.SetReadOnly(ctx, on)
	})
}

// TestReplicaHarness checks the harness's replica helpers with go-sql-driver alone (no
// read/write splitting option): StopReplicaSQL leaves node 2 at its position while node 3 applies a
// write, its lag reads unknown (-1) and WaitReplicasCaughtUp leaves it out;
// StartReplicaSQL lets it catch up; the app user reads SHOW SLAVE STATUS (SHOW REPLICA
// STATUS) as the harness sets it up, not after RevokeReplicaMonitor, again after
// GrantReplicaMonitor (each on a session opened after the change), and never writes on a
// replica.
func TestReplicaHarness(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
	n2, n3 := c.Node(2), c.Node(3)
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.h (id INT PRIMARY KEY)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	for _, n := range []*harness.Node{n2, n3} {
		lag, err := n.ReplicaLag(ctx)
		must(t, err)
		if lag < 0 {
			t.Errorf("node %d: lag %v while replicating, want >= 0", n.Index(), lag)
		}
	}
	if lag, err := c.Node(1).ReplicaLag(ctx); err != nil || lag != -1 {
		t.Errorf("node 1 (no replica): lag %v, %v; want -1, nil", lag, err)
	}

	must(t, n2.StopReplicaSQL(ctx))
	if !n2.ReplicaSQLStopped() {
		t.Error("ReplicaSQLStopped() false after StopReplicaSQL")
	}
	must(t, c.Node(1).Exec(ctx, "INSERT INTO app.h VALUES (1)"))
	must(t, c.WaitReplicasCaughtUp(ctx)) // node 3 only
	count := func(n *harness.Node) int64 {
		v, err := n.QueryInt(ctx, "SELECT COUNT(*) FROM app.h")
		must(t, err)
		return v
	}
	if a, b := count(n2), count(n3); a != 0 || b != 1 {
		t.Errorf("rows with node 2's SQL thread stopped: node 2 %d, node 3 %d; want 0 and 1", a, b)
	}
	lag, err := n2.ReplicaLag(ctx)
	must(t, err)
	if lag != -1 {
		t.Errorf("node 2's lag with its SQL thread stopped: %v, want -1 (NULL)", lag)
	}
	start := time.Now()
	must(t, n2.StartReplicaSQL(ctx))
	must(t, n2.CatchUp(ctx, c.Node(1)))
	fig("sql_thread_start_to_caught_up", time.Since(start).Round(time.Millisecond))
	if n2.ReplicaSQLStopped() || count(n2) != 1 {
		t.Errorf("after StartReplicaSQL: stopped=%v, %d rows on node 2; want false and 1", n2.ReplicaSQLStopped(), count(n2))
	}

	// The app user's privilege to read the replica status: granted by the harness, taken
	// by RevokeReplicaMonitor, given back by GrantReplicaMonitor, each for sessions opened
	// after it; it bypasses no read_only.
	query := "SHOW SLAVE STATUS"
	if c.Flavour() == harness.MySQL {
		query = "SHOW REPLICA STATUS"
	}
	status := func(what string) error {
		t.Helper()
		db := openDB(t, "mysql", c.HostDSN(2, ""))
		db.SetMaxIdleConns(0)
		defer db.Close()
		rows, err := db.QueryContext(ctx, query)
		if err != nil {
			return err
		}
		defer rows.Close()
		if !rows.Next() {
			t.Errorf("%s as the app user on node 2 %s: no row", query, what)
		}
		if _, err := db.ExecContext(ctx, "INSERT INTO app.h VALUES (2)"); rolesReadOnlyNumber(err) != 1290 {
			t.Errorf("app user's INSERT on node 2 %s: %v, want MySQL error 1290", what, err)
		}
		return nil
	}
	if err := status("as the harness set it up"); err != nil {
		t.Errorf("%s as the app user as the harness set it up: %v, want rows", query, err)
	}
	must(t, c.RevokeReplicaMonitor(ctx))
	must(t, c.WaitReplicasCaughtUp(ctx))
	err = status("after RevokeReplicaMonitor")
	var me *mysql.MySQLError
	if !errors.As(err, &me) || me.Number != 1227 {
		t.Errorf("%s as the app user after RevokeReplicaMonitor: %v, want MySQL error 1227 (access denied)", query, err)
	}
	fig("app_user_status_after_revoke", err)
	must(t, c.GrantReplicaMonitor(ctx))
	must(t, c.WaitReplicasCaughtUp(ctx))
	if err := status("after GrantReplicaMonitor"); err != nil {
		t.Errorf("%s as the app user after GrantReplicaMonitor: %v, want rows", query, err)
	}
}

// TestReplicaReadsRouting: where each kind of statement runs.
//
//   - off: no read/write splitting option. Every intent (WithReadIntent, a ReadOnly transaction, a
//     connection after SetReadOnly(true)) runs on node 1, and the pool opens no session
//     to the replicas (their processlists show no app-user session).
//   - intents: replicaReads=true&checkInterval=100ms. The three intents run on nodes 2
//     and 3 (a read-only transaction on one session throughout); plain reads, writes, a
//     default transaction and a read-write BeginTx with a read-intent context run on node 1;
//     SetReadOnly(false) brings the connection back to node 1; node 1 serves no replica
//     read (Stats); a prepared *sql.Stmt run in turn with and without read intent, and
//     statements with arguments, run on a replica and on node 1 in turn, each with its
//     argument. Reported, not asserted: where BeginTx runs on a connection after
//     SetReadOnly(true).
//   - spread: 1000 read-intent reads without a key from 8 goroutines (8 connections),
//     under round-robin and under least-in-flight: each replica serves at least 30%,
//     node 1 none, no error, HostStats.ReplicaReads counts exactly the reads each
//     served, and no node has more than 9 app-user sessions (one per connection and the
//     probe: the N*(1+R) bound of the design); a sequential run of 200 is reported (and
//     asserted for round-robin, which alternates).
func TestReplicaReadsRouting(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, 3*time.Minute)
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.rr (id INT AUTO_INCREMENT PRIMARY KEY, port INT NOT NULL)"))
	must(t, c.WaitReplicasCaughtUp(ctx))

	appSessions := func(i int) int64 {
		v, err := c.Node(i).AppSessions(ctx)
		must(t, err)
		return v
	}

	// First, so that no other pool's sessions are on the replicas.
	t.Run("off", func(t *testing.T) {
		fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
		p := openFaultPool(t, c.DSN("readTimeout=2s"))
		p.db.SetMaxOpenConns(4)
		where := map[string]map[int]int{}
		on := func(what string, n int, err error) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if where[what] == nil {
				where[what] = map[int]int{}
			}
			where[what][n]++
		}
		// Four connections at once, so the pool holds more than one.
		var wg sync.WaitGroup
		errs := make([]error, 4)
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 10 {
					n, err := nodeOf(readIntent(ctx), c, p.db)
					if err == nil && n != 1 {
						err = fmt.Errorf("read-intent read on node %d", n)
					}
					if err != nil {
						errs[g] = err
						return
					}
				}
			}()
		}
		wg.Wait()
		must(t, errors.Join(errs...))
		for range 20 {
			n, err := nodeOf(readIntent(ctx), c, p.db)
			on("with-read-intent", n, err)
		}
		tx, err := p.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		must(t, err)
		for range 3 {
			n, err := nodeOf(ctx, c, tx)
			on("readonly-tx", n, err)
		}
		must(t, tx.Commit())
		sc, err := p.db.Conn(ctx)
		must(t, err)
		must(t, setConnReadOnly(ctx, sc, true))
		for range 5 {
			n, err := nodeOf(ctx, c, sc)
			on("set-read-only", n, err)
		}
		must(t, setConnReadOnly(ctx, sc, false))
		must(t, sc.Close())
		for what, by := range where {
			if len(by) != 1 || by[1] == 0 {
				t.Errorf("%s without replicaReads: served by %v, want node 1 only", what, by)
			}
			fig(what+"_by_node", by)
		}
		for _, i := range []int{2, 3} {
			if n := appSessions(i); n != 0 {
				t.Errorf("node %d has %d app-user sessions, want 0: the pool opened sessions to a replica without replicaReads", i, n)
			}
		}
		st := p.cn.Stats()
		for _, h := range st.Hosts {
			if h.ReplicaReads != 0 || h.ReplicaSkip != "" {
				t.Errorf("without replicaReads, %s: ReplicaReads %d, ReplicaSkip %q; want 0 and \"\"", h.Addr, h.ReplicaReads, h.ReplicaSkip)
			}
		}
		if st.ReplicaToPrimary != 0 || st.ReplicaRetries != 0 {
			t.Errorf("without replicaReads: %s, want no replica counts", replicaSummary(c, st))
		}
		fig("app_sessions", fmt.Sprintf("node1=%d node2=%d node3=%d", appSessions(1), appSessions(2), appSessions(3)))
	})

	t.Run("intents", func(t *testing.T) {
		fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
		p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=2s"))
		p.db.SetMaxOpenConns(4)
		waitReplicasServe(t, ctx, c, p, 2, 3)
		before := replicaReadsOf(c, p.cn.Stats())

		replica := func(n int) bool { return n == 2 || n == 3 }
		check := func(what string, want func(int) bool, wantText string, n int, err error, by map[int]int) {
			t.Helper()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			by[n]++
			if !want(n) {
				t.Errorf("%s ran on node %d, want %s", what, n, wantText)
			}
		}
		isPrimary := func(n int) bool { return n == 1 }

		intent := map[int]int{}
		for range 40 {
			n, err := nodeOf(readIntent(ctx), c, p.db)
			check("a read with WithReadIntent", replica, "a replica", n, err, intent)
		}
		if intent[2] == 0 || intent[3] == 0 {
			t.Errorf("40 read-intent reads by node: %v, want both replicas", intent)
		}
		fig("with_read_intent_by_node", intent)

		plain := map[int]int{}
		for range 20 {
			n, err := nodeOf(ctx, c, p.db)
			check("a read without intent", isPrimary, "node 1", n, err, plain)
		}
		fig("plain_reads_by_node", plain)

		for range 10 {
			_, err := p.db.ExecContext(ctx, "INSERT INTO rr (port) VALUES (@@port)")
			must(t, err)
		}
		if v, err := c.Node(1).QueryInt(ctx, "SELECT COUNT(*) FROM app.rr WHERE port = ?", c.Node(1).Port()); err != nil || v != 10 {
			t.Errorf("writes: %d rows written on node 1 (%v), want 10", v, err)
		}

		tx := map[int]int{}
		for k := range 6 {
			opts := &sql.TxOptions{ReadOnly: true}
			what, tctx, want, wantName := "a ReadOnly transaction", ctx, replica, "a replica"
			if k%2 == 1 {
				// Read-write, on a request context that carries read intent: its writes
				// must work, so it stays on the primary.
				opts, what, tctx, want, wantName = nil, "a read-write transaction begun with a read-intent context", readIntent(ctx), isPrimary, "node 1"
			}
			x, err := p.db.BeginTx(tctx, opts)
			must(t, err)
			first, err := sessionOf(ctx, c, x)
			check(what, want, wantName, first.node, err, tx)
			for range 2 {
				s, err := sessionOf(ctx, c, x)
				must(t, err)
				if s != first {
					t.Errorf("%s moved from %+v to %+v", what, first, s)
				}
			}
			must(t, x.Commit())
		}
		fig("read_only_tx_by_node", tx)
		x, err := p.db.BeginTx(ctx, nil)
		must(t, err)
		n, err := nodeOf(ctx, c, x)
		check("a default transaction", isPrimary, "node 1", n, err, map[int]int{})
		must(t, x.Rollback())

		sc, err := p.db.Conn(ctx)
		must(t, err)
		defer sc.Close()
		must(t, setConnReadOnly(ctx, sc, true))
		ro := map[int]int{}
		for range 10 {
			n, err := nodeOf(ctx, c, sc)
			check("a read on a connection after SetReadOnly(true)", replica, "a replica", n, err, ro)
		}
		fig("set_read_only_by_node", ro)
		// A transaction on such a connection: reported, not asserted (the design routes
		// plain statements; whether BeginTx follows SetReadOnly is not stated).
		x, err = sc.BeginTx(ctx, nil)
		must(t, err)
		n, err = nodeOf(ctx, c, x)
		must(t, err)
		must(t, x.Rollback())
		fig("set_read_only_begin_tx_node", n)
		must(t, setConnReadOnly(ctx, sc, false))
		for range 5 {
			n, err := nodeOf(ctx, c, sc)
			check("a read after SetReadOnly(false)", isPrimary, "node 1", n, err, map[int]int{})
		}
		must(t, sc.Close())

		// Prepared statements: one *sql.Stmt run in turn with and without read intent,
		// and statements with arguments (prepared by go-sql-driver on the session that
		// runs them).
		ps, err := p.db.PrepareContext(ctx, "SELECT @@port, ?")
		must(t, err)
		prepared := map[string]map[int]int{"stmt-intent": {}, "stmt-plain": {}, "args-intent": {}, "args-plain": {}}
		for k := range 20 {
			for _, run := range []struct {
				what string
				q    func(context.Context) *sql.Row
				want func(int) bool
				text string
				rctx context.Context
			}{
				{"stmt-intent", func(x context.Context) *sql.Row { return ps.QueryRowContext(x, k) }, replica, "a replica", readIntent(ctx)},
				{"stmt-plain", func(x context.Context) *sql.Row { return ps.QueryRowContext(x, k) }, isPrimary, "node 1", ctx},
				{"args-intent", func(x context.Context) *sql.Row { return p.db.QueryRowContext(x, "SELECT @@port, ?", k) }, replica, "a replica", readIntent(ctx)},
				{"args-plain", func(x context.Context) *sql.Row { return p.db.QueryRowContext(x, "SELECT @@port, ?", k) }, isPrimary, "node 1", ctx},
			} {
				var port, echo int
				err := run.q(run.rctx).Scan(&port, &echo)
				if err == nil && echo != k {
					err = fmt.Errorf("argument %d came back as %d", k, echo)
				}
				check("a prepared statement ("+run.what+")", run.want, run.text, c.NodeByPort(port), err, prepared[run.what])
			}
		}
		must(t, ps.Close())
		for what, by := range prepared {
			fig("prepared_"+what+"_by_node", by)
		}

		after := replicaReadsOf(c, p.cn.Stats())
		if d := after[1] - before[1]; d != 0 {
			t.Errorf("node 1 served %d replica reads, want 0", d)
		}
		// The autocommit ones at least: 40 with WithReadIntent, 10 after SetReadOnly.
		if d := after[2] + after[3] - before[2] - before[3]; d < 50 {
			t.Errorf("ReplicaReads of nodes 2 and 3 grew by %d, want at least the 50 autocommit read-intent reads", d)
		}
		fig("stats", replicaSummary(c, p.cn.Stats()))
	})

	t.Run("spread", func(t *testing.T) {
		for _, sel := range []string{"round-robin", "least-in-flight"} {
			t.Run(sel, func(t *testing.T) {
				const workers, reads = 8, 1000
				fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
				// The last pool's sessions gone (closed, the server's threads ending).
				if !waitFor(5*time.Second, func() bool { return appSessions(1)+appSessions(2)+appSessions(3) == 0 }) {
					t.Fatalf("app-user sessions of closed pools still open: node1=%d node2=%d node3=%d", appSessions(1), appSessions(2), appSessions(3))
				}
				p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=2s&replicaSelection="+sel))
				p.db.SetMaxOpenConns(workers)
				p.db.SetMaxIdleConns(workers)
				waitReplicasServe(t, ctx, c, p, 2, 3)
				before := replicaReadsOf(c, p.cn.Stats())

				var mu sync.Mutex
				by := map[int]int{}
				var errs []error
				var wg sync.WaitGroup
				start := time.Now()
				for range workers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for range reads / workers {
							n, err := nodeOf(readIntent(ctx), c, p.db)
							mu.Lock()
							if err != nil {
								errs = append(errs, err)
							} else {
								by[n]++
							}
							mu.Unlock()
						}
					}()
				}
				wg.Wait()
				took := time.Since(start)
				after := replicaReadsOf(c, p.cn.Stats())
				if len(errs) > 0 {
					t.Errorf("%d of %d reads failed; first: %v", len(errs), reads, errs[0])
				}
				if by[1] != 0 {
					t.Errorf("node 1 served %d of the read-intent reads, want 0", by[1])
				}
				for _, i := range []int{2, 3} {
					if by[i] < reads*30/100 {
						t.Errorf("%s: node %d served %d of %d reads, want at least 30%%", sel, i, by[i], reads)
					}
					if d := after[i] - before[i]; d != int64(by[i]) {
						t.Errorf("node %d: HostStats.ReplicaReads grew by %d, the reads it served %d", i, d, by[i])
					}
				}
				// The bound of the design: N connections open at most N*(1+R) sessions,
				// one per host each, plus one probe connection per host.
				for _, i := range []int{1, 2, 3} {
					if v := appSessions(i); v > workers+1 {
						t.Errorf("node %d has %d app-user sessions, want at most %d (one per connection, one probe)", i, v, workers+1)
					}
				}
				fig("app_sessions", fmt.Sprintf("node1=%d node2=%d node3=%d", appSessions(1), appSessions(2), appSessions(3)))
				seq := map[int]int{}
				for range 200 {
					n, err := nodeOf(readIntent(ctx), c, p.db)
					must(t, err)
					seq[n]++
				}
				if sel == "round-robin" && (seq[2] < 60 || seq[3] < 60) {
					t.Errorf("round-robin, 200 sequential reads by node: %v, want each replica at least 30%%", seq)
				}
				fig("concurrent_by_node", fmt.Sprintf("node1=%d node2=%d node3=%d", by[1], by[2], by[3]))
				fig("concurrent_took", took.Round(time.Millisecond))
				fig("sequential_by_node", fmt.Sprintf("node1=%d node2=%d node3=%d", seq[1], seq[2], seq[3]))
				fig("stats", replicaSummary(c, p.cn.Stats()))
			})
		}
	})
}

// TestReplicaLagAvoided: maxReplicaLag=1s&checkInterval=100ms.
//
//   - Without the privilege that reads the replica status (RevokeReplicaMonitor), the
//     lag is unknown: both replicas are skipped (ReplicaLag -1, ReplicaSkip says why:
//     the privilege, or the server's 1227) and
//     read-intent reads run on node 1 (Stats.ReplicaToPrimary); with
//     readFromSourceWhenNoReplicas=false they fail with a *failover.NoHostAvailableError
//     naming the 3 hosts, while plain reads run on node 1.
//   - With it (GrantReplicaMonitor again; a new pool): node 2's SQL thread is stopped (its lag
//     reads NULL: unknown). Asserted: within 10 s HostStats of node 2 shows a ReplicaSkip
//     and ReplicaLag -1 and an EventReplica with an error is recorded; no read started
//     after that is served by node 2 (1 s of reads); node 3 serves them. Then rows are
//     written, the SQL thread started: within 10 s a read reaches node 2 again, its
//     ReplicaSkip is "" and an EventReplica without an error is recorded. Reported: the
//     time from the stop to the skip and to the last read on node 2, and from the start
//     to the first read on node 2 again.
//   - Then a known lag over the bound: node 3's replication delayed by 3 s
//     (SetReplicaDelay) while node 1 writes every 100 ms: within 15 s node 3 is skipped
//     with a ReplicaLag over 1 s and a ReplicaSkip naming maxReplicaLag, the next
//     second of reads runs on node 2 only; with the delay ended reads reach node 3
//     again within 15 s. Reported: the times.
func TestReplicaLagAvoided(t *testing.T) {
	const params = "replicaReads=true&maxReplicaLag=1s&checkInterval=100ms&readTimeout=2s"
	c := harness.Start(t, 3)
	ctx := ctxT(t, 2*time.Minute)
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
	n2 := c.Node(2)
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.lag (id INT PRIMARY KEY)"))
	must(t, c.WaitReplicasCaughtUp(ctx))

	t.Run("no-privilege", func(t *testing.T) {
		fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
		must(t, c.RevokeReplicaMonitor(ctx))
		must(t, c.WaitReplicasCaughtUp(ctx))
		p := openFaultPool(t, c.DSN(params))
		p.db.SetMaxOpenConns(2)
		// Skipped for the probe's failure, whose reason names the privilege (or carries
		// the server's 1227), not merely "not read yet".
		denied := func(p *faultPool, i int) bool {
			skip := hostOf(c, p, i).ReplicaSkip
			return strings.Contains(skip, "privilege") || strings.Contains(skip, "1227")
		}
		// The probes start with the pool's first connection.
		if n, err := nodeOf(ctx, c, p.db); err != nil || n != 1 {
			t.Fatalf("first plain read: node %d, %v; want node 1", n, err)
		}
		if !waitFor(10*time.Second, func() bool { return denied(p, 2) && denied(p, 3) }) {
			t.Fatalf("replicas not skipped for the missing privilege within 10 s: %s", replicaSummary(c, p.cn.Stats()))
		}
		// Let a few probe rounds pass: they must not make the replicas qualify.
		time.Sleep(500 * time.Millisecond)
		before := p.cn.Stats().ReplicaToPrimary
		by := map[int]int{}
		for range 20 {
			n, err := nodeOf(readIntent(ctx), c, p.db)
			must(t, err)
			by[n]++
		}
		st := p.cn.Stats()
		if by[1] != 20 {
			t.Errorf("read-intent reads with no replica's lag known: %v, want node 1 only (readFromSourceWhenNoReplicas defaults to true)", by)
		}
		if d := st.ReplicaToPrimary - before; d != 20 {
			t.Errorf("Stats.ReplicaToPrimary grew by %d, want 20", d)
		}
		for _, i := range []int{2, 3} {
			h := hostOf(c, p, i)
			if h.ReplicaLag != -1 || h.ReplicaSkip == "" {
				t.Errorf("node %d without the privilege: ReplicaLag %v, ReplicaSkip %q; want -1 and a reason", i, h.ReplicaLag, h.ReplicaSkip)
			}
			fig(fmt.Sprintf("node%d_skip", i), fmt.Sprintf("%q", h.ReplicaSkip))
		}

		// readFromSourceWhenNoReplicas=false: the read fails instead, naming every host.
		strict := openFaultPool(t, c.DSN(params+"&readFromSourceWhenNoReplicas=false"))
		strict.db.SetMaxOpenConns(2)
		if n, err := nodeOf(ctx, c, strict.db); err != nil || n != 1 {
			t.Fatalf("strict pool, first plain read: node %d, %v; want node 1", n, err)
		}
		if !waitFor(10*time.Second, func() bool { return denied(strict, 2) && denied(strict, 3) }) {
			t.Fatalf("strict pool: replicas not skipped within 10 s: %s", replicaSummary(c, strict.cn.Stats()))
		}
		_, err := nodeOf(readIntent(ctx), c, strict.db)
		var nh *failover.NoHostAvailableError
		if !errors.As(err, &nh) || len(nh.Hosts) != 3 {
			t.Errorf("read-intent read with no replica and readFromSourceWhenNoReplicas=false: %T %v, want a *failover.NoHostAvailableError naming the 3 hosts", err, err)
		}
		if errors.Is(err, sqldriver.ErrBadConn) {
			t.Errorf("the no-replica error matches driver.ErrBadConn: %v", err)
		}
		if n, err := nodeOf(ctx, c, strict.db); err != nil || n != 1 {
			t.Errorf("a plain read on the strict pool: node %d, %v; want node 1", n, err)
		}
		fig("strict_error", err)
	})

	must(t, c.GrantReplicaMonitor(ctx))
	must(t, c.WaitReplicasCaughtUp(ctx))
	p := openFaultPool(t, c.DSN(params))
	p.db.SetMaxOpenConns(2)
	waitReplicasServe(t, ctx, c, p, 2, 3)
	for _, i := range []int{2, 3} {
		if h := hostOf(c, p, i); h.ReplicaLag < 0 || h.ReplicaSkip != "" {
			t.Errorf("node %d replicating: ReplicaLag %v, ReplicaSkip %q; want >= 0 and \"\"", i, h.ReplicaLag, h.ReplicaSkip)
		}
	}

	stopAt := time.Now()
	must(t, n2.StopReplicaSQL(ctx))
	var skipAt, lastOn2 time.Time
	var skipped failover.HostStats
	var afterSkip, afterSkipOn2 int
	afterBy := map[int]int{}
	for time.Since(stopAt) < 10*time.Second {
		if h := hostOf(c, p, 2); skipAt.IsZero() && h.ReplicaSkip != "" {
			skipAt, skipped = time.Now(), h
		}
		if !skipAt.IsZero() && time.Since(skipAt) > time.Second {
			break
		}
		start := time.Now()
		n, err := nodeOf(readIntent(ctx), c, p.db)
		must(t, err)
		if n == 2 {
			lastOn2 = time.Now()
		}
		if !skipAt.IsZero() && start.After(skipAt) {
			afterSkip++
			afterBy[n]++
			if n == 2 {
				afterSkipOn2++
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
	if skipAt.IsZero() {
		t.Fatalf("node 2 still qualifies 10 s after its SQL thread stopped: %s", replicaSummary(c, p.cn.Stats()))
	}
	if skipped.ReplicaLag != -1 {
		t.Errorf("node 2 skipped with ReplicaLag %v, want -1 (unknown: SQL thread stopped)", skipped.ReplicaLag)
	}
	if afterSkipOn2 != 0 {
		t.Errorf("%d of the %d reads started after node 2 was skipped ran on it", afterSkipOn2, afterSkip)
	}
	if afterBy[3] == 0 {
		t.Errorf("reads after node 2 was skipped by node: %v, want node 3", afterBy)
	}
	if evs := p.ev.of(failover.EventReplica, n2.ProxyAddr(), stopAt); len(evs) == 0 || evs[0].Err == nil {
		t.Errorf("EventReplica about node 2 since the stop: %v, want one with an error", evs)
	}
	fig("stop_to_skip", skipAt.Sub(stopAt).Round(time.Millisecond))
	if !lastOn2.IsZero() {
		fig("stop_to_last_read_on_node2", lastOn2.Sub(stopAt).Round(time.Millisecond))
	}
	fig("skip", fmt.Sprintf("%q", skipped.ReplicaSkip))
	fig("reads_after_skip_by_node", afterBy)
	serverLag, _ := n2.ReplicaLag(ctx)
	fig("node2_server_lag_while_stopped", serverLag)

	for k := 1; k <= 10; k++ {
		_, err := p.db.ExecContext(ctx, fmt.Sprintf("INSERT INTO lag VALUES (%d)", k))
		must(t, err)
	}
	startAt := time.Now()
	must(t, n2.StartReplicaSQL(ctx))
	var backAt time.Time
	var rowsSeen int
	for time.Since(startAt) < 10*time.Second && backAt.IsZero() {
		var port, rows int
		if err := p.db.QueryRowContext(readIntent(ctx), "SELECT @@port, COUNT(*) FROM lag").Scan(&port, &rows); err != nil {
			t.Fatalf("read after the SQL thread started: %v", err)
		}
		if c.NodeByPort(port) == 2 {
			backAt, rowsSeen = time.Now(), rows
		}
		time.Sleep(5 * time.Millisecond)
	}
	if backAt.IsZero() {
		t.Fatalf("no read reached node 2 within 10 s of its SQL thread starting: %s", replicaSummary(c, p.cn.Stats()))
	}
	must(t, n2.CatchUp(ctx, c.Node(1)))
	if h := hostOf(c, p, 2); h.ReplicaSkip != "" || h.ReplicaLag < 0 {
		t.Errorf("node 2 back: ReplicaSkip %q, ReplicaLag %v; want \"\" and >= 0", h.ReplicaSkip, h.ReplicaLag)
	}
	var back bool
	for _, e := range p.ev.of(failover.EventReplica, n2.ProxyAddr(), startAt) {
		back = back || e.Err == nil
	}
	if !back {
		t.Errorf("no EventReplica without an error about node 2 after its SQL thread started: %v",
			p.ev.of(failover.EventReplica, n2.ProxyAddr(), startAt))
	}
	fig("start_to_first_read_on_node2", backAt.Sub(startAt).Round(time.Millisecond))
	fig("rows_seen_by_first_read_on_node2", fmt.Sprintf("%d/10", rowsSeen))

	// A known lag over the bound: node 3 delayed by 3 s while node 1 writes every 100 ms.
	n3 := c.Node(3)
	var wstop atomic.Bool
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for k := 100; !wstop.Load() && ctx.Err() == nil; k++ {
			if err := c.Node(1).Exec(ctx, fmt.Sprintf("INSERT INTO app.lag VALUES (%d)", k)); err != nil {
				t.Errorf("writer on node 1: %v", err)
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	}()
	defer func() { wstop.Store(true); wg.Wait() }()
	delayAt := time.Now()
	must(t, n3.SetReplicaDelay(ctx, 3*time.Second))
	var over failover.HostStats
	if !waitFor(15*time.Second, func() bool {
		over = hostOf(c, p, 3)
		return over.ReplicaSkip != ""
	}) {
		t.Fatalf("node 3 delayed by 3 s still qualifies after 15 s: %s", replicaSummary(c, p.cn.Stats()))
	}
	overAt := time.Now()
	if over.ReplicaLag <= time.Second || !strings.Contains(over.ReplicaSkip, "maxReplicaLag") {
		t.Errorf("node 3 delayed: ReplicaLag %v, ReplicaSkip %q; want over 1s, naming maxReplicaLag", over.ReplicaLag, over.ReplicaSkip)
	}
	delayedBy := map[int]int{}
	for time.Since(overAt) < time.Second {
		n, err := nodeOf(readIntent(ctx), c, p.db)
		must(t, err)
		delayedBy[n]++
		time.Sleep(5 * time.Millisecond)
	}
	if delayedBy[3] != 0 || delayedBy[2] == 0 {
		t.Errorf("reads while node 3 lags over maxReplicaLag, by node: %v; want node 2 only", delayedBy)
	}
	undelayAt := time.Now()
	must(t, n3.SetReplicaDelay(ctx, 0))
	if !waitFor(15*time.Second, func() bool {
		n, err := nodeOf(readIntent(ctx), c, p.db)
		return err == nil && n == 3
	}) {
		t.Errorf("no read reached node 3 within 15 s of its delay ending: %s", replicaSummary(c, p.cn.Stats()))
	}
	fig("delay_to_skip", overAt.Sub(delayAt).Round(time.Millisecond))
	fig("delayed_skip", fmt.Sprintf("%q (ReplicaLag %v)", over.ReplicaSkip, over.ReplicaLag))
	fig("reads_while_delayed_by_node", delayedBy)
	fig("undelay_to_first_read_on_node3", time.Since(undelayAt).Round(time.Millisecond))
	fig("stats", replicaSummary(c, p.cn.Stats()))
}

// TestCausalReads: causalReads=local (the write and the read on one *sql.Conn) and
// global (the write through the pool, the read on another pinned connection), with
// causalReadsTimeout=50ms. Phase 1, node 2's SQL thread stopped (it never has the rows)
// and node 3 replicating, 1000 times: INSERT a unique row on the primary, then a
// read-intent SELECT of it. Asserted: it returns the row every time (0 stale), no error,
// node 2 serves none (a replica whose replication is not running is no replica, without
// maxReplicaLag too: no read waits there in vain), node 3 serves every read after its
// wait (Stats.CausalWaits). Phase 2, node 3 delayed as well (MASTER_DELAY: replicating,
// but seconds behind; the reads start once the probes count it a replica again), 100
// pairs: every read goes to the primary after node 3's wait timed out
// (Stats.CausalPrimary), still 0 stale; every read node 1 served is counted by
// CausalPrimary or ReplicaToPrimary. Reported: the counts and the latency of the reads
// (median, p99).
func TestCausalReads(t *testing.T) {
	for _, mode := range []string{"local", "global"} {
		t.Run(mode, func(t *testing.T) {
			fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
			c := harness.Start(t, 3)
			ctx := ctxT(t, 3*time.Minute)
			must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.causal (id INT PRIMARY KEY, v INT NOT NULL)"))
			must(t, c.WaitReplicasCaughtUp(ctx))
			must(t, c.Node(2).StopReplicaSQL(ctx))
			p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=2s&causalReadsTimeout=50ms&causalReads="+mode))
			p.db.SetMaxOpenConns(4)
			waitReplicasServe(t, ctx, c, p, 3)

			writer, err := p.db.Conn(ctx)
			must(t, err)
			defer writer.Close()
			reader := writer
			if mode == "global" {
				reader, err = p.db.Conn(ctx)
				must(t, err)
				defer reader.Close()
			}
			write := func(id int) error {
				var q interface {
					ExecContext(context.Context, string, ...any) (sql.Result, error)
				} = writer
				if mode == "global" {
					q = p.db // through the pool: writer is pinned, so another connection
				}
				_, err := q.ExecContext(ctx, fmt.Sprintf("INSERT INTO causal (id, v) VALUES (%d, %d)", id, id*7))
				return err
			}
			type phase struct {
				stale, failed         int
				firstErr              error
				by                    map[int]int
				readLat, writeLat     []time.Duration
				waits, primary, toPri int64
			}
			run := func(from, n int) phase {
				ph := phase{by: map[int]int{}}
				before := p.cn.Stats()
				for id := from; id < from+n; id++ {
					w0 := time.Now()
					must(t, write(id))
					ph.writeLat = append(ph.writeLat, time.Since(w0))
					r0 := time.Now()
					var v, port int
					err := reader.QueryRowContext(readIntent(ctx), fmt.Sprintf("SELECT v, @@port FROM causal WHERE id = %d", id)).Scan(&v, &port)
					ph.readLat = append(ph.readLat, time.Since(r0))
					switch {
					case errors.Is(err, sql.ErrNoRows):
						ph.stale++
					case err != nil:
						ph.failed++
						if ph.firstErr == nil {
							ph.firstErr = err
						}
					case v != id*7:
						t.Fatalf("row %d read as v=%d", id, v)
					default:
						ph.by[c.NodeByPort(port)]++
					}
				}
				st := p.cn.Stats()
				ph.waits, ph.primary = st.CausalWaits-before.CausalWaits, st.CausalPrimary-before.CausalPrimary
				ph.toPri = st.ReplicaToPrimary - before.ReplicaToPrimary
				if ph.stale != 0 {
					t.Errorf("%d of %d causal reads did not see the row just written", ph.stale, n)
				}
				if ph.failed != 0 {
					t.Errorf("%d of %d causal reads failed; first: %v", ph.failed, n, ph.firstErr)
				}
				if int64(ph.by[1]) != ph.primary+ph.toPri {
					t.Errorf("node 1 served %d reads, CausalPrimary %d + ReplicaToPrimary %d", ph.by[1], ph.primary, ph.toPri)
				}
				return ph
			}
			const reads = 1000
			one := run(1, reads)
			if one.by[2] != 0 {
				t.Errorf("node 2 (SQL thread stopped) served %d reads", one.by[2])
			}
			if one.waits == 0 || one.by[3] != reads {
				t.Errorf("CausalWaits grew by %d, node 3 served %d of %d reads: want all of them served by node 3 after a wait", one.waits, one.by[3], reads)
			}
			if s := p.cn.Stats().Hosts[1].ReplicaSkip; !strings.Contains(s, "replication is not running") {
				t.Errorf("node 2's ReplicaSkip %q, want it to say replication is not running", s)
			}
			fig("reads", reads)
			fig("stale", one.stale)
			fig("errors", one.failed)
			fig("served_by_node", fmt.Sprintf("node1=%d node2=%d node3=%d", one.by[1], one.by[2], one.by[3]))
			fig("causal_waits", one.waits)
			fig("read_latency", pctl(one.readLat))
			fig("write_latency", pctl(one.writeLat))

			// Phase 2: node 3 replicates, seconds behind: every read needs the primary.
			must(t, c.Node(3).Exec(ctx, "STOP SLAVE"))
			must(t, c.Node(3).Exec(ctx, "CHANGE MASTER TO MASTER_DELAY = 5"))
			must(t, c.Node(3).Exec(ctx, "START SLAVE"))
			// A probe between STOP and START took node 3 out until its next one; the reads
			// below must pass it by its wait, not by that probe (CI saw it once).
			waitQualifiesAgain(t, c, p, 3)
			const late = 100
			two := run(reads+1, late)
			if two.primary == 0 || two.by[1] != late {
				t.Errorf("node 3 delayed: CausalPrimary grew by %d, node 1 served %d of %d reads; want all on the primary after node 3's wait", two.primary, two.by[1], late)
			}
			fig("delayed_reads", late)
			fig("delayed_causal_primary", two.primary)
			fig("delayed_read_latency", pctl(two.readLat))
			fig("stats", replicaSummary(c, p.cn.Stats()))
		})
	}
}

// TestRoutingKeyAffinity: a 4-node cluster (3 replicas), replicaReads=true, 1000 keys
// (user-%d), each read twice with WithReadIntent(ctx, key) reading @@server_id. Asserted:
// both reads of a key on the same replica, every replica holding at least 20% of the
// keys. Then node 4 is killed: a pass right after the kill has no error; once node 4 no
// longer qualifies (ReplicaSkip, at most 15 s), no key of nodes 2 and 3 moved, every key
// of node 4 moved to node 2 or 3, each of them taking at least 20% of those (rendezvous
// hashing spreads a lost replica's keys; a ring would hand them all to one). Reported:
// the keys per node before and after, the moves.
func TestRoutingKeyAffinity(t *testing.T) {
	const keys = 1000
	c := harness.Start(t, 4)
	ctx := ctxT(t, 3*time.Minute)
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
	p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=2s"))
	p.db.SetMaxOpenConns(4)
	waitReplicasServe(t, ctx, c, p, 2, 3, 4)
	bySID := map[int]int{}
	for _, n := range c.Nodes() {
		bySID[n.ServerID()] = n.Index()
	}
	read := func(key string) (int, error) {
		var sid int
		if err := p.db.QueryRowContext(mysqlfailover.WithReadIntent(ctx, key), "SELECT @@server_id").Scan(&sid); err != nil {
			return 0, err
		}
		return bySID[sid], nil
	}
	key := func(k int) string { return fmt.Sprintf("user-%d", k) }
	pass := func(what string) (on []int, count map[int]int, failed int, firstErr error) {
		on, count = make([]int, keys), map[int]int{}
		for k := range keys {
			n, err := read(key(k))
			if err != nil {
				failed++
				if firstErr == nil {
					firstErr = err
				}
				continue
			}
			on[k] = n
			count[n]++
		}
		if failed > 0 {
			t.Errorf("%s: %d of %d reads failed; first: %v", what, failed, keys, firstErr)
		}
		return on, count, failed, firstErr
	}
	first, count1, _, _ := pass("first reads")
	second, _, _, _ := pass("second reads")
	differ := 0
	for k := range keys {
		if first[k] != second[k] {
			differ++
		}
	}
	if differ != 0 {
		t.Errorf("%d of %d keys read on another node the second time", differ, keys)
	}
	if count1[1] != 0 {
		t.Errorf("node 1 (the primary) served %d keyed reads", count1[1])
	}
	for _, i := range []int{2, 3, 4} {
		if count1[i] < keys*20/100 {
			t.Errorf("node %d holds %d of %d keys, want at least 20%%: %v", i, count1[i], keys, count1)
		}
	}

	killAt := time.Now()
	must(t, c.Node(4).Kill())
	_, countKill, failedKill, _ := pass("the pass right after the kill")
	if !waitFor(15*time.Second, func() bool { return hostOf(c, p, 4).ReplicaSkip != "" }) {
		t.Fatalf("node 4 still qualifies 15 s after it was killed: %s", replicaSummary(c, p.cn.Stats()))
	}
	skipAt := time.Now()
	after, count2, _, _ := pass("reads after node 4 stopped qualifying")
	moved := map[string]int{}
	var stayedMoved, fromDead int
	for k := range keys {
		if after[k] == 0 {
			continue // failed, reported
		}
		if first[k] == 4 {
			fromDead++
			moved[fmt.Sprintf("4to%d", after[k])]++
			if after[k] == 4 {
				t.Errorf("key %s read on the dead node 4", key(k))
			}
			continue
		}
		if after[k] != first[k] {
			stayedMoved++
			moved[fmt.Sprintf("%dto%d", first[k], after[k])]++
		}
	}
	if stayedMoved != 0 {
		t.Errorf("%d keys of the surviving replicas moved (%v), want 0", stayedMoved, moved)
	}
	for _, i := range []int{2, 3} {
		if m := moved[fmt.Sprintf("4to%d", i)]; m < fromDead*20/100 {
			t.Errorf("node %d took %d of node 4's %d keys, want at least 20%%: %v", i, m, fromDead, moved)
		}
	}
	fig("keys_by_node_before", fmt.Sprintf("node2=%d node3=%d node4=%d", count1[2], count1[3], count1[4]))
	fig("second_read_differs", differ)
	fig("keys_by_node_right_after_kill", fmt.Sprintf("node1=%d node2=%d node3=%d node4=%d", countKill[1], countKill[2], countKill[3], countKill[4]))
	fig("errors_right_after_kill", failedKill)
	fig("kill_to_node4_skipped", skipAt.Sub(killAt).Round(time.Millisecond))
	fig("keys_by_node_after", fmt.Sprintf("node1=%d node2=%d node3=%d node4=%d", count2[1], count2[2], count2[3], count2[4]))
	fig("moved", moved)
	fig("survivor_keys_moved", stayedMoved)
	fig("stats", replicaSummary(c, p.cn.Stats()))
}

// replicaOp is one statement of a read or write workload.
type replicaOp struct {
	worker     int
	write      bool
	start, end time.Time
	node       int // where a read ran (0 for a write or a failure)
	err        error
}

// replicaLoad runs readers (read-intent SELECT @@port) and writers (autocommit INSERT
// into table, the row recording @@port) on db, each statement with a 5 s context, until
// halt.
type replicaLoad struct {
	stop atomic.Bool
	wg   sync.WaitGroup
	mu   sync.Mutex
	ops  []replicaOp
}

func startReplicaLoad(ctx context.Context, c *harness.Cluster, db *sql.DB, readers, writers int, table string) *replicaLoad {
	l := &replicaLoad{}
	for w := range readers + writers {
		write := w >= readers
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for k := 0; !l.stop.Load() && ctx.Err() == nil; k++ {
				op := replicaOp{worker: w, write: write, start: time.Now()}
				sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				if write {
					_, op.err = db.ExecContext(sctx, fmt.Sprintf("INSERT INTO %s (w, k, port) VALUES (%d, %d, @@port)", table, w, k))
				} else {
					op.node, op.err = nodeOf(readIntent(sctx), c, db)
				}
				cancel()
				op.end = time.Now()
				l.mu.Lock()
				l.ops = append(l.ops, op)
				l.mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	return l
}

func (l *replicaLoad) snapshot() []replicaOp {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.ops)
}

func (l *replicaLoad) halt() []replicaOp {
	l.stop.Store(true)
	l.wg.Wait()
	return l.snapshot()
}

// TestKillReplicaUnderReaders: 16 goroutines of read-intent autocommit reads on 16
// connections (replicaReads=true&checkInterval=100ms), node 2 killed with SIGKILL after
// 2 s, 2 s more of reads. Asserted: no reader sees an error (a read that fails on a
// replica before its result started runs again on another host), reads before the kill
// ran on both replicas and after it on node 3; a read-only transaction open on node 2
// across the kill fails its next statement with failover.ErrTxLost; a prepared statement
// that ran on both replicas before runs 20 times on node 3 after, without an error. Reported: reads per node before and after
// the kill, Stats.ReplicaRetries, the longest read after the kill, the time until node 2
// was skipped.
func TestKillReplicaUnderReaders(t *testing.T) {
	const readers = 16
	c := harness.Start(t, 3)
	ctx := ctxT(t, 2*time.Minute)
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
	p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=2s"))
	p.db.SetMaxOpenConns(readers + 1)
	p.db.SetMaxIdleConns(readers + 1)
	waitReplicasServe(t, ctx, c, p, 2, 3)
	before := p.cn.Stats()

	// A read-only transaction open on node 2 across the kill.
	var tx *sql.Tx
	for range 10 {
		x, err := p.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		must(t, err)
		n, err := nodeOf(ctx, c, x)
		must(t, err)
		if n == 2 {
			tx = x
			break
		}
		must(t, x.Commit())
	}
	if tx == nil {
		t.Fatal("10 read-only transactions, none on node 2")
	}
	defer tx.Rollback()
	// A prepared statement that has run on both replicas before the kill.
	ps, err := p.db.PrepareContext(ctx, "SELECT @@port, ?")
	must(t, err)
	defer ps.Close()
	psBefore := map[int]int{}
	for k := range 10 {
		var port, echo int
		must(t, ps.QueryRowContext(readIntent(ctx), k).Scan(&port, &echo))
		psBefore[c.NodeByPort(port)]++
	}
	if psBefore[2] == 0 {
		t.Fatalf("a prepared statement's 10 read-intent runs before the kill by node: %v, want node 2 among them", psBefore)
	}

	load := startReplicaLoad(ctx, c, p.db, readers, 0, "")
	defer load.halt()
	time.Sleep(2 * time.Second)
	killAt := time.Now()
	must(t, c.Node(2).Kill())
	killed := time.Now()
	var skipAt time.Time
	for time.Since(killAt) < 2*time.Second || (skipAt.IsZero() && time.Since(killAt) < 10*time.Second) {
		if skipAt.IsZero() && hostOf(c, p, 2).ReplicaSkip != "" {
			skipAt = time.Now()
		}
		time.Sleep(10 * time.Millisecond)
	}
	ops := load.halt()
	st := p.cn.Stats()
	_, txErr := nodeOf(ctx, c, tx)
	if !errors.Is(txErr, failover.ErrTxLost) {
		t.Errorf("the read-only transaction on node 2 after the kill: %v, want failover.ErrTxLost", txErr)
	}
	if errors.Is(txErr, sqldriver.ErrBadConn) {
		t.Errorf("the lost transaction's error matches driver.ErrBadConn: %v", txErr)
	}
	var txFE *failover.FailoverError
	if errors.As(txErr, &txFE) {
		fig("tx_failover_error_nodes", fmt.Sprintf("failed=node%d current=node%d maybe_executed=%v",
			c.NodeByAddr(txFE.Failed), c.NodeByAddr(txFE.Current), txFE.MaybeExecuted))
	}
	fig("tx_on_node2_after_kill", txErr)
	psAfter := map[int]int{}
	for k := range 20 {
		var port, echo int
		if err := ps.QueryRowContext(readIntent(ctx), k).Scan(&port, &echo); err != nil || echo != k {
			t.Errorf("the prepared statement's read-intent run %d after the kill: %v (argument back as %d)", k, err, echo)
			continue
		}
		psAfter[c.NodeByPort(port)]++
	}
	if psAfter[3] != 20 {
		t.Errorf("the prepared statement's 20 read-intent runs after the kill by node: %v, want node 3 only", psAfter)
	}
	fig("prepared_runs_by_node", fmt.Sprintf("before=%v after=%v", psBefore, psAfter))

	byBefore, byAfter := map[int]int{}, map[int]int{}
	kinds := map[string]int{}
	var failed, inFlight int
	var maxAfter time.Duration
	for _, op := range ops {
		// A read sent in the few milliseconds the kill takes to end the server may have
		// reached it: it fails with a FailoverError that SafeToRetry calls rereadable
		// (RetryStatement), as the README says of a read in flight; the proxy does not
		// run a statement that may have run again itself.
		var fe *failover.FailoverError
		if op.err != nil && !op.write && op.start.Sub(killAt) < 50*time.Millisecond && errors.As(op.err, &fe) &&
			fe.MaybeExecuted && fe.Read && mysqlfailover.SafeToRetry(op.err) == mysqlfailover.RetryStatement {
			inFlight++
			continue
		}
		if op.err != nil {
			failed++
			kinds[errKind(op.err)]++
			if failed <= 5 {
				t.Errorf("reader %d, read started %v after the kill: %s: %v", op.worker, op.start.Sub(killAt).Round(time.Millisecond), errKind(op.err), op.err)
			}
			continue
		}
		if op.start.Before(killAt) {
			byBefore[op.node]++
			continue
		}
		byAfter[op.node]++
		maxAfter = max(maxAfter, op.end.Sub(op.start))
		if op.node == 2 && op.start.After(killed) {
			t.Errorf("a read started after the kill returned ran on node 2")
		}
	}
	if failed > 5 {
		t.Errorf("... %d failed reads in all, want 0", failed)
	}
	if byBefore[2] == 0 || byBefore[3] == 0 {
		t.Errorf("reads before the kill by node: %v, want both replicas", byBefore)
	}
	if byAfter[3] == 0 {
		t.Errorf("reads after the kill by node: %v, want node 3", byAfter)
	}
	fig("reads", len(ops))
	fig("failed", failed)
	fig("in_flight_at_kill", inFlight)
	for _, k := range sortedKeys(kinds) {
		fig("failed_"+k, kinds[k])
	}
	fig("reads_before_kill_by_node", fmt.Sprintf("node1=%d node2=%d node3=%d", byBefore[1], byBefore[2], byBefore[3]))
	fig("reads_after_kill_by_node", fmt.Sprintf("node1=%d node2=%d node3=%d", byAfter[1], byAfter[2], byAfter[3]))
	fig("replica_retries", st.ReplicaRetries-before.ReplicaRetries)
	fig("replica_to_primary", st.ReplicaToPrimary-before.ReplicaToPrimary)
	fig("max_read_after_kill", maxAfter.Round(time.Millisecond))
	if !skipAt.IsZero() {
		fig("kill_to_node2_skipped", skipAt.Sub(killAt).Round(time.Millisecond))
	} else {
		t.Errorf("node 2 not skipped within 10 s of the kill: %s", replicaSummary(c, st))
	}
	fig("stats", replicaSummary(c, st))
}

// documentedWriteErr reports whether err is one of the errors the root README's "What the
// caller sees" lists for a write that met a failover: *failover.FailoverError,
// *failover.NoHostAvailableError, failover.ErrTxLost, failover.ErrCommitOutcomeUnknown,
// or the server's read-only rejection (*mysql.MySQLError 1290, 1792, 1836) untouched;
// never one that matches driver.ErrBadConn.
func documentedWriteErr(err error) bool {
	if errors.Is(err, sqldriver.ErrBadConn) {
		return false
	}
	var fe *failover.FailoverError
	var nh *failover.NoHostAvailableError
	return errors.As(err, &fe) || errors.As(err, &nh) || errors.Is(err, failover.ErrTxLost) ||
		errors.Is(err, failover.ErrCommitOutcomeUnknown) || rolesReadOnlyNumber(err) != 0
}

// TestKillPrimaryMixedLoad: 8 readers (read intent) and 4 writers (autocommit INSERT) on
// one pool of 12 connections (replicaReads=true&checkInterval=100ms, retriesAllDown=8),
// node 1 killed with SIGKILL after 1 s.
//
//   - default: the pool fails over by today's rules to node 2 (a read-only secondary:
//     failOverReadOnly), 3 s more of load.
//   - read-write: targetSessionAttrs=read-write; 1 s after the kill node 2 is promoted;
//     the load runs until a write succeeded after the promotion (at most 15 s), then 1 s.
//
// Asserted: no reader sees an error; every writer error is a documented one
// (documentedWriteErr); read-write: writes resume, on node 2 (the rows' port). Reported:
// reads per node before and after the kill, writes ok and failed by kind, the time from
// the promotion to the first write on node 2.
func TestKillPrimaryMixedLoad(t *testing.T) {
	const readers, writers = 8, 4
	for _, mode := range []string{"default", "read-write"} {
		t.Run(mode, func(t *testing.T) {
			fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
			c := harness.Start(t, 3)
			ctx := ctxT(t, 2*time.Minute)
			must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.mixed (w INT NOT NULL, k INT NOT NULL, port INT NOT NULL, PRIMARY KEY (w, k))"))
			must(t, c.WaitReplicasCaughtUp(ctx))
			params := replicaParams + "&readTimeout=2s&retriesAllDown=8"
			if mode == "read-write" {
				params += "&targetSessionAttrs=read-write"
			}
			p := openFaultPool(t, c.DSN(params))
			p.db.SetMaxOpenConns(readers + writers)
			p.db.SetMaxIdleConns(readers + writers)
			waitReplicasServe(t, ctx, c, p, 2, 3)

			load := startReplicaLoad(ctx, c, p.db, readers, writers, "mixed")
			defer load.halt()
			time.Sleep(time.Second)
			killAt := time.Now()
			must(t, c.Node(1).Kill())
			var promoteAt, firstWriteOn2 time.Time
			if mode == "read-write" {
				time.Sleep(time.Second)
				promoteAt = time.Now()
				must(t, c.Node(2).Promote(ctx, nil))
				waitFor(15*time.Second, func() bool {
					for _, op := range load.snapshot() {
						if op.write && op.err == nil && op.start.After(promoteAt) {
							firstWriteOn2 = op.end
							return true
						}
					}
					return false
				})
				if !firstWriteOn2.IsZero() {
					time.Sleep(time.Second)
				}
			} else {
				time.Sleep(3 * time.Second)
			}
			ops := load.halt()

			readBefore, readAfter := map[int]int{}, map[int]int{}
			writeKinds := map[string]int{}
			var readFailed, writeOK, writeOKAfterKill, writeOKAfterPromote, undocumented int
			for _, op := range ops {
				if !op.write {
					if op.err != nil {
						readFailed++
						if readFailed <= 5 {
							t.Errorf("reader %d, read started %v after the kill: %s: %v", op.worker, op.start.Sub(killAt).Round(time.Millisecond), errKind(op.err), op.err)
						}
					} else if op.start.Before(killAt) {
						readBefore[op.node]++
					} else {
						readAfter[op.node]++
					}
					continue
				}
				writeKinds[rolesKind(op.err)]++
				if op.err == nil {
					writeOK++
					if op.start.After(killAt) {
						writeOKAfterKill++
					}
					if !promoteAt.IsZero() && op.start.After(promoteAt) {
						writeOKAfterPromote++
					}
					continue
				}
				if !documentedWriteErr(op.err) {
					undocumented++
					if undocumented <= 5 {
						t.Errorf("writer %d, write started %v after the kill: undocumented error %T: %v", op.worker, op.start.Sub(killAt).Round(time.Millisecond), op.err, op.err)
					}
				}
			}
			if readFailed > 5 {
				t.Errorf("... %d failed reads in all, want 0", readFailed)
			}
			if undocumented > 5 {
				t.Errorf("... %d writes failed with an undocumented error", undocumented)
			}
			if readAfter[2]+readAfter[3] == 0 {
				t.Errorf("reads after the kill by node: %v, want replicas", readAfter)
			}
			if mode == "read-write" {
				if firstWriteOn2.IsZero() {
					t.Errorf("no write succeeded within 15 s of node 2's promotion; %s", replicaSummary(c, p.cn.Stats()))
				}
				on2, err := c.Node(2).QueryInt(ctx, "SELECT COUNT(*) FROM app.mixed WHERE port = ?", c.Node(2).Port())
				must(t, err)
				if on2 < int64(writeOKAfterPromote) {
					t.Errorf("node 2 has %d rows written there, want the %d writes acknowledged after the promotion", on2, writeOKAfterPromote)
				}
				fig("rows_written_on_node2", on2)
				if !firstWriteOn2.IsZero() {
					fig("promote_to_first_write", firstWriteOn2.Sub(promoteAt).Round(time.Millisecond))
				}
			}
			fig("reads_before_kill_by_node", fmt.Sprintf("node1=%d node2=%d node3=%d", readBefore[1], readBefore[2], readBefore[3]))
			fig("reads_after_kill_by_node", fmt.Sprintf("node1=%d node2=%d node3=%d", readAfter[1], readAfter[2], readAfter[3]))
			fig("read_errors", readFailed)
			fig("writes_ok", writeOK)
			fig("writes_ok_after_kill", writeOKAfterKill)
			for _, k := range sortedKeys(writeKinds) {
				if k != "ok" {
					fig("writes_failed_"+k, writeKinds[k])
				}
			}
			fig("stats", replicaSummary(c, p.cn.Stats()))
		})
	}
}

// TestReplicaSessionState: replica sessions carry the connection's state. DSN variables
// sql_mode='ANSI_QUOTES' and time_zone='+01:00' (go-sql-driver's system variables).
// Asserted: a read-intent query after USE app2 on a *sql.Conn runs on a replica in app2
// (DATABASE(), and a table only app2 has), with the DSN's sql_mode and time_zone and a
// read-only session (tx_read_only 1); USE app brings it back to app there; the DSN
// variables hold on the primary session too; a write with read intent, and one in a
// ReadOnly transaction, fail with the server's read-only error (1792 or 1290) and write
// nothing on any node.
func TestReplicaSessionState(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app2.only2 (id INT PRIMARY KEY)"))
	must(t, c.Node(1).Exec(ctx, "INSERT INTO app2.only2 VALUES (1), (2), (3)"))
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.ss (id INT PRIMARY KEY)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=2s&sql_mode='ANSI_QUOTES'&time_zone='%2B01:00'"))
	p.db.SetMaxOpenConns(2)
	waitReplicasServe(t, ctx, c, p, 2, 3)

	type state struct {
		node             int
		db, mode, tz     string
		txReadOnly, rows int
	}
	stateOf := func(ctx context.Context, q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}, table string) (state, error) {
		var s state
		var port int
		var dbName sql.NullString
		err := q.QueryRowContext(ctx, "SELECT @@port, DATABASE(), @@session.sql_mode, @@session.time_zone, @@session.tx_read_only, "+
			"(SELECT COUNT(*) FROM "+table+")").Scan(&port, &dbName, &s.mode, &s.tz, &s.txReadOnly, &s.rows)
		s.node, s.db = c.NodeByPort(port), dbName.String
		return s, err
	}
	sc, err := p.db.Conn(ctx)
	must(t, err)
	defer sc.Close()
	_, err = sc.ExecContext(ctx, "USE app2")
	must(t, err)
	for k := range 4 { // round-robin: both replicas
		s, err := stateOf(readIntent(ctx), sc, "only2")
		if err != nil {
			t.Fatalf("read-intent query in app2: %v", err)
		}
		if (s.node != 2 && s.node != 3) || s.db != "app2" || s.rows != 3 || !strings.Contains(s.mode, "ANSI_QUOTES") ||
			s.tz != "+01:00" || s.txReadOnly != 1 {
			t.Errorf("read-intent query %d after USE app2: %+v; want a replica, app2, 3 rows, ANSI_QUOTES, +01:00, tx_read_only 1", k, s)
		}
		fig(fmt.Sprintf("replica_state_%d", k), fmt.Sprintf("%+v", s))
	}
	s, err := stateOf(ctx, sc, "only2")
	must(t, err)
	if s.node != 1 || s.db != "app2" || !strings.Contains(s.mode, "ANSI_QUOTES") || s.tz != "+01:00" || s.txReadOnly != 0 {
		t.Errorf("plain query after USE app2: %+v; want node 1, app2, ANSI_QUOTES, +01:00, tx_read_only 0", s)
	}
	_, err = sc.ExecContext(ctx, "USE app")
	must(t, err)
	for k := range 2 {
		s, err := stateOf(readIntent(ctx), sc, "ss")
		must(t, err)
		if (s.node != 2 && s.node != 3) || s.db != "app" {
			t.Errorf("read-intent query %d after USE app: %+v; want a replica, database app", k, s)
		}
	}
	must(t, sc.Close())

	writes := map[string]func() error{
		"with-read-intent": func() error {
			_, err := p.db.ExecContext(readIntent(ctx), "INSERT INTO ss VALUES (1)")
			return err
		},
		"readonly-tx": func() error {
			tx, err := p.db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
			if err != nil {
				return err
			}
			defer tx.Rollback()
			_, err = tx.ExecContext(ctx, "INSERT INTO ss VALUES (2)")
			return err
		},
	}
	for what, w := range writes {
		err := w()
		if n := rolesReadOnlyNumber(err); n != 1792 && n != 1290 {
			t.Errorf("a write %s: %v, want the server's read-only error (1792 or 1290)", what, err)
		}
		fig("write_"+what, err)
	}
	must(t, c.WaitReplicasCaughtUp(ctx))
	for _, n := range c.Nodes() {
		if v, err := n.QueryInt(ctx, "SELECT COUNT(*) FROM app.ss"); err != nil || v != 0 {
			t.Errorf("node %d has %d rows in app.ss (%v), want 0: a read-intent write ran", n.Index(), v, err)
		}
	}
}
