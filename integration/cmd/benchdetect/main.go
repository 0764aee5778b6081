// Command benchdetect measures the failure detector of active health
// against a real server: whether a primary that is slow but answering is left (a false
// failover), and how soon a frozen one is. It prints two markdown tables on stdout
// (BENCHMARKS.md, section "Failure detection"); progress goes to stderr.
//
//	make bench-detect                 (from the root)
//	go run ./cmd/benchdetect          (from the integration module)
//	DETECT_SECONDS=5 DETECT_FREEZES=5 go run ./cmd/benchdetect   (a smoke run)
//
// The cluster is package harness's (process backend): node 1 the primary, node 2 a
// read-only replica, each behind a toxiproxy proxy, the pool's DSN through the proxies.
// Every case opens a new mysqlfailover pool at checkInterval=100ms&failoverDelay=100ms
// (params below) and runs 2 readers (SELECT @@port, 10 ms apart). Slow-primary cases, each
// for DETECT_SECONDS (default 20) after 2 s on a healthy node 1 (the steady case: from
// before the pool opens):
//
//   - steady-150ms: every server-to-client chunk of node 1 delayed by 150 ms;
//   - jumps-0-200ms: the delay set anew each second to a random 0 to 200 ms;
//   - step-0-200ms: 0 ms for 8 s (the estimate settles on a fast host), then 200 ms for
//     2 s, twice in 20 s;
//   - jitter-100±100ms: toxiproxy's latency 100 ms, jitter 100 ms (0 to 200 ms a chunk);
//   - cpu-starved: node 1's mariadbd SIGSTOPped 30 ms of every 60 ms (a duty cycle of
//     50%: a server that gets half a CPU in slices, as a cgroup quota gives it, without
//     needing a cgroup);
//   - long-queries: 2 sessions of the pool running SELECT SLEEP(2) and one admin session
//     running BENCHMARK (a CPU-bound query) on node 1 meanwhile.
//
// Reported: false failovers (EventSwitch from node 1), the reads, those served off node
// 1 or failed, node 1's failed probes and its longest passed one (what the wait must
// cover), the longest read. Then the frozen primary: node 1
// SIGSTOPped DETECT_FREEZES times (default 25), each after node 1 has been the pool's
// host and up for 3 s (plus a random 0-100 ms, so that the freezes fall at every phase of
// the probe schedule), thawed once the pool left it; reported: the time from the SIGSTOP
// to EventSwitch, p50, p90 and max, and how many within 300 ms. No figure is asserted:
// this is a measurement.
//
// DETECT_LABEL names the run in the tables (e.g. the commit); DETECT_CASES=a,b runs only
// those slow cases (by name, "none" for none); DETECT_FREEZES=0 skips the freezes.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// params are the pool's probe settings: the aggressive ones. readTimeout is long
// so that only the detector moves the pool; the fall-back timers are off (with probing,
// switchBackDelay decides the return).
const params = "checkInterval=100ms&failoverDelay=100ms&switchBackDelay=1s&readTimeout=10s&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"

const (
	readers  = 2
	pace     = 10 * time.Millisecond
	warm     = 2 * time.Second // a healthy node 1 before a slow case's fault
	steadyFz = 3 * time.Second // node 1 up and active before each freeze
)

func main() { os.Exit(run()) }

