// Command soak runs a bounded chaos soak of mysqlfailover against a local three-node
// MariaDB cluster (package harness, local processes, each node behind a toxiproxy proxy):
// random faults from a printed seed, one at a time, while a workload runs, then checks
// what callers were told against what the servers hold.
//
//	go run ./cmd/soak [-seconds 60] [-seed N] [-mode both|off|on]   (from the integration module)
//	make soak                                                        (SOAK_SECONDS, SOAK_SEED)
//
// The run is split in two halves, each on a fresh cluster: probing off, then probing on
// (checkInterval=200ms). Both get the same schedule (the seed's, see Schedule): a fault
// every 1 to 4 s, each healed before the next: kill -9 and restart of the primary,
// freeze/thaw, blackhole, connection resets, latency spikes, refused connects, read_only
// flips of the primary.
//
// The workload: 16 workers on a pool of 8 connections (SetMaxOpenConns(8)): 5 writers
// (autocommit INSERTs of unique keys, half with arguments, half literal), 3 two-statement
// transactions, 4 readers (a third with deadlines of 20 to 300 ms), 4 pinned connections
// (db.Conn) switching SetReadOnly and writing in both states. A write whose error
// SafeToRetry calls RetryStatement is tried again, twice at most.
//
// At the end, with every fault healed, it checks (each failure is a violation):
//
//   - ack-missing: every acknowledged write is on the primary;
//   - dup-first: no first attempt of a write got 1062 (each key is written once: a
//     duplicate is a statement run twice);
//   - dup-retry: no retry after RetryStatement got 1062 (it had run after all);
//   - not-run-present: no write that every attempt said did not run (RetryStatement, or a
//     read-only rejection 1290/1792) is on the primary;
//   - tx-partial, tx-committed-missing, tx-lost-present: every transaction has both rows
//     or none; a committed one both, one that failed before its commit or whose Commit
//     said ErrTxLost none;
//   - ro-write: no write succeeded on a pinned connection after SetReadOnly(true);
//   - badconn: no error matching driver.ErrBadConn reached a caller;
//   - undocumented: every error is one of the documented kinds (errKind);
//   - goroutines: no goroutine is left once the pool and the cluster are closed (goleak);
//   - sessions: no session of the soak's user is left on any server after db.Close;
//   - slow-pool, slow-short, slow-pinned: no call took longer than its bound (bounds);
//   - password: the soak user's password is in no error, log line (a slog logger at
//     debug level, go-sql-driver's logger), event or String;
//   - harness: a fault could not be applied or healed.
//
// It prints each fault as it happens, the details of each violation, and one summary line
// per half; it exits 1 on any violation.
package main

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"
	"go.uber.org/goleak"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// The soak's own user, with a password that appears nowhere else, so that a leak into an
// error or a log line is found by searching for it.
const (
	soakUser     = "soak"
	soakPassword = "Zq7SoakPw4Kx9Vt" // letters and digits: no DSN syntax
)

// The pool's settings and the bounds they imply.
const (
	workers    = 16
	maxOpen    = 8
	readTO     = time.Second
	writeTO    = time.Second
	hostTO     = time.Second
	retriesAll = 2
	passPause  = 250 * time.Millisecond // between passes of retriesAllDown (package dsn)
	maxJitter  = 200 * time.Millisecond // followers of a walk (package mysqlfailover, Failover)
	poolDL     = 8 * time.Second        // deadline of a call through the pool
	pinnedDL   = 30 * time.Second       // deadline of a statement on a pinned connection
	shortMin   = 20 * time.Millisecond  // short read deadlines, from
	shortMax   = 300 * time.Millisecond // to
	slack      = time.Second            // scheduling on a busy machine, -race
	tail       = 2 * time.Second        // workload after the last fault is healed
	pause      = 5 * time.Millisecond   // between two operations of a worker
	baseParams = "readTimeout=1s&writeTimeout=1s&timeout=1s&hostTimeout=1s&retriesAllDown=2&secondsBeforeRetryMaster=2"
	probeParam = "&checkInterval=200ms&failoverDelay=500ms&switchBackDelay=1s"
)

// walkBound is the longest a walk over n hosts takes: retriesAllDown passes (at least
// one), each host one attempt within hostTimeout, 250 ms between passes.
func walkBound(n int) time.Duration {
	passes := max(retriesAll, 1)
	return time.Duration(passes*n)*hostTO + time.Duration(passes-1)*passPause
}

