package main

// Running the two stories: the pools, the workloads, the schedule (kill, promotion,
// restart) and the recorders that turn requests and driver events into a story.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// recorder collects one story's requests and the driver's events, in time since t0.
type recorder struct {
	c      *harness.Cluster
	detail *log.Logger
	name   string
	t0     time.Time

	mu sync.Mutex
	s  *story
}

func newRecorder(c *harness.Cluster, detail *log.Logger, name string, s *story) *recorder {
	return &recorder{c: c, detail: detail, name: name, s: s}
}

func (r *recorder) since(t time.Time) time.Duration { return t.Sub(r.t0) }

// names replaces the nodes' addresses in text by node1, node2, node3.
func (r *recorder) names(text string) string {
	for _, n := range r.c.Nodes() {
		name := fmt.Sprint("node", n.Index())
		text = strings.ReplaceAll(text, n.ProxyAddr(), name)
		text = strings.ReplaceAll(text, n.Addr(), name)
	}
	return text
}

func (r *recorder) node(addr string) string {
	if i := r.c.NodeByAddr(addr); i > 0 {
		return fmt.Sprint("node", i)
	}
	if addr == "" {
		return "(none)"
	}
	return addr
}

func (r *recorder) add(q request) {
	r.mu.Lock()
	r.s.reqs = append(r.s.reqs, q)
	r.mu.Unlock()
}

func (r *recorder) mark(at time.Time, kind markKind, text, label string) {
	r.mu.Lock()
	r.s.marks = append(r.s.marks, mark{at: r.since(at), kind: kind, text: text, label: label})
	r.mu.Unlock()
	r.detail.Printf("[%s] MARK %s", r.name, text)
}

// event is the driver's event hook: it logs every event, and keeps the moves of the pool
// and the failed fall-back attempts for the timeline.
func (r *recorder) event(e failover.Event) {
	r.detail.Printf("[%s] EVENT %s", r.name, e)
	if r.t0.IsZero() {
		return // before the workload
	}
	switch e.Kind {
	case failover.EventSwitch:
		text := fmt.Sprintf("driver: the pool moves %s -> %s", r.node(e.From), r.node(e.Host))
		if e.Err != nil {
			text += " (" + r.names(short(e.Err)) + ")"
		}
		r.mark(e.Time, markSwitch, text, "pool moves to "+r.node(e.Host))
	case failover.EventFallBack:
		r.mark(e.Time, markFallBack, fmt.Sprintf("driver: the pool returns %s -> %s (fall-back to the primary)",
			r.node(e.From), r.node(e.Host)), "fall-back to "+r.node(e.Host))
	case failover.EventFallBackFailed:
		ro := e.Err != nil && strings.Contains(e.Err.Error(), "role is") // "skipped: role is standby, wanted read-write"
		r.mu.Lock()
		r.s.fbFail = append(r.s.fbFail, fallBackTry{at: r.since(e.Time), readOnly: ro})
		r.mu.Unlock()
	}
}

// errKind names an error for the timeline by its type; text is the error on one line
// with the nodes named.
func (r *recorder) errKind(err error) (kind, text string) {
	var fe *failover.FailoverError
	var nh *failover.NoHostAvailableError
	var me *mysql.MySQLError
	switch {
	case errors.As(err, &fe):
		kind = "FailoverError"
	case errors.As(err, &nh):
		kind = "NoHostAvailableError"
	case errors.Is(err, failover.ErrTxLost):
		kind = "ErrTxLost"
	case errors.Is(err, context.DeadlineExceeded):
		kind = "deadline"
	case errors.As(err, &me):
		kind = fmt.Sprintf("MySQL %d", me.Number)
	default:
		kind = fmt.Sprintf("%T", err)
	}
	return kind, fmt.Sprintf("%T: %s", err, r.names(oneLine(err)))
}

func oneLine(err error) string { return strings.ReplaceAll(err.Error(), "\n", " ") }

// short keeps an error's text on one short line.
func short(err error) string {
	s := oneLine(err)
	if len(s) > 90 {
		s = s[:87] + "..."
	}
	return s
}

