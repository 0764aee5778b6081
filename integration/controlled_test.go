package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Operator control: SwitchTo, a host list served over HTTP, and a host whose
// credentials stop working.

// TestSwitchToUnderLoad: 16 goroutines read (SELECT @@port) through a 16-connection pool
// on node 1 of a 3-node cluster (probing off). SwitchTo(node 2) returns nil, Stats names
// node 2 as active and primary, one EventSwitch from node 1 to node 2 is reported, every
// statement started 300 ms after SwitchTo returned runs on node 2, and the pool's
// sockets and sessions on node 1 drain to zero (each connection moved at its next
// statement). SwitchTo(node 1) brings everything back the same way. SwitchTo a host not
// in the list, and to node 3 with its proxy disabled, return an error naming the host
// and leave the pool where it is. No caller sees an error at any point.
func TestSwitchToUnderLoad(t *testing.T) {
	const (
		workers = 16
		settle  = 300 * time.Millisecond
	)
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	name := t.Name()
	db, connector, ev := healthOpen(t, c.DSN("readTimeout=2s"))
	db.SetMaxOpenConns(workers)
	db.SetMaxIdleConns(workers)
	warmPool(t, ctx, c, db, workers)
	load := healthStartLoad(ctx, c, db, workers, 5*time.Second, 2*time.Millisecond)
	defer load.halt()
	if _, ok := load.waitFor(5*time.Second, func(op healthOp) bool { return op.err == nil && op.node == 1 }); !ok {
		t.Fatalf("the load never ran on node 1")
	}
	time.Sleep(300 * time.Millisecond)
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", name, k, v) }

	type phase struct {
		to         int
		start, end time.Time // SwitchTo called, returned
	}
	var phases []phase
	switchTo := func(from, to int) {
		t.Helper()
		p := phase{to: to, start: time.Now()}
		if err := connector.SwitchTo(ctx, c.Node(to).ProxyAddr()); err != nil {
			t.Fatalf("SwitchTo(node %d): %v", to, err)
		}
		p.end = time.Now()
		phases = append(phases, p)
		st := connector.Stats()
		if c.NodeByAddr(st.Active) != to || c.NodeByAddr(st.Primary) != to {
			t.Errorf("after SwitchTo(node %d): Stats active %s, primary %s", to, st.Active, st.Primary)
		}
		sw := ev.of(failover.EventSwitch, "", p.start)
		if len(sw) != 1 || c.NodeByAddr(sw[0].From) != from || c.NodeByAddr(sw[0].Host) != to {
			t.Errorf("switch events after SwitchTo(node %d): %v, want one from node %d", to, sw, from)
		}
		op, ok := load.waitFor(5*time.Second, func(op healthOp) bool {
			return op.err == nil && op.node == to && op.start.After(p.end)
		})
		if !ok {
			t.Fatalf("no statement ran on node %d within 5 s of SwitchTo", to)
		}
		// Every connection moves at its next statement: node from's sockets and sessions
		// drain.
		var openFrom int
		var sessions int64
		drained := healthPoll(5*time.Second, func() bool {
			h, _ := healthHost(connector.Stats(), c.Node(from).ProxyAddr())
			openFrom = h.OpenConns
			var err error
			sessions, err = c.Node(from).AppSessions(ctx)
			return err == nil && openFrom == 0 && sessions == 0
		})
		if !drained {
			t.Errorf("5 s after SwitchTo(node %d): %d sockets and %d app sessions left on node %d", to, openFrom, sessions, from)
		}
		hTo, _ := healthHost(connector.Stats(), c.Node(to).ProxyAddr())
		fig("switchto_node"+strconv.Itoa(to)+"_call", p.end.Sub(p.start).Round(time.Microsecond))
		fig("switchto_node"+strconv.Itoa(to)+"_first_ok", op.end.Sub(p.end).Round(time.Millisecond))
		fig("switchto_node"+strconv.Itoa(to)+"_drained", time.Since(p.end).Round(time.Millisecond))
		fig("switchto_node"+strconv.Itoa(to)+"_open_conns_on_target", hTo.OpenConns)
		time.Sleep(time.Until(p.end.Add(settle + 500*time.Millisecond)))
	}
	switchTo(1, 2)
	switchTo(2, 1)

	// Refused: not in the list, and a host that does not answer. The pool stays on node 1.
	failStart := time.Now()
	err := connector.SwitchTo(ctx, "127.0.0.1:1")
	if err == nil || !strings.Contains(err.Error(), "127.0.0.1:1") {
		t.Errorf("SwitchTo a host not in the list: %v, want an error naming it", err)
	}
	must(t, c.Node(3).Disable())
	n3Start := time.Now()
	err = connector.SwitchTo(ctx, c.Node(3).ProxyAddr())
	n3Took := time.Since(n3Start)
	must(t, c.Node(3).Enable())
	if err == nil || !strings.Contains(err.Error(), c.Node(3).ProxyAddr()) {
		t.Errorf("SwitchTo node 3 with its proxy disabled: %v, want an error naming it", err)
	}
	if st := connector.Stats(); c.NodeByAddr(st.Active) != 1 {
		t.Errorf("after two refused SwitchTo calls the pool is on %s, want node 1", st.Active)
	}
	if sw := ev.of(failover.EventSwitch, "", failStart); len(sw) != 0 {
		t.Errorf("refused SwitchTo calls moved the pool: %v", sw)
	}
	time.Sleep(200 * time.Millisecond)
	ops := load.halt()

	var wrong, afterSettle int
	var maxTook time.Duration
	for _, op := range ops {
		maxTook = max(maxTook, op.took())
		if op.err != nil {
			t.Errorf("worker %d: statement started at %v failed: %v", op.worker, op.start.Format("15:04:05.000"), op.err)
			continue
		}
		// The phase the statement ran in: started settle after a SwitchTo returned and
		// ended before the next SwitchTo was called.
		for k, p := range phases {
			if !op.start.After(p.end.Add(settle)) || k+1 < len(phases) && !op.end.Before(phases[k+1].start) {
				continue
			}
			afterSettle++
			if op.node != p.to {
				wrong++
				if wrong <= 5 {
					t.Errorf("statement started %v after SwitchTo(node %d) returned ran on node %d", op.start.Sub(p.end), p.to, op.node)
				}
			}
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d statements started %v after a SwitchTo returned ran elsewhere than its target", wrong, afterSettle, settle)
	}
	fig("statements", len(ops))
	fig("statements_after_settle", afterSettle)
	fig("max_statement", maxTook.Round(time.Millisecond))
	fig("switchto_disabled_node3_call", n3Took.Round(time.Millisecond))
	st := connector.Stats()
	fig("stats_failovers", st.Failovers)
	fig("stats_fallbacks", st.FallBacks)
}

// hlHost is one entry of a served host list.
type hlHost struct {
	Addr string `json:"addr"`
	DC   string `json:"dc,omitempty"`
}

// hlResponse is what the test's host-list server answers.
type hlResponse struct {
	status int
	body   []byte
}

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// hlInvalidWords are the words of the error that rejects a host list's content (the
// engine's ErrInvalidHostList, which is internal; its text is what a user sees in
// EventHostList and the log).
const hlInvalidWords = "invalid host list"

// TestHTTPHostList: an httptest server on 127.0.0.1 serves the host list (node 1, 2, 3)
// to a pool with hostsURL, hostsToken and checkInterval=200ms, under 4 reading workers.
// Every request carries the bearer token. Serving node 3, 1, 2 moves the pool to node 3:
// EventHostList naming node 3, Stats with node 3 active and primary and the hosts in the
// new order, reads on node 3 within 2 s, and no caller error. Then invalid or failing
// answers, each served until an EventHostList with an error reports it: not JSON, an
// empty list, an unknown top-level field, an unknown host field, trailing data, and
// HTTP 500 (the last four carry a list that would move the pool if taken). Each is
// rejected (the content errors say "invalid host list", the fetch failure does not),
// none moves the pool or changes the list, and reads stay on node 3. Neither the events
// nor the log (mysqlfailover.WithLogger) contain the token.
func TestHTTPHostList(t *testing.T) {
	const token = "hl-Secret-42"
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	name := t.Name()
	addr := func(i int) string { return c.Node(i).ProxyAddr() }
	list := func(nodes ...int) []byte {
		var doc struct {
			Hosts []hlHost `json:"hosts"`
		}
		for _, n := range nodes {
			doc.Hosts = append(doc.Hosts, hlHost{Addr: addr(n)})
		}
		b, err := json.Marshal(doc)
		must(t, err)
		return b
	}
	var served atomic.Pointer[hlResponse]
	served.Store(&hlResponse{status: 200, body: list(1, 2, 3)})
	var requests, badAuth atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.Header.Get("Authorization") != "Bearer "+token {
			badAuth.Add(1)
		}
		resp := served.Load()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(resp.status)
		w.Write(resp.body)
	}))
	t.Cleanup(srv.Close) // after the pool is closed (cleanups run last first)

	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	params := "checkInterval=200ms&readTimeout=2s&hostsURL=" + url.QueryEscape(srv.URL+"/hosts?cluster=a") + "&hostsToken=" + token
	db, connector, ev := healthOpen(t, c.DSN(params), mysqlfailover.WithLogger(logger))
	db.SetMaxOpenConns(4)
	db.SetMaxIdleConns(4)
	load := healthStartLoad(ctx, c, db, 4, 5*time.Second, 20*time.Millisecond)
	defer load.halt()
	if _, ok := load.waitFor(5*time.Second, func(op healthOp) bool { return op.err == nil && op.node == 1 }); !ok {
		t.Fatalf("the load never ran on node 1")
	}
	begin := time.Now()
	if !healthPoll(5*time.Second, func() bool { return requests.Load() >= 2 }) {
		t.Fatalf("the host list was fetched %d times in 5 s", requests.Load())
	}
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", name, k, v) }

	// A new list, node 3 first.
	served.Store(&hlResponse{status: 200, body: list(3, 1, 2)})
	changed := time.Now()
	taken, ok := healthWaitEvent(ev, changed, 5*time.Second, func(e failover.Event) bool {
		return e.Kind == failover.EventHostList && e.Err == nil
	})
	if !ok {
		t.Fatalf("the new list was not taken within 5 s; events: %v", ev.all())
	}
	if c.NodeByAddr(taken.Host) != 3 {
		t.Errorf("EventHostList names %s as the new list's primary, want node 3", taken.Host)
	}
	on3, ok := load.waitFor(5*time.Second, func(op healthOp) bool {
		return op.err == nil && op.node == 3 && op.start.After(changed)
	})
	if !ok {
		t.Fatalf("no read ran on node 3 within 5 s of serving the new list")
	}
	if d := on3.end.Sub(changed); d > 2*time.Second {
		t.Errorf("first read on node 3 %v after the list changed, want within 2 s (checkInterval=200ms)", d)
	}
	sw := ev.of(failover.EventSwitch, "", changed)
	if len(sw) != 1 || c.NodeByAddr(sw[0].Host) != 3 {
		t.Errorf("switch events after the list change: %v, want one to node 3", sw)
	}
	wantOrder := []string{addr(3), addr(1), addr(2)}
	checkStats := func(when string) {
		t.Helper()
		st := connector.Stats()
		var got []string
		for _, h := range st.Hosts {
			got = append(got, h.Addr)
		}
		if c.NodeByAddr(st.Active) != 3 || c.NodeByAddr(st.Primary) != 3 || strings.Join(got, ",") != strings.Join(wantOrder, ",") {
			t.Errorf("%s: Stats active %s, primary %s, hosts %v; want node 3, node 3, %v", when, st.Active, st.Primary, got, wantOrder)
		}
	}
	checkStats("after the new list")
	settledOn3 := on3.end.Add(300 * time.Millisecond)
	fig("change_to_hostlist_event", taken.Time.Sub(changed).Round(time.Millisecond))
	fig("change_to_first_read_node3", on3.end.Sub(changed).Round(time.Millisecond))

	// Invalid or failing answers: the last good list stays.
	bad := []struct {
		name    string
		resp    hlResponse
		invalid bool // content error: says "invalid host list"
	}{
		{"not-json", hlResponse{200, []byte("<html>maintenance</html>")}, true},
		{"empty-list", hlResponse{200, []byte(`{"hosts":[]}`)}, true},
		{"unknown-field", hlResponse{200, []byte(`{"hosts":[{"addr":"` + addr(1) + `"}],"primary":"` + addr(1) + `"}`)}, true},
		{"unknown-host-field", hlResponse{200, []byte(`{"hosts":[{"addr":"` + addr(2) + `","weight":1}]}`)}, true},
		{"trailing-data", hlResponse{200, append(list(1, 2), []byte(`{"hosts":[]}`)...)}, true},
		{"http-500", hlResponse{500, list(2, 1)}, false},
	}
	for _, b := range bad {
		served.Store(&b.resp)
		since := time.Now()
		e, ok := healthWaitEvent(ev, since, 3*time.Second, func(e failover.Event) bool {
			return e.Kind == failover.EventHostList && e.Err != nil
		})
		if !ok {
			t.Errorf("%s: no EventHostList with an error within 3 s", b.name)
			continue
		}
		// A rejected list (content) and a failed fetch differ, for a user, only in the
		// error's text: the sentinel the engine matches them with is internal, so the test
		// reads the words its message starts with ("mysqlfailover: invalid host list").
		if said := strings.Contains(e.Err.Error(), hlInvalidWords); said != b.invalid {
			t.Errorf("%s: error %q: says %q %v, want %v", b.name, e.Err, hlInvalidWords, said, b.invalid)
		}
		if strings.Contains(e.Err.Error(), token) {
			t.Errorf("%s: the error shows the token: %v", b.name, e.Err)
		}
		// Two more checks with the same answer.
		time.Sleep(450 * time.Millisecond)
		for _, e := range ev.all() {
			if !e.Time.Before(since) && (e.Kind == failover.EventSwitch || e.Kind == failover.EventHostList && e.Err == nil) {
				t.Errorf("%s: the pool took it: %v", b.name, e)
			}
		}
		checkStats(b.name)
		t.Logf("%s: %v", b.name, e.Err)
		fig("rejected_"+b.name+"_after", e.Time.Sub(since).Round(time.Millisecond))
	}
	served.Store(&hlResponse{status: 200, body: list(3, 1, 2)})
	elapsed := time.Since(begin)
	ops := load.halt()

	var off3, failed int
	for _, op := range ops {
		if op.err != nil {
			failed++
			t.Errorf("worker %d: statement started %v after the list change failed: %v", op.worker, op.start.Sub(changed), op.err)
			continue
		}
		if op.start.After(settledOn3) && op.node != 3 {
			off3++
		}
	}
	if off3 > 0 {
		t.Errorf("%d statements started after the pool settled on node 3 ran elsewhere", off3)
	}
	if n := badAuth.Load(); n > 0 {
		t.Errorf("%d of %d host-list requests without the bearer token", n, requests.Load())
	}
	db.Close() // stops the monitor: the log is complete
	out := logs.String()
	if strings.Contains(out, token) {
		t.Errorf("the log shows the token")
	}
	if !strings.Contains(out, "host-list") {
		t.Errorf("the log has no host-list record:\n%s", out)
	}
	fig("requests", requests.Load())
	fig("requests_per_second", float64(int(float64(requests.Load())/elapsed.Seconds()*10))/10)
	fig("rejections", len(bad))
	fig("log_lines", strings.Count(out, "\n"))
}

