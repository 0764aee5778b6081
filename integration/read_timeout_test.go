package integration

import (
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Issue 9, fault class 1: a statement that runs longer than readTimeout on a live host.
// go-sql-driver's read times out and it closes the connection (mysql.ErrInvalidConn),
// exactly as for a hung host; but node 1 answers a new connection at once, so the caller
// gets a *failover.FailoverError with Failed == Current and MaybeExecuted (the statement
// goes on running on the server), the connection gets a new session on node 1, and the
// pool stays there with its writers unharmed. The write variant shows that the statement
// did run, exactly once, and was not run again.
func TestQueryLongerThanReadTimeout(t *testing.T) {
	c := harness.Start(t, 2)
	ctx := ctxT(t, time.Minute)
	n1 := c.Node(1)
	name := t.Name()
	must(t, n1.Exec(ctx, "CREATE TABLE app.rt (id INT AUTO_INCREMENT PRIMARY KEY, k INT NOT NULL)"))
	createWriteTable(t, ctx, c, "rt_load")

	p := openFaultPool(t, c.DSN("readTimeout=1s&hostTimeout=2s&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"))
	load := startWriters(t, ctx, p.db, "rt_load", 2, 20*time.Millisecond)
	sc, err := p.db.Conn(ctx)
	must(t, err)
	defer sc.Close()

	insertRan := false
	for _, step := range []struct{ name, query string }{
		{"select", "SELECT SLEEP(3)"},
		{"insert", "INSERT INTO app.rt (k) SELECT 7 FROM DUAL WHERE SLEEP(3) = 0"},
	} {
		before, err := sessionOf(ctx, c, sc)
		must(t, err)
		if before.node != 1 {
			t.Errorf("%s: pinned connection on node %d before the fault, want 1: step skipped", step.name, before.node)
			continue
		}
		insertRan = insertRan || step.name == "insert"
		begin := time.Now()
		_, callerErr := sc.ExecContext(ctx, step.query)
		took := time.Since(begin)
		t.Logf("%s: %s: %v after %v", step.name, step.query, callerErr, took.Round(time.Millisecond))
		if callerErr == nil {
			t.Errorf("%s: %s returned nil with readTimeout=1s", step.name, step.query)
		} else if fe := wantSessionFault(t, c, p, step.name, callerErr, n1.ProxyAddr()); fe != nil && !fe.MaybeExecuted {
			t.Errorf("%s: FailoverError.MaybeExecuted is false for a statement the server was running", step.name)
		}
		if took < 900*time.Millisecond || took > 1800*time.Millisecond {
			t.Errorf("%s: the caller waited %v, want about readTimeout (1 s), once", step.name, took)
		}
		after, aerr := sessionOf(ctx, c, sc)
		if aerr != nil || after.node != 1 || after.id == before.id {
			t.Errorf("%s: the connection after the read timeout: %+v, %v; want a new session on node 1 (was %d)", step.name, after, aerr, before.id)
		}
		t.Logf("FIGURE %s: %s_caller_error=%s", name, step.name, errKind(callerErr))
		t.Logf("FIGURE %s: %s_caller_error_ms=%d", name, step.name, took.Milliseconds())
		wantPoolOn(t, ctx, c, p, 1, step.name+": after the fault")
	}

	// The INSERT's session goes on on node 1 and commits after its SLEEP(3).
	if insertRan && !waitFor(5*time.Second, func() bool {
		n, err := n1.QueryInt(ctx, "SELECT COUNT(*) FROM app.rt WHERE k = 7")
		return err == nil && n > 0
	}) {
		t.Errorf("the timed-out INSERT's row never showed on node 1")
	}
	if !load.waitMoreWrites(6, 3*time.Second) {
		t.Errorf("the writers did not make 6 more writes within 3 s after the fault")
	}
	wantPoolOn(t, ctx, c, p, 1, "after the workload ran on")
	t.Logf("FIGURE %s: pool_active_node=%d", name, p.active(c))
	t.Logf("FIGURE %s: switch_events=%d", name, p.switches())
	load.checkWrites(t, ctx, c, name) // waits for the replicas
	for i := 1; i <= c.N() && insertRan; i++ {
		v, err := c.Node(i).QueryInt(ctx, "SELECT COUNT(*) FROM app.rt WHERE k = 7")
		must(t, err)
		if v != 1 {
			t.Errorf("node %d has the timed-out INSERT's row %d times, want once (it ran on node 1, and only there)", i, v)
		}
	}
}