// demo runs both stories on their clusters and returns them, with the exit status so
// far (0, 1 on a failure of the demo itself, 130 when interrupted).
func demo(ctx context.Context, rc, wc *harness.Cluster, detail *log.Logger) (*story, *story, int) {
	failed := func(format string, args ...any) (*story, *story, int) {
		msg := fmt.Sprintf(format, args...)
		detail.Print("FAILED: " + msg)
		if ctx.Err() != nil {
			fmt.Fprintln(os.Stderr, "\ndemo: interrupted; everything it started is being stopped")
			return nil, nil, 130
		}
		fmt.Fprintln(os.Stderr, "\ndemo: "+msg)
		return nil, nil, 1
	}
	if err := prepareWrites(ctx, wc); err != nil {
		return failed("preparing story 2: %v", err)
	}

	reads := &story{num: 1, short: "reads",
		title: "Story 1: reads survive a killed primary (the default failover DSN)",
		load: fmt.Sprintf("%d readers, each SELECT @@port every %v (the port tells which node answered), %v deadline each",
			workers, period, requestTimeout)}
	writes := &story{num: 2, short: "writes",
		title: "Story 2: writes resume as soon as a replica is promoted (targetSessionAttrs=read-write)",
		load:  fmt.Sprintf("%d writers, each an autocommit INSERT every %v, %v deadline each", workers, period, requestTimeout)}
	rrec := newRecorder(rc, detail, "reads", reads)
	wrec := newRecorder(wc, detail, "writes", writes)
	rdb, err := openPool(rc, readParams, rrec, reads)
	if err != nil {
		return failed("story 1: %v", err)
	}
	defer rdb.Close()
	wdb, err := openPool(wc, writeParams, wrec, writes)
	if err != nil {
		return failed("story 2: %v", err)
	}
	defer wdb.Close()

	t0 := time.Now()
	rrec.t0, wrec.t0 = t0, t0
	say := func(text string) {
		fmt.Printf("  %9s  %s\n", secs(time.Since(t0)), text)
		detail.Printf("DEMO %s", text)
	}
	fmt.Printf("\nrunning (about %v):\n", (minRun + afterFallBack).Round(time.Second))
	say(fmt.Sprintf("story 1: %d readers start; story 2: %d writers start", workers, workers))

	// The workers stop between two requests, so that every request they made is
	// recorded, and every row written is one of them; Ctrl-C (ctx) cuts them short.
	stopWork := make(chan struct{})
	var wg sync.WaitGroup
	for w := 1; w <= workers; w++ {
		wg.Add(2)
		go func() {
			defer wg.Done()
			reader(ctx, stopWork, w, rdb, rrec)
		}()
		go func() {
			defer wg.Done()
			writer(ctx, stopWork, w, wdb, wrec)
		}()
	}
	var once sync.Once
	finish := func() {
		once.Do(func() {
			close(stopWork)
			wg.Wait()
		})
	}
	defer finish()

	// The kill, in both clusters at once.
	if !sleepUntil(ctx, t0.Add(killAt)) {
		return failed("interrupted")
	}
	say("kill -9 node1, the primary, in both clusters")
	kill := time.Now()
	rrec.mark(kill, markKill, "demo: kill -9 node1 (the primary)", "")
	wrec.mark(kill, markKill, "demo: kill -9 node1 (the primary); node2 and node3 are read-only: no server takes writes", "")
	if err := both(func() error { return rc.Node(1).Kill() }, func() error { return wc.Node(1).Kill() }); err != nil {
		return failed("kill: %v", err)
	}
	killDone := time.Now() // node1's processes have exited

	// Story 2: the promotion.
	if !sleepUntil(ctx, kill.Add(promoteAfter)) {
		return failed("interrupted")
	}
	say("story 2: promote node2, as an orchestrator would")
	p, err := promote(ctx, wc, wrec)
	if err != nil {
		return failed("story 2: promoting node2: %v", err)
	}
	say(fmt.Sprintf("story 2: node2 is the primary now (took %s); %s", ms(p.took), p.repoint))

	// The restart, in both clusters.
	if !sleepUntil(ctx, kill.Add(restartAfter)) {
		return failed("interrupted")
	}
	say("restart node1 in both clusters (story 1: as the primary again; story 2: read-only, fenced)")
	restart := time.Now()
	rrec.mark(restart, markRestart, "demo: restart node1 (same data, the primary again)", "")
	wrec.mark(restart, markRestart, "demo: restart node1; its configuration says read_only=ON, so it comes back fenced", "")
	var rBack, wBack time.Time
	if err := both(func() error {
		err := rc.Node(1).Restart(ctx)
		rBack = time.Now()
		return err
	}, func() error {
		err := wc.Node(1).Restart(ctx)
		wBack = time.Now()
		return err
	}); err != nil {
		return failed("restart: %v", err)
	}
	rrec.mark(rBack, markBack, fmt.Sprintf("node1 answers again (the restart took %s)", ms(rBack.Sub(restart))), "")
	wrec.mark(wBack, markBack, fmt.Sprintf("node1 answers again, read-only (the restart took %s)", ms(wBack.Sub(restart))),
		"node1 up, read-only")
	say("node1 answers again in both clusters")

	// Story 1's fall-back: the first read served by node1 after it answered again.
	deadline := time.Now().Add(15 * time.Second)
	for !fellBack(rrec, rBack) {
		if time.Now().After(deadline) {
			break // the summary says so
		}
		if !sleepUntil(ctx, time.Now().Add(10*time.Millisecond)) {
			return failed("interrupted")
		}
	}
	if fellBack(rrec, rBack) {
		say("story 1: reads are back on node1")
	}
	if !sleepUntil(ctx, maxTime(time.Now().Add(afterFallBack), t0.Add(minRun))) {
		return failed("interrupted")
	}
	finish()
	end := time.Now()
	say("workloads stop")
	reads.end, writes.end = end.Sub(t0), end.Sub(t0)

	if err := checkRows(ctx, wc, writes, wrec.since(killDone)); err != nil {
		return failed("story 2: reading the rows: %v", err)
	}
	reads.sortRecords()
	writes.sortRecords()
	return reads, writes, 0
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// both runs f and g in parallel and joins their errors.
func both(f, g func() error) error {
	var ef, eg error
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); ef = f() }()
	go func() { defer wg.Done(); eg = g() }()
	wg.Wait()
	return errors.Join(ef, eg)
}

