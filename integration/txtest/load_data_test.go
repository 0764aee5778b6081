package txtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// A LOAD DATA LOCAL INFILE cut mid-file is never run again. go-sql-driver returns
// driver.ErrBadConn when writing a file packet fails, after the statement was sent: taken
// for "not sent", the statement ran again on node 2, which either refused it (1290, the
// caller never told that node 1 may have run it) or loaded the file from a reader handed
// out a second time while the caller got nil. The socket counts the bytes written: the
// statement was sent, so the caller gets a *failover.FailoverError with MaybeExecuted,
// the reader is handed out once, and no row of the file lands anywhere (node 1 aborted
// the statement when its connection went).
func TestLoadDataLocalCut(t *testing.T) {
	const rows, cutAt = 1000, 500
	c := harness.Start(t, 3)
	ctx := ctxT(t, 2*time.Minute)
	n1, n2 := c.Node(1), c.Node(2)
	must(t, n1.Exec(ctx, "CREATE TABLE app.loaded (k INT PRIMARY KEY)"))
	must(t, c.WaitReplicasCaughtUp(ctx))

	var handed atomic.Int32
	// The reader gives one line per Read; at line cutAt it closes node 1's proxy (its
	// connections and new ones) and waits a moment, so that a later file packet's write
	// fails.
	mysql.RegisterReaderHandler("cut", func() io.Reader {
		handed.Add(1)
		return &cutReader{n: rows, cutAt: cutAt, cut: func() {
			must(t, n1.Disable())
			time.Sleep(100 * time.Millisecond)
		}}
	})
	t.Cleanup(func() { mysql.DeregisterReaderHandler("cut") })

	for _, tc := range []struct {
		name     string
		params   string
		writable bool // node 2 takes writes: the statement would have run there in full
	}{
		{name: "next-host-read-only", params: ""},
		{name: "next-host-writable", params: "failOverReadOnly=false", writable: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			handed.Store(0)
			must(t, n1.Exec(ctx, "DELETE FROM app.loaded"))
			must(t, c.WaitReplicasCaughtUp(ctx))
			if tc.writable {
				must(t, n2.SetReadOnly(ctx, false))
				t.Cleanup(func() { must(t, n2.SetReadOnly(context.Background(), true)) })
			}
			t.Cleanup(func() { must(t, n1.Enable()) })
			db, err := sql.Open("mysqlfailover", c.DSN(tc.params))
			must(t, err)
			defer db.Close()
			must(t, db.PingContext(ctx))
			start := time.Now()
			_, err = db.ExecContext(ctx, "LOAD DATA LOCAL INFILE 'Reader::cut' INTO TABLE loaded (k)")
			t.Logf("FIGURE %s: load_ms=%d", t.Name(), time.Since(start).Milliseconds())
			var fe *failover.FailoverError
			if !errors.As(err, &fe) || !fe.MaybeExecuted || mysqlfailover.SafeToRetry(err) != mysqlfailover.RetryNothing {
				t.Errorf("LOAD DATA: %v, want a *failover.FailoverError with MaybeExecuted (SafeToRetry: nothing)", err)
			}
			notBadConn(t, "LOAD DATA", err)
			if n := handed.Load(); n != 1 {
				t.Errorf("the reader was handed out %d times, want once", n)
			}
			must(t, n1.Enable())
			for _, n := range []*harness.Node{n1, n2} {
				if got := count(ctx, t, n, "loaded"); got != 0 {
					t.Errorf("node %d has %d rows of the file, want 0 (node 1 aborted the statement; it ran nowhere else)", n.Index(), got)
				}
			}
		})
	}
}

// cutReader gives the lines "1\n" to "n\n", one per Read, and calls cut once before line
// cutAt.
type cutReader struct {
	i, n, cutAt int
	cut         func()
}

func (r *cutReader) Read(b []byte) (int, error) {
	if r.i >= r.n {
		return 0, io.EOF
	}
	r.i++
	if r.i == r.cutAt {
		r.cut()
	}
	return copy(b, fmt.Sprintf("%d\n", r.i)), nil
}
