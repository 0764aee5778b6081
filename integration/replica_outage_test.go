package integration

// Read/write splitting while the writer is out and writes go on, while a replica restarts,
// and while a read-only transaction runs on a replica whose connection's primary session
// died: reads keep to the replicas, keys keep to their replica, and a replica session
// never goes back to the pool's shared ones with a transaction open.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// TestReadsWhileWritesFail: replicaReads with 8 readers and one writer (autocommit
// INSERT, a 1 s deadline each) on one pool of 9 connections that database/sql replaces
// every 300 ms (SetConnMaxLifetime: new connections open all along); the primary is
// killed and nothing is promoted for 3 s, under targetSessionAttrs read-write, any and
// primary. The readers read in the three ways a read intent is given: 4 with
// WithReadIntent through the pool, 2 in ReadOnly transactions, 2 on a pinned connection
// after SetReadOnly(true) (through Raw), each read with a 3 s hang guard. Asserted: 0
// failed reads after the kill (the SetReadOnly call included), none served by node 1
// once it was killed, no write after the kill succeeded. Reported (FIGURE, never
// asserted): reads per second in the second before the kill and over the 3 s after it,
// the slowest read after the kill, the writes after the kill by outcome.
func TestReadsWhileWritesFail(t *testing.T) {
	const readers = 8
	for _, target := range []string{"read-write", "any", "primary"} {
		t.Run(target, func(t *testing.T) {
			fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
			c := harness.Start(t, 3)
			ctx := ctxT(t, 2*time.Minute)
			must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.wf (id INT AUTO_INCREMENT PRIMARY KEY, port INT NOT NULL)"))
			must(t, c.WaitReplicasCaughtUp(ctx))
			p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=2s&targetSessionAttrs="+target))
			p.db.SetMaxOpenConns(readers + 1)
			p.db.SetMaxIdleConns(readers + 1)
			p.db.SetConnMaxLifetime(300 * time.Millisecond)
			waitReplicasServe(t, ctx, c, p, 2, 3)

			// read is one read-intent read by reader w, in its way; it returns the node.
			read := func(rctx context.Context, w int) (int, error) {
				switch {
				case w < 4:
					return nodeOf(readIntent(rctx), c, p.db)
				case w < 6:
					tx, err := p.db.BeginTx(rctx, &sql.TxOptions{ReadOnly: true})
					if err != nil {
						return 0, err
					}
					n, err := nodeOf(rctx, c, tx)
					if err != nil {
						_ = tx.Rollback()
						return 0, err
					}
					return n, tx.Commit()
				}
				sc, err := p.db.Conn(rctx)
				if err != nil {
					return 0, err
				}
				defer sc.Close()
				if err := setConnReadOnly(rctx, sc, true); err != nil {
					return 0, fmt.Errorf("SetReadOnly(true): %w", err)
				}
				return nodeOf(rctx, c, sc)
			}
			var (
				mu                    sync.Mutex
				measureFrom, killed   time.Time
				readsBefore, readsDur int // in the second before the kill, in the 3 s after it
				readErrs, onPrimary   int
				firstReadErr          error
				slowest               time.Duration
				writeKinds            = map[string]int{}
			)
			stop := make(chan struct{})
			var wg sync.WaitGroup
			for w := range readers + 1 {
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
						if w == readers {
							wctx, cancel := context.WithTimeout(ctx, time.Second)
							_, err := p.db.ExecContext(wctx, "INSERT INTO app.wf (port) VALUES (@@port)")
							cancel()
							mu.Lock()
							if !killed.IsZero() && t0.After(killed) {
								writeKinds[errKind(err)]++
							}
							mu.Unlock()
							time.Sleep(5 * time.Millisecond)
							continue
						}
						rctx, cancel := context.WithTimeout(ctx, 3*time.Second)
						n, err := read(rctx, w)
						cancel()
						end := time.Now()
						mu.Lock()
						switch {
						case killed.IsZero():
							if !measureFrom.IsZero() && t0.After(measureFrom) {
								readsBefore++
							}
						case err != nil:
							readErrs++
							if firstReadErr == nil {
								firstReadErr = fmt.Errorf("reader %d: %w", w, err)
							}
						default:
							if end.Sub(killed) <= 3*time.Second {
								readsDur++
							}
							slowest = max(slowest, end.Sub(t0))
							if n == 1 && t0.After(killed) {
								onPrimary++
							}
						}
						mu.Unlock()
					}
				}()
			}
			time.Sleep(500 * time.Millisecond) // reads and writes flowing
			mu.Lock()
			measureFrom = time.Now()
			mu.Unlock()
			time.Sleep(time.Second)
			mu.Lock()
			killed = time.Now()
			mu.Unlock()
			must(t, c.Node(1).Kill())
			time.Sleep(3 * time.Second)
			close(stop)
			wg.Wait()

			if readErrs != 0 {
				t.Errorf("%d read-intent reads failed while no writer answered; first: %s: %v", readErrs, errKind(errors.Unwrap(firstReadErr)), firstReadErr)
			}
			if onPrimary != 0 {
				t.Errorf("%d reads started after the kill ran on node 1", onPrimary)
			}
			if writeKinds["ok"] != 0 {
				t.Errorf("%d writes started after the kill succeeded with the primary dead and nothing promoted", writeKinds["ok"])
			}
			if readsDur == 0 {
				t.Fatalf("no read was served in the 3 s after the kill")
			}
			fig("reads_per_s_before_kill", readsBefore)
			fig("reads_per_s_during_outage", readsDur/3)
			fig("read_errors", readErrs)
			fig("slowest_read_after_kill", slowest.Round(time.Millisecond))
			for _, k := range sortedKeys(writeKinds) {
				fig("writes_after_kill_"+k, writeKinds[k])
			}
			fig("stats", replicaSummary(c, p.cn.Stats()))
		})
	}
}

