package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
)

// row is one SHOW REPLICA STATUS row for replicationOf: column -> value (absent: NULL).
func row(cols map[string]string) func(names ...string) (string, bool) {
	return func(names ...string) (string, bool) {
		for _, n := range names {
			if v, ok := cols[n]; ok {
				return v, true
			}
		}
		return "", false
	}
}

func TestReplicationState(t *testing.T) {
	tests := []struct {
		name string
		cols map[string]string
		want string
	}{
		{"running", map[string]string{"Slave_IO_Running": "Yes", "Slave_SQL_Running": "Yes", "Seconds_Behind_Master": "0"}, "running"},
		{"connecting", map[string]string{"Slave_IO_Running": "Connecting", "Slave_SQL_Running": "Yes", "Last_IO_Errno": "2003"}, "connecting"},
		{"stopped by hand", map[string]string{"Slave_IO_Running": "No", "Slave_SQL_Running": "No", "Last_IO_Errno": "0", "Last_SQL_Errno": "0"}, "stopped"},
		{"SQL thread stopped by hand", map[string]string{"Slave_IO_Running": "Yes", "Slave_SQL_Running": "No"}, "stopped"},
		{"SQL error", map[string]string{"Slave_IO_Running": "Yes", "Slave_SQL_Running": "No", "Last_SQL_Errno": "1062", "Last_SQL_Error": "Duplicate entry"}, "broken"},
		{"IO error", map[string]string{"Replica_IO_Running": "No", "Replica_SQL_Running": "Yes", "Last_IO_Errno": "1236", "Last_IO_Error": "binlog purged"}, "broken"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := replicationOf(row(tt.cols))
			if rep.State != tt.want {
				t.Fatalf("state %q, want %q (%+v)", rep.State, tt.want, rep)
			}
			if tt.want == "connecting" && !strings.Contains(lagText(rep), "connecting") {
				t.Errorf("lag of a connecting replica reads %q", lagText(rep))
			}
		})
	}
}

func TestGTIDProgress(t *testing.T) {
	for pos, want := range map[string]int64{
		"":             -1,
		"0-1-57":       57,
		"0-1-57,1-2-3": 60,
		"3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5":            5,
		"3E11FA47-71CA-11E1-9E33-C80AA9429562:1-5:7-9,ab:1-3": 11,
	} {
		if got := gtidProgress(pos); got != want {
			t.Errorf("gtidProgress(%q) = %d, want %d", pos, got, want)
		}
	}
}

func lag(n int64) *int64 { return &n }

// deadPrimary is a report of three hosts whose primary (db1) does not answer and whose
// replicas name it by another address and retry.
func deadPrimary() []hostReport {
	rep := func(gtid string, l *int64) replication {
		return replication{Status: "replica", State: "connecting", Source: "10.0.0.1:3306", SourceServerID: 1, IORunning: "Connecting", SQLRunning: "Yes",
			LagSeconds: l, LastError: "error reconnecting to master: Can't connect (111)"}
	}
	return []hostReport{
		{Host: "db1:3306", Role: "unknown", Failure: "refused", Error: "dial tcp: connect: connection refused", Replication: replication{Status: "unknown (not reached)"}},
		{Host: "db2:3306", Reachable: true, Role: "standby", role: failover.RoleStandby, ServerID: 2, GTID: "0-1-100", ReadOnly: "ON", Cluster: "replication", Replication: rep("0-1-100", nil)},
		{Host: "db3:3306", Reachable: true, Role: "standby", role: failover.RoleStandby, ServerID: 3, GTID: "0-1-120", ReadOnly: "ON", Cluster: "replication", Replication: rep("0-1-120", nil)},
	}
}

func judge(t *testing.T, dsnStr string, hosts []hostReport) *report {
	t.Helper()
	cfg, err := dsn.Parse(dsnStr)
	if err != nil {
		t.Fatal(err)
	}
	judgeReadiness(hosts)
	matchSources(hosts)
	r := &report{Hosts: hosts, Timeout: 3, Problems: []problem{}}
	r.Plan = makePlan(cfg, hosts)
	r.findProblems(cfg)
	r.finish()
	return r
}

func kinds(r *report) string {
	var out []string
	for _, p := range r.Problems {
		k := p.Kind
		if p.Host != "" {
			k += "@" + p.Host
		}
		out = append(out, k)
	}
	return strings.Join(out, " ")
}

