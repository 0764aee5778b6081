package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// TestKillRestartCyclesNoLeak (issue scenario 10, shared/cases/17): twenty cycles of
// kill -9 and restart of the primary under a busy pool of 8 (MaxOpen = MaxIdle = 8), eight
// goroutines looping SELECT @@port. Each cycle: kill node 1, wait 0.5 s, restart it, wait
// until the pool has fallen back (secondsBeforeRetryMaster=1) and nothing is left on the
// secondaries.
//
// RIGHT, after every cycle has settled:
//   - the app user's sessions (processlist, through the admin connections) on all nodes
//     together are at most the pool size, all of them on node 1;
//   - no growth from cycle to cycle (sessions, goroutines, connect attempts);
//   - during a cycle, at most one extra session per logical connection (2 x pool), as the
//     case allows for a fall-back;
//   - connect attempts per cycle are bounded (no x3 storm from database/sql retries): the
//     ones that move connections (to the secondary and back) at most 5 x pool, and the
//     fall-back probes of the dead primary at most one per queriesBeforeRetryMaster (default
//     50) statements of the cycle, plus one per second (secondsBeforeRetryMaster=1), plus 2;
//
// and at the end: after db.Close the app sessions on all nodes are 0 within 1 s, and
// runtime.NumGoroutine returns to its value before the pool was opened (small slack for
// the admin pools' idle connections); goleak in TestMain checks again at the very end.
//
// Errors of the workload are counted, not fatal: each kill costs about one
// *failover.FailoverError per connection that had a statement in flight.
func TestKillRestartCyclesNoLeak(t *testing.T) {
	lcCycles(t, func(_ context.Context, n *harness.Node) error { return n.Kill() })
}

// TestStopStartCyclesNoLeak: TestKillRestartCyclesNoLeak's twenty cycles and
// checks with a clean shutdown instead of kill -9 (Node.Stop: SIGTERM; docker stop on
// the container backend, whose start then reuses the container, its data and its
// published port).
func TestStopStartCyclesNoLeak(t *testing.T) {
	containerOnly(t)
	lcCycles(t, func(ctx context.Context, n *harness.Node) error { return n.Stop(ctx) })
}

