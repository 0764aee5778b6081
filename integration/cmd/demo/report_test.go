package main

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const sec = time.Second

func msd(n float64) time.Duration { return time.Duration(n * float64(time.Millisecond)) }

// synthReads is story 1 as it should go: reads on node1, the kill at 2 s, 3 reads that
// retried after a FailoverError, reads on node2, node1 back at 5.1 s, reads on node1.
func synthReads() *story {
	s := &story{num: 1, short: "reads", title: "Story 1: reads", load: "synthetic readers", end: 7 * sec}
	// In flight at the kill, ran again on node2: the timeline shows it after the kill.
	s.reqs = append(s.reqs, request{worker: 2, start: 2*sec - msd(5), latency: msd(30), node: 2, retried: true})
	for t := time.Duration(0); t < 7*sec; t += 25 * time.Millisecond {
		q := request{worker: 1, start: t, latency: msd(0.6), node: 1}
		switch {
		case t >= 2*sec && t < 2*sec+75*time.Millisecond:
			q.node, q.retried, q.latency = 2, true, msd(40)
		case t >= 2*sec && t < 5150*time.Millisecond:
			q.node = 2
		}
		s.reqs = append(s.reqs, q)
	}
	s.marks = []mark{
		{at: 2 * sec, kind: markKill, text: "demo: kill -9 node1 (the primary)"},
		{at: 2*sec + msd(20), kind: markSwitch, text: "driver: the pool moves node1 -> node2", label: "pool moves to node2"},
		{at: 5 * sec, kind: markRestart, text: "demo: restart node1"},
		{at: 5*sec + msd(100), kind: markBack, text: "node1 answers again"},
		{at: 5*sec + msd(150), kind: markFallBack, text: "driver: the pool returns node2 -> node1"},
	}
	s.fbFail = []fallBackTry{{at: 3 * sec}, {at: 4 * sec}}
	s.sortRecords()
	return s
}

// synthWrites is story 2 as it should go: writes on node1, the kill at 2 s, one write
// in flight fails with a FailoverError, 7 wait for their deadline (NoHostAvailableError),
// node2 promoted at 4 s, writes on node2 from 4.1 s, node1 back read-only.
func synthWrites() *story {
	s := &story{num: 2, short: "writes", title: "Story 2: writes", load: "synthetic writers", end: 7 * sec}
	seq := 0
	add := func(q request) {
		seq++
		q.worker, q.seq = 1, seq
		s.reqs = append(s.reqs, q)
	}
	for t := time.Duration(0); t < 2*sec; t += 25 * time.Millisecond {
		add(request{start: t, latency: msd(1.2), node: 1})
	}
	// In flight at the kill: the timeline shows it after the kill.
	add(request{start: 2*sec - msd(1), latency: sec, err: "FailoverError", errText: "*failover.FailoverError: node1 failed"})
	for k := range 7 {
		add(request{start: 2*sec + msd(5) + time.Duration(k)*250*time.Millisecond, latency: sec,
			err: "NoHostAvailableError", errText: "*failover.NoHostAvailableError: node2: skipped: role is standby"})
	}
	add(request{start: 3*sec + msd(600), latency: msd(600), node: 2}) // waited, then found node2 at 4.2 s
	for t := 4*sec + msd(100); t < 7*sec; t += 25 * time.Millisecond {
		add(request{start: t, latency: msd(1.1), node: 2})
	}
	s.marks = []mark{
		{at: 2 * sec, kind: markKill, text: "demo: kill -9 node1 (the primary)"},
		{at: 4 * sec, kind: markPromote, text: "orchestrator: node2 promoted"},
		{at: 4*sec + msd(1), kind: markRepoint, text: "orchestrator: node3 now replicates from node2"},
		{at: 5 * sec, kind: markRestart, text: "demo: restart node1"},
		{at: 5*sec + msd(100), kind: markBack, text: "node1 answers again, read-only", label: "node1 up, read-only"},
	}
	s.fbFail = []fallBackTry{{at: 4500 * time.Millisecond}, {at: 6 * sec, readOnly: true}}
	s.rows2, s.rows3 = int64(len(s.reqs)-8), int64(len(s.reqs)-8)
	s.sortRecords()
	return s
}

// inOrder fails unless every want is in lines, each after the previous one; runs of
// white space (line breaks and indentation included) count as one space.
func inOrder(t *testing.T, lines []string, want ...string) {
	t.Helper()
	text := strings.Join(strings.Fields(strings.Join(lines, "\n")), " ")
	at := 0
	for _, w := range want {
		w = strings.Join(strings.Fields(w), " ")
		k := strings.Index(text[at:], w)
		if k < 0 {
			t.Fatalf("missing (after byte %d) %q in:\n%s", at, w, strings.Join(lines, "\n"))
		}
		at += k + len(w)
	}
}

