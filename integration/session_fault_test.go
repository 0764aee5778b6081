package integration

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// A fault of one session (cases 09, 10 b): the server ends one session on a healthy host.
// A KILL of a busy or idle session, or a KILL QUERY, proves nothing about the host: the
// caller of the statement that hit it gets the error (a *failover.FailoverError with
// Failed == Current, or for KILL QUERY the plain 1317), the connection has a new session
// on the same host, and the pool stays on node 1: no switch event, Stats().Active
// unchanged, and the writers on the pool's other connections never notice.
//
// On MariaDB 10.11 a KILL CONNECTION of a busy session reaches go-sql-driver as a bare
// EOF (mysql.ErrInvalidConn), the same as a crashed host: error 1927 never shows.

// sessionFaultParams keeps fall-back out of the picture (a pool that moved stays moved, so
// the failure is plain to see) and readTimeout above every statement of the scenario.
const sessionFaultParams = "readTimeout=10s&hostTimeout=2s&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"

// killWhenRunning runs kill (KILL CONNECTION or KILL QUERY) on thread id of node n as
// soon as that session runs a statement containing marker, in the background.
func killWhenRunning(ctx context.Context, n *harness.Node, id int64, marker, kill string) <-chan error {
	done := make(chan error, 1)
	go func() {
		ok := waitFor(5*time.Second, func() bool {
			info, err := n.QueryString(ctx, "SELECT COALESCE(INFO, '') FROM information_schema.PROCESSLIST WHERE ID = ?", id)
			return err == nil && strings.Contains(info, marker)
		})
		if !ok {
			done <- fmt.Errorf("session %d never ran %q", id, marker)
			return
		}
		done <- n.Exec(ctx, kill+" ?", id)
	}()
	return done
}