// TestDeadPrimary: the cause leads (no writer, rated by the target), the dead source's
// problem explains its replicas (no problem of theirs, no START REPLICA), the replica
// furthest ahead by GTID is the one to promote, and the replicas' source is the host
// without a server id (their own address for it is another).
func TestDeadPrimary(t *testing.T) {
	for _, tt := range []struct {
		params, code, headline, effect string
		exit                           int
	}{
		{"readTimeout=2s", "any", "unusable: no writer (the primary db1:3306 does not answer: connection refused: not running): every write fails with error 1290 on db2:3306; to promote: db3:3306", "error 1290", exitUnusable},
		{"readTimeout=2s&failOverReadOnly=false", "any, failOverReadOnly=false", "every write fails with error 1290 on db2:3306", "error 1290", exitUnusable},
		{"readTimeout=2s&targetSessionAttrs=read-write", "read-write", "every write fails with *failover.NoHostAvailableError; to promote: db3:3306", "*failover.NoHostAvailableError", exitUnusable},
		{"readTimeout=2s&targetSessionAttrs=standby", "standby", "degraded: no writer", "only reads", exitDegraded},
	} {
		t.Run(tt.code, func(t *testing.T) {
			r := judge(t, "app:pw@tcp(db1:3306,db2:3306,db3:3306)/app?"+tt.params, deadPrimary())
			if r.ExitCode != tt.exit || !strings.Contains(r.Headline, tt.headline) {
				t.Fatalf("exit %d, headline %q; want %d, %q", r.ExitCode, r.Headline, tt.exit, tt.headline)
			}
			if got := kinds(r); got != "no_writer down@db1:3306" {
				t.Fatalf("problems %s, want no_writer then db1 down (nothing for the replicas)", got)
			}
			nw, down := r.Problems[0], r.Problems[1]
			if !strings.Contains(nw.Problem, tt.effect) || r.Plan.Promote != "db3:3306" || !strings.Contains(nw.Fix, "promote db3:3306") ||
				!strings.Contains(nw.Fix, "0-1-120") {
				t.Errorf("no writer: %+v, plan %+v", nw, r.Plan)
			}
			if !strings.Contains(down.Problem, "its replicas db2:3306, db3:3306 cannot reach it either") || !strings.Contains(down.Fix, "start the server") ||
				!strings.Contains(down.Fix, "no START REPLICA needed") {
				t.Errorf("db1's problem: %+v", down)
			}
			for _, h := range r.Hosts[1:] {
				if h.Replication.SourceHost != "db1:3306" || !h.Replication.SourcePresumed {
					t.Errorf("%s's source %+v, want db1 (presumed)", h.Host, h.Replication)
				}
			}
			if tt.code == "any" {
				// README shows this headline: it stays the tool's.
				readme, err := os.ReadFile("../../README.md")
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(readme), r.Headline+"\n") {
					t.Errorf("README.md does not show the headline of a dead primary as check prints it:\n%s", r.Headline)
				}
			}
			var out bytes.Buffer
			if err := r.writeText(&out); err != nil {
				t.Fatal(err)
			}
			if first, _, _ := strings.Cut(out.String(), "\n"); first != r.Headline {
				t.Errorf("first line %q, want the headline %q", first, r.Headline)
			}
			if strings.Contains(out.String(), "a replication thread is stopped") {
				t.Errorf("a connecting IO thread reads as stopped:\n%s", out.String())
			}
		})
	}
}

// TestProblemOrder: unusable first, then by rank (hosts before their replication,
// broken before stopped, the configuration last), then in host order.
func TestProblemOrder(t *testing.T) {
	hosts := []hostReport{
		{Host: "db1:3306", Reachable: true, Role: "primary", role: failover.RolePrimary, ServerID: 1, Cluster: "replication", Replication: replication{Status: "none"}},
		{Host: "db2:3306", Reachable: true, Role: "standby", role: failover.RoleStandby, ServerID: 2, Cluster: "replication",
			Replication: replication{Status: "replica", State: "stopped", SourceServerID: 1, IORunning: "No", SQLRunning: "No"}},
		{Host: "db3:3306", Reachable: true, Role: "standby", role: failover.RoleStandby, ServerID: 3, Cluster: "replication",
			Replication: replication{Status: "replica", State: "broken", SourceServerID: 1, IORunning: "Yes", SQLRunning: "No", SQLErrno: 1062, LastError: "Duplicate entry"}},
		{Host: "db4:3306", Role: "unknown", Failure: "timeout", Error: "no answer within 3s", Replication: replication{Status: "unknown (not reached)"}},
	}
	r := judge(t, "app:pw@tcp(db1:3306,db2:3306,db3:3306,db4:3306)/app", hosts)
	want := "down@db4:3306 replication_broken@db3:3306 replication_stopped@db2:3306 read_timeout"
	if got := kinds(r); got != want {
		t.Fatalf("problems %s, want %s", got, want)
	}
	if !strings.HasPrefix(r.Headline, "degraded: db4:3306: does not answer within 3s: frozen or hung. 3 more problems below") {
		t.Errorf("headline %q", r.Headline)
	}
	if p := r.Problems[0]; strings.Contains(p.Fix, "start the server;") || !strings.Contains(p.Fix, "look at the machine") {
		t.Errorf("a frozen host's fix: %q", p.Fix)
	}
	if p := r.Problems[1]; !strings.Contains(p.Problem, "replication from db1:3306 is broken") || !strings.Contains(p.Fix, "do not promote it") {
		t.Errorf("broken replica: %+v", p)
	}
}

