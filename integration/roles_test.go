package integration

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	_ "github.com/mysqlfailover/mysqlfailover" // registers "mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Roles: targetSessionAttrs, and a primary demoted under a write workload.

// rolesPace is the pause of a load worker between two operations.
const rolesPace = 5 * time.Millisecond

// rolesOp is one operation of a write workload: an autocommit INSERT, or a transaction of
// two INSERTs and a COMMIT.
type rolesOp struct {
	worker, seq int
	tx          bool
	start, end  time.Time
	began       time.Time // a transaction: when BeginTx returned
	err         error     // the first error the caller saw; nil when every step succeeded
	step        string    // the step that returned err: insert, begin, insert1, insert2, commit
	later       error     // a transaction that failed at insert1: the error of insert2, run after it
	rollback    error     // a transaction that failed at insert1 or insert2: Rollback's error
}

// rolesKey is one row: worker, sequence and part (0 for an autocommit INSERT, 1 and 2 for
// the INSERTs of a transaction). Every INSERT of a workload has its own key.
type rolesKey struct{ w, k, part int }

// keys returns the rows op writes when it succeeds.
func (op rolesOp) keys() []rolesKey {
	if op.tx {
		return []rolesKey{{op.worker, op.seq, 1}, {op.worker, op.seq, 2}}
	}
	return []rolesKey{{op.worker, op.seq, 0}}
}

// rolesTable creates app.<name> through node 1 and waits until the replicas have it. It
// has no unique key, so an INSERT that ran twice shows as two rows, not as an error.
func rolesTable(t *testing.T, ctx context.Context, c *harness.Cluster, name string) {
	t.Helper()
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app."+name+
		" (w INT NOT NULL, k INT NOT NULL, part INT NOT NULL, port INT NOT NULL, KEY (w, k, part))"))
	must(t, c.WaitReplicasCaughtUp(ctx))
}

type rolesExecer interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}

// rolesLoad is a write workload: workers goroutines, each running operations back to back
// (rolesPace apart) with a 5 s context each, until halt.
type rolesLoad struct {
	db    *sql.DB
	table string
	txMix bool // every second operation is a transaction
	stop  atomic.Bool
	okOps atomic.Int64
	wg    sync.WaitGroup
	ops   [][]rolesOp
	once  sync.Once
	all   []rolesOp
}

func rolesStartLoad(ctx context.Context, db *sql.DB, table string, workers int, txMix bool) *rolesLoad {
	l := &rolesLoad{db: db, table: table, txMix: txMix, ops: make([][]rolesOp, workers)}
	for w := range workers {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			l.run(ctx, w)
		}()
	}
	return l
}

func (l *rolesLoad) insert(ctx context.Context, q rolesExecer, key rolesKey) error {
	// A literal statement (no PREPARE round trip), @@port evaluated where it runs; the
	// binary log is row-based, so the replicas keep the origin's port.
	_, err := q.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (w, k, part, port) VALUES (%d, %d, %d, @@port)",
		l.table, key.w, key.k, key.part))
	return err
}

func (l *rolesLoad) run(ctx context.Context, w int) {
	for k := 0; !l.stop.Load() && ctx.Err() == nil; k++ {
		op := rolesOp{worker: w, seq: k, tx: l.txMix && k%2 == 1, start: time.Now()}
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if op.tx {
			l.runTx(sctx, &op)
		} else {
			op.step = "insert"
			op.err = l.insert(sctx, l.db, op.keys()[0])
		}
		cancel()
		op.end = time.Now()
		if op.err == nil {
			op.step = ""
			l.okOps.Add(1)
		}
		l.ops[w] = append(l.ops[w], op)
		time.Sleep(rolesPace)
	}
}

// rolesBeginner is a *sql.DB or a *sql.Conn.
type rolesBeginner interface {
	BeginTx(context.Context, *sql.TxOptions) (*sql.Tx, error)
}

func (l *rolesLoad) runTx(ctx context.Context, op *rolesOp) { l.runTxOn(ctx, l.db, op) }

// runTxOn runs op's transaction on b and records its outcome in op.
func (l *rolesLoad) runTxOn(ctx context.Context, b rolesBeginner, op *rolesOp) {
	keys := op.keys()
	tx, err := b.BeginTx(ctx, nil)
	op.began = time.Now()
	if err != nil {
		op.err, op.step = err, "begin"
		return
	}
	if err := l.insert(ctx, tx, keys[0]); err != nil {
		op.err, op.step = err, "insert1"
		op.later = l.insert(ctx, tx, keys[1])
		op.rollback = tx.Rollback()
		return
	}
	if err := l.insert(ctx, tx, keys[1]); err != nil {
		op.err, op.step = err, "insert2"
		op.rollback = tx.Rollback()
		return
	}
	if err := tx.Commit(); err != nil {
		op.err, op.step = err, "commit"
	}
}