// TestKeysStayHomeAfterReplicaRestart: 200 routing keys over 3 replicas (a 4-node
// cluster, replicaReads with probes every 100 ms), each read through the pool by 8
// goroutines at once (so each replica has several shared sessions idle) and on a pinned
// connection. Node 4 is killed, its keys read elsewhere while it is out, and it is started
// again. Asserted, once it qualifies again: every key reads on its home replica, through
// the pool and on the pinned connection, with no replica retry (Stats.ReplicaRetries) in
// those rounds. Reported: the keys per node, the rounds' moves and retries.
func TestKeysStayHomeAfterReplicaRestart(t *testing.T) {
	const keys, workers = 200, 8
	c := harness.Start(t, 4)
	ctx := ctxT(t, 3*time.Minute)
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
	p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=2s"))
	p.db.SetMaxOpenConns(workers + 1)
	p.db.SetMaxIdleConns(workers + 1)
	waitReplicasServe(t, ctx, c, p, 2, 3, 4)
	pinned, err := p.db.Conn(ctx)
	must(t, err)
	defer pinned.Close()
	key := func(k int) string { return fmt.Sprintf("acct-%d", k) }
	type q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}
	// round reads every key once through q (workers at a time through the pool) and
	// returns the node each ran on (0: failed) and the first error.
	round := func(via q, par int) ([]int, error) {
		on := make([]int, keys)
		var mu sync.Mutex
		var first error
		var wg sync.WaitGroup
		next := make(chan int)
		for range par {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := range next {
					n, err := nodeOf(mysqlfailover.WithReadIntent(ctx, key(k)), c, via)
					mu.Lock()
					if err != nil && first == nil {
						first = err
					}
					on[k] = n
					mu.Unlock()
				}
			}()
		}
		for k := range keys {
			next <- k
		}
		close(next)
		wg.Wait()
		return on, first
	}
	home, err := round(p.db, workers)
	must(t, err)
	again, err := round(pinned, 1)
	must(t, err)
	count := map[int]int{}
	for k := range keys {
		count[home[k]]++
		if again[k] != home[k] {
			t.Fatalf("key %s read on node %d through the pool and on node %d pinned, before any fault", key(k), home[k], again[k])
		}
	}
	if count[4] == 0 || count[1] != 0 {
		t.Fatalf("keys by node %v: want node 4 among the homes, none on node 1", count)
	}
	fig("keys_by_node", count)

	must(t, c.Node(4).Kill())
	if !waitFor(15*time.Second, func() bool { return hostOf(c, p, 4).ReplicaSkip != "" }) {
		t.Fatalf("node 4 still qualifies 15 s after it was killed: %s", replicaSummary(c, p.cn.Stats()))
	}
	for range 3 { // node 4's keys read elsewhere while it is out
		if _, err := round(p.db, workers); err != nil {
			t.Fatalf("a keyed read while node 4 is out: %v", err)
		}
	}
	must(t, c.Node(4).Restart(ctx))
	waitQualifiesAgain(t, c, p, 4)

	check := func(what string, via q, par int) {
		before := p.cn.Stats().ReplicaRetries
		on, err := round(via, par)
		retries := p.cn.Stats().ReplicaRetries - before
		moved := map[string]int{}
		for k := range keys {
			if on[k] != home[k] {
				moved[fmt.Sprintf("%dto%d", home[k], on[k])]++
			}
		}
		if len(moved) != 0 || err != nil || retries != 0 {
			t.Errorf("%s after node 4 qualified again: keys off their home %v, replica retries %d, first error %v; want none",
				what, moved, retries, err)
		}
		fig(what+"_moved", moved)
		fig(what+"_replica_retries", retries)
	}
	check("pool", p.db, workers)
	check("pinned", pinned, 1)
	fig("stats", replicaSummary(c, p.cn.Stats()))
}