// lcCycles runs the cycles, down stopping node 1 in each.
func lcCycles(t *testing.T, down func(context.Context, *harness.Node) error) {
	const (
		cycles       = 20
		pool         = 8
		workers      = 8
		killPause    = 500 * time.Millisecond
		settleLimit  = 6 * time.Second
		goroutSlack  = 4        // admin pools' idle connections (go-sql-driver's watcher goroutine each)
		growthSlack  = 8        // in-flight statements' context goroutines (database/sql awaitDone)
		maxConnPerCy = 5 * pool // connects that move connections, fall-back probes excluded
		probeEvery   = 50       // queriesBeforeRetryMaster's default, counted over the pool
	)
	name := t.Name()
	fig := func(key string, v any) { t.Logf("FIGURE %s: %s=%v", name, key, v) }

	c := harness.Start(t, 3)
	ctx := ctxT(t, 3*time.Minute)
	begin := time.Now()

	// Warm the admin pools as the checks below use them (sampler and settle poll run
	// together: two connections per node), so that the goroutine baseline includes them.
	for range 2 {
		_, err := lcSessions(ctx, c)
		must(t, err)
	}
	lcWarmAdmin(ctx, c)
	baseline := lcStableGoroutines()

	cfg, err := dsn.Parse(c.DSN("secondsBeforeRetryMaster=1&readTimeout=2s"))
	must(t, err)
	var ev lcEvents
	connector, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithEventHook(ev.record))
	must(t, err)
	db := sql.OpenDB(connector)
	var closeOnce sync.Once
	closeDB := func() { closeOnce.Do(func() { db.Close() }) }
	t.Cleanup(closeDB)
	db.SetMaxOpenConns(pool)
	db.SetMaxIdleConns(pool)

	// The workload: errors counted by kind, statements by node.
	wctx, stopWork := context.WithCancel(ctx)
	defer stopWork()
	var (
		stmts   atomic.Int64
		errs    atomic.Int64
		perNode [4]atomic.Int64
		kindsMu sync.Mutex
		kinds   = map[string]int{}
		firstOf = map[string]string{}
		wg      sync.WaitGroup
	)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for wctx.Err() == nil {
				var port int
				err := db.QueryRowContext(wctx, "SELECT @@port").Scan(&port)
				if wctx.Err() != nil {
					return
				}
				stmts.Add(1)
				if err != nil {
					errs.Add(1)
					k := lcErrKind(err)
					kindsMu.Lock()
					kinds[k]++
					if _, ok := firstOf[k]; !ok {
						firstOf[k] = err.Error()
					}
					kindsMu.Unlock()
					time.Sleep(10 * time.Millisecond)
					continue
				}
				perNode[c.NodeByPort(port)].Add(1)
				time.Sleep(time.Millisecond)
			}
		}()
	}

	// Wait for the pool to be full on node 1 before the first kill.
	if _, err := lcWaitSettled(ctx, c, pool, settleLimit, true); err != nil {
		t.Fatalf("pool never filled on node 1: %v", err)
	}

	// The sampler: total app sessions over all nodes every 50 ms, max per cycle.
	var cycleMax atomic.Int64
	sctx, stopSampler := context.WithCancel(ctx)
	var swg sync.WaitGroup
	swg.Add(1)
	go func() {
		defer swg.Done()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-tick.C:
			}
			n, err := lcSessions(sctx, c)
			if err != nil {
				continue
			}
			total := int64(n[1] + n[2] + n[3])
			for {
				cur := cycleMax.Load()
				if total <= cur || cycleMax.CompareAndSwap(cur, total) {
					break
				}
			}
		}
	}()

	type cycleFig struct {
		maxSessions int64
		settled     [4]int
		settle      time.Duration // restart done -> everything back on node 1
		connects    int64
		connFails   int64
		errs        int64
		stmts       int64
		goroutines  int
		fallbacks   int64
		probes      int64 // fall-back attempts on the primary, failed or not
		duration    time.Duration
	}
	figs := make([]cycleFig, 0, cycles)
	for i := 1; i <= cycles; i++ {
		cycleMax.Store(0)
		ev0, errs0, stmts0 := ev.snapshot(), errs.Load(), stmts.Load()
		cycleStart := time.Now()

		must(t, down(ctx, c.Node(1)))
		time.Sleep(killPause)
		must(t, c.Node(1).Restart(ctx))
		restarted := time.Now()
		settled, err := lcWaitSettled(ctx, c, pool, settleLimit, false)
		if err != nil {
			stopSampler()
			t.Fatalf("cycle %d: the pool did not settle back on node 1 within %v of the restart: %v (events this cycle: %s)",
				i, settleLimit, err, ev.snapshot().sub(ev0))
		}
		f := cycleFig{
			settled:    settled,
			settle:     time.Since(restarted),
			errs:       errs.Load() - errs0,
			stmts:      stmts.Load() - stmts0,
			goroutines: lcStableGoroutines(),
		}
		d := ev.snapshot().sub(ev0)
		f.connects, f.connFails, f.fallbacks = d.connectOK+d.connectFail, d.connectFail, d.fallBack
		f.probes = d.fallBack + d.fallBackFailed
		f.duration = time.Since(cycleStart)
		f.maxSessions = max(cycleMax.Load(), int64(settled[1]+settled[2]+settled[3]))
		figs = append(figs, f)
		t.Logf("cycle %2d: sessions max %2d settled n1=%d n2=%d n3=%d; settled %4dms after restart; %4d statements, %2d errors; %2d connect attempts (%d failed; %d fall-back probes, %d succeeded); goroutines %d",
			i, f.maxSessions, settled[1], settled[2], settled[3], f.settle.Milliseconds(), f.stmts, f.errs,
			f.connects, f.connFails, f.probes, f.fallbacks, f.goroutines)

		if total := settled[1] + settled[2] + settled[3]; total > pool {
			t.Errorf("cycle %d: %d app sessions after settling (n1=%d n2=%d n3=%d), want <= %d", i, total, settled[1], settled[2], settled[3], pool)
		}
		if f.maxSessions > 2*pool {
			t.Errorf("cycle %d: %d app sessions at one point, want <= %d (pool + one per logical connection)", i, f.maxSessions, 2*pool)
		}
		if moving := f.connects - f.probes; moving > maxConnPerCy {
			t.Errorf("cycle %d: %d connect attempts besides fall-back probes, want <= %d (connection storm)", i, moving, maxConnPerCy)
		}
		if limit := f.stmts/probeEvery + int64(f.duration/time.Second) + 2; f.probes > limit {
			t.Errorf("cycle %d: %d fall-back probes for %d statements in %v, want <= %d (one per %d statements or per second)",
				i, f.probes, f.stmts, f.duration.Round(time.Millisecond), limit, probeEvery)
		}
	}
	stopSampler()
	swg.Wait()

	// No growth: the later cycles look like the early ones.
	var (
		maxS, settledS, connS, probeS, errS, gorS, settleS []string
		firstG, lastG                                      int
	)
	for k, f := range figs {
		maxS = append(maxS, fmt.Sprint(f.maxSessions))
		settledS = append(settledS, fmt.Sprint(f.settled[1]+f.settled[2]+f.settled[3]))
		connS = append(connS, fmt.Sprint(f.connects))
		probeS = append(probeS, fmt.Sprint(f.probes))
		errS = append(errS, fmt.Sprint(f.errs))
		gorS = append(gorS, fmt.Sprint(f.goroutines))
		settleS = append(settleS, fmt.Sprint(f.settle.Milliseconds()))
		if k < 5 {
			firstG = max(firstG, f.goroutines)
		}
		if k >= len(figs)-5 {
			lastG = max(lastG, f.goroutines)
		}
	}
	if lastG > firstG+growthSlack {
		t.Errorf("goroutines grow across cycles: max %d in the first 5 cycles, %d in the last 5 (slack %d): %v", firstG, lastG, growthSlack, gorS)
	}
	first, last := figs[0], figs[len(figs)-1]
	if lt, ft := last.settled[1]+last.settled[2]+last.settled[3], first.settled[1]+first.settled[2]+first.settled[3]; lt > ft {
		t.Errorf("settled sessions grew from %d after cycle 1 to %d after cycle %d", ft, lt, len(figs))
	}

	// Stop the workload, then close the pool.
	stopWork()
	wg.Wait()
	fin, err := lcSessions(ctx, c)
	must(t, err)
	closeStart := time.Now()
	closeDB()
	var zeroAfter time.Duration = -1
	var lastSeen [4]int
	for time.Since(closeStart) < time.Second {
		n, err := lcSessions(ctx, c)
		if err == nil {
			lastSeen = n
			if n[1]+n[2]+n[3] == 0 {
				zeroAfter = time.Since(closeStart)
				break
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	if zeroAfter < 0 {
		t.Errorf("app sessions 1 s after db.Close: n1=%d n2=%d n3=%d, want 0", lastSeen[1], lastSeen[2], lastSeen[3])
	}

	// Goroutines back to the baseline.
	var gEnd int
	gDeadline := time.Now().Add(5 * time.Second)
	for {
		gEnd = runtime.NumGoroutine()
		if gEnd <= baseline+goroutSlack || time.Now().After(gDeadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if gEnd > baseline+goroutSlack {
		t.Errorf("goroutines after db.Close: %d, baseline %d (slack %d)\n%s", gEnd, baseline, goroutSlack, lcGoroutineDump())
	}

	kindsMu.Lock()
	var kindS []string
	for k, n := range kinds {
		kindS = append(kindS, fmt.Sprintf("%s:%d", k, n))
	}
	sort.Strings(kindS)
	for k, msg := range firstOf {
		t.Logf("first %s error: %s", k, msg)
	}
	kindsMu.Unlock()
	total := ev.snapshot()

	fig("cycles", len(figs))
	fig("max_sessions_per_cycle", "["+strings.Join(maxS, " ")+"]")
	fig("settled_sessions_per_cycle", "["+strings.Join(settledS, " ")+"]")
	fig("settle_ms_after_restart_per_cycle", "["+strings.Join(settleS, " ")+"]")
	fig("connect_attempts_per_cycle", "["+strings.Join(connS, " ")+"]")
	fig("fallback_probes_per_cycle", "["+strings.Join(probeS, " ")+"]")
	fig("errors_per_cycle", "["+strings.Join(errS, " ")+"]")
	fig("goroutines_settled_per_cycle", "["+strings.Join(gorS, " ")+"]")
	// Fewer than the pool: go-sql-driver closes a connection whose statement was cancelled,
	// and stopping the workers cancels the statements in flight.
	fig("sessions_after_workload_stopped", fmt.Sprintf("n1=%d n2=%d n3=%d", fin[1], fin[2], fin[3]))
	fig("sessions_zero_after_close_ms", zeroAfter.Milliseconds())
	fig("goroutines_baseline", baseline)
	fig("goroutines_end", gEnd)
	fig("statements_attempted", stmts.Load())
	fig("statements_ok_per_node", fmt.Sprintf("n1=%d n2=%d n3=%d", perNode[1].Load(), perNode[2].Load(), perNode[3].Load()))
	fig("errors_total", errs.Load())
	fig("errors_by_kind", "["+strings.Join(kindS, " ")+"]")
	fig("connect_attempts_total", total.connectOK+total.connectFail)
	fig("connect_failed_total", total.connectFail)
	fig("events", total.String())
	fig("duration_s", fmt.Sprintf("%.1f", time.Since(begin).Seconds()))
}

// lcEvents counts the driver's failover events.
type lcEvents struct {
	connectOK, connectFail, hostFailed, switches, fallBack, fallBackFailed atomic.Int64
}

type lcEventCounts struct {
	connectOK, connectFail, hostFailed, switches, fallBack, fallBackFailed int64
}

func (e *lcEvents) record(ev failover.Event) {
	switch ev.Kind {
	case failover.EventConnect:
		if ev.Err == nil {
			e.connectOK.Add(1)
		} else {
			e.connectFail.Add(1)
		}
	case failover.EventHostFailed:
		e.hostFailed.Add(1)
	case failover.EventSwitch:
		e.switches.Add(1)
	case failover.EventFallBack:
		e.fallBack.Add(1)
	case failover.EventFallBackFailed:
		e.fallBackFailed.Add(1)
	}
}

func (e *lcEvents) snapshot() lcEventCounts {
	return lcEventCounts{e.connectOK.Load(), e.connectFail.Load(), e.hostFailed.Load(),
		e.switches.Load(), e.fallBack.Load(), e.fallBackFailed.Load()}
}

func (a lcEventCounts) sub(b lcEventCounts) lcEventCounts {
	return lcEventCounts{a.connectOK - b.connectOK, a.connectFail - b.connectFail, a.hostFailed - b.hostFailed,
		a.switches - b.switches, a.fallBack - b.fallBack, a.fallBackFailed - b.fallBackFailed}
}

func (a lcEventCounts) String() string {
	return fmt.Sprintf("connect ok %d, connect failed %d, host-failed %d, switch %d, fall-back %d, fall-back-failed %d",
		a.connectOK, a.connectFail, a.hostFailed, a.switches, a.fallBack, a.fallBackFailed)
}

// lcErrKind names an error of the workload by type.
func lcErrKind(err error) string {
	var fe *failover.FailoverError
	var nh *failover.NoHostAvailableError
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &fe):
		return "FailoverError"
	case errors.As(err, &nh):
		return "NoHostAvailableError"
	case errors.Is(err, failover.ErrTxLost):
		return "ErrTxLost"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, context.Canceled):
		return "context"
	case errors.As(err, &me):
		return fmt.Sprintf("MySQLError%d", me.Number)
	}
	return fmt.Sprintf("other(%T)", err)
}

// lcSessions returns the app user's sessions per node (index 1..3; a node that is down
// counts 0).
func lcSessions(ctx context.Context, c *harness.Cluster) ([4]int, error) {
	var n [4]int
	for i := 1; i <= c.N() && i < len(n); i++ {
		node := c.Node(i)
		if node.State() != harness.Running {
			continue
		}
		qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		v, err := node.AppSessions(qctx)
		cancel()
		if err != nil {
			if node.State() != harness.Running {
				continue // killed while we asked
			}
			return n, err
		}
		n[i] = int(v)
	}
	return n, nil
}

// lcWarmAdmin opens the admin pools' second idle connection on every node, as the
// concurrent checks of the test will.
func lcWarmAdmin(ctx context.Context, c *harness.Cluster) {
	var wg sync.WaitGroup
	for _, n := range c.Nodes() {
		for range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				n.QueryInt(ctx, "SELECT SLEEP(0.05)")
			}()
		}
	}
	wg.Wait()
}

