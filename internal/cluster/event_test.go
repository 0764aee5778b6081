package cluster_test

import (
	"bytes"
	"log/slog"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// logLines is a logger's output, one "LEVEL event host [repeated=N]" per record.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

var logRecord = regexp.MustCompile(`level=(\w+) .*?event=(\S+) host=(\S+)(?:.* repeated=(\d+))?`)

// take returns the records written since the last take.
func (l *logLines) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if m := logRecord.FindStringSubmatch(line); m != nil {
			rec := m[1] + " " + m[2] + " " + strings.TrimSuffix(m[3], ":3306")
			if m[4] != "" {
				rec += " repeated=" + m[4]
			}
			out = append(out, rec)
		}
	}
	l.buf.Reset()
	return out
}

// warnings returns the records at Info and above of take.
func (l *logLines) warnings() []string {
	var out []string
	for _, r := range l.take() {
		if !strings.HasPrefix(r, "DEBUG ") {
			out = append(out, r)
		}
	}
	return out
}

// TestLogTellsAnOutageOnce: the logger tells an outage once per host and state. The
// first report of a dead host is a Warn record, and so are its state and the switch;
// another connection's report of the same dead host, each failed connection attempt and
// each failed fall-back to it while it stays down are Debug records, with a reminder at
// Warn once DefaultLogRepeat has passed (saying how many were held back); its return is
// one Info record, the fall-back another, and its next failure is news again.
func TestLogTellsAnOutageOnce(t *testing.T) {
	out := &logLines{}
	r := newRig(t, 3, func(o *rigOpts) {
		o.Logger = slog.New(slog.NewTextHandler(out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	})
	defer r.cl.Close()
	r.net.SetReadOnly(1, true) // replicas, as in a real cluster: one writer
	r.net.SetReadOnly(2, true)
	a, b := r.connect(), r.connect()
	defer func() { _ = a.c.Close(); _ = b.c.Close() }()
	out.take()

	r.down(0)
	a.fail()
	a.on(1)
	if got, want := strings.Join(out.warnings(), "; "), "WARN host-failed H1; WARN host-state H1; INFO host-state H2; WARN switch H2"; got != want {
		t.Fatalf("H1 dies: %s\nwant %s", got, want)
	}
	b.fail() // another connection's report of the same failure
	if got := out.warnings(); len(got) != 0 {
		t.Fatalf("a second report of the dead H1: %v, want only Debug records", got)
	}

	fallBacks := 0
	for elapsed := time.Duration(0); elapsed < cluster.DefaultLogRepeat; elapsed += 31 * time.Second {
		r.clock.Advance(31 * time.Second) // secondsBeforeRetryMaster is 30
		a.statement(true)
		fallBacks++
	}
	recs := out.take()
	if got := strings.Join(recs, "; "); !strings.Contains(got, "DEBUG fall-back-failed H1") ||
		!strings.HasSuffix(got, "WARN fall-back-failed H1 repeated=1") || strings.Count(got, "WARN") != 1 {
		t.Fatalf("%d failed fall-backs to H1 over %v: %s\nwant Debug records, then one Warn reminder with repeated=1", fallBacks, cluster.DefaultLogRepeat, got)
	}

	r.up(0)
	r.clock.Advance(31 * time.Second)
	a.statement(true)
	a.on(0)
	if got, want := strings.Join(out.warnings(), "; "), "INFO host-state H1; INFO fall-back H1"; got != want {
		t.Fatalf("H1 back: %s\nwant %s", got, want)
	}
	r.down(0)
	a.fail()
	if got := out.warnings(); len(got) == 0 || got[0] != "WARN host-failed H1" {
		t.Fatalf("H1 dies again: %v, want its failure at Warn again", got)
	}
}
