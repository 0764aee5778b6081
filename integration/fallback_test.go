package integration

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Case 12 (fallback-timer-semantics): the pool returns to the primary only when the
// fall-back clock or counter says so, only at a safe point, never inside a transaction,
// and a failed attempt is invisible to the caller and restarts the clock.

// fallbackTick is the statement period of the scenario.
const fallbackTick = 200 * time.Millisecond

// fallbackRun is one run of the scenario: a fresh cluster and a MaxOpen=1 pool on it.
type fallbackRun struct {
	c   *harness.Cluster
	db  *sql.DB
	ev  *eventLog
	ctx context.Context
	n1  string // node 1's proxy address, as events and errors name it

	t0         time.Time // node 1's proxy disabled
	switchedAt time.Time // the first statement after t0 that ran on node 2 returned
	switchErrs int       // statements that failed while the pool moved (0 or 1)
}

func fallbackStart(t *testing.T, params string) *fallbackRun {
	t.Helper()
	c := harness.Start(t, 3)
	ctx := ctxT(t, 40*time.Second)
	db, ev := openWithEvents(t, c.DSN(params))
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	r := &fallbackRun{c: c, db: db, ev: ev, ctx: ctx, n1: c.Node(1).ProxyAddr()}
	for range 3 {
		if node, err := nodeOf(ctx, c, db); err != nil || node != 1 {
			t.Fatalf("before the fault: statement on node %d, %v; want node 1", node, err)
		}
	}
	return r
}

// failOver disables node 1's proxy (t0) and runs statements until one runs on node 2:
// at most one of them may fail, with a *failover.FailoverError.
func (r *fallbackRun) failOver(t *testing.T) {
	t.Helper()
	must(t, r.c.Node(1).Disable())
	r.t0 = time.Now()
	for {
		node, err := nodeOf(r.ctx, r.c, r.db)
		if err == nil {
			if node != 2 {
				t.Fatalf("first statement after disabling node 1 ran on node %d, want 2", node)
			}
			r.switchedAt = time.Now()
			break
		}
		r.switchErrs++
		var fe *failover.FailoverError
		if !errors.As(err, &fe) || r.switchErrs > 1 {
			t.Fatalf("statement %d after disabling node 1: %v (want at most one *failover.FailoverError)", r.switchErrs, err)
		}
	}
	if sw := r.ev.of(failover.EventSwitch, "", r.t0); len(sw) != 1 || r.c.NodeByAddr(sw[0].Host) != 2 {
		t.Fatalf("switch events after t0: %v, want one to node 2", sw)
	}
}

// at returns how long after t0 now is.
func (r *fallbackRun) at() time.Duration { return time.Since(r.t0) }

// sleepUntil sleeps until t0+d (no-op if that has passed).
func (r *fallbackRun) sleepUntil(d time.Duration) {
	if w := time.Until(r.t0.Add(d)); w > 0 {
		time.Sleep(w)
	}
}

// fallbackSample is one statement of the loop.
type fallbackSample struct {
	at   time.Duration // since t0, when it returned
	node int
	err  error
}

func fallbackSecs(d time.Duration) float64 { return d.Seconds() }

