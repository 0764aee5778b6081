package integration

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// TestFleetFirstWriteAfterPromotion: MYSQLFAILOVER_FLEET instances (default 20), each a
// pool of 4 with targetSessionAttrs=read-write, against 3 nodes; node 1, the primary, is
// killed, node 2 promoted 500 ms later. Each instance reads SELECT @@port every 5 ms
// until one runs on node 2 (only a writable node qualifies). Reported: the time from the
// promotion to each instance's first statement on node 2 (p50, p99, max), with probing
// (calm and fixed schedules) and without. Asserted: every instance got there within 20 s.
// Run it on its own: MYSQLFAILOVER_FLEET=1 is set only for measurements.
func TestFleetFirstWriteAfterPromotion(t *testing.T) {
	if os.Getenv("MYSQLFAILOVER_FLEET") == "" {
		t.Skip("a measurement: set MYSQLFAILOVER_FLEET to the number of instances")
	}
	fleet := envInt(t, "MYSQLFAILOVER_FLEET", 20)
	for _, mode := range []string{"checkInterval=0", "calmCheckInterval=0", "calmCheckInterval=2s"} {
		t.Run(mode, func(t *testing.T) {
			c := harness.Start(t, 3)
			ctx := ctxT(t, 2*time.Minute)
			params := "checkInterval=100ms&failoverDelay=100ms&targetSessionAttrs=read-write&readTimeout=10s&hostTimeout=1s&" + mode
			if mode == "checkInterval=0" {
				params = "targetSessionAttrs=read-write&readTimeout=10s&hostTimeout=1s"
			}
			dbs := make([]*sql.DB, fleet)
			evs := make([]*eventLog, fleet)
			for i := range dbs {
				db, _, ev := healthOpen(t, c.DSN(params))
				evs[i] = ev
				db.SetMaxOpenConns(4)
				db.SetMaxIdleConns(4)
				warmPool(t, ctx, c, db, 4)
				dbs[i] = db
			}
			time.Sleep(4 * time.Second)
			must(t, c.Node(1).Kill())
			time.Sleep(500 * time.Millisecond)
			must(t, c.Node(2).Promote(ctx, nil))
			promoted := time.Now()
			took := make([]time.Duration, fleet)
			var wg sync.WaitGroup
			for i, db := range dbs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for time.Since(promoted) < 20*time.Second {
						cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
						node, err := nodeOf(cctx, c, db)
						cancel()
						if err == nil && node == 2 {
							took[i] = time.Since(promoted)
							return
						}
						time.Sleep(5 * time.Millisecond)
					}
					took[i] = -1
				}()
			}
			wg.Wait()
			var ok []time.Duration
			for _, d := range took {
				if d >= 0 {
					ok = append(ok, d)
				}
			}
			if len(ok) != fleet {
				t.Errorf("%d of %d instances never ran on node 2", fleet-len(ok), fleet)
			}
			full := 0
			for _, ev := range evs {
				for _, e := range ev.all() {
					if e.Err != nil && !e.Time.Before(promoted.Add(-time.Second)) && strings.Contains(e.Err.Error(), "1040") {
						full++
					}
				}
			}
			t.Logf("FIGURE %s: loadavg=%v", t.Name(), harness.LoadAverage())
			t.Logf("FIGURE %s: too_many_connections_events=%d", t.Name(), full)
			t.Logf("FIGURE %s: first_on_node2_after_promotion=%s %s", t.Name(), durations(ok), pct(ok, 99))
		})
	}
}

// pct returns the p-th percentile of ds.
func pct(ds []time.Duration, p int) string {
	if len(ds) == 0 {
		return ""
	}
	s := append([]time.Duration(nil), ds...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return fmt.Sprintf("p%d=%v", p, s[(len(s)-1)*p/100].Round(time.Millisecond))
}