func fellBack(r *recorder, back time.Time) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, q := range r.s.reqs {
		if q.node == 1 && q.err == "" && r.t0.Add(q.start).After(back) {
			return true
		}
	}
	return false
}

// openPool opens story s's pool on c's DSN with params.
func openPool(c *harness.Cluster, params string, rec *recorder, s *story) (*sql.DB, error) {
	cfg, err := dsn.Parse(c.DSN(params))
	if err != nil {
		return nil, err
	}
	s.dsn = cfg.String()
	connector, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithEventHook(rec.event))
	if err != nil {
		return nil, err
	}
	db := sql.OpenDB(connector)
	db.SetMaxOpenConns(workers)
	db.SetMaxIdleConns(workers)
	return db, nil
}

// prepareWrites makes story 2's table and makes node1 writable. Node1 was started with
// --read-only, the setting orchestrators advise for every server's configuration: only
// the orchestrator turns read_only off, on the server it chose as the primary, so a
// primary that crashed comes back read-only and cannot take writes behind the new
// primary's back.
func prepareWrites(ctx context.Context, c *harness.Cluster) error {
	if err := c.Node(1).SetReadOnly(ctx, false); err != nil {
		return err
	}
	if err := c.Node(1).Exec(ctx, "CREATE TABLE app.demo (w INT NOT NULL, k INT NOT NULL, port INT NOT NULL, "+
		"PRIMARY KEY (w, k))"); err != nil {
		return err
	}
	return c.WaitReplicasCaughtUp(ctx)
}

// sleepUntil waits until t or until ctx ends; false when ctx ended.
func sleepUntil(ctx context.Context, t time.Time) bool {
	d := time.Until(t)
	if d <= 0 {
		return ctx.Err() == nil
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-tm.C:
		return true
	}
}