func TestFallBackTimer(t *testing.T) {
	const params = "secondsBeforeRetryMaster=2&queriesBeforeRetryMaster=0&failOverReadOnly=false&readTimeout=2s&hostTimeout=1s"

	// (i) The primary is back at t0+0.5s, but the pool stays on node 2 until the 2 s
	// timer is due, without a single attempt on node 1, then falls back at the first
	// statement after it.
	t.Run("primary-back-early", func(t *testing.T) {
		r := fallbackStart(t, params)
		n1 := r.c.Node(1)
		r.failOver(t)

		var samples []fallbackSample
		var enabledAt time.Time
		var connsAtEnable, connsLastOn2 int64
		firstOn1 := time.Duration(-1)
		on1 := 0
		for k := 1; r.at() < 5*time.Second && on1 < 3; k++ {
			if enabledAt.IsZero() && time.Duration(k)*fallbackTick > 500*time.Millisecond {
				r.sleepUntil(500 * time.Millisecond)
				must(t, n1.Enable())
				enabledAt = time.Now()
				var err error
				connsAtEnable, err = n1.Connections(r.ctx)
				must(t, err)
				connsLastOn2 = connsAtEnable
			}
			r.sleepUntil(time.Duration(k) * fallbackTick)
			node, err := nodeOf(r.ctx, r.c, r.db)
			s := fallbackSample{at: r.at(), node: node, err: err}
			samples = append(samples, s)
			switch {
			case err != nil:
			case node == 1:
				on1++
				if firstOn1 < 0 {
					firstOn1 = s.at
				}
			case node == 2 && firstOn1 < 0 && !enabledAt.IsZero():
				c, err := n1.Connections(r.ctx)
				must(t, err)
				connsLastOn2 = c
			}
		}

		fallbacks := r.ev.of(failover.EventFallBack, "", r.t0)
		var attemptsBefore int
		for _, e := range r.ev.of(failover.EventConnect, r.n1, r.switchedAt) {
			if e.Time.Sub(r.t0) < 2*time.Second {
				attemptsBefore++
			}
		}
		t.Logf("FIGURE TestFallBackTimer/primary-back-early: switch_errors=%d", r.switchErrs)
		t.Logf("FIGURE TestFallBackTimer/primary-back-early: switch_s=%.3f", fallbackSecs(r.switchedAt.Sub(r.t0)))
		t.Logf("FIGURE TestFallBackTimer/primary-back-early: first_node1_statement_s=%.3f", fallbackSecs(firstOn1))
		t.Logf("FIGURE TestFallBackTimer/primary-back-early: node1_attempts_before_2s=%d", attemptsBefore)
		t.Logf("FIGURE TestFallBackTimer/primary-back-early: node1_connections_delta_while_on_node2=%d", connsLastOn2-connsAtEnable)
		t.Logf("FIGURE TestFallBackTimer/primary-back-early: fallback_events=%d", len(fallbacks))

		for _, s := range samples {
			if s.err != nil {
				t.Errorf("statement at %.3fs failed: %v", fallbackSecs(s.at), s.err)
			} else if firstOn1 < 0 || s.at < firstOn1 {
				if s.node != 2 {
					t.Errorf("statement at %.3fs ran on node %d before the fall-back, want 2", fallbackSecs(s.at), s.node)
				}
			} else if s.node != 1 {
				t.Errorf("statement at %.3fs ran on node %d after the fall-back, want 1", fallbackSecs(s.at), s.node)
			}
		}
		if firstOn1 < 2*time.Second || firstOn1 > 3*time.Second {
			t.Errorf("first statement on node 1 at %.3fs after t0, want within [2s, 3s]", fallbackSecs(firstOn1))
		}
		if attemptsBefore != 0 {
			t.Errorf("node 1 got %d connection attempts between the switch and t0+2s, want 0", attemptsBefore)
		}
		if connsLastOn2 != connsAtEnable {
			t.Errorf("node 1's Connections counter went from %d to %d while the pool stayed on node 2", connsAtEnable, connsLastOn2)
		}
		if len(fallbacks) != 1 || fallbacks[0].Host != r.n1 {
			t.Errorf("fall-back events: %v, want one to node 1", fallbacks)
		}
		if f := r.ev.of(failover.EventFallBackFailed, "", r.t0); len(f) != 0 {
			t.Errorf("fall-back-failed events: %v, want none", f)
		}
	})

	// (ii) The primary stays down until t0+5s: every due attempt fails silently, the
	// clock restarts, so node 1 sees an attempt about every 2 s, not every statement;
	// once it is back the pool returns at the next due point.
	t.Run("primary-still-down", func(t *testing.T) {
		r := fallbackStart(t, params)
		n1 := r.c.Node(1)
		r.failOver(t)

		var samples []fallbackSample
		var enabledAt time.Time
		firstOn1 := time.Duration(-1)
		on1 := 0
		for k := 1; r.at() < 9*time.Second && on1 < 2; k++ {
			if enabledAt.IsZero() && time.Duration(k)*fallbackTick > 5*time.Second {
				r.sleepUntil(5 * time.Second)
				must(t, n1.Enable())
				enabledAt = time.Now()
			}
			r.sleepUntil(time.Duration(k) * fallbackTick)
			node, err := nodeOf(r.ctx, r.c, r.db)
			s := fallbackSample{at: r.at(), node: node, err: err}
			samples = append(samples, s)
			if err == nil && node == 1 {
				on1++
				if firstOn1 < 0 {
					firstOn1 = s.at
				}
			}
		}
		if enabledAt.IsZero() {
			must(t, n1.Enable())
			enabledAt = time.Now()
		}

		var attempts []failover.Event
		var okBeforeEnable int
		for _, e := range r.ev.of(failover.EventConnect, r.n1, r.switchedAt) {
			if e.Time.Before(enabledAt) {
				attempts = append(attempts, e)
				if e.Err == nil {
					okBeforeEnable++
				}
			}
		}
		failedFB := r.ev.of(failover.EventFallBackFailed, "", r.t0)
		fallbacks := r.ev.of(failover.EventFallBack, "", r.t0)
		statementsWhileDown := 0
		for _, s := range samples {
			if s.at < enabledAt.Sub(r.t0) {
				statementsWhileDown++
			}
		}
		t.Logf("FIGURE TestFallBackTimer/primary-still-down: switch_errors=%d", r.switchErrs)
		t.Logf("FIGURE TestFallBackTimer/primary-still-down: statements_while_node1_down=%d", statementsWhileDown)
		t.Logf("FIGURE TestFallBackTimer/primary-still-down: node1_attempts_while_down=%d", len(attempts))
		for k, e := range attempts {
			t.Logf("FIGURE TestFallBackTimer/primary-still-down: node1_attempt%d_s=%.3f", k+1, fallbackSecs(e.Time.Sub(r.t0)))
		}
		t.Logf("FIGURE TestFallBackTimer/primary-still-down: fallback_failed_events=%d", len(failedFB))
		t.Logf("FIGURE TestFallBackTimer/primary-still-down: first_node1_statement_s=%.3f", fallbackSecs(firstOn1))

		for _, s := range samples {
			if s.err != nil {
				t.Errorf("statement at %.3fs failed: %v (a failed fall-back must be invisible)", fallbackSecs(s.at), s.err)
			} else if (firstOn1 < 0 || s.at < firstOn1) && s.node != 2 {
				t.Errorf("statement at %.3fs ran on node %d before the fall-back, want 2", fallbackSecs(s.at), s.node)
			} else if firstOn1 >= 0 && s.at >= firstOn1 && s.node != 1 {
				t.Errorf("statement at %.3fs ran on node %d after the fall-back, want 1", fallbackSecs(s.at), s.node)
			}
		}
		if n := len(attempts); n < 1 || n > 3 {
			t.Errorf("node 1 got %d connection attempts in the %d statements while it was down, want 1..3 (about one per 2 s)", n, statementsWhileDown)
		}
		if okBeforeEnable != 0 {
			t.Errorf("%d attempts on the disabled node 1 succeeded", okBeforeEnable)
		}
		for k, e := range attempts {
			if d := e.Time.Sub(r.t0); k == 0 && d < 2*time.Second {
				t.Errorf("first attempt on node 1 at %.3fs, before the 2 s timer", fallbackSecs(d))
			}
			if k > 0 {
				if gap := e.Time.Sub(attempts[k-1].Time); gap < 1900*time.Millisecond {
					t.Errorf("attempts %d and %d on node 1 only %v apart, want about 2 s (the clock restarts after a failed attempt)", k, k+1, gap)
				}
			}
		}
		if len(failedFB) != len(attempts) {
			t.Errorf("%d fall-back-failed events for %d attempts", len(failedFB), len(attempts))
		}
		if firstOn1 < 0 {
			t.Errorf("the pool never fell back to node 1 after it came back at t0+5s")
		} else if firstOn1 > 8*time.Second {
			t.Errorf("fell back at %.3fs, want by about t0+7s", fallbackSecs(firstOn1))
		}
		if len(fallbacks) != 1 {
			t.Errorf("fall-back events: %v, want one", fallbacks)
		}
	})

	// (iii) A transaction open on node 2 across the 2 s mark stays there and commits
	// there; the statement after Commit falls back.
	t.Run("tx-across-mark", func(t *testing.T) {
		r := fallbackStart(t, params)
		n1 := r.c.Node(1)
		r.failOver(t)
		must(t, n1.Enable())

		for k := 1; k <= 4; k++ { // autocommit statements until t0+0.8s
			r.sleepUntil(time.Duration(k) * fallbackTick)
			if node, err := nodeOf(r.ctx, r.c, r.db); err != nil || node != 2 {
				t.Fatalf("statement at %.3fs: node %d, %v; want node 2", fallbackSecs(r.at()), node, err)
			}
		}
		r.sleepUntil(time.Second)
		tx, err := r.db.BeginTx(r.ctx, nil)
		must(t, err)
		beganAt := r.at()
		var connID int64 = -1
		var txNodes []int
		var txErr error
		for k := 1; r.at() < 3*time.Second; k++ {
			r.sleepUntil(time.Second + time.Duration(k)*fallbackTick)
			var port int
			var id int64
			if err := tx.QueryRowContext(r.ctx, "SELECT @@port, CONNECTION_ID()").Scan(&port, &id); err != nil {
				txErr = err
				break
			}
			txNodes = append(txNodes, r.c.NodeByPort(port))
			if connID >= 0 && id != connID {
				t.Errorf("transaction statement %d ran in session %d, the transaction began in %d", k, id, connID)
			}
			connID = id
		}
		lastTx := r.at()
		commitErr := tx.Commit()
		committedAt := r.at()
		attemptsInTx := len(r.ev.of(failover.EventConnect, r.n1, r.switchedAt))
		after, afterErr := nodeOf(r.ctx, r.c, r.db)
		fallbacks := r.ev.of(failover.EventFallBack, "", r.t0)

		t.Logf("FIGURE TestFallBackTimer/tx-across-mark: tx_began_s=%.3f", fallbackSecs(beganAt))
		t.Logf("FIGURE TestFallBackTimer/tx-across-mark: tx_last_statement_s=%.3f", fallbackSecs(lastTx))
		t.Logf("FIGURE TestFallBackTimer/tx-across-mark: tx_statements=%d", len(txNodes))
		t.Logf("FIGURE TestFallBackTimer/tx-across-mark: commit_s=%.3f", fallbackSecs(committedAt))
		t.Logf("FIGURE TestFallBackTimer/tx-across-mark: node1_attempts_before_commit=%d", attemptsInTx)
		t.Logf("FIGURE TestFallBackTimer/tx-across-mark: node_after_commit=%d", after)

		if txErr != nil {
			t.Errorf("statement in the transaction failed: %v", txErr)
		}
		for k, n := range txNodes {
			if n != 2 {
				t.Errorf("transaction statement %d ran on node %d, want 2", k+1, n)
			}
		}
		if lastTx < 2500*time.Millisecond {
			t.Errorf("the transaction did not stay open across the 2 s mark (last statement at %.3fs)", fallbackSecs(lastTx))
		}
		if commitErr != nil {
			t.Errorf("Commit on node 2: %v", commitErr)
		}
		if attemptsInTx != 0 {
			t.Errorf("%d attempts on node 1 while the transaction was open", attemptsInTx)
		}
		if afterErr != nil || after != 1 {
			t.Errorf("statement after Commit: node %d, %v; want node 1 (fall-back due since t0+2s)", after, afterErr)
		}
		if len(fallbacks) != 1 || fallbacks[0].Time.Sub(r.t0) < committedAt {
			t.Errorf("fall-back events %v, want one after Commit (at %.3fs)", fallbacks, fallbackSecs(committedAt))
		}
	})

	// (iv) Count trigger: queriesBeforeRetryMaster=3 with the timer off. Statements 1-3
	// after the failover run on node 2, the 4th on node 1.
	t.Run("query-count", func(t *testing.T) {
		r := fallbackStart(t, "secondsBeforeRetryMaster=0&queriesBeforeRetryMaster=3&failOverReadOnly=false&readTimeout=2s&hostTimeout=1s")
		n1 := r.c.Node(1)
		r.failOver(t)
		must(t, n1.Enable())
		// The statement that failOver saw succeed on node 2 is statement 1, whether or
		// not one before it failed: a failed one ran nowhere and does not count. (This
		// used to skip statement 1 when one had failed, which depends on whether the
		// liveness check saw the proxy's close first: an off-by-one that a CI run hit.)
		nodes := []int{2}
		attempts1 := -1
		for k := 1; len(nodes) < 6; k++ {
			r.sleepUntil(time.Duration(k) * fallbackTick)
			if len(nodes) == 3 {
				attempts1 = len(r.ev.of(failover.EventConnect, r.n1, r.switchedAt))
			}
			node, err := nodeOf(r.ctx, r.c, r.db)
			if err != nil {
				t.Fatalf("statement %d after the failover: %v", len(nodes)+1, err)
			}
			nodes = append(nodes, node)
		}
		t.Logf("FIGURE TestFallBackTimer/query-count: switch_errors=%d", r.switchErrs)
		t.Logf("FIGURE TestFallBackTimer/query-count: nodes_of_statements_1_to_6=%v", nodes)
		t.Logf("FIGURE TestFallBackTimer/query-count: node1_attempts_before_statement4=%d", attempts1)
		want := []int{2, 2, 2, 1, 1, 1}
		for k := range want {
			if nodes[k] != want[k] {
				t.Errorf("statements 1-6 after the failover ran on nodes %v, want %v", nodes, want)
				break
			}
		}
		if attempts1 != 0 {
			t.Errorf("node 1 got %d connection attempts during statements 1-3, want 0", attempts1)
		}
	})
}