// lcWaitSettled polls every 50 ms until node 1 holds the app's sessions and nodes 2 and 3
// none, three polls in a row (with full, until node 1 holds exactly want), and returns
// the sessions per node then.
func lcWaitSettled(ctx context.Context, c *harness.Cluster, want int, limit time.Duration, full bool) ([4]int, error) {
	deadline := time.Now().Add(limit)
	var last [4]int
	var lastErr error
	ok := 0
	for {
		n, err := lcSessions(ctx, c)
		lastErr = err
		if err == nil {
			last = n
			if n[1] > 0 && n[2] == 0 && n[3] == 0 && (!full || n[1] == want) {
				ok++
				if ok == 3 {
					return n, nil
				}
			} else {
				ok = 0
			}
		}
		if time.Now().After(deadline) {
			return last, fmt.Errorf("last sessions n1=%d n2=%d n3=%d (last error %v)", last[1], last[2], last[3], lastErr)
		}
		select {
		case <-ctx.Done():
			return last, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// lcStableGoroutines is the smallest goroutine count seen over 5 samples 10 ms apart: the
// goroutines that exist, without most of the short-lived ones of statements in flight.
func lcStableGoroutines() int {
	m := runtime.NumGoroutine()
	for range 4 {
		time.Sleep(10 * time.Millisecond)
		m = min(m, runtime.NumGoroutine())
	}
	return m
}

func lcGoroutineDump() string {
	buf := make([]byte, 1<<20)
	return string(buf[:runtime.Stack(buf, true)])
}
