package integration

// Read/write splitting that holds: reads while no writer answers, replica
// sessions of pinned connections, causal reads after a session change, a failed batch and
// a move, and the statements that stay on the primary whatever their intent.

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// TestReadsDuringWriterOutage: replicaReads with 8 readers (read intent, through the
// pool) and the primary killed, nothing promoted, for 3 s; under
// targetSessionAttrs=read-write and under the default target. Asserted: 0 failed reads
// after the kill, every one served by a replica, and a write during the outage fails
// (read-write: a *failover.NoHostAvailableError). Reported: reads served before and after
// the kill, the slowest read after it, the time from the kill to the first read served
// after it.
func TestReadsDuringWriterOutage(t *testing.T) {
	for _, target := range []string{"read-write", "any"} {
		t.Run(target, func(t *testing.T) {
			fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
			c := harness.Start(t, 3)
			ctx := ctxT(t, 2*time.Minute)
			p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=2s&targetSessionAttrs="+target))
			p.db.SetMaxOpenConns(8)
			p.db.SetMaxIdleConns(8)
			waitReplicasServe(t, ctx, c, p, 2, 3)
			var (
				mu                    sync.Mutex
				killed                time.Time
				before, after, failed int
				firstAfter, slowest   time.Duration
				firstErr              error
				onPrimary             int
			)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for range 8 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						t0 := time.Now()
						rctx, cancel := context.WithTimeout(readIntent(ctx), 3*time.Second)
						n, err := nodeOf(rctx, c, p.db)
						cancel()
						d := time.Since(t0)
						mu.Lock()
						switch {
						case killed.IsZero():
							before++
						case err != nil:
							failed++
							if firstErr == nil {
								firstErr = err
							}
						default:
							if after == 0 {
								firstAfter = time.Since(killed)
							}
							after++
							slowest = max(slowest, d)
							if n == 1 {
								onPrimary++
							}
						}
						mu.Unlock()
					}
				}()
			}
			time.Sleep(300 * time.Millisecond) // reads flowing
			mu.Lock()
			killed = time.Now()
			mu.Unlock()
			must(t, c.Node(1).Kill())
			time.Sleep(3 * time.Second)
			close(stop)
			wg.Wait()
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			_, werr := p.db.ExecContext(wctx, "INSERT INTO app.t VALUES (1)")
			cancel()
			if werr == nil {
				t.Errorf("a write with the primary dead and nothing promoted succeeded")
			}
			if failed != 0 {
				t.Errorf("%d reads failed during the writer outage; first: %v", failed, firstErr)
			}
			if onPrimary != 0 {
				t.Errorf("%d reads after the kill reported node 1", onPrimary)
			}
			if after == 0 {
				t.Fatalf("no read was served in the 3 s after the kill")
			}
			fig("reads_before_kill_300ms", before)
			fig("reads_served_after_kill_3s", after)
			fig("reads_failed_after_kill", failed)
			fig("first_read_after_kill", firstAfter.Round(time.Millisecond))
			fig("slowest_read_after_kill", slowest.Round(time.Millisecond))
			fig("write_error", werr)
			fig("stats", replicaSummary(c, p.cn.Stats()))
		})
	}
}

