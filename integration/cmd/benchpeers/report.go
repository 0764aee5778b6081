//go:build linux

package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"sort"
	"strings"
	"time"
)

type reportInput struct {
	s                     settings
	began                 time.Time
	took                  time.Duration
	loadBefore, loadAfter string
	version, haproxy      string
	java, javaNote        string
	paths                 []latPath
	lat                   map[string]map[string][]latResult
	clients               []client
	results               map[string]map[int]map[string][]figures
	skipped               []string
}

func report(in reportInput) {
	w := os.Stdout
	fmt.Fprintf(w, "### Run\n\n")
	fmt.Fprintf(w, "| | |\n|---|---|\n")
	fmt.Fprintf(w, "| started | %s |\n", in.began.UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(w, "| took | %v |\n", in.took.Round(time.Second))
	fmt.Fprintf(w, "| machine | %s, %d CPUs, %s |\n", cpuModel(), runtime.NumCPU(), kernel())
	fmt.Fprintf(w, "| load average (1, 5, 15 min) | before %s; after %s |\n", in.loadBefore, in.loadAfter)
	fmt.Fprintf(w, "| servers | %s, 2 nodes (primary, 1 replica) |\n", in.version)
	fmt.Fprintf(w, "| Go | %s |\n", runtime.Version())
	fmt.Fprintf(w, "| HAProxy | %s |\n", in.haproxy)
	if in.java != "" && in.javaNote == "" {
		fmt.Fprintf(w, "| Connector/J | %s |\n", in.java)
	}
	if in.javaNote != "" {
		fmt.Fprintf(w, "| Connector/J | %s |\n", in.javaNote)
	}
	mode := "full"
	if in.s.quick {
		mode = "quick (BENCH_QUICK=1)"
	}
	fmt.Fprintf(w, "| mode | %s: %d latency rounds of %v per path and statement; %d fault rounds, workers %v, fault held %v, fall-back watched %v |\n",
		mode, in.s.latRounds, in.s.benchtime, in.s.repeat, in.s.workers, in.s.hold, in.s.window)
	fmt.Fprintln(w)

	// Latency.
	fmt.Fprintf(w, "### Per-statement latency, one connection, node 1\n\n")
	fmt.Fprintf(w, "Median over %d interleaved rounds (min-max); ratio to go-sql-driver within each round.\n\n", in.s.latRounds)
	fmt.Fprintf(w, "| path | statement | µs/op | ratio to go-sql-driver | client CPU µs/op | CPU ratio | allocs/op | B/op |\n|---|---|---|---|---|---|---|---|\n")
	base := in.paths[0].label
	for _, p := range in.paths {
		for _, stmt := range latStmts {
			rs := in.lat[p.label][stmt]
			bs := in.lat[base][stmt]
			var us, ratio, cpu, cpuRatio, allocs, bytes []float64
			for r := range rs {
				us = append(us, rs[r].nsPerOp/1000)
				ratio = append(ratio, rs[r].nsPerOp/bs[r].nsPerOp)
				cpu = append(cpu, rs[r].cpuPerOp/1000)
				cpuRatio = append(cpuRatio, rs[r].cpuPerOp/bs[r].cpuPerOp)
				allocs = append(allocs, rs[r].allocs)
				bytes = append(bytes, rs[r].bytes)
			}
			a, b, c, cr := "n/a (JVM)", "n/a (JVM)", "n/a (JVM)", "n/a"
			if p.driver != "" {
				a, b = fmt.Sprintf("%.0f", median(allocs)), fmt.Sprintf("%.0f", median(bytes))
				c, cr = spread(cpu, "%.1f"), spread(cpuRatio, "%.2f")
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s |\n", p.label, stmt, spread(us, "%.1f"), spread(ratio, "%.2f"), c, cr, a, b)
		}
	}
	fmt.Fprintln(w)

	// Faults.
	for _, f := range faults {
		via := "straight to the servers"
		if f.proxied {
			via = "through the toxiproxy proxies"
		}
		fmt.Fprintf(w, "### %s of the primary (clients %s)\n\n", f.name, via)
		fmt.Fprintf(w, "Seconds; median over %d rounds (min-max). \"—\": not within the phase (fault held %v, fall-back watched %v).\n\n",
			in.s.repeat, in.s.hold, in.s.window)
		fmt.Fprintf(w, "| client | workers | first success elsewhere | every worker | caller errors | longest call | back on node 1: first call | all calls |\n|---|---|---|---|---|---|---|---|\n")
		kinds := map[string]map[string]int{}
		for _, cl := range in.clients {
			for _, wk := range in.s.workers {
				figs := in.results[f.name][wk][cl.name()]
				var first, all, errs, longest, back, backAll []float64
				warn := ""
				for _, fg := range figs {
					first = append(first, secs(fg.first))
					all = append(all, secs(fg.all))
					errs = append(errs, float64(fg.errors))
					longest = append(longest, secs(fg.longest))
					back = append(back, secs(fg.back))
					backAll = append(backAll, secs(fg.backAl))
					if !fg.before {
						warn = " †"
					}
					if kinds[cl.name()] == nil {
						kinds[cl.name()] = map[string]int{}
					}
					for k, n := range fg.kinds {
						kinds[cl.name()][k] += n
					}
				}
				fmt.Fprintf(w, "| %s%s | %d | %s | %s | %s | %s | %s | %s |\n", cl.name(), warn, wk,
					spread(first, "%.2f"), spread(all, "%.2f"), spread(errs, "%.0f"), spread(longest, "%.2f"),
					spread(back, "%.2f"), spread(backAll, "%.2f"))
			}
		}
		fmt.Fprintf(w, "\nCaller errors by kind (all rounds and worker counts):\n\n")
		for _, cl := range in.clients {
			k := kinds[cl.name()]
			if len(k) == 0 {
				fmt.Fprintf(w, "- %s: none\n", cl.name())
				continue
			}
			names := make([]string, 0, len(k))
			for n := range k {
				names = append(names, n)
			}
			sort.Slice(names, func(i, j int) bool { return k[names[i]] > k[names[j]] })
			parts := make([]string, len(names))
			for i, n := range names {
				parts[i] = fmt.Sprintf("%s %d", n, k[n])
			}
			fmt.Fprintf(w, "- %s: %s\n", cl.name(), strings.Join(parts, ", "))
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "†: in at least one round, not every worker of this client was on node 1 before the fault.\n")
	for _, m := range in.skipped {
		fmt.Fprintf(w, "\nSkipped (a client could not start, so the round counts for no client): %s\n", m)
	}
}

// secs is d in seconds, +Inf for "not within the phase" (d < 0).
func secs(d time.Duration) float64 {
	if d < 0 {
		return math.Inf(1)
	}
	return d.Seconds()
}

// spread is "median (min-max)", or the value alone for one round; +Inf prints as "—".
func spread(xs []float64, format string) string {
	if len(xs) == 0 {
		return "?"
	}
	v := func(x float64) string {
		if math.IsInf(x, 1) {
			return "—"
		}
		return fmt.Sprintf(format, x)
	}
	ys := slices.Clone(xs)
	m := median(ys)
	if math.IsNaN(m) {
		m = ys[len(ys)/2]
	}
	if len(ys) == 1 || ys[0] == ys[len(ys)-1] {
		return v(m)
	}
	return fmt.Sprintf("%s (%s-%s)", v(m), v(ys[0]), v(ys[len(ys)-1]))
}

func cpuModel() string {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func kernel() string {
	b, err := os.ReadFile("/proc/sys/kernel/osrelease")
	if err != nil {
		return runtime.GOOS
	}
	return "Linux " + strings.TrimSpace(string(b))
}