// settingsBound is the longest one statement on a connection the caller already holds
// can take, from the DSN's settings alone: a safe-point walk before it (the pool moved),
// the statement's write and read (writeTimeout, readTimeout), the same-host check after a
// failure (within hostTimeout), the walk that moves the connection, the follower jitter,
// and session set-up within each attempt; twice the statement for a statement with a
// re-prepare. With readTimeout=writeTimeout=hostTimeout=1s, retriesAllDown=2, 3 hosts:
// 2*(1s+1s) + 1s + 2*6.25s + 200ms = 17.7 s.
func settingsBound(n int) time.Duration {
	return 2*(readTO+writeTO) + hostTO + 2*walkBound(n) + maxJitter
}

func main() {
	seconds := flag.Int("seconds", envInt("SOAK_SECONDS", 60), "total soak time in seconds, split between the modes (SOAK_SECONDS)")
	seedFlag := flag.Uint64("seed", uint64(envInt("SOAK_SEED", 0)), "fault schedule seed; 0 picks one (SOAK_SEED)")
	mode := flag.String("mode", "both", "probing: off, on or both (each half of the time)")
	flag.Parse()
	seed := *seedFlag
	if seed == 0 {
		seed = rand.Uint64N(1 << 53) // printable, and exact as a float too
	}
	var modes []bool
	switch *mode {
	case "both":
		modes = []bool{false, true}
	case "off":
		modes = []bool{false}
	case "on":
		modes = []bool{true}
	default:
		fmt.Fprintf(os.Stderr, "soak: -mode %q: want off, on or both\n", *mode)
		os.Exit(2)
	}
	per := time.Duration(*seconds) * time.Second / time.Duration(len(modes))
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	fmt.Printf("soak: seed=%d seconds=%d modes=%s (reproduce: go run ./cmd/soak -seed %d -seconds %d -mode %s)\n",
		seed, *seconds, *mode, seed, *seconds, *mode)
	failed := false
	var lines []string
	for _, probing := range modes {
		res, err := soak(ctx, seed, probing, per, false)
		if err != nil {
			fmt.Fprintf(os.Stderr, "soak: %v\n", err)
			os.Exit(2)
		}
		lines = append(lines, res.summary())
		fmt.Println(res.summary())
		failed = failed || res.violations() > 0
	}
	if len(lines) > 1 {
		fmt.Println("soak: summary")
		for _, l := range lines {
			fmt.Println("  " + l)
		}
	}
	if failed {
		os.Exit(1)
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// result is one half's account.
type result struct {
	seed    uint64
	probing bool
	secs    time.Duration
	digest  string

	mu         sync.Mutex
	faults     [numKinds]int
	calls      int64
	errs       map[string]int
	longest    map[string]time.Duration // by class
	longestWhy map[string]string
	firstErr   map[string]string // by error kind: the first call that got it
	viol       map[string]int
	details    []string
	logLines   atomic.Int64
	events     atomic.Int64
	sched      []Fault
}

func (r *result) violate(kind, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.viol[kind]++
	if r.viol[kind] <= 5 {
		msg := fmt.Sprintf("VIOLATION %s: %s", kind, fmt.Sprintf(format, args...))
		r.details = append(r.details, msg)
		fmt.Println(msg)
	}
}

func (r *result) violations() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, v := range r.viol {
		n += v
	}
	return n
}

// The call classes and their bounds: a call through the pool waits for a connection
// (16 workers, 8 connections) for as long as its deadline lets it, so only its deadline
// bounds it; a short read likewise; a statement on a pinned connection waits for no
// pool, so the settings bound it too.
func bounds(hosts int) map[string]time.Duration {
	return map[string]time.Duration{
		"pool":   poolDL + slack,
		"short":  shortMax + slack,
		"pinned": min(pinnedDL, settingsBound(hosts)) + slack,
	}
}

var classes = []string{"pool", "short", "pinned"}

func (r *result) summary() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	mode := "probing-off"
	if r.probing {
		mode = "probing-on"
	}
	b := bounds(3)
	var lg []string
	for _, c := range classes {
		lg = append(lg, fmt.Sprintf("%s:%v/%v", c, r.longest[c].Round(time.Millisecond), b[c]))
	}
	v := "none"
	if len(r.viol) > 0 {
		v = joinCounts(r.viol)
	}
	return fmt.Sprintf("soak seed=%d mode=%s secs=%v schedule=%s faults=%s calls=%d errors=%s longest(class:max/bound)=%s logs=%d events=%d violations=%s",
		r.seed, mode, r.secs.Seconds(), r.digest, countKinds(r.faults), r.calls, joinCounts(r.errs), strings.Join(lg, ","),
		r.logLines.Load(), r.events.Load(), v)
}

func joinCounts(m map[string]int) string {
	if len(m) == 0 {
		return "none"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s:%d", k, m[k])
	}
	return strings.Join(parts, ",")
}

