package main

// The record of a story and what is printed from it: the timeline and the summary. Pure
// functions of the record (no server, no clock), so report_test.go checks them on
// synthetic stories.

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// request is one call of a workload: a read (SELECT @@port) or a write (INSERT).
type request struct {
	worker  int
	seq     int           // a write's number among its worker's writes (its row's key)
	start   time.Duration // since the workload began
	latency time.Duration // until the call returned (for a retried read, both attempts)
	node    int           // the node that served it (1 to 3); 0 when it failed or is unknown
	err     string        // "" when it succeeded, else the error's kind (see errKind)
	errText string        // the error on one line, the nodes named
	retried bool          // a read whose first attempt got a FailoverError and ran again
	lost    bool          // a write acknowledged by node1 that node2 never got (async replication)
}

func (r request) end() time.Duration { return r.start + r.latency }

// markKind says what a mark on the timeline is.
type markKind int

const (
	markKill     markKind = iota + 1 // the demo killed node1
	markPromote                      // the "orchestrator" made node2 writable
	markRepoint                      // node3 replicates from node2 now
	markRestart                      // the demo starts node1 again
	markBack                         // node1 answers again
	markSwitch                       // the driver moved the pool
	markFallBack                     // the driver returned the pool to node1
)

// mark is a moment of a story's timeline: something the demo did or the driver reported.
type mark struct {
	at    time.Duration
	kind  markKind
	text  string // the timeline's line
	label string // the chart's label; "" for the kind's own
}

// story is everything recorded about one of the two stories.
type story struct {
	num    int
	short  string // "reads" or "writes": what its requests are
	title  string
	dsn    string // redacted
	load   string // the workload, one line
	end    time.Duration
	reqs   []request     // by start time
	marks  []mark        // by time
	fbFail []fallBackTry // the driver's failed fall-back attempts
	// writes only: rows found at the end
	rows2, rows3 int64 // rows on node2 (the new primary) and node3 (its replica; -1: not counted)
	repointErr   string
}

// fallBackTry is a failed attempt to return to node1; readOnly: node1 answered but is
// read-only (a role rejection), else it did not answer.
type fallBackTry struct {
	at       time.Duration
	readOnly bool
}

// markAt returns the time of the first mark of kind k, and whether there is one.
func (s *story) markAt(k markKind) (time.Duration, bool) {
	for _, m := range s.marks {
		if m.kind == k {
			return m.at, true
		}
	}
	return 0, false
}

// sortRecords puts requests and marks in time order.
func (s *story) sortRecords() {
	sort.SliceStable(s.reqs, func(i, j int) bool { return s.reqs[i].start < s.reqs[j].start })
	sort.SliceStable(s.marks, func(i, j int) bool { return s.marks[i].at < s.marks[j].at })
	sort.SliceStable(s.fbFail, func(i, j int) bool { return s.fbFail[i].at < s.fbFail[j].at })
}

// secs renders a time of the timeline, "2.004s".
func secs(d time.Duration) string { return fmt.Sprintf("%.3fs", d.Seconds()) }

// ms renders a duration in milliseconds, or seconds from 1 s on.
func ms(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2f s", d.Seconds())
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	default:
		return fmt.Sprintf("%.1f ms", float64(d)/float64(time.Millisecond))
	}
}

// plural returns "1 read" or "2 reads".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}

// timeline is the story's timeline: each mark, and under it what happened until the next
// one: the requests that started in between (where they ran, what failed, how long they
// took) and the driver's failed attempts to return to node1.
func timeline(s *story) []string {
	var out []string
	add := func(at, text string) {
		out = append(out, wrap(text, 100, fmt.Sprintf("  %9s  ", at), strings.Repeat(" ", 15))...)
	}
	add(secs(0), "start: node1 is the primary")
	bounds := []time.Duration{0}
	for _, m := range s.marks {
		bounds = append(bounds, m.at)
	}
	bounds = append(bounds, max(s.end, bounds[len(bounds)-1]))
	for i := 0; i+1 < len(bounds); i++ {
		if i > 0 {
			add(secs(bounds[i]), s.marks[i-1].text)
		}
		for _, line := range phase(s, bounds[i], bounds[i+1], i+1 == len(bounds)-1) {
			add("", line)
		}
	}
	return out
}

