package integration

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	_ "github.com/mysqlfailover/mysqlfailover" // registers "mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// freezeCall is one timed SELECT @@port.
type freezeCall struct {
	node int
	took time.Duration
	err  error
}

// freezeSelect runs SELECT @@port on db with a context of ctxTimeout (0: the test's
// context only) and times it.
func freezeSelect(ctx context.Context, c *harness.Cluster, db *sql.DB, ctxTimeout time.Duration) freezeCall {
	if ctxTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, ctxTimeout)
		defer cancel()
	}
	start := time.Now()
	node, err := nodeOf(ctx, c, db)
	return freezeCall{node: node, took: time.Since(start), err: err}
}

// TestFreezePrimary (case 06): the primary is frozen (SIGSTOP): its sockets stay open and
// nothing answers, no FIN, no RST.
//
//   - readTimeout: with readTimeout=1s&hostTimeout=1s, every call returns within
//     readTimeout + hostTimeout + 1 s, the ones caught on node 1 with a
//     *failover.FailoverError; afterwards every statement runs on node 2, promptly.
//   - ctx: no readTimeout, every call carries a 2 s context (hostTimeout=1s): the call
//     caught on node 1 returns the context error by the deadline (not a host failure), the
//     connection is not reused on the frozen node, and the next call's connect attempt to
//     node 1 is cut by hostTimeout so that it lands on node 2.
//   - ctx-default-hostTimeout: the same with the default hostTimeout (5 s), longer than the
//     caller's context: every call is bounded by its context; what happens next is
//     reported (the connect attempt to the frozen primary never ends before the caller's
//     context, so the pool cannot leave it).
func TestFreezePrimary(t *testing.T) {
	t.Run("readTimeout", func(t *testing.T) {
		const (
			readTimeout = time.Second
			hostTimeout = time.Second
			margin      = time.Second
			concurrent  = 4
		)
		bound := readTimeout + hostTimeout + margin
		c := harness.Start(t, 2)
		ctx := ctxT(t, time.Minute)
		name := t.Name()
		db := openDB(t, "mysqlfailover", c.DSN("readTimeout=1s&hostTimeout=1s&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"))
		db.SetMaxOpenConns(concurrent)
		db.SetMaxIdleConns(concurrent)
		warmPool(t, ctx, c, db, concurrent)

		must(t, c.Node(1).Freeze())
		defer func() { must(t, c.Node(1).Thaw()) }()
		frozen := time.Now()

		// A burst: every pooled connection is on the frozen node.
		results := make([][]freezeCall, concurrent)
		var wg sync.WaitGroup
		for g := range concurrent {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for range 3 {
					results[g] = append(results[g], freezeSelect(ctx, c, db, 0))
				}
			}()
		}
		wg.Wait()
		burst := time.Since(frozen)

		var maxCall time.Duration
		failovers, okN2 := 0, 0
		for _, rs := range results {
			for _, r := range rs {
				maxCall = max(maxCall, r.took)
				if r.took > bound {
					t.Errorf("call took %v, want at most %v", r.took, bound)
				}
				var fe *failover.FailoverError
				switch {
				case r.err == nil && r.node == 2:
					okN2++
				case r.err == nil:
					t.Errorf("call ran on node %d while node 1 is frozen, want 2", r.node)
				case errors.As(r.err, &fe):
					failovers++
					if f, cur := c.NodeByAddr(fe.Failed), c.NodeByAddr(fe.Current); f != 1 || cur != 2 {
						t.Errorf("FailoverError: failed node %d, current node %d, want 1 and 2: %v", f, cur, fe)
					}
				default:
					t.Errorf("call error %T is not a *failover.FailoverError: %v", r.err, r.err)
				}
			}
		}
		if failovers > concurrent {
			t.Errorf("%d calls failed, want at most %d (one per connection caught on node 1)", failovers, concurrent)
		}

		// Afterwards: on node 2, promptly.
		var maxAfter time.Duration
		for range 10 {
			r := freezeSelect(ctx, c, db, 0)
			maxAfter = max(maxAfter, r.took)
			if r.err != nil || r.node != 2 {
				t.Errorf("statement after the switch: node %d, %v; want node 2", r.node, r.err)
			}
		}
		if maxAfter > 500*time.Millisecond {
			t.Errorf("a statement on node 2 took %v after the switch", maxAfter)
		}

		t.Logf("FIGURE %s: bound=%v", name, bound)
		t.Logf("FIGURE %s: max_call_during_freeze=%v", name, maxCall.Round(time.Millisecond))
		t.Logf("FIGURE %s: burst_calls=%d", name, concurrent*3)
		t.Logf("FIGURE %s: burst_failover_errors=%d", name, failovers)
		t.Logf("FIGURE %s: burst_ok_node2=%d", name, okN2)
		t.Logf("FIGURE %s: burst_duration=%v", name, burst.Round(time.Millisecond))
		t.Logf("FIGURE %s: max_call_after_switch=%v", name, maxAfter.Round(time.Microsecond))
	})

	// freezeCtxRun: MaxOpen=1, the connection on node 1, node 1 frozen, then calls with a
	// 2 s context each until one succeeds on node 2 or maxCalls are made.
	freezeCtxRun := func(t *testing.T, params string, maxCalls int) (calls []freezeCall) {
		const (
			ctxTimeout = 2 * time.Second
			margin     = time.Second
		)
		c := harness.Start(t, 2)
		ctx := ctxT(t, time.Minute)
		name := t.Name()
		db := openDB(t, "mysqlfailover", c.DSN(params))
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		warmPool(t, ctx, c, db, 1)
		sessionsBefore, err := c.Node(1).AppSessions(ctx)
		must(t, err)

		must(t, c.Node(1).Freeze())
		frozen := time.Now()
		var maxCall time.Duration
		firstOK := -1
		for k := 0; k < maxCalls; k++ {
			r := freezeSelect(ctx, c, db, ctxTimeout)
			calls = append(calls, r)
			maxCall = max(maxCall, r.took)
			t.Logf("call %d: %v, node %d, err %v", k+1, r.took.Round(time.Millisecond), r.node, r.err)
			if r.took > ctxTimeout+margin {
				t.Errorf("call %d took %v, want at most the context's %v + %v", k+1, r.took, ctxTimeout, margin)
			}
			var fe *failover.FailoverError
			switch {
			case r.err == nil:
				if r.node != 2 {
					t.Errorf("call %d ran on node %d while node 1 is frozen, want 2", k+1, r.node)
				}
			case errors.Is(r.err, context.DeadlineExceeded):
				if errors.As(r.err, &fe) {
					t.Errorf("call %d: the caller's deadline is reported as a host failure: %v", k+1, r.err)
				}
			default:
				t.Errorf("call %d: error is neither the context's nor nil: %T %v", k+1, r.err, r.err)
			}
			if r.err == nil {
				firstOK = k + 1
				break
			}
		}
		if len(calls) > 0 && calls[0].err == nil {
			t.Errorf("the first call succeeded on node %d: it should have been caught on the frozen node 1", calls[0].node)
		}
		elapsed := time.Since(frozen)
		must(t, c.Node(1).Thaw())
		// Sessions the pool still holds on node 1: none, the cancelled connection was
		// closed (the server sees the close once thawed) and not replaced there.
		var sessionsAfter int64
		for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			sessionsAfter, err = c.Node(1).AppSessions(ctx)
			must(t, err)
			if sessionsAfter == 0 || time.Now().After(deadline) {
				break
			}
		}
		if sessionsAfter != 0 {
			t.Errorf("node 1 still has %d app sessions after the thaw, want 0", sessionsAfter)
		}
		// Close node 1's idle admin connections now, while it runs: an admin connection
		// used after a thaw is sometimes reset (RST) when the cluster kills the server at
		// the end, and the harness's Close then fails on its COM_QUIT ("bad connection").
		c.Node(1).Admin().SetMaxIdleConns(0)
		c.Node(1).Admin().SetMaxIdleConns(2)

		t.Logf("FIGURE %s: max_call=%v", name, maxCall.Round(time.Millisecond))
		t.Logf("FIGURE %s: calls=%d", name, len(calls))
		t.Logf("FIGURE %s: first_ok_call=%d", name, firstOK)
		t.Logf("FIGURE %s: freeze_to_end=%v", name, elapsed.Round(time.Millisecond))
		t.Logf("FIGURE %s: node1_app_sessions_before=%d", name, sessionsBefore)
		t.Logf("FIGURE %s: node1_app_sessions_after_thaw=%d", name, sessionsAfter)
		return calls
	}

	t.Run("ctx", func(t *testing.T) {
		calls := freezeCtxRun(t, "hostTimeout=1s&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0", 4)
		// hostTimeout (1 s) is shorter than the caller's context (2 s): the call after the
		// cancelled one must not be stuck on node 1 (the cancelled connection is not
		// reused, and the connect attempt to the frozen node is cut), so it lands on node 2.
		if len(calls) < 2 || calls[1].err != nil || calls[1].node != 2 {
			t.Errorf("second call: want a success on node 2, got %+v", calls[min(1, len(calls)-1)])
		}
		if len(calls) >= 2 && calls[1].took > 1900*time.Millisecond {
			t.Errorf("second call took %v: the connect attempt to the frozen node was not cut at hostTimeout=1s", calls[1].took)
		}
	})

	t.Run("ctx-default-hostTimeout", func(t *testing.T) {
		// Report only: with hostTimeout (5 s) longer than the caller's context (2 s), each
		// call ends with its context (asserted: bounded), and whether the pool ever leaves
		// the frozen primary is reported.
		freezeCtxRun(t, "secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0", 3)
	})
}