// errKind names err by the documented kind it matches, the list of the root package's
// "What the caller sees" (doc.go) and package failover's errors, plus the caller's own
// context and database/sql's own sentinels. "" means none: an undocumented error.
//
//	commit-unknown  failover.ErrCommitOutcomeUnknown
//	tx-lost         failover.ErrTxLost
//	failover        *failover.FailoverError
//	nohost          *failover.NoHostAvailableError
//	closed          failover.ErrClosed
//	context         context.Canceled, context.DeadlineExceeded
//	mysql-N         *mysql.MySQLError (go-sql-driver's, untouched or wrapped with its host)
//	sql-txdone      sql.ErrTxDone (database/sql: the transaction's context ended first)
//	sql-conndone    sql.ErrConnDone (database/sql: the connection was returned)
func errKind(err error) string {
	var fe *failover.FailoverError
	var nh *failover.NoHostAvailableError
	var me *mysql.MySQLError
	switch {
	case errors.Is(err, failover.ErrCommitOutcomeUnknown):
		return "commit-unknown"
	case errors.Is(err, failover.ErrTxLost):
		return "tx-lost"
	case errors.As(err, &fe):
		return "failover"
	case errors.As(err, &nh):
		return "nohost"
	case errors.Is(err, failover.ErrClosed):
		return "closed"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "context"
	case errors.As(err, &me):
		return "mysql-" + strconv.Itoa(int(me.Number))
	case errors.Is(err, sql.ErrTxDone):
		return "sql-txdone"
	case errors.Is(err, sql.ErrConnDone):
		return "sql-conndone"
	}
	return ""
}

// record accounts for one call of class that took d and returned err.
func (r *result) record(class, what string, d time.Duration, err error, bound time.Duration) {
	r.mu.Lock()
	r.calls++
	if d > r.longest[class] {
		r.longest[class] = d
		r.longestWhy[class] = fmt.Sprintf("%s: %v", what, err)
	}
	kind := ""
	if err != nil {
		kind = errKind(err)
		k := kind
		if k == "" {
			k = "undocumented"
		}
		r.errs[k]++
		if _, ok := r.firstErr[k]; !ok {
			r.firstErr[k] = fmt.Sprintf("%s (%v): %v", what, d.Round(time.Millisecond), err)
		}
	}
	r.mu.Unlock()
	if d > bound {
		r.violate("slow-"+class, "%s took %v, bound %v: %v", what, d.Round(time.Millisecond), bound, err)
	}
	if err == nil {
		return
	}
	if errors.Is(err, sqldriver.ErrBadConn) {
		r.violate("badconn", "%s: %v matches driver.ErrBadConn", what, err)
	}
	if kind == "" {
		r.violate("undocumented", "%s: %T %v", what, err, err)
	}
	if strings.Contains(err.Error(), soakPassword) {
		r.violate("password", "%s: error text holds the password: %v", what, err)
	}
}

// capture is a log destination that counts lines and looks for the password in each.
type capture struct {
	r    *result
	what string
	mu   sync.Mutex
	last []string
}

func (c *capture) Write(p []byte) (int, error) {
	s := string(p)
	n := strings.Count(s, "\n")
	if n == 0 {
		n = 1
	}
	c.r.logLines.Add(int64(n))
	if strings.Contains(s, soakPassword) {
		c.r.violate("password", "%s log line holds the password: %s", c.what, strings.TrimSpace(s))
	}
	c.mu.Lock()
	c.last = append(c.last, strings.TrimSpace(s))
	if len(c.last) > 50 {
		c.last = c.last[len(c.last)-50:]
	}
	c.mu.Unlock()
	return len(p), nil
}

// outcome of one key or transaction.
type outcome int8

const (
	unknown outcome = iota // may or may not be there
	acked                  // the write, or the commit, succeeded
	notRun                 // provably not written
)

type ledger struct {
	mu     sync.Mutex
	writes map[int64]outcome
	txs    map[int64]outcome
	roKeys map[int64]bool // writes made after SetReadOnly(true) on a pinned connection
}

func (l *ledger) setWrite(k int64, o outcome) {
	l.mu.Lock()
	l.writes[k] = o
	l.mu.Unlock()
}

func (l *ledger) setTx(k int64, o outcome) {
	l.mu.Lock()
	l.txs[k] = o
	l.mu.Unlock()
}

