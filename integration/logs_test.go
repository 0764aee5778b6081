package integration

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// captured is one log record a test's slog handler kept.
type captured struct {
	level slog.Level
	msg   string
	attrs map[string]string
	at    time.Time
}

// capture is a slog.Handler that keeps every record, at every level.
type capture struct {
	mu   *sync.Mutex
	recs *[]captured
	with []slog.Attr
}

func newCapture() capture { return capture{mu: &sync.Mutex{}, recs: &[]captured{}} }

func (capture) Enabled(context.Context, slog.Level) bool { return true }

func (h capture) Handle(_ context.Context, r slog.Record) error {
	c := captured{level: r.Level, msg: r.Message, attrs: map[string]string{}, at: time.Now()}
	for _, a := range h.with {
		c.attrs[a.Key] = a.Value.String()
	}
	r.Attrs(func(a slog.Attr) bool {
		c.attrs[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	*h.recs = append(*h.recs, c)
	h.mu.Unlock()
	return nil
}

func (h capture) WithAttrs(as []slog.Attr) slog.Handler {
	h.with = append(append([]slog.Attr(nil), h.with...), as...)
	return h
}

func (h capture) WithGroup(string) slog.Handler { return h }

// records returns the records kept so far.
func (h capture) records() []captured {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]captured(nil), *h.recs...)
}

// countingLogger counts the lines go-sql-driver prints on its own logger.
type countingLogger struct {
	n    atomic.Int64
	last atomic.Value
}

func (l *countingLogger) Print(v ...any) {
	l.n.Add(1)
	l.last.Store(fmt.Sprint(v...))
}

// TestOutageLogs: what a pool's log says during an outage, read through a captured slog
// handler (WithLogger). 8 readers run SELECT 1 every 5 ms through one pool
// (secondsBeforeRetryMaster=1, so that the pool tries to fall back while node 1 stays
// dead) while node 1 is killed (kill -9) and stays dead for 3 s, then is restarted. At
// Info and above the log says what changed, once per host and state: node 1 down (one
// line), the pool's switch to node 2 (and node 2 up, its first contact), node 1 up
// again and the fall-back; the failed fall-backs while node 1 stays dead, each failed
// connection attempt and every other connection's report of the dead node are at Debug
// (a reminder would come once a minute). go-sql-driver's own logger prints nothing:
// its lines go through the pool's logger at Debug, with the host, although the logger
// is the package default, set with mysql.SetLogger before the DSN is parsed. Before
// the fix this test counted 38 records at Info and above (17 Warn connect, 13
// fall-back-failed, 2 host-failed) and 19 lines on go-sql-driver's logger.
func TestOutageLogs(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	raw := &countingLogger{}
	must(t, mysql.SetLogger(raw))
	t.Cleanup(func() { _ = mysql.SetLogger(log.New(log.Writer(), "[mysql] ", log.Ldate|log.Ltime)) })
	cfg, err := dsn.Parse(c.DSN("readTimeout=1s&secondsBeforeRetryMaster=1"))
	must(t, err)
	h := newCapture()
	cn, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithLogger(slog.New(h)))
	must(t, err)
	db := sql.OpenDB(cn)
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(8)
	must(t, db.PingContext(ctx))

	stop := make(chan struct{})
	var wg sync.WaitGroup
	var reads, failed atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				case <-time.After(5 * time.Millisecond):
				}
				rctx, cancel := context.WithTimeout(ctx, time.Second)
				var one int
				if err := db.QueryRowContext(rctx, "SELECT 1").Scan(&one); err != nil {
					failed.Add(1)
				} else {
					reads.Add(1)
				}
				cancel()
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	time.Sleep(300 * time.Millisecond)
	h1 := c.Node(1).ProxyAddr()
	killed := time.Now()
	must(t, c.Node(1).Kill())
	time.Sleep(3 * time.Second)
	dead := time.Since(killed)
	must(t, c.Node(1).Restart(ctx))
	if !healthPoll(15*time.Second, func() bool { return cn.Stats().Active == h1 && cn.Stats().FallBacks >= 1 }) {
		t.Fatalf("no fall-back to node 1 within 15 s of its restart: %+v", cn.Stats())
	}
	time.Sleep(200 * time.Millisecond)

	recs := h.records()
	type key struct{ level, event, host, state string }
	counts := map[key]int{}
	var goSQL, debug int
	for _, r := range recs {
		if r.at.Before(killed) {
			continue // the pool's start
		}
		if r.attrs["source"] == "go-sql-driver" {
			goSQL++
		}
		if r.level < slog.LevelInfo {
			debug++
			continue
		}
		counts[key{r.level.String(), r.attrs["event"], r.attrs["host"], r.attrs["state"]}]++
	}
	var lines []string
	for k, n := range counts {
		lines = append(lines, fmt.Sprintf("%5s %-16s %-22s %-8s x%d", k.level, k.event, k.host, k.state, n))
	}
	sort.Strings(lines)
	t.Logf("node 1 dead %v; %d reads, %d failed; records at Info and above (%d at Debug, %d of go-sql-driver's):\n%s",
		dead.Round(time.Millisecond), reads.Load(), failed.Load(), debug, goSQL, strings.Join(lines, "\n"))
	total := 0
	for _, n := range counts {
		total += n
	}
	t.Logf("FIGURE %s: info_and_above=%d debug=%d go_sql_driver_raw=%d", t.Name(), total, debug, raw.n.Load())

	if n := raw.n.Load(); n != 0 {
		t.Errorf("go-sql-driver printed %d lines on its own logger (the last: %v), want 0: they go through the pool's logger", n, raw.last.Load())
	}
	for k, n := range counts {
		switch {
		case k.event == "connect":
			t.Errorf("%d %s records of connection attempts to %s, want them at Debug", n, k.level, k.host)
		case k.event == "host-state" && n > 1:
			t.Errorf("%d records of %s %s, want one per change", n, k.host, k.state)
		case k.event == "fall-back-failed" && n > 1:
			t.Errorf("%d %s fall-back-failed records while node 1 stayed dead for %v, want one (a reminder at most once a minute)", n, k.level, dead.Round(time.Millisecond))
		case k.event == "host-failed" && n > 1:
			t.Errorf("%d %s host-failed records of %s, want one per outage", n, k.level, k.host)
		}
	}
	for _, want := range []key{
		{"WARN", "host-state", h1, "down"},
		{"INFO", "host-state", h1, "up"},
	} {
		if counts[want] != 1 {
			t.Errorf("%d records %v, want 1", counts[want], want)
		}
	}
	if total > 8 {
		t.Errorf("%d records at Info and above for one host's outage and return, want at most 8", total)
	}
	if goSQL == 0 {
		t.Errorf("no go-sql-driver line through the pool's logger (source=go-sql-driver) after kill -9 under load")
	}
}