func TestSessionFault(t *testing.T) {
	c := harness.Start(t, 2)
	ctx := ctxT(t, time.Minute)
	n1 := c.Node(1)
	must(t, n1.Exec(ctx, "CREATE TABLE app.sf (id INT PRIMARY KEY, v INT NOT NULL)"))
	must(t, n1.Exec(ctx, "INSERT INTO app.sf VALUES (1, 0)"))

	// start opens a fresh pool with two background writers and a pinned connection on
	// node 1, and returns the connection's session.
	type run struct {
		p    *faultPool
		load *writeLoad
		name string
	}
	start := func(t *testing.T, table string) *run {
		createWriteTable(t, ctx, c, table)
		p := openFaultPool(t, c.DSN(sessionFaultParams))
		load := startWriters(t, ctx, p.db, table, 2, 20*time.Millisecond)
		return &run{p: p, load: load, name: t.Name()}
	}
	// finish checks where the pool is, lets the writers run on, and checks their rows.
	finish := func(t *testing.T, r *run) {
		wantPoolOn(t, ctx, c, r.p, 1, "after the fault")
		if !r.load.waitMoreWrites(6, 3*time.Second) {
			t.Errorf("the writers did not make 6 more writes within 3 s after the fault")
		}
		wantPoolOn(t, ctx, c, r.p, 1, "after the workload ran on")
		t.Logf("FIGURE %s: pool_active_node=%d", r.name, r.p.active(c))
		t.Logf("FIGURE %s: switch_events=%d", r.name, r.p.switches())
		r.load.checkWrites(t, ctx, c, r.name)
	}
	sfValue := func(t *testing.T, node int) int64 {
		v, err := c.Node(node).QueryInt(ctx, "SELECT v FROM app.sf WHERE id = 1")
		must(t, err)
		return v
	}
	sfRows := func(t *testing.T, node int, id int) int64 {
		v, err := c.Node(node).QueryInt(ctx, "SELECT COUNT(*) FROM app.sf WHERE id = ?", id)
		must(t, err)
		return v
	}

	// A KILL CONNECTION of the session while it runs a statement: a SELECT, and an UPDATE
	// whose kill rolls it back (v stays 0: not run, and not run again).
	for _, tc := range []struct{ name, query string }{
		{"kill-busy-select", "SELECT SLEEP(5)"},
		{"kill-busy-update", "UPDATE app.sf SET v = v + 1 + SLEEP(5) WHERE id = 1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := start(t, strings.ReplaceAll("sfl_"+tc.name, "-", "_"))
			sc, err := r.p.db.Conn(ctx)
			must(t, err)
			defer sc.Close()
			before, err := sessionOf(ctx, c, sc)
			must(t, err)
			if before.node != 1 {
				t.Fatalf("pinned connection on node %d, want 1", before.node)
			}
			killed := killWhenRunning(ctx, n1, before.id, "SLEEP(5)", "KILL CONNECTION")
			begin := time.Now()
			_, callerErr := sc.ExecContext(ctx, tc.query)
			took := time.Since(begin)
			must(t, <-killed)
			t.Logf("%s after the KILL: %v", tc.query, callerErr)
			fe := wantSessionFault(t, c, r.p, tc.query, callerErr, n1.ProxyAddr())
			if fe != nil && !fe.MaybeExecuted {
				t.Errorf("FailoverError.MaybeExecuted is false for a statement killed while it ran")
			}
			if took > 4*time.Second {
				t.Errorf("the killed statement returned after %v: it ran again (SLEEP(5))", took)
			}
			after, err := sessionOf(ctx, c, sc)
			if err != nil || after.node != 1 || after.id == before.id {
				t.Errorf("the connection after the KILL: %+v, %v; want a new session on node 1 (was %d)", after, err, before.id)
			}
			t.Logf("FIGURE %s: caller_error=%s", r.name, errKind(callerErr))
			t.Logf("FIGURE %s: caller_error_ms=%d", r.name, took.Milliseconds())
			finish(t, r)
			for i := 1; i <= c.N(); i++ {
				if v := sfValue(t, i); v != 0 {
					t.Errorf("node %d: v=%d after the killed UPDATE, want 0 (rolled back, never run again)", i, v)
				}
			}
		})
	}

	// A KILL CONNECTION of the pinned session while it sits idle, and the next statement
	// within the driver's 1 s idle-check window: the statement is written to a dead
	// socket, the read sees EOF. The driver cannot know whether it ran: the caller gets
	// the FailoverError with Failed == Current, the row is nowhere. Never a switch.
	t.Run("kill-idle-soon", func(t *testing.T) {
		r := start(t, "sfl_kill_idle_soon")
		sc, err := r.p.db.Conn(ctx)
		must(t, err)
		defer sc.Close()
		before, err := sessionOf(ctx, c, sc)
		must(t, err)
		lastUse := time.Now()
		must(t, n1.Exec(ctx, "KILL CONNECTION ?", before.id))
		waitGone(t, ctx, n1, before.id)
		idle := time.Since(lastUse)
		if idle > 800*time.Millisecond {
			t.Fatalf("the KILL took %v: too close to the driver's 1 s idle check to test the window", idle)
		}
		begin := time.Now()
		_, err = sc.ExecContext(ctx, "INSERT INTO app.sf VALUES (10, 0)")
		took := time.Since(begin)
		t.Logf("INSERT %v after the KILL of the idle session: %v", idle.Round(time.Millisecond), err)
		must(t, c.WaitReplicasCaughtUp(ctx))
		// The request was written (to a socket the server had closed: the write itself
		// succeeds), so the driver cannot know whether it ran: an error, never a silent
		// second run.
		if err == nil {
			t.Errorf("INSERT on the killed session returned nil: it was run again on a new session without proof that the first one never ran")
		} else {
			wantSessionFault(t, c, r.p, "INSERT after the KILL", err, n1.ProxyAddr())
		}
		for i := 1; i <= c.N(); i++ {
			if n := sfRows(t, i, 10); n != 0 {
				t.Errorf("node %d has row 10 %d times, want 0 (it met a dead session and must not be run again)", i, n)
			}
		}
		after, aerr := sessionOf(ctx, c, sc)
		if aerr != nil || after.node != 1 || after.id == before.id {
			t.Errorf("the connection after the KILL: %+v, %v; want a new session on node 1", after, aerr)
		}
		t.Logf("FIGURE %s: idle_before_statement_ms=%d", r.name, idle.Milliseconds())
		t.Logf("FIGURE %s: caller_error=%s", r.name, errKind(err))
		t.Logf("FIGURE %s: caller_error_ms=%d", r.name, took.Milliseconds())
		finish(t, r)
	})

	// The same KILL, and the next statement more than 1 s later: the driver's idle
	// liveness check sees the closed socket before anything is sent, so the statement
	// runs once on a new session on node 1 and the caller sees nothing.
	t.Run("kill-idle-late", func(t *testing.T) {
		r := start(t, "sfl_kill_idle_late")
		sc, err := r.p.db.Conn(ctx)
		must(t, err)
		defer sc.Close()
		before, err := sessionOf(ctx, c, sc)
		must(t, err)
		lastUse := time.Now()
		must(t, n1.Exec(ctx, "KILL CONNECTION ?", before.id))
		waitGone(t, ctx, n1, before.id)
		time.Sleep(time.Until(lastUse.Add(1200 * time.Millisecond))) // idle past the driver's 1 s check: time is the point here
		_, err = sc.ExecContext(ctx, "INSERT INTO app.sf VALUES (11, 0)")
		if err != nil {
			t.Errorf("INSERT after the idle session was killed: %s %v, want no error", errKind(err), err)
		}
		after, aerr := sessionOf(ctx, c, sc)
		if aerr != nil || after.node != 1 || after.id == before.id {
			t.Errorf("the connection after the KILL: %+v, %v; want a new session on node 1", after, aerr)
		}
		must(t, c.WaitReplicasCaughtUp(ctx))
		for i := 1; i <= c.N(); i++ {
			if n := sfRows(t, i, 11); n != 1 {
				t.Errorf("node %d has row 11 %d times, want once", i, n)
			}
		}
		t.Logf("FIGURE %s: caller_error=%s", r.name, errKind(err))
		finish(t, r)
	})

	// KILL QUERY ends the statement, not the session: a plain data error (1317), the
	// same session, nothing moves.
	t.Run("kill-query", func(t *testing.T) {
		r := start(t, "sfl_kill_query")
		sc, err := r.p.db.Conn(ctx)
		must(t, err)
		defer sc.Close()
		before, err := sessionOf(ctx, c, sc)
		must(t, err)
		killed := killWhenRunning(ctx, n1, before.id, "SLEEP(5)", "KILL QUERY")
		_, err = sc.ExecContext(ctx, "UPDATE app.sf SET v = v + 1 + SLEEP(5) WHERE id = 1")
		must(t, <-killed)
		var me *mysql.MySQLError
		var fe *failover.FailoverError
		if !errors.As(err, &me) || me.Number != 1317 || errors.As(err, &fe) {
			t.Errorf("UPDATE after KILL QUERY: %T %v, want the *mysql.MySQLError 1317 untouched", err, err)
		}
		after, aerr := sessionOf(ctx, c, sc)
		if aerr != nil || after != before {
			t.Errorf("the connection after KILL QUERY: %+v, %v; want the same session %+v", after, aerr, before)
		}
		t.Logf("FIGURE %s: caller_error=%s", r.name, errKind(err))
		finish(t, r)
		for i := 1; i <= c.N(); i++ {
			if v := sfValue(t, i); v != 0 {
				t.Errorf("node %d: v=%d after the interrupted UPDATE, want 0", i, v)
			}
		}
	})
}