// placed is when the timeline counts a request: when it began, but a request in flight
// at the kill that failed (or, a read, ran again) counts from the kill, so that its
// failure shows after the kill.
func placed(s *story, r request) time.Duration {
	if kill, ok := s.markAt(markKill); ok && (r.err != "" || r.retried) && r.start < kill && r.end() >= kill {
		return kill
	}
	return r.start
}

// phase describes the requests that started in [from, to) (to included when last), and
// the failed fall-back attempts in it.
func phase(s *story, from, to time.Duration, last bool) []string {
	in := func(t time.Duration) bool { return t >= from && (t < to || last && t == to) }
	var reqs []request
	for _, r := range s.reqs {
		if in(placed(s, r)) {
			reqs = append(reqs, r)
		}
	}
	var down, ro int
	for _, f := range s.fbFail {
		if in(f.at) {
			if f.readOnly {
				ro++
			} else {
				down++
			}
		}
	}
	var out []string
	if len(reqs) > 0 {
		out = append(out, requestsLine(s, reqs))
	}
	if down > 0 {
		out = append(out, fmt.Sprintf("%s to node1 failed: it does not answer", plural(down, "fall-back attempt")))
	}
	if ro > 0 {
		out = append(out, fmt.Sprintf("%s to node1 refused: it answers, but read-only (not the writer)",
			plural(ro, "fall-back attempt")))
	}
	return out
}

// requestsLine is "235 reads, all on node2, 0 errors; latency median 0.5 ms, max 92 ms".
func requestsLine(s *story, reqs []request) string {
	perNode := map[int]int{}
	errs := map[string]int{}
	var lat []time.Duration
	retried, failed := 0, 0
	for _, r := range reqs {
		lat = append(lat, r.latency)
		if r.retried {
			retried++
		}
		if r.err != "" {
			errs[r.err]++
			failed++
			continue
		}
		perNode[r.node]++
	}
	var where []string
	for n := 0; n <= 3; n++ {
		if perNode[n] == 0 {
			continue
		}
		name := fmt.Sprint("node", n)
		if n == 0 {
			name = "an unknown node"
		}
		switch {
		case len(reqs) == 1:
			where = append(where, "on "+name)
		case perNode[n] == len(reqs):
			where = append(where, "all on "+name)
		default:
			where = append(where, fmt.Sprintf("%d on %s", perNode[n], name))
		}
	}
	line := plural(len(reqs), strings.TrimSuffix(shortOf(s), "s"))
	switch {
	case failed == len(reqs):
		line += ", all failed: " + kindsText(errs)
	case failed == 0 && len(where) == 1:
		line += ", " + where[0] + ", 0 errors"
	case failed == 0:
		line += ": " + strings.Join(where, ", ") + ", 0 errors"
	default:
		line += ": " + strings.Join(where, ", ") + fmt.Sprintf(", %d failed (%s)", failed, kindsText(errs))
	}
	if retried > 0 {
		line += fmt.Sprintf("; %d retried after a FailoverError", retried)
	}
	slices.Sort(lat)
	return line + fmt.Sprintf("; latency median %s, max %s", ms(lat[len(lat)/2]), ms(lat[len(lat)-1]))
}

func shortOf(s *story) string {
	if s.short == "" {
		return "requests"
	}
	return s.short
}

// kindsText is "NoHostAvailableError 7, FailoverError 1", the most frequent first.
func kindsText(errs map[string]int) string {
	ks := sortedKeys(errs)
	sort.SliceStable(ks, func(i, j int) bool { return errs[ks[i]] > errs[ks[j]] })
	var parts []string
	for _, k := range ks {
		parts = append(parts, fmt.Sprintf("%s %d", k, errs[k]))
	}
	return strings.Join(parts, ", ")
}