// TestGaleraReadiness: each reason the driver gives a Galera node that is not ready
// (package failover, Readiness), and the minority bootstrapped apart.
func TestGaleraReadiness(t *testing.T) {
	ok := galeraStatus{Ready: "ON", ClusterStatus: "Primary", LocalState: "4", LocalStateComment: "Synced", ClusterSize: 3, StateUUID: "u1", Desync: "OFF", RejectQueries: "NONE"}
	tests := []struct {
		name   string
		change func(*galeraStatus)
		sst    string
		want   string
	}{
		{"synced", func(*galeraStatus) {}, "rsync", ""},
		{"non-Primary", func(g *galeraStatus) { g.ClusterStatus = "non-Primary" }, "rsync", "wsrep_cluster_status=non-Primary"},
		{"not ready", func(g *galeraStatus) { g.Ready = "OFF" }, "rsync", "wsrep_ready=OFF"},
		{"rejecting", func(g *galeraStatus) { g.RejectQueries = "ALL" }, "rsync", "wsrep_reject_queries=ALL"},
		{"desynced", func(g *galeraStatus) { g.Desync = "ON"; g.LocalState = "2" }, "rsync", "wsrep_desync=ON"},
		{"joining", func(g *galeraStatus) { g.LocalState = "1"; g.LocalStateComment = "Joining" }, "rsync", "wsrep_local_state=1 (Joining)"},
		{"blocking donor", func(g *galeraStatus) { g.LocalState = "2"; g.LocalStateComment = "Donor/Desynced" }, "rsync", "wsrep_local_state=2"},
		{"mariabackup donor", func(g *galeraStatus) { g.LocalState = "2" }, "mariabackup", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := ok
			tt.change(&g)
			got := galeraReady(&g, tt.sst)
			if tt.want == "" && got != "" || !strings.HasPrefix(got, tt.want) {
				t.Fatalf("galeraReady = %q, want %q", got, tt.want)
			}
			if got != "" && strings.HasPrefix(notReadyFix(got), "read the server's error log") {
				t.Errorf("no fix worded for %q", got)
			}
		})
	}

	// Node 3 bootstrapped apart, alone: not ready although its own status is fine; node 1
	// is the writer (the first ready node), node 2 not ready (non-Primary). Several
	// writable Galera nodes are no "more than one writer" problem.
	node := func(host string, g galeraStatus, id int64) hostReport {
		return hostReport{Host: host, Reachable: true, Role: "primary", role: failover.RolePrimary, ServerID: id, Cluster: "galera", Galera: &g,
			NotReady: galeraReady(&g, "rsync"), Replication: replication{Status: "none"}}
	}
	apart := ok
	apart.ClusterSize, apart.StateUUID = 1, "u2"
	split := ok
	split.ClusterStatus, split.ClusterSize = "non-Primary", 1
	r := judge(t, "app:pw@tcp(db1:3306,db2:3306,db3:3306)/app?readTimeout=2s", []hostReport{node("db1:3306", ok, 1), node("db2:3306", split, 2), node("db3:3306", apart, 3)})
	if got := kinds(r); got != "not_ready@db2:3306 not_ready@db3:3306" {
		t.Fatalf("problems %s", got)
	}
	if r.Plan.Writer != "db1:3306" || !strings.Contains(r.Problems[1].Problem, "a minority bootstrapped apart") || !strings.Contains(r.Problems[0].Problem, "outside the Primary component") {
		t.Errorf("plan %+v, problems %+v", r.Plan, r.Problems)
	}
}

