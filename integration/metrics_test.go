package integration

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"expvar"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	mysqlfailoverexpvar "github.com/mysqlfailover/mysqlfailover/metrics/expvar"
	mysqlfailoverotel "github.com/mysqlfailover/mysqlfailover/metrics/otel"
	mysqlfailoverprom "github.com/mysqlfailover/mysqlfailover/metrics/prometheus"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// TestMetrics: one pool with the Prometheus collector, the OpenTelemetry instruments
// (an SDK ManualReader), expvar and a hook of the test's own (WithEventHook given three
// times), on a 3-node cluster with probes every 200 ms. Each is read the way an operator's
// system reads it: Prometheus through promhttp over HTTP, parsed from the text exposition;
// OpenTelemetry by a collection of the SDK; expvar from /debug/vars. Before the kill the
// primary is up and active, probes are counted and no failover is; after kill -9 of the
// primary the failover count, the primary's state, the probe histogram, the failed probes
// and a walk's duration move, the pool is on node 2 and connections are counted there;
// after the restart the fall-back is counted, with its timing (the monitor's wait for
// switchBackDelay) in the walk histogram. Every per-host series, both walk kinds and the
// write metrics are there at 0 before the kill, so that increase() sees the first burst.
// Writes that cannot be served are counted by one counter whatever the cause: after the
// kill, a write on the pool (now on node 2, a read-only secondary) gets 1290, and a
// second pool with targetSessionAttrs=read-write finds no writer
// (*failover.NoHostAvailableError); both pools' write_refusals_total rise and their
// writer_available reads 0, the read-write pool's dead primary reads role unknown (not
// its last role, primary), and node 1's states never go back from down to suspect.
// Before the kill, two more pools split reads (replicaReads, probes every 100 ms; see
// replicaPhase) and their own collectors export the replica metrics.
func TestMetrics(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	// The harness's app user may read the replica status (SLAVE MONITOR), as the replica
	// pools' probes need to read the lag.
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE "+harness.AppDB+".metrics_w (id INT)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
	// Nodes 1 and 2 in DC east, node 3 in west: the labels reach every metric.
	labelled := fmt.Sprintf("%s:%s@tcp(%s;dc=east,%s;dc=east,%s;dc=west)/%s?readTimeout=2s&checkInterval=200ms&switchBackDelay=500ms",
		harness.AppUser, harness.AppPassword, c.Node(1).ProxyAddr(), c.Node(2).ProxyAddr(), c.Node(3).ProxyAddr(), harness.AppDB)
	cfg, err := dsn.Parse(labelled)
	must(t, err)

	col := mysqlfailoverprom.New()
	reader := sdkmetric.NewManualReader()
	provider := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = provider.Shutdown(context.Background()) })
	om, err := mysqlfailoverotel.New(provider)
	must(t, err)
	t.Cleanup(func() { _ = om.Close() })
	ev := &eventLog{}
	connector, err := mysqlfailover.NewConnector(cfg, col.Option(), om.Option(), mysqlfailover.WithEventHook(ev.hook))
	must(t, err)
	col.SetConnector(connector)
	om.SetConnector(connector)
	db := sql.OpenDB(connector)
	t.Cleanup(func() { db.Close() })

	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	name := "mysqlfailover_" + t.Name()
	expvar.Publish(name, mysqlfailoverexpvar.Func(connector))
	mux.Handle("/debug/vars", expvar.Handler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)

	h1, h2 := c.Node(1).ProxyAddr(), c.Node(2).ProxyAddr()
	for range 10 {
		if n, err := nodeOf(ctx, c, db); err != nil || n != 1 {
			t.Fatalf("before the kill: node %d, %v, want 1", n, err)
		}
	}
	// Probes of all three hosts have passed: their latencies are in the histogram.
	var before *scrape
	if !healthPoll(10*time.Second, func() bool {
		before = scrapeProm(t, srv.URL)
		return before.histCount("mysqlfailover_probe_duration_seconds", "host", c.Node(3).ProxyAddr()) > 0 &&
			before.histCount("mysqlfailover_probe_duration_seconds", "host", h1) > 0
	}) {
		t.Fatalf("no probe in the histogram after 10 s:\n%s", before.text)
	}
	before.want(t, "mysqlfailover_host_state", 1, "host", h1, "dc", "east", "state", "up")
	before.want(t, "mysqlfailover_host_state", 1, "host", c.Node(3).ProxyAddr(), "dc", "west", "state", "up")
	if before.histCount("mysqlfailover_probe_duration_seconds", "host", c.Node(3).ProxyAddr(), "dc", "west") == 0 {
		t.Errorf("probe histogram of node 3 without its dc label:\n%s", before.grep("mysqlfailover_probe_duration_seconds_count"))
	}
	before.want(t, "mysqlfailover_host_active", 1, "host", h1)
	before.want(t, "mysqlfailover_host_primary", 1, "host", h1)
	before.want(t, "mysqlfailover_failovers_total", 0)
	// Every series an alert uses is there before anything happened, at 0.
	for _, n := range c.Nodes() {
		before.want(t, "mysqlfailover_probe_failures_total", 0, "host", n.ProxyAddr())
		if before.find("mysqlfailover_probe_duration_seconds", "host", n.ProxyAddr()) == nil {
			t.Errorf("no probe histogram of %s", n.ProxyAddr())
		}
	}
	for _, kind := range []string{"switch", "fall_back"} {
		if m := before.find("mysqlfailover_walk_duration_seconds", "kind", kind); m == nil || m.Histogram.GetSampleCount() != 0 {
			t.Errorf("walk histogram %s before any walk: %v, want present and empty", kind, m)
		}
	}
	before.want(t, "mysqlfailover_write_refusals_total", 0)
	before.want(t, "mysqlfailover_caller_errors_total", 0)
	before.want(t, "mysqlfailover_writer_available", 1)
	if n := before.value("mysqlfailover_host_connections", "host", h1); n < 2 {
		t.Errorf("connections to node 1: %v, want the pool's and the probe's (at least 2)", n)
	}
	if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
		t.Errorf("promlint: %v %v", problems, err)
	}
	// Without replicaReads, no replica metric.
	for _, name := range []string{"mysqlfailover_host_replica", "mysqlfailover_host_replica_reads_total", "mysqlfailover_host_replica_lag_seconds",
		"mysqlfailover_replica_retries_total", "mysqlfailover_replica_to_primary_total", "mysqlfailover_causal_reads_total"} {
		if before.fams[name] != nil {
			t.Errorf("%s exported by a pool without replicaReads:\n%s", name, before.grep(name))
		}
	}

	replicaPhase(ctx, t, c, mux, srv.URL)

	// A pool that wants the writer (its probes read the roles), on its own collector.
	rwCfg, err := dsn.Parse(c.DSN("readTimeout=2s&checkInterval=200ms&targetSessionAttrs=read-write"))
	must(t, err)
	rwCol := mysqlfailoverprom.New()
	rwConn, err := mysqlfailover.NewConnector(rwCfg, rwCol.Option())
	must(t, err)
	rwCol.SetConnector(rwConn)
	rwDB := sql.OpenDB(rwConn)
	t.Cleanup(func() { rwDB.Close() })
	rwReg := prometheus.NewRegistry()
	rwReg.MustRegister(rwCol)
	mux.Handle("/rw", promhttp.HandlerFor(rwReg, promhttp.HandlerOpts{}))
	must(t, rwDB.PingContext(ctx))
	if !healthPoll(5*time.Second, func() bool { return rwConn.Stats().Hosts[0].Role == failover.RolePrimary }) {
		t.Fatalf("read-write pool: node 1's role not read in 5 s: %+v", rwConn.Stats().Hosts[0])
	}
	rwBefore := scrapeURL(t, srv.URL+"/rw")
	rwBefore.want(t, "mysqlfailover_host_role", 1, "host", h1, "role", "primary")
	rwBefore.want(t, "mysqlfailover_writer_available", 1)
	rwBefore.want(t, "mysqlfailover_write_refusals_total", 0)

	must(t, c.Node(1).Kill())
	for range 20 {
		if n, err := nodeOf(ctx, c, db); err != nil || n != 2 {
			t.Fatalf("after the kill: node %d, %v, want 2", n, err)
		}
	}
	var after *scrape
	if !healthPoll(10*time.Second, func() bool {
		after = scrapeProm(t, srv.URL)
		return after.value("mysqlfailover_host_state", "host", h1, "state", "up") == 0 &&
			after.value("mysqlfailover_probe_failures_total", "host", h1) > 0 &&
			// node 2's probes go on meanwhile (each host on its own schedule)
			after.histCount("mysqlfailover_probe_duration_seconds", "host", h2) > before.histCount("mysqlfailover_probe_duration_seconds", "host", h2)
	}) {
		t.Fatalf("node 1 still up, or no failed probe, 10 s after kill -9:\n%s", after.text)
	}
	if n := after.value("mysqlfailover_failovers_total"); n < 1 {
		t.Errorf("failovers_total %v after kill -9 of the primary, want at least 1", n)
	}
	after.want(t, "mysqlfailover_host_active", 1, "host", h2)
	after.want(t, "mysqlfailover_host_active", 0, "host", h1)
	if down := after.value("mysqlfailover_host_state", "host", h1, "state", "down") +
		after.value("mysqlfailover_host_state", "host", h1, "state", "backoff") +
		after.value("mysqlfailover_host_state", "host", h1, "state", "suspect"); down != 1 {
		t.Errorf("node 1 neither suspect, down nor in backoff after kill -9:\n%s", after.grep("mysqlfailover_host_state"))
	}
	if a, b := after.histCount("mysqlfailover_probe_duration_seconds", "host", h2), before.histCount("mysqlfailover_probe_duration_seconds", "host", h2); a <= b {
		t.Errorf("probe histogram of node 2 did not move: %d then %d", b, a)
	}
	// The pool's session; the probes borrow it while it is idle (no probe session of
	// their own where the pool holds one).
	if n := after.value("mysqlfailover_host_connections", "host", h2); n < 1 {
		t.Errorf("connections to node 2 after the failover: %v, want at least 1", n)
	}
	walks := after.histCount("mysqlfailover_walk_duration_seconds", "kind", "switch")
	sum := after.histSum("mysqlfailover_walk_duration_seconds", "kind", "switch")
	if walks < 1 || sum <= 0 {
		t.Errorf("walk histogram: %d walks, %v s, want at least one", walks, sum)
	}
	// Writes cannot be served: node 2 is read-only (1290, which the server gives before
	// the read-only session's 1792); the read-write pool finds no writer. One counter
	// says so for both.
	_, werr := db.ExecContext(ctx, "INSERT INTO "+harness.AppDB+".metrics_w VALUES (1)")
	var me *mysql.MySQLError
	if !errors.As(werr, &me) || me.Number != 1290 {
		t.Errorf("a write on node 2 (read-only): %v, want error 1290", werr)
	}
	wctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
	_, rwErr := rwDB.ExecContext(wctx, "INSERT INTO "+harness.AppDB+".metrics_w VALUES (2)")
	cancel()
	var nh *failover.NoHostAvailableError
	if !errors.As(rwErr, &nh) {
		t.Errorf("a write on the read-write pool with no writer: %v, want a *failover.NoHostAvailableError", rwErr)
	} else {
		// README's row "no writer": the replicas answer and are skipped for their role,
		// nothing ran, so SafeToRetry says RetryStatement.
		skipped := 0
		for _, h := range nh.Hosts[1:] {
			switch {
			case h.Err != nil && strings.Contains(h.Err.Error(), "skipped: role is standby, wanted read-write"):
				skipped++
			case h.Err != nil || nh.Err == nil: // not tried: only when the deadline ended the walk
				t.Errorf("no writer: %s's HostError %v, want skipped for its role", h.Host, h.Err)
			}
		}
		if skipped == 0 {
			t.Errorf("no writer: no replica skipped for its role in %v", rwErr)
		}
		if r := mysqlfailover.SafeToRetry(rwErr); r != mysqlfailover.RetryStatement {
			t.Errorf("no writer: SafeToRetry(%v) = %v, want RetryStatement", rwErr, r)
		}
	}
	after = scrapeProm(t, srv.URL)
	if n := after.value("mysqlfailover_write_refusals_total"); n < 1 {
		t.Errorf("write_refusals_total %v after a write refused with 1290, want at least 1", n)
	}
	after.want(t, "mysqlfailover_writer_available", 0)
	var rwAfter *scrape
	if !healthPoll(5*time.Second, func() bool {
		rwAfter = scrapeURL(t, srv.URL+"/rw")
		return rwAfter.value("mysqlfailover_host_role", "host", h1, "role", "unknown") == 1
	}) {
		t.Errorf("read-write pool: node 1's role after kill -9:\n%s", rwAfter.grep("mysqlfailover_host_role"))
	}
	rwAfter.want(t, "mysqlfailover_host_role", 0, "host", h1, "role", "primary")
	rwAfter.want(t, "mysqlfailover_writer_available", 0)
	if n := rwAfter.value("mysqlfailover_write_refusals_total"); n < 1 {
		t.Errorf("read-write pool: write_refusals_total %v after a write found no writer, want at least 1", n)
	}
	// The read-write pool uses no host while no writer answers: no host reads active,
	// not the dead node 1 (Stats.Active ""). Its caller got the NoHostAvailableError:
	// a caller's error, as the any pool's caller got the 1290.
	for _, n := range c.Nodes() {
		rwAfter.want(t, "mysqlfailover_host_active", 0, "host", n.ProxyAddr())
	}
	if a := rwConn.Stats().Active; a != "" {
		t.Errorf("read-write pool with no writer: Stats.Active %q, want \"\"", a)
	}
	if n := rwAfter.value("mysqlfailover_caller_errors_total"); n < 1 {
		t.Errorf("read-write pool: caller_errors_total %v after its caller got a NoHostAvailableError, want at least 1", n)
	}
	if n := after.value("mysqlfailover_caller_errors_total"); n < 1 {
		t.Errorf("caller_errors_total %v after its caller got a 1290, want at least 1", n)
	}
	t.Logf("FIGURE %s: write_refusals any=%v read-write=%v", t.Name(), after.value("mysqlfailover_write_refusals_total"), rwAfter.value("mysqlfailover_write_refusals_total"))
	t.Logf("FIGURE %s: failovers=%v walks=%d walk_seconds_sum=%.4f probes_node2=%d", t.Name(),
		after.value("mysqlfailover_failovers_total"), walks, sum, after.histCount("mysqlfailover_probe_duration_seconds", "host", h2))

	// OpenTelemetry, from the same pool.
	var rm metricdata.ResourceMetrics
	must(t, reader.Collect(ctx, &rm))
	otel := otelPoints(rm)
	if n := otel["mysqlfailover.failovers"]; n < 1 {
		t.Errorf("otel mysqlfailover.failovers %v, want at least 1 (%v)", n, otel)
	}
	if n := otel["mysqlfailover.host.state|"+h1+"|up"]; n != 0 {
		t.Errorf("otel mysqlfailover.host.state of node 1 up=%v, want 0", n)
	}
	if n := otel["mysqlfailover.probe.duration|"+h2]; n < 1 {
		t.Errorf("otel probe histogram of node 2: %v points, want some (%v)", n, otel)
	}
	if n := otel["mysqlfailover.host.connection.count|"+h2]; n < 1 {
		t.Errorf("otel connections to node 2: %v, want at least 1", n)
	}

	// expvar, from the same pool.
	var vars map[string]json.RawMessage
	getJSON(t, srv.URL+"/debug/vars", &vars)
	var st struct {
		Active    string `json:"active"`
		Failovers int64  `json:"failovers"`
		Hosts     []struct {
			Host  string `json:"host"`
			State string `json:"state"`
		} `json:"hosts"`
	}
	must(t, json.Unmarshal(vars[name], &st))
	if st.Active != h2 || st.Failovers < 1 || len(st.Hosts) != 3 || st.Hosts[0].State == "up" {
		t.Errorf("expvar %s: %s, want node 2 active, a failover, node 1 not up", name, vars[name])
	}

	// The test's own hook, given after the two collectors', saw the events too.
	if n := ev.count(failover.EventSwitch, h2); n < 1 {
		t.Errorf("the test's own hook saw %d switches to node 2, want at least 1", n)
	}

	must(t, c.Node(1).Restart(ctx))
	var back *scrape
	if !healthPoll(20*time.Second, func() bool {
		back = scrapeProm(t, srv.URL)
		return back.value("mysqlfailover_fall_backs_total") >= 1
	}) {
		t.Fatalf("no fall-back counted 20 s after node 1 came back:\n%s", back.grep("mysqlfailover_fall_backs_total"))
	}
	back.want(t, "mysqlfailover_host_state", 1, "host", h1, "state", "up")
	back.want(t, "mysqlfailover_host_active", 1, "host", h1)
	// The monitor brought the pool back: the walk histogram has the fall-back's timing,
	// the wait for switchBackDelay (500 ms) of passing probes.
	if n, sum := back.histCount("mysqlfailover_walk_duration_seconds", "kind", "fall_back"), back.histSum("mysqlfailover_walk_duration_seconds", "kind", "fall_back"); n < 1 || sum < 0.5 {
		t.Errorf("walk histogram fall_back: %d samples, %v s; want at least one of switchBackDelay (0.5 s) or more", n, sum)
	}
	// Node 1's states: never back from down to suspect (down, suspect, down flaps).
	var seq []string
	for _, e := range ev.of(failover.EventHostState, h1, time.Time{}) {
		seq = append(seq, e.State.String())
	}
	for i := 1; i < len(seq); i++ {
		if seq[i-1] == "down" && seq[i] == "suspect" {
			t.Errorf("node 1's states %v: down, then suspect", seq)
			break
		}
	}
	t.Logf("node 1's states: %v", seq)
	if testing.Verbose() {
		t.Logf("sample scrape after the fall-back:\n%s", back.text)
	}
}

