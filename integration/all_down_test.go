package integration

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// Case 04 (connect-errbadconn-retry-storm): with every host down a walk makes
// retriesAllDown passes over the list with 250 ms between them, bounded per host by
// hostTimeout, and returns one *failover.NoHostAvailableError naming every host and its
// cause. It never leaks driver.ErrBadConn, which would make database/sql repeat the whole
// walk (27 attempts instead of 9).

const (
	allDownRetries     = 3
	allDownHostTimeout = 500 * time.Millisecond
	// allDownRetryPause is the pause between two passes over the host list, as documented
	// for retriesAllDown (the README's option table, packages dsn and failover: "250 ms
	// apart").
	allDownRetryPause = 250 * time.Millisecond
)

// allDownPing pings with a fresh context of d and returns the error, the time it took
// and the connection attempts it made.
func allDownPing(db *sql.DB, ev *eventLog, d time.Duration) (error, time.Duration, []failover.Event) {
	_, mark := ev.connects(0)
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	err := db.PingContext(ctx)
	took := time.Since(start)
	attempts, _ := ev.connects(mark)
	return err, took, attempts
}

// allDownCheckWalk asserts the shape of a full walk over three dead hosts.
func allDownCheckWalk(t *testing.T, c *harness.Cluster, err error, attempts []failover.Event, hostCause func(error) bool, cause string, words []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("ping with every host down returned nil")
	}
	if errors.Is(err, sqldriver.ErrBadConn) {
		t.Errorf("the error matches driver.ErrBadConn (database/sql would repeat the walk): %v", err)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("the error matches context.DeadlineExceeded although the caller's context did not end: %v", err)
	}
	var nh *failover.NoHostAvailableError
	if !errors.As(err, &nh) {
		t.Fatalf("error %T %v, want a *failover.NoHostAvailableError", err, err)
	}
	if nh.Passes != allDownRetries {
		t.Errorf("NoHostAvailableError.Passes=%d, want %d", nh.Passes, allDownRetries)
	}
	if len(nh.Hosts) != 3 {
		t.Fatalf("NoHostAvailableError names %d hosts, want 3: %v", len(nh.Hosts), err)
	}
	for i, h := range nh.Hosts {
		if h.Host != c.Node(i+1).ProxyAddr() {
			t.Errorf("host %d of the error is %q, want node %d's %q", i+1, h.Host, i+1, c.Node(i+1).ProxyAddr())
		}
		if h.Err == nil || !hostCause(h.Err) {
			t.Errorf("host %s: cause %v (skipped %q), want %s", h.Host, h.Err, h.Skipped, cause)
		}
		if !strings.Contains(err.Error(), h.Host) {
			t.Errorf("the error text does not name %s: %v", h.Host, err)
		}
		if h.Err != nil && !allDownSays(h.Err.Error(), words) {
			t.Errorf("host %s: cause text %q says none of %q: the operator cannot tell what happened", h.Host, h.Err.Error(), words)
		}
	}
	perHost := map[int]int{}
	for _, e := range attempts {
		perHost[c.NodeByAddr(e.Host)]++
		if e.Err == nil {
			t.Errorf("attempt on %s succeeded with every host down", e.Host)
		}
	}
	if len(attempts) != allDownRetries*3 {
		t.Errorf("%d connection attempts, want %d passes x 3 hosts = %d", len(attempts), allDownRetries, allDownRetries*3)
	}
	for i := 1; i <= 3; i++ {
		if perHost[i] != allDownRetries {
			t.Errorf("%d attempts on node %d, want %d", perHost[i], i, allDownRetries)
		}
	}
	// The pause between passes: from the last attempt of a pass to the end of the first
	// attempt of the next one, at least 250 ms.
	for k := 3; k < len(attempts); k += 3 {
		if gap := attempts[k].Time.Sub(attempts[k-1].Time); gap < allDownRetryPause {
			t.Errorf("only %v between pass %d and pass %d, want at least %v", gap, k/3, k/3+1, allDownRetryPause)
		}
	}
}

// allDownSays reports whether text contains one of words (case-insensitive).
func allDownSays(text string, words []string) bool {
	text = strings.ToLower(text)
	for _, w := range words {
		if strings.Contains(text, strings.ToLower(w)) {
			return true
		}
	}
	return false
}

