//go:build linux

// Command fleet measures what a fleet of instances of one service costs the servers: N
// instances, each its own OS process with its own mysqlfailover pool, against one local
// 3-node MariaDB replication cluster (package harness: node 1 the primary, nodes 2 and 3
// read-only GTID replicas, each behind a toxiproxy proxy). It prints markdown tables on
// stdout (and to -out); progress goes to stderr.
//
//	make bench-fleet                                  (from the root; FLEET_FLAGS passes flags)
//	go run ./cmd/fleet -n 10 -window 10s -runs 2      (from the integration module)
//
// The instances are this binary run again with FLEET_INSTANCE=1 (instance.go): each opens
// sql.Open("mysqlfailover", dsn) with SetMaxOpenConns(4) and SetMaxIdleConns(4), the DSN
// the cluster's three servers with -dsnopts, and obeys the parent's commands on its stdin,
// answering in JSON lines on its stdout. Nothing is shared between instances. The
// instances dial the servers directly (-via direct, the default), as a service does: with
// -via proxy they go through the toxiproxy proxies of this one process, which then
// carries every session of the fleet and, on 2 cores, is what new sessions wait for
// after a failover (a new session through node 2's proxy took up to 2.1 s, one straight
// to node 2 40-120 ms). FLEET_LOG=DIR writes each instance's driver log at Debug
// (WithLogger), with its failed and slow writes, to DIR/ID.log.
//
// For each probe variant (-probe: on is -dsnopts as given, off the same with
// checkInterval=0), on a fresh cluster, the phases (-phases, in this order):
//
//   - cold: the N instances start; once every process runs, each takes 4 sessions at
//     once (db.Conn in 4 goroutines, each pinged) and reports each session's host
//     (Conn.Host through (*sql.Conn).Raw) and its pool's Stats().Active. Reported: how
//     many pools ended off the primary, the open times. -runs times (new processes each
//     run; the last run's fleet stays for the next phases).
//   - idle: the warmed pools (4 idle sessions each) hold, no traffic, for -window.
//   - load: each instance runs -rate statements a second (a point SELECT, then an
//     INSERT, in turn) for -window.
//   - failover: each instance writes one INSERT every -every; node 1 is killed (kill -9),
//     node 2 promoted as an orchestrator does (Cluster.Switchover: node 2 applies what it
//     received, stops replicating, read_only OFF; node 3 follows it). The promotion time
//     is when a root session polling node 2 every 2 ms first sees read_only=0. Each
//     instance reports the end of its first successful write that started after the
//     kill. Reported: p50, p90, p99, max across instances of (first write - promotion)
//     and (first write - kill).
//
// During idle and load, per host, read from the server's own counters: Threads_connected
// and the app user's PROCESSLIST rows (sampled once a second, the mean), statements a
// second (the Questions delta over the window, the measuring session's own statements
// taken out), connects a second (the Connections delta: on a replica it also moves with
// replication), and the server's CPU (utime+stime of its mariadbd process from
// /proc/PID/stat over the window, as % of one core); and the instances' own CPU
// (getrusage), resident memory (VmRSS) and pool failovers (Stats().Failovers), and this
// process's CPU (the toxiproxy proxies, with -via proxy). The servers run with max_connections=5000
// (package harness's 500 would refuse sessions at N=100 before the figures say anything).
//
// Linux only: /proc, and the instances get Pdeathsig.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net/url"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// defaultOpts are the DSN options of the probing variant.
const defaultOpts = "targetSessionAttrs=read-write&checkInterval=100ms&failoverDelay=100ms"

// settings are the command's flags.
type settings struct {
	n      int
	phases []string
	window time.Duration
	opts   string
	probe  string
	runs   int
	rate   int
	every  time.Duration
	settle time.Duration
	outage time.Duration
	out    string
	label  string
	nodes  int
	via    string // "direct" or "proxy": how the instances reach the servers
}

