package main

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// report is the whole run, printed as markdown.
type report struct {
	s                     settings
	began                 time.Time
	loadBefore, loadAfter string
	goVersion             string
	cpus                  int
	variants              []*variantResult
}

func (r *report) markdown() string {
	var b strings.Builder
	lbl := ""
	if r.s.label != "" {
		lbl = " (" + r.s.label + ")"
	}
	fmt.Fprintf(&b, "### Fleet run%s\n\n", lbl)
	fmt.Fprintln(&b, "| | |")
	fmt.Fprintln(&b, "|---|---|")
	fmt.Fprintf(&b, "| started | %s |\n", r.began.UTC().Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(&b, "| took | %v |\n", time.Since(r.began).Round(time.Second))
	fmt.Fprintf(&b, "| load average (1, 5, 15 min) | before %s; after %s |\n", r.loadBefore, r.loadAfter)
	if len(r.variants) > 0 {
		via := "the instances dial them directly"
		if r.s.via == "proxy" {
			via = "the instances go through toxiproxy"
		}
		fmt.Fprintf(&b, "| server | %s, 3 nodes, %s, max_connections=5000 |\n", r.variants[0].version, via)
	}
	fmt.Fprintf(&b, "| Go | %s, %d CPUs |\n", r.goVersion, r.cpus)
	fmt.Fprintf(&b, "| instances | %d processes, each SetMaxOpenConns(%d), SetMaxIdleConns(%d) |\n", r.s.n, poolSize, poolSize)
	fmt.Fprintf(&b, "| phases | %s; window %v; load %d statements/s per instance; failover writes every %v |\n\n",
		strings.Join(r.s.phases, ", "), r.s.window, r.s.rate, r.s.every)
	for _, v := range r.variants {
		v.markdown(&b, r.s, lbl)
	}
	return b.String()
}

func (v *variantResult) markdown(b *strings.Builder, s settings, lbl string) {
	name := fmt.Sprintf("%s: `%s`%s", v.v.name, v.v.opts, lbl)
	if len(v.cold) > 0 {
		fmt.Fprintf(b, "#### Cold start, %d instances at once, %s\n\n", s.n, name)
		fmt.Fprintln(b, "| run | pools all on node 1 | pools with a session off node 1 | pools whose Active is not node 1 | sessions on node 1 / 2 / 3 | failed opens | open p50 | open p90 | open max |")
		fmt.Fprintln(b, "|---|---|---|---|---|---|---|---|---|")
		for i, cr := range v.cold {
			on, off, act, perHost, failed, ms := cr.counts()
			fmt.Fprintf(b, "| %d | %d | %d | %d | %s | %d | %s | %s | %s |\n", i+1, on, off, act, perHost, failed,
				msPct(ms, 50), msPct(ms, 90), msPct(ms, 100))
		}
		fmt.Fprintln(b)
		for i, cr := range v.cold {
			for _, e := range cr.errors() {
				fmt.Fprintf(b, "- run %d: %s\n", i+1, e)
			}
		}
		fmt.Fprintln(b)
	}
	for _, w := range []struct {
		title string
		r     *windowResult
	}{{"Idle (warmed pools, no traffic)", v.idle}, {fmt.Sprintf("Under load (%d statements/s per instance)", s.rate), v.load}} {
		if w.r == nil {
			continue
		}
		fmt.Fprintf(b, "#### %s, %d instances, %s\n\n", w.title, s.n, name)
		w.r.markdown(b, s.n)
	}
	if v.failover != nil {
		fo := v.failover
		fmt.Fprintf(b, "#### Failover (kill -9 of node 1, node 2 promoted), %d instances writing every %v, %s\n\n", s.n, s.every, name)
		toProm, toKill, none, writes, fails := fo.figures()
		fmt.Fprintf(b, "Promotion (node 2 read_only=0) %v after the kill. %d writes, %d failed; %d instances with no successful write within %v of the kill.\n\n",
			fo.promoted.Sub(fo.kill).Round(time.Millisecond), writes, fails, none, s.outage)
		fmt.Fprintln(b, "| first successful write after | p50 | p90 | p99 | max |")
		fmt.Fprintln(b, "|---|---|---|---|---|")
		fmt.Fprintf(b, "| the promotion | %s | %s | %s | %s |\n", msPct(toProm, 50), msPct(toProm, 90), msPct(toProm, 99), msPct(toProm, 100))
		fmt.Fprintf(b, "| the kill | %s | %s | %s | %s |\n\n", msPct(toKill, 50), msPct(toKill, 90), msPct(toKill, 99), msPct(toKill, 100))
		if errs := fo.errors(); len(errs) > 0 {
			fmt.Fprintln(b, "The failed writes' errors, most frequent first (all instances):")
			fmt.Fprintln(b)
			for _, e := range errs {
				fmt.Fprintf(b, "- %s\n", e)
			}
			fmt.Fprintln(b)
		}
	}
}

func (w *windowResult) markdown(b *strings.Builder, n int) {
	fmt.Fprintln(b, "| host | Threads_connected | app sessions (PROCESSLIST) | app sessions per instance | statements/s | statements/s per instance | connects/s | server CPU, % of one core | server CPU ms per 1,000 statements |")
	fmt.Fprintln(b, "|---|---|---|---|---|---|---|---|---|")
	var sessions, stmts, cpu, conns float64
	for _, h := range w.hosts {
		if h.err != "" && h.secs == 0 {
			fmt.Fprintf(b, "| node %d | %s | | | | | | | |\n", h.node, h.err)
			continue
		}
		rate := float64(h.questions) / h.secs
		sessions += h.appRows
		stmts += rate
		cpu += h.cpu
		conns += float64(h.connects) / h.secs
		fmt.Fprintf(b, "| node %d | %.0f | %.0f | %.2f | %.1f | %.3f | %.1f | %.1f | %s |\n", h.node, h.threads, h.appRows, h.appRows/float64(n),
			rate, rate/float64(n), float64(h.connects)/h.secs, 100*h.cpu/h.secs, perK(h.cpu, float64(h.questions)))
	}
	secs := w.secs
	fmt.Fprintf(b, "| all | | %.0f | %.2f | %.1f | %.3f | %.1f | %.1f | %s |\n\n", sessions, sessions/float64(n), stmts, stmts/float64(n),
		conns, 100*cpu/secs, perK(cpu, stmts*secs))
	fmt.Fprintf(b, "The instances themselves: %.1f%% of one core all together (%.2f%% each), %.1f MB resident each (mean). "+
		"The parent process (the meter, and the toxiproxy proxies, which carry the sessions with -via proxy): %.1f%% of one core.\n\n",
		100*w.instCPU/w.secs, 100*w.instCPU/w.secs/float64(n), w.rssMB, 100*w.selfCPU/w.secs)
	fmt.Fprintf(b, "Pools that failed over during the window (Stats().Failovers, no fault injected): %d, %d failovers.\n\n", w.movers, w.moves)
}

// perK is CPU ms per 1,000 statements.
func perK(cpuSecs, stmts float64) string {
	if stmts < 1 {
		return "-"
	}
	return fmt.Sprintf("%.1f", 1000*cpuSecs/stmts*1000)
}

// counts: pools whose 4 sessions are all on node 1 (the healthy primary), pools with a
// session elsewhere, pools whose Active is not node 1, sessions per host, failed opens,
// open times.
func (cr coldRun) counts() (on, off, notActive int, perHost string, failed int, ms []float64) {
	hostCount := map[string]int{}
	for _, m := range cr.opens {
		ms = append(ms, m.Ms)
		if m.Err != "" {
			failed++
		}
		all := true
		for _, h := range m.Hosts {
			hostCount[h]++
			if h != cr.primary {
				all = false
			}
		}
		if all && m.Err == "" {
			on++
		} else {
			off++
		}
		if m.Active != cr.primary {
			notActive++
		}
	}
	var parts []string
	for _, a := range cr.addrs {
		parts = append(parts, fmt.Sprint(hostCount[a]))
	}
	return on, off, notActive, strings.Join(parts, " / "), failed, ms
}

// errors are the failed opens' errors, counted by their shape (normalise), most
// frequent first: "12 x text".
func (cr coldRun) errors() []string {
	n := map[string]int{}
	for _, m := range cr.opens {
		if m.Err != "" {
			n[normalise(m.Err, cr.addrs)]++
		}
	}
	return topTexts(n, 6)
}

// durationRE matches a duration as Go prints it, passesRE a walk's pass count.
var (
	durationRE = regexp.MustCompile(`\b[0-9]+(\.[0-9]+)?(ns|µs|ms|s|m)\b`)
	passesRE   = regexp.MustCompile(`after [0-9]+ passes`)
)

// normalise makes error texts that differ only by durations and pass counts one text,
// names hosts by node (addrs in node order), and cuts it at 400 bytes.
func normalise(e string, addrs []string) string {
	for i, a := range addrs {
		e = strings.ReplaceAll(e, a, fmt.Sprintf("node%d", i+1))
	}
	e = durationRE.ReplaceAllString(e, "D")
	e = passesRE.ReplaceAllString(e, "after N passes")
	if len(e) > 400 {
		e = e[:400] + "..."
	}
	return e
}

// topTexts are the texts of n by count, most frequent first, at most max of them (then a
// line for the rest): "12 x `text`".
func topTexts(n map[string]int, limit int) []string {
	keys := slices.Collect(maps.Keys(n))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(n[b]-n[a], strings.Compare(a, b)) })
	var out []string
	rest := 0
	for i, k := range keys {
		if i >= limit {
			rest += n[k]
			continue
		}
		out = append(out, fmt.Sprintf("%d x `%s`", n[k], k))
	}
	if rest > 0 {
		out = append(out, fmt.Sprintf("%d more of %d other texts", rest, len(keys)-limit))
	}
	return out
}

