//go:build linux

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// fault is one way node 1 goes away, and how it comes back.
type fault struct {
	name    string
	proxied bool // clients reach the servers through toxiproxy (for the blackhole)
	apply   func(n *harness.Node) error
	heal    func(ctx context.Context, n *harness.Node) error
}

var faults = []fault{
	{name: "kill -9", apply: (*harness.Node).Kill, heal: func(ctx context.Context, n *harness.Node) error { return n.Restart(ctx) }},
	{name: "SIGSTOP", apply: (*harness.Node).Freeze, heal: func(_ context.Context, n *harness.Node) error { return n.Thaw() }},
	{name: "blackhole", proxied: true, apply: (*harness.Node).Blackhole,
		heal: func(_ context.Context, n *harness.Node) error { return n.ClearToxics() }},
}

// figures are one client's results for one fault round. Durations < 0: not within the
// phase (the fault's hold, the fall-back window).
type figures struct {
	first, all   time.Duration // fault -> first success on another node; by every worker
	errors       int           // calls that returned an error, fault to end of window
	kinds        map[string]int
	longest      time.Duration // longest call that ended after the fault
	back, backAl time.Duration // heal -> first call on node 1; -> last call not on node 1 ended
	before       bool          // every worker ran on node 1 before the fault
}

// pace is each worker's pause between calls: 10 ms, longer for many workers so that 7
// clients x 64 workers stay a load a shared 2-core machine carries (about 400 calls/s a
// client at 16 and 64 workers).
func pace(workers int) time.Duration {
	return max(10*time.Millisecond, time.Duration(workers)*2500*time.Microsecond)
}

// runFault starts every client with workers workers, waits until each runs on node 1,
// applies f, holds it for s.hold, heals it, watches s.window, and stops the clients.
func runFault(c *harness.Cluster, f fault, clients []client, workers int, s settings, tag string) (map[string]figures, error) {
	n1 := c.Node(1)
	p := pace(workers)
	var started []client
	defer func() {
		var wg sync.WaitGroup
		for _, cl := range started {
			wg.Add(1)
			go func() { defer wg.Done(); cl.stop() }()
		}
		wg.Wait()
	}()
	for _, cl := range clients {
		if err := cl.start(workers, p, f.proxied); err != nil {
			return nil, fmt.Errorf("%s: start: %w", cl.name(), err)
		}
		started = append(started, cl)
	}
	// Every client on node 1, every worker through at least one call there.
	onNode1 := map[string]bool{}
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		all := true
		for _, cl := range clients {
			if !onNode1[cl.name()] {
				onNode1[cl.name()] = allOnNode1(cl.ops(), workers, time.Now().Add(-300*time.Millisecond))
			}
			all = all && onNode1[cl.name()]
		}
		if all {
			break
		}
	}
	time.Sleep(300 * time.Millisecond)

	t0 := time.Now()
	if err := f.apply(n1); err != nil {
		return nil, err
	}
	time.Sleep(s.hold - time.Since(t0))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	err := f.heal(ctx, n1)
	cancel()
	if err != nil {
		return nil, fmt.Errorf("heal: %w", err)
	}
	t1 := time.Now()
	time.Sleep(s.window)
	tEnd := time.Now()

	out := map[string]figures{}
	for _, cl := range clients {
		ops := cl.ops()
		if traceDir != "" {
			writeTrace(filepath.Join(traceDir, tag+"-"+slug(cl.name())+".tsv"), ops, t0, t1)
		}
		fg := analyse(ops, workers, t0, t1, tEnd)
		fg.before = onNode1[cl.name()]
		out[cl.name()] = fg
	}
	return out, nil
}

// allOnNode1 says whether every worker's calls that ended after since succeeded on
// node 1, and every worker has one.
func allOnNode1(ops []op, workers int, since time.Time) bool {
	seen := make([]bool, workers)
	for _, o := range ops {
		if o.end.Before(since) {
			continue
		}
		if o.err != "" || o.node != 1 {
			return false
		}
		seen[o.worker] = true
	}
	for _, s := range seen {
		if !s {
			return false
		}
	}
	return true
}

func analyse(ops []op, workers int, t0, t1, tEnd time.Time) figures {
	fg := figures{first: -1, all: -1, back: -1, backAl: -1, kinds: map[string]int{}}
	firstBy := make([]time.Duration, workers)
	for w := range firstBy {
		firstBy[w] = -1
	}
	var lastNotOn1 time.Time
	lastOn1 := false
	var lastEnd time.Time
	for _, o := range ops {
		if o.end.Before(t0) || o.end.After(tEnd) {
			continue
		}
		fg.longest = max(fg.longest, o.end.Sub(o.start))
		if o.err != "" {
			fg.errors++
			fg.kinds[o.err]++
		}
		if o.err == "" && o.node != 1 && o.end.Before(t1) {
			d := o.end.Sub(t0)
			if fg.first < 0 || d < fg.first {
				fg.first = d
			}
			if firstBy[o.worker] < 0 || d < firstBy[o.worker] {
				firstBy[o.worker] = d
			}
		}
		if !o.start.Before(t1) {
			if o.err == "" && o.node == 1 {
				if d := o.end.Sub(t1); fg.back < 0 || d < fg.back {
					fg.back = d
				}
			}
		}
		if o.end.After(t1) {
			if o.err != "" || o.node != 1 {
				if o.end.After(lastNotOn1) {
					lastNotOn1 = o.end
				}
			}
			if o.end.After(lastEnd) {
				lastEnd = o.end
				lastOn1 = o.err == "" && o.node == 1
			}
		}
	}
	fg.all = 0
	for _, d := range firstBy {
		if d < 0 {
			fg.all = -1
			break
		}
		fg.all = max(fg.all, d)
	}
	switch {
	case !lastOn1: // still elsewhere (or failing) at the end of the window
		fg.backAl = -1
	case lastNotOn1.IsZero():
		fg.backAl = 0
	default:
		fg.backAl = lastNotOn1.Sub(t1)
	}
	if fg.back < 0 {
		fg.backAl = -1
	}
	return fg
}

// traceDir, when set (BENCH_KEEP=1), receives every round's calls.
var traceDir string

// writeTrace writes ops as "worker start end node error", times in seconds from the
// fault (the heal at t1 is in the header).
func writeTrace(path string, ops []op, t0, t1 time.Time) {
	var b strings.Builder
	fmt.Fprintf(&b, "# fault at 0, healed at %.3f\n", t1.Sub(t0).Seconds())
	for _, o := range ops {
		e := o.err
		if e == "" {
			e = "-"
		}
		fmt.Fprintf(&b, "%d\t%.3f\t%.3f\t%d\t%s\n", o.worker, o.start.Sub(t0).Seconds(), o.end.Sub(t0).Seconds(), o.node, e)
	}
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		logf("trace: %v", err)
	}
}

func slug(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '_'
	}, s)
}
