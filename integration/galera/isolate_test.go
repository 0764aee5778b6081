package galera

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// galeraDefaults are Galera's own timeouts (the harness's tuning shortens them).
const galeraDefaults = "evs.suspect_timeout=PT5S;evs.inactive_timeout=PT15S;evs.keepalive_period=PT1S;" +
	"evs.inactive_check_period=PT0.5S;evs.join_retrans_period=PT1S;evs.install_timeout=PT7.5S;" +
	"gmcast.peer_timeout=PT3S;gmcast.time_wait=PT5S;pc.announce_timeout=PT3S"

// TestGaleraIsolateUnderWrites: the writer node isolated from the others (failovertest's
// and the harness's Isolate) under autocommit INSERTs from 6 goroutines through one pool,
// each on a deadline of its own, as a service following failovertest's Galera example
// writes. Until the node notices it is cut off (Galera's evs.suspect_timeout and the view
// change after it), its commits wait for the group; then it fails them with 1180 "Not
// connected to Primary Component", a commit the others may have received and committed.
// Checked on the rows, once the cluster is whole again:
//
//   - no raw 1180 reaches the caller: it comes inside a *failover.FailoverError with
//     MaybeExecuted, the pool having left the node;
//   - every failed write's SafeToRetry advice is right: a write whose row is there was
//     not advised to run again (before: a raw 1180 while the pool stayed on the node);
//   - every acknowledged write is there once, and once the node says non-Primary no
//     write fails and none goes to it.
//
// Run with the harness's timeouts (evs.suspect_timeout=PT2S: failovertest's), readTimeout
// and deadlines of 2 s (the scenario a user reported), and with Galera's own (PT5S) and
// deadlines long enough to see the whole wait. The figures: how long the node took to
// notice, the longest write, the failed writes by kind, and how many of those committed.
func TestGaleraIsolateUnderWrites(t *testing.T) {
	for _, tc := range []struct {
		name     string
		opts     []harness.Option
		deadline time.Duration
		params   string
	}{
		{"fixture timeouts", nil, 2 * time.Second, "readTimeout=2s"},
		{"Galera's default timeouts", []harness.Option{harness.WithGaleraOptions(galeraDefaults)}, 15 * time.Second, "readTimeout=15s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := harness.Start(t, 3, append(tc.opts, harness.WithGalera())...)
			ctx := ctxT(t, 3*time.Minute)
			isolateUnderWrites(t, ctx, c, tc.params, tc.deadline)
		})
	}
}

// write is one autocommit INSERT of the load: when it was sent and came back, the node
// that took it (0: none) and its error.
type write struct {
	id         int64
	sent, done time.Time
	node       int
	err        error
}