func (cr coldRun) summary(*harness.Cluster) string {
	on, off, act, per, failed, ms := cr.counts()
	return fmt.Sprintf("%d pools on node 1, %d with a session elsewhere, %d Active elsewhere, sessions %s, %d failed, open p50 %s max %s",
		on, off, act, per, failed, msPct(ms, 50), msPct(ms, 100))
}

func (w *windowResult) summary() string {
	var parts []string
	for _, h := range w.hosts {
		if h.secs == 0 {
			parts = append(parts, fmt.Sprintf("node %d: %s", h.node, h.err))
			continue
		}
		parts = append(parts, fmt.Sprintf("node %d: %.0f app sessions, %.1f statements/s, %.1f connects/s, CPU %.1f%%", h.node, h.appRows,
			float64(h.questions)/h.secs, float64(h.connects)/h.secs, 100*h.cpu/h.secs))
	}
	return strings.Join(parts, "; ") + fmt.Sprintf("; instances %.1f%% CPU, %.1f MB each; %d pools failed over (%d times)",
		100*w.instCPU/w.secs, w.rssMB, w.movers, w.moves)
}

// figures: per instance, ms from the promotion and from the kill to its first write;
// instances with none; all writes and failed ones.
func (fo *failoverResult) figures() (toProm, toKill []float64, none int, writes, fails int64) {
	for _, m := range fo.reports {
		writes += m.Writes
		fails += m.Fails
		if m.First == 0 {
			none++
			continue
		}
		first := time.Unix(0, m.First)
		toProm = append(toProm, float64(first.Sub(fo.promoted).Microseconds())/1000)
		toKill = append(toKill, float64(first.Sub(fo.kill).Microseconds())/1000)
	}
	return
}

