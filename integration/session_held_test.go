package integration

import (
	"database/sql"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// TestSessionHeldState (invariant state-never-dropped-silently): state a session holds that the driver cannot carry
// to another session (a named lock, a temporary table, user variables, the value
// LAST_INSERT_ID() reads) is never dropped silently, on real servers:
//
//   - idle-lock-killed: a pinned connection holding GET_LOCK sits idle while its session
//     is KILLed, and another session takes the lock: the holder's next statement fails
//     unsent with failover.ErrSessionStateLost naming the lock and node 1, once; the
//     statement after it runs on a new session on node 1.
//   - switchto/*: a pinned connection on node 1 holds the state while SwitchTo moves the
//     pool to node 2: its statements stay in the same session, where they find the lock,
//     the table, the variable; after RELEASE_LOCK or DROP TEMPORARY TABLE the next
//     statement runs on node 2 (user variables: once the connection goes back to the pool
//     and out again). After an INSERT, a read of LAST_INSERT_ID() as the first statement
//     after the move runs in the same session and gets the id; the next one moves.
//   - fallback/*: the same on node 2 after a failover while the fall-back to node 1 comes
//     due (secondsBeforeRetryMaster=1): the session stays on node 2 until it holds none,
//     and the statement after falls back.
//   - host-cut: node 1's proxy disabled under a pinned connection holding a temporary
//     table and a lock: the next statement gets the FailoverError and
//     ErrSessionStateLost naming both, and is not run on node 2; after an idle second
//     (host-cut-before-sending) the liveness check finds the session gone first, and the
//     statement fails unsent. The one after runs on node 2.
//   - dropped-temporary-table-frees-reads (replicaReads=true): read intents stay on the
//     primary while the session holds a temporary table, and go to the replica once it
//     is dropped.
func TestSessionHeldState(t *testing.T) {
	c := harness.Start(t, 2)
	ctx := ctxT(t, 2*time.Minute)
	n1, n2 := c.Node(1), c.Node(2)
	must(t, n1.Exec(ctx, "CREATE TABLE app.held (id INT AUTO_INCREMENT PRIMARY KEY, v INT)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	const noFallBack = "failOverReadOnly=false&readTimeout=2s&hostTimeout=1s&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"

	// pinned opens a pool of at most one connection, and pins it on node 1.
	pinned := func(t *testing.T, params string) (*faultPool, *sql.Conn, session) {
		p := openFaultPool(t, c.DSN(params))
		p.db.SetMaxOpenConns(1)
		sc, err := p.db.Conn(ctx)
		must(t, err)
		t.Cleanup(func() { sc.Close() })
		s, err := sessionOf(ctx, c, sc)
		must(t, err)
		if s.node != 1 {
			t.Fatalf("pinned connection on node %d, want 1", s.node)
		}
		return p, sc, s
	}
	sameSession := func(t *testing.T, sc *sql.Conn, s session, when string) {
		t.Helper()
		if now, err := sessionOf(ctx, c, sc); err != nil || now != s {
			t.Errorf("%s: the connection is in session %+v (%v), want the one holding the state, %+v", when, now, err, s)
		}
	}
	// wantLost checks err: ErrSessionStateLost, with a *failover.SessionStateError that
	// names node's proxy address and want's state.
	wantLost := func(t *testing.T, err error, node *harness.Node, want failover.SessionStateError) *failover.SessionStateError {
		t.Helper()
		var se *failover.SessionStateError
		if !errors.Is(err, failover.ErrSessionStateLost) || !errors.As(err, &se) {
			t.Fatalf("error %v, want one matching failover.ErrSessionStateLost", err)
		}
		if se.Host != node.ProxyAddr() || se.NamedLocks != want.NamedLocks || !slices.Equal(se.TempTables, want.TempTables) ||
			se.UserVariables != want.UserVariables || se.Reads != want.Reads {
			t.Errorf("SessionStateError{Host: %s, NamedLocks: %d, TempTables: %q, UserVariables: %v, Reads: %q}, want node %d's %s with %+v",
				se.Host, se.NamedLocks, se.TempTables, se.UserVariables, se.Reads, node.Index(), node.ProxyAddr(), want)
		}
		return se
	}

	t.Run("idle-lock-killed", func(t *testing.T) {
		name := t.Name()
		_, sc, s := pinned(t, noFallBack)
		var got int
		must(t, sc.QueryRowContext(ctx, "SELECT GET_LOCK('mf_held', 10)").Scan(&got))
		if got != 1 {
			t.Fatalf("GET_LOCK = %d, want 1", got)
		}
		must(t, n1.Exec(ctx, "KILL CONNECTION ?", s.id))
		time.Sleep(1500 * time.Millisecond) // idle past the driver's liveness-check threshold
		other, err := n1.Admin().Conn(ctx)
		must(t, err)
		defer other.Close()
		var taken int
		must(t, other.QueryRowContext(ctx, "SELECT GET_LOCK('mf_held', 0)").Scan(&taken))

		_, err = sc.ExecContext(ctx, "INSERT INTO app.held (v) VALUES (100)")
		se := wantLost(t, err, n1, failover.SessionStateError{NamedLocks: 1})
		if errors.As(err, new(*failover.FailoverError)) {
			t.Errorf("error %v: want no FailoverError (the statement was not sent)", err)
		}
		rows, err2 := n1.QueryInt(ctx, "SELECT COUNT(*) FROM app.held WHERE v = 100")
		must(t, err2)
		after, err3 := sessionOf(ctx, c, sc) // once: the connection carries on
		if err3 != nil || after.node != 1 || after.id == s.id {
			t.Errorf("the statement after the error: session %+v (%v), want a new one on node 1", after, err3)
		}
		if rows != 0 || taken != 1 {
			t.Errorf("rows of the refused INSERT: %d, the other session took the lock: %v; want 0, true", rows, taken == 1)
		}
		_, _ = other.ExecContext(ctx, "DO RELEASE_LOCK('mf_held')")
		t.Logf("FIGURE %s: error=%q", name, se)
	})

	type held struct {
		name    string
		take    []string // on the session that will hold it
		check   string   // a query whose one integer is want while the state is held
		want    int64
		release string // "" for user variables: handing the connection on releases them
	}
	kinds := func(onNode2 bool) []held {
		lastID := held{"last-insert-id", []string{"INSERT INTO app.held (v) VALUES (1)"}, "", 0, "SELECT LAST_INSERT_ID()"}
		if onNode2 { // node 2 is read-only: LAST_INSERT_ID(expr) sets the value
			lastID.take = []string{"SELECT LAST_INSERT_ID(4242)"}
		}
		return []held{
			{"get-lock", []string{"SELECT GET_LOCK('mf_sw', 10)"}, "SELECT IS_USED_LOCK('mf_sw') = CONNECTION_ID()", 1, "SELECT RELEASE_LOCK('mf_sw')"},
			{"temporary-table", []string{"CREATE TEMPORARY TABLE app.held_tmp (a INT)", "INSERT INTO app.held_tmp VALUES (1), (2)"},
				"SELECT COUNT(*) FROM app.held_tmp", 2, "DROP TEMPORARY TABLE app.held_tmp"},
			{"user-variable", []string{"SET @mf_v = 42"}, "SELECT @mf_v", 42, ""},
			lastID,
		}
	}
	// stays runs k's state through a pool move that is due (move), then releases it, and
	// checks the connection stayed in session s until then and then moved to node to.
	stays := func(t *testing.T, p *faultPool, sc *sql.Conn, s session, k held, to int, move func()) *sql.Conn {
		t.Helper()
		var lastID int64
		for _, q := range k.take {
			res, err := sc.ExecContext(ctx, q)
			if err != nil {
				t.Fatalf("%s: %v", q, err)
			}
			if id, err := res.LastInsertId(); err == nil && id != 0 {
				lastID = id
			}
		}
		move()
		if k.check != "" {
			var v int64
			if err := sc.QueryRowContext(ctx, k.check).Scan(&v); err != nil || v != k.want {
				t.Errorf("%s after the move was due: %d (%v), want %d", k.check, v, err, k.want)
			}
		}
		if k.check != "" { // a read of LAST_INSERT_ID() must be the first statement after the move
			sameSession(t, sc, s, "after the move was due")
		}
		switch k.release {
		case "":
			// The next user of the connection has no claim on its variables.
			must(t, sc.Close())
			var err error
			sc, err = p.db.Conn(ctx)
			must(t, err)
		case "SELECT LAST_INSERT_ID()":
			var v int64
			var now session
			var port int
			err := sc.QueryRowContext(ctx, "SELECT LAST_INSERT_ID(), @@port, CONNECTION_ID()").Scan(&v, &port, &now.id)
			now.node = c.NodeByPort(port)
			if k.take[0] == "SELECT LAST_INSERT_ID(4242)" {
				lastID = 4242
			}
			if err != nil || v != lastID || lastID == 0 || now != s {
				t.Errorf("LAST_INSERT_ID() after the move was due: %d in session %+v (%v), want %d in %+v", v, now, err, lastID, s)
			}
		default:
			if _, err := sc.ExecContext(ctx, k.release); err != nil {
				t.Fatalf("%s: %v", k.release, err)
			}
		}
		if now, err := sessionOf(ctx, c, sc); err != nil || now.node != to {
			t.Errorf("the statement after the state was released ran on node %d (%v), want node %d", now.node, err, to)
		}
		return sc
	}

	for _, k := range kinds(false) {
		t.Run("switchto/"+k.name, func(t *testing.T) {
			p, sc, s := pinned(t, noFallBack)
			sc = stays(t, p, sc, s, k, 2, func() {
				must(t, p.cn.SwitchTo(ctx, n2.ProxyAddr()))
				if a := p.active(c); a != 2 {
					t.Errorf("Connector.Stats().Active is node %d after SwitchTo, want 2", a)
				}
			})
			t.Cleanup(func() { sc.Close() })
		})
	}

	for _, k := range kinds(true) {
		t.Run("fallback/"+k.name, func(t *testing.T) {
			p, sc, _ := pinned(t, "secondsBeforeRetryMaster=1&queriesBeforeRetryMaster=0&failOverReadOnly=false&readTimeout=2s&hostTimeout=1s")
			must(t, n1.Disable())
			var s session
			var err error
			for k := 0; ; k++ {
				if s, err = sessionOf(ctx, c, sc); err == nil {
					break
				}
				if !errors.As(err, new(*failover.FailoverError)) || k > 0 {
					must(t, n1.Enable())
					t.Fatalf("statement %d after node 1 was disabled: %v, want at most one *failover.FailoverError", k+1, err)
				}
			}
			switched := time.Now()
			must(t, n1.Enable())
			if s.node != 2 {
				t.Fatalf("after node 1 was disabled the connection is on node %d, want 2", s.node)
			}
			sc = stays(t, p, sc, s, k, 1, func() {
				time.Sleep(time.Until(switched.Add(1500 * time.Millisecond))) // past the fall-back's due time
				if a := p.active(c); a != 2 {
					t.Errorf("Connector.Stats().Active is node %d before the session held nothing, want 2", a)
				}
			})
			t.Cleanup(func() { sc.Close() })
			if n := len(p.ev.of(failover.EventFallBack, "", switched)); n != 1 {
				t.Errorf("%d fall-back events, want 1", n)
			}
		})
	}

	for _, notSent := range []bool{false, true} {
		t.Run(map[bool]string{false: "host-cut", true: "host-cut-before-sending"}[notSent], func(t *testing.T) {
			name := t.Name()
			p, sc, _ := pinned(t, noFallBack)
			for _, q := range []string{"CREATE TEMPORARY TABLE app.held_cut (a INT)", "SELECT GET_LOCK('mf_cut', 10)"} {
				if _, err := sc.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			must(t, n1.Disable())
			t.Cleanup(func() { _ = n1.Enable() })
			if notSent {
				time.Sleep(1500 * time.Millisecond) // idle: the liveness check finds the cut session before sending
			}
			_, err := sc.ExecContext(ctx, "INSERT INTO app.held (v) VALUES (200)")
			se := wantLost(t, err, n1, failover.SessionStateError{NamedLocks: 1, TempTables: []string{"app.held_cut"}})
			var fe *failover.FailoverError
			switch {
			case !notSent && (!errors.As(err, &fe) || fe.Failed != n1.ProxyAddr() || fe.Current != n2.ProxyAddr()):
				t.Errorf("error %v: want it to wrap a FailoverError from node 1 to node 2", err)
			case notSent && errors.As(err, &fe):
				t.Errorf("error %v: want no FailoverError (the statement was not sent)", err)
			}
			after, err2 := sessionOf(ctx, c, sc)
			if err2 != nil || after.node != 2 {
				t.Errorf("the statement after the error ran on node %d (%v), want node 2", after.node, err2)
			}
			must(t, n1.Enable())
			rows, err3 := n2.QueryInt(ctx, "SELECT COUNT(*) FROM app.held WHERE v = 200")
			if err3 != nil || rows != 0 {
				t.Errorf("node 2 has %d rows of the refused INSERT (%v), want 0", rows, err3)
			}
			t.Logf("FIGURE %s: error=%q active=node%d", name, se, p.active(c))
		})
	}

	t.Run("dropped-temporary-table-frees-reads", func(t *testing.T) {
		p := openFaultPool(t, c.DSN(replicaParams+"&readTimeout=2s"))
		waitReplicasServe(t, ctx, c, p, 2)
		sc, err := p.db.Conn(ctx)
		must(t, err)
		defer sc.Close()
		if _, err := sc.ExecContext(ctx, "CREATE TEMPORARY TABLE app.held_r (a INT)"); err != nil {
			t.Fatal(err)
		}
		if n, err := nodeOf(readIntent(ctx), c, sc); err != nil || n != 1 {
			t.Errorf("a read intent while the session holds a temporary table ran on node %d (%v), want node 1", n, err)
		}
		if _, err := sc.ExecContext(ctx, "DROP TEMPORARY TABLE app.held_r"); err != nil {
			t.Fatal(err)
		}
		if n, err := nodeOf(readIntent(ctx), c, sc); err != nil || n != 2 {
			t.Errorf("a read intent after DROP TEMPORARY TABLE ran on node %d (%v), want the replica, node 2", n, err)
		}
	})
}