// addr is node n's address as the instances dial it (s.via).
func (s settings) addr(n *harness.Node) string {
	if s.via == "proxy" {
		return n.ProxyAddr()
	}
	return n.Addr()
}

var allPhases = []string{"cold", "idle", "load", "failover"}

func main() {
	if os.Getenv(envInstance) != "" {
		os.Exit(instance())
	}
	os.Exit(run())
}

func run() int {
	var s settings
	var phases string
	flag.IntVar(&s.n, "n", 100, "instances (OS processes)")
	flag.StringVar(&phases, "phases", strings.Join(allPhases, ","), "phases to run, of "+strings.Join(allPhases, ","))
	flag.DurationVar(&s.window, "window", 15*time.Second, "measuring window of idle and load")
	flag.StringVar(&s.opts, "dsnopts", defaultOpts, "the instances' DSN options (the probing variant)")
	flag.StringVar(&s.probe, "probe", "both", "on (-dsnopts), off (-dsnopts with checkInterval=0) or both")
	flag.IntVar(&s.runs, "runs", 5, "cold starts (each with new processes)")
	flag.IntVar(&s.rate, "rate", 20, "load: statements a second per instance")
	flag.DurationVar(&s.every, "every", 10*time.Millisecond, "failover: one write per instance this often")
	flag.DurationVar(&s.settle, "settle", 3*time.Second, "pause before each window (sessions settle)")
	flag.DurationVar(&s.outage, "outage", 30*time.Second, "failover: how long after the kill the writes are watched")
	flag.StringVar(&s.out, "out", "", "also write the markdown to this file")
	flag.StringVar(&s.label, "label", "", "names the run in the tables (e.g. the commit)")
	flag.StringVar(&s.via, "via", "direct", "how the instances reach the servers: direct, or proxy (through the toxiproxy proxies of this process)")
	flag.Parse()
	if s.via != "direct" && s.via != "proxy" {
		fmt.Fprintf(os.Stderr, "fleet: -via %q: want direct or proxy\n", s.via)
		return 2
	}
	s.nodes = 3
	for _, p := range strings.Split(phases, ",") {
		if p = strings.TrimSpace(p); p == "" {
			continue
		}
		if !slices.Contains(allPhases, p) {
			fmt.Fprintf(os.Stderr, "fleet: -phases: unknown phase %q (want %s)\n", p, strings.Join(allPhases, ","))
			return 2
		}
		s.phases = append(s.phases, p)
	}
	var variants []variant
	switch s.probe {
	case "on":
		variants = []variant{{"probe on", s.opts}}
	case "off":
		variants = []variant{{"probe off", probeOff(s.opts)}}
	case "both":
		variants = []variant{{"probe on", s.opts}, {"probe off", probeOff(s.opts)}}
	default:
		fmt.Fprintf(os.Stderr, "fleet: -probe %q: want on, off or both\n", s.probe)
		return 2
	}
	if s.n < 1 || s.runs < 1 {
		fmt.Fprintln(os.Stderr, "fleet: -n and -runs must be at least 1")
		return 2
	}
	mysql.SetLogger(log.New(io.Discard, "", 0))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	rep := &report{s: s, began: time.Now(), loadBefore: harness.LoadAverage(), goVersion: runtime.Version(), cpus: runtime.NumCPU()}
	logf("load average before: %s; %d instances, phases %s", rep.loadBefore, s.n, strings.Join(s.phases, ","))
	for _, v := range variants {
		r, err := runVariant(ctx, s, v)
		if err != nil {
			fmt.Fprintf(os.Stderr, "fleet: %s: %v\n", v.name, err)
			if errors.Is(err, harness.ErrNoServer) {
				fmt.Fprintln(os.Stderr, "fleet: make server installs one")
			}
			return 1
		}
		rep.variants = append(rep.variants, r)
	}
	rep.loadAfter = harness.LoadAverage()
	text := rep.markdown()
	fmt.Print(text)
	if s.out != "" {
		if err := os.WriteFile(s.out, []byte(text), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "fleet: %v\n", err)
			return 1
		}
	}
	return 0
}

