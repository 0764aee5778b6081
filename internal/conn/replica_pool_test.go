package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// poolEnv is a 3-host cluster with replicaReads, and the replica a routing key "k" reads
// from (H2 or H3).
func poolEnv(t *testing.T, opts ...func(*dsn.Config)) (e *env, r int, keyed context.Context) {
	e = newEnv(t, 3, append([]func(*dsn.Config){replicaReads}, opts...)...)
	t.Cleanup(e.cl.Close)
	return e, e.cl.Replicas().Pick("k", true, 0), WithReadIntent(fake.Context(t), "k")
}

// idle is the number of idle shared sessions of host.
func (e *env) idle(host int) int { return e.cl.Stats().Hosts[host].ReplicaIdle }

// The connections of a pool share their replica sessions: a read that is over gives its
// session back, and the next read of another connection takes it (one session for two
// connections); the session keeps the database it was moved to, and the next
// connection's moves it again only when its own differs.
func TestReplicaSessionsShared(t *testing.T) {
	e, r, keyed := poolEnv(t)
	e.script(r, replicaSession(queryRows("SELECT a", 1), queryRows("SELECT b", 2), queryRows("SELECT a", 3)))
	a, b := e.open(splitCfg), e.open(splitCfg)
	if got := readOne(t, a, keyed, "SELECT a"); got != 1 {
		t.Fatalf("a read %d", got)
	}
	if n := e.idle(r); n != 1 {
		t.Errorf("after a's read: %d idle sessions on H%d, want 1 (given back)", n, r+1)
	}
	if got := readOne(t, b, keyed, "SELECT b"); got != 2 {
		t.Fatalf("b read %d", got)
	}
	if got := readOne(t, a, keyed, "SELECT a"); got != 3 {
		t.Fatalf("a read %d", got)
	}
	if n := e.dialed(r); n != 1 {
		t.Errorf("%d sessions opened to H%d for three reads of two connections one after the other, want 1", n, r+1)
	}
	e.allMet()
}