// soak runs one half: a fresh cluster, the workload, the schedule, the checks.
func soak(ctx context.Context, seed uint64, probing bool, d time.Duration, sab bool) (*result, error) {
	r := &result{seed: seed, probing: probing, secs: d, errs: map[string]int{}, longest: map[string]time.Duration{},
		longestWhy: map[string]string{}, firstErr: map[string]string{}, viol: map[string]int{}}
	loop := max(d-tail, MinGap)
	r.sched = Schedule(seed, loop)
	r.digest = Digest(r.sched)
	mode := "off"
	if probing {
		mode = "on"
	}
	fmt.Printf("soak: probing %s, %v, %d faults scheduled (digest %s)\n", mode, d, len(r.sched), r.digest)

	// Everything the driver and database/sql start must be gone once the pool and the
	// cluster are closed; the goroutines running now are not the soak's.
	leakOpts := []goleak.Option{goleak.IgnoreCurrent()}

	c, err := harness.StartCluster(ctx, 3, harness.WithLogf(log.New(io.Discard, "", 0).Printf))
	if err != nil {
		if errors.Is(err, harness.ErrNoServer) {
			return nil, fmt.Errorf("%w (install MariaDB: make server)", err)
		}
		return nil, err
	}
	clusterClosed := false
	defer func() {
		if !clusterClosed {
			c.Close()
		}
	}()
	p := c.Primary()
	for _, q := range []string{
		"CREATE USER '" + soakUser + "'@'%' IDENTIFIED BY '" + soakPassword + "'",
		"GRANT ALL ON " + harness.AppDB + ".* TO '" + soakUser + "'@'%'",
		"CREATE TABLE " + harness.AppDB + ".soak_w (k BIGINT PRIMARY KEY, w INT NOT NULL, port INT NOT NULL)",
		"CREATE TABLE " + harness.AppDB + ".soak_tx (txid BIGINT NOT NULL, part TINYINT NOT NULL, PRIMARY KEY (txid, part))",
	} {
		if err := p.Exec(ctx, q); err != nil {
			return nil, err
		}
	}
	if err := c.WaitReplicasCaughtUp(ctx); err != nil {
		return nil, err
	}

	// The DSN: the soak user through the proxies.
	addrs := make([]string, 0, c.N())
	for _, n := range c.Nodes() {
		addrs = append(addrs, n.ProxyAddr())
	}
	params := baseParams
	if probing {
		params += probeParam
	}
	dsnText := soakUser + ":" + soakPassword + "@tcp(" + strings.Join(addrs, ",") + ")/" + harness.AppDB + "?" + params
	cfg, err := mysqlfailover.ParseDSN(dsnText)
	if err != nil {
		return nil, err
	}
	driverLog := &capture{r: r, what: "mysqlfailover"}
	mysqlLog := &capture{r: r, what: "go-sql-driver"}
	cfg.MySQL.Logger = log.New(mysqlLog, "[mysql] ", log.Lmicroseconds)
	var events sync.Map // kind -> *atomic.Int64
	connector, err := mysqlfailover.NewConnector(cfg,
		mysqlfailover.WithLogger(slog.New(slog.NewTextHandler(driverLog, &slog.HandlerOptions{Level: slog.LevelDebug}))),
		mysqlfailover.WithEventHook(func(e failover.Event) {
			r.events.Add(1)
			v, _ := events.LoadOrStore(e.Kind.String(), new(atomic.Int64))
			v.(*atomic.Int64).Add(1)
			if s := e.String(); strings.Contains(s, soakPassword) {
				r.violate("password", "event holds the password: %s", s)
			}
		}))
	if err != nil {
		return nil, err
	}
	if s := connector.String(); strings.Contains(s, soakPassword) {
		r.violate("password", "Connector.String holds the password: %s", s)
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(maxOpen)
	db.SetMaxIdleConns(maxOpen)

	led := &ledger{writes: map[int64]outcome{}, txs: map[int64]outcome{}, roKeys: map[int64]bool{}}
	if sab {
		// Worker 0's first key, there before it writes it: its first attempt gets 1062.
		if err := p.Exec(ctx, "INSERT INTO "+harness.AppDB+".soak_w VALUES (1, 0, 0)"); err != nil {
			return nil, err
		}
	}
	w := &workload{r: r, db: db, led: led, b: bounds(c.N()), stop: make(chan struct{})}
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(i)
		}()
	}

	start := time.Now()
	harnessErr := faults(ctx, c, r, start, loop)
	heal(c, r) // whatever state a failed or interrupted fault left
	if harnessErr == nil {
		select {
		case <-time.After(time.Until(start.Add(d))):
		case <-ctx.Done():
		}
	}
	close(w.stop)
	wg.Wait()
	if harnessErr != nil {
		r.violate("harness", "%v", harnessErr)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted")
	}

	// The data, on the primary, as root.
	checkCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var sb *sabotage
	if sab {
		if sb, err = sabotageRun(checkCtx, c, r, w, led, driverLog); err != nil {
			return nil, err
		}
	}
	checkData(checkCtx, c, r, led)

	if err := db.Close(); err != nil {
		r.violate("close", "db.Close: %v", err)
	}
	checkSessions(checkCtx, c, r)
	if sb != nil {
		sb.extra.Close()
	}
	if err := c.Close(); err != nil {
		fmt.Printf("soak: closing the cluster: %v\n", err)
	}
	clusterClosed = true
	if err := goleak.Find(leakOpts...); err != nil {
		r.violate("goroutines", "after Close: %v", err)
	}
	if sb != nil {
		close(sb.release)
	}
	var ev []string
	events.Range(func(k, v any) bool {
		ev = append(ev, fmt.Sprintf("%s:%d", k, v.(*atomic.Int64).Load()))
		return true
	})
	sort.Strings(ev)
	r.mu.Lock()
	fmt.Printf("soak: events %s\n", strings.Join(ev, ","))
	for _, cl := range classes {
		fmt.Printf("soak: longest %s call %v: %s\n", cl, r.longest[cl].Round(time.Millisecond), r.longestWhy[cl])
	}
	for _, k := range slices.Sorted(maps.Keys(r.firstErr)) {
		fmt.Printf("soak: first %s error: %s\n", k, r.firstErr[k])
	}
	r.mu.Unlock()
	return r, nil
}

