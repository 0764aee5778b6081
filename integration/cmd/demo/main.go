// Command demo shows what an application sees when its MySQL/MariaDB primary dies, through
// mysqlfailover, as two stories side by side. Each story has its own local three-node
// MariaDB cluster (package harness: node 1 the primary, nodes 2 and 3 read-only GTID
// replicas, each behind a TCP proxy), and both run at once, on the same schedule:
//
//   - Story 1, reads: four readers run SELECT @@port (which tells the node that answered)
//     every 50 ms through the default failover DSN. Node 1 is killed (SIGKILL) 2 s in:
//     reads carry on on node 2; a read in flight at the kill gets a
//     *failover.FailoverError, for which mysqlfailover.SafeToRetry says RetryStatement (a
//     read), and runs again at once there. 3 s later node 1 is restarted, as the primary
//     again, and the pool falls back to it.
//   - Story 2, writes: four writers run an INSERT every 50 ms through a DSN with
//     targetSessionAttrs=read-write. Node 1 is killed at the same moment; no server takes
//     writes until, 2 s later, the demo promotes node 2 as an orchestrator would (node 2
//     read_only=OFF and no longer a replica, node 3 re-pointed at it). Writes resume on
//     node 2 at once. Node 1 is then restarted read-only, as a failed primary must come
//     back, and the writes stay on node 2.
//
// Every request has a 1 s deadline, as in a request handler. The demo prints what it does
// as it does it, then each story's timeline, a summary of each story and a closing
// summary, and with -svg PATH writes a chart of every request's latency and serving node
// over time (SVG; none by default, so that a run writes nothing into the checkout).
//
//	go run ./cmd/demo [-svg timeline.svg]   (from the integration module; `make demo`)
//
// Everything it starts is stopped on exit, also on Ctrl-C (the servers also die with the
// process on Linux). If something fails, the detailed log (every event and error, the
// driver's own log, the servers' logs) is kept and its directory printed. Without a
// MariaDB server binary it says how to install one and exits with status 1. It exits with
// status 1 too when a story does not end as it should (the summary marks what with "!!").
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// The schedule, from the start of the workloads.
const (
	workers        = 4
	period         = 50 * time.Millisecond // between two requests of one worker
	requestTimeout = time.Second           // each request's deadline
	killAt         = 2 * time.Second       // node1 killed, in both clusters
	promoteAfter   = 2 * time.Second       // story 2: node2 promoted, after the kill
	restartAfter   = 3 * time.Second       // node1 restarted, after the kill, in both clusters
	afterFallBack  = 1500 * time.Millisecond
	minRun         = killAt + restartAfter + 2*time.Second

	readParams  = "readTimeout=1s&secondsBeforeRetryMaster=3"
	writeParams = "readTimeout=1s&secondsBeforeRetryMaster=3&targetSessionAttrs=read-write"
)

func main() {
	svg := chartFlag(flag.CommandLine)
	flag.Parse()
	os.Exit(run(*svg))
}

// chartFlag defines -svg on fs: where to write the chart, none by default (README
// presents the chart as opt-in, and a default path would write into the checkout).
func chartFlag(fs *flag.FlagSet) *string {
	return fs.String("svg", "", "where to write the timeline chart (SVG); empty (the default): no chart")
}

func run(svgPath string) (code int) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	// The detailed log: kept, with the servers' logs, when something fails.
	logDir, err := os.MkdirTemp("", "mysqlfailover-demo-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	logFile, err := os.Create(filepath.Join(logDir, "demo.log"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	detail := log.New(logFile, "", log.Ltime|log.Lmicroseconds)
	mysql.SetLogger(log.New(logFile, "[go-sql-driver] ", log.Ltime|log.Lmicroseconds))

	// The servers' directories: under the harness's usual place, in a directory of ours,
	// so that their logs can be found (and copied) before the clusters remove them.
	workDir, err := os.MkdirTemp(serverBase(), "mfdemo-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	defer os.RemoveAll(workDir)

	kept := false
	keepLogs := func() {
		kept = true
		copyServerLogs(workDir, logDir, detail)
		fmt.Fprintf(os.Stderr, "\nlogs: %s (demo.log: every event and error; *-node*.log: the servers' error logs)\n", logDir)
	}
	defer func() {
		logFile.Close()
		if !kept {
			os.RemoveAll(logDir)
		}
	}()

	fmt.Println("mysqlfailover demo: what an application sees when its primary dies, in two stories")
	fmt.Println("Each story runs on its own local 3-node MariaDB cluster (node1 the primary, node2 and")
	fmt.Println("node3 read-only replicas), both at once, on the same schedule:")
	fmt.Println("  Story 1, reads:  node1 is killed, then restarted; reads go on on a replica and come back.")
	fmt.Println("  Story 2, writes: node1 is killed; node2 is promoted, as an orchestrator would; writes resume there.")
	fmt.Println("Each story's DSN lists node1, node2, node3 in that order, each through a local TCP proxy.")

	clusters, err := startClusters(ctx, workDir, detail)
	if err != nil {
		if errors.Is(err, harness.ErrNoServer) {
			msg, _, _ := strings.Cut(err.Error(), "\n") // one line of the first node's error
			fmt.Fprintf(os.Stderr, "demo: %s\n\nInstall MariaDB first:\n"+
				"  Debian/Ubuntu:  sudo apt-get install mariadb-server\n"+
				"  macOS:          brew install mariadb\n"+
				"or set %s to the path of a mariadbd binary.\n", msg, harness.EnvServer)
			return 1
		}
		detail.Printf("start: %v", err)
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "demo: interrupted while starting the clusters")
			return 130
		}
		fmt.Fprintf(os.Stderr, "demo: starting the clusters failed: %v\n", err)
		keepLogs()
		return 1
	}
	defer func() {
		for _, c := range clusters {
			if err := c.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "demo: stopping a cluster: %v\n", err)
			}
		}
	}()

	reads, writes, code := demo(ctx, clusters[0], clusters[1], detail)
	if code == 130 {
		return code
	}
	if reads != nil && writes != nil {
		if c := report(reads, writes, svgPath); c != 0 {
			code = c
		}
	}
	if code == 1 {
		keepLogs()
	}
	return code
}

