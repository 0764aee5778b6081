// Command demo shows mysqlfailover riding through the loss of its primary, live, against
// a local three-node MariaDB cluster (package harness: node 1 the primary, nodes 2 and 3
// read-only GTID replicas, each behind a toxiproxy proxy).
//
//	go run ./cmd/demo        (from the integration module; `make demo` does the same)
//
// Four goroutines each run an INSERT and a SELECT @@port every 50 ms through one
// mysqlfailover pool (DSN readTimeout=1s&secondsBeforeRetryMaster=3). After about 2 s the
// primary is killed with SIGKILL; about 3 s later it is restarted, and the pool falls back
// to it. The timeline on stdout has one line per driver event, error or action of the
// demo, and one line per 250 ms tick (identical quiet ticks merged) saying which node
// served the statements; a summary follows: time to recover, errors, statements per node,
// fall-back time.
//
// Everything it starts is stopped on exit, also on Ctrl-C (the servers also die with the
// process on Linux). If something fails, the detailed log (every event and error, the
// driver's own log, the servers' logs) is kept and its directory printed. Without a
// MariaDB server binary it says how to install one and exits with status 1.
package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

const (
	workers       = 4
	period        = 50 * time.Millisecond
	tickEvery     = 250 * time.Millisecond
	beforeKill    = 2 * time.Second
	beforeRestart = 3 * time.Second
	afterFallBack = time.Second
	dsnParams     = "readTimeout=1s&secondsBeforeRetryMaster=3"
)

func main() { os.Exit(run()) }

func run() (code int) {
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

	var c *harness.Cluster
	kept := false
	keepLogs := func() {
		kept = true
		if c != nil {
			copyServerLogs(logDir, detail)
		}
		fmt.Fprintf(os.Stderr, "\nlogs: %s (demo.log: every event and error; node*.log: the servers' error logs)\n", logDir)
	}
	defer func() {
		logFile.Close()
		if !kept {
			os.RemoveAll(logDir)
		}
	}()

	// The servers' directories: under the harness's usual place, in a directory of ours,
	// so that their logs can be found (and copied) before the cluster removes them.
	workDir, err := os.MkdirTemp(serverBase(), "mfdemo-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	defer os.RemoveAll(workDir)
	backendDir = workDir

	fmt.Println("mysqlfailover demo: a 3-node MariaDB cluster, the primary killed under load")
	startCtx, cancelStart := context.WithTimeout(ctx, 2*time.Minute)
	c, err = harness.StartCluster(startCtx, 3,
		harness.WithBackend(&harness.LocalBackend{Dir: workDir, Logf: detail.Printf}),
		harness.WithLogf(detail.Printf))
	cancelStart()
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
			fmt.Fprintln(os.Stderr, "demo: interrupted while starting the cluster")
			return 130
		}
		fmt.Fprintf(os.Stderr, "demo: starting the cluster failed: %v\n", err)
		keepLogs()
		return 1
	}
	defer func() {
		if err := c.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "demo: stopping the cluster: %v\n", err)
		}
	}()
	fmt.Printf("cluster up in %v:\n", c.BringUp().Round(time.Millisecond))
	for _, n := range c.Nodes() {
		role := "replica, read_only=ON"
		if n.Index() == 1 {
			role = "primary"
		}
		fmt.Printf("  node%d  %-22s server %s, proxy %s\n", n.Index(), role, n.Addr(), n.ProxyAddr())
	}

	code = demo(ctx, c, detail)
	if code == 1 { // failed; not on Ctrl-C (130)
		keepLogs()
	}
	return code
}

// backendDir is where the LocalBackend keeps the servers' directories.
var backendDir string

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