// waitOK waits until n operations have succeeded since the call, within d.
func (l *rolesLoad) waitOK(t *testing.T, n int64, d time.Duration) {
	t.Helper()
	from := l.okOps.Load()
	for deadline := time.Now().Add(d); l.okOps.Load()-from < n; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d operations succeeded within %v, want %d", l.okOps.Load()-from, d, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// halt stops the workers and returns every operation, by start time. Calling it again
// returns the same operations.
func (l *rolesLoad) halt() []rolesOp {
	l.once.Do(func() {
		l.stop.Store(true)
		l.wg.Wait()
		for _, w := range l.ops {
			l.all = append(l.all, w...)
		}
		sort.Slice(l.all, func(i, j int) bool { return l.all[i].start.Before(l.all[j].start) })
	})
	return l.all
}

// rolesRows reads the table on node i (admin): the ports of the rows of each key.
func rolesRows(t *testing.T, ctx context.Context, c *harness.Cluster, i int, table string) map[rolesKey][]int {
	t.Helper()
	rows, err := c.Node(i).Admin().QueryContext(ctx, "SELECT w, k, part, port FROM app."+table)
	must(t, err)
	defer rows.Close()
	out := map[rolesKey][]int{}
	for rows.Next() {
		var key rolesKey
		var port int
		must(t, rows.Scan(&key.w, &key.k, &key.part, &port))
		out[key] = append(out[key], port)
	}
	must(t, rows.Err())
	return out
}

// rolesReadOnlyNumber returns the number of a read-only rejection (1290, 1836, 1792) in
// err's chain, or 0.
func rolesReadOnlyNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) && (me.Number == 1290 || me.Number == 1836 || me.Number == 1792) {
		return me.Number
	}
	return 0
}

// rolesKind names an error for the counts: "ok", "txlost", "bare-<n>" (a read-only
// rejection that is not a lost transaction), "failover", "nohost", "context",
// "mysql-<n>" or "other".
func rolesKind(err error) string {
	var fe *failover.FailoverError
	var nh *failover.NoHostAvailableError
	var me *mysql.MySQLError
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, failover.ErrTxLost):
		return "txlost"
	case rolesReadOnlyNumber(err) != 0:
		return fmt.Sprintf("bare-%d", rolesReadOnlyNumber(err))
	case errors.As(err, &fe):
		return "failover"
	case errors.As(err, &nh):
		return "nohost"
	case errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded):
		return "context"
	case errors.As(err, &me):
		return fmt.Sprintf("mysql-%d", me.Number)
	}
	return "other"
}

// roleRejection is what an error says when a host was passed over for its role. The
// error's type is the engine's (internal); a user reads it from the text, whose wording
// the package docs give (mysqlfailover, failover): "skipped: role is standby, wanted
// read-write" after the role check of a new connection; an error that "says demoted"
// when a write was rejected ("demoted: role is standby now, wanted read-write (the
// server rejected a write: ...)").
type roleRejection struct {
	Role    string // failover.Role's String: "primary", "standby", ...
	Wanted  string // the targetSessionAttrs value
	Demoted bool
}

var roleRejectionRE = regexp.MustCompile(`(skipped|demoted): role is (.+?)( now)?, wanted ([a-z-]+)`)

// roleErrOf returns the first role rejection err's text states, or nil.
func roleErrOf(err error) *roleRejection {
	if err == nil {
		return nil
	}
	m := roleRejectionRE.FindStringSubmatch(err.Error())
	if m == nil {
		return nil
	}
	return &roleRejection{Role: m[2], Wanted: m[4], Demoted: m[1] == "demoted"}
}