func TestAllNodesDown(t *testing.T) {
	type fault struct {
		name      string
		down      func(*harness.Node) error
		back      func(*harness.Node, context.Context) error
		hostCause func(error) bool
		cause     string
		words     []string      // the host's cause text must say one of these
		min, max  time.Duration // bounds of the 30 s-context ping
	}
	quickMin := time.Duration(allDownRetries-1) * allDownRetryPause
	faults := []fault{
		{
			name:      "refused",
			down:      (*harness.Node).Disable,
			back:      func(n *harness.Node, _ context.Context) error { return n.Enable() },
			hostCause: func(err error) bool { return errors.Is(err, syscall.ECONNREFUSED) },
			cause:     "connection refused",
			words:     []string{"connection refused"},
			min:       quickMin, max: quickMin + 1500*time.Millisecond,
		},
		{
			name: "eof-at-greeting",
			down: (*harness.Node).Kill,
			back: (*harness.Node).Restart,
			hostCause: func(err error) bool {
				return commErr(err) && !timeoutErr(err) &&
					!errors.Is(err, syscall.ECONNREFUSED) && !errors.Is(err, sqldriver.ErrBadConn)
			},
			cause: "a communication error at the greeting (EOF), not a timeout, not refused, not driver.ErrBadConn",
			words: []string{"EOF", "closed", "handshake", "greeting", "before it was ready"},
			min:   quickMin, max: quickMin + 1500*time.Millisecond,
		},
		{
			name: "blackhole",
			down: (*harness.Node).Blackhole,
			back: func(n *harness.Node, _ context.Context) error { return n.ClearToxics() },
			// The cause is the engine's host-attempt timeout (an internal type): a user sees a
			// net.Error with Timeout() true that names the bound and hostTimeout, and that
			// does not match context.DeadlineExceeded (the caller's context did not end).
			hostCause: func(err error) bool {
				return timeoutErr(err) && strings.Contains(err.Error(), allDownHostTimeout.String()+" (hostTimeout)") &&
					!errors.Is(err, context.DeadlineExceeded)
			},
			cause: "a net.Error timeout naming 500ms (hostTimeout) that does not match context.DeadlineExceeded",
			words: []string{"hostTimeout"},
			min:   time.Duration(allDownRetries*3)*allDownHostTimeout + quickMin,
			max:   time.Duration(allDownRetries*3)*allDownHostTimeout + quickMin + 1500*time.Millisecond,
		},
	}
	for _, f := range faults {
		t.Run(f.name, func(t *testing.T) {
			name := "TestAllNodesDown/" + f.name
			c := harness.Start(t, 3)
			ctx := ctxT(t, time.Minute)
			db, ev := openWithEvents(t, c.DSN("retriesAllDown=3&hostTimeout=500ms&readTimeout=2s"))

			for i := 1; i <= 3; i++ {
				must(t, f.down(c.Node(i)))
			}

			err, took, attempts := allDownPing(db, ev, 30*time.Second)
			t.Logf("ping with every host down (%v): %v", took, err)
			t.Logf("FIGURE %s: attempts=%d", name, len(attempts))
			t.Logf("FIGURE %s: ping_s=%.3f", name, took.Seconds())
			allDownCheckWalk(t, c, err, attempts, f.hostCause, f.cause, f.words)
			if took < f.min || took > f.max {
				t.Errorf("the walk took %v, want within [%v, %v]", took, f.min, f.max)
			}

			if f.name == "blackhole" {
				err, took, attempts := allDownPing(db, ev, 2*time.Second)
				t.Logf("ping with a 2 s context (%v): %v", took, err)
				t.Logf("FIGURE %s: ctx2s_attempts=%d", name, len(attempts))
				t.Logf("FIGURE %s: ctx2s_ping_s=%.3f", name, took.Seconds())
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("ping with a 2 s context: %v, want context.DeadlineExceeded", err)
				}
				var nh *failover.NoHostAvailableError
				if !errors.As(err, &nh) || !errors.Is(nh.Err, context.DeadlineExceeded) {
					t.Errorf("ping with a 2 s context: %v, want a *failover.NoHostAvailableError whose Err is the deadline", err)
				}
				if took < 2*time.Second || took > 2500*time.Millisecond {
					t.Errorf("ping with a 2 s context returned after %v, want about 2 s", took)
				}
				if n := len(attempts); n < 3 || n > 5 {
					t.Errorf("%d attempts within the 2 s context, want 4 (500 ms each, one 250 ms pause)", n)
				}
			}

			// Node 2 comes back: the next ping walks again (no permanent exclusion) and
			// lands on node 2 within the first pass.
			must(t, f.back(c.Node(2), ctx))
			err, took, attempts = allDownPing(db, ev, 30*time.Second)
			var last failover.Event
			if len(attempts) > 0 {
				last = attempts[len(attempts)-1]
			}
			node, nerr := nodeOf(ctx, c, db)
			t.Logf("FIGURE %s: recovery_attempts=%d", name, len(attempts))
			t.Logf("FIGURE %s: recovery_ping_s=%.3f", name, took.Seconds())
			t.Logf("FIGURE %s: node_after_recovery=%d", name, node)
			if err != nil {
				t.Errorf("ping after node 2 came back: %v", err)
			}
			if len(attempts) != 2 || c.NodeByAddr(last.Host) != 2 || last.Err != nil {
				t.Errorf("recovery attempts %v, want node 1 (failed) then node 2 (ok)", attempts)
			}
			if nerr != nil || node != 2 {
				t.Errorf("statement after node 2 came back: node %d, %v; want node 2", node, nerr)
			}
		})
	}
}
