package conn

import (
	"database/sql/driver"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// probed makes H2 and H3 read-only replicas (their probes read their roles) and runs a
// probe round: the probe connections are open.
func (e *env) probed() {
	e.net.SetReadOnly(1, true)
	e.net.SetReadOnly(2, true)
	e.cl.Check(fake.Context(e.t))
}

// everySession scripts every physical connection to host (replica sessions, and probe
// connections, which run none of it) with steps.
func (e *env) everySession(host int, steps ...step) {
	e.net.Script(host, func(_ int, m sqlmock.Sqlmock) { replicaSession(steps...)(m) })
}

// restart kills replica host r (its sessions die, new connections are refused) and
// starts it again, with a probe round while it is down and one after: the probes see it
// fail and qualify again, as the monitor would.
func (e *env) restart(r int) {
	e.t.Helper()
	e.net.Kill(r)
	e.cl.Check(fake.Context(e.t))
	if e.cl.Replicas().Qualifies(r) {
		e.t.Fatalf("H%d still qualifies after a failed probe", r+1)
	}
	e.net.Up(r)
	e.cl.Check(fake.Context(e.t))
	if !e.cl.Replicas().Qualifies(r) {
		e.t.Fatalf("H%d does not qualify after a passed probe", r+1)
	}
}

// A replica restarted within the idle check's second (no statement met its dead
// sessions meanwhile) leaves dead sessions in the pool that look too briefly idle to be
// checked. The probe that saw it fail (or found its probe connection closed) marks them:
// once it qualifies again, a keyed read finds them dead before anything is sent, opens a
// new session on the key's replica, and is not retried.
func TestReplicaRestartSeenByProbe(t *testing.T) {
	e, r, keyed := poolEnv(t)
	other := 3 - r
	e.everySession(r, queryRows("SELECT r", int64(r+1)), queryRows("SELECT r", int64(r+1)))
	e.everySession(other, queryRows("SELECT r", int64(other+1)), queryRows("SELECT r", int64(other+1)))
	e.probed()
	a := e.open(splitCfg)
	if got := readOne(t, a, keyed, "SELECT r"); got != int64(r+1) {
		t.Fatalf("keyed read on H%d, want H%d", got, r+1)
	}
	e.restart(r)
	retries := e.cl.Stats().ReplicaRetries
	if got := readOne(t, a, keyed, "SELECT r"); got != int64(r+1) {
		t.Errorf("keyed read after H%d's restart on H%d, want its replica again", r+1, got)
	}
	if n := e.cl.Stats().ReplicaRetries - retries; n != 0 {
		t.Errorf("the read was retried %d times: a dead session of the restarted replica was used", n)
	}
	if n := e.net.Conns(r)[1].Resets(); n != 1 { // after the probe connection

		t.Errorf("the dead idle session was checked %d times, want 1", n)
	}
}

// A session a connection holds across a replica restart (its prepared statement's) gets
// the liveness check before its next use when the probes saw the host fail meanwhile: the
// statement is prepared again on a new session of the same replica and runs there.
func TestHeldReplicaSessionCheckedAfterRestart(t *testing.T) {
	const q = "SELECT r WHERE id = ?"
	e, r, keyed := poolEnv(t)
	e.net.Script(r, func(_ int, m sqlmock.Sqlmock) {
		replicaSession(preparedQuery(q, sqlmock.NewRows([]string{"id"}).AddRow(int64(r+1))))(m)
	})
	e.probed()
	c := e.open(splitCfg)
	s, err := c.PrepareContext(keyed, q)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	run := func() int64 {
		t.Helper()
		rows, err := s.(driver.StmtQueryContext).QueryContext(keyed, []driver.NamedValue{{Ordinal: 1, Value: int64(1)}})
		if err != nil {
			t.Fatalf("run: %v", err)
		}
		defer rows.Close()
		v := make([]driver.Value, 1)
		if err := rows.Next(v); err != nil {
			t.Fatalf("run: %v", err)
		}
		return v[0].(int64)
	}
	if got := run(); got != int64(r+1) {
		t.Fatalf("run on H%d", got)
	}
	e.restart(r)
	retries := e.cl.Stats().ReplicaRetries
	if got := run(); got != int64(r+1) {
		t.Errorf("run after the restart on H%d, want H%d", got, r+1)
	}
	if n := e.cl.Stats().ReplicaRetries - retries; n != 0 {
		t.Errorf("the run was retried %d times: the held dead session was used", n)
	}
}