// TestPinnedReplicaSessions: a pinned connection (*sql.Conn) whose replica session the
// server closed while the connection wrote (wait_timeout) reads again from the same
// replica without an error, with readFromSourceWhenNoReplicas=false so that a failure
// would show; after a restart of the key's replica, once it qualifies again, the keyed
// read goes back to it.
func TestPinnedReplicaSessions(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, 2*time.Minute)
	p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=2s&readFromSourceWhenNoReplicas=false"))
	must(t, p.db.PingContext(ctx)) // the first connection starts the probes
	if !waitFor(10*time.Second, func() bool {
		return hostOf(c, p, 2).ReplicaSkip == "" && hostOf(c, p, 3).ReplicaSkip == "" && hostOf(c, p, 2).Role != 0
	}) {
		t.Fatalf("the replicas never qualified: %s", replicaSummary(c, p.cn.Stats()))
	}
	// The servers close a session after 1 s idle (the probes' sessions are never idle that
	// long); the connection writes meanwhile, its replica session idle.
	for _, n := range []int{2, 3} {
		must(t, c.Node(n).Exec(ctx, "SET GLOBAL wait_timeout = 1"))
		defer func() { _ = c.Node(n).Exec(context.Background(), "SET GLOBAL wait_timeout = 28800") }()
	}
	conn, err := p.db.Conn(ctx)
	must(t, err)
	defer conn.Close()
	keyed := mysqlfailover.WithReadIntent(ctx, "customer-7")
	home, err := nodeOf(keyed, c, conn)
	must(t, err)
	if home == 1 {
		t.Fatalf("a keyed read ran on the primary")
	}
	var id int64
	must(t, conn.QueryRowContext(keyed, "SELECT CONNECTION_ID()").Scan(&id)) // a session born under the new timeout
	for range 6 {
		_, err := conn.ExecContext(ctx, "DO 1") // the primary session stays busy
		must(t, err)
		time.Sleep(400 * time.Millisecond)
	}
	waitGone(t, ctx, c.Node(home), id)
	n, err := nodeOf(keyed, c, conn)
	if err != nil || n != home {
		t.Fatalf("keyed read after its replica session timed out: node %d, %v; want node %d, no error", n, err, home)
	}
	for _, n := range []int{2, 3} {
		must(t, c.Node(n).Exec(ctx, "SET GLOBAL wait_timeout = 28800"))
	}

	// A restart of the key's replica: once it qualifies again, the key returns to it.
	must(t, c.Node(home).Restart(ctx))
	var back bool
	waitFor(15*time.Second, func() bool {
		n, err := nodeOf(keyed, c, conn)
		back = err == nil && n == home
		return back
	})
	if !back {
		t.Fatalf("keyed read never went back to node %d after its restart (%s)", home, replicaSummary(c, p.cn.Stats()))
	}
}

