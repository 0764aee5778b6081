package integration

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Failure detection: each host's probe timeout follows its own probe round
// trips (RFC 6298, package failover's Active health). At checkInterval=100ms and
// failoverDelay=100ms a frozen or blackholed primary whose probes answer in a few ms is
// left quickly, and a primary that is slow but alive is never left.
//
// Both tests run a short variant by default (CI); the environment sets the length of a
// measurement run:
//
//	MYSQLFAILOVER_DETECT_REPEATS=10   faults per case of TestDetectHungPrimary (default 1)
//	MYSQLFAILOVER_DETECT_SECONDS=60   seconds per case of TestDetectSlowPrimary (default 2)
//
// No time is asserted: the tests assert counts (the frozen host was left, no false
// failover) and report the times as FIGURE lines.

// detectParams are the probe settings of the goal.
const detectParams = "checkInterval=100ms&failoverDelay=100ms&switchBackDelay=500ms&readTimeout=10s&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"

// detectSteady is how long TestDetectHungPrimary lets the probes run steadily before
// each fault: a host that has just come back has the deviation of its return in its
// estimate for a while (it falls by 1/64 per probe), and a fault seconds after the last
// is not what the figures are about.
const detectSteady = 5 * time.Second

// envInt returns the integer in the environment variable name, or def.
func envInt(t *testing.T, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a count >= 1", name, s)
	}
	return n
}

// durations summarises ds: median, min and max, rounded to the millisecond.
func durations(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	r := func(d time.Duration) time.Duration { return d.Round(time.Millisecond) }
	return fmt.Sprintf("median=%v min=%v max=%v n=%d", r(s[len(s)/2]), r(s[0]), r(s[len(s)-1]), len(s))
}

// TestDetectHungPrimary: node 1 of 2, the primary, is frozen (SIGSTOP) or blackholed
// (the proxy holds every byte, both ways) under 4 reading goroutines, repeatedly (healed
// between faults, the pool back on node 1 after switchBackDelay, the probes steady for
// detectSteady; a second before the first fault). Asserted: every fault moves the pool from node 1 to node 2 (EventSwitch)
// and aborts node 1's connections (EventAbort), within 10 s (a hang guard), and every
// heal brings the pool back. Reported: the time from the fault to EventSwitch (median,
// min, max), node 1's probe latency and probe timeout before the fault, and the
// machine's load.
func TestDetectHungPrimary(t *testing.T) {
	repeats := envInt(t, "MYSQLFAILOVER_DETECT_REPEATS", 1)
	for _, kind := range []string{"frozen", "blackholed"} {
		t.Run(kind, func(t *testing.T) {
			c := harness.Start(t, 2)
			ctx := ctxT(t, time.Duration(repeats)*(detectSteady+20*time.Second)+time.Minute)
			n1 := c.Node(1)
			db, connector, ev := healthOpen(t, c.DSN(detectParams))
			db.SetMaxOpenConns(4)
			db.SetMaxIdleConns(4)
			warmPool(t, ctx, c, db, 4)
			load := healthStartLoad(ctx, c, db, 4, 5*time.Second, 10*time.Millisecond)
			defer load.halt()
			fault, heal := n1.Freeze, n1.Thaw
			if kind == "blackholed" {
				fault, heal = n1.Blackhole, n1.ClearToxics
			}
			var toSwitch, toAbort []time.Duration
			var lat, rto []time.Duration
			for i := range repeats {
				if !healthPoll(15*time.Second, func() bool {
					st := connector.Stats()
					h, _ := healthHost(st, n1.ProxyAddr())
					return c.NodeByAddr(st.Active) == 1 && h.State == failover.HostUp
				}) {
					t.Fatalf("fault %d: the pool is not back on node 1: %+v", i, connector.Stats())
				}
				steady := detectSteady // the estimate settles after the last fault
				if i == 0 {
					steady = time.Second // after the pool opened
				}
				time.Sleep(steady)
				h, _ := healthHost(connector.Stats(), n1.ProxyAddr())
				lat, rto = append(lat, h.ProbeLatency), append(rto, h.ProbeTimeout)
				start := time.Now()
				must(t, fault())
				sw, ok := healthWaitEvent(ev, start, 10*time.Second, func(e failover.Event) bool {
					return e.Kind == failover.EventSwitch && e.From == n1.ProxyAddr()
				})
				ab, abOK := healthWaitEvent(ev, start, 10*time.Second, func(e failover.Event) bool {
					return e.Kind == failover.EventAbort && e.Host == n1.ProxyAddr()
				})
				must(t, heal())
				if !ok {
					t.Fatalf("fault %d: node 1 %s and not left within 10 s; events: %v", i, kind, ev.all())
				}
				if c.NodeByAddr(sw.Host) != 2 {
					t.Errorf("fault %d: switch to %s, want node 2", i, sw.Host)
				}
				toSwitch = append(toSwitch, sw.Time.Sub(start))
				if !abOK {
					t.Errorf("fault %d: no EventAbort of node 1", i)
				} else {
					toAbort = append(toAbort, ab.Time.Sub(start))
				}
				if kind == "frozen" {
					// As in TestFreezePrimary: drop node 1's idle admin connections.
					n1.Admin().SetMaxIdleConns(0)
					n1.Admin().SetMaxIdleConns(2)
				}
			}
			load.halt()
			var within int
			for _, d := range toSwitch {
				if d <= 300*time.Millisecond {
					within++
				}
			}
			fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
			fig("params", detectParams)
			fig("loadavg", harness.LoadAverage())
			fig("fault_to_switch", durations(toSwitch))
			fig("fault_to_abort", durations(toAbort))
			fig("within_300ms", fmt.Sprintf("%d/%d", within, len(toSwitch)))
			fig("node1_probe_latency_before", durations(lat))
			fig("node1_probe_timeout_before", durations(rto))
			fig("probe_failures_node1", ev.count(failover.EventProbe, n1.ProxyAddr()))
		})
	}
}