func TestTimeline(t *testing.T) {
	lines := timeline(synthReads())
	inOrder(t, lines,
		"0.000s  start: node1 is the primary",
		"80 reads, all on node1, 0 errors; latency median 0.6 ms, max 0.6 ms",
		"2.000s  demo: kill -9 node1 (the primary)",
		"2 reads, all on node2, 0 errors; 2 retried after a FailoverError",
		"2.020s  driver: the pool moves node1 -> node2",
		"2 retried after a FailoverError; latency median 0.6 ms, max 40 ms",
		"2 fall-back attempts to node1 failed: it does not answer",
		"5.000s  demo: restart node1",
		"5.100s  node1 answers again",
		"2 reads, all on node2, 0 errors",
		"5.150s  driver: the pool returns node2 -> node1",
		"74 reads, all on node1, 0 errors",
	)

	lines = timeline(synthWrites())
	inOrder(t, lines,
		"80 writes, all on node1, 0 errors; latency median 1.2 ms, max 1.2 ms",
		"2.000s  demo: kill -9 node1",
		"9 writes: 1 on node2, 8 failed (NoHostAvailableError 7, FailoverError 1); latency median 1.00 s, max 1.00 s",
		"4.000s  orchestrator: node2 promoted",
		"4.001s  orchestrator: node3 now replicates from node2",
		"1 fall-back attempt to node1 failed: it does not answer",
		"5.100s  node1 answers again, read-only",
		"1 fall-back attempt to node1 refused: it answers, but read-only (not the writer)",
	)
}

func TestRequestsLine(t *testing.T) {
	reads := &story{short: "reads"}
	for _, c := range []struct {
		reqs []request
		want string
	}{
		{[]request{{node: 2, latency: msd(1)}}, "1 read, on node2, 0 errors; latency median 1.0 ms, max 1.0 ms"},
		{[]request{{node: 1, latency: msd(1)}, {node: 2, latency: msd(3)}, {node: 2, latency: msd(2)}},
			"3 reads: 1 on node1, 2 on node2, 0 errors; latency median 2.0 ms, max 3.0 ms"},
		{[]request{{err: "FailoverError", latency: sec}, {err: "NoHostAvailableError", latency: sec},
			{err: "NoHostAvailableError", latency: msd(1500)}},
			"3 reads, all failed: NoHostAvailableError 2, FailoverError 1; latency median 1.00 s, max 1.50 s"},
		{[]request{{node: 3, latency: msd(20), retried: true}, {err: "deadline", latency: sec}},
			"2 reads: 1 on node3, 1 failed (deadline 1); 1 retried after a FailoverError; latency median 1.00 s, max 1.00 s"},
	} {
		if got := requestsLine(reads, c.reqs); got != c.want {
			t.Errorf("requestsLine:\n got %s\nwant %s", got, c.want)
		}
	}
}

func TestReadSummary(t *testing.T) {
	lines, ok := readSummary(synthReads())
	if !ok {
		t.Errorf("readSummary: not ok for a story that went well:\n%s", strings.Join(lines, "\n"))
	}
	inOrder(t, lines,
		"281 reads, 0 errors.",
		"node1 was killed at 2.000s; 25 ms later a read was answered by node2",
		"node1 answered again at 5.100s; 50 ms later reads were back on it",
		"4 reads sent to node1 as it died got a *failover.FailoverError",
		"so SafeToRetry says RetryStatement and the demo ran",
	)
	shortLines(t, lines)
	if strings.Contains(strings.Join(lines, "\n"), "!!") {
		t.Errorf("readSummary flags a story that went well:\n%s", strings.Join(lines, "\n"))
	}

	s := synthReads()
	s.reqs[100].err, s.reqs[100].node = "NoHostAvailableError", 0
	lines, ok = readSummary(s)
	if ok {
		t.Errorf("readSummary: ok with a failed read")
	}
	inOrder(t, lines, "281 reads, 1 errors.", "!! 1 read failed")

	s = synthReads()
	for i := range s.reqs {
		if s.reqs[i].start > 5*sec {
			s.reqs[i].node = 2
		}
	}
	if lines, ok = readSummary(s); ok {
		t.Errorf("readSummary: ok without a fall-back")
	}
	inOrder(t, lines, "!! reads never returned to node1")
}

