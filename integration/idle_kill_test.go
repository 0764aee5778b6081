package integration

import (
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Cases 09 and 10 (b) on a pinned connection, which database/sql never resets between
// calls: a session the server closed while it sat idle (KILL of a sleeping connection,
// wait_timeout), seen through the proxy, is replaced on the same host before the next
// statement is sent. The statement succeeds, the pool stays on node 1.
func TestIdlePinnedSessionClosedByServer(t *testing.T) {
	for _, tc := range []struct {
		name   string
		params string
		close  func(t *testing.T, c *harness.Cluster, id int64)
	}{
		{"kill", "readTimeout=2s", func(t *testing.T, c *harness.Cluster, id int64) {
			must(t, c.Node(1).Exec(ctxT(t, 5*time.Second), "KILL CONNECTION ?", id))
		}},
		{"wait_timeout", "readTimeout=2s&wait_timeout=1", func(*testing.T, *harness.Cluster, int64) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := harness.Start(t, 2)
			ctx := ctxT(t, time.Minute)
			must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.idle_kill (id INT PRIMARY KEY)"))
			db, ev := openWithEvents(t, c.DSN(tc.params))
			sc, err := db.Conn(ctx)
			must(t, err)
			defer sc.Close()
			var id int64
			must(t, sc.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id))
			tc.close(t, c, id)
			time.Sleep(1500 * time.Millisecond) // idle past the driver's liveness-check threshold (and wait_timeout)

			if _, err := sc.ExecContext(ctx, "INSERT INTO app.idle_kill VALUES (1)"); err != nil {
				t.Fatalf("INSERT after the server closed the idle session: %v", err)
			}
			node, err := nodeOf(ctx, c, sc)
			must(t, err)
			var id2 int64
			must(t, sc.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id2))
			n, err := c.Node(1).QueryInt(ctx, "SELECT COUNT(*) FROM app.idle_kill")
			must(t, err)
			t.Logf("FIGURE TestIdlePinnedSessionClosedByServer/%s: node=%d new_session=%v rows_on_node1=%d switches=%d host_failed=%d",
				tc.name, node, id2 != id, n, ev.count(failover.EventSwitch, ""), ev.count(failover.EventHostFailed, ""))
			if node != 1 || id2 == id || n != 1 {
				t.Errorf("on node %d, new session %v, %d rows on node 1; want node 1, a new session, 1 row", node, id2 != id, n)
			}
			if ev.count(failover.EventSwitch, "") != 0 || ev.count(failover.EventHostFailed, "") != 0 {
				t.Errorf("the pool moved: %d switches, %d host failures", ev.count(failover.EventSwitch, ""), ev.count(failover.EventHostFailed, ""))
			}
		})
	}
}