// What needs its very session keeps it with its connection: open rows, a prepared
// statement, a read-only transaction. Another connection's read meanwhile opens a
// session of its own; each goes back once it ends, and the next reads take them.
func TestReplicaSessionHeldWhileNeeded(t *testing.T) {
	ctx := fake.Context(t)
	for _, tc := range []struct {
		name string
		hold func(t *testing.T, c *Conn) (release func())
		a    step // what the first session sees
	}{
		{"rows", func(t *testing.T, c *Conn) func() {
			rows, err := c.QueryContext(WithReadIntent(ctx, "k"), "SELECT a", nil)
			if err != nil {
				t.Fatal(err)
			}
			return func() { _ = rows.Close() }
		}, queryRows("SELECT a", 1)},
		{"prepared statement", func(t *testing.T, c *Conn) func() {
			s, err := c.PrepareContext(WithReadIntent(ctx, "k"), "SELECT a")
			if err != nil {
				t.Fatal(err)
			}
			return func() { _ = s.Close() }
		}, func(m sqlmock.Sqlmock) { m.ExpectPrepare("SELECT a").WillBeClosed() }},
		{"read-only transaction", func(t *testing.T, c *Conn) func() {
			tx, err := c.BeginTx(WithReadIntent(ctx, "k"), driver.TxOptions{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			return func() {
				if err := tx.Commit(); err != nil {
					t.Errorf("Commit: %v", err)
				}
			}
		}, all(begin(), commit(nil))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, r, keyed := poolEnv(t)
			e.script(r, replicaSession(tc.a, queryRows("SELECT c", 3)), replicaSession(queryRows("SELECT b", 2)))
			a, b := e.open(splitCfg), e.open(splitCfg)
			release := tc.hold(t, a)
			if n := e.idle(r); n != 0 {
				t.Errorf("%d idle sessions while a holds its one, want 0", n)
			}
			if got := readOne(t, b, keyed, "SELECT b"); got != 2 {
				t.Fatalf("b read %d", got)
			}
			if n := e.dialed(r); n != 2 {
				t.Fatalf("%d sessions to H%d, want 2: a's is held", n, r+1)
			}
			release()
			if n := e.idle(r); n != 2 {
				t.Errorf("%d idle sessions once a's %s ended, want 2", n, tc.name)
			}
			// LIFO: a's, the last given back, serves the next read; then b's.
			if got := readOne(t, a, keyed, "SELECT c"); got != 3 {
				t.Errorf("a read %d, want 3 from the first session", got)
			}
			e.allMet()
		})
	}
}

// With replicaPoolSize, a read that finds as many sessions open to its replica as the
// bound waits until one is given back, and then takes that one; a read whose context
// ends while it waits fails with the context's error, and opens nothing.
func TestReplicaPoolSizeWaits(t *testing.T) {
	e, r, keyed := poolEnv(t, func(c *dsn.Config) { c.ReplicaPoolSize = 1 })
	e.script(r, replicaSession(queryRows("SELECT a", 1), queryRows("SELECT b", 2)))
	e.script(3-r, replicaSession(queryRows("SELECT o", 10), queryRows("SELECT o", 11), queryRows("SELECT o", 12)))
	a, b := e.open(splitCfg), e.open(splitCfg)
	rows, err := a.QueryContext(keyed, "SELECT a", nil)
	if err != nil {
		t.Fatal(err)
	}

	canceled, cancel := context.WithCancel(WithReadIntent(fake.Context(t), "k"))
	cancel()
	if _, err := b.QueryContext(canceled, "SELECT b", nil); !errors.Is(err, context.Canceled) {
		t.Errorf("a read at the bound with its context ended: %v, want context.Canceled", err)
	}

	// b's read waits in a goroutine of its own, which the test's end cancels and waits for
	// (before the connections close), however the test ends.
	bctx, cancel := context.WithTimeout(keyed, fake.Bound)
	done := make(chan struct{})
	got := make(chan int64, 1)
	go func() {
		defer close(done)
		v, err := readValue(b, bctx, "SELECT b")
		if err != nil {
			t.Errorf("b's read: %v", err)
		}
		got <- v
	}()
	t.Cleanup(func() { cancel(); <-done })
	fake.WaitFor(t, "b's read to wait for a session", func() bool { return e.cl.Stats().Hosts[r].ReplicaWaits == 2 })
	// Reads on the other replica meanwhile neither serve nor count b's wait.
	other, o := 3-r, e.open(splitCfg)
	otherKey := WithReadIntent(fake.Context(t), keyOf(e, other))
	for i := range 3 {
		if got := readOne(t, o, otherKey, "SELECT o"); got != int64(10+i) {
			t.Fatalf("read on the other replica: %d", got)
		}
	}
	if n := e.cl.Stats().Hosts[r].ReplicaWaits; n != 2 {
		t.Errorf("ReplicaWaits = %d after give-backs elsewhere woke the waiting read, want 2 (one per read that waited)", n)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if v := fake.Recv(t, "b's read, waiting for a's session", got); v != 2 {
		t.Errorf("b read %d, want 2", v)
	}
	if n := e.dialed(r); n != 1 {
		t.Errorf("%d sessions opened to H%d with replicaPoolSize=1, want 1", n, r+1)
	}
	e.allMet()
}

// A shared session idle for DefaultReplicaMaxIdle is closed at the pool's next take or
// give-back, so that the sessions a burst opened do not stay; one that was idle a little
// less serves the next read.
func TestReplicaSessionIdleExpires(t *testing.T) {
	e, r, keyed := poolEnv(t)
	other := 3 - r
	e.script(r, replicaSession(queryRows("SELECT a", 1)), replicaSession(queryRows("SELECT c", 3)))
	e.script(other, replicaSession(queryRows("SELECT b", 2), queryRows("SELECT d", 4)))
	c := e.open(splitCfg)
	if got := readOne(t, c, keyed, "SELECT a"); got != 1 {
		t.Fatalf("read %d", got)
	}
	e.clock.Advance(cluster.DefaultReplicaMaxIdle / 2)
	// A read on the other replica takes and gives back a session of the pool's; r's is
	// not idle long enough to go.
	otherKey := WithReadIntent(fake.Context(t), keyOf(e, other))
	if got := readOne(t, c, otherKey, "SELECT b"); got != 2 {
		t.Fatalf("read %d", got)
	}
	if e.phys(r, 0).Closes() != 0 {
		t.Fatalf("H%d's session closed after %v idle", r+1, cluster.DefaultReplicaMaxIdle/2)
	}
	e.clock.Advance(cluster.DefaultReplicaMaxIdle / 2)
	if got := readOne(t, c, otherKey, "SELECT d"); got != 4 {
		t.Fatalf("read %d", got)
	}
	if n := e.phys(r, 0).Closes(); n != 1 {
		t.Errorf("H%d's session, idle for DefaultReplicaMaxIdle, closed %d times at the next read, want 1", r+1, n)
	}
	if got := readOne(t, c, keyed, "SELECT c"); got != 3 {
		t.Fatalf("read %d", got)
	}
	if n := e.dialed(r); n != 2 {
		t.Errorf("%d sessions to H%d, want 2: a new one after the expiry", n, r+1)
	}
	e.allMet()
}

// keyOf returns a routing key whose replica is host.
func keyOf(e *env, host int) string {
	for _, k := range []string{"k", "a", "b", "c", "d", "e", "f", "g", "h", "i"} {
		if e.cl.Replicas().Pick(k, true, 0) == host {
			return k
		}
	}
	e.t.Fatalf("no key reads from H%d", host+1)
	return ""
}

// When a session of a replica breaks, the pool's sessions of it that sat idle meanwhile
// get the liveness check before their next use (they may have broken with it: a restart,
// a kill): a dead one is replaced before the read is sent to it, with no retry. The read
// whose idle session broke at once runs again on the same replica, on a session found
// alive (here a new one): a routing key keeps to its replica.
func TestReplicaSessionBrokeIdleOnesChecked(t *testing.T) {
	e, r, keyed := poolEnv(t)
	other := 3 - r
	e.script(r,
		replicaSession(queryRows("SELECT a", 1), func(m sqlmock.Sqlmock) { m.ExpectQuery("SELECT c").WillReturnError(mysql.ErrInvalidConn) }),
		replicaSession(queryRows("SELECT b", 2)),
		replicaSession(queryRows("SELECT c", 3), queryRows("SELECT d", 4)))
	e.script(other, replicaSession(trap("SELECT c")))
	a, b := e.open(splitCfg), e.open(splitCfg)
	rows, err := a.QueryContext(keyed, "SELECT a", nil) // a holds session 0
	if err != nil {
		t.Fatal(err)
	}
	if got := readOne(t, b, keyed, "SELECT b"); got != 2 { // on a new session 1
		t.Fatalf("b read %d", got)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	e.phys(r, 1).Broken.Store(true) // idle session 1 dies unseen (within the idle check's second)
	// b takes session 0, the last given back, which breaks: its read runs again on the
	// same replica, where the idle session 1 is checked, found dead and replaced.
	if got := readOne(t, b, keyed, "SELECT c"); got != 3 {
		t.Fatalf("b's read after its session broke read %d, want 3 from a new session on the key's replica H%d", got, r+1)
	}
	if e.dialed(other) != 0 {
		t.Errorf("the other replica H%d was dialled: the key's read moved", other+1)
	}
	retries := e.cl.Stats().ReplicaRetries
	if got := readOne(t, a, keyed, "SELECT d"); got != 4 {
		t.Fatalf("a read %d, want 4 from session 2", got)
	}
	if n := e.phys(r, 1).Resets(); n != 1 {
		t.Errorf("the idle session was checked %d times before its use, want 1", n)
	}
	if n := e.cl.Stats().ReplicaRetries - retries; n != 0 {
		t.Errorf("a's read was retried %d times: the dead idle session was used, not checked first", n)
	}
	for _, c := range e.net.Conns(r) {
		if err := c.Mock.ExpectationsWereMet(); err != nil {
			t.Errorf("H%d connection %d: %v", r+1, c.Seq, err)
		}
	}
}

// A session go-sql-driver closed after its statement's result was read (the context
// ended before the rows were closed) is dropped, never given back for another connection
// to fail on.
func TestReplicaSessionClosedNotGivenBack(t *testing.T) {
	e, r, keyed := poolEnv(t)
	e.script(r, replicaSession(queryRows("SELECT a", 1)), replicaSession(queryRows("SELECT b", 2)))
	a, b := e.open(splitCfg), e.open(splitCfg)
	rows, err := a.QueryContext(keyed, "SELECT a", nil)
	if err != nil {
		t.Fatal(err)
	}
	dest := make([]driver.Value, 1)
	_ = rows.Next(dest)
	e.phys(r, 0).Broken.Store(true) // closed under the rows by go-sql-driver's watcher
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if n, closes := e.idle(r), e.phys(r, 0).Closes(); n != 0 || closes != 1 {
		t.Errorf("after rows on a closed session: %d idle, the session closed %d times; want 0, 1", n, closes)
	}
	retries := e.cl.Stats().ReplicaRetries
	if got := readOne(t, b, keyed, "SELECT b"); got != 2 {
		t.Fatalf("b read %d", got)
	}
	if n := e.cl.Stats().ReplicaRetries - retries; n != 0 {
		t.Errorf("b's read retried %d times", n)
	}
	e.allMet()
}

// A connection in no database (a DSN without one, no USE) never reads on a shared session
// that another connection moved to a database (no statement leaves one): such a session is
// dropped and a new one opened.
func TestReplicaSessionInNoDatabase(t *testing.T) {
	e, r, keyed := poolEnv(t)
	e.script(0, ok("USE app2"))
	e.script(r, replicaSession(ok("USE `app2`"), queryRows("SELECT a", 1)), replicaSession(queryRows("SELECT b", 2)))
	a := e.open(splitCfg)
	mustExec(t, a, "USE app2")
	if got := readOne(t, a, keyed, "SELECT a"); got != 1 {
		t.Fatalf("a read %d", got)
	}
	b := e.open(splitCfg)
	if got := readOne(t, b, keyed, "SELECT b"); got != 2 {
		t.Fatalf("b read %d", got)
	}
	if n := e.phys(r, 0).Closes(); n != 1 {
		t.Errorf("the session in app2 closed %d times when b, in no database, needed one: want 1", n)
	}
	e.allMet()
}

// readValue runs q on c with ctx and returns its first row's one value; it never calls
// t.Fatal, so a goroutine other than the test's may use it (readOne fails the test).
func readValue(c *Conn, ctx context.Context, q string) (int64, error) {
	rows, err := c.QueryContext(ctx, q, nil)
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	v := make([]driver.Value, 1)
	if err := rows.Next(v); err != nil {
		return 0, fmt.Errorf("Next: %w", err)
	}
	n, _ := v[0].(int64)
	return n, nil
}