// faults runs the schedule until loop has passed: each fault at its time (or as soon as
// the previous one is healed), held, healed.
func faults(ctx context.Context, c *harness.Cluster, r *result, start time.Time, loop time.Duration) error {
	for i, f := range r.sched {
		select {
		case <-time.After(time.Until(start.Add(f.At))):
		case <-ctx.Done():
			return nil
		}
		if time.Since(start) >= loop {
			return nil
		}
		fmt.Printf("soak: +%5.1fs fault %d: %v\n", time.Since(start).Seconds(), i+1, f)
		n := c.Node(f.Node)
		var err error
		switch f.Kind {
		case Kill:
			err = n.Kill()
		case Freeze:
			err = n.Freeze()
		case Blackhole:
			err = n.Blackhole()
		case Reset:
			err = n.ResetPeer(f.Upstream)
		case Latency:
			err = n.Latency(f.Latency)
		case Refuse:
			err = n.Disable()
		case ReadOnly:
			err = n.SetReadOnly(ctx, true)
		}
		if err != nil {
			return fmt.Errorf("fault %d (%v): %w", i+1, f, err)
		}
		r.mu.Lock()
		r.faults[f.Kind]++
		r.mu.Unlock()
		select {
		case <-time.After(f.Hold):
		case <-ctx.Done():
			return nil
		}
		hctx, cancel := context.WithTimeout(ctx, time.Minute)
		switch f.Kind {
		case Kill:
			err = n.Restart(hctx)
		case Freeze:
			err = n.Thaw()
		case Blackhole, Reset:
			err = n.ClearToxics()
		case Latency:
			err = n.Latency(0)
		case Refuse:
			err = n.Enable()
		case ReadOnly:
			err = n.SetReadOnly(hctx, false)
		}
		cancel()
		if err != nil {
			return fmt.Errorf("healing fault %d (%v): %w", i+1, f, err)
		}
	}
	select {
	case <-time.After(time.Until(start.Add(loop))):
	case <-ctx.Done():
	}
	return nil
}

// heal undoes every fault on every node: thawed, running, proxies on without toxics, the
// primary writable.
func heal(c *harness.Cluster, r *result) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range c.Nodes() {
		var err error
		switch n.State() {
		case harness.Frozen:
			err = n.Thaw()
		case harness.Down:
			err = n.Restart(ctx)
		}
		err = errors.Join(err, n.Enable(), n.ClearToxics())
		if err != nil {
			r.violate("harness", "heal node %d: %v", n.Index(), err)
		}
	}
	if err := c.Primary().SetReadOnly(ctx, false); err != nil {
		r.violate("harness", "heal: primary read_only off: %v", err)
	}
}

// workload is the 16 workers.
type workload struct {
	r    *result
	db   *sql.DB
	led  *ledger
	b    map[string]time.Duration
	stop chan struct{}
}

func (w *workload) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// call runs fn with a context of deadline dl and accounts for it.
func (w *workload) call(class, what string, dl time.Duration, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), dl)
	defer cancel()
	begin := time.Now()
	err := fn(ctx)
	bound := w.b[class]
	if class == "short" {
		bound = dl + slack
	}
	w.r.record(class, what, time.Since(begin), err, bound)
	return err
}