func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// readResult is what story 1 found.
type readResult struct {
	total, failed, retried int
	kill                   time.Duration
	firstAway              time.Duration // first read served by a replica after the kill (end time)
	awayNode               int
	back                   time.Duration // node1 answered again
	fallBack               time.Duration // first read served by node1 after it answered again
	recovered, fellBack    bool
}

func readOutcome(s *story) readResult {
	var r readResult
	r.kill, _ = s.markAt(markKill)
	back, hasBack := s.markAt(markBack)
	r.back = back
	for _, q := range s.reqs {
		r.total++
		if q.retried {
			r.retried++
		}
		if q.err != "" {
			r.failed++
			continue
		}
		if !r.recovered && q.node > 1 && q.end() > r.kill {
			r.recovered, r.firstAway, r.awayNode = true, q.end(), q.node
		}
		if hasBack && !r.fellBack && q.node == 1 && q.start >= back {
			r.fellBack, r.fallBack = true, q.end()
		}
	}
	return r
}

// readSummary is story 1's summary lines, and whether it went as it should: every read
// answered, the pool left node1 and came back.
func readSummary(s *story) ([]string, bool) {
	r := readOutcome(s)
	ok := r.failed == 0 && r.recovered && r.fellBack
	out := []string{fmt.Sprintf("%d reads, %d errors.", r.total, r.failed)}
	if r.recovered {
		out = append(out, fmt.Sprintf("node1 was killed at %s; %s later a read was answered by node%d, a read-only replica.",
			secs(r.kill), ms(r.firstAway-r.kill), r.awayNode))
	} else {
		out = append(out, "!! no read was answered by a replica after the kill")
	}
	if r.fellBack {
		out = append(out, fmt.Sprintf("node1 answered again at %s; %s later reads were back on it (the fall-back).",
			secs(r.back), ms(r.fallBack-r.back)))
	} else {
		out = append(out, "!! reads never returned to node1 after it came back")
	}
	if r.retried > 0 {
		each := "each"
		if r.retried == 1 {
			each = "it"
		}
		out = append(out, fmt.Sprintf("%s sent to node1 as it died got a *failover.FailoverError (\"may have run\"); a read",
			plural(r.retried, "read")),
			"  changes nothing when it runs again, so SafeToRetry says RetryStatement and the demo ran",
			fmt.Sprintf("  %s again at once, on the new host, as an app should.", each))
	}
	if r.failed > 0 {
		out = append(out, fmt.Sprintf("!! %s failed; the timeline and demo.log say why", plural(r.failed, "read")))
	}
	return out, ok
}

// writeResult is what story 2 found.
type writeResult struct {
	total, failed, ackTotal int
	kill, promote           time.Duration
	hasPromote              bool
	firstOK                 time.Duration // first write served by node2 (end time)
	resumed                 bool
	inWindow                int            // failed writes begun between the kill and the promotion
	after                   int            // failed writes begun before the kill or after the promotion: unexpected
	kinds                   map[string]int // the errors of the failed writes, by kind
	lost                    int            // acknowledged by node1, never reached node2
	missing                 int            // acknowledged after node1 died, not on node2: unexpected
	ranAnyway               int            // failed writes whose row is on node2 all the same
	waited                  int            // writes begun before the promotion that succeeded on node2
	waitedUntil             time.Duration  // when the last of those returned
}

