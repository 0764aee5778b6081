package integration

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// A fault of one session: a statement bigger than the server's max_allowed_packet. The
// server answers 1153 (08S01, "Got a packet bigger than 'max_allowed_packet' bytes") and
// closes the session; a client still writing may instead see its write fail. Either way
// the host is fine: the caller gets a *failover.FailoverError with Failed == Current, the
// row is on no node, nothing ran twice, and the pool stays on node 1 with its writers
// unharmed.
func TestPacketTooLarge(t *testing.T) {
	c := harness.Start(t, 2)
	ctx := ctxT(t, time.Minute)
	n1 := c.Node(1)
	name := t.Name()
	must(t, n1.Exec(ctx, "CREATE TABLE app.big (id INT PRIMARY KEY, b LONGBLOB NOT NULL)"))
	createWriteTable(t, ctx, c, "ptl_load")
	// Sessions copy the global value when they start: set it before the pool connects.
	must(t, n1.Exec(ctx, "SET GLOBAL max_allowed_packet = 1048576"))

	// Straight to the servers: toxiproxy 2.5.0 leaks a link's goroutines when the server
	// stops reading a request half-way (see harness.Cluster.DirectClusterDSN).
	p := openFaultPool(t, c.DirectClusterDSN(sessionFaultParams))
	load := startWriters(t, ctx, p.db, "ptl_load", 2, 20*time.Millisecond)
	blob := strings.Repeat("x", 2<<20) // 2 MiB

	for _, step := range []struct {
		name  string
		id    int
		query string
		args  []any
	}{
		// A literal statement: one 2 MiB COM_QUERY packet.
		{"literal", 1, "INSERT INTO app.big VALUES (1, '" + blob + "')", nil},
		// With an argument: the PREPARE is small, the 2 MiB COM_STMT_EXECUTE is not.
		{"argument", 2, "INSERT INTO app.big VALUES (2, ?)", []any{blob}},
	} {
		sc, err := p.db.Conn(ctx)
		must(t, err)
		before, err := sessionOf(ctx, c, sc)
		must(t, err)
		if before.node != 1 {
			t.Errorf("%s: pinned connection on node %d before the fault, want 1: step skipped", step.name, before.node)
			must(t, sc.Close())
			continue
		}
		begin := time.Now()
		_, callerErr := sc.ExecContext(ctx, step.query, step.args...)
		took := time.Since(begin)
		t.Logf("%s: 2 MiB INSERT: %.300v", step.name, callerErr)
		if callerErr == nil {
			t.Errorf("%s: the 2 MiB INSERT succeeded with max_allowed_packet=1M", step.name)
		} else if fe := wantSessionFault(t, c, p, step.name+": 2 MiB INSERT", callerErr, n1.Addr()); fe != nil {
			// 1153: the server refused the packet unread, so the statement provably did
			// not run. A failed write proves nothing.
			var me *mysql.MySQLError
			refused := errors.As(callerErr, &me) && me.Number == 1153
			if refused && fe.MaybeExecuted {
				t.Errorf("%s: MaybeExecuted is true for a packet the server refused unread (1153)", step.name)
			}
			t.Logf("FIGURE %s: %s_refused_1153=%v maybe_executed=%v", name, step.name, refused, fe.MaybeExecuted)
		}
		after, aerr := sessionOf(ctx, c, sc)
		if aerr != nil || after.node != 1 || after.id == before.id {
			t.Errorf("%s: the connection after the rejected INSERT: %+v, %v; want a new session on node 1 (was %d)", step.name, after, aerr, before.id)
		}
		must(t, sc.Close())
		t.Logf("FIGURE %s: %s_caller_error=%s", name, step.name, errKind(callerErr))
		t.Logf("FIGURE %s: %s_caller_error_ms=%d", name, step.name, took.Milliseconds())
		wantPoolOn(t, ctx, c, p, 1, step.name+": after the fault")
		if !load.waitMoreWrites(6, 3*time.Second) {
			t.Errorf("%s: the writers did not make 6 more writes within 3 s after the fault", step.name)
		}
	}

	wantPoolOn(t, ctx, c, p, 1, "after the workload ran on")
	t.Logf("FIGURE %s: pool_active_node=%d", name, p.active(c))
	t.Logf("FIGURE %s: switch_events=%d", name, p.switches())
	load.checkWrites(t, ctx, c, name)
	for i := 1; i <= c.N(); i++ {
		v, err := c.Node(i).QueryInt(ctx, "SELECT COUNT(*) FROM app.big")
		must(t, err)
		if v != 0 {
			t.Errorf("node %d has %d of the oversized rows, want 0", i, v)
		}
	}
}
