package integration

import (
	"testing"
	"time"

	_ "github.com/mysqlfailover/mysqlfailover" // registers "mysqlfailover"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// TestKillPrimaryIdlePool: eight idle pooled connections on the primary, kill -9 the
// primary, and the next 100 statements all run on the first secondary without a single
// error: the dead idle connections are retired before anything is sent on them.
func TestKillPrimaryIdlePool(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)

	db := openDB(t, "mysqlfailover", c.DSN("readTimeout=2s"))
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	warmPool(t, ctx, c, db, 8)
	if idle := db.Stats().Idle; idle != 8 {
		t.Fatalf("idle connections: %d, want 8", idle)
	}
	if n, err := c.Node(1).AppSessions(ctx); err != nil || n != 8 {
		t.Fatalf("app sessions on node 1: %d, %v, want 8", n, err)
	}

	must(t, c.Node(1).Kill())

	var errs []error
	wrong := map[int]int{}
	start := time.Now()
	for range 100 {
		node, err := nodeOf(ctx, c, db)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if node != 2 {
			wrong[node]++
		}
	}
	t.Logf("100 statements after the kill took %v", time.Since(start))
	for k, err := range errs {
		if k < 5 {
			t.Errorf("statement error: %v", err)
		}
	}
	if len(errs) > 0 || len(wrong) > 0 {
		t.Errorf("%d of 100 statements failed; ran on other nodes than 2: %v", len(errs), wrong)
	}
}
