//go:build linux

// Command benchpeers measures mysqlfailover against its peers on one local cluster, in
// one run, and prints the tables of BENCHMARKS.md (markdown) on stdout; progress goes to
// stderr.
//
//	make bench-peers                       (from the root: installs the peers, runs this)
//	go run ./cmd/benchpeers                (from the integration module)
//	BENCH_QUICK=1 go run ./cmd/benchpeers  (a smoke run of about a minute)
//
// The cluster is package harness's: node 1 the primary, node 2 a read-only GTID replica,
// each behind a toxiproxy proxy. The clients, side by side:
//
//   - go-sql-driver, straight to node 1 (one host: it cannot fail over; the baseline);
//   - mysqlfailover with probing off, and with probing at checkInterval=200ms&
//     failoverDelay=500ms and at checkInterval=100ms&failoverDelay=100ms;
//   - go-sql-driver through HAProxy (Debian's package), option tcp-check and option
//     mysql-check, inter 200 fall 2 rise 2, node 1 the server and node 2 its backup;
//   - MariaDB Connector/J (Debian's libmariadb-java) in failover mode "sequential",
//     through PeerJ.java, compiled with javac at run time.
//
// Two measurements:
//
//   - latency: one connection, SELECT 1 and a point SELECT with an argument, on node 1
//     without toxiproxy, each Go path as testing.Benchmark (ns/op, allocs/op, B/op, and
//     the process's CPU time per call), Connector/J timed in its JVM; rounds interleaved,
//     every ratio to go-sql-driver taken within a round;
//   - faults: kill -9, SIGSTOP and a blackhole of node 1 under 1, 16 and 64 workers per
//     client (SELECT @@port, then a pause), every client at once on the same fault; the
//     time to the first success elsewhere, the caller errors, the longest call; then the
//     fault healed and the time until the traffic is back on node 1.
//
// Environment: BENCH_QUICK=1 (one round, 1 worker, shorter phases), BENCH_KEEP=1 (keep the
// work directory: HAProxy's configuration and log, every call of every round as .tsv),
// BENCH_REPEAT (fault rounds, default 3), BENCH_LAT_ROUNDS (default 9), BENCH_NO_JAVA=1
// (no Connector/J), MYSQLFAILOVER_CONNECTORJ (the jar, default
// /usr/share/java/mariadb-java-client.jar).
// Needs a MariaDB server (scripts/ensure-server.sh), haproxy, and for Connector/J java
// and javac (scripts/ensure-peers.sh). Linux only (the children get Pdeathsig).
package main