func TestWriteSummary(t *testing.T) {
	lines, ok := writeSummary(synthWrites())
	if !ok {
		t.Errorf("writeSummary: not ok for a story that went well:\n%s", strings.Join(lines, "\n"))
	}
	inOrder(t, lines,
		"205 writes, 8 failed.",
		"node1 was killed at 2.000s and node2 promoted at 4.000s: for 2.00 s no server took writes.",
		"Write gap: 2.10 s from the kill to the first write that succeeded on node2 (at 4.101s)",
		"101 ms after the promotion.",
		"1 write waiting for a writer at the promotion succeeded on node2, within 200 ms of it.",
		"Failed writes: 8 begun while no server took writes (NoHostAvailableError 7, FailoverError 1);",
		"0 at any other time.",
		"Rows: 197 writes acknowledged; node2 has 197 rows, node3 (node2's replica now) 197.",
	)
	shortLines(t, lines)
	if strings.Contains(strings.Join(lines, "\n"), "!!") {
		t.Errorf("writeSummary flags a story that went well:\n%s", strings.Join(lines, "\n"))
	}

	// A write that fails after the promotion is not one of the expected failures.
	s := synthWrites()
	s.reqs = append(s.reqs, request{worker: 2, seq: 1, start: 6 * sec, latency: sec, err: "FailoverError"})
	s.sortRecords()
	lines, ok = writeSummary(s)
	if ok {
		t.Errorf("writeSummary: ok with a write failed after the promotion")
	}
	inOrder(t, lines, "Failed writes: 8 begun while no server took writes", "1 at any other time.",
		"!! 1 write begun outside that window failed")

	// An acknowledged write after the kill that is not on node2 is an error; one
	// acknowledged by node1 before it died and never replicated is explained.
	s = synthWrites()
	for i := range s.reqs {
		switch {
		case s.reqs[i].start == 4*sec+msd(100):
			s.reqs[i].node = 0
		case s.reqs[i].start == 1950*time.Millisecond:
			s.reqs[i].lost = true
		}
	}
	lines, ok = writeSummary(s)
	if ok {
		t.Errorf("writeSummary: ok with an acknowledged write missing")
	}
	inOrder(t, lines, "1 write acknowledged by node1 just before it died never reached node2",
		"!! 1 write acknowledged after node1 died are not on node2")
}

func TestFinalSummary(t *testing.T) {
	lines := finalSummary(synthReads(), synthWrites())
	inOrder(t, lines,
		"Story 1, reads:  281 of 281 answered, 0 errors. The primary's death cost the readers 25 ms, once;",
		"reads were back on node1 50 ms after it answered again.",
		"Story 2, writes: 197 of 205 succeeded. The 8 that failed all began in the 2.00 s with no",
		"writable server, between the kill and the promotion.",
		"Writes resumed 2.10 s after the kill, 101 ms after node2 was promoted.",
		"Why those failed writes are correct",
		"MySQL error 1290",
		"*failover.NoHostAvailableError",
		"RetryStatement",
	)
	shortLines(t, lines)
}

// shortLines fails for a line longer than 104 characters: the output is read on an
// ordinary terminal.
func shortLines(t *testing.T, lines []string) {
	t.Helper()
	for _, l := range lines {
		if len(l) > 104 {
			t.Errorf("line longer than 104 characters: %q", l)
		}
	}
}

func TestErrorExamples(t *testing.T) {
	lines := errorExamples(synthWrites())
	inOrder(t, lines, "at 1.999s: *failover.FailoverError: node1 failed",
		"at 2.005s: *failover.NoHostAvailableError: node2: skipped: role is standby")
	if len(lines) != 2 {
		t.Errorf("errorExamples: %d lines, want one per kind (2):\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

func TestWrap(t *testing.T) {
	got := wrap("aaa bbb ccc dddddddddddd e", 10, "> ", "  ")
	want := []string{"> aaa bbb", "  ccc", "  dddddddddddd", "  e"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("wrap: %q, want %q", got, want)
	}
	if got := wrap("", 10, "> ", "  "); len(got) != 0 {
		t.Errorf("wrap of nothing: %q", got)
	}
}

// TestNoChartByDefault: the demo writes no chart unless asked (-svg PATH), as README
// presents it: a run leaves nothing in the checkout.
func TestNoChartByDefault(t *testing.T) {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	svg := chartFlag(fs)
	if err := fs.Parse(nil); err != nil || *svg != "" {
		t.Fatalf("-svg defaults to %q (%v), want no chart", *svg, err)
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(readme), "with `-svg PATH`") {
		t.Errorf("README does not present the chart as -svg PATH's")
	}
}