// copyServerLogs copies every node's error log next to demo.log.
func copyServerLogs(logDir string, detail *log.Logger) {
	logs, _ := filepath.Glob(filepath.Join(backendDir, "*", "node*", "error.log"))
	for _, p := range logs {
		node := filepath.Base(filepath.Dir(p))
		if err := copyFile(p, filepath.Join(logDir, node+".log")); err != nil {
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

// demo runs the workload, the kill, the restart and the summary. It returns the exit
// status.
func demo(ctx context.Context, c *harness.Cluster, detail *log.Logger) int {
	admin := c.Node(1)
	if err := admin.Exec(ctx, "CREATE TABLE app.demo (id BIGINT AUTO_INCREMENT PRIMARY KEY, worker INT NOT NULL, "+
		"at DATETIME(6) NOT NULL DEFAULT NOW(6))"); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	if err := c.WaitReplicasCaughtUp(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}

	rec := newRecorder(c, detail)
	cfg, err := dsn.Parse(c.DSN(dsnParams))
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	connector, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithEventHook(rec.event))
	if err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		return 1
	}
	db := sql.OpenDB(connector)
	defer db.Close()
	db.SetMaxOpenConns(workers)
	db.SetMaxIdleConns(workers)

	fmt.Printf("DSN: %s (failOverReadOnly=true and queriesBeforeRetryMaster=50 by default)\n", cfg)
	fmt.Printf("workload: %d goroutines, each every %v: INSERT INTO demo, then SELECT @@port (which node served)\n\n",
		workers, period)
	fmt.Println("    elapsed  timeline: events, errors and actions as they happen; a tick line per 250 ms (identical ones merged)")

	wctx, stopWork := context.WithCancel(ctx)
	var wg sync.WaitGroup
	rec.start()
	for w := 1; w <= workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			worker(wctx, w, db, rec)
		}()
	}
	printed := make(chan struct{})
	go func() {
		defer close(printed)
		rec.printLoop(wctx)
	}()
	finish := func() {
		stopWork()
		wg.Wait()
		<-printed
		rec.flush()
	}

	failed := func(format string, args ...any) int {
		finish()
		msg := fmt.Sprintf(format, args...)
		detail.Print("FAILED: " + msg)
		fmt.Fprintln(os.Stderr, "\ndemo: "+msg)
		return 1
	}
	interrupted := func() int {
		finish()
		fmt.Fprintln(os.Stderr, "\ndemo: interrupted; everything it started is being stopped")
		return 130
	}

	if !sleep(ctx, beforeKill) {
		return interrupted()
	}
	rec.action("kill -9 node1 (the primary)")
	killAt := time.Now()
	rec.setKill(killAt)
	if err := c.Node(1).Kill(); err != nil {
		return failed("kill: %v", err)
	}
	if !sleep(ctx, time.Until(killAt.Add(beforeRestart))) {
		return interrupted()
	}
	rec.action("restarting node1 (same port and data)")
	restartAt := time.Now()
	if err := c.Node(1).Restart(ctx); err != nil {
		if ctx.Err() != nil {
			return interrupted()
		}
		return failed("restart: %v", err)
	}
	restarted := time.Now()
	rec.setRestarted(restarted)
	rec.action(fmt.Sprintf("node1 answers again (restart took %v)", restarted.Sub(restartAt).Round(time.Millisecond)))

	// Wait for the fall-back: the first statement served by node 1 after the kill.
	deadline := time.NewTimer(15 * time.Second)
	defer deadline.Stop()
	poll := time.NewTicker(10 * time.Millisecond)
	defer poll.Stop()
	for rec.fallBackAt().IsZero() {
		select {
		case <-ctx.Done():
			return interrupted()
		case <-deadline.C:
			return failed("no statement ran on node1 within 15 s of its restart: no fall-back")
		case <-poll.C:
		}
	}
	if !sleep(ctx, afterFallBack) {
		return interrupted()
	}
	finish()

	// The inserts that reached node 1: acknowledged ones plus those in doubt.
	rows, err := c.Node(1).QueryInt(ctx, "SELECT COUNT(*) FROM app.demo")
	if err != nil {
		return failed("counting rows: %v", err)
	}
	return rec.summary(rows)
}