func writeOutcome(s *story) writeResult {
	w := writeResult{kinds: map[string]int{}}
	w.kill, _ = s.markAt(markKill)
	w.promote, w.hasPromote = s.markAt(markPromote)
	for _, q := range s.reqs {
		w.total++
		if q.err == "" {
			w.ackTotal++
			switch {
			case q.lost:
				w.lost++
			case q.node == 0:
				w.missing++
			}
			if q.node == 2 && q.end() > w.kill && (!w.resumed || q.end() < w.firstOK) {
				w.resumed, w.firstOK = true, q.end()
			}
			if w.hasPromote && q.node == 2 && q.start < w.promote && q.end() > w.promote {
				w.waited++
				w.waitedUntil = max(w.waitedUntil, q.end())
			}
			continue
		}
		w.failed++
		w.kinds[q.err]++
		if q.node != 0 {
			w.ranAnyway++
		}
		if q.end() >= w.kill && (!w.hasPromote || q.start < w.promote) {
			w.inWindow++
		} else {
			w.after++
		}
	}
	return w
}

// writeSummary is story 2's summary lines, and whether it went as it should: writes
// resumed on node2, no write failed but those begun while there was no writer, and every
// write acknowledged after the kill is on node2.
func writeSummary(s *story) ([]string, bool) {
	w := writeOutcome(s)
	ok := w.resumed && w.hasPromote && w.after == 0 && w.missing == 0
	out := []string{fmt.Sprintf("%d writes, %d failed.", w.total, w.failed)}
	if w.hasPromote {
		out = append(out, fmt.Sprintf("node1 was killed at %s and node2 promoted at %s: for %s no server took writes.",
			secs(w.kill), secs(w.promote), ms(w.promote-w.kill)))
	} else {
		out = append(out, "!! node2 was never promoted")
	}
	if w.resumed {
		out = append(out, fmt.Sprintf("Write gap: %s from the kill to the first write that succeeded on node2 (at %s),",
			ms(w.firstOK-w.kill), secs(w.firstOK)),
			fmt.Sprintf("  %s after the promotion.", ms(w.firstOK-w.promote)))
	} else {
		out = append(out, "!! no write succeeded on node2")
	}
	if w.waited > 0 {
		out = append(out, fmt.Sprintf("%s waiting for a writer at the promotion succeeded on node2, within %s of it.",
			plural(w.waited, "write"), ms(w.waitedUntil-w.promote)))
	}
	if w.failed > 0 {
		out = append(out, fmt.Sprintf("Failed writes: %d begun while no server took writes (%s);",
			w.inWindow, kindsText(w.kinds)), fmt.Sprintf("  %d at any other time.", w.after))
	} else {
		out = append(out, "Failed writes: 0.")
	}
	if w.after > 0 {
		out = append(out, fmt.Sprintf("!! %s begun outside that window failed; the timeline and demo.log say why",
			plural(w.after, "write")))
	}
	line := fmt.Sprintf("Rows: %d writes acknowledged; node2 has %d rows", w.ackTotal, s.rows2)
	if s.rows3 >= 0 {
		line += fmt.Sprintf(", node3 (node2's replica now) %d", s.rows3)
	}
	out = append(out, line+".")
	if w.ranAnyway > 0 {
		out = append(out, fmt.Sprintf("%s that failed with \"may have run\" did run on node1 before it died (the row is on node2).",
			plural(w.ranAnyway, "write")))
	}
	if w.lost > 0 {
		out = append(out, fmt.Sprintf("%s acknowledged by node1 just before it died never reached node2: replication is",
			plural(w.lost, "write")), "  asynchronous; semi-synchronous replication closes that gap.")
	}
	if w.missing > 0 {
		out = append(out, fmt.Sprintf("!! %s acknowledged after node1 died are not on node2", plural(w.missing, "write")))
	}
	if s.repointErr != "" {
		out = append(out, "note: node3 did not follow node2: "+s.repointErr)
	}
	return out, ok
}