// TestCausalReadsHardened: causal reads stay fresh (local: this connection's writes;
// global: the pool's) in the cases that used to go stale: the primary session killed and
// replaced on the same host between a write and the read (local), a multi-statement batch
// that failed after its first statement committed (local), and a move of the pool before
// the read (global, SwitchTo back and forth with writes on both hosts).
func TestCausalReadsHardened(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, 2*time.Minute)
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.hard (id INT PRIMARY KEY)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	fresh := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}, id int) error {
		var got int
		err := q.QueryRowContext(readIntent(ctx), fmt.Sprintf("SELECT id FROM app.hard WHERE id = %d", id)).Scan(&got)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("row %d not seen: a stale read", id)
		}
		return err
	}
	t.Run("local session replaced", func(t *testing.T) {
		p := openFaultPool(t, c.DSN(replicaParams+"&causalReads=local&readTimeout=2s"))
		waitReplicasServe(t, ctx, c, p, 2, 3)
		conn, err := p.db.Conn(ctx)
		must(t, err)
		defer conn.Close()
		for id := 1; id <= 20; id++ {
			_, err := conn.ExecContext(ctx, fmt.Sprintf("INSERT INTO app.hard VALUES (%d)", id))
			must(t, err)
			s, err := sessionOf(ctx, c, conn)
			must(t, err)
			must(t, c.Node(1).Exec(ctx, fmt.Sprintf("KILL %d", s.id))) // its session is gone
			waitGone(t, ctx, c.Node(1), s.id)
			var x int
			_ = conn.QueryRowContext(ctx, "SELECT 1").Scan(&x) // the host verdict: a new session on node 1
			if err := fresh(conn, id); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("local failed batch", func(t *testing.T) {
		p := openFaultPool(t, c.DSN(replicaParams+"&causalReads=local&multiStatements=true"))
		waitReplicasServe(t, ctx, c, p, 2, 3)
		conn, err := p.db.Conn(ctx)
		must(t, err)
		defer conn.Close()
		for id := 101; id <= 150; id++ {
			_, err := conn.ExecContext(ctx, fmt.Sprintf("INSERT INTO app.hard VALUES (%d); INSERT INTO app.hard VALUES (%d)", id, id))
			if err == nil {
				t.Fatalf("the batch's duplicate insert succeeded")
			}
			if err := fresh(conn, id); err != nil {
				t.Fatal(err)
			}
		}
	})
	t.Run("global after a move", func(t *testing.T) {
		p := openFaultPool(t, c.DSN(replicaParams+"&causalReads=global"))
		waitReplicasServe(t, ctx, c, p, 2, 3)
		reader, err := p.db.Conn(ctx)
		must(t, err)
		defer reader.Close()
		id := 1000
		for round := range 3 {
			to := c.Node(2 - round%2) // node 2, node 1, node 2
			must(t, c.Switchover(ctx, to.Index()))
			must(t, p.cn.SwitchTo(ctx, to.ProxyAddr()))
			for range 10 {
				id++
				_, err := p.db.ExecContext(ctx, fmt.Sprintf("INSERT INTO app.hard VALUES (%d)", id))
				must(t, err)
				if err := fresh(reader, id); err != nil {
					t.Fatalf("round %d (writer node %d): %v", round, to.Index(), err)
				}
			}
		}
	})
}

// TestStatementsThatStayOnPrimary: with a read intent, SET (a user variable, the time
// zone) runs on the primary session, where later statements see it; CREATE TEMPORARY TABLE
// too, and a read of the table with a read intent finds it (1146 on a replica); a
// read-write transaction begun on a read-intent context writes (1792 on a replica).
func TestStatementsThatStayOnPrimary(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	p := openFaultPool(t, c.DSN(replicaParams))
	waitReplicasServe(t, ctx, c, p, 2, 3)
	conn, err := p.db.Conn(ctx)
	must(t, err)
	defer conn.Close()
	ri := readIntent(ctx)
	_, err = conn.ExecContext(ri, "SET @marker = 42")
	must(t, err)
	_, err = conn.ExecContext(ri, "SET time_zone = '+03:00'")
	must(t, err)
	var marker int
	var tz string
	must(t, conn.QueryRowContext(ctx, "SELECT @marker, @@time_zone").Scan(&marker, &tz))
	if marker != 42 || tz != "+03:00" {
		t.Errorf("after SET with read intent: @marker=%d, time_zone=%q; want 42, +03:00 on the session", marker, tz)
	}
	_, err = conn.ExecContext(ri, "CREATE TEMPORARY TABLE app.scratch (v INT)")
	must(t, err)
	_, err = conn.ExecContext(ctx, "INSERT INTO app.scratch VALUES (7)")
	must(t, err)
	var v int
	if err := conn.QueryRowContext(ri, "SELECT v FROM app.scratch").Scan(&v); err != nil || v != 7 {
		t.Errorf("read-intent read of the session's temporary table: %d, %v; want 7", v, err)
	}
	_, err = conn.ExecContext(ctx, "DROP TEMPORARY TABLE app.scratch")
	must(t, err)

	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.rwtx (v INT)"))
	tx, err := p.db.BeginTx(ri, nil) // read-write, on a request context that carries read intent
	must(t, err)
	if _, err := tx.ExecContext(ri, "INSERT INTO app.rwtx VALUES (1)"); err != nil {
		t.Errorf("a write in a read-write transaction begun with a read-intent context: %v", err)
	}
	must(t, tx.Commit())
}

// TestReplicaSessionsOfRemovedHost: a host that leaves the host list (hostsURL) keeps no
// replica session of the pool's connections once they are checked out again.
func TestReplicaSessionsOfRemovedHost(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	var hosts atomic.Pointer[[]byte]
	setHosts := func(nodes ...int) {
		var doc struct {
			Hosts []map[string]string `json:"hosts"`
		}
		for _, i := range nodes {
			doc.Hosts = append(doc.Hosts, map[string]string{"addr": c.Node(i).ProxyAddr()})
		}
		b, err := json.Marshal(doc)
		must(t, err)
		hosts.Store(&b)
	}
	setHosts(1, 2, 3)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(*hosts.Load())
	}))
	t.Cleanup(srv.Close)
	p := openFaultPool(t, c.DSN(replicaParams+"&hostsURL="+url.QueryEscape(srv.URL+"/hosts")))
	p.db.SetMaxOpenConns(4)
	waitReplicasServe(t, ctx, c, p, 2, 3)
	var reads atomic.Int64
	for range 40 {
		if _, err := nodeOf(readIntent(ctx), c, p.db); err == nil {
			reads.Add(1)
		}
	}
	setHosts(1, 2)
	gone := waitFor(10*time.Second, func() bool {
		for range 8 {
			_, _ = nodeOf(readIntent(ctx), c, p.db)
		}
		return appSessions(t, ctx, c.Node(3)) == 0
	})
	if !gone {
		t.Fatalf("node 3 left the host list and still holds %d app sessions (%s)", appSessions(t, ctx, c.Node(3)), replicaSummary(c, p.cn.Stats()))
	}
}

// appSessions counts the sessions of the app user on node n.
func appSessions(t *testing.T, ctx context.Context, n *harness.Node) int {
	var k int
	must(t, n.Admin().QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ?", harness.AppUser).Scan(&k))
	return k
}
