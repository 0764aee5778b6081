package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// TestHarnessSmoke proves the harness itself, with the plain go-sql-driver only: the
// cluster's shape, replication, read-only replicas, and each fault helper once.
func TestHarnessSmoke(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, 3*time.Minute)
	t.Logf("bring-up: %v", c.BringUp())

	t.Run("topology", func(t *testing.T) {
		for i := 1; i <= c.N(); i++ {
			n := c.Node(i)
			if got := c.NodeByPort(n.Port()); got != i {
				t.Errorf("NodeByPort(%d) = %d, want %d", n.Port(), got, i)
			}
			if got := c.NodeByAddr(n.ProxyAddr()); got != i {
				t.Errorf("NodeByAddr(%s) = %d, want %d", n.ProxyAddr(), got, i)
			}
			ro, err := n.QueryInt(ctx, "SELECT @@GLOBAL.read_only")
			must(t, err)
			if want := i > 1; (ro == 1) != want {
				t.Errorf("node %d read_only = %d, want %v", i, ro, want)
			}
			// The node's proxy leads to the node's server.
			db := openDB(t, "mysql", c.HostDSN(i, ""))
			got, err := nodeOf(ctx, c, db)
			must(t, err)
			if got != i {
				t.Errorf("through node %d's proxy: on node %d", i, got)
			}
		}
	})

	primary := openDB(t, "mysql", c.HostDSN(1, "readTimeout=2s"))
	count := func(t *testing.T, node, id int) int64 {
		t.Helper()
		v, err := c.Node(node).QueryInt(ctx, "SELECT COUNT(*) FROM app.t WHERE id = ?", id)
		must(t, err)
		return v
	}

	t.Run("replication", func(t *testing.T) {
		_, err := primary.ExecContext(ctx, "CREATE TABLE t (id INT PRIMARY KEY, v VARCHAR(20))")
		must(t, err)
		_, err = primary.ExecContext(ctx, "INSERT INTO t VALUES (1, 'one')")
		must(t, err)
		must(t, c.WaitReplicasCaughtUp(ctx))
		for i := 2; i <= 3; i++ {
			if n := count(t, i, 1); n != 1 {
				t.Errorf("node %d has %d rows with id 1, want 1", i, n)
			}
			if n, err := c.Node(i).QueryInt(ctx, "SELECT COUNT(*) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = 'app2'"); err != nil || n != 1 {
				t.Errorf("node %d: database app2: %d, %v", i, n, err)
			}
		}
	})

	t.Run("replicas are read-only for app", func(t *testing.T) {
		for _, dsn := range []string{c.DirectDSN(2, ""), c.HostDSN(3, "")} {
			_, err := openDB(t, "mysql", dsn).ExecContext(ctx, "INSERT INTO t VALUES (100, 'x')")
			if !isMySQLError(err, 1290) {
				t.Errorf("insert on a replica: %v, want error 1290", err)
			}
		}
	})

	t.Run("SetReadOnly", func(t *testing.T) {
		must(t, c.Node(1).SetReadOnly(ctx, true))
		_, err := primary.ExecContext(ctx, "INSERT INTO t VALUES (101, 'x')")
		if !isMySQLError(err, 1290) {
			t.Errorf("insert on read-only primary: %v, want error 1290", err)
		}
		must(t, c.Node(1).SetReadOnly(ctx, false))
		_, err = primary.ExecContext(ctx, "INSERT INTO t VALUES (101, 'x')")
		must(t, err)
	})

	t.Run("kill and restart", func(t *testing.T) {
		n := c.Node(3)
		db := openDB(t, "mysql", c.HostDSN(3, "readTimeout=2s&timeout=1s"))
		conn, err := db.Conn(ctx)
		must(t, err)
		defer conn.Close()
		must(t, conn.PingContext(ctx))

		must(t, n.Kill())
		if n.State() != harness.Down {
			t.Errorf("state after Kill: %v", n.State())
		}
		if _, err := nodeOf(ctx, c, conn); err == nil {
			t.Error("held connection still works after Kill")
		}
		if err := db.PingContext(ctx); err == nil {
			t.Error("new connection works after Kill")
		}
		if _, err := n.QueryInt(ctx, "SELECT 1"); err == nil {
			t.Error("admin connection works after Kill")
		}

		must(t, n.Restart(ctx))
		if got, err := nodeOf(ctx, c, db); err != nil || got != 3 {
			t.Fatalf("after Restart: node %d, %v", got, err)
		}
		if ro, err := n.QueryInt(ctx, "SELECT @@GLOBAL.read_only"); err != nil || ro != 1 {
			t.Errorf("replica's read_only after Restart: %d, %v", ro, err)
		}
		_, err = primary.ExecContext(ctx, "INSERT INTO t VALUES (2, 'two')")
		must(t, err)
		must(t, c.WaitReplicasCaughtUp(ctx))
		if got := count(t, 3, 2); got != 1 {
			t.Errorf("replication to the restarted replica: %d rows, want 1", got)
		}
	})

	t.Run("stop and restart primary", func(t *testing.T) {
		n := c.Node(1)
		must(t, n.Stop(ctx))
		if err := primary.PingContext(ctx); err == nil {
			t.Error("primary answers after Stop")
		}
		must(t, n.Restart(ctx))
		_, err := primary.ExecContext(ctx, "INSERT INTO t VALUES (3, 'three')")
		must(t, err)
		must(t, c.WaitReplicasCaughtUp(ctx)) // the replicas found the restarted primary
		for i := 2; i <= 3; i++ {
			if got := count(t, i, 3); got != 1 {
				t.Errorf("node %d: %d rows with id 3, want 1", i, got)
			}
		}
	})

	t.Run("freeze and thaw", func(t *testing.T) {
		n := c.Node(2)
		db := openDB(t, "mysql", c.HostDSN(2, "readTimeout=1s"))
		must(t, db.PingContext(ctx))

		must(t, n.Freeze())
		start := time.Now()
		_, err := nodeOf(ctx, c, db)
		if took := time.Since(start); err == nil || took < 900*time.Millisecond {
			t.Errorf("query on a frozen server: %v after %v, want a read timeout after 1s", err, took)
		}
		actx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err = n.QueryInt(actx, "SELECT 1")
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("admin query on a frozen server: %v, want deadline exceeded", err)
		}

		must(t, n.Thaw())
		if got, err := nodeOf(ctx, c, db); err != nil || got != 2 {
			t.Errorf("after Thaw: node %d, %v", got, err)
		}
	})

	t.Run("disable and enable", func(t *testing.T) {
		n := c.Node(2)
		db := openDB(t, "mysql", c.HostDSN(2, "readTimeout=2s"))
		conn, err := db.Conn(ctx)
		must(t, err)
		defer conn.Close()
		must(t, conn.PingContext(ctx))

		must(t, n.Disable())
		if _, err := nodeOf(ctx, c, conn); err == nil {
			t.Error("open connection survived Disable")
		}
		if _, err := net.DialTimeout("tcp", n.ProxyAddr(), time.Second); !errors.Is(err, syscall.ECONNREFUSED) {
			t.Errorf("dial a disabled proxy: %v, want connection refused", err)
		}
		must(t, n.Enable())
		if got, err := nodeOf(ctx, c, db); err != nil || got != 2 {
			t.Errorf("after Enable: node %d, %v", got, err)
		}
	})

	t.Run("blackhole and clear", func(t *testing.T) {
		n := c.Node(2)
		db := openDB(t, "mysql", c.HostDSN(2, "readTimeout=1s"))
		conn, err := db.Conn(ctx)
		must(t, err)
		defer conn.Close()
		must(t, conn.PingContext(ctx))

		must(t, n.Blackhole())
		start := time.Now()
		_, err = nodeOf(ctx, c, conn)
		if took := time.Since(start); err == nil || took < 900*time.Millisecond {
			t.Errorf("query into a blackhole: %v after %v, want a read timeout after 1s", err, took)
		}
		// A new connection is accepted by the proxy, then the greeting never comes.
		nc, err := net.DialTimeout("tcp", n.ProxyAddr(), time.Second)
		must(t, err)
		nc.SetReadDeadline(time.Now().Add(500 * time.Millisecond))
		_, err = nc.Read(make([]byte, 1))
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Errorf("greeting through a blackhole: %v, want a timeout", err)
		}
		nc.Close()

		must(t, n.ClearToxics())
		if got, err := nodeOf(ctx, c, db); err != nil || got != 2 {
			t.Errorf("after ClearToxics: node %d, %v", got, err)
		}
	})

	t.Run("reset peer", func(t *testing.T) {
		n := c.Node(1)
		for _, tc := range []struct {
			upstream bool
			id       int
			ran      int64 // rows the server has afterwards
		}{
			{upstream: false, id: 10, ran: 1}, // the server ran it, the reply was lost
			{upstream: true, id: 11, ran: 0},  // the request was lost
		} {
			conn, err := primary.Conn(ctx)
			must(t, err)
			must(t, conn.PingContext(ctx))
			must(t, n.ResetPeer(tc.upstream))
			// No arguments: go-sql-driver would PREPARE first, and the reply to that
			// would fire the toxic before the INSERT is sent.
			_, err = conn.ExecContext(ctx, fmt.Sprintf("INSERT INTO t VALUES (%d, 'reset')", tc.id))
			must(t, n.ClearToxics())
			conn.Close()
			if err == nil {
				t.Errorf("upstream=%v: insert through reset_peer succeeded", tc.upstream)
			}
			if got := count(t, 1, tc.id); got != tc.ran {
				t.Errorf("upstream=%v: %d rows on the server, want %d", tc.upstream, got, tc.ran)
			}
		}
		if err := primary.PingContext(ctx); err != nil {
			t.Errorf("after ClearToxics: %v", err)
		}
	})

	t.Run("latency", func(t *testing.T) {
		n := c.Node(2)
		db := openDB(t, "mysql", c.HostDSN(2, ""))
		conn, err := db.Conn(ctx)
		must(t, err)
		defer conn.Close()
		must(t, n.Latency(300*time.Millisecond))
		start := time.Now()
		must(t, conn.PingContext(ctx))
		if took := time.Since(start); took < 300*time.Millisecond {
			t.Errorf("ping with 300ms latency took %v", took)
		}
		must(t, n.Latency(0))
		start = time.Now()
		must(t, conn.PingContext(ctx))
		if took := time.Since(start); took >= 300*time.Millisecond {
			t.Errorf("ping after Latency(0) took %v", took)
		}
	})

	t.Run("counters", func(t *testing.T) {
		n := c.Node(3)
		before, err := n.Connections(ctx)
		must(t, err)
		sessions, err := n.AppSessions(ctx)
		must(t, err)
		db := openDB(t, "mysql", c.HostDSN(3, ""))
		var conns []*sql.Conn
		for range 3 {
			conn, err := db.Conn(ctx)
			must(t, err)
			must(t, conn.PingContext(ctx))
			conns = append(conns, conn)
		}
		after, err := n.Connections(ctx)
		must(t, err)
		// Each admin call may open a connection too, so the count grows by at least 3.
		if after-before < 3 {
			t.Errorf("Connections grew by %d, want >= 3", after-before)
		}
		if got, err := n.AppSessions(ctx); err != nil || got != sessions+3 {
			t.Errorf("AppSessions = %d, %v, want %d", got, err, sessions+3)
		}
		for _, conn := range conns {
			conn.Close()
		}
		db.Close()
		deadline := time.Now().Add(5 * time.Second)
		for {
			got, err := n.AppSessions(ctx)
			must(t, err)
			if got == sessions {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("AppSessions = %d after closing, want %d", got, sessions)
			}
			time.Sleep(20 * time.Millisecond)
		}
	})
}

func isMySQLError(err error, number uint16) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && me.Number == number
}