// every runs op every period (staggered by worker) until stop is closed or ctx ends.
func every(ctx context.Context, stop <-chan struct{}, w int, op func()) {
	if !sleepUntil(ctx, time.Now().Add(time.Duration(w-1)*period/workers)) {
		return
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	for {
		op()
		select {
		case <-ctx.Done():
			return
		case <-stop:
			return
		case <-tick.C:
		}
	}
}

// reader is one worker of story 1: SELECT @@port. A read that fails with a
// *failover.FailoverError (it was in flight on a host that died: it may have run there)
// runs once more at once, on the connection's new host, because
// mysqlfailover.SafeToRetry says RetryStatement for it: it was a read (FailoverError.Read),
// and reading twice changes nothing.
func reader(ctx context.Context, stop <-chan struct{}, w int, db *sql.DB, rec *recorder) {
	every(ctx, stop, w, func() {
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		read := func() (int, error) {
			var port int
			err := db.QueryRowContext(rctx, "SELECT @@port").Scan(&port)
			return port, err
		}
		port, err := read()
		retried := false
		var fe *failover.FailoverError
		if errors.As(err, &fe) && mysqlfailover.SafeToRetry(err) == mysqlfailover.RetryStatement && ctx.Err() == nil {
			rec.detail.Printf("[reads] worker %d: %v; running the read again", w, err)
			retried = true
			port, err = read()
		}
		if ctx.Err() != nil {
			return // interrupted: not a request of the story
		}
		q := request{worker: w, start: rec.since(start), latency: time.Since(start), retried: retried}
		if err != nil {
			q.err, q.errText = rec.errKind(err)
			rec.detail.Printf("[reads] worker %d ERROR %v", w, err)
		} else {
			q.node = rec.c.NodeByPort(port)
		}
		rec.add(q)
	})
}

// writer is one worker of story 2: INSERT (w, k, @@port), k counting the worker's
// writes. The row keeps the port of the server that ran it (the binary log is row-based,
// so replicas keep it too): checkRows reads it to know where each write ran.
func writer(ctx context.Context, stop <-chan struct{}, w int, db *sql.DB, rec *recorder) {
	k := 0
	every(ctx, stop, w, func() {
		k++
		start := time.Now()
		rctx, cancel := context.WithTimeout(ctx, requestTimeout)
		defer cancel()
		_, err := db.ExecContext(rctx, fmt.Sprintf("INSERT INTO demo (w, k, port) VALUES (%d, %d, @@port)", w, k))
		if ctx.Err() != nil {
			return
		}
		q := request{worker: w, seq: k, start: rec.since(start), latency: time.Since(start)}
		if err != nil {
			q.err, q.errText = rec.errKind(err)
			rec.detail.Printf("[writes] worker %d write %d ERROR %v", w, k, err)
		}
		rec.add(q)
	})
}

// checkRows reads story 2's rows on node2 (the primary now) and tells each write where
// it ran; it counts the rows on node3 once it has caught up with node2. A write
// acknowledged before node1 had died (dead) and missing on node2 was lost with node1.
func checkRows(ctx context.Context, c *harness.Cluster, s *story, dead time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	rows, err := c.Node(2).Admin().QueryContext(ctx, "SELECT w, k, port FROM app.demo")
	if err != nil {
		return err
	}
	defer rows.Close()
	type key struct{ w, k int }
	where := map[key]int{}
	for rows.Next() {
		var kk key
		var port int
		if err := rows.Scan(&kk.w, &kk.k, &port); err != nil {
			return err
		}
		where[kk] = c.NodeByPort(port)
	}
	if err := rows.Err(); err != nil {
		return err
	}
	s.rows2 = int64(len(where))
	for i := range s.reqs {
		q := &s.reqs[i]
		n, found := where[key{q.worker, q.seq}]
		switch {
		case found:
			q.node = n
		case q.err == "" && q.start < dead:
			q.node, q.lost = 1, true // acknowledged by node1, never replicated
		}
	}
	s.rows3 = -1
	if s.repointErr == "" {
		if err := c.Node(3).CatchUp(ctx, c.Node(2)); err != nil {
			s.repointErr = err.Error()
		} else if s.rows3, err = c.Node(3).QueryInt(ctx, "SELECT COUNT(*) FROM app.demo"); err != nil {
			return err
		}
	}
	return nil
}

// promotion is what promote did.
type promotion struct {
	took    time.Duration
	repoint string // what became of node3, for the live line
}

// promote makes node2 the primary after node1's death, as an orchestrator (Orchestrator,
// MHA, replication-manager) does: node2 and node3 apply what they received from node1;
// node2 stops replicating and forgets node1 (STOP SLAVE, RESET SLAVE ALL) and turns
// read_only off; node3 replicates from node2 (CHANGE MASTER TO node2, keeping its GTID
// position). Node1 is dead; it comes back read-only (see prepareWrites). The harness's own
// promotion helper may replace this one later.
func promote(ctx context.Context, c *harness.Cluster, rec *recorder) (promotion, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	begin := time.Now()
	n2, n3 := c.Node(2), c.Node(3)
	for _, n := range []*harness.Node{n2, n3} {
		if err := applyRelayLog(ctx, n); err != nil {
			return promotion{}, err
		}
	}
	for _, q := range []string{"STOP SLAVE", "RESET SLAVE ALL"} {
		if err := n2.Exec(ctx, q); err != nil {
			return promotion{}, err
		}
	}
	if err := n2.SetReadOnly(ctx, false); err != nil {
		return promotion{}, err
	}
	done := time.Now()
	p := promotion{took: done.Sub(begin)}
	rec.mark(done, markPromote, fmt.Sprintf("orchestrator: node2 promoted: replication stopped, read_only=OFF (took %s)", ms(p.took)), "")

	host, port, err := net.SplitHostPort(n2.Addr())
	if err == nil {
		for _, q := range []string{"STOP SLAVE",
			fmt.Sprintf("CHANGE MASTER TO MASTER_HOST='%s', MASTER_PORT=%s", host, port), // user, password, GTID mode kept
			"START SLAVE"} {
			if err = n3.Exec(ctx, q); err != nil {
				break
			}
		}
	}
	if err != nil {
		rec.s.repointErr = err.Error()
		p.repoint = "node3 could not be re-pointed: " + err.Error()
		return p, nil
	}
	rec.mark(time.Now(), markRepoint, "orchestrator: node3 now replicates from node2", "")
	p.repoint = "node3 replicates from node2"
	return p, nil
}

// applyRelayLog waits until replica n has applied every transaction it received
// (MASTER_GTID_WAIT on its Gtid_IO_Pos), after stopping its IO thread.
func applyRelayLog(ctx context.Context, n *harness.Node) error {
	if err := n.Exec(ctx, "STOP SLAVE IO_THREAD"); err != nil {
		return err
	}
	pos, err := slaveStatus(ctx, n, "Gtid_IO_Pos")
	if err != nil || pos == "" {
		return err
	}
	res, err := n.QueryInt(ctx, "SELECT MASTER_GTID_WAIT(?, 5)", pos)
	if err != nil {
		return err
	}
	if res != 0 {
		return fmt.Errorf("node %d did not apply %q within 5 s", n.Index(), pos)
	}
	return nil
}

// slaveStatus returns one column of SHOW SLAVE STATUS on n.
func slaveStatus(ctx context.Context, n *harness.Node, column string) (string, error) {
	rows, err := n.Admin().QueryContext(ctx, "SHOW SLAVE STATUS")
	if err != nil {
		return "", err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return "", err
	}
	if !rows.Next() {
		return "", fmt.Errorf("node %d is not a replica", n.Index())
	}
	vals := make([]sql.NullString, len(cols))
	ptrs := make([]any, len(cols))
	for k := range vals {
		ptrs[k] = &vals[k]
	}
	if err := rows.Scan(ptrs...); err != nil {
		return "", err
	}
	for k, c := range cols {
		if c == column {
			return vals[k].String, nil
		}
	}
	return "", fmt.Errorf("SHOW SLAVE STATUS has no column %s", column)
}
