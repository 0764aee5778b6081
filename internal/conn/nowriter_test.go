package conn

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// Read intents never wait for, nor fail on, the writer while a replica qualifies
// (allowSourceDownConnections): these tests follow each place a read-intent call met the
// primary session.

// sourceDown is splitCfg with allowSourceDownConnections (the DSN's default).
var sourceDown = func() Config { c := splitCfg; c.AllowSourceDown = true; return c }()

// noWriter is a 3-host cluster with replicaReads and targetSessionAttrs read-write
// (retriesAllDown 3) whose H2 and H3 are read-only replicas: with H1 gone no host takes
// writes.
func noWriter(t *testing.T) *env {
	e := newEnv(t, 3, replicaReads, func(c *dsn.Config) { c.TargetSessionAttrs, c.RetriesAllDown = attrs.ReadWrite, 3 })
	e.net.SetReadOnly(1, true)
	e.net.SetReadOnly(2, true)
	t.Cleanup(e.cl.Close)
	return e
}

// writeIntent is sourceDown for targetSessionAttrs read-write.
var writeIntent = func() Config { c := sourceDown; c.WriteIntent, c.FailOverReadOnly = true, false; return c }()

// A new connection opens without a session on the writer, whatever the writer's state:
// database/sql opens connections for reads too, and a read must not wait for a walk (a
// writer that died a moment ago, or hangs, would hold it up). Its reads go to the
// replicas; its first write opens the primary session.
func TestOpenDialsNoWriter(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	t.Cleanup(e.cl.Close)
	e.script(0, ok("INSERT w"))
	e.script(2, replicaSession(queryRows("SELECT r", 3)))
	c := e.open(sourceDown)
	if n := e.dialed(0); n != 0 {
		t.Errorf("Open dialled the writer %d times, want 0", n)
	}
	if got := readOne(t, c, read, "SELECT r"); got != 3 {
		t.Errorf("read on H%d, want H3", got)
	}
	if h := c.Host(); h != "" {
		t.Errorf("Host() = %q before any statement needed the primary, want \"\"", h)
	}
	mustExec(t, c, "INSERT w")
	wantHost(t, c, h1)
	e.allMet()
}

// A primary session go-sql-driver closed (a write's context ended while it ran) does not
// make database/sql close the connection, while a replica qualifies: IsValid drops the
// session and stays true, and the connection's reads go on. With a transaction opened by
// statements on that session, the transaction is lost and the connection is not valid.
func TestClosedPrimarySessionKeepsConnValid(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	t.Cleanup(e.cl.Close)
	e.script(0, ok("INSERT w"), ok("BEGIN"))
	e.script(2, replicaSession(queryRows("SELECT r", 3)))
	c := e.open(sourceDown)
	mustExec(t, c, "INSERT w")
	e.phys(0, 0).Broken.Store(true)
	if !c.IsValid() {
		t.Error("IsValid with the primary session closed under it and replicas to read from: false, want true")
	}
	if n := e.phys(0, 0).Closes(); n != 1 {
		t.Errorf("the closed primary session was closed %d times by the proxy, want 1", n)
	}
	if got := readOne(t, c, read, "SELECT r"); got != 3 {
		t.Errorf("read on H%d, want H3", got)
	}
	mustExec(t, c, "BEGIN") // on a new primary session
	e.phys(0, 1).Broken.Store(true)
	if c.IsValid() {
		t.Error("IsValid with a transaction opened by statements lost: true, want false")
	}
}

// SetReadOnly(true), the read intent of a pinned connection, neither fails nor waits on
// the primary session while no writer answers: it sends nothing there, and the reads
// after it go to the replicas. Before the failure, the session was used; the primary is
// now gone (its calls fail, new connections are refused).
func TestSetReadOnlyWithoutWriter(t *testing.T) {
	e := noWriter(t)
	e.script(0, ok("INSERT w"))
	// The first session of H2 and H3 is the new pool's look at the writers.
	e.script(2, nil, replicaSession(queryRows("SELECT r", 3)))
	e.script(1, nil, replicaSession(queryRows("SELECT r", 2)))
	c := e.open(writeIntent)
	mustExec(t, c, "INSERT w")
	e.net.Down(0)
	if err := c.SetReadOnly(fake.Context(t), true); err != nil {
		t.Fatalf("SetReadOnly(true) with the writer gone: %v, want nil", err)
	}
	if got := readOne(t, c, context.Background(), "SELECT r"); got != 2 && got != 3 {
		t.Errorf("read after SetReadOnly(true) on H%d, want a replica", got)
	}
	if n := e.dialed(0); n != 1 {
		t.Errorf("H1 dialled %d times, want 1 (no walk)", n)
	}
	e.allMet()
}