// Worker roles by index: 0-4 writers, 5-7 transactions, 8-11 readers, 12-15 pinned.
func (w *workload) run(i int) {
	rng := rand.New(rand.NewPCG(uint64(i), 1))
	seq := int64(0)
	next := func() int64 { seq++; return int64(i)*1_000_000_000 + seq }
	for !w.stopped() {
		switch {
		case i < 5:
			w.write(nil, i, next(), rng.IntN(2) == 0, false)
		case i < 8:
			w.tx(next())
		case i < 12:
			w.read(rng)
		default:
			w.pinned(i, rng, next)
		}
		time.Sleep(pause) // a shared machine: no hot loop on fast errors either
	}
}

// execer is what a write runs on: the pool or a pinned connection.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// write inserts key k, once, and again (at most twice) while SafeToRetry says the last
// attempt did not run; ro says the connection was set read-only.
func (w *workload) write(conn *sql.Conn, worker int, k int64, withArgs, ro bool) {
	var ex execer = w.db
	class, dl := "pool", poolDL
	if conn != nil {
		ex, class, dl = conn, "pinned", pinnedDL
	}
	// The key's outcome: acked once an attempt succeeded; unknown once an attempt may
	// have run; otherwise (every attempt said it did not run) notRun.
	final := notRun
	for attempt := 0; attempt < 3 && !w.stopped(); attempt++ {
		if attempt > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		what := fmt.Sprintf("write %d (attempt %d, %s)", k, attempt+1, class)
		err := w.call(class, what, dl, func(ctx context.Context) error {
			var err error
			if withArgs {
				_, err = ex.ExecContext(ctx, "INSERT INTO soak_w (k, w, port) VALUES (?, ?, @@port)", k, worker)
			} else {
				_, err = ex.ExecContext(ctx, fmt.Sprintf("INSERT INTO soak_w (k, w, port) VALUES (%d, %d, @@port)", k, worker))
			}
			return err
		})
		var me *mysql.MySQLError
		isMy := errors.As(err, &me) && errKind(err) == "mysql-"+strconv.Itoa(int(me.Number)) // a bare data error
		switch {
		case err == nil:
			final = acked
			if ro {
				w.r.violate("ro-write", "%s succeeded after SetReadOnly(true)", what)
			}
		case isMy && me.Number == 1062:
			if attempt == 0 {
				w.r.violate("dup-first", "%s: %v: the key is written once, so the statement ran twice", what, err)
			} else {
				w.r.violate("dup-retry", "%s: %v: SafeToRetry said the previous attempt did not run", what, err)
			}
			final = acked // it is there
		case isMy && (me.Number == 1290 || me.Number == 1792 || me.Number == 1836):
			// a read-only rejection: the server ran nothing; final stays notRun
		case mysqlfailover.SafeToRetry(err) == mysqlfailover.RetryStatement:
			continue // it did not run: again
		default:
			final = unknown
		}
		break
	}
	w.led.setWrite(k, final)
	if ro {
		w.led.mu.Lock()
		w.led.roKeys[k] = true
		w.led.mu.Unlock()
	}
}

// tx inserts (txid, 1) and (txid, 2) in one transaction.
func (w *workload) tx(txid int64) {
	ctx, cancel := context.WithTimeout(context.Background(), poolDL)
	defer cancel()
	timed := func(what string, fn func() error) error {
		begin := time.Now()
		err := fn()
		w.r.record("pool", fmt.Sprintf("tx %d %s", txid, what), time.Since(begin), err, w.b["pool"])
		return err
	}
	var tx *sql.Tx
	if err := timed("begin", func() (err error) { tx, err = w.db.BeginTx(ctx, nil); return err }); err != nil {
		w.led.setTx(txid, notRun)
		return
	}
	for part := 1; part <= 2; part++ {
		err := timed("insert "+strconv.Itoa(part), func() error {
			_, err := tx.ExecContext(ctx, "INSERT INTO soak_tx (txid, part) VALUES (?, ?)", txid, part)
			return err
		})
		if err != nil {
			var me *mysql.MySQLError
			if errors.As(err, &me) && me.Number == 1062 {
				w.r.violate("dup-first", "tx %d insert %d: %v", txid, part, err)
			}
			_ = timed("rollback", tx.Rollback)
			w.led.setTx(txid, notRun)
			return
		}
	}
	err := timed("commit", tx.Commit)
	switch {
	case err == nil:
		w.led.setTx(txid, acked)
	case errors.Is(err, failover.ErrTxLost) && !errors.Is(err, failover.ErrCommitOutcomeUnknown):
		w.led.setTx(txid, notRun)
	default:
		w.led.setTx(txid, unknown)
	}
}

