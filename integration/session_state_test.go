package integration

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// TestSessionStateAcrossSwitches (issue scenario 11, shared/cases/13): the session state
// of one pinned connection (MaxOpen=1) across two switches and the fall-back.
//
// DSN: sql_mode='STRICT_ALL_TABLES', time_zone='+03:00' (go-sql-driver system variables,
// applied to every new physical connection), failOverReadOnly=true,
// secondsBeforeRetryMaster=1, and readTimeout=2s so that nothing can hang.
//
// Phases: on node 1; `USE app2` on node 1; node 1's proxy disabled -> node 2; node 2's
// proxy disabled -> node 3; both enabled, 1.5 s later one statement falls back to node 1.
// In each phase `SELECT @@port, DATABASE(), @@session.sql_mode, @@session.time_zone,
// @@session.tx_read_only, @@autocommit`.
//
// RIGHT: DATABASE() is app before the USE and app2 after it, in every phase (the driver
// tracks `USE`: the case's optional point, "tracked"); sql_mode and time_zone as in the
// DSN in every phase; autocommit=1; tx_read_only=1 on nodes 2 and 3 and 0 on node 1,
// also after the fall-back (Bug #56706), where a write succeeds. The statement that meets
// a disabled proxy may fail with a *failover.FailoverError (it was sent); the connection
// is then already on the next node and the phase's query is run again once. The
// fall-back itself is silent.
func TestSessionStateAcrossSwitches(t *testing.T) {
	name := t.Name()
	fig := func(key string, v any) { t.Logf("FIGURE %s: %s=%v", name, key, v) }

	c := harness.Start(t, 3)
	ctx := ctxT(t, time.Minute)
	begin := time.Now()

	// A table for the write after the fall-back (created on node 1, replicated).
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app2.ss_t (id INT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(10))"))
	must(t, c.WaitReplicasCaughtUp(ctx))

	const (
		wantMode = "STRICT_ALL_TABLES"
		wantTZ   = "+03:00"
	)
	// go-sql-driver URL-unescapes system variable values: %2B is '+'. The quotes are
	// sent as written: SET sql_mode='STRICT_ALL_TABLES', time_zone='+03:00'.
	db := openDB(t, "mysqlfailover", c.DSN("sql_mode='STRICT_ALL_TABLES'&time_zone='%2B03:00'"+
		"&failOverReadOnly=true&secondsBeforeRetryMaster=1&readTimeout=2s"))
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	pinned, err := db.Conn(ctx)
	must(t, err)
	defer pinned.Close()

	type phase struct {
		name     string
		before   func() error
		wantNode int
		wantDB   string
		wantRO   int
		// mayFail: the phase's first statement may meet the fault and fail with a
		// FailoverError; fallBack: it must not fail at all.
		mayFail bool
	}
	phases := []phase{
		{name: "node1", wantNode: 1, wantDB: harness.AppDB, wantRO: 0},
		{name: "node1_after_use", before: func() error {
			_, err := pinned.ExecContext(ctx, "USE "+harness.AppDB2)
			return err
		}, wantNode: 1, wantDB: harness.AppDB2, wantRO: 0},
		{name: "node2", before: c.Node(1).Disable, wantNode: 2, wantDB: harness.AppDB2, wantRO: 1, mayFail: true},
		{name: "node3", before: c.Node(2).Disable, wantNode: 3, wantDB: harness.AppDB2, wantRO: 1, mayFail: true},
		{name: "node1_fallback", before: func() error {
			must(t, c.Node(1).Enable())
			must(t, c.Node(2).Enable())
			time.Sleep(1500 * time.Millisecond)
			return nil
		}, wantNode: 1, wantDB: harness.AppDB2, wantRO: 0},
	}
	switchErrs := 0
	for _, p := range phases {
		if p.before != nil {
			must(t, p.before())
		}
		t0 := time.Now()
		st, err := ssQuery(ctx, c, pinned)
		if err != nil {
			var fe *failover.FailoverError
			if !p.mayFail || !errors.As(err, &fe) {
				t.Fatalf("%s: %v (%T), want no error%s", p.name, err, err,
					map[bool]string{true: " or a *failover.FailoverError", false: ""}[p.mayFail])
			}
			switchErrs++
			t.Logf("%s: first statement: %v (failed node %d, now on node %d, maybe executed %v)",
				p.name, err, c.NodeByAddr(fe.Failed), c.NodeByAddr(fe.Current), fe.MaybeExecuted)
			if c.NodeByAddr(fe.Current) != p.wantNode {
				t.Errorf("%s: FailoverError says now on %q (node %d), want node %d", p.name, fe.Current, c.NodeByAddr(fe.Current), p.wantNode)
			}
			st, err = ssQuery(ctx, c, pinned)
			if err != nil {
				t.Fatalf("%s: after the switch: %v", p.name, err)
			}
		}
		took := time.Since(t0)
		t.Logf("%s: %s (%v)", p.name, st, took.Round(time.Microsecond))

		var got []string
		check := func(what string, v, want any) {
			t.Helper()
			got = append(got, fmt.Sprintf("%s:%v", what, v))
			if fmt.Sprint(v) != fmt.Sprint(want) {
				t.Errorf("%s: %s = %v, want %v", p.name, what, v, want)
			}
		}
		check("node", st.node, p.wantNode)
		check("database", st.db, p.wantDB)
		check("sql_mode", st.sqlMode, wantMode)
		check("time_zone", st.timeZone, wantTZ)
		check("tx_read_only", st.txReadOnly, p.wantRO)
		check("autocommit", st.autocommit, 1)
		// The proxy's own view agrees with the server's.
		check("proxy_host_node", c.NodeByAddr(st.proxyHost), p.wantNode)
		check("proxy_read_only", st.proxyRO, p.wantRO == 1)
		got = append(got, fmt.Sprintf("ms:%.1f", float64(took.Microseconds())/1000))
		fig("phase."+p.name, strings.Join(got, ","))
	}

	// Bug #56706: after the fall-back the primary takes writes on the same connection
	// (read-only really cleared, database still app2).
	res, err := pinned.ExecContext(ctx, "INSERT INTO ss_t (v) VALUES ('after')")
	if err != nil {
		t.Errorf("write on node 1 after the fall-back: %v", err)
	} else if n, _ := res.RowsAffected(); n != 1 {
		t.Errorf("write on node 1 after the fall-back: %d rows", n)
	}
	rows, err := c.Node(1).QueryInt(ctx, "SELECT COUNT(*) FROM app2.ss_t WHERE v = 'after'")
	must(t, err)
	fig("write_after_fallback_rows_on_node1", rows)
	if rows != 1 {
		t.Errorf("rows written on node 1 after the fall-back: %d, want 1", rows)
	}
	fig("switch_errors", switchErrs)
	fig("duration_ms", time.Since(begin).Milliseconds())
}

