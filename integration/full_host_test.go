package integration

import (
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// A full host is not a down host (case 10 d). Other clients
// (app-user sessions: MariaDB keeps one extra connection for SUPER, so root fillers would
// not fill it) take every connection node 1 allows, and a new connection of the pool gets
// 1040 "Too many connections". That never moves the pool's active host and never disturbs
// the connections already working there: a burst shorter than hostTimeout is invisible to
// the caller (the new connection waits and lands on node 1), a lasting one gives the
// caller a clear error naming node 1 and carrying the 1040, never driver.ErrBadConn. The
// pool stays on node 1 throughout, and writers on already-open connections write through
// the whole fault without an error.

// fullHostParams: hostTimeout bounds how long a new connection may wait for the full host.
const fullHostParams = "hostTimeout=2s&readTimeout=5s&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"

// fillers are app-user sessions on node 1 that take its free connections.
type fillers struct {
	conns []sqldriver.Conn
}

// fillNode lowers node n's max_connections to a little above what is connected now and
// opens app-user sessions straight to the server until it answers 1040. The clean-up
// releases them and restores max_connections.
func fillNode(t *testing.T, ctx context.Context, c *harness.Cluster, n *harness.Node) *fillers {
	t.Helper()
	connected := statusOf(ctx, t, n, "Threads_connected")["Threads_connected"]
	must(t, n.Exec(ctx, "SET GLOBAL max_connections = ?", connected+3))
	f := &fillers{}
	t.Cleanup(func() {
		f.release()
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Exec(ctx, "SET GLOBAL max_connections = 500")
	})
	cfg, err := mysql.ParseDSN(c.DirectDSN(n.Index(), ""))
	must(t, err)
	cfg.Timeout = 2 * time.Second
	connector, err := mysql.NewConnector(cfg)
	must(t, err)
	for len(f.conns) < 50 {
		cctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		cn, err := connector.Connect(cctx)
		cancel()
		var me *mysql.MySQLError
		if errors.As(err, &me) && me.Number == 1040 {
			return f
		}
		must(t, err)
		f.conns = append(f.conns, cn)
	}
	t.Fatalf("node %d took 50 filler sessions without answering 1040", n.Index())
	return nil
}

func (f *fillers) release() {
	for _, cn := range f.conns {
		cn.Close()
	}
	f.conns = nil
}

func TestFullHost(t *testing.T) {
	c := harness.Start(t, 2)
	ctx := ctxT(t, time.Minute)
	n1 := c.Node(1)

	// setUp opens a pool whose new connections always dial (no idle connections kept),
	// with two writers on connections opened before the fault.
	setUp := func(t *testing.T, table string) (*faultPool, *writeLoad) {
		createWriteTable(t, ctx, c, table)
		p := openFaultPool(t, c.DSN(fullHostParams))
		load := startWriters(t, ctx, p.db, table, 2, 20*time.Millisecond)
		p.db.SetMaxIdleConns(0)
		return p, load
	}
	// during checks, while the host is full, that the pool is still on node 1 (Stats only:
	// a pooled statement would need a new connection).
	during := func(t *testing.T, p *faultPool, when string) {
		if a := p.active(c); a != 1 {
			t.Errorf("%s: Connector.Stats().Active is node %d (%s), want node 1", when, a, p.cn.Stats().Active)
		}
	}
	node1Connects := func(p *faultPool, since time.Time) (ok, failed int) {
		for _, e := range p.ev.of(failover.EventConnect, n1.ProxyAddr(), since) {
			if e.Err == nil {
				ok++
			} else {
				failed++
			}
		}
		return ok, failed
	}

	// Full for about 300 ms: the new connection waits and lands on node 1; the caller
	// sees no error.
	t.Run("burst", func(t *testing.T) {
		name := t.Name()
		p, load := setUp(t, "fh_burst")
		f := fillNode(t, ctx, c, n1)
		filled := time.Now()
		released := make(chan time.Time, 1)
		go func() {
			time.Sleep(300 * time.Millisecond) // the length of the burst: time is the point here
			f.release()
			released <- time.Now()
		}()
		during(t, p, "node 1 full")
		begin := time.Now()
		sc, callerErr := p.db.Conn(ctx)
		took := time.Since(begin)
		rel := <-released
		t.Logf("new connection while node 1 was full for %v: %v after %v", rel.Sub(filled).Round(time.Millisecond), callerErr, took.Round(time.Millisecond))
		if callerErr != nil {
			t.Errorf("new connection during a 300 ms burst of 1040: %s %v, want no error (wait, then node 1)", errKind(callerErr), callerErr)
		} else {
			s, err := sessionOf(ctx, c, sc)
			if err != nil || s.node != 1 {
				t.Errorf("the new connection runs on node %d (%v), want node 1", s.node, err)
			}
			must(t, sc.Close())
		}
		during(t, p, "after the burst")
		okC, failedC := node1Connects(p, filled)
		t.Logf("FIGURE %s: caller_error=%s", name, errKind(callerErr))
		t.Logf("FIGURE %s: new_connection_ms=%d", name, took.Milliseconds())
		t.Logf("FIGURE %s: node1_connects_ok=%d node1_connects_failed=%d", name, okC, failedC)
		if !load.waitMoreWrites(6, 3*time.Second) {
			t.Errorf("the writers did not make 6 more writes within 3 s after the fault")
		}
		wantPoolOn(t, ctx, c, p, 1, "after the burst")
		t.Logf("FIGURE %s: pool_active_node=%d", name, p.active(c))
		t.Logf("FIGURE %s: switch_events=%d", name, p.switches())
		load.checkWrites(t, ctx, c, name)
	})

	// Full for good: within hostTimeout (2 s) the caller gets one clear error naming
	// node 1 with the 1040; the writers on open connections go on.
	t.Run("lasting", func(t *testing.T) {
		name := t.Name()
		p, load := setUp(t, "fh_lasting")
		f := fillNode(t, ctx, c, n1)
		filled := time.Now()
		writesAtFill, _ := load.counts()
		during(t, p, "node 1 full")
		cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		begin := time.Now()
		sc, callerErr := p.db.Conn(cctx)
		took := time.Since(begin)
		cancel()
		t.Logf("new connection while node 1 is full: %v after %v", callerErr, took.Round(time.Millisecond))
		if callerErr == nil {
			s, err := sessionOf(ctx, c, sc)
			t.Errorf("new connection to a full node 1 succeeded, on node %d (%v); want the 1040 naming node 1", s.node, err)
			must(t, sc.Close())
		} else {
			var me *mysql.MySQLError
			if !errors.As(callerErr, &me) || me.Number != 1040 {
				t.Errorf("error %T %v does not carry the *mysql.MySQLError 1040", callerErr, callerErr)
			}
			if !strings.Contains(callerErr.Error(), n1.ProxyAddr()) {
				t.Errorf("error %q does not name node 1 (%s)", callerErr, n1.ProxyAddr())
			}
			if errors.Is(callerErr, sqldriver.ErrBadConn) {
				t.Errorf("error %v matches driver.ErrBadConn: database/sql would dial again", callerErr)
			}
			if errors.Is(callerErr, context.DeadlineExceeded) {
				t.Errorf("the caller's 10 s context ran out: %v; want the error within hostTimeout (2 s)", callerErr)
			}
		}
		if took > 3500*time.Millisecond {
			t.Errorf("the caller waited %v, want about hostTimeout (2 s)", took)
		}
		during(t, p, "node 1 still full")
		writesInFault, failedInFault := load.counts()
		okC, failedC := node1Connects(p, filled)
		f.release()
		released := time.Now()

		sc, err := p.db.Conn(ctx)
		if err != nil {
			t.Errorf("new connection after the fillers left: %v", err)
		} else {
			s, err := sessionOf(ctx, c, sc)
			if err != nil || s.node != 1 {
				t.Errorf("the new connection after the fault runs on node %d (%v), want node 1", s.node, err)
			}
			must(t, sc.Close())
		}
		t.Logf("FIGURE %s: caller_error=%s", name, errKind(callerErr))
		t.Logf("FIGURE %s: caller_error_ms=%d", name, took.Milliseconds())
		t.Logf("FIGURE %s: node1_connects_ok=%d node1_connects_failed=%d", name, okC, failedC)
		t.Logf("FIGURE %s: workload_writes_while_full=%d failed_so_far=%d", name, writesInFault-writesAtFill, len(failedInFault))
		t.Logf("FIGURE %s: full_for_ms=%d", name, released.Sub(filled).Milliseconds())
		if full := released.Sub(filled); full >= time.Second && writesInFault-writesAtFill < 10 {
			t.Errorf("only %d writes on the open connections while node 1 was full for %v", writesInFault-writesAtFill, full)
		}
		if !load.waitMoreWrites(6, 3*time.Second) {
			t.Errorf("the writers did not make 6 more writes within 3 s after the fault")
		}
		wantPoolOn(t, ctx, c, p, 1, "after the fault")
		t.Logf("FIGURE %s: pool_active_node=%d", name, p.active(c))
		t.Logf("FIGURE %s: switch_events=%d", name, p.switches())
		load.checkWrites(t, ctx, c, name)
	})
}