import (
	"context"
	_ "embed"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

//go:embed PeerJ.java
var peerJSource []byte

// settings of the run.
type settings struct {
	quick     bool
	repeat    int
	latRounds int
	benchtime time.Duration
	workers   []int
	hold      time.Duration // how long each fault lasts
	window    time.Duration // how long after healing the fall-back is watched
	java      bool
	jar       string
}

func main() { os.Exit(run()) }

func run() int {
	testing.Init()
	mysql.SetLogger(log.New(io.Discard, "", 0)) // the faults make go-sql-driver log every broken read
	s := settings{
		repeat: 3, latRounds: 9, benchtime: 250 * time.Millisecond,
		workers: []int{1, 16, 64}, hold: 4 * time.Second, window: 5 * time.Second,
		java: os.Getenv("BENCH_NO_JAVA") != "1",
		jar:  envOr("MYSQLFAILOVER_CONNECTORJ", "/usr/share/java/mariadb-java-client.jar"),
	}
	if os.Getenv("BENCH_QUICK") == "1" {
		s.quick, s.repeat, s.latRounds, s.benchtime = true, 1, 1, 150*time.Millisecond
		s.workers, s.hold, s.window = []int{1}, 3*time.Second, 3*time.Second
	}
	if v, err := strconv.Atoi(os.Getenv("BENCH_REPEAT")); err == nil && v > 0 {
		s.repeat = v
	}
	if v, err := strconv.Atoi(os.Getenv("BENCH_LAT_ROUNDS")); err == nil && v > 0 {
		s.latRounds = v
	}
	flag.Set("test.benchtime", s.benchtime.String())

	began := time.Now()
	loadBefore := harness.LoadAverage()
	logf("load average before: %s", loadBefore)

	dir, err := os.MkdirTemp("", "benchpeers-")
	if err != nil {
		return fail(err)
	}
	if keep := os.Getenv("BENCH_KEEP"); keep == "1" {
		traceDir = dir
		logf("BENCH_KEEP=1: keeping %s (haproxy.cfg, haproxy.log, one .tsv of calls per client and round)", dir)
	} else {
		defer os.RemoveAll(dir)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	c, err := harness.StartCluster(ctx, 2,
		harness.WithNodeArgs(1, "--max-connections=1000", "--max-connect-errors=1000000000"),
		harness.WithNodeArgs(2, "--max-connections=1000", "--max-connect-errors=1000000000"))
	cancel()
	if err != nil {
		if errors.Is(err, harness.ErrNoServer) {
			return fail(fmt.Errorf("%v (make server installs one)", err))
		}
		return fail(err)
	}
	defer c.Close()
	logf("cluster up in %v", c.BringUp().Round(time.Millisecond))
	bg := context.Background()
	if err := c.Node(1).Exec(bg, "CREATE USER IF NOT EXISTS "+checkUser+"@'%'"); err != nil {
		return fail(err)
	}
	if err := c.WaitReplicasCaughtUp(bg); err != nil {
		return fail(err)
	}
	version, _ := c.Node(1).QueryString(bg, "SELECT VERSION()")

	direct := []string{c.Node(1).Addr(), c.Node(2).Addr()}
	proxied := []string{c.Node(1).ProxyAddr(), c.Node(2).ProxyAddr()}
	hp, err := startHAProxy(dir, direct, proxied)
	if err != nil {
		return fail(err)
	}
	defer hp.close()

	var java, javaLat *javaClient
	javaNote := ""
	if s.java {
		cp, err := compileJava(dir, s.jar)
		if err == nil {
			// C1 only: the fault rounds start a JVM each, and time recovery, not the JIT.
			java = &javaClient{label: "Connector/J sequential", nodeOf: c.NodeByPort, classpath: cp,
				jvmArgs: []string{"-XX:TieredStopAtLevel=1"}}
			javaLat = &javaClient{label: "Connector/J latency", nodeOf: c.NodeByPort, classpath: cp}
			err = javaLat.launch()
		}
		if err != nil {
			javaNote = fmt.Sprintf("Connector/J left out: %v", err)
			logf("%s", javaNote)
			java, javaLat = nil, nil
		}
	} else {
		javaNote = "Connector/J left out: BENCH_NO_JAVA=1"
	}

	const goParams = "readTimeout=1s&timeout=1s"
	addrs := func(viaProxy bool) []string {
		if viaProxy {
			return proxied
		}
		return direct
	}
	dsnOf := func(list []string, params string) string {
		return harness.AppUser + ":" + harness.AppPassword + "@tcp(" + strings.Join(list, ",") + ")/" + harness.AppDB + "?" + params
	}
	mf := func(label, params string) client {
		return &goClient{label: label, driver: "mysqlfailover", nodeOf: c.NodeByPort,
			dsn: func(p bool) string { return dsnOf(addrs(p), goParams+"&"+params) }}
	}
	ha := func(label, check string) client {
		return &goClient{label: label, driver: "mysql", nodeOf: c.NodeByPort, dsn: func(p bool) string {
			via := "direct"
			if p {
				via = "proxied"
			}
			return dsnOf([]string{hp.addr[check+"/"+via]}, goParams)
		}}
	}
	clients := []client{
		&goClient{label: "go-sql-driver (node 1 only)", driver: "mysql", nodeOf: c.NodeByPort,
			dsn: func(p bool) string { return dsnOf(addrs(p)[:1], goParams) }},
		mf("mysqlfailover, probing off", "secondsBeforeRetryMaster=1&queriesBeforeRetryMaster=0"),
		mf("mysqlfailover, probing 200ms/500ms", "checkInterval=200ms&failoverDelay=500ms&switchBackDelay=1s"),
		mf("mysqlfailover, probing 100ms/100ms", "checkInterval=100ms&failoverDelay=100ms&switchBackDelay=1s"),
		ha("HAProxy tcp-check + go-sql-driver", "tcp"),
		ha("HAProxy mysql-check + go-sql-driver", "mysql"),
	}
	jdbcURL := func(list []string) string {
		return "jdbc:mariadb:sequential://" + strings.Join(list, ",") + "/" + harness.AppDB +
			"?user=" + harness.AppUser + "&password=" + harness.AppPassword + "&socketTimeout=1000&connectTimeout=1000"
	}
	if java != nil {
		java.url = func(p bool) string { return jdbcURL(addrs(p)) }
		clients = append(clients, java)
	}

	// Latency.
	paths := []latPath{
		{label: "go-sql-driver", driver: "mysql", dsn: c.DirectDSN(1, "")},
		{label: "mysqlfailover, probing off", driver: "mysqlfailover", dsn: c.DirectClusterDSN("")},
		{label: "mysqlfailover, probing 200ms/500ms", driver: "mysqlfailover", dsn: c.DirectClusterDSN("checkInterval=200ms&failoverDelay=500ms")},
		{label: "go-sql-driver through HAProxy", driver: "mysql", dsn: dsnOf([]string{hp.addr["tcp/direct"]}, "")},
	}
	if java != nil {
		paths = append(paths, latPath{label: "Connector/J sequential", url: jdbcURL(direct)})
	}
	logf("latency: %d rounds of %d paths x %d statements, %v each", s.latRounds, len(paths), len(latStmts), s.benchtime)
	lat, err := latRounds(c, paths, javaLat, s.latRounds, s.benchtime)
	if javaLat != nil {
		javaLat.close()
	}
	if err != nil {
		return fail(fmt.Errorf("latency: %w", err))
	}

	// Faults.
	results := map[string]map[int]map[string][]figures{}
	var skipped []string
	for rep := range s.repeat {
		for _, f := range faults {
			if results[f.name] == nil {
				results[f.name] = map[int]map[string][]figures{}
			}
			for _, w := range s.workers {
				if results[f.name][w] == nil {
					results[f.name][w] = map[string][]figures{}
				}
				logf("fault round %d/%d: %s, %d workers (load %s)", rep+1, s.repeat, f.name, w, harness.LoadAverage())
				figs, err := runFault(c, f, clients, w, s, fmt.Sprintf("%s-%dw-r%d", strings.ReplaceAll(f.name, " ", ""), w, rep+1))
				if err != nil {
					// One round lost is a figure less, not a run lost: say so in the report.
					msg := fmt.Sprintf("round %d, %s, %d workers: %v", rep+1, f.name, w, err)
					logf("skipped %s", msg)
					skipped = append(skipped, msg)
					continue
				}
				for name, fg := range figs {
					results[f.name][w][name] = append(results[f.name][w][name], fg)
				}
			}
		}
	}

	loadAfter := harness.LoadAverage()
	logf("load average after: %s", loadAfter)
	report(reportInput{
		s: s, began: began, took: time.Since(began), loadBefore: loadBefore, loadAfter: loadAfter,
		version: version, haproxy: firstLine("haproxy", "-v"), java: javaVersion(s), javaNote: javaNote,
		paths: paths, lat: lat, clients: clients, results: results, skipped: skipped,
	})
	return 0
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "benchpeers: "+format+"\n", args...)
}

func fail(err error) int {
	fmt.Fprintln(os.Stderr, "benchpeers:", err)
	return 1
}

func firstLine(name string, args ...string) string {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return "unknown"
	}
	l, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return l
}

func javaVersion(s settings) string {
	if !s.java {
		return ""
	}
	v := firstLine("java", "-version")
	if t, err := os.Readlink(s.jar); err == nil {
		v += "; " + t
	} else {
		v += "; " + s.jar
	}
	return v
}