// variant is one set of DSN options.
type variant struct {
	name string
	opts string
}

// probeOff is opts with checkInterval=0 (probing off); the other options stay.
func probeOff(opts string) string {
	v, err := url.ParseQuery(opts)
	if err != nil {
		return opts + "&checkInterval=0"
	}
	v.Set("checkInterval", "0")
	return v.Encode()
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "fleet: "+format+"\n", args...)
}

// variantResult is what one variant measured.
type variantResult struct {
	v        variant
	version  string
	cold     []coldRun
	idle     *windowResult
	load     *windowResult
	failover *failoverResult
}

// coldRun is one cold start of the fleet.
type coldRun struct {
	opens   []msg
	primary string   // node 1's proxy address, as Conn.Host names it
	addrs   []string // every node's proxy address, in node order
}

// windowResult is one measured window: per host, and the instances' own cost.
type windowResult struct {
	hosts   []hostWindow
	instCPU float64 // the instances' CPU over the window, seconds, all together
	selfCPU float64 // this process's CPU over the window (toxiproxy's proxies, the meter), seconds
	moves   int64   // the pools' failovers during the window (Stats().Failovers), all together
	movers  int     // instances whose pool failed over during the window
	rssMB   float64 // the instances' resident memory at the end, MB, mean
	secs    float64
}

// failoverResult is the failover phase's account.
type failoverResult struct {
	kill, promoted time.Time
	reports        []msg
	addrs          []string // every node's proxy address, in node order
}

func has(s settings, phase string) bool { return slices.Contains(s.phases, phase) }

// runVariant runs the phases of one variant on a fresh cluster.
func runVariant(ctx context.Context, s settings, v variant) (*variantResult, error) {
	logf("%s: starting a %d-node cluster", v.name, s.nodes)
	sctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
	var opts []harness.Option
	for i := 1; i <= s.nodes; i++ {
		opts = append(opts, harness.WithNodeArgs(i, "--max-connections=5000"))
	}
	c, err := harness.StartCluster(sctx, s.nodes, opts...)
	cancel()
	if err != nil {
		return nil, err
	}
	defer c.Close()
	p := c.Primary()
	if err := p.Exec(ctx, "CREATE TABLE "+harness.AppDB+".fleet_w (inst INT NOT NULL, seq BIGINT NOT NULL, PRIMARY KEY (inst, seq))"); err != nil {
		return nil, err
	}
	if err := c.WaitReplicasCaughtUp(ctx); err != nil {
		return nil, err
	}
	r := &variantResult{v: v}
	r.version, _ = p.QueryString(ctx, "SELECT VERSION()")
	dsn := c.DirectClusterDSN(v.opts)
	if s.via == "proxy" {
		dsn = c.DSN(v.opts)
	}
	logf("%s: cluster up in %v; DSN options %s", v.name, c.BringUp().Round(time.Millisecond), v.opts)

	// Cold starts: the last run's fleet stays.
	runs := 1
	if has(s, "cold") {
		runs = s.runs
	}
	var f *fleet
	for run := 1; run <= runs; run++ {
		if f, err = startFleet(s.n, dsn, 2*time.Minute); err != nil {
			return nil, err
		}
		opens, err := f.do("open", time.Minute)
		if err != nil {
			f.stop()
			return nil, fmt.Errorf("cold start %d: %w", run, err)
		}
		cr := coldRun{opens: opens, primary: s.addr(c.Node(1))}
		for _, n := range c.Nodes() {
			cr.addrs = append(cr.addrs, s.addr(n))
		}
		r.cold = append(r.cold, cr)
		logf("%s: cold start %d: %s", v.name, run, cr.summary(c))
		if run < runs {
			f.stop()
			time.Sleep(s.settle) // the servers see the sessions go
		}
	}
	if !has(s, "cold") {
		r.cold = nil
	}
	defer func() { f.stop() }()

	if has(s, "idle") {
		if _, err := f.do("idle", time.Minute); err != nil {
			return nil, err
		}
		time.Sleep(s.settle)
		if r.idle, err = window(ctx, c, f, s.window); err != nil {
			return nil, fmt.Errorf("idle: %w", err)
		}
		logf("%s: idle: %s", v.name, r.idle.summary())
	}
	if has(s, "load") {
		if _, err := f.do(fmt.Sprintf("load %d", s.rate), time.Minute); err != nil {
			return nil, err
		}
		time.Sleep(s.settle)
		if r.load, err = window(ctx, c, f, s.window); err != nil {
			return nil, fmt.Errorf("load: %w", err)
		}
		logf("%s: load: %s", v.name, r.load.summary())
		if _, err := f.do("idle", time.Minute); err != nil {
			return nil, err
		}
	}
	if has(s, "failover") {
		if r.failover, err = failoverPhase(ctx, s, c, f); err != nil {
			return nil, fmt.Errorf("failover: %w", err)
		}
		logf("%s: failover: %s", v.name, r.failover.summary())
	}
	return r, nil
}