func run() int {
	mysql.SetLogger(log.New(io.Discard, "", 0)) // frozen servers make go-sql-driver log broken reads
	seconds := envInt("DETECT_SECONDS", 20, 1)
	freezes := envInt("DETECT_FREEZES", 25, 0)
	label := os.Getenv("DETECT_LABEL")
	began := time.Now()
	loadBefore := harness.LoadAverage()
	logf("load average before: %s", loadBefore)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, err := harness.StartCluster(ctx, 2)
	cancel()
	if err != nil {
		if errors.Is(err, harness.ErrNoServer) {
			return fail(fmt.Errorf("%v (make server installs one)", err))
		}
		return fail(err)
	}
	defer c.Close()
	logf("cluster up in %v", c.BringUp().Round(time.Millisecond))
	version, _ := c.Node(1).QueryString(context.Background(), "SELECT VERSION()")

	run := time.Duration(seconds) * time.Second
	var slow []slowResult
	for _, sc := range slowCases(c) {
		if only := os.Getenv("DETECT_CASES"); only != "" && !slices.Contains(strings.Split(only, ","), sc.name) {
			continue
		}
		logf("%s: %v", sc.name, run)
		r, err := runSlow(c, sc, run)
		if err != nil {
			return fail(fmt.Errorf("%s: %w", sc.name, err))
		}
		logf("%s: %d false failovers, %d of %d reads off node 1, %d failed", sc.name, r.switches, r.off, r.reads, r.failed)
		slow = append(slow, r)
	}
	var fr frozenResult
	if freezes > 0 {
		logf("frozen: %d freezes", freezes)
		if fr, err = runFrozen(c, freezes); err != nil {
			return fail(fmt.Errorf("frozen: %w", err))
		}
	}

	// The report.
	fmt.Printf("### Run%s\n\n", ifLabel(label))
	fmt.Println("| | |")
	fmt.Println("|---|---|")
	fmt.Printf("| started | %s |\n", began.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Printf("| took | %v |\n", time.Since(began).Round(time.Second))
	fmt.Printf("| load average (1, 5, 15 min) | before %s; after %s |\n", loadBefore, harness.LoadAverage())
	fmt.Printf("| server | %s, 2 nodes through toxiproxy |\n", version)
	fmt.Printf("| Go | %s, %d CPUs |\n", runtime.Version(), runtime.NumCPU())
	fmt.Printf("| params | `%s` |\n\n", params)

	if len(slow) > 0 {
		fmt.Printf("### A slow primary, %d s a case%s\n\n", seconds, ifLabel(label))
		fmt.Println("| case | false failovers | reads | reads off node 1 | reads failed | failed probes of node 1 | longest passed probe of node 1 | longest read | node 1's probe wait at the end |")
		fmt.Println("|---|---|---|---|---|---|---|---|---|")
		for _, r := range slow {
			fmt.Printf("| %s | %d | %d | %d | %d | %d | %v | %v | %v |\n", r.name, r.switches, r.reads, r.off, r.failed,
				r.probeFails, r.longestProbe.Round(time.Millisecond), r.longest.Round(time.Millisecond), r.wait.Round(time.Millisecond))
		}
		fmt.Println()
	}
	if fr.n == 0 {
		return 0
	}
	fmt.Printf("### A frozen primary (SIGSTOP): time to the pool leaving it%s\n\n", ifLabel(label))
	fmt.Println("| freezes | left | p50 | p90 | max | within 300 ms | node 1's probe wait before (median) |")
	fmt.Println("|---|---|---|---|---|---|---|")
	fmt.Printf("| %d | %d | %v | %v | %v | %d/%d | %v |\n", fr.n, len(fr.toSwitch), pct(fr.toSwitch, 50), pct(fr.toSwitch, 90),
		pct(fr.toSwitch, 100), fr.within(300*time.Millisecond), fr.n, pct(fr.waits, 50))
	fmt.Println()
	return 0
}

// slowCase is one way of being slow but alive. before runs before the pool opens; during
// runs (in its own goroutine) from the start of the measured span until ctx ends; undo
// heals node 1 afterwards.
type slowCase struct {
	name   string
	before func() error
	during func(ctx context.Context, db *sql.DB)
	undo   func()
}

func slowCases(c *harness.Cluster) []slowCase {
	n1 := c.Node(1)
	clear := func() { _ = n1.ClearToxics() }
	return []slowCase{
		{name: "steady-150ms", before: func() error { return n1.Latency(150 * time.Millisecond) }, undo: clear},
		{name: "jumps-0-200ms", during: func(ctx context.Context, _ *sql.DB) {
			for {
				_ = n1.Latency(time.Duration(rand.IntN(201)) * time.Millisecond)
				if sleep(ctx, time.Second) != nil {
					return
				}
			}
		}, undo: clear},
		{name: "step-0-200ms", during: func(ctx context.Context, _ *sql.DB) {
			for {
				if sleep(ctx, 8*time.Second) != nil {
					return
				}
				_ = n1.Latency(200 * time.Millisecond)
				if sleep(ctx, 2*time.Second) != nil {
					return
				}
				_ = n1.Latency(0)
			}
		}, undo: clear},
		{name: "jitter-100±100ms", during: func(context.Context, *sql.DB) {
			_ = n1.LatencyJitter(100*time.Millisecond, 100*time.Millisecond)
		}, undo: clear},
		{name: "cpu-starved", during: func(ctx context.Context, _ *sql.DB) {
			for ctx.Err() == nil {
				_ = n1.Freeze()
				time.Sleep(30 * time.Millisecond)
				_ = n1.Thaw()
				time.Sleep(30 * time.Millisecond)
			}
		}, undo: func() { _ = n1.Thaw() }},
		{name: "long-queries", during: func(ctx context.Context, db *sql.DB) {
			var wg sync.WaitGroup
			for range 2 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for ctx.Err() == nil {
						var v int
						_ = db.QueryRowContext(ctx, "SELECT SLEEP(2)").Scan(&v)
					}
				}()
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				conn, err := n1.Admin().Conn(context.Background())
				if err != nil {
					return
				}
				defer conn.Close()
				var id int64
				if conn.QueryRowContext(ctx, "SELECT CONNECTION_ID()").Scan(&id) != nil {
					return
				}
				stop := context.AfterFunc(ctx, func() {
					_, _ = n1.Admin().ExecContext(context.Background(), fmt.Sprintf("KILL QUERY %d", id))
				})
				defer stop()
				for ctx.Err() == nil {
					var v int
					_ = conn.QueryRowContext(context.Background(), "SELECT BENCHMARK(3000000, SHA2('mysqlfailover', 512))").Scan(&v)
				}
			}()
			wg.Wait()
		}},
	}
}