// read runs a small query; a third of them with a short deadline.
func (w *workload) read(rng *rand.Rand) {
	class, dl := "pool", poolDL
	if rng.IntN(3) == 0 {
		class, dl = "short", shortMin+time.Duration(rng.Int64N(int64(shortMax-shortMin)))
	}
	q := "SELECT @@port"
	if rng.IntN(2) == 0 {
		q = "SELECT COALESCE(MAX(k), 0) FROM soak_w WHERE k < 5000000000"
	}
	_ = w.call(class, "read "+q, dl, func(ctx context.Context) error {
		var v int64
		return w.db.QueryRowContext(ctx, q).Scan(&v)
	})
}

// pinned holds one connection for 20 rounds: SetReadOnly(true or false), a read and a
// write in that state.
func (w *workload) pinned(i int, rng *rand.Rand, next func() int64) {
	var conn *sql.Conn
	if w.call("pool", "db.Conn", poolDL, func(ctx context.Context) (err error) { conn, err = w.db.Conn(ctx); return err }) != nil {
		time.Sleep(50 * time.Millisecond)
		return
	}
	defer conn.Close()
	for round := 0; round < 20 && !w.stopped(); round++ {
		ro := rng.IntN(2) == 0
		err := w.call("pinned", fmt.Sprintf("SetReadOnly(%v)", ro), pinnedDL, func(ctx context.Context) error {
			return conn.Raw(func(dc any) error {
				fc, ok := mysqlfailover.ConnOf(dc)
				if !ok {
					return errors.New("soak: not a mysqlfailover connection")
				}
				return fc.SetReadOnly(ctx, ro)
			})
		})
		if err != nil {
			if errKind(err) == "" || errKind(err) == "sql-conndone" {
				return
			}
			continue
		}
		_ = w.call("pinned", "pinned read", pinnedDL, func(ctx context.Context) error {
			var v int64
			return conn.QueryRowContext(ctx, "SELECT @@port").Scan(&v)
		})
		w.write(conn, i, next(), rng.IntN(2) == 0, ro)
	}
}

// checkData compares the ledger with the primary's tables.
func checkData(ctx context.Context, c *harness.Cluster, r *result, led *ledger) {
	present := map[int64]bool{}
	rows, err := c.Primary().Admin().QueryContext(ctx, "SELECT k FROM "+harness.AppDB+".soak_w")
	if err != nil {
		r.violate("harness", "read soak_w: %v", err)
		return
	}
	for rows.Next() {
		var k int64
		if err := rows.Scan(&k); err != nil {
			r.violate("harness", "scan soak_w: %v", err)
		}
		present[k] = true
	}
	rows.Close()
	parts := map[int64]int{}
	rows, err = c.Primary().Admin().QueryContext(ctx, "SELECT txid, COUNT(*) FROM "+harness.AppDB+".soak_tx GROUP BY txid")
	if err != nil {
		r.violate("harness", "read soak_tx: %v", err)
		return
	}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			r.violate("harness", "scan soak_tx: %v", err)
		}
		parts[id] = n
	}
	rows.Close()
	led.mu.Lock()
	defer led.mu.Unlock()
	var nAcked, nNotRun, nUnknown int
	keys := slices.Sorted(mapKeys(led.writes))
	for _, k := range keys {
		switch led.writes[k] {
		case acked:
			nAcked++
			if !present[k] {
				r.violate("ack-missing", "write %d was acknowledged and is not on the primary", k)
			}
		case notRun:
			nNotRun++
			if present[k] {
				r.violate("not-run-present", "write %d: every attempt said it did not run, and it is on the primary", k)
			}
		default:
			nUnknown++
		}
	}
	for k := range present {
		if _, ok := led.writes[k]; !ok {
			r.violate("unknown-row", "key %d is on the primary and no worker wrote it", k)
		}
	}
	var tAcked, tNotRun, tUnknown int
	for _, id := range slices.Sorted(mapKeys(led.txs)) {
		n := parts[id]
		if n != 0 && n != 2 {
			r.violate("tx-partial", "transaction %d has %d of its 2 rows", id, n)
		}
		switch led.txs[id] {
		case acked:
			tAcked++
			if n != 2 {
				r.violate("tx-committed-missing", "transaction %d committed and has %d rows", id, n)
			}
		case notRun:
			tNotRun++
			if n != 0 {
				r.violate("tx-lost-present", "transaction %d failed before or with ErrTxLost at commit and has %d rows", id, n)
			}
		default:
			tUnknown++
		}
	}
	fmt.Printf("soak: writes acked=%d not-run=%d unknown=%d (rows %d); transactions committed=%d not=%d unknown=%d\n",
		nAcked, nNotRun, nUnknown, len(present), tAcked, tNotRun, tUnknown)
}

