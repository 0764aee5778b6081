package conn

import (
	"context"
	"database/sql/driver"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// failOverToH2 puts c on H2 at the fake clock's current time: H1 goes down, a statement
// fails over, H1 comes back (or stays down).
func failOverToH2(t *testing.T, e *env, c *Conn, h1Back bool) {
	t.Helper()
	e.net.Down(0)
	wantFailover(t, exec(c, "FAILS"), h1, h2, true)
	if h1Back {
		e.net.Up(0)
	}
}

// Case 12 (i), invariant fall-back-at-safe-points: with secondsBeforeRetryMaster=2 the connection stays on H2,
// without touching H1, until 2 s have passed; the next statement then runs on H1.
func TestFallBackAfterSecondsBeforeRetryMaster(t *testing.T) {
	e := newEnv(t, 2, retryMaster(2, 0))
	e.script(0, nil, ok("BACK"))
	e.script(1, all(ok("S1"), ok("S2"), ok("S3"), ok("S4")))
	c := e.open(seqB)
	failOverToH2(t, e, c, true)
	connects := e.ev.count(failover.EventConnect, h1)

	for _, q := range []string{"S1", "S2", "S3", "S4"} {
		e.clock.Advance(499 * time.Millisecond) // 1.996 s after the failover at the end
		mustExec(t, c, q)
		wantHost(t, c, h2)
	}
	if n := e.ev.count(failover.EventConnect, h1); n != connects || e.dialed(0) != 1 {
		t.Fatalf("H1 tried %d times before 2 s, want 0", n-connects)
	}
	e.clock.Advance(4 * time.Millisecond) // exactly 2 s
	mustExec(t, c, "BACK")
	wantHost(t, c, h1)
	if e.dialed(0) != 2 {
		t.Errorf("dialed H1 %d times, want 2", e.dialed(0))
	}
	e.wantEvents(failover.EventFallBack, h1, 1)
	e.closedExcept(e.phys(0, 1))
	e.allMet()
}

// Case 12 (ii), invariant fall-back-at-safe-points: a fall-back attempt to a primary that is still down is
// silent (the statement runs on H2) and restarts the clock: the next attempt comes only
// 2 s later, not with every statement.
func TestFailedFallBackIsSilentAndRestartsTheClock(t *testing.T) {
	e := newEnv(t, 2, retryMaster(2, 0))
	e.script(0, nil, ok("BACK"))
	e.script(1, all(ok("S1"), ok("S2"), ok("S3"), ok("S4")))
	c := e.open(seqB)
	failOverToH2(t, e, c, false)
	base := e.ev.count(failover.EventConnect, h1)
	attempts := func() int { return e.ev.count(failover.EventConnect, h1) - base }

	for i, step := range []struct {
		advance  time.Duration
		q        string
		attempts int
		up       bool
	}{
		{2 * time.Second, "S1", 1, false}, // due: one attempt, refused
		{1 * time.Second, "S2", 1, false}, // 1 s after it: no attempt
		{1 * time.Second, "S3", 2, false}, // 2 s after it: the next attempt
		{1 * time.Second, "S4", 2, true},  // H1 is back, but not due yet
		{1 * time.Second, "BACK", 3, false},
	} {
		if step.up {
			e.net.Up(0)
		}
		e.clock.Advance(step.advance)
		mustExec(t, c, step.q)
		if got := attempts(); got != step.attempts {
			t.Errorf("step %d (%s): %d attempts on H1, want %d; events:\n%s", i, step.q, got, step.attempts, e.ev)
		}
	}
	wantHost(t, c, h1)
	e.wantEvents(failover.EventFallBackFailed, h1, 2)
	e.wantEvents(failover.EventFallBack, h1, 1)
	e.allMet()
}

// Case 12 (iv), invariant fall-back-at-safe-points: with queriesBeforeRetryMaster=3 statements 1 to 3 after the
// failover run on H2 and the 4th on H1.
func TestFallBackAfterQueriesBeforeRetryMaster(t *testing.T) {
	e := newEnv(t, 2, retryMaster(0, 3))
	e.script(0, nil, ok("S4"))
	e.script(1, all(ok("S1"), ok("S2"), ok("S3")))
	c := e.open(seqB)
	failOverToH2(t, e, c, true)
	for _, q := range []string{"S1", "S2", "S3"} {
		e.clock.Advance(time.Hour) // time does not count
		mustExec(t, c, q)
		wantHost(t, c, h2)
	}
	mustExec(t, c, "S4")
	wantHost(t, c, h1)
	e.allMet()
}

// Invariant fall-back-at-safe-points: both counts 0 disable the fall-back.
func TestNoFallBackWhenDisabled(t *testing.T) {
	e := newEnv(t, 2, retryMaster(0, 0))
	e.script(1, all(ok("S1"), ok("S2")))
	c := e.open(seqB)
	failOverToH2(t, e, c, true)
	for _, q := range []string{"S1", "S2"} {
		e.clock.Advance(time.Hour)
		mustExec(t, c, q)
		wantHost(t, c, h2)
	}
	if e.dialed(0) != 1 {
		t.Errorf("dialed H1 %d times, want 1", e.dialed(0))
	}
	e.allMet()
}

// Invariant fall-back-at-safe-points: no fall-back while results are being read: it would close the physical
// connection under them.
func TestNoFallBackWhileResultsAreOpen(t *testing.T) {
	e := newEnv(t, 2, retryMaster(2, 0))
	e.script(0, nil, ok("BACK"))
	e.script(1, all(queryRows("SELECT id FROM t", 1), ok("DURING")))
	c := e.open(seqB)
	failOverToH2(t, e, c, true)

	rows := mustQuery(t, c, "SELECT id FROM t")
	e.clock.Advance(time.Minute)
	mustExec(t, c, "DURING")
	wantHost(t, c, h2)
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "BACK")
	wantHost(t, c, h1)
	e.allMet()
}

// go-sql-driver answers driver.ErrSkip to a statement with arguments (without
// interpolateParams) and database/sql then prepares it: the ErrSkip passes straight back,
// nothing is blamed, and the statement counts once towards queriesBeforeRetryMaster.
func TestErrSkipPassesBackAndCountsOnce(t *testing.T) {
	e := newEnv(t, 2, retryMaster(0, 3))
	e.script(1, all(fails("S1", driver.ErrSkip), fails("S2", driver.ErrSkip), ok("S3"), ok("S4")))
	c := e.open(seqB)
	failOverToH2(t, e, c, true)
	for _, q := range []string{"S1", "S2"} {
		if _, err := c.ExecContext(context.Background(), q, nil); err != driver.ErrSkip {
			t.Fatalf("%s: %v, want driver.ErrSkip itself", q, err)
		}
	}
	if n := e.ev.count(failover.EventHostFailed, ""); n != 1 { // the one failover above
		t.Errorf("%d host-failed events, want 1:\n%s", n, e.ev)
	}
	mustExec(t, c, "S3")
	wantHost(t, c, h2) // S1 and S2 were handed back, not run: only one statement counted
	mustExec(t, c, "S4")
	wantHost(t, c, h2)
	e.allMet()
}