// events records the pool's events.
type events struct {
	mu sync.Mutex
	ev []failover.Event
}

func (e *events) hook(ev failover.Event) {
	e.mu.Lock()
	e.ev = append(e.ev, ev)
	e.mu.Unlock()
}

// since returns the events of kind about host (as Host, or as From for a switch) at or
// after t.
func (e *events) since(kind failover.EventKind, host string, t time.Time) []failover.Event {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []failover.Event
	for _, ev := range e.ev {
		h := ev.Host
		if kind == failover.EventSwitch {
			h = ev.From
		}
		if ev.Kind == kind && h == host && !ev.Time.Before(t) {
			out = append(out, ev)
		}
	}
	return out
}

// open opens a mysqlfailover pool on c with params and an event log.
func open(c *harness.Cluster) (*sql.DB, *mysqlfailover.Connector, *events, error) {
	cfg, err := dsn.Parse(c.DSN(params))
	if err != nil {
		return nil, nil, nil, err
	}
	ev := &events{}
	conn, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithEventHook(ev.hook))
	if err != nil {
		return nil, nil, nil, err
	}
	db := sql.OpenDB(conn)
	db.SetMaxOpenConns(8)
	db.SetMaxIdleConns(8)
	return db, conn, ev, nil
}

// read is one SELECT @@port of a reader.
type read struct {
	node int // 0: failed
	took time.Duration
}

// startReaders runs readers goroutines of SELECT @@port, pace apart, until ctx ends, and
// returns a function that waits for them and returns their reads.
func startReaders(ctx context.Context, c *harness.Cluster, db *sql.DB) func() []read {
	var mu sync.Mutex
	var reads []read
	var wg sync.WaitGroup
	for range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				start := time.Now()
				var port int
				err := db.QueryRowContext(context.Background(), "SELECT @@port").Scan(&port)
				r := read{took: time.Since(start)}
				if err == nil {
					r.node = c.NodeByPort(port)
				}
				mu.Lock()
				reads = append(reads, r)
				mu.Unlock()
				_ = sleep(ctx, pace)
			}
		}()
	}
	return func() []read {
		wg.Wait()
		return reads
	}
}

// slowResult is what one slow case gave.
type slowResult struct {
	name               string
	switches           int
	reads, off, failed int
	probeFails         int
	longestProbe       time.Duration // of the passed probes of node 1 (EventProbePassed)
	longest, wait      time.Duration
}

