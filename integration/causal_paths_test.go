package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// TestCausalReadsWritePaths: causal reads count every write, whatever path it
// took to the primary, on real servers. One 2-node cluster for every subtest: node 1 the
// primary, node 2 its one replica held back (MASTER_DELAY: replicating, applying nothing), so that a read it serves
// after a write can never see that write (a stale read, deterministic); every read-intent
// read after a counted write waits there for causalReadsTimeout (50 ms), misses, and goes
// to node 1. For causalReads=local (the write and the read on one *sql.Conn) and global
// (the write through the pool, the read on another pinned connection), three times each:
// an INSERT through ExecContext; INSERT ... RETURNING through QueryRowContext (the query
// path); an INSERT with arguments (go-sql-driver answers driver.ErrSkip and database/sql
// prepares it: the prepared statement's run is the write); an INSERT in a transaction,
// counted at COMMIT. Asserted: every read sees its row, node 1 served it, and each counted
// a miss (Stats.CausalPrimary). Then, under global, a position read while a transaction
// is open (node 2 replicating and reaching it) does not cover the COMMIT: node 2 is
// held back (MASTER_DELAY) before the COMMIT, and the read after it must not be served there. Last, with
// node 2 replicating and a 2 s timeout, a replica session that reached a write's position
// serves the next reads without waiting again: one CausalWaits for three reads.
func TestCausalReadsWritePaths(t *testing.T) {
	start := time.Now()
	c := harness.Start(t, 2)
	ctx := ctxT(t, 2*time.Minute)
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.cpath (id INT PRIMARY KEY, v INT NOT NULL)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	holdReplica(t, ctx, c.Node(2))

	type execer interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
		QueryRowContext(context.Context, string, ...any) *sql.Row
		BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
	}
	paths := []struct {
		name  string
		write func(ctx context.Context, w execer, id int) error
	}{
		{"exec", func(ctx context.Context, w execer, id int) error {
			_, err := w.ExecContext(ctx, fmt.Sprintf("INSERT INTO cpath (id, v) VALUES (%d, %d)", id, id*7))
			return err
		}},
		{"query", func(ctx context.Context, w execer, id int) error {
			var got int
			return w.QueryRowContext(ctx, fmt.Sprintf("INSERT INTO cpath (id, v) VALUES (%d, %d) RETURNING id", id, id*7)).Scan(&got)
		}},
		{"prepared", func(ctx context.Context, w execer, id int) error {
			_, err := w.ExecContext(ctx, "INSERT INTO cpath (id, v) VALUES (?, ?)", id, id*7)
			return err
		}},
		{"transaction", func(ctx context.Context, w execer, id int) error {
			tx, err := w.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO cpath (id, v) VALUES (%d, %d)", id, id*7)); err != nil {
				_ = tx.Rollback()
				return err
			}
			return tx.Commit()
		}},
	}
	// readRow reads row id with a read intent on r: the node that served it, or 0 when
	// the row was not there (a stale read).
	readRow := func(t *testing.T, r *sql.Conn, id int) int {
		t.Helper()
		var v, port int
		err := r.QueryRowContext(readIntent(ctx), fmt.Sprintf("SELECT v, @@port FROM cpath WHERE id = %d", id)).Scan(&v, &port)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return 0
		case err != nil:
			t.Fatalf("read of row %d: %v", id, err)
		case v != id*7:
			t.Fatalf("row %d read as v=%d", id, v)
		}
		return c.NodeByPort(port)
	}
	id := 0
	for _, mode := range []string{"local", "global"} {
		p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=2s&causalReadsTimeout=50ms&causalReads="+mode))
		p.db.SetMaxOpenConns(4)
		waitReplicasServe(t, ctx, c, p, 2)
		writer, err := p.db.Conn(ctx)
		must(t, err)
		reader := writer
		var w execer = writer
		if mode == "global" {
			reader, err = p.db.Conn(ctx)
			must(t, err)
			w = p.db // through the pool: writer is pinned, so another connection
		}
		for _, path := range paths {
			t.Run(mode+"/"+path.name, func(t *testing.T) {
				for range 3 {
					id++
					before := p.cn.Stats().CausalPrimary
					must(t, path.write(ctx, w, id))
					switch n := readRow(t, reader, id); n {
					case 0:
						t.Fatalf("row %d, written through %s, not seen by the read-intent read after it: node 2 served it without a causal wait", id, path.name)
					case 1:
					default:
						t.Fatalf("row %d read on node %d, want node 1 (node 2 never has it)", id, n)
					}
					if got := p.cn.Stats().CausalPrimary - before; got != 1 {
						t.Errorf("CausalPrimary grew by %d for row %d, want 1 (node 2's wait timed out)", got, id)
					}
				}
			})
		}
		if mode == "global" {
			t.Run("global/position read before COMMIT", func(t *testing.T) {
				releaseReplica(t, ctx, c.Node(2))
				// A new position; the reader serves from node 2 again once node 2 has it and
				// the reader's memory of node 2's misses has passed (causalReadsTimeout).
				id++
				must(t, paths[0].write(ctx, p.db, id))
				must(t, c.WaitReplicasCaughtUp(ctx))
				waitQualifiesAgain(t, c, p, 2)
				time.Sleep(60 * time.Millisecond) // past causalReadsTimeout: the reader tries node 2 again
				tx, err := writer.BeginTx(ctx, nil)
				must(t, err)
				defer tx.Rollback()
				id++
				_, err = tx.ExecContext(ctx, fmt.Sprintf("INSERT INTO cpath (id, v) VALUES (%d, %d)", id, id*7))
				must(t, err)
				// The pool's position, read now, is before the COMMIT; node 2 reaches it.
				waits := p.cn.Stats().CausalWaits
				if n := readRow(t, reader, id-1); n != 2 {
					t.Fatalf("read during the transaction served by node %d, want node 2 (it has caught up)", n)
				}
				if p.cn.Stats().CausalWaits == waits {
					t.Fatalf("no causal wait for the read during the transaction: %s", replicaSummary(c, p.cn.Stats()))
				}
				holdReplica(t, ctx, c.Node(2))
				must(t, tx.Commit())
				if n := readRow(t, reader, id); n != 1 {
					t.Fatalf("read after the COMMIT: node %d (0: stale), want node 1: the position read before the COMMIT does not cover it", n)
				}
			})
		}
		must(t, writer.Close())
		if reader != writer {
			must(t, reader.Close())
		}
	}

	t.Run("local/reached once", func(t *testing.T) {
		releaseReplica(t, ctx, c.Node(2))
		must(t, c.WaitReplicasCaughtUp(ctx))
		p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=5s&causalReadsTimeout=2s&causalReads=local"))
		waitReplicasServe(t, ctx, c, p, 2)
		sc, err := p.db.Conn(ctx)
		must(t, err)
		defer sc.Close()
		id++
		_, err = sc.ExecContext(ctx, fmt.Sprintf("INSERT INTO cpath (id, v) VALUES (%d, %d)", id, id*7))
		must(t, err)
		before := p.cn.Stats()
		for i := range 3 {
			if n := readRow(t, sc, id); n != 2 {
				t.Fatalf("read %d served by node %d, want node 2 (replicating, within 2 s)", i+1, n)
			}
		}
		st := p.cn.Stats()
		if w := st.CausalWaits - before.CausalWaits; w != 1 || st.CausalPrimary != before.CausalPrimary {
			t.Errorf("CausalWaits grew by %d, CausalPrimary by %d for three reads of one write, want 1 and 0: the session had reached the position",
				w, st.CausalPrimary-before.CausalPrimary)
		}
	})
	t.Logf("FIGURE %s: seconds=%.1f", t.Name(), time.Since(start).Seconds())
}

// holdReplica keeps node n from applying what it receives (MASTER_DELAY of an hour) while
// its replication runs: a replica whose SQL thread is stopped is no replica at all (it
// serves no reads), a delayed one serves them and misses every new write.
func holdReplica(t *testing.T, ctx context.Context, n *harness.Node) {
	t.Helper()
	for _, q := range []string{"STOP SLAVE", "CHANGE MASTER TO MASTER_DELAY = 3600", "START SLAVE"} {
		must(t, n.Exec(ctx, q))
	}
}

// releaseReplica ends holdReplica: node n applies what it received and catches up.
func releaseReplica(t *testing.T, ctx context.Context, n *harness.Node) {
	t.Helper()
	for _, q := range []string{"STOP SLAVE", "CHANGE MASTER TO MASTER_DELAY = 0", "START SLAVE"} {
		must(t, n.Exec(ctx, q))
	}
}
