package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// TestJoinWalkLeavesOutNotReady (readiness, walk.go order): a connection that joins the
// pool and finds the pool's host gone walks on to a ready host, without an attempt on a
// host whose server said it is not ready (MySQL's offline_mode here, on a replication
// cluster, where a new session's state is not read again), although that host comes
// first in the rotation.
func TestJoinWalkLeavesOutNotReady(t *testing.T) {
	r := newRig(t, 3, func(o *rigOpts) { o.SecondsBeforeRetryMaster, o.QueriesBeforeRetryMaster = 0, 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	l := r.connect() // on H1; the state read finds a replication cluster
	if k := r.cl.Kind(); k != cluster.KindReplication {
		t.Fatalf("cluster kind %v after the first connection, want replication", k)
	}
	// H1 goes offline: its statements and new sessions are refused. The connection that
	// got the refusal moves the pool, to H3 (H2 refuses connections for the moment).
	r.net.RefuseDial(0, fake.OfflineError)
	nr := cluster.Refusal(fake.OfflineError)
	r.cl.NoteRefusal(0, nr)
	_ = l.c.Close()
	r.down(1)
	c, h, err := r.cl.Failover(ctx, 0, nr, nil)
	if err != nil || h != 2 {
		t.Fatalf("Failover: H%d %v, want H3", h+1, err)
	}
	r.up(1)
	r.clock.Advance(time.Minute) // H2's backoff is over
	// H3 dies; a new connection joins: rotation from H3 is H1, H2.
	r.down(2)
	before := len(r.history())
	j, jh, err := r.cl.Connect(ctx, nil)
	if err != nil || jh != 1 {
		t.Fatalf("joining Connect: H%d %v, want H2", jh+1, err)
	}
	_ = j.Close()
	_ = c.Close()
	if got := strings.TrimSpace(r.history()[before:]); got != `\H3 /H2` {
		t.Fatalf("the joining walk: %q, want %q (no attempt on H1, not ready)", got, `\H3 /H2`)
	}
}