// finalSummary is the closing text for a newcomer: what failed, why that is correct, the
// numbers.
func finalSummary(reads, writes *story) []string {
	r := readOutcome(reads)
	w := writeOutcome(writes)
	out := []string{
		fmt.Sprintf("Story 1, reads:  %d of %d answered, %d errors. The primary's death cost the readers %s, once;",
			r.total-r.failed, r.total, r.failed, gapText(r.recovered, r.firstAway-r.kill)),
		fmt.Sprintf("                 reads were back on node1 %s after it answered again.", gapText(r.fellBack, r.fallBack-r.back)),
	}
	if w.failed == 0 {
		out = append(out, fmt.Sprintf("Story 2, writes: %d of %d succeeded, none failed.", w.total, w.total))
	} else {
		which := fmt.Sprintf("The %d that failed all", w.failed)
		if w.after > 0 {
			which = fmt.Sprintf("Of the %d that failed, %d", w.failed, w.inWindow)
		}
		out = append(out,
			fmt.Sprintf("Story 2, writes: %d of %d succeeded. %s began in the %s with no", w.total-w.failed, w.total,
				which, ms(w.promote-w.kill)),
			"                 writable server, between the kill and the promotion.")
		if w.after > 0 {
			out = append(out, fmt.Sprintf("                 !! %d failed at other times.", w.after))
		}
	}
	out = append(out,
		fmt.Sprintf("                 Writes resumed %s after the kill, %s after node2 was promoted.",
			gapText(w.resumed, w.firstOK-w.kill), gapText(w.resumed, w.firstOK-w.promote)),
		"",
		"Why those failed writes are correct: from the kill to the promotion every live server was a",
		"read-only replica, and a replica must not take writes. targetSessionAttrs=read-write makes the",
		"driver wait for a writable server (read_only=OFF) instead of sending writes to a replica, which",
		"would refuse each one with MySQL error 1290, as story 1's DSN would. A write waits until its own",
		"deadline (1 s here), then fails with *failover.NoHostAvailableError, which names every host and",
		"why it was not used; nothing was sent, so mysqlfailover.SafeToRetry says RetryStatement. A write",
		"sent to node1 as it died fails with *failover.FailoverError: it may have run. Once node2 is",
		"writable, the driver's next pass over the hosts (passes are 250 ms apart) finds it: no restart,",
		"no new DSN, no code change.",
	)
	return out
}

func gapText(ok bool, d time.Duration) string {
	if !ok {
		return "(never)"
	}
	return ms(d)
}

// errorExamples shows the first failed request of each error kind, wrapped to lines of
// about 100 characters.
func errorExamples(s *story) []string {
	seen := map[string]bool{}
	var out []string
	for _, r := range s.reqs {
		if r.err == "" || seen[r.err] {
			continue
		}
		seen[r.err] = true
		out = append(out, wrap(fmt.Sprintf("at %s: %s", secs(r.start), r.errText), 100, "    ", "      ")...)
	}
	return out
}

// wrap breaks text at spaces into lines of at most width characters (longer words stay
// whole), the first prefixed with first, the others with rest.
func wrap(text string, width int, first, rest string) []string {
	var out []string
	line := first
	empty := true
	for _, word := range strings.Fields(text) {
		if !empty && len(line)+1+len(word) > width {
			out = append(out, line)
			line, empty = rest, true
		}
		if !empty {
			line += " "
		}
		line += word
		empty = false
	}
	if !empty {
		out = append(out, line)
	}
	return out
}

// chartSubtitle is the line under a panel's title: the workload and its outcome.
func chartSubtitle(s *story) string {
	if s.short == "writes" {
		w := writeOutcome(s)
		line := fmt.Sprintf("%d writers, INSERT every %v each: %d writes, %d failed", workers, period, w.total, w.failed)
		if w.failed > 0 && w.after == 0 {
			line += ", all while no server took writes"
		}
		if w.resumed && w.hasPromote {
			line += fmt.Sprintf("; resumed %s after the promotion", ms(w.firstOK-w.promote))
		}
		return line
	}
	r := readOutcome(s)
	return fmt.Sprintf("%d readers, SELECT @@port every %v each: %d reads, %d errors", workers, period, r.total, r.failed)
}