// TestDetectSlowPrimary: node 1 of 2, the primary, is slow but alive, for the whole run,
// from before the pool opens, at checkInterval=100ms and failoverDelay=100ms, under 2
// reading goroutines (readTimeout=10s):
//
//   - latency-300ms: every server-to-client chunk delayed by 300 ms;
//   - jitter-0-200ms: each chunk delayed by a random 0 to 200 ms;
//   - cpu-starved: the server's process in a cgroup of its own with 20% of one CPU
//     (cgroup v1 cpu.cfs_quota_us, or v2 cpu.max), and 2 sessions burning CPU on it
//     (BENCHMARK) within that share; skipped where no cgroup can be made;
//   - long-query: a goroutine runs SELECT SLEEP(2) on the pool over and over.
//
// Asserted: no false failover (no EventSwitch, no EventAbort; the pool on node 1 at the
// end) and no read failed. Reported: failed probes, node 1's probe latency and probe
// timeout at the end, the reads and the longest one, and the machine's load.
func TestDetectSlowPrimary(t *testing.T) {
	seconds := envInt(t, "MYSQLFAILOVER_DETECT_SECONDS", 2)
	run := time.Duration(seconds) * time.Second
	cases := []struct {
		name string
		slow func(t *testing.T, ctx context.Context, c *harness.Cluster) // before the pool opens
		long bool
	}{
		{name: "latency-300ms", slow: func(t *testing.T, _ context.Context, c *harness.Cluster) {
			must(t, c.Node(1).Latency(300*time.Millisecond))
		}},
		{name: "jitter-0-200ms", slow: func(t *testing.T, _ context.Context, c *harness.Cluster) {
			must(t, c.Node(1).LatencyJitter(100*time.Millisecond, 100*time.Millisecond))
		}},
		{name: "cpu-starved", slow: starveCPU},
		{name: "long-query", long: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := harness.Start(t, 2)
			ctx := ctxT(t, run+time.Minute)
			n1 := c.Node(1)
			if tc.slow != nil {
				tc.slow(t, ctx, c)
			}
			db, connector, ev := healthOpen(t, c.DSN(detectParams))
			db.SetMaxOpenConns(4)
			db.SetMaxIdleConns(4)
			if node, err := nodeOf(ctx, c, db); err != nil || node != 1 {
				t.Fatalf("first read: node %d, %v; want node 1", node, err)
			}
			start := time.Now()
			load := healthStartLoad(ctx, c, db, 2, 0, 10*time.Millisecond)
			defer load.halt()
			var longs, longFails atomic.Int64
			var wg sync.WaitGroup
			stop := make(chan struct{})
			if tc.long {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for {
						select {
						case <-stop:
							return
						default:
						}
						var v int
						if err := db.QueryRowContext(ctx, "SELECT SLEEP(2)").Scan(&v); err != nil {
							longFails.Add(1)
							t.Errorf("SELECT SLEEP(2): %v", err)
							return
						}
						longs.Add(1)
					}
				}()
			}
			time.Sleep(run)
			close(stop)
			wg.Wait()
			ops := load.halt()
			st := connector.Stats()
			h1, _ := healthHost(st, n1.ProxyAddr())

			switches, aborts := ev.count(failover.EventSwitch, ""), ev.count(failover.EventAbort, "")
			if switches != 0 || aborts != 0 {
				t.Errorf("false failover: %d EventSwitch, %d EventAbort: %v %v", switches, aborts,
					ev.of(failover.EventSwitch, "", time.Time{}), ev.of(failover.EventAbort, "", time.Time{}))
			}
			if c.NodeByAddr(st.Active) != 1 {
				t.Errorf("the pool is on %s, want node 1", st.Active)
			}
			var failed int
			var longest time.Duration
			for _, op := range ops {
				longest = max(longest, op.took())
				if op.err != nil || op.node != 1 {
					failed++
					if failed <= 3 {
						t.Errorf("read started %v into the run: node %d, %v; want node 1", op.start.Sub(start), op.node, op.err)
					}
				}
			}
			suspects := 0
			for _, e := range ev.of(failover.EventHostState, n1.ProxyAddr(), time.Time{}) {
				if e.State == failover.HostSuspect {
					suspects++
				}
			}
			fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
			fig("params", detectParams)
			fig("seconds", seconds)
			fig("loadavg", harness.LoadAverage())
			fig("false_failovers", switches)
			fig("aborts", aborts)
			fig("probe_failures_node1", ev.count(failover.EventProbe, n1.ProxyAddr()))
			fig("suspect_runs_node1", suspects)
			fig("node1_probe_latency_end", h1.ProbeLatency.Round(time.Millisecond))
			fig("node1_probe_timeout_end", h1.ProbeTimeout.Round(time.Millisecond))
			fig("reads", len(ops))
			fig("reads_failed", failed)
			fig("longest_read", longest.Round(time.Millisecond))
			if tc.long {
				fig("long_queries", longs.Load())
			}
		})
	}
}

