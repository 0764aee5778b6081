package integration

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// twLoad is a write workload of one pool: workers goroutines inserting into app.tw back
// to back, each row with its pool, the port of the server that ran it and when the
// INSERT started (client clock, UnixNano).
type twLoad struct {
	pool    int
	db      *sql.DB
	stop    atomic.Bool
	ok, bad atomic.Int64
	wg      sync.WaitGroup
	mu      sync.Mutex
	lastErr error
}

func twStart(ctx context.Context, pool int, db *sql.DB, workers int) *twLoad {
	l := &twLoad{pool: pool, db: db}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			for k := 0; !l.stop.Load() && ctx.Err() == nil; k++ {
				octx, cancel := context.WithTimeout(ctx, 2*time.Second)
				_, err := db.ExecContext(octx, fmt.Sprintf("INSERT INTO app.tw (pool, w, k, port, at) VALUES (%d, %d, %d, @@port, %d)",
					pool, w, k, time.Now().UnixNano()))
				cancel()
				if err != nil {
					l.bad.Add(1)
					l.mu.Lock()
					l.lastErr = err
					l.mu.Unlock()
				} else {
					l.ok.Add(1)
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	return l
}

func (l *twLoad) halt() {
	l.stop.Store(true)
	l.wg.Wait()
}

// waitOK waits until the load has n more successful writes than it had, or fails t.
func (l *twLoad) waitOK(t *testing.T, n int64, d time.Duration) {
	t.Helper()
	want := l.ok.Load() + n
	for end := time.Now().Add(d); l.ok.Load() < want; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(end) {
			l.mu.Lock()
			defer l.mu.Unlock()
			t.Fatalf("pool %d: %d writes within %v, want %d more; last error: %v", l.pool, l.ok.Load(), d, n, l.lastErr)
		}
	}
}

// twPool is one pool of the scenario.
type twPool struct {
	name   string
	id     int
	db     *sql.DB
	ev     *eventLog
	load   *twLoad
	opened time.Time
}

// TestTwoWriters: the old primary comes back writable after a promotion, its fencing
// failed (an orchestrator's hook that did not run). Node 1 is killed under two writer
// pools with targetSessionAttrs=read-write, one with fall-back due after 1 s
// (secondsBeforeRetryMaster=1, no probes) and one probing (checkInterval=200ms,
// switchBackDelay=1s); node 2 is promoted and node 3 re-pointed at it; node 1 comes back
// with read_only=OFF, replicating from no one (failovertest's ReturnUnfenced), and two
// new pools start, one probing. For 5 s the fall-back is due again and again and the
// probes pass: no write lands on node 1 after the kill (its rows counted on node 1
// itself), every pool reports the two writers (EventTwoWriters naming node 2 the writer,
// node 1 the other; Stats.Writers), the new pools' first walks go to node 2, and
// `mysqlfailover check` names both writers, node 2 the one the replicas follow, with the
// fix to fence node 1. The times from the kill, the promotion and the return to each
// pool's move and report are FIGURE lines.
func TestTwoWriters(t *testing.T) {
	bin := buildCheck(t)
	name := t.Name()
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", name, k, v) }
	c := harness.Start(t, 3)
	ctx := ctxT(t, 2*time.Minute)
	n1, n2 := c.Node(1).ProxyAddr(), c.Node(2).ProxyAddr()
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.tw (pool INT NOT NULL, w INT NOT NULL, k INT NOT NULL, port INT NOT NULL, at BIGINT NOT NULL)"))
	must(t, c.WaitReplicasCaughtUp(ctx))

	const workers = 4
	params := []string{
		"targetSessionAttrs=read-write&secondsBeforeRetryMaster=1&queriesBeforeRetryMaster=0&readTimeout=2s",
		"targetSessionAttrs=read-write&checkInterval=200ms&failoverDelay=500ms&switchBackDelay=1s&readTimeout=2s",
	}
	names := []string{"fall-back", "probing", "new", "new_probing"}
	var pools []*twPool
	open := func(p string) {
		id := len(pools)
		db, ev := openWithEvents(t, c.DSN(p))
		db.SetMaxOpenConns(workers)
		db.SetMaxIdleConns(workers)
		tp := &twPool{name: names[id], id: id, db: db, ev: ev, opened: time.Now()}
		tp.load = twStart(ctx, id, db, workers)
		pools = append(pools, tp)
	}
	for _, p := range params {
		open(p)
	}
	defer func() {
		for _, p := range pools {
			p.load.halt()
		}
	}()
	for _, p := range pools {
		p.load.waitOK(t, 50, 10*time.Second)
	}

	killAt := time.Now()
	must(t, c.Node(1).Kill())
	must(t, c.Switchover(ctx, 2)) // node 2 writable, node 3 re-pointed at it
	promotedAt := time.Now()
	for _, p := range pools {
		sw, ok := rolesWaitEvent(p.ev, killAt, 15*time.Second, func(e failover.Event) bool {
			return e.Kind == failover.EventSwitch && e.Host == n2
		})
		if !ok {
			t.Fatalf("pool %s: no switch to node 2 within 15 s of the kill; events: %v", p.name, p.ev.all())
		}
		fig(p.name+"_promotion_to_switch_ms", sw.Time.Sub(promotedAt).Milliseconds())
		p.load.waitOK(t, 20, 10*time.Second)
	}

	must(t, c.Node(1).ReturnUnfenced(ctx)) // node 1 back: writable, following no one
	returnAt := time.Now()
	fig("kill_to_return_ms", returnAt.Sub(killAt).Milliseconds())
	open("targetSessionAttrs=read-write&readTimeout=2s") // new pools, after the return
	open(params[1])
	time.Sleep(5 * time.Second) // the fall-back due 5 times, switchBackDelay 5 times over
	for _, p := range pools {
		p.load.halt()
	}

	var onNode1 int64
	for _, p := range pools {
		n, err := c.Node(1).QueryInt(ctx, "SELECT COUNT(*) FROM app.tw WHERE pool = ? AND at >= ?", p.id, killAt.UnixNano())
		must(t, err)
		onNode1 += n
		fig(p.name+"_writes_on_node1_after_kill", n)
		okAfter, err := c.Node(2).QueryInt(ctx, "SELECT COUNT(*) FROM app.tw WHERE pool = ? AND at >= ? AND port = ?", p.id, returnAt.UnixNano(), c.Node(2).Port())
		must(t, err)
		fig(p.name+"_writes_on_node2_after_return", okAfter)
		if okAfter == 0 {
			t.Errorf("pool %s: no write on node 2 after node 1's return", p.name)
		}
		fig(p.name+"_failed_writes", p.load.bad.Load())
		if n != 0 {
			t.Errorf("pool %s: %d writes on node 1 after the kill, want 0 (it diverged from node 2 at the promotion)", p.name, n)
		}

		tw := p.ev.of(failover.EventTwoWriters, "", returnAt)
		if len(tw) != 1 || tw[0].Host != n2 || tw[0].From != n1 || !strings.Contains(tw[0].Err.Error(), "fence "+n1) {
			t.Errorf("pool %s: two-writers events %v, want one naming node 2 the writer and node 1 to fence", p.name, tw)
		} else {
			since, what := returnAt, "return"
			if p.opened.After(returnAt) {
				since, what = p.opened, "open"
			}
			fig(p.name+"_"+what+"_to_two_writers_event_ms", tw[0].Time.Sub(since).Milliseconds())
		}
		if fb := p.ev.of(failover.EventFallBack, "", killAt); len(fb) != 0 {
			t.Errorf("pool %s: fall-back events %v, want none", p.name, fb)
		}
		cn, err := mysqlfailover.ConnectorOf(ctx, p.db)
		must(t, err)
		s := cn.Stats()
		if !slices.Equal(s.Writers, []string{n2, n1}) || s.Active != n2 {
			t.Errorf("pool %s: Stats.Writers %v, Active %s; want [%s %s], %s", p.name, s.Writers, s.Active, n2, n1, n2)
		}
		refused := p.ev.of(failover.EventFallBackFailed, n1, returnAt)
		fig(p.name+"_fall_backs_refused", len(refused))
		if p.name == "fall-back" {
			if len(refused) < 3 {
				t.Errorf("pool %s: %d fall-backs refused in 5 s with secondsBeforeRetryMaster=1, want at least 3", p.name, len(refused))
			} else {
				fig(p.name+"_return_to_first_refusal_ms", refused[0].Time.Sub(returnAt).Milliseconds())
			}
		}
		if p.opened.After(returnAt) {
			// A new pool: its first walk reached node 1, writable and listed first, and
			// went on to node 2.
			sw := p.ev.of(failover.EventSwitch, n2, p.opened)
			if len(sw) != 1 || sw[0].From != n1 || sw[0].Err == nil || !strings.Contains(sw[0].Err.Error(), "two writers") {
				t.Errorf("pool %s: switch events %v, want one from node 1 to node 2 for two writers", p.name, sw)
			} else {
				fig(p.name+"_open_to_switch_ms", sw[0].Time.Sub(p.opened).Milliseconds())
			}
		}
	}
	fig("writes_on_node1_after_kill", onNode1)

	// check names both writers, node 2 the one the replicas follow, and the fix.
	code, text, r := checkBoth(t, bin, c.DSN("readTimeout=2s&targetSessionAttrs=read-write"))
	t.Logf("check, two writers:\n%s", text)
	if code != 1 || r.Plan.Writer != n2 || r.Plan.Connect != n2 {
		t.Fatalf("check: exit %d, writer %q, connect %q; want 1, %s, %s\n%s", code, r.Plan.Writer, r.Plan.Connect, n2, n2, text)
	}
	wantHeadline(t, r, text, "degraded: two writers: ", n1, n2, "fence "+n1)
	found := false
	for _, p := range r.Problems {
		if p.Kind == "writers" {
			found = true
			if !strings.Contains(p.Problem, n1+" (followed by no replica)") || !strings.Contains(p.Problem, n2+" (followed by "+c.Node(3).ProxyAddr()+")") ||
				!strings.HasPrefix(p.Fix, "fence "+n1+", which no replica follows: SET GLOBAL read_only=ON") {
				t.Errorf("writers problem %+v, want both named, node 3 following node 2, the fix fencing node 1", p)
			}
		}
	}
	if !found {
		t.Errorf("no writers problem:\n%s", text)
	}
	code, text, _ = checkBoth(t, bin, c.DSN("readTimeout=2s"))
	if code != 2 {
		t.Errorf("check with targetSessionAttrs any: exit %d, want 2 (new connections write to node 1)\n%s", code, text)
	}
}