// rolesWaitEvent polls the log until an event at or after since satisfies ok, for at
// most d; it returns the first such event and whether there was one.
func rolesWaitEvent(ev *eventLog, since time.Time, d time.Duration, ok func(failover.Event) bool) (failover.Event, bool) {
	for deadline := time.Now().Add(d); ; {
		for _, e := range ev.all() {
			if !e.Time.Before(since) && ok(e) {
				return e, true
			}
		}
		if time.Now().After(deadline) {
			return failover.Event{}, false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// rolesEventsOf returns every event about host at or after since.
func rolesEventsOf(ev *eventLog, host string, since time.Time) []failover.Event {
	var out []failover.Event
	for _, e := range ev.all() {
		if e.Host == host && !e.Time.Before(since) {
			out = append(out, e)
		}
	}
	return out
}

// rolesCheckRows checks the rows of a run in which node 2 was promoted after catching up
// with the demoted node 1, so that node 2 holds every row node 1 has: every row on node 1
// is on node 2 as well; every successful operation's rows are on node 2 exactly once; no
// failed operation left a row on either node; node 2 has no row that no successful
// operation wrote. report is called for each problem. It returns the node each successful
// operation's rows landed on (by their port column), and the row counts of nodes 1 and 2.
func rolesCheckRows(t *testing.T, ctx context.Context, c *harness.Cluster, table string, ops []rolesOp,
	report func(string, ...any)) (landed map[[2]int]int, rows1, rows2 int) {
	t.Helper()
	on1 := rolesRows(t, ctx, c, 1, table)
	on2 := rolesRows(t, ctx, c, 2, table)
	for key, ports := range on1 {
		rows1 += len(ports)
		if fmt.Sprint(on2[key]) != fmt.Sprint(ports) {
			report("row %+v: node 1 has ports %v, node 2 %v (node 2 caught up before its promotion)", key, ports, on2[key])
		}
		for _, p := range ports {
			if n := c.NodeByPort(p); n != 1 {
				report("row %+v on node 1 was written on node %d", key, n)
			}
		}
	}
	landed = map[[2]int]int{}
	okKeys := map[rolesKey]bool{}
	for _, op := range ops {
		for _, key := range op.keys() {
			ports := on2[key]
			switch {
			case op.err == nil:
				okKeys[key] = true
				if len(ports) != 1 {
					report("%s (worker %d op %d, part %d) succeeded, node 2 has %d rows of it (ports %v), want 1",
						rolesOpName(op), op.worker, op.seq, key.part, len(ports), ports)
				} else {
					landed[[2]int{op.worker, op.seq}] = c.NodeByPort(ports[0])
				}
			case len(ports) > 0 || len(on1[key]) > 0:
				report("%s (worker %d op %d, part %d) failed (%v) but left rows: node 1 ports %v, node 2 ports %v",
					rolesOpName(op), op.worker, op.seq, key.part, op.err, on1[key], ports)
			}
		}
	}
	for key, ports := range on2 {
		rows2 += len(ports)
		if !okKeys[key] {
			report("node 2 has %d rows of %+v, which no successful operation wrote", len(ports), key)
		}
	}
	return landed, rows1, rows2
}

func rolesOpName(op rolesOp) string {
	if op.tx {
		return "transaction"
	}
	return "INSERT"
}

// rolesReporter returns a t.Errorf that stops printing after 10 problems, and a function
// that reports how many there were in all.
func rolesReporter(t *testing.T) (report func(string, ...any), done func()) {
	n := 0
	report = func(format string, args ...any) {
		t.Helper()
		if n < 10 {
			t.Errorf(format, args...)
		}
		n++
	}
	done = func() {
		if n > 10 {
			t.Errorf("... %d problems in all", n)
		}
	}
	return report, done
}

// TestPromotion (case 15, with write intent): a planned switchover under a steady write
// load. Node 1 is set read_only=ON; node 2 catches up, stops replicating and is set
// read_only=OFF.
//
//   - read-write (targetSessionAttrs=read-write, secondsBeforeRetryMaster=2, default
//     failOverReadOnly): eight goroutines run autocommit INSERTs (5 s context each) through
//     an 8-connection pool. Not one INSERT fails, before or after the first 1290 rejection:
//     the rejected ones are re-run on node 2. The event log has an EventHostFailed for
//     node 1 whose Err is a role rejection (standby, wanted read-write, caused by 1290
//     or 1836) and an EventSwitch from node 1 to node 2. Writes go on landing on node 2
//     through the same pool (node 2 is second in the list, yet its sessions are not made
//     read-only: failOverReadOnly does not apply with read-write). No earlier than 2 s
//     after the switch the pool probes node 1 and the probe is rejected by role (an
//     EventConnect or EventFallBackFailed for node 1 whose Err is a role rejection,
//     and an EventFallBackFailed), there is no EventFallBack, and the writes after the
//     probe still land on node 2. Every successful INSERT is on node 2 exactly once.
//   - any (targetSessionAttrs default): after the same switchover an INSERT returns the
//     server's *mysql.MySQLError 1290 untouched (no *failover.FailoverError, no
//     ErrTxLost), nothing moves (no switch, no host failure, no attempt on another node)
//     and the pool stays on node 1.
func TestPromotion(t *testing.T) {
	t.Run("read-write", func(t *testing.T) {
		const (
			workers     = 8
			retryMaster = 2 * time.Second // secondsBeforeRetryMaster
		)
		name := t.Name()
		fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", name, k, v) }
		c := harness.Start(t, 3)
		ctx := ctxT(t, time.Minute)
		n1 := c.Node(1).ProxyAddr()
		rolesTable(t, ctx, c, "promo")
		db, ev := openWithEvents(t, c.DSN("targetSessionAttrs=read-write&secondsBeforeRetryMaster=2&queriesBeforeRetryMaster=0&readTimeout=2s"))
		db.SetMaxOpenConns(workers)
		db.SetMaxIdleConns(workers)

		load := rolesStartLoad(ctx, db, "promo", workers, false)
		defer load.halt()
		load.waitOK(t, 100, 10*time.Second)

		t0 := time.Now()
		must(t, c.Node(1).Demote(ctx))
		roAt := time.Now() // node 1 read_only=ON
		must(t, c.Node(2).Promote(ctx, c.Node(1)))
		rwAt := time.Now() // node 2 read_only=OFF

		sw, ok := rolesWaitEvent(ev, t0, 10*time.Second, func(e failover.Event) bool {
			return e.Kind == failover.EventSwitch && c.NodeByAddr(e.Host) == 2
		})
		if !ok {
			t.Fatalf("no switch to node 2 within 10 s of the demotion; events: %v", ev.all())
		}
		// The fall-back clock runs from the switch: a probe of node 1 is due 2 s later.
		due := sw.Time.Add(retryMaster - 50*time.Millisecond)
		probe, probed := rolesWaitEvent(ev, due, 10*time.Second, func(e failover.Event) bool {
			return e.Host == n1 && (e.Kind == failover.EventFallBackFailed || e.Kind == failover.EventConnect) &&
				roleErrOf(e.Err) != nil
		})
		if probed {
			load.waitOK(t, 50, 10*time.Second) // writes after the probe
		}
		ops := load.halt()

		report, done := rolesReporter(t)
		defer done()

		// The first rejection the pool saw.
		rej, rejected := rolesWaitEvent(ev, t0, 0, func(e failover.Event) bool {
			return e.Kind == failover.EventHostFailed && e.Host == n1
		})
		if !rejected {
			t.Errorf("no EventHostFailed for node 1 after the demotion")
		} else if re := roleErrOf(rej.Err); re == nil {
			t.Errorf("EventHostFailed for node 1: Err %T %v, want a role rejection", rej.Err, rej.Err)
		} else {
			if re.Role != failover.RoleStandby.String() || re.Wanted != "read-write" {
				t.Errorf("EventHostFailed for node 1: role %v, wanted %q; want standby, read-write", re.Role, re.Wanted)
			}
			if n := rolesReadOnlyNumber(rej.Err); n != 1290 && n != 1836 {
				t.Errorf("EventHostFailed for node 1: %v, want its cause to be MySQL error 1290 or 1836", rej.Err)
			}
		}
		if f := c.NodeByAddr(sw.From); f != 1 {
			t.Errorf("switch to node 2 from node %d (%s), want node 1", f, sw.From)
		}

		counts := map[string]int{}
		var inFlight, errsAfterRej, okAfterProbe int
		var maxLatencyAfter time.Duration
		landed, rows1, rows2 := rolesCheckRows(t, ctx, c, "promo", ops, report)
		var firstOn2 time.Time
		perNode := map[int]int{}
		for _, op := range ops {
			counts[rolesKind(op.err)]++
			if op.start.Before(roAt) && op.end.After(t0) {
				inFlight++
			}
			if !op.start.Before(t0) {
				maxLatencyAfter = max(maxLatencyAfter, op.end.Sub(op.start))
			}
			if op.err != nil {
				if rejected && op.start.After(rej.Time) {
					errsAfterRej++
				}
				report("INSERT (worker %d op %d) started %v after the demotion began failed (%s): %v",
					op.worker, op.seq, op.start.Sub(t0), rolesKind(op.err), op.err)
				continue
			}
			node := landed[[2]int{op.worker, op.seq}]
			perNode[node]++
			if node == 2 && (firstOn2.IsZero() || op.end.Before(firstOn2)) {
				firstOn2 = op.end
			}
			if op.start.After(sw.Time) && node != 2 {
				report("INSERT (worker %d op %d) started %v after the switch landed on node %d, want 2",
					op.worker, op.seq, op.start.Sub(sw.Time), node)
			}
			if probed && op.start.After(probe.Time) {
				okAfterProbe++
			}
		}
		if firstOn2.IsZero() {
			t.Errorf("no INSERT landed on node 2")
		}
		if !probed {
			t.Errorf("no fall-back probe of node 1 rejected by role 2 s to 12 s after the switch (secondsBeforeRetryMaster=2); node 1 events since the switch: %v",
				rolesEventsOf(ev, n1, sw.Time))
		} else if okAfterProbe == 0 {
			t.Errorf("no INSERT succeeded after the rejected fall-back probe")
		}
		if fb := ev.of(failover.EventFallBack, "", t0); len(fb) != 0 {
			t.Errorf("fall-back events %v, want none: node 1 is read-only", fb)
		}
		var probes, early int
		for _, e := range rolesEventsOf(ev, n1, sw.Time) {
			if e.Kind == failover.EventConnect {
				probes++
				if e.Time.Before(due) {
					early++
				}
			}
		}
		for _, e := range rolesEventsOf(ev, n1, t0) {
			t.Logf("node 1 event at readonly_on%+v: %v", e.Time.Sub(roAt).Round(time.Microsecond), e)
		}

		fig("statements", len(ops))
		fig("ok", counts["ok"])
		fig("errors", len(ops)-counts["ok"])
		for k, v := range counts {
			if k != "ok" {
				fig("errors_"+k, v)
			}
		}
		fig("errors_started_after_first_rejection", errsAfterRej)
		fig("in_flight_at_demotion", inFlight)
		fig("writes_by_node", perNode)
		fig("rows_node1", rows1)
		fig("rows_node2", rows2)
		fig("demote_call_ms", roAt.Sub(t0).Milliseconds())
		fig("promote_call_ms", rwAt.Sub(roAt).Milliseconds())
		if rejected {
			fig("readonly_on_to_first_rejection_ms", rej.Time.Sub(roAt).Milliseconds())
		}
		fig("readonly_on_to_switch_ms", sw.Time.Sub(roAt).Milliseconds())
		fig("readwrite_on_to_switch_ms", sw.Time.Sub(rwAt).Milliseconds())
		if !firstOn2.IsZero() {
			fig("readonly_on_to_first_write_node2_ms", firstOn2.Sub(roAt).Milliseconds())
			fig("readwrite_on_to_first_write_node2_ms", firstOn2.Sub(rwAt).Milliseconds())
		}
		fig("max_insert_after_demotion_ms", maxLatencyAfter.Milliseconds())
		if probed {
			fig("switch_to_first_rejected_probe_ms", probe.Time.Sub(sw.Time).Milliseconds())
			if fbf := ev.of(failover.EventFallBackFailed, n1, due); len(fbf) == 0 {
				t.Errorf("no EventFallBackFailed for node 1 after the due time, only %v", probe)
			} else {
				fig("fallback_failed_events", len(fbf))
				fig("fallback_failed_err", fbf[0].Err)
			}
			fig("first_rejected_probe_kind", probe.Kind)
		}
		fig("node1_attempts_after_switch", probes)
		fig("node1_attempts_after_switch_before_due", early)
		fig("node1_events_after_switch", len(rolesEventsOf(ev, n1, sw.Time)))
		fig("ok_after_probe", okAfterProbe)
	})

	t.Run("any", func(t *testing.T) {
		name := t.Name()
		fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", name, k, v) }
		c := harness.Start(t, 3)
		ctx := ctxT(t, time.Minute)
		rolesTable(t, ctx, c, "promo")
		db, ev := openWithEvents(t, c.DSN("secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0&readTimeout=2s"))
		db.SetMaxOpenConns(2)
		db.SetMaxIdleConns(2)
		l := &rolesLoad{db: db, table: "promo"}
		must(t, l.insert(ctx, db, rolesKey{0, 0, 0}))

		must(t, c.Node(1).Demote(ctx))
		must(t, c.Node(2).Promote(ctx, c.Node(1)))
		t0 := time.Now()

		const n = 10
		rejected := 0
		for k := 1; k <= n; k++ {
			err := l.insert(ctx, db, rolesKey{0, k, 0})
			var me *mysql.MySQLError
			var fe *failover.FailoverError
			switch {
			case !errors.As(err, &me) || me.Number != 1290:
				t.Errorf("INSERT %d on the demoted node 1: %v, want *mysql.MySQLError 1290", k, err)
			case errors.As(err, &fe) || errors.Is(err, failover.ErrTxLost) || roleErrOf(err) != nil:
				t.Errorf("INSERT %d: %v, want the server's 1290 untouched, not a failover", k, err)
			default:
				rejected++
			}
		}
		node, err := nodeOf(ctx, c, db)
		if err != nil || node != 1 {
			t.Errorf("SELECT after the rejected INSERTs: node %d, %v; want node 1", node, err)
		}
		var moved []failover.Event
		for _, e := range ev.all() {
			if !e.Time.Before(t0) && (e.Kind != failover.EventConnect || c.NodeByAddr(e.Host) != 1) {
				moved = append(moved, e)
			}
		}
		if len(moved) != 0 {
			t.Errorf("events after the demotion other than connections to node 1: %v, want none", moved)
		}
		rows := 0
		for i := 1; i <= 2; i++ {
			for key := range rolesRows(t, ctx, c, i, "promo") {
				if key.k != 0 {
					rows++
				}
			}
		}
		if rows != 0 {
			t.Errorf("%d rows of the rejected INSERTs on nodes 1 and 2, want 0", rows)
		}
		fig("rejected_1290", rejected)
		fig("node_after", node)
		fig("events_after_demotion_not_node1_connect", len(moved))
	})
}

// TestDemotedPrimaryUnderWrites (case 15, with write intent, under load): eight
// goroutines alternate autocommit INSERTs and transactions of two INSERTs through a pool
// of nine connections (one of them pinned and idle on node 1) with
// targetSessionAttrs=read-write; node 1 is demoted (read_only=ON)
// and node 2, 300 ms later, promoted (caught up, replication stopped, read_only=OFF).
//
// No autocommit INSERT fails (a rejected one is re-run on node 2) and no bare 1290 reaches
// the caller. Only transactions in flight when the pool learnt of the demotion (started
// before node 1's first EventHostFailed) may fail; in particular a transaction begun on an
// idle pooled connection of node 1 right after that event, while no host is writable yet,
// waits and commits on node 2. Each failed transaction has an error matching
// failover.ErrTxLost: a failed INSERT's error wraps a *failover.FailoverError whose Err
// wraps the *mysql.MySQLError 1290 (or 1836), the transaction's next INSERT fails with
// ErrTxLost, and Rollback returns nil; a failed Commit matches ErrTxLost. The rows, by a
// unique key per INSERT, across nodes 1 and 2: each successful INSERT (and both INSERTs of
// each committed transaction) is on node 2 exactly once, no failed transaction left a row
// anywhere, and node 2 has no row that no successful operation wrote. The event log shows
// node 1's EventHostFailed with a role rejection and the EventSwitch to node 2.
func TestDemotedPrimaryUnderWrites(t *testing.T) {
	const (
		workers = 8
		gap     = 300 * time.Millisecond // node 1 read-only to node 2 writable
	)
	name := t.Name()
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", name, k, v) }
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	n1 := c.Node(1).ProxyAddr()
	rolesTable(t, ctx, c, "demoted")
	db, ev := openWithEvents(t, c.DSN("targetSessionAttrs=read-write&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0&readTimeout=2s"))
	db.SetMaxOpenConns(workers + 1)
	db.SetMaxIdleConns(workers + 1)

	// A pinned connection on node 1 that sits idle through the demotion, for the late
	// transaction.
	lateConn, err := db.Conn(ctx)
	must(t, err)
	defer lateConn.Close()
	if node, err := nodeOf(ctx, c, lateConn); err != nil || node != 1 {
		t.Fatalf("pinned connection on node %d, %v; want node 1", node, err)
	}

	load := rolesStartLoad(ctx, db, "demoted", workers, true)
	defer load.halt()
	load.waitOK(t, 100, 10*time.Second)

	t0 := time.Now()
	must(t, c.Node(1).Demote(ctx))
	roAt := time.Now()
	// The late transaction begins once the pool knows (node 1's first EventHostFailed),
	// while no host is writable yet.
	lateDone := make(chan rolesOp, 1)
	if _, ok := rolesWaitEvent(ev, t0, gap/2, func(e failover.Event) bool {
		return e.Kind == failover.EventHostFailed && e.Host == n1
	}); ok {
		go func() {
			op := rolesOp{worker: workers, seq: 0, tx: true, start: time.Now()}
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			load.runTxOn(lctx, lateConn, &op)
			op.end = time.Now()
			lateDone <- op
		}()
	} else {
		t.Errorf("no EventHostFailed for node 1 within %v of the demotion: the late transaction is not run", gap/2)
		close(lateDone)
	}
	time.Sleep(time.Until(roAt.Add(gap))) // the switchover's own pace, not a wait for the driver
	must(t, c.Node(2).Promote(ctx, c.Node(1)))
	rwAt := time.Now()
	late, lateRan := <-lateDone

	sw, ok := rolesWaitEvent(ev, t0, 10*time.Second, func(e failover.Event) bool {
		return e.Kind == failover.EventSwitch && c.NodeByAddr(e.Host) == 2
	})
	if !ok {
		t.Fatalf("no switch to node 2 within 10 s of the demotion; events: %v", ev.all())
	}
	load.waitOK(t, 200, 10*time.Second) // operations after the switch
	ops := load.halt()

	report, done := rolesReporter(t)
	defer done()

	rej, rejected := rolesWaitEvent(ev, t0, 0, func(e failover.Event) bool {
		return e.Kind == failover.EventHostFailed && e.Host == n1
	})
	if !rejected {
		t.Errorf("no EventHostFailed for node 1 after the demotion")
	} else if re := roleErrOf(rej.Err); re == nil {
		t.Errorf("EventHostFailed for node 1: Err %T %v, want a role rejection", rej.Err, rej.Err)
	} else if re.Role != failover.RoleStandby.String() || re.Wanted != "read-write" {
		t.Errorf("EventHostFailed for node 1: role %v, wanted %q; want standby, read-write", re.Role, re.Wanted)
	}
	if f := c.NodeByAddr(sw.From); f != 1 {
		t.Errorf("switch to node 2 from node %d (%s), want node 1", f, sw.From)
	}

	counts := map[string]int{}
	steps := map[string]int{}
	var autoOK, autoFailed, txOK, txFailed, inFlight, bare int
	var failedTxBeforeRO, failedTxBeforeRej, failedTxBeforeSwitch, failedTxAfterSwitch int
	var maxLatencyAfter time.Duration
	var firstOn2 time.Time
	checked := ops
	if lateRan {
		checked = append(ops[:len(ops):len(ops)], late)
	}
	landed, rows1, rows2 := rolesCheckRows(t, ctx, c, "demoted", checked, report)
	if lateRan {
		fig("late_tx_began_ms_after_readonly_on", late.start.Sub(roAt).Milliseconds())
		fig("late_tx_ms", late.end.Sub(late.start).Milliseconds())
		fig("late_tx_result", rolesKind(late.err))
		if late.err != nil {
			t.Errorf("a transaction begun on an idle pooled connection %v after node 1 became read-only, after the pool learnt it (node 1's EventHostFailed), failed at %s after %v: %v; want it to wait for the writable node 2 and commit there",
				late.start.Sub(roAt).Round(time.Microsecond), late.step, late.end.Sub(late.start).Round(time.Millisecond), late.err)
		} else if n := landed[[2]int{late.worker, late.seq}]; n != 2 {
			t.Errorf("the late transaction committed on node %d, want 2", n)
		}
	}
	perNode := map[int]int{}
	for _, op := range ops {
		kind := rolesKind(op.err)
		counts[kind]++
		if strings.HasPrefix(kind, "bare-") {
			bare++
		}
		if op.start.Before(roAt) && op.end.After(t0) {
			inFlight++
		}
		if !op.start.Before(t0) {
			maxLatencyAfter = max(maxLatencyAfter, op.end.Sub(op.start))
		}
		at := op.start.Sub(t0)
		if op.err == nil {
			if op.tx {
				txOK++
			} else {
				autoOK++
			}
			node := landed[[2]int{op.worker, op.seq}]
			perNode[node]++
			if node == 2 && (firstOn2.IsZero() || op.end.Before(firstOn2)) {
				firstOn2 = op.end
			}
			if op.start.After(sw.Time) && node != 2 {
				report("%s (worker %d op %d) started %v after the switch landed on node %d, want 2",
					rolesOpName(op), op.worker, op.seq, op.start.Sub(sw.Time), node)
			}
			continue
		}
		if !op.tx {
			autoFailed++
			report("autocommit INSERT (worker %d op %d) started at t0%+v failed (%s): %v", op.worker, op.seq, at, kind, op.err)
			continue
		}
		txFailed++
		steps[op.step]++
		switch {
		case op.start.Before(roAt):
			failedTxBeforeRO++
		case rejected && op.start.Before(rej.Time):
			failedTxBeforeRej++
		case op.start.Before(sw.Time):
			failedTxBeforeSwitch++
		default:
			failedTxAfterSwitch++
		}
		if !errors.Is(op.err, failover.ErrTxLost) {
			report("transaction (worker %d op %d) started at t0%+v failed at %s with %s, want failover.ErrTxLost: %T %v",
				op.worker, op.seq, at, op.step, kind, op.err, op.err)
		}
		if op.end.Before(t0) || (rejected && !op.start.Before(rej.Time)) {
			report("transaction (worker %d op %d) failed at %s but ran from t0%+v (BeginTx returned at t0%+v) to t0%+v, not in flight when the pool learnt of the demotion (node 1 read-only at t0%+v, first rejection at t0%+v, switch at t0%+v): %v",
				op.worker, op.seq, op.step, at, op.began.Sub(t0), op.end.Sub(t0), roAt.Sub(t0), rej.Time.Sub(t0), sw.Time.Sub(t0), op.err)
		}
		switch op.step {
		case "insert1", "insert2":
			var fe *failover.FailoverError
			if !errors.As(op.err, &fe) {
				report("transaction (worker %d op %d): %s error %v does not wrap a *failover.FailoverError", op.worker, op.seq, op.step, op.err)
			} else if n := rolesReadOnlyNumber(fe.Err); n != 1290 && n != 1836 {
				report("transaction (worker %d op %d): FailoverError.Err %v, want the *mysql.MySQLError 1290 or 1836", op.worker, op.seq, fe.Err)
			}
			if op.step == "insert1" && !errors.Is(op.later, failover.ErrTxLost) {
				report("transaction (worker %d op %d): the INSERT after the lost one: %v, want failover.ErrTxLost", op.worker, op.seq, op.later)
			}
			if op.rollback != nil {
				report("transaction (worker %d op %d): Rollback after the loss: %v, want nil", op.worker, op.seq, op.rollback)
			}
		case "commit":
			if errors.Is(op.err, failover.ErrCommitOutcomeUnknown) {
				report("transaction (worker %d op %d): Commit rejected by a read-only server reported as outcome unknown: %v", op.worker, op.seq, op.err)
			}
		default:
			report("transaction (worker %d op %d) failed at %s: %v", op.worker, op.seq, op.step, op.err)
		}
		if errors.Is(op.err, sqldriver.ErrBadConn) {
			report("transaction (worker %d op %d): error matches driver.ErrBadConn: %v", op.worker, op.seq, op.err)
		}
	}
	if bare != 0 {
		t.Errorf("%d read-only rejections reached the caller outside a lost transaction", bare)
	}
	if firstOn2.IsZero() {
		t.Errorf("no write landed on node 2")
	}

	fig("operations", len(ops))
	fig("autocommit_ok", autoOK)
	fig("autocommit_failed", autoFailed)
	fig("tx_ok", txOK)
	fig("tx_failed", txFailed)
	fig("tx_failed_by_step", steps)
	fig("tx_failed_started_before_readonly_on", failedTxBeforeRO)
	fig("tx_failed_started_before_first_rejection", failedTxBeforeRej)
	fig("tx_failed_started_before_switch", failedTxBeforeSwitch)
	fig("tx_failed_started_after_switch", failedTxAfterSwitch)
	for k, v := range counts {
		if k != "ok" {
			fig("errors_"+k, v)
		}
	}
	fig("bare_readonly_errors", bare)
	fig("in_flight_at_demotion", inFlight)
	fig("ok_by_node", perNode)
	fig("rows_node1", rows1)
	fig("rows_node2", rows2)
	fig("demote_call_ms", roAt.Sub(t0).Milliseconds())
	fig("readonly_on_to_readwrite_on_ms", rwAt.Sub(roAt).Milliseconds())
	if rejected {
		fig("readonly_on_to_first_rejection_ms", rej.Time.Sub(roAt).Milliseconds())
	}
	fig("readonly_on_to_switch_ms", sw.Time.Sub(roAt).Milliseconds())
	fig("readwrite_on_to_switch_ms", sw.Time.Sub(rwAt).Milliseconds())
	if !firstOn2.IsZero() {
		fig("readonly_on_to_first_write_node2_ms", firstOn2.Sub(roAt).Milliseconds())
		fig("readwrite_on_to_first_write_node2_ms", firstOn2.Sub(rwAt).Milliseconds())
	}
	fig("max_operation_after_demotion_ms", maxLatencyAfter.Milliseconds())
}

// TestTargetSessionAttrs: three nodes, node 1 writable, nodes 2 and 3 read_only=ON.
//
//   - New connections (ten, none kept idle) land on node 1 with any, read-write and
//     primary, with no role rejection; on node 2 with standby, read-only and prefer-standby,
//     and for standby and read-only node 1's attempt is an EventConnect whose Err is a
//     role rejection (role primary, wanted the attrs).
//   - Node 1 read_only=ON, read-write with retriesAllDown=1: Ping fails with a
//     *failover.NoHostAvailableError (not driver.ErrBadConn) in one pass of three
//     attempts, each an EventConnect with a role rejection (standby, read-write), and
//     the error says "skipped: role is standby, wanted read-write" for every host.
//   - Nodes 2 and 3 disabled: prefer-standby takes node 1 as a last resort, within 5 s.
func TestTargetSessionAttrs(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	n1 := c.Node(1).ProxyAddr()

	for _, tc := range []struct {
		attrs string
		want  int
	}{
		{"any", 1}, {"read-write", 1}, {"primary", 1},
		{"standby", 2}, {"read-only", 2}, {"prefer-standby", 2},
	} {
		t.Run(tc.attrs, func(t *testing.T) {
			name := t.Name()
			db, ev := openWithEvents(t, c.DSN("targetSessionAttrs="+tc.attrs+"&readTimeout=2s"))
			db.SetMaxIdleConns(0)
			nodes, errs := topoConnect(ctx, c, db, 10)
			must(t, db.Close())
			var roleRejected []failover.Event
			for _, e := range ev.all() {
				if e.Kind == failover.EventConnect && roleErrOf(e.Err) != nil {
					roleRejected = append(roleRejected, e)
				}
			}
			t.Logf("FIGURE %s: nodes=%v", name, nodes)
			t.Logf("FIGURE %s: attempts_by_node=%v", name, topoAttempts(c, ev.all()))
			t.Logf("FIGURE %s: role_rejected_attempts=%d", name, len(roleRejected))
			for _, err := range errs {
				t.Errorf("new connection: %v", err)
			}
			if nodes[tc.want] != 10 {
				t.Errorf("new connections landed on %v, want all 10 on node %d", nodes, tc.want)
			}
			if tc.want == 1 && len(roleRejected) != 0 {
				t.Errorf("role rejections with node 1 qualifying: %v", roleRejected)
			}
			if tc.attrs == "standby" || tc.attrs == "read-only" {
				var on1 []failover.Event
				for _, e := range roleRejected {
					if e.Host == n1 {
						on1 = append(on1, e)
					}
				}
				if len(on1) == 0 {
					t.Errorf("no EventConnect with a role rejection for node 1; events: %v", ev.all())
				} else if re := roleErrOf(on1[0].Err); re.Role != failover.RolePrimary.String() || re.Wanted != tc.attrs {
					t.Errorf("node 1 rejected as role %v, wanted %q; want primary, %q", re.Role, re.Wanted, tc.attrs)
				}
				for _, e := range roleRejected {
					if e.Host != n1 {
						t.Errorf("a standby rejected by role: %v", e)
					}
				}
			}
		})
	}

	t.Run("read-write-none-writable", func(t *testing.T) {
		const phrase = "skipped: role is standby, wanted read-write"
		name := t.Name()
		must(t, c.Node(1).SetReadOnly(ctx, true))
		defer func() { must(t, c.Node(1).SetReadOnly(ctx, false)) }()
		db, ev := openWithEvents(t, c.DSN("targetSessionAttrs=read-write&retriesAllDown=1&readTimeout=2s"))
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		start := time.Now()
		err := db.PingContext(pctx)
		took := time.Since(start)
		attempts, _ := ev.connects(0)
		t.Logf("ping with no writable host: %v", err)
		t.Logf("FIGURE %s: ping_ms=%d", name, took.Milliseconds())
		t.Logf("FIGURE %s: attempts=%d", name, len(attempts))
		t.Logf("FIGURE %s: phrase_count=%d", name, strings.Count(fmt.Sprint(err), phrase))

		var nh *failover.NoHostAvailableError
		if !errors.As(err, &nh) {
			t.Fatalf("ping with every host read-only: %T %v, want a *failover.NoHostAvailableError", err, err)
		}
		if errors.Is(err, sqldriver.ErrBadConn) {
			t.Errorf("the error matches driver.ErrBadConn: %v", err)
		}
		if len(nh.Hosts) != 3 {
			t.Errorf("the error names %d hosts, want 3: %v", len(nh.Hosts), err)
		}
		for _, h := range nh.Hosts {
			if !strings.Contains(h.Error(), phrase) {
				t.Errorf("host %s (node %d) in the error: %q, want it to say %q", h.Host, c.NodeByAddr(h.Host), h.Error(), phrase)
			}
		}
		if n := strings.Count(err.Error(), phrase); n != 3 {
			t.Errorf("the error says %q %d times, want 3 (one per host): %v", phrase, n, err)
		}
		if len(attempts) != 3 {
			t.Errorf("%d connection attempts, want 3 (one pass)", len(attempts))
		}
		for _, e := range attempts {
			if re := roleErrOf(e.Err); re == nil || re.Role != failover.RoleStandby.String() || re.Wanted != "read-write" {
				t.Errorf("attempt %v: want an Err that is a role rejection (standby, wanted read-write)", e)
			}
		}
		if took > 5*time.Second {
			t.Errorf("the walk took %v, want one quick pass", took)
		}
	})

	t.Run("prefer-standby-last-resort", func(t *testing.T) {
		name := t.Name()
		must(t, c.Node(2).Disable())
		must(t, c.Node(3).Disable())
		defer func() { must(t, c.Node(2).Enable()); must(t, c.Node(3).Enable()) }()
		db, ev := openWithEvents(t, c.DSN("targetSessionAttrs=prefer-standby&readTimeout=2s"))
		db.SetMaxIdleConns(0)
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		start := time.Now()
		node, err := nodeOf(pctx, c, db)
		took := time.Since(start)
		first := len(ev.all())
		nodes, errs := topoConnect(pctx, c, db, 5)
		t.Logf("FIGURE %s: first_connection_ms=%d", name, took.Milliseconds())
		t.Logf("FIGURE %s: first_connection_attempts_by_node=%v", name, topoAttempts(c, ev.all()[:first]))
		t.Logf("FIGURE %s: next_5_nodes=%v", name, nodes)
		t.Logf("FIGURE %s: attempts_by_node=%v", name, topoAttempts(c, ev.all()))
		if err != nil || node != 1 {
			t.Errorf("prefer-standby with both standbys down: node %d, %v; want node 1 as a last resort", node, err)
		}
		if took > 5*time.Second {
			t.Errorf("the last resort took %v, want within 5 s", took)
		}
		for _, err := range errs {
			t.Errorf("next connection: %v", err)
		}
		if nodes[1] != 5 {
			t.Errorf("next 5 connections landed on %v, want node 1", nodes)
		}
	})

	// A steady pool (idle connections reused, none opened) that had to take the primary
	// returns to a standby by the fall-back clocks once one is back.
	t.Run("prefer-standby-returns", func(t *testing.T) {
		must(t, c.Node(2).Disable())
		must(t, c.Node(3).Disable())
		enabled := false
		defer func() {
			if !enabled {
				must(t, c.Node(2).Enable())
				must(t, c.Node(3).Enable())
			}
		}()
		db, ev := openWithEvents(t, c.DSN("targetSessionAttrs=prefer-standby&secondsBeforeRetryMaster=1&queriesBeforeRetryMaster=0&readTimeout=2s"))
		db.SetMaxOpenConns(2)
		pctx, cancel := context.WithTimeout(ctx, 20*time.Second)
		defer cancel()
		if node, err := nodeOf(pctx, c, db); err != nil || node != 1 {
			t.Fatalf("with both standbys down: node %d, %v; want node 1", node, err)
		}
		must(t, c.Node(2).Enable())
		must(t, c.Node(3).Enable())
		enabled = true
		back := time.Now()
		for {
			node, err := nodeOf(pctx, c, db)
			if err != nil {
				t.Fatalf("read after the standbys came back: %v", err)
			}
			if node != 1 {
				t.Logf("FIGURE %s: standby_back_to_reads_on_standby_ms=%d (node %d)", t.Name(), time.Since(back).Milliseconds(), node)
				break
			}
			if pctx.Err() != nil {
				t.Fatalf("reads still on node 1 %v after the standbys came back; events:\n%v", time.Since(back), ev.all())
			}
			time.Sleep(20 * time.Millisecond)
		}
		if n := ev.count(failover.EventFallBack, ""); n != 1 {
			t.Errorf("%d fall-back events, want 1", n)
		}
	})
}