type ssState struct {
	node                  int
	db, sqlMode, timeZone string
	txReadOnly            int
	autocommit            int
	proxyHost             string // mysqlfailover.Conn.Host()
	proxyRO               bool   // mysqlfailover.Conn.ReadOnly()
}

func (s ssState) String() string {
	return fmt.Sprintf("node %d, database %s, sql_mode %q, time_zone %q, tx_read_only %d, autocommit %d; proxy on node-addr %s read-only %v",
		s.node, s.db, s.sqlMode, s.timeZone, s.txReadOnly, s.autocommit, s.proxyHost, s.proxyRO)
}

// ssQuery reads the session state of the pinned connection, and the proxy's own view of
// its host and read-only state.
func ssQuery(ctx context.Context, c *harness.Cluster, pinned *sql.Conn) (ssState, error) {
	var s ssState
	var port int
	var db sql.NullString
	err := pinned.QueryRowContext(ctx, "SELECT @@port, DATABASE(), @@session.sql_mode, @@session.time_zone, "+
		"@@session.tx_read_only, @@autocommit").Scan(&port, &db, &s.sqlMode, &s.timeZone, &s.txReadOnly, &s.autocommit)
	if err != nil {
		return s, err
	}
	s.node, s.db = c.NodeByPort(port), db.String
	err = pinned.Raw(func(dc any) error {
		pc, ok := mysqlfailover.ConnOf(dc)
		if !ok {
			return fmt.Errorf("driver connection is %T, not a mysqlfailover connection", dc)
		}
		s.proxyHost, s.proxyRO = pc.Host(), pc.ReadOnly()
		return nil
	})
	return s, err
}