// ResetSession (database/sql's checkout, before a read as well as a write) sends nothing
// to the primary session: the read-only flag it restores is applied before the primary
// session's next statement, not in a round trip to a writer that may be gone.
func TestResetSessionRestoresReadOnlyLater(t *testing.T) {
	e := newEnv(t, 3, replicaReads)
	t.Cleanup(e.cl.Close)
	e.script(0, all(ok(setReadOnly), ok("DO 1"), ok(setReadWrite), ok("INSERT w")))
	c := e.open(sourceDown)
	if err := c.SetReadOnly(fake.Context(t), true); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "DO 1") // on the primary, read-only first
	if err := c.ResetSession(fake.Context(t)); err != nil {
		t.Fatal(err)
	}
	if err := e.phys(0, 0).Mock.ExpectationsWereMet(); err == nil || !strings.Contains(err.Error(), setReadWrite) {
		t.Errorf("after ResetSession: %v; want the restoring %s not sent yet", err, setReadWrite)
	}
	mustExec(t, c, "INSERT w") // READ WRITE first
	e.allMet()
}

// A read that no replica could serve goes to the primary (readFromSourceWhenNoReplicas)
// in one pass over the hosts while no writer answers, not in the retriesAllDown passes
// (and their pauses) a write waits for.
func TestReadToPrimaryWalksOnePass(t *testing.T) {
	e := noWriter(t)
	for h := range 3 {
		e.refuse(h)
	}
	c := e.open(writeIntent)
	_, err := c.QueryContext(read, "SELECT r", nil)
	var nh *failover.NoHostAvailableError
	if !errors.As(err, &nh) {
		t.Fatalf("read with no replica and no writer: %v, want a *failover.NoHostAvailableError", err)
	}
	if nh.Passes != 1 {
		t.Errorf("the read's walk made %d passes, want 1", nh.Passes)
	}
	for _, d := range e.clock.Sleeps() {
		if d == cluster.DefaultPassPause {
			t.Errorf("the read's walk paused between passes (%v)", d)
		}
	}
	notBadConn(t, err)
}

// A connection opened without a primary session still serves global causal reads from a
// replica: the pool's position, when it must be read again, is read on a primary session
// the read opens then (one round trip), not left to the primary to serve the read.
func TestCausalGlobalOnConnWithoutPrimarySession(t *testing.T) {
	e := newEnv(t, 3, replicaReads, func(c *dsn.Config) { c.CausalReads = "global" })
	t.Cleanup(e.cl.Close)
	cfg := sourceDown
	cfg.CausalReads = "global"
	r := e.cl.Replicas().Pick("k", true, 0)
	e.script(0, ok("INSERT a"), all(gtidRows("SELECT @@global.gtid_binlog_pos", "0-1-9"), trap("SELECT r")))
	e.script(r, replicaSession(waitRows("0-1-9", 0), queryRows("SELECT r", int64(r+1))))
	w, rd := e.open(cfg), e.open(cfg)
	mustExec(t, w, "INSERT a")
	if got := readOne(t, rd, WithReadIntent(context.Background(), "k"), "SELECT r"); got != int64(r+1) {
		t.Errorf("causal read on H%d, want the replica H%d after its wait", got, r+1)
	}
	if st := e.cl.Stats(); st.CausalPrimary != 0 || st.CausalWaits != 1 {
		t.Errorf("CausalPrimary %d, CausalWaits %d; want 0, 1", st.CausalPrimary, st.CausalWaits)
	}
	e.untouched(0, 1, "SELECT r")
}
