package cluster_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// TestCallerCancelDuringAttemptIsNotTheHosts (invariants classify-then-judge and bounded-waiting): a host attempt that
// ends because the caller's context ended says nothing of the host: it is not put into
// backoff (nor suspect), and the next connection tries it first and lands there.
func TestCallerCancelDuringAttemptIsNotTheHosts(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var r *rig
	cancelled := false
	r = newRig(t, 2, func(o *rigOpts) {
		o.Dial = func(dctx context.Context, h int) (driver.Conn, error) {
			if h == primary && !cancelled {
				// The caller gives up while the handshake is under way.
				cancelled = true
				cancel()
				return nil, dctx.Err()
			}
			return r.net.Dial(dctx, h)
		}
	})
	if _, _, err := r.cl.Connect(ctx, nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("Connect with the caller's context cancelled during the attempt: %v, want context.Canceled", err)
	}
	h := r.cl.Stats().Hosts[primary]
	if !h.RetryAt.IsZero() || h.State == failover.HostSuspect || h.State == failover.HostDown {
		t.Fatalf("H1 after the caller's cancel: state %v, backoff until %v; want no backoff, not suspect", h.State, h.RetryAt)
	}
	bctx, bcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer bcancel()
	c, host, err := r.cl.Connect(bctx, nil)
	if err != nil || host != primary {
		t.Fatalf("next Connect: H%d %v, want H1", host+1, err)
	}
	c.Close()
	if got, want := r.history(), `\H1 /H1`; got != want {
		t.Fatalf("history %q, want %q (H1 tried first again)", got, want)
	}
}