// sleep waits d or until ctx ends; false when ctx ended.
func sleep(ctx context.Context, d time.Duration) bool {
	if d <= 0 {
		return ctx.Err() == nil
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// worker runs INSERT + SELECT @@port every period until ctx ends.
func worker(ctx context.Context, w int, db *sql.DB, rec *recorder) {
	if !sleep(ctx, time.Duration(w-1)*period/workers) { // staggered
		return
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	insert := fmt.Sprintf("INSERT INTO demo (worker) VALUES (%d)", w)
	for {
		_, err := db.ExecContext(ctx, insert)
		if ctx.Err() != nil {
			return
		}
		rec.insert(err)

		var port int
		err = db.QueryRowContext(ctx, "SELECT @@port").Scan(&port)
		if ctx.Err() != nil {
			return
		}
		rec.selected(port, err)

		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// --- the recorder: timeline and summary ---

type line struct {
	at    time.Duration
	text  string
	count int
}

type tick struct {
	selects     [4]int         // SELECT @@port served, per node
	insertsOK   int            // INSERTs acknowledged
	errs        map[string]int // "SELECT FailoverError", "INSERT read-only(1290)", ...
	connects    int            // successful connection attempts
	connFails   int            // failed connection attempts
	probesFails int            // fall-back attempts that failed
	lines       []*line
}

func (t *tick) add(at time.Duration, text string) {
	for _, l := range t.lines {
		if l.text == text {
			l.count++
			return
		}
	}
	t.lines = append(t.lines, &line{at: at, text: text, count: 1})
}

// signature: what a quiet tick looks like; identical consecutive quiet ticks merge.
func (t *tick) signature() string {
	var parts []string
	for n := 1; n <= 3; n++ {
		if t.selects[n] > 0 {
			parts = append(parts, fmt.Sprint("n", n))
		}
	}
	if t.insertsOK > 0 {
		parts = append(parts, "ins")
	}
	for _, k := range sortedKeys(t.errs) {
		parts = append(parts, k)
	}
	return strings.Join(parts, "|")
}

type recorder struct {
	c      *harness.Cluster
	detail *log.Logger

	mu      sync.Mutex
	t0      time.Time
	ticks   map[int]*tick
	next    int // next tick to print
	run     *tick
	runFrom int
	runTo   int
	// shown: recurring lines (an error kind, a failed connect or fall-back to a host)
	// already printed since the pool last moved; later ones are only counted.
	shown     map[string]bool
	killAt    time.Time
	restarted time.Time
	firstN2   time.Time // first success on node 2 after the kill
	firstN1   time.Time // first success on node 1 after the kill: the fall-back
	selects   [4]int
	selBefore int // node 1 before the kill
	insOK     int
	errTotals map[string]int
	evTotals  map[string]int
	printed   int
}

func newRecorder(c *harness.Cluster, detail *log.Logger) *recorder {
	return &recorder{c: c, detail: detail, ticks: map[int]*tick{}, shown: map[string]bool{},
		errTotals: map[string]int{}, evTotals: map[string]int{}}
}

func (r *recorder) start() {
	r.mu.Lock()
	r.t0 = time.Now()
	r.mu.Unlock()
}

// node names a host:port of the DSN (a proxy) as "node1".
func (r *recorder) node(addr string) string {
	if i := r.c.NodeByAddr(addr); i > 0 {
		return fmt.Sprint("node", i)
	}
	if addr == "" {
		return "(none)"
	}
	return addr
}

// tickAt returns the tick of time at; r.mu held.
func (r *recorder) tickAt(at time.Time) (*tick, time.Duration) {
	d := at.Sub(r.t0)
	k := max(int(d/tickEvery), r.next) // never into a tick already printed
	t := r.ticks[k]
	if t == nil {
		t = &tick{errs: map[string]int{}}
		r.ticks[k] = t
	}
	return t, d
}

func (r *recorder) action(text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, d := r.tickAt(time.Now())
	t.add(d, "DEMO   "+text)
	r.detail.Printf("DEMO %s", text)
}

func (r *recorder) setKill(at time.Time) {
	r.mu.Lock()
	r.killAt = at
	r.selBefore = r.selects[1]
	r.mu.Unlock()
}

func (r *recorder) setRestarted(at time.Time) {
	r.mu.Lock()
	r.restarted = at
	r.mu.Unlock()
}

func (r *recorder) fallBackAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.firstN1
}

// event is the driver's event hook: fast, never blocks for long.
func (r *recorder) event(e failover.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.detail.Printf("EVENT %s", e)
	r.evTotals[e.Kind.String()]++
	if e.Kind == failover.EventConnect && e.Err == nil {
		r.evTotals["connect-ok"]++
	}
	if e.Kind == failover.EventConnect && e.Err != nil {
		r.evTotals["connect-failed"]++
	}
	if r.t0.IsZero() {
		return // before the workload (nothing yet)
	}
	t, d := r.tickAt(e.Time)
	var text string
	switch e.Kind {
	case failover.EventConnect:
		if e.Err == nil {
			t.connects++
			return
		}
		t.connFails++
		if !r.once("connect " + e.Host) {
			return
		}
		text = fmt.Sprintf("connect to %s failed: %s (further failures only counted)", r.node(e.Host), short(e.Err))
	case failover.EventHostFailed:
		text = fmt.Sprintf("host-failed %s: %s", r.node(e.Host), short(e.Err))
	case failover.EventSwitch:
		clear(r.shown)
		text = fmt.Sprintf("SWITCH %s -> %s (the pool moves: %s)", r.node(e.From), r.node(e.Host), short(e.Err))
	case failover.EventFallBack:
		clear(r.shown)
		text = fmt.Sprintf("FALL-BACK %s -> %s (the pool returns to the primary)", r.node(e.From), r.node(e.Host))
	case failover.EventFallBackFailed:
		t.probesFails++
		if !r.once("fall-back " + e.Host) {
			return
		}
		text = fmt.Sprintf("fall-back-failed: %s does not answer yet (%s); the pool stays on %s and tries again later",
			r.node(e.Host), short(e.Err), r.node(e.From))
	default:
		text = e.String()
	}
	t.add(d, "EVENT  "+text)
}

// once reports whether the recurring line key has not been printed since the pool last
// moved, and marks it printed. r.mu held.
func (r *recorder) once(key string) bool {
	if r.shown[key] {
		return false
	}
	r.shown[key] = true
	return true
}

func (r *recorder) insert(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, d := r.tickAt(time.Now())
	if err == nil {
		t.insertsOK++
		r.insOK++
		return
	}
	r.failure(t, d, "INSERT", err)
}

func (r *recorder) selected(port int, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	t, d := r.tickAt(now)
	if err != nil {
		r.failure(t, d, "SELECT", err)
		return
	}
	n := r.c.NodeByPort(port)
	t.selects[n]++
	r.selects[n]++
	if !r.killAt.IsZero() && now.After(r.killAt) {
		if n == 2 && r.firstN2.IsZero() {
			r.firstN2 = now
		}
		if n == 1 && r.firstN1.IsZero() {
			r.firstN1 = now
		}
	}
}

// failure records a statement's error: counted in the tick; a line for every failover
// error, and for other kinds the first time since the pool last moved.
func (r *recorder) failure(t *tick, d time.Duration, op string, err error) {
	kind, text := r.classify(err)
	key := op + " " + kind
	t.errs[key]++
	r.errTotals[key]++
	r.detail.Printf("ERROR %s: %v", op, err)
	switch kind {
	case "FailoverError", "NoHostAvailableError", "ErrTxLost":
		t.add(d, fmt.Sprintf("ERROR  %s: %s", op, text))
	default:
		if r.once(key) {
			t.add(d, fmt.Sprintf("ERROR  %s: %s (further ones only counted)", op, text))
		}
	}
}

// classify names an error by its type, with a one-line description.
func (r *recorder) classify(err error) (kind, text string) {
	var fe *failover.FailoverError
	var nh *failover.NoHostAvailableError
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &fe):
		now := r.node(fe.Current)
		may := "was not sent"
		if fe.MaybeExecuted {
			may = "may have run on " + r.node(fe.Failed)
		}
		return "FailoverError", fmt.Sprintf("*failover.FailoverError: %s failed (%s), connection now on %s; the statement %s",
			r.node(fe.Failed), short(fe.Err), now, may)
	case errors.As(err, &nh):
		return "NoHostAvailableError", "*failover.NoHostAvailableError: " + short(err)
	case errors.Is(err, failover.ErrTxLost):
		return "ErrTxLost", "failover.ErrTxLost: " + short(err)
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout", "context deadline exceeded"
	case errors.As(err, &me):
		switch me.Number {
		case 1792, 1290:
			return fmt.Sprintf("read-only(%d)", me.Number),
				fmt.Sprintf("*mysql.MySQLError %d: the secondary is read-only and refuses writes", me.Number)
		}
		return fmt.Sprintf("mysql(%d)", me.Number), fmt.Sprintf("*mysql.MySQLError %d: %s", me.Number, me.Message)
	}
	return fmt.Sprintf("%T", err), fmt.Sprintf("%T: %s", err, short(err))
}

// short keeps an error's text on one short line.
func short(err error) string {
	if err == nil {
		return "ok"
	}
	s := strings.ReplaceAll(err.Error(), "\n", " ")
	if len(s) > 90 {
		s = s[:87] + "..."
	}
	return s
}

// printLoop prints every tick once it is over, until ctx ends.
func (r *recorder) printLoop(ctx context.Context) {
	for {
		r.mu.Lock()
		due := r.t0.Add(time.Duration(r.next+1)*tickEvery + 5*time.Millisecond)
		r.mu.Unlock()
		if !sleep(ctx, time.Until(due)) {
			return
		}
		r.mu.Lock()
		r.printTick()
		r.mu.Unlock()
	}
}

// flush prints the ticks left (the last, partial one included) and the pending run.
func (r *recorder) flush() {
	r.mu.Lock()
	defer r.mu.Unlock()
	last := r.next
	for k := range r.ticks {
		last = max(last, k)
	}
	for r.next <= last {
		r.printTick()
	}
	r.flushRun()
}

// printTick prints tick r.next: its lines, then its summary, merged with the previous
// ticks' when it is quiet and looks the same. r.mu held.
func (r *recorder) printTick() {
	k := r.next
	r.next++
	t := r.ticks[k]
	delete(r.ticks, k)
	if t == nil {
		t = &tick{errs: map[string]int{}}
	}
	if len(t.lines) > 0 || r.run == nil || t.signature() != r.run.signature() {
		r.flushRun()
	}
	sort.SliceStable(t.lines, func(i, j int) bool { return t.lines[i].at < t.lines[j].at })
	for _, l := range t.lines {
		text := l.text
		if l.count > 1 {
			text += fmt.Sprintf("  (x%d)", l.count)
		}
		r.println(fmt.Sprintf("%10.3fs  %s", l.at.Seconds(), text))
	}
	if r.run == nil {
		r.run, r.runFrom = &tick{errs: map[string]int{}}, k
	}
	r.runTo = k
	for n := range t.selects {
		r.run.selects[n] += t.selects[n]
	}
	r.run.insertsOK += t.insertsOK
	r.run.connects += t.connects
	r.run.connFails += t.connFails
	r.run.probesFails += t.probesFails
	for e, n := range t.errs {
		r.run.errs[e] += n
	}
}

// flushRun prints the summary line of the pending run of ticks. r.mu held.
func (r *recorder) flushRun() {
	if r.run == nil {
		return
	}
	t := r.run
	r.run = nil
	from, to := time.Duration(r.runFrom)*tickEvery, time.Duration(r.runTo+1)*tickEvery
	var served []string
	for n := 1; n <= 3; n++ {
		if t.selects[n] > 0 {
			served = append(served, fmt.Sprintf("node%d %d", n, t.selects[n]))
		}
	}
	s := "served by " + strings.Join(served, ", ")
	if len(served) == 0 {
		s = "served by none"
	}
	s += fmt.Sprintf("; inserts ok %d", t.insertsOK)
	if len(t.errs) > 0 {
		var es []string
		for _, k := range sortedKeys(t.errs) {
			es = append(es, fmt.Sprintf("%s %d", k, t.errs[k]))
		}
		s += "; errors: " + strings.Join(es, ", ")
	}
	if t.connects > 0 {
		s += fmt.Sprintf("; %d connections opened", t.connects)
	}
	if t.probesFails > 0 {
		s += fmt.Sprintf("; %d fall-back attempts failed", t.probesFails)
	}
	if n := t.connFails - t.probesFails; n > 0 {
		s += fmt.Sprintf("; %d other connects failed", n)
	}
	r.println(fmt.Sprintf("%11s  tick   %s", fmt.Sprintf("%.2f-%.2fs", from.Seconds(), to.Seconds()), s))
}

func (r *recorder) println(s string) {
	r.printed++
	fmt.Println(s)
	r.detail.Print("TIMELINE " + s)
}

// summary prints the outcome and returns the exit status.
func (r *recorder) summary(rows int64) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	at := func(t time.Time) string { return fmt.Sprintf("+%.3fs", t.Sub(r.t0).Seconds()) }
	fmt.Println()
	fmt.Println("summary")
	code := 0
	if r.firstN2.IsZero() {
		fmt.Println("  time to recover : never: no statement ran on node2 after the kill")
		code = 1
	} else {
		fmt.Printf("  time to recover : %v (kill at %s, first statement served by node2 at %s)\n",
			r.firstN2.Sub(r.killAt).Round(time.Millisecond), at(r.killAt), at(r.firstN2))
	}
	if r.firstN1.IsZero() {
		fmt.Println("  fall-back       : none")
		code = 1
	} else {
		fmt.Printf("  fall-back       : first statement on node1 at %s: %v after the restart finished, %v after the kill\n",
			at(r.firstN1), r.firstN1.Sub(r.restarted).Round(time.Millisecond), r.firstN1.Sub(r.killAt).Round(time.Millisecond))
	}
	fmt.Printf("  statements      : SELECT @@port served by node1 %d (%d before the kill, %d after the fall-back), node2 %d, node3 %d\n",
		r.selects[1], r.selBefore, r.selects[1]-r.selBefore, r.selects[2], r.selects[3])
	var es []string
	total := 0
	for _, k := range sortedKeys(r.errTotals) {
		es = append(es, fmt.Sprintf("%s %d", k, r.errTotals[k]))
		total += r.errTotals[k]
	}
	if total == 0 {
		es = []string{"none"}
	}
	fmt.Printf("  errors seen     : %d: %s\n", total, strings.Join(es, ", "))
	inDoubt := 0
	for k, n := range r.errTotals {
		if strings.HasPrefix(k, "INSERT FailoverError") {
			inDoubt += n
		}
	}
	fmt.Printf("  inserts         : %d acknowledged; node1 has %d rows (%d inserts failed over and may have run)\n", r.insOK, rows, inDoubt)
	if rows < int64(r.insOK) || rows > int64(r.insOK+inDoubt) {
		fmt.Printf("  !! rows on node1 are outside [acknowledged, acknowledged + in doubt]\n")
		code = 1
	}
	fmt.Printf("  driver events   : %d switch, %d fall-back, %d fall-back-failed, %d host-failed, %d connects (%d failed)\n",
		r.evTotals["switch"], r.evTotals["fall-back"], r.evTotals["fall-back-failed"], r.evTotals["host-failed"],
		r.evTotals["connect"], r.evTotals["connect-failed"])
	return code
}

func sortedKeys(m map[string]int) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}