// startClusters starts the two clusters in parallel: story 1's as the harness makes it,
// story 2's with node1 configured read_only=ON (see prepareWrites).
func startClusters(ctx context.Context, workDir string, detail *log.Logger) ([]*harness.Cluster, error) {
	startCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	begin := time.Now()
	clusters := make([]*harness.Cluster, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for k, name := range []string{"reads", "writes"} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dir := filepath.Join(workDir, name)
			if err := os.Mkdir(dir, 0o700); err != nil {
				errs[k] = err
				return
			}
			logf := func(format string, args ...any) { detail.Printf("["+name+"] "+format, args...) }
			opts := []harness.Option{harness.WithBackend(&harness.LocalBackend{Dir: dir, Logf: logf}), harness.WithLogf(logf)}
			if name == "writes" {
				opts = append(opts, harness.WithNodeArgs(1, "--read-only"))
			}
			clusters[k], errs[k] = harness.StartCluster(startCtx, 3, opts...)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range clusters {
			if c != nil {
				c.Close()
			}
		}
		return nil, err
	}
	fmt.Printf("\ntwo clusters up in %v\n", time.Since(begin).Round(time.Millisecond))
	return clusters, nil
}

// serverBase is where the harness would put the servers (MYSQLFAILOVER_TMPDIR,
// /dev/shm, the temp dir).
func serverBase() string {
	if d := os.Getenv(harness.EnvTmpDir); d != "" {
		return d
	}
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() && syscall.Access("/dev/shm", 2) == nil {
		return "/dev/shm"
	}
	return os.TempDir()
}

// copyServerLogs copies every node's error log next to demo.log, as reads-node1.log etc.
func copyServerLogs(workDir, logDir string, detail *log.Logger) {
	logs, _ := filepath.Glob(filepath.Join(workDir, "*", "*", "node*", "error.log"))
	for _, p := range logs {
		node := filepath.Base(filepath.Dir(p))
		story := filepath.Base(filepath.Dir(filepath.Dir(filepath.Dir(p))))
		if err := copyFile(p, filepath.Join(logDir, story+"-"+node+".log")); err != nil {
			detail.Printf("copy %s: %v", p, err)
		}
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// report prints both timelines, the summaries and the closing summary, and writes the
// chart. It returns 1 when a story did not end as it should.
func report(reads, writes *story, svgPath string) int {
	code := 0
	for _, s := range []*story{reads, writes} {
		fmt.Printf("\n%s\n", s.title)
		fmt.Printf("  DSN  %s\n  load %s\n\n", s.dsn, s.load)
		for _, l := range timeline(s) {
			fmt.Println(l)
		}
		if ex := errorExamples(s); len(ex) > 0 {
			fmt.Printf("\n  what the failed %s returned (the first of each kind):\n", s.short)
			for _, l := range ex {
				fmt.Println(l)
			}
		}
		var lines []string
		var ok bool
		if s == reads {
			lines, ok = readSummary(s)
		} else {
			lines, ok = writeSummary(s)
		}
		fmt.Println()
		for _, l := range lines {
			fmt.Println("  " + l)
		}
		if !ok {
			code = 1
		}
	}
	fmt.Println("\nSummary")
	for _, l := range finalSummary(reads, writes) {
		fmt.Println(strings.TrimRight("  "+l, " "))
	}
	if svgPath != "" {
		if err := saveChart(svgPath, reads, writes); err != nil {
			fmt.Fprintln(os.Stderr, "demo: chart:", err)
			return 1
		}
		abs, _ := filepath.Abs(svgPath)
		fmt.Printf("\nchart: %s (latency and serving node of every request, both stories)\n", abs)
	}
	return code
}

func saveChart(path string, reads, writes *story) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := writeChart(f, "mysqlfailover demo: the primary dies under load", []*story{reads, writes}); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