func runSlow(c *harness.Cluster, sc slowCase, span time.Duration) (slowResult, error) {
	r := slowResult{name: sc.name}
	n1 := c.Node(1)
	if sc.undo != nil {
		defer sc.undo()
	}
	if sc.before != nil {
		if err := sc.before(); err != nil {
			return r, err
		}
	}
	db, connector, ev, err := open(c)
	if err != nil {
		return r, err
	}
	defer db.Close()
	var port int
	if err := db.QueryRowContext(context.Background(), "SELECT @@port").Scan(&port); err != nil || c.NodeByPort(port) != 1 {
		return r, fmt.Errorf("first read: port %d, %v; want node 1", port, err)
	}
	time.Sleep(warm)
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), span)
	defer cancel()
	var faultDone sync.WaitGroup
	if sc.during != nil {
		faultDone.Add(1)
		go func() {
			defer faultDone.Done()
			sc.during(ctx, db)
		}()
	}
	wait := startReaders(ctx, c, db)
	reads := wait()
	faultDone.Wait()
	for _, rd := range reads {
		r.reads++
		r.longest = max(r.longest, rd.took)
		switch rd.node {
		case 0:
			r.failed++
		case 1:
		default:
			r.off++
		}
	}
	addr := n1.ProxyAddr()
	r.switches = len(ev.since(failover.EventSwitch, addr, start))
	fails := ev.since(failover.EventProbe, addr, start)
	r.probeFails = len(fails)
	for i, e := range fails {
		if i < 5 {
			logf("%s: failed probe of node 1 at %v: %v", sc.name, e.Time.Sub(start).Round(time.Millisecond), e.Err)
		}
	}
	for _, e := range ev.since(failover.EventProbePassed, addr, start) {
		r.longestProbe = max(r.longestProbe, e.Duration)
	}
	for _, h := range connector.Stats().Hosts {
		if h.Addr == addr {
			r.wait = h.ProbeTimeout
		}
	}
	return r, nil
}

// frozenResult is what the freezes gave.
type frozenResult struct {
	n        int
	toSwitch []time.Duration
	waits    []time.Duration // node 1's probe wait just before each freeze
}

func (f frozenResult) within(d time.Duration) int {
	n := 0
	for _, x := range f.toSwitch {
		if x <= d {
			n++
		}
	}
	return n
}

func runFrozen(c *harness.Cluster, freezes int) (frozenResult, error) {
	fr := frozenResult{n: freezes}
	n1 := c.Node(1)
	addr := n1.ProxyAddr()
	db, connector, ev, err := open(c)
	if err != nil {
		return fr, err
	}
	defer db.Close()
	ctx, cancel := context.WithCancel(context.Background())
	wait := startReaders(ctx, c, db)
	defer func() {
		cancel()
		wait()
	}()
	for i := range freezes {
		// Node 1 active and up, then steady.
		deadline := time.Now().Add(20 * time.Second)
		for {
			st := connector.Stats()
			up := false
			for _, h := range st.Hosts {
				if h.Addr == addr && h.State == failover.HostUp {
					up = true
				}
			}
			if st.Active == addr && up {
				break
			}
			if time.Now().After(deadline) {
				return fr, fmt.Errorf("freeze %d: the pool is not back on node 1: %+v", i, st)
			}
			time.Sleep(10 * time.Millisecond)
		}
		time.Sleep(steadyFz + time.Duration(rand.IntN(100))*time.Millisecond)
		for _, h := range connector.Stats().Hosts {
			if h.Addr == addr {
				fr.waits = append(fr.waits, h.ProbeTimeout)
			}
		}
		t0 := time.Now()
		if err := n1.Freeze(); err != nil {
			return fr, err
		}
		var sw []failover.Event
		for time.Since(t0) < 10*time.Second {
			if sw = ev.since(failover.EventSwitch, addr, t0); len(sw) > 0 {
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
		if err := n1.Thaw(); err != nil {
			return fr, err
		}
		// The admin pool's idle connections saw the freeze: drop them.
		n1.Admin().SetMaxIdleConns(0)
		n1.Admin().SetMaxIdleConns(2)
		if len(sw) == 0 {
			logf("freeze %d: not left within 10 s", i)
			continue
		}
		d := sw[0].Time.Sub(t0)
		fr.toSwitch = append(fr.toSwitch, d)
		logf("freeze %d: left after %v", i, d.Round(time.Millisecond))
	}
	return fr, nil
}

// pct returns the p-th percentile of ds (nearest rank), rounded to the millisecond; "—"
// for none.
func pct(ds []time.Duration, p int) string {
	if len(ds) == 0 {
		return "—"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	k := (p*len(s) + 99) / 100 // nearest rank: ceil(p/100 x n)
	k = min(max(k, 1), len(s))
	return s[k-1].Round(time.Millisecond).String()
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func ifLabel(l string) string {
	if l == "" {
		return ""
	}
	return " (" + l + ")"
}

// envInt returns the integer in the environment variable k when it is at least least,
// else def.
func envInt(k string, def, least int) int {
	if v, err := strconv.Atoi(os.Getenv(k)); err == nil && v >= least {
		return v
	}
	return def
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchdetect: "+format+"\n", args...)
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "benchdetect:", err)
	return 1
}