// replicaPhase: two pools on c's three nodes split reads (replicaReads=true,
// checkInterval=100ms), each with its own collector served on mux: "split" with no lag
// bound, "bounded" with maxReplicaLag=30s. Once their probes have judged the replicas, 20
// read-intent statements (WithReadIntent, no routing key) on each are scraped over HTTP
// (base is the server of mux):
//   - split: the replicas (nodes 2 and 3) serve every read, replica_reads_total counts
//     them (20 over the two), host_replica is 1 for them and 0 for the writer,
//     replica_to_primary_total and both causal_reads_total paths are exported at 0;
//   - both: the lag gauge is there for each host whose Stats lag is known (ReplicaLag >= 0,
//     at most 30 s on an idle cluster) and absent for each whose lag is unknown (the
//     writer, never a replica, always);
//   - bounded: with the replicas' lag known they serve as in split; with it unknown (no
//     lag reader, no privilege) neither qualifies, host_replica is 0 for every host, and
//     the reads run on the primary, counted by replica_to_primary_total.
//
// The pools are closed at the end.
func replicaPhase(ctx context.Context, t *testing.T, c *harness.Cluster, mux *http.ServeMux, base string) {
	h1, h2, h3 := c.Node(1).ProxyAddr(), c.Node(2).ProxyAddr(), c.Node(3).ProxyAddr()
	regs := map[string]*prometheus.Registry{}
	open := func(name, params string) (*sql.DB, *mysqlfailover.Connector) {
		cfg, err := dsn.Parse(fmt.Sprintf("%s:%s@tcp(%s;dc=east,%s;dc=east,%s;dc=west)/%s?readTimeout=2s&checkInterval=100ms&replicaReads=true%s",
			harness.AppUser, harness.AppPassword, h1, h2, h3, harness.AppDB, params))
		must(t, err)
		col := mysqlfailoverprom.New()
		cn, err := mysqlfailover.NewConnector(cfg, col.Option())
		must(t, err)
		col.SetConnector(cn)
		reg := prometheus.NewRegistry()
		reg.MustRegister(col)
		regs[name] = reg
		mux.Handle("/"+name, promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
		return sql.OpenDB(cn), cn
	}
	split, splitC := open("split", "")
	defer split.Close()
	bounded, boundedC := open("bounded", "&maxReplicaLag=30s")
	defer bounded.Close()
	for _, db := range []*sql.DB{split, bounded} {
		must(t, db.PingContext(ctx)) // the pool's first connection starts the monitor
	}
	// The replicas are judged once the probes have passed on them and read (or failed to
	// read) their lag: split's qualify; bounded's qualify, or are skipped for a lag
	// that stays unknown (given 3 s: 30 probe rounds).
	judged := func(cn *mysqlfailover.Connector, unknownOK bool) bool {
		s := cn.Stats()
		for _, h := range s.Hosts {
			if h.Addr == h1 {
				continue
			}
			if h.State != failover.HostUp || (h.ReplicaSkip != "" && !(unknownOK && strings.HasPrefix(h.ReplicaSkip, "lag unknown"))) {
				return false
			}
		}
		return true
	}
	if !healthPoll(10*time.Second, func() bool { return judged(splitC, false) }) {
		t.Fatalf("split: replicas not qualifying 10 s after the pool opened: %+v", splitC.Stats().Hosts)
	}
	if !healthPoll(10*time.Second, func() bool { return judged(boundedC, true) }) {
		t.Fatalf("bounded: replicas neither qualifying nor skipped for an unknown lag after 10 s: %+v", boundedC.Stats().Hosts)
	}
	healthPoll(3*time.Second, func() bool { return judged(boundedC, false) }) // a lag being read

	const reads = 20
	run := func(db *sql.DB) map[int]int {
		nodes := map[int]int{}
		for range reads {
			n, err := nodeOf(mysqlfailover.WithReadIntent(ctx, ""), c, db)
			must(t, err)
			nodes[n]++
		}
		return nodes
	}
	splitNodes, boundedNodes := run(split), run(bounded)
	splitS, boundedS := splitC.Stats(), boundedC.Stats()
	sc, bc := scrapeURL(t, base+"/split"), scrapeURL(t, base+"/bounded")
	t.Logf("split reads by node %v; bounded reads by node %v", splitNodes, boundedNodes)
	if testing.Verbose() {
		t.Logf("sample scrape of the replica metrics, split pool:\n%s\n%s\n%s\nbounded pool:\n%s\n%s\n%s", sc.grep("mysqlfailover_host_replica"),
			sc.grep("mysqlfailover_replica_"), sc.grep("mysqlfailover_causal_reads_total"),
			bc.grep("mysqlfailover_host_replica"), bc.grep("mysqlfailover_replica_"), bc.grep("mysqlfailover_causal_reads_total"))
	}

	// split: the replicas served every read, and their counters say so.
	if splitNodes[1] != 0 || splitNodes[2]+splitNodes[3] != reads {
		t.Errorf("split: reads by node %v, want all %d on nodes 2 and 3", splitNodes, reads)
	}
	if n := sc.value("mysqlfailover_host_replica_reads_total", "host", h2) + sc.value("mysqlfailover_host_replica_reads_total", "host", h3); n != reads {
		t.Errorf("split: replica_reads_total of nodes 2 and 3 sum to %v, want %d\n%s", n, reads, sc.grep("mysqlfailover_host_replica_reads_total"))
	}
	sc.want(t, "mysqlfailover_host_replica_reads_total", 0, "host", h1, "dc", "east")
	sc.want(t, "mysqlfailover_host_replica", 0, "host", h1, "dc", "east")
	sc.want(t, "mysqlfailover_host_replica", 1, "host", h2, "dc", "east")
	sc.want(t, "mysqlfailover_host_replica", 1, "host", h3, "dc", "west")
	sc.want(t, "mysqlfailover_replica_to_primary_total", 0)
	sc.want(t, "mysqlfailover_replica_retries_total", 0)
	sc.want(t, "mysqlfailover_causal_reads_total", 0, "path", "waited")
	sc.want(t, "mysqlfailover_causal_reads_total", 0, "path", "primary")

	// The lag gauge follows Stats: present where the lag is known, absent elsewhere.
	known := 0
	for _, p := range []struct {
		name string
		sc   *scrape
		s    failover.Stats
	}{{"split", sc, splitS}, {"bounded", bc, boundedS}} {
		for _, h := range p.s.Hosts {
			m := p.sc.find("mysqlfailover_host_replica_lag_seconds", "host", h.Addr)
			switch {
			case h.ReplicaLag < 0 && m != nil:
				t.Errorf("%s: lag gauge of %s with its lag unknown (%s):\n%s", p.name, h.Addr, h.ReplicaSkip, p.sc.grep("mysqlfailover_host_replica_lag_seconds"))
			case h.ReplicaLag >= 0 && m == nil:
				t.Errorf("%s: no lag gauge of %s, whose lag is %v", p.name, h.Addr, h.ReplicaLag)
			case h.ReplicaLag >= 0:
				known++
				if v := m.Gauge.GetValue(); v < 0 || v > 30 {
					t.Errorf("%s: lag of %s %v s on an idle cluster", p.name, h.Addr, v)
				}
			}
			if h.Addr == h1 && m != nil {
				t.Errorf("%s: lag gauge of the writer, never a replica", p.name)
			}
		}
	}
	if known == 0 {
		t.Logf("NOTE: no replica lag known (node 2: %q): the lag gauge's presence was not checked", boundedS.Hosts[1].ReplicaSkip)
	}

	// bounded: as split with the lag known, else every read on the primary.
	if judged(boundedC, false) {
		if boundedNodes[1] != 0 {
			t.Errorf("bounded, lag known: reads by node %v, want none on node 1", boundedNodes)
		}
		if n := bc.value("mysqlfailover_host_replica_reads_total", "host", h2) + bc.value("mysqlfailover_host_replica_reads_total", "host", h3); n != reads {
			t.Errorf("bounded, lag known: replica_reads_total sum %v, want %d", n, reads)
		}
		bc.want(t, "mysqlfailover_replica_to_primary_total", 0)
	} else {
		t.Logf("NOTE: bounded pool: replica lag unknown (%q): its reads went to the primary", boundedS.Hosts[1].ReplicaSkip)
		if boundedNodes[1] != reads {
			t.Errorf("bounded, lag unknown: reads by node %v, want all %d on node 1", boundedNodes, reads)
		}
		bc.want(t, "mysqlfailover_replica_to_primary_total", reads)
		for _, h := range []string{h1, h2, h3} {
			bc.want(t, "mysqlfailover_host_replica", 0, "host", h)
			bc.want(t, "mysqlfailover_host_replica_reads_total", 0, "host", h)
		}
	}

	// Without probes the pool knows a replica from its first read there: before it a
	// replica is unknown and does not read as serving (host_replica 0, not 1 beside
	// unknown); once it has served reads it is up and serving.
	ucfg, err := dsn.Parse(c.DSN("readTimeout=2s&replicaReads=true"))
	must(t, err)
	ucol := mysqlfailoverprom.New()
	ucn, err := mysqlfailover.NewConnector(ucfg, ucol.Option())
	must(t, err)
	ucol.SetConnector(ucn)
	regs["unprobed"] = prometheus.NewRegistry()
	regs["unprobed"].MustRegister(ucol)
	mux.Handle("/unprobed", promhttp.HandlerFor(regs["unprobed"], promhttp.HandlerOpts{}))
	unprobed := sql.OpenDB(ucn)
	defer unprobed.Close()
	must(t, unprobed.PingContext(ctx))
	fresh := scrapeURL(t, base+"/unprobed")
	for _, h := range []string{h2, h3} {
		fresh.want(t, "mysqlfailover_host_state", 1, "host", h, "state", "unknown")
		fresh.want(t, "mysqlfailover_host_replica", 0, "host", h)
	}
	unprobedNodes := run(unprobed)
	used := scrapeURL(t, base+"/unprobed")
	for k, h := range []string{h2, h3} {
		if unprobedNodes[k+2] == 0 {
			continue // round-robin sent it no read (it should have)
		}
		used.want(t, "mysqlfailover_host_state", 1, "host", h, "state", "up")
		used.want(t, "mysqlfailover_host_replica", 1, "host", h)
	}
	if unprobedNodes[2] == 0 || unprobedNodes[3] == 0 {
		t.Errorf("unprobed: reads by node %v, want some on nodes 2 and 3", unprobedNodes)
	}
	for name, reg := range regs {
		if problems, err := testutil.GatherAndLint(reg); err != nil || len(problems) > 0 {
			t.Errorf("%s: promlint: %v %v", name, problems, err)
		}
	}
}

// scrape is one parsed text exposition.
type scrape struct {
	text string
	fams map[string]*dto.MetricFamily
}

func scrapeProm(t *testing.T, base string) *scrape {
	t.Helper()
	return scrapeURL(t, base+"/metrics")
}

// scrapeURL scrapes the text exposition at url.
func scrapeURL(t *testing.T, url string) *scrape {
	t.Helper()
	resp, err := http.Get(url)
	must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	must(t, err)
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain") {
		t.Fatalf("content type %q, want the text exposition", ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
	if err != nil {
		t.Fatalf("parse the exposition: %v\n%s", err, b)
	}
	return &scrape{text: string(b), fams: fams}
}

// find returns the sample of family name whose labels include labels (name, value
// pairs), nil if none.
func (s *scrape) find(name string, labels ...string) *dto.Metric {
	f := s.fams[name]
	if f == nil {
		return nil
	}
next:
	for _, m := range f.Metric {
		for i := 0; i+1 < len(labels); i += 2 {
			ok := false
			for _, lp := range m.Label {
				if lp.GetName() == labels[i] && lp.GetValue() == labels[i+1] {
					ok = true
				}
			}
			if !ok {
				continue next
			}
		}
		return m
	}
	return nil
}

// value returns a gauge's or counter's value, -1 when the sample is absent.
func (s *scrape) value(name string, labels ...string) float64 {
	m := s.find(name, labels...)
	switch {
	case m == nil:
		return -1
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return -1
}

func (s *scrape) histCount(name string, labels ...string) uint64 {
	if m := s.find(name, labels...); m != nil && m.Histogram != nil {
		return m.Histogram.GetSampleCount()
	}
	return 0
}

func (s *scrape) histSum(name string, labels ...string) float64 {
	if m := s.find(name, labels...); m != nil && m.Histogram != nil {
		return m.Histogram.GetSampleSum()
	}
	return 0
}

func (s *scrape) want(t *testing.T, name string, v float64, labels ...string) {
	t.Helper()
	if got := s.value(name, labels...); got != v {
		t.Errorf("%s%v = %v, want %v\n%s", name, labels, got, v, s.grep(name))
	}
}

// grep returns the exposition's lines of family name.
func (s *scrape) grep(name string) string {
	var out []string
	for _, l := range strings.Split(s.text, "\n") {
		if strings.HasPrefix(l, name) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// otelPoints flattens a collection: "name" for a point without attributes,
// "name|host:port" for a host's, "name|host:port|state" for host.state; the value of gauges
// and sums, the count of histograms.
func otelPoints(rm metricdata.ResourceMetrics) map[string]float64 {
	out := map[string]float64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch d := m.Data.(type) {
			case metricdata.Gauge[int64]:
				for _, p := range d.DataPoints {
					out[otelKey(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					out[otelKey(m.Name, p.Attributes)] = float64(p.Value)
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					out[otelKey(m.Name, p.Attributes)] = float64(p.Count)
				}
			}
		}
	}
	return out
}

func otelKey(name string, attrs attribute.Set) string {
	k := name
	if v, ok := attrs.Value("server.address"); ok {
		p, _ := attrs.Value("server.port")
		k += "|" + net.JoinHostPort(v.AsString(), strconv.FormatInt(p.AsInt64(), 10))
	}
	if v, ok := attrs.Value("mysqlfailover.host.state"); ok {
		k += "|" + v.AsString()
	}
	return k
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	must(t, err)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	must(t, json.NewDecoder(resp.Body).Decode(v))
}