// errors are the failed writes' errors over every instance, by shape (normalise), most
// frequent first.
func (fo *failoverResult) errors() []string {
	n := map[string]int{}
	for _, m := range fo.reports {
		for e, k := range m.Errs {
			n[normalise(e, fo.addrs)] += k
		}
	}
	return topTexts(n, 6)
}

func (fo *failoverResult) summary() string {
	toProm, toKill, none, writes, fails := fo.figures()
	return fmt.Sprintf("promoted %v after the kill; first write after promotion p50 %s p99 %s max %s; after kill p50 %s max %s; %d without; %d writes, %d failed",
		fo.promoted.Sub(fo.kill).Round(time.Millisecond), msPct(toProm, 50), msPct(toProm, 99), msPct(toProm, 100),
		msPct(toKill, 50), msPct(toKill, 100), none, writes, fails)
}

// msPct is the p-th percentile (nearest rank) of ms, as "12 ms"; "-" for none.
func msPct(ms []float64, p float64) string {
	if len(ms) == 0 {
		return "-"
	}
	s := slices.Clone(ms)
	slices.Sort(s)
	i := int(math.Ceil(p/100*float64(len(s)))) - 1
	i = max(0, min(i, len(s)-1))
	return fmt.Sprintf("%.0f ms", s[i])
}