func isolateUnderWrites(t *testing.T, ctx context.Context, c *harness.Cluster, params string, deadline time.Duration) {
	fig := func(k string, v any) { t.Logf("FIGURE %s: %s=%v", t.Name(), k, v) }
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.iso (id BIGINT PRIMARY KEY)"))
	p := open(t, c, params)
	var (
		mu     sync.Mutex
		writes []write
		nextID int64
		stop   = make(chan struct{})
		once   sync.Once
		wg     sync.WaitGroup
	)
	halt := func() { once.Do(func() { close(stop) }); wg.Wait() }
	for range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				nextID++
				w := write{id: nextID, sent: time.Now()}
				mu.Unlock()
				wctx, cancel := context.WithTimeout(ctx, deadline)
				var port int
				w.err = p.db.QueryRowContext(wctx, fmt.Sprintf("INSERT INTO app.iso (id) VALUES (%d) RETURNING @@port", w.id)).Scan(&port)
				cancel()
				w.done = time.Now()
				if w.err == nil {
					w.node = c.NodeByPort(port)
				}
				mu.Lock()
				writes = append(writes, w)
				mu.Unlock()
				time.Sleep(2 * time.Millisecond)
			}
		}()
	}
	defer halt()
	acked := func() int {
		mu.Lock()
		defer mu.Unlock()
		n := 0
		for _, w := range writes {
			if w.err == nil {
				n++
			}
		}
		return n
	}
	if !waitFor(10*time.Second, func() bool { return acked() > 50 }) || p.active(c) != 1 {
		t.Fatalf("the load does not run on node 1 (%d writes, pool on node %d)", acked(), p.active(c))
	}

	// Isolate node 1, and read when it says non-Primary (its own view, polled).
	isolated := time.Now()
	noticed := make(chan time.Time, 1)
	go func() {
		for {
			s, err := c.Node(1).GaleraStatus(ctx)
			if err == nil && s.ClusterStatus != "Primary" || ctx.Err() != nil {
				noticed <- time.Now()
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	must(t, c.Node(1).Isolate(ctx))
	nonPrimary := <-noticed
	var left time.Time
	waitFor(deadline+10*time.Second, func() bool {
		if p.active(c) != 1 {
			left = time.Now()
			return true
		}
		return false
	})
	// Writes go on for a while on the others; then every write in flight ends.
	time.Sleep(1500 * time.Millisecond)
	halt()
	must(t, c.Node(1).Unisolate(ctx))
	must(t, c.WaitSynced(ctx))

	// The rows, on node 2 (the cluster is whole: every node has the same).
	present := map[int64]bool{}
	rows, err := c.Node(2).Admin().QueryContext(ctx, "SELECT id FROM app.iso")
	must(t, err)
	for rows.Next() {
		var id int64
		must(t, rows.Scan(&id))
		present[id] = true
	}
	must(t, rows.Err())
	rows.Close()

	var failed, raw1180, wrapped1180, timedOut, other, committedAnyway, committed1180, advisedRetry int
	var longest time.Duration
	kinds := map[string]int{}
	for _, w := range writes {
		if d := w.done.Sub(w.sent); w.sent.Before(nonPrimary) && d > longest {
			longest = d
		}
		if w.err == nil {
			if !present[w.id] {
				t.Errorf("write %d acknowledged by node %d, not in the table", w.id, w.node)
			}
			if w.node == 1 && w.sent.After(nonPrimary.Add(500*time.Millisecond)) {
				t.Errorf("write %d sent %v after node 1 said non-Primary went to node 1", w.id, w.sent.Sub(nonPrimary))
			}
			continue
		}
		failed++
		var me *mysql.MySQLError
		var fe *failover.FailoverError
		adv := mysqlfailover.SafeToRetry(w.err)
		is1180 := errors.As(w.err, &me) && me.Number == 1180
		switch {
		case is1180 && !errors.As(w.err, &fe):
			raw1180++
			t.Errorf("write %d: a raw 1180 reached the caller: %v", w.id, w.err)
		case is1180:
			wrapped1180++
			if !fe.MaybeExecuted || adv != mysqlfailover.RetryNothing {
				t.Errorf("write %d: %v (MaybeExecuted %v, SafeToRetry %v), want one that may have run: the others may have committed it", w.id, w.err, fe.MaybeExecuted, adv)
			}
		case errors.Is(w.err, context.DeadlineExceeded) || errors.As(w.err, &fe) && fe.MaybeExecuted:
			timedOut++
		default:
			other++
		}
		kinds[kindOf(w.err)]++
		if present[w.id] {
			committedAnyway++
			if is1180 {
				committed1180++
			}
			if adv != mysqlfailover.RetryNothing {
				t.Errorf("write %d committed, yet SafeToRetry says %v: %v", w.id, adv, w.err)
			}
		}
		if adv != mysqlfailover.RetryNothing {
			advisedRetry++
		}
		if w.sent.After(nonPrimary.Add(500 * time.Millisecond)) {
			t.Errorf("write %d sent %v after node 1 said non-Primary failed: %v", w.id, w.sent.Sub(nonPrimary), w.err)
		}
	}
	var after int
	for _, w := range writes {
		if w.err == nil && w.sent.After(nonPrimary) {
			after++
		}
	}
	if after == 0 {
		t.Errorf("no write succeeded after node 1 left the Primary component")
	}
	if left.IsZero() {
		t.Errorf("the pool never left node 1")
	}
	fig("writes", len(writes))
	fig("writes_failed", failed)
	fig("failed_by_kind", sortedKinds(kinds))
	fig("raw_1180", raw1180)
	fig("1180_in_failover_error", wrapped1180)
	fig("timed_out_or_may_have_run", timedOut)
	fig("other_failures", other)
	fig("failed_writes_committed_anyway", committedAnyway)
	fig("1180_writes_committed_anyway", fmt.Sprintf("%d of %d", committed1180, raw1180+wrapped1180))
	fig("failed_writes_advised_retry", advisedRetry)
	fig("isolation_to_nonprimary", nonPrimary.Sub(isolated).Round(time.Millisecond))
	fig("longest_write_before_nonprimary", longest.Round(time.Millisecond))
	if !left.IsZero() {
		fig("isolation_to_pool_left_node1", left.Sub(isolated).Round(time.Millisecond))
	}
	fig("writes_after_nonprimary", after)
}

// kindOf names a failed write's error for the figures.
func kindOf(err error) string {
	var me *mysql.MySQLError
	var fe *failover.FailoverError
	s := ""
	switch {
	case errors.As(err, &fe):
		s = fmt.Sprintf("FailoverError(maybe=%v)", fe.MaybeExecuted)
	case errors.Is(err, context.DeadlineExceeded):
		s = "deadline"
	}
	if errors.As(err, &me) {
		s += fmt.Sprintf(" %d", me.Number)
	}
	if errors.Is(err, failover.ErrCommitOutcomeUnknown) {
		s += " outcome-unknown"
	}
	if s == "" {
		s = err.Error()
	}
	return s + " -> " + mysqlfailover.SafeToRetry(err).String()
}

func sortedKinds(m map[string]int) []string {
	var out []string
	for k, v := range m {
		out = append(out, fmt.Sprintf("%s: %d", k, v))
	}
	sort.Strings(out)
	return out
}