func TestHelpExitsZero(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}, {"help"}, {"check", "--help"}, {"check", "-h"}} {
		var out, errOut bytes.Buffer
		if code := run(context.Background(), args, &out, &errOut); code != exitHealthy || !strings.Contains(out.String(), "usage: mysqlfailover check") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 0 and the usage on stdout", args, code, out.String(), errOut.String())
		}
	}
}

// TestWriterNotFirst: a writer the DSN does not list first is rated by what writes get:
// with targetSessionAttrs=any on a read-only host 1290, on the writable secondary itself
// 1792 (failOverReadOnly makes its sessions read-only): unusable; with
// failOverReadOnly=false writes work there (degraded); read-write finds it (degraded).
// The fix offers targetSessionAttrs=read-write first, which finds the writer after this
// promotion and the next ones (a new host order must be deployed again at each); with
// read-write already set, nothing is needed for the writes.
func TestWriterNotFirst(t *testing.T) {
	promoted := func() []hostReport {
		h := deadPrimary()
		h[1].role, h[1].Role, h[1].ReadOnly = failover.RolePrimary, "primary", "OFF"
		h[1].Replication = replication{Status: "none"}
		return h
	}
	for _, tt := range []struct {
		params, headline string
		exit             int
	}{
		{"readTimeout=2s", "unusable: the writer is db2:3306, not the list's primary db1:3306: every write fails with error 1792 on db2:3306", exitUnusable},
		{"readTimeout=2s&failOverReadOnly=false", "degraded: db1:3306: does not answer", exitDegraded},
		{"readTimeout=2s&targetSessionAttrs=read-write", "degraded: db1:3306: does not answer", exitDegraded},
	} {
		r := judge(t, "app:pw@tcp(db1:3306,db2:3306,db3:3306)/app?"+tt.params, promoted())
		if r.ExitCode != tt.exit || !strings.HasPrefix(r.Headline, tt.headline) {
			t.Errorf("%s: exit %d, headline %q; want %d, %q", tt.params, r.ExitCode, r.Headline, tt.exit, tt.headline)
		}
		var fix string
		for _, p := range r.Problems {
			if p.Kind == "writer_not_first" {
				fix = p.Fix
			}
		}
		switch {
		case strings.Contains(tt.params, "read-write"):
			if !strings.HasPrefix(fix, "nothing is needed for the writes: targetSessionAttrs=read-write finds db2:3306") {
				t.Errorf("%s: fix %q, want nothing needed", tt.params, fix)
			}
		case !strings.HasPrefix(fix, "add targetSessionAttrs=read-write to the DSN") || !strings.Contains(fix, "or put db2:3306 first in the DSN"):
			t.Errorf("%s: fix %q, want targetSessionAttrs=read-write first, then the host order", tt.params, fix)
		}
	}
}

// TestHeadlineCount: the headline says how many more problems follow in a sentence of
// its own, never in parentheses after the last item ("to promote: X (and 1 more
// below)" read as a second candidate).
func TestHeadlineCount(t *testing.T) {
	r := judge(t, "app:pw@tcp(db1:3306,db2:3306,db3:3306)/app?readTimeout=2s", deadPrimary())
	if !strings.HasSuffix(r.Headline, "; to promote: db3:3306. 1 more problem below") || strings.Contains(r.Headline, "(and") {
		t.Errorf("headline %q", r.Headline)
	}
}

// TestClosedAndBlockedHosts: a host whose connection is closed before the handshake (a
// proxy in front of a stopped server) gets no FLUSH HOSTS advice, which cannot apply; a
// server that blocked the client's address (1129, max_connect_errors) gets it.
func TestClosedAndBlockedHosts(t *testing.T) {
	hosts := func(failure, err string) []hostReport {
		h := deadPrimary()
		h[0].Failure, h[0].Error = failure, err
		return h
	}
	for _, tt := range []struct {
		failure, err, problem string
		flush                 bool
	}{
		{"closed", "connection closed by the server during the handshake: invalid connection", "the server behind a proxy or load balancer is down", false},
		{"blocked", "Error 1129 (HY000): Host '10.0.0.9' is blocked because of many connection errors; unblock with 'mariadb-admin flush-hosts'", "blocked the client's address", true},
	} {
		r := judge(t, "app:pw@tcp(db1:3306,db2:3306,db3:3306)/app?readTimeout=2s", hosts(tt.failure, tt.err))
		var down problem
		for _, p := range r.Problems {
			if p.Kind == "down" {
				down = p
			}
		}
		if !strings.Contains(down.Problem, tt.problem) || strings.Contains(down.Fix, "FLUSH HOSTS") != tt.flush {
			t.Errorf("%s: %+v; want %q, FLUSH HOSTS advised %v", tt.failure, down, tt.problem, tt.flush)
		}
	}
	if got := failureOf(context.Background(), &mysql.MySQLError{Number: 1129, Message: "Host 'x' is blocked"}); got != "blocked" {
		t.Errorf("failureOf(1129) = %q, want blocked", got)
	}
}