func mapKeys[V any](m map[int64]V) func(func(int64) bool) {
	return func(yield func(int64) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// checkSessions: no session of the soak user left on any server after db.Close (the
// server may take a moment to notice a closed socket: up to 3 s).
func checkSessions(ctx context.Context, c *harness.Cluster, r *result) {
	deadline := time.Now().Add(3 * time.Second)
	for _, n := range c.Nodes() {
		for {
			cnt, err := n.QueryInt(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = ?", soakUser)
			if err != nil {
				r.violate("harness", "processlist of node %d: %v", n.Index(), err)
				break
			}
			if cnt == 0 {
				break
			}
			if time.Now().After(deadline) {
				r.violate("sessions", "node %d has %d sessions of %s after db.Close: %s", n.Index(), cnt, soakUser, sessions(ctx, n))
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

func sessions(ctx context.Context, n *harness.Node) string {
	rows, err := n.Admin().QueryContext(ctx, "SELECT ID, COMMAND, TIME, COALESCE(STATE, ''), COALESCE(INFO, '') FROM information_schema.PROCESSLIST WHERE USER = ?", soakUser)
	if err != nil {
		return err.Error()
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var id, t int64
		var cmd, state, info string
		if rows.Scan(&id, &cmd, &t, &state, &info) == nil {
			out = append(out, fmt.Sprintf("[id %d %s %ds %q %q]", id, cmd, t, state, info))
		}
	}
	return strings.Join(out, " ")
}

// sabotage is what -sabotage (TestSoakFindsViolations) planted, to be undone after the
// checks.
type sabotage struct {
	extra   *sql.DB       // a session of the soak user left open
	release chan struct{} // ends a goroutine left running
}

// sabotageRun plants one instance of most violations, so that a test can see the checks
// find them: an acknowledged row deleted, a committed transaction cut in half, a row for
// a write that did not run, a call that matched driver.ErrBadConn, an overlong call, the
// password in a log line, a session and a goroutine left behind. (Worker 0's first key
// was inserted before the workload started: a 1062 on a first attempt.)
func sabotageRun(ctx context.Context, c *harness.Cluster, r *result, w *workload, led *ledger, lg io.Writer) (*sabotage, error) {
	p := c.Primary()
	led.mu.Lock()
	var ack, notrun, tx int64 = -1, -1, -1
	for _, k := range slices.Sorted(mapKeys(led.writes)) {
		switch o := led.writes[k]; {
		case o == acked && ack < 0 && k != 1:
			ack = k
		case o == notRun && notrun < 0:
			notrun = k
		}
	}
	for _, id := range slices.Sorted(mapKeys(led.txs)) {
		if led.txs[id] == acked {
			tx = id
			break
		}
	}
	if notrun < 0 { // no write failed: make one up
		notrun = 99_000_000_000
		led.writes[notrun] = notRun
	}
	led.mu.Unlock()
	if ack < 0 || tx < 0 {
		return nil, fmt.Errorf("sabotage: no acknowledged write (%d) or committed transaction (%d) to spoil", ack, tx)
	}
	for _, q := range []string{
		fmt.Sprintf("DELETE FROM %s.soak_w WHERE k = %d", harness.AppDB, ack),
		fmt.Sprintf("DELETE FROM %s.soak_tx WHERE txid = %d AND part = 2", harness.AppDB, tx),
		fmt.Sprintf("INSERT INTO %s.soak_w VALUES (%d, 0, 0)", harness.AppDB, notrun),
	} {
		if err := p.Exec(ctx, q); err != nil {
			return nil, err
		}
	}
	r.record("pool", "sabotage: ErrBadConn", 0, fmt.Errorf("sabotage: %w", sqldriver.ErrBadConn), w.b["pool"])
	r.record("pool", "sabotage: slow", w.b["pool"]+time.Second, nil, w.b["pool"])
	fmt.Fprintf(lg, "sabotage: password=%s\n", soakPassword)
	extra, err := sql.Open("mysql", soakUser+":"+soakPassword+"@tcp("+p.Addr()+")/"+harness.AppDB)
	if err != nil {
		return nil, err
	}
	if err := extra.PingContext(ctx); err != nil {
		extra.Close()
		return nil, err
	}
	sb := &sabotage{extra: extra, release: make(chan struct{})}
	go func() { <-sb.release }()
	return sb, nil
}