// TestAuthFailureRecovers: probing off, secondsBeforeRetryMaster=1, no idle connections
// (every statement opens its own). The app user's password is changed on node 1 only
// (sql_log_bin=0, so node 2 keeps the old one). The first new connection gets access
// denied from node 1: error 1045 wrapped with node 1's address (a data error ends that
// walk, by design), and Stats shows node 1 down or in backoff with that error (without
// the password). Later connections go to node 2 without an error while node 1 is in
// backoff; the fall-back attempts that meet 1045 stay invisible to callers. Once the
// password is restored on node 1 the pool returns to it (EventFallBack) without a
// restart, within the backoff ceiling (8 s) plus the fall-back interval; statements then
// stay on node 1. Reported: the fall-back attempts on node 1 while its password was
// wrong and the time from the restore to the first statement on node 1.
func TestAuthFailureRecovers(t *testing.T) {
	const (
		// hlBackoffMax is the backoff ceiling of a host whose attempts keep failing, as
		// package failover's doc gives it ("250 ms, then 500 ms, 1 s, 2 s, 4 s, at most 8 s").
		hlBackoffMax  = 8 * time.Second
		wrongPassword = "Wrong-pw-7731"
		wrongFor      = 3 * time.Second
		tick          = 50 * time.Millisecond
	)
	c := harness.Start(t, 2)
	ctx := ctxT(t, time.Minute)
	name := t.Name()
	n1 := c.Node(1)
	db, connector, ev := healthOpen(t, c.DSN("readTimeout=2s&secondsBeforeRetryMaster=1&queriesBeforeRetryMaster=0"))
	db.SetMaxIdleConns(0)
	if node, err := nodeOf(ctx, c, db); err != nil || node != 1 {
		t.Fatalf("before the change: node %d, %v; want node 1", node, err)
	}

	setPassword := func(pw string) {
		t.Helper()
		conn, err := n1.Admin().Conn(ctx)
		must(t, err)
		defer conn.Close()
		for _, q := range []string{
			"SET SESSION sql_log_bin = 0",
			"ALTER USER '" + harness.AppUser + "'@'%' IDENTIFIED BY '" + pw + "'",
			"SET SESSION sql_log_bin = 1",
		} {
			if _, err := conn.ExecContext(ctx, q); err != nil {
				t.Fatalf("node 1: %s: %v", q, err)
			}
		}
	}
	type call struct {
		start, end time.Time
		node       int
		err        error
	}
	run := func() call {
		cl := call{start: time.Now()}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		cl.node, cl.err = nodeOf(sctx, c, db)
		cancel()
		cl.end = time.Now()
		return cl
	}

	setPassword(wrongPassword)
	defer setPassword(harness.AppPassword) // a failed test leaves node 1 usable
	changed := time.Now()
	var calls []call
	first := run()
	calls = append(calls, first)
	var me *mysql.MySQLError
	if first.err == nil {
		t.Errorf("first connection after the password change succeeded on node %d: want access denied from node 1", first.node)
	} else if !errors.As(first.err, &me) || me.Number != 1045 || !strings.Contains(first.err.Error(), n1.ProxyAddr()) {
		t.Errorf("first connection: %T %v; want error 1045 naming node 1 (%s)", first.err, first.err, n1.ProxyAddr())
	}
	if first.err != nil && strings.Contains(first.err.Error(), wrongPassword) {
		t.Errorf("the error shows the password: %v", first.err)
	}
	st := connector.Stats()
	h1, _ := healthHost(st, n1.ProxyAddr())
	if h1.State != failover.HostBackoff && h1.State != failover.HostDown {
		t.Errorf("Stats after access denied: node 1 %v, want down or backoff", h1.State)
	}
	if !errors.As(h1.LastError, &me) || me.Number != 1045 {
		t.Errorf("Stats: node 1's last error %v, want 1045", h1.LastError)
	}
	if h1.LastError != nil && strings.Contains(h1.LastError.Error(), wrongPassword) {
		t.Errorf("Stats shows the password: %v", h1.LastError)
	}
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", name, k, v) }
	fig("first_call", first.end.Sub(first.start).Round(time.Millisecond))
	fig("stats_node1_state_after_denied", h1.State)
	if !h1.RetryAt.IsZero() {
		fig("stats_node1_backoff", h1.RetryAt.Sub(first.end).Round(time.Millisecond))
	}
	if h1.LastError != nil {
		t.Logf("node 1's last error: %v", h1.LastError)
	}

	// While the password is wrong: every later call on node 2, no error.
	var wrongPhaseErrs, wrongPhaseNode2, secondNode int
	for time.Since(changed) < wrongFor {
		cl := run()
		calls = append(calls, cl)
		if len(calls) == 2 {
			secondNode = cl.node
		}
		switch {
		case cl.err != nil:
			wrongPhaseErrs++
			t.Errorf("call %d, %v after the password change: %v", len(calls), cl.start.Sub(changed), cl.err)
		case cl.node == 2:
			wrongPhaseNode2++
		default:
			t.Errorf("call %d ran on node %d with node 1's password wrong", len(calls), cl.node)
		}
		time.Sleep(tick)
	}
	if secondNode != 2 {
		t.Errorf("second call ran on node %d, want 2 (node 1 in backoff)", secondNode)
	}
	denied := 0
	for _, e := range ev.of(failover.EventConnect, n1.ProxyAddr(), changed) {
		if e.Err != nil {
			denied++
			t.Logf("attempt on node 1 at +%v: %v", e.Time.Sub(changed).Round(time.Millisecond), e.Err)
		}
	}
	fig("calls_while_wrong", len(calls))
	fig("errors_while_wrong_after_first", wrongPhaseErrs)
	fig("node2_while_wrong", wrongPhaseNode2)
	fig("denied_attempts_node1_while_wrong", denied)

	// Restored: the pool returns to node 1 within the backoff ceiling plus the
	// fall-back interval.
	setPassword(harness.AppPassword)
	restored := time.Now()
	var backOn1 time.Time
	var afterErrs int
	for time.Since(restored) < 12*time.Second {
		cl := run()
		calls = append(calls, cl)
		if cl.err != nil {
			afterErrs++
			t.Errorf("call %v after the restore: %v", cl.start.Sub(restored), cl.err)
		}
		if cl.err == nil && cl.node == 1 {
			backOn1 = cl.end
			break
		}
		time.Sleep(tick)
	}
	if backOn1.IsZero() {
		t.Fatalf("no statement ran on node 1 within 12 s of restoring its password: %+v", connector.Stats())
	}
	if d := backOn1.Sub(restored); d > hlBackoffMax+2*time.Second {
		t.Errorf("back on node 1 %v after the restore, want within %v", d, hlBackoffMax+2*time.Second)
	}
	stayed := 0
	for range 10 {
		cl := run()
		if cl.err != nil || cl.node != 1 {
			t.Errorf("after the return: node %d, %v; want node 1", cl.node, cl.err)
		} else {
			stayed++
		}
	}
	fb := ev.of(failover.EventFallBack, n1.ProxyAddr(), restored)
	if len(fb) == 0 {
		t.Errorf("no EventFallBack to node 1 after the restore")
	}
	st = connector.Stats()
	h1, _ = healthHost(st, n1.ProxyAddr())
	if h1.State != failover.HostUp || c.NodeByAddr(st.Active) != 1 {
		t.Errorf("Stats after the return: active %s, node 1 %v; want node 1, up", st.Active, h1.State)
	}
	fig("restore_to_first_ok_node1", backOn1.Sub(restored).Round(time.Millisecond))
	if len(fb) > 0 {
		fig("restore_to_fallback_event", fb[0].Time.Sub(restored).Round(time.Millisecond))
	}
	fig("errors_after_restore", afterErrs)
	fig("stayed_on_node1", stayed)
	fig("stats_failovers", st.Failovers)
	fig("stats_fallbacks", st.FallBacks)
	fig("switch_events", ev.count(failover.EventSwitch, ""))
}
