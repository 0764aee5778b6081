// Command soak runs a bounded chaos soak of mysqlfailover against a local three-node
// MariaDB cluster (package harness, local processes, each node behind a toxiproxy proxy):
// random faults from a printed seed, one at a time, while a workload runs, then checks
// what callers were told against what the servers hold.
//
//	go run ./cmd/soak [-seconds 60] [-seed N] [-mode both|off|on] [-instances N]   (from the integration module)
//	make soak                                                        (SOAK_SECONDS, SOAK_SEED, SOAK_INSTANCES)
//
// With -instances N (N > 1) the workload runs as a fleet (fleet.go): N processes (this
// binary again), each its own pool on its own tables (soak_w_I, soak_tx_I), against the
// same cluster, while this process injects the faults; at the end each instance closes
// its pool, checks its own goroutines and sends its account and ledger to this process,
// which checks every instance's data and the sessions as below.
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
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// The soak's own user, with a password that appears nowhere else, so that a leak into an
// error or a log line is found by searching for it.
const (
	soakUser     = "soak"
	soakPassword = "Zq7SoakPw4Kx9Vt" // letters and digits: no DSN syntax
)

// toxicStubRun is in the stack of every goroutine of a toxiproxy toxic.
const toxicStubRun = "github.com/Shopify/toxiproxy/v2/toxics.(*ToxicStub).Run"

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
	if os.Getenv(envInstance) != "" {
		os.Exit(soakInstance())
	}
	seconds := flag.Int("seconds", envInt("SOAK_SECONDS", 60), "total soak time in seconds, split between the modes (SOAK_SECONDS)")
	seedFlag := flag.Uint64("seed", uint64(envInt("SOAK_SEED", 0)), "fault schedule seed; 0 picks one (SOAK_SEED)")
	mode := flag.String("mode", "both", "probing: off, on or both (each half of the time)")
	instances := flag.Int("instances", envInt("SOAK_INSTANCES", 1), "instances, each its own process and pool on its own tables, against the same cluster (SOAK_INSTANCES)")
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
	fmt.Printf("soak: seed=%d seconds=%d modes=%s instances=%d (reproduce: go run ./cmd/soak -seed %d -seconds %d -mode %s -instances %d)\n",
		seed, *seconds, *mode, *instances, seed, *seconds, *mode, *instances)
	failed := false
	var lines []string
	for _, probing := range modes {
		var res *result
		var err error
		if *instances > 1 {
			res, err = soakFleet(ctx, seed, probing, per, *instances)
		} else {
			res, err = soak(ctx, seed, probing, per, false)
		}
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
	seed      uint64
	probing   bool
	instances int // processes of a fleet soak (soakFleet); 0 or 1: one pool in this process
	secs      time.Duration
	digest    string

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

func newResult(seed uint64, probing bool, d time.Duration) *result {
	return &result{seed: seed, probing: probing, secs: d, errs: map[string]int{}, longest: map[string]time.Duration{},
		longestWhy: map[string]string{}, firstErr: map[string]string{}, viol: map[string]int{}}
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
	if r.instances > 1 {
		mode += fmt.Sprintf(" instances=%d", r.instances)
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

// soak runs one half: a fresh cluster, the workload, the schedule, the checks.
func soak(ctx context.Context, seed uint64, probing bool, d time.Duration, sab bool) (*result, error) {
	r := newResult(seed, probing, d)
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
	if err := createSoak(ctx, c, soloTables); err != nil {
		return nil, err
	}
	pl, err := openPool(r, soakDSN(c, probing))
	if err != nil {
		return nil, err
	}
	db, events, driverLog := pl.db, pl.events, pl.driverLog

	led := &ledger{writes: map[int64]outcome{}, txs: map[int64]outcome{}}
	if sab {
		// Worker 0's first key, there before it writes it: its first attempt gets 1062.
		if err := p.Exec(ctx, "INSERT INTO "+harness.AppDB+".soak_w VALUES (1, 0, 0)"); err != nil {
			return nil, err
		}
	}
	w := &workload{r: r, db: db, led: led, b: bounds(c.N()), t: soloTables, stop: make(chan struct{})}
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
	checkData(checkCtx, c, r, led, soloTables)

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
	// toxiproxy 2.5.0 can leave a toxic stub blocked for good on a link whose next stub
	// is gone (a toxic added or removed as the link closes: NoopToxic.Pipe in chan send,
	// created by ToxicLink.AddToxic), also after the proxy is stopped. That is the
	// harness's proxy, not the driver: no driver goroutine runs ToxicStub.Run.
	if err := goleak.Find(append(leakOpts, goleak.IgnoreAnyFunction(toxicStubRun))...); err != nil {
		r.violate("goroutines", "after Close: %v", err)
	} else if err := goleak.Find(leakOpts...); err != nil {
		fmt.Printf("soak: note: toxiproxy left goroutines behind (its own leak, ignored): %v\n", err)
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
	fmt.Printf("soak: events %s\n", strings.Join(ev, ","))
	r.printDetails()
	return r, nil
}

// printDetails prints the longest call of each class and the first error of each kind.
func (r *result) printDetails() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, cl := range classes {
		fmt.Printf("soak: longest %s call %v: %s\n", cl, r.longest[cl].Round(time.Millisecond), r.longestWhy[cl])
	}
	for _, k := range slices.Sorted(maps.Keys(r.firstErr)) {
		fmt.Printf("soak: first %s error: %s\n", k, r.firstErr[k])
	}
}

// createSoak creates the soak's user and the tables ts on the primary, and waits until
// the replicas have them.
func createSoak(ctx context.Context, c *harness.Cluster, ts ...tables) error {
	qs := []string{
		"CREATE USER '" + soakUser + "'@'%' IDENTIFIED BY '" + soakPassword + "'",
		"GRANT ALL ON " + harness.AppDB + ".* TO '" + soakUser + "'@'%'",
	}
	for _, t := range ts {
		qs = append(qs, t.create(harness.AppDB)...)
	}
	for _, q := range qs {
		if err := c.Primary().Exec(ctx, q); err != nil {
			return err
		}
	}
	return c.WaitReplicasCaughtUp(ctx)
}

// soakDSN is the soak user's DSN through the proxies, with probing on or off.
func soakDSN(c *harness.Cluster, probing bool) string {
	addrs := make([]string, 0, c.N())
	for _, n := range c.Nodes() {
		addrs = append(addrs, n.ProxyAddr())
	}
	params := baseParams
	if probing {
		params += probeParam
	}
	return soakUser + ":" + soakPassword + "@tcp(" + strings.Join(addrs, ",") + ")/" + harness.AppDB + "?" + params
}

// pool is the soak's pool and what watches it.
type pool struct {
	db        *sql.DB
	events    *sync.Map // event kind -> *atomic.Int64
	driverLog *capture  // the driver's log (slog, debug level)
}

// openPool opens the soak's pool on dsnText: the driver's and go-sql-driver's logs
// searched for the password (capture), every event counted by kind in events and
// searched too, SetMaxOpenConns(maxOpen).
func openPool(r *result, dsnText string) (*pool, error) {
	cfg, err := dsn.Parse(dsnText)
	if err != nil {
		return nil, err
	}
	driverLog := &capture{r: r, what: "mysqlfailover"}
	mysqlLog := &capture{r: r, what: "go-sql-driver"}
	cfg.MySQL.Logger = log.New(mysqlLog, "[mysql] ", log.Lmicroseconds)
	events := new(sync.Map) // kind -> *atomic.Int64
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
	return &pool{db: db, events: events, driverLog: driverLog}, nil
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