// starveCPU puts node 1's server process into a CPU cgroup of its own limited to 20% of
// one CPU (cgroup v1: cpu.cfs_quota_us 20000 per 100000; v2: cpu.max "20000 100000")
// and starts 2 admin sessions running BENCHMARK on it, which use up that share; the test
// skips where no such cgroup can be made (no root, no writable cpu controller). Undone
// when the test ends.
func starveCPU(t *testing.T, ctx context.Context, c *harness.Cluster) {
	n1 := c.Node(1)
	pidFile, err := n1.QueryString(ctx, "SELECT @@pid_file")
	must(t, err)
	b, err := os.ReadFile(pidFile)
	must(t, err)
	pid := strings.TrimSpace(string(b))
	name := fmt.Sprintf("mysqlfailover-detect-%d", os.Getpid())
	var dir, parent string
	write := func(file, v string) error { return os.WriteFile(filepath.Join(dir, file), []byte(v), 0o644) }
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		parent = "/sys/fs/cgroup"
		dir = filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Skipf("cgroup v2: %v", err)
		}
		err = write("cpu.max", "20000 100000")
		if err == nil {
			err = write("cgroup.procs", pid)
		}
		if err != nil {
			_ = os.Remove(dir)
			t.Skipf("cgroup v2 %s: %v", dir, err)
		}
	} else {
		parent = "/sys/fs/cgroup/cpu"
		dir = filepath.Join(parent, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Skipf("cgroup v1: %v", err)
		}
		err = write("cpu.cfs_quota_us", "20000")
		if err == nil {
			err = write("cgroup.procs", pid)
		}
		if err != nil {
			_ = os.Remove(dir)
			t.Skipf("cgroup v1 %s: %v", dir, err)
		}
	}
	t.Logf("node 1 (pid %s) in %s: 20%% of one CPU", pid, dir)
	hctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	ids := make(chan int64, 2)
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			conn, err := n1.Admin().Conn(hctx)
			if err != nil {
				return
			}
			defer conn.Close()
			var id int64
			if err := conn.QueryRowContext(hctx, "SELECT CONNECTION_ID()").Scan(&id); err != nil {
				return
			}
			ids <- id
			for hctx.Err() == nil {
				var v int
				if err := conn.QueryRowContext(hctx, "SELECT BENCHMARK(2000000, SHA2('mysqlfailover', 512))").Scan(&v); err != nil && !errors.Is(err, context.Canceled) {
					return
				}
			}
		}()
	}
	t.Cleanup(func() {
		cancel()
		for range 2 {
			select {
			case id := <-ids:
				_, _ = n1.Admin().ExecContext(context.Background(), fmt.Sprintf("KILL QUERY %d", id))
			default:
			}
		}
		wg.Wait()
		// The server moves back to the parent group, then the group goes.
		_ = os.WriteFile(filepath.Join(parent, "cgroup.procs"), []byte(pid), 0o644)
		_ = os.Remove(dir)
	})
	time.Sleep(500 * time.Millisecond) // the hogs are running
}