// window measures the hosts and the instances over d.
func window(ctx context.Context, c *harness.Cluster, f *fleet, d time.Duration) (*windowResult, error) {
	before, err := f.do("cpu", time.Minute)
	if err != nil {
		return nil, err
	}
	begin, self := time.Now(), cpuTime()
	hosts := measure(ctx, c, d)
	selfCPU := float64(cpuTime()-self) / 1e9
	after, err := f.do("cpu", time.Minute)
	if err != nil {
		return nil, err
	}
	w := &windowResult{hosts: hosts, secs: time.Since(begin).Seconds(), selfCPU: selfCPU}
	for i := range after {
		w.instCPU += float64(after[i].CPU-before[i].CPU) / 1e9
		if d := after[i].Failovers - before[i].Failovers; d > 0 {
			w.moves += d
			w.movers++
		}
	}
	var rss float64
	for _, p := range f.procs {
		rss += rssMB(p.cmd.Process.Pid)
	}
	w.rssMB = rss / float64(len(f.procs))
	return w, nil
}

// failoverPhase: writes from every instance, node 1 killed, node 2 promoted.
func failoverPhase(ctx context.Context, s settings, c *harness.Cluster, f *fleet) (*failoverResult, error) {
	if _, err := f.do(fmt.Sprintf("write %d", s.every.Milliseconds()), time.Minute); err != nil {
		return nil, err
	}
	time.Sleep(s.settle)
	n2 := c.Node(2)
	poll, err := n2.Admin().Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer poll.Close()
	promoted := make(chan time.Time, 1)
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		for pctx.Err() == nil {
			var ro int
			if poll.QueryRowContext(pctx, "SELECT @@global.read_only").Scan(&ro) == nil && ro == 0 {
				promoted <- time.Now()
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	r := &failoverResult{}
	for _, n := range c.Nodes() {
		r.addrs = append(r.addrs, s.addr(n))
	}
	r.kill = time.Now()
	if err := c.Node(1).Kill(); err != nil {
		return nil, err
	}
	sctx, scancel := context.WithTimeout(ctx, time.Minute)
	err = c.Switchover(sctx, 2)
	scancel()
	if err != nil {
		return nil, err
	}
	select {
	case r.promoted = <-promoted:
	case <-time.After(5 * time.Second):
		return nil, errors.New("node 2's read_only never read 0 after the switchover")
	}
	time.Sleep(time.Until(r.kill.Add(s.outage)))
	if r.reports, err = f.do(fmt.Sprintf("report %d", r.kill.UnixNano()), time.Minute); err != nil {
		return nil, err
	}
	return r, nil
}

// rssMB is the resident memory of pid (VmRSS), in MB.
func rssMB(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(rest), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}