// twoWriters is a report of three hosts after a promotion that did not fence the old
// primary: db1 back writable and replicating from no one, db2 promoted (writable), db3
// replicating from db2, which it names by another address (matched by server_id).
func twoWriters() []hostReport {
	writer := func(host string, id int64) hostReport {
		return hostReport{Host: host, Reachable: true, Role: "primary", role: failover.RolePrimary, ServerID: id, ReadOnly: "OFF",
			Cluster: "replication", Replication: replication{Status: "none"}}
	}
	return []hostReport{
		writer("db1:3306", 1),
		writer("db2:3306", 2),
		{Host: "db3:3306", Reachable: true, Role: "standby", role: failover.RoleStandby, ServerID: 3, ReadOnly: "ON", Cluster: "replication",
			Replication: replication{Status: "replica", State: "running", Source: "10.0.0.2:3306", SourceServerID: 2, IORunning: "Yes", SQLRunning: "Yes", LagSeconds: lag(0)}},
	}
}

// TestTwoWriters: two writable hosts are one problem naming both, the replicas each has,
// and the fix (fence the one no replica follows); the plan's writer is the one they
// follow, where a new read-write pool goes. With targetSessionAttrs any, whose new
// connections write to the list's first host, no replica following it, it is unusable.
// A Galera cluster and a multi-primary group have their writers by design: no problem.
func TestTwoWriters(t *testing.T) {
	for _, tt := range []struct {
		params, headline string
		exit             int
	}{
		{"readTimeout=2s&targetSessionAttrs=read-write", "degraded: two writers: db1:3306 and db2:3306 are writable (fence db1:3306)", exitDegraded},
		{"readTimeout=2s", "unusable: two writers: db1:3306 and db2:3306 are writable: new connections write to db1:3306, which no replica follows (fence db1:3306)", exitUnusable},
	} {
		r := judge(t, "app:pw@tcp(db1:3306,db2:3306,db3:3306)/app?"+tt.params, twoWriters())
		if r.ExitCode != tt.exit || r.Headline != tt.headline {
			t.Errorf("%s: exit %d, headline %q; want %d, %q", tt.params, r.ExitCode, r.Headline, tt.exit, tt.headline)
		}
		if r.Plan.Writer != "db2:3306" || len(r.Problems) != 1 || r.Problems[0].Kind != "writers" {
			t.Fatalf("%s: writer %q, problems %s; want db2:3306, writers", tt.params, r.Plan.Writer, kinds(r))
		}
		p := r.Problems[0]
		for _, want := range []string{"db1:3306 (followed by no replica)", "db2:3306 (followed by db3:3306)"} {
			if !strings.Contains(p.Problem, want) {
				t.Errorf("%s: problem %q does not say %q", tt.params, p.Problem, want)
			}
		}
		if !strings.HasPrefix(p.Fix, "fence db1:3306, which no replica follows: SET GLOBAL read_only=ON on it") {
			t.Errorf("%s: fix %q", tt.params, p.Fix)
		}
	}
	r := judge(t, "app:pw@tcp(db1:3306,db2:3306,db3:3306)/app?readTimeout=2s&targetSessionAttrs=read-write", twoWriters())
	if r.Plan.Connect != "db2:3306" {
		t.Errorf("read-write: a new connection goes to %q, want db2:3306 (the writer the replicas follow)", r.Plan.Connect)
	}
	for _, cluster := range []string{"galera", "group"} {
		h := twoWriters()
		for i := range h {
			h[i].Cluster = cluster
		}
		if r := judge(t, "app:pw@tcp(db1:3306,db2:3306,db3:3306)/app?readTimeout=2s", h); strings.Contains(kinds(r), "writers") {
			t.Errorf("%s: problems %s, want no writers problem", cluster, kinds(r))
		}
	}
}
