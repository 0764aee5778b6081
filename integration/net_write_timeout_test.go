package integration

import (
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// A fault of one session: a slow reader. With net_write_timeout=1 (a session variable set
// through the DSN), a client that stops reading a large result makes the server's write
// block; after a second the server gives up on the session (Aborted_clients) and closes
// it. The host is fine: when the client reads on it gets the rows that were buffered, then
// a *failover.FailoverError with Failed == Current, and the pool stays on node 1 with its
// writers unharmed.
func TestSlowReaderNetWriteTimeout(t *testing.T) {
	const resultRows = 100000 // about 100 MB: far more than the socket and proxy buffers hold
	c := harness.Start(t, 2)
	ctx := ctxT(t, time.Minute)
	n1 := c.Node(1)
	name := t.Name()
	createWriteTable(t, ctx, c, "nwt_load")

	p := openFaultPool(t, c.DSN(sessionFaultParams+"&net_write_timeout=1"))
	load := startWriters(t, ctx, p.db, "nwt_load", 2, 20*time.Millisecond)
	sc, err := p.db.Conn(ctx)
	must(t, err)
	defer sc.Close()
	before, err := sessionOf(ctx, c, sc)
	must(t, err)
	if before.node != 1 {
		t.Fatalf("pinned connection on node %d, want 1", before.node)
	}
	var nwt int
	must(t, sc.QueryRowContext(ctx, "SELECT @@SESSION.net_write_timeout").Scan(&nwt))
	if nwt != 1 {
		t.Fatalf("session net_write_timeout=%d, want 1 (from the DSN)", nwt)
	}
	aborted0 := statusOf(ctx, t, n1, "Aborted_clients")["Aborted_clients"]

	rows, err := sc.QueryContext(ctx, "SELECT seq, REPEAT('x', 1000) FROM seq_1_to_100000")
	must(t, err)
	if !rows.Next() {
		t.Fatalf("no first row: %v", rows.Err())
	}
	// Stop reading until the server has given up on the session.
	paused := time.Now()
	ok := waitFor(10*time.Second, func() bool {
		v, err := n1.QueryInt(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE ID = ?", before.id)
		return err == nil && v == 0
	})
	pause := time.Since(paused)
	if !ok {
		rows.Close()
		t.Fatalf("the server still has the session of the stalled reader after 10 s")
	}
	time.Sleep(200 * time.Millisecond) // the proxy passes the close on
	read := 1
	for rows.Next() {
		read++
	}
	callerErr := rows.Err()
	rows.Close()
	aborted := statusOf(ctx, t, n1, "Aborted_clients")["Aborted_clients"] - aborted0
	t.Logf("after %d of %d rows: %v", read, resultRows, callerErr)
	if read >= resultRows {
		t.Errorf("read all %d rows: the server never cut the stalled session", read)
	}
	wantSessionFault(t, c, p, "reading on after the stall", callerErr, n1.ProxyAddr())
	after, aerr := sessionOf(ctx, c, sc)
	if aerr != nil || after.node != 1 || after.id == before.id {
		t.Errorf("the connection after the cut: %+v, %v; want a new session on node 1 (was %d)", after, aerr, before.id)
	}
	t.Logf("FIGURE %s: server_cut_session_after_ms=%d", name, pause.Milliseconds())
	t.Logf("FIGURE %s: rows_read=%d", name, read)
	t.Logf("FIGURE %s: aborted_clients_delta=%d", name, aborted)
	t.Logf("FIGURE %s: caller_error=%s", name, errKind(callerErr))

	wantPoolOn(t, ctx, c, p, 1, "after the fault")
	if !load.waitMoreWrites(6, 3*time.Second) {
		t.Errorf("the writers did not make 6 more writes within 3 s after the fault")
	}
	wantPoolOn(t, ctx, c, p, 1, "after the workload ran on")
	t.Logf("FIGURE %s: pool_active_node=%d", name, p.active(c))
	t.Logf("FIGURE %s: switch_events=%d", name, p.switches())
	load.checkWrites(t, ctx, c, name)
}