// TestReplicaTxOutlivesPrimarySession: with replicaReads, a pinned connection opens a
// read-only transaction on a replica (the replica a routing key reads on) while its idle
// primary session is killed on node 1 (KILL CONNECTION) and sits for more than the 1 s
// idle check. Asserted: Ping and SetReadOnly(true) (through Raw) during the transaction
// return nil, the transaction reads on (the same snapshot: a row written on node 1
// meanwhile is not in it) and commits, and the sessions the pool's reads take next on
// that replica hold no transaction (@@in_transaction 0, the new row visible); the same
// after a transaction lost on its replica (its replica session killed) and rolled back.
func TestReplicaTxOutlivesPrimarySession(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.snap (id INT PRIMARY KEY)"))
	must(t, c.Node(1).Exec(ctx, "INSERT INTO app.snap VALUES (1)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=2s"))
	p.db.SetMaxOpenConns(4)
	waitReplicasServe(t, ctx, c, p, 2, 3)
	keyed := mysqlfailover.WithReadIntent(ctx, "acct-1")
	home, err := nodeOf(keyed, c, p.db)
	must(t, err)

	sc, err := p.db.Conn(ctx)
	must(t, err)
	defer sc.Close()
	prim, err := sessionOf(ctx, c, sc) // no intent: the primary session
	must(t, err)
	if prim.node != 1 {
		t.Fatalf("a statement without intent ran on node %d", prim.node)
	}
	tx, err := sc.BeginTx(keyed, &sql.TxOptions{ReadOnly: true})
	must(t, err)
	defer tx.Rollback()
	var n0 int
	must(t, tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM snap").Scan(&n0))
	rep, err := sessionOf(ctx, c, tx)
	must(t, err)
	if rep.node != home {
		t.Fatalf("the read-only transaction runs on node %d, want the key's replica %d", rep.node, home)
	}
	must(t, c.Node(1).Exec(ctx, fmt.Sprintf("KILL CONNECTION %d", prim.id)))
	waitGone(t, ctx, c.Node(1), prim.id)
	must(t, c.Node(1).Exec(ctx, "INSERT INTO app.snap VALUES (2)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	time.Sleep(1200 * time.Millisecond) // past the idle check of the primary session

	if err := sc.PingContext(ctx); err != nil {
		t.Errorf("Ping during the replica transaction, its connection's primary session killed: %v, want nil", err)
	}
	if err := setConnReadOnly(ctx, sc, true); err != nil {
		t.Errorf("SetReadOnly(true) during the replica transaction: %v, want nil", err)
	}
	var n1 int
	if err := tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM snap").Scan(&n1); err != nil || n1 != n0 {
		t.Errorf("the transaction's read after Ping: %d rows, %v; want %d (its snapshot), no error", n1, err, n0)
	}
	if err := tx.Commit(); err != nil {
		t.Errorf("Commit: %v", err)
	}
	must(t, setConnReadOnly(ctx, sc, false))
	noTxLeft := func(what string) {
		t.Helper()
		for k := range 4 { // the sessions the key's replica gives out next, the transaction's first
			var port, inTx, rows int
			if err := p.db.QueryRowContext(keyed, "SELECT @@port, @@in_transaction, (SELECT COUNT(*) FROM snap)").Scan(&port, &inTx, &rows); err != nil {
				t.Fatalf("read %d %s: %v", k, what, err)
			}
			if inTx != 0 || rows != 2 {
				t.Errorf("read %d %s, on node %d: in_transaction %d, %d rows; want 0, 2 (no transaction left open)", k, what, c.NodeByPort(port), inTx, rows)
			}
		}
	}
	noTxLeft("after the transaction ended")

	// A read-only transaction lost on its replica: rolled back, it leaves nothing open.
	tx, err = sc.BeginTx(keyed, &sql.TxOptions{ReadOnly: true})
	must(t, err)
	must(t, tx.QueryRowContext(ctx, "SELECT COUNT(*) FROM snap").Scan(&n0))
	rep, err = sessionOf(ctx, c, tx)
	must(t, err)
	must(t, c.Node(rep.node).Exec(ctx, fmt.Sprintf("KILL CONNECTION %d", rep.id)))
	waitGone(t, ctx, c.Node(rep.node), rep.id)
	if _, err := sessionOf(ctx, c, tx); !errors.Is(err, failover.ErrTxLost) {
		t.Errorf("a statement of the transaction whose replica session was killed: %v, want failover.ErrTxLost", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Errorf("Rollback of the lost transaction: %v, want nil", err)
	}
	noTxLeft("after the lost transaction's rollback")
}
