package conn

import (
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// TestNoFallBackInsideAutocommitOffThroughThePool (invariants one-host-per-transaction and fall-back-at-safe-points; a second path
// beside TestNoFallBackInsideStatementTransaction): through database/sql's pool, not a
// pinned connection, a session on H2 that SET autocommit = 0 and wrote holds a
// transaction: when fall-back is due, the pool's checkout (ResetSession) and the next
// query keep it on H2; after COMMIT the next statement falls back to H1, where the
// session's autocommit is restored.
func TestNoFallBackInsideAutocommitOffThroughThePool(t *testing.T) {
	e := newEnv(t, 2, retryMaster(30, 0))
	e.script(0, nil, all(ok("SET autocommit = 0"), ok("AFTER")))
	e.script(1, all(ok("SET autocommit = 0"), ok("UPDATE a"), queryRows("SELECT v", 2), ok("COMMIT")))
	db := e.db(seqB, 1)
	ctx := fake.Context(t)
	if err := db.PingContext(ctx); err != nil { // the pool's one connection, on H1
		t.Fatal(err)
	}
	e.net.Down(0)
	_, err := db.ExecContext(ctx, "FAILS")
	wantFailover(t, err, h1, h2, true)
	e.net.Up(0)
	for _, q := range []string{"SET autocommit = 0", "UPDATE a"} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	e.clock.Advance(31 * time.Second)
	if !e.cl.FallBackDue() {
		t.Fatal("fall-back not due")
	}
	var v int64
	if err := db.QueryRowContext(ctx, "SELECT v").Scan(&v); err != nil || v != 2 {
		t.Fatalf("query inside the transaction: %d %v, want it served by H2", v, err)
	}
	e.wantEvents(failover.EventFallBack, "", 0)
	if _, err := db.ExecContext(ctx, "COMMIT"); err != nil {
		t.Fatalf("COMMIT: %v", err)
	}
	if _, err := db.ExecContext(ctx, "AFTER"); err != nil {
		t.Fatalf("after COMMIT: %v", err)
	}
	e.wantEvents(failover.EventFallBack, h1, 1)
	if n := e.opens.Load(); n != 1 {
		t.Errorf("database/sql opened %d logical connections, want 1", n)
	}
	e.allMet()
}
