package integration

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// A connection storm on a healthy primary (a deploy, an autoscaling step): many pools
// open their sessions at once and the primary's listener closes some handshakes while
// it answers the others. One closed handshake is one session's failure, not the host's:
// no pool may leave the primary for the read-only secondary (its writes would fail
// until the fall-back). The fault: node 1's proxy resets a fraction of new connections
// at their greeting (Node.ResetSome); the pools use the default targetSessionAttrs.

// stormPools, stormSessions: the fleet of the storm (pools, sessions each, opened at once).
const (
	stormPools    = 40
	stormSessions = 4
)

// stormFraction is the fraction of node 1's new connections reset at the greeting
// (MYSQLFAILOVER_STORM_FRACTION, default 0.4).
func stormFraction() float64 {
	if f, err := strconv.ParseFloat(os.Getenv("MYSQLFAILOVER_STORM_FRACTION"), 64); err == nil && f >= 0 && f <= 1 {
		return f
	}
	return 0.4
}

func TestConnectionStormStaysOnPrimary(t *testing.T) {
	c := harness.Start(t, 2)
	ctx := ctxT(t, 2*time.Minute)
	n1 := c.Node(1)
	frac := stormFraction()
	must(t, n1.ResetSome(frac))
	t.Cleanup(func() { _ = n1.ClearToxics() })

	pools := make([]*faultPool, stormPools)
	for i := range pools {
		pools[i] = openFaultPool(t, c.DSN("hostTimeout=5s&secondsBeforeRetryMaster=3600&queriesBeforeRetryMaster=0"))
		pools[i].db.SetMaxOpenConns(stormSessions)
		pools[i].db.SetMaxIdleConns(stormSessions)
	}
	var wg sync.WaitGroup
	start := make(chan struct{})
	var mu sync.Mutex
	errs := map[string]int{}
	var closedErrs int
	for _, p := range pools {
		hold := make(chan struct{})
		var pw sync.WaitGroup
		for range stormSessions {
			wg.Add(1)
			pw.Add(1)
			go func() {
				defer wg.Done()
				<-start
				cn, err := p.db.Conn(ctx)
				if err == nil {
					err = cn.PingContext(ctx)
				}
				pw.Done()
				if err != nil {
					mu.Lock()
					errs[errKind(err)]++
					if sessionsClosedErr(err) {
						closedErrs++
					}
					mu.Unlock()
				}
				if cn != nil {
					<-hold // every session of the pool open at once
					cn.Close()
				}
			}()
		}
		go func() { pw.Wait(); close(hold) }()
	}
	close(start)
	wg.Wait()

	moved, failedConnects := 0, 0
	var retries, kept int64
	for i, p := range pools {
		st := p.cn.Stats()
		if p.active(c) != 1 {
			moved++
			t.Logf("pool %d: on node %d (%s)", i, p.active(c), st.Active)
		}
		for _, e := range p.ev.of(failover.EventConnect, n1.ProxyAddr(), time.Time{}) {
			if e.Err != nil {
				failedConnects++
			}
		}
		r, k := stormCounters(st)
		retries += r
		kept += k
	}
	t.Logf("FIGURE storm: %d pools x %d sessions at once, %.0f%% of node 1's new connections reset at the greeting: "+
		"%d pools moved off the primary; %d attempts on node 1 ended in an error, %d closed handshakes tried again on it, %d sessions failed while node 1 answered (%d such caller errors); caller errors by kind %v",
		stormPools, stormSessions, 100*frac, moved, failedConnects, retries, kept, closedErrs, errs)
	if moved != 0 {
		t.Errorf("%d of %d pools left the healthy primary, want 0", moved, stormPools)
	}
}

// sessionsClosedErr reports whether err says the host closed the session's handshakes
// while it answered others.
func sessionsClosedErr(err error) bool {
	return strings.Contains(err.Error(), "closed this new session's handshake")
}

// stormCounters returns Stats' counts of handshakes tried again and of sessions that
// failed while the host answered.
func stormCounters(st failover.Stats) (retries, kept int64) {
	return st.HandshakeRetries, st.SessionsClosed
}
