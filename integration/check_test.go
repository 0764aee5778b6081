package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// checkReport is the part of `mysqlfailover check --json` the test reads.
type checkReport struct {
	Headline string `json:"headline"`
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	Hosts    []struct {
		Host        string `json:"host"`
		DC          string `json:"dc"`
		Reachable   bool   `json:"reachable"`
		Error       string `json:"error"`
		Failure     string `json:"failure"`
		Version     string `json:"version"`
		ServerID    int64  `json:"server_id"`
		GTID        string `json:"gtid"`
		ReadOnly    string `json:"read_only"`
		Role        string `json:"role"`
		Cluster     string `json:"cluster"`
		NotReady    string `json:"not_ready"`
		Replication struct {
			Status     string `json:"status"`
			State      string `json:"state"`
			Source     string `json:"source"`
			SourceHost string `json:"source_host"`
			LagSeconds *int64 `json:"lag_seconds"`
			Privilege  string `json:"privilege_needed"`
		} `json:"replication"`
		TLS bool `json:"tls"`
	} `json:"hosts"`
	Plan struct {
		Writer  string   `json:"writer"`
		Connect string   `json:"connect"`
		Ignored []string `json:"ignored"`
		Promote string   `json:"promote"`
	} `json:"plan"`
	Problems []checkProblem `json:"problems"`
}

type checkProblem struct {
	Severity string `json:"severity"`
	Kind     string `json:"kind"`
	Host     string `json:"host"`
	Problem  string `json:"problem"`
	Fix      string `json:"fix"`
}

// buildCheck builds cmd/mysqlfailover (its own module) into a temporary directory.
func buildCheck(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "mysqlfailover")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = filepath.Join("..", "cmd", "mysqlfailover")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build cmd/mysqlfailover: %v\n%s", err, out)
	}
	return bin
}

// runCheck runs `mysqlfailover check` with args and returns the exit code, the output
// (stdout and stderr) and, with --json, the parsed report. The password never appears.
func runCheck(t *testing.T, bin string, args ...string) (int, string, *checkReport) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"check"}, args...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run check: %v", err)
	}
	out := stdout.String() + stderr.String()
	if strings.Contains(out, harness.AppPassword) {
		t.Fatalf("the password %q is in the output of check %v:\n%s", harness.AppPassword, args, out)
	}
	var r *checkReport
	if len(args) > 0 && args[0] == "--json" {
		r = &checkReport{}
		if err := json.Unmarshal(stdout.Bytes(), r); err != nil {
			t.Fatalf("check --json: %v\n%s", err, out)
		}
		if r.ExitCode != code {
			t.Fatalf("exit_code %d in the JSON, process exit %d", r.ExitCode, code)
		}
	}
	return code, out, r
}

// checkBoth runs check on dsn (with extra flags first) as text and as JSON, and returns
// the exit code, the text and the report. The text's first line is the JSON's headline,
// and the problems of the text are those of the JSON, in the same order.
func checkBoth(t *testing.T, bin string, dsn string, flags ...string) (int, string, *checkReport) {
	t.Helper()
	code, text, _ := runCheck(t, bin, append(flags, dsn)...)
	jcode, _, r := runCheck(t, bin, append(append([]string{"--json"}, flags...), dsn)...)
	if code != jcode {
		t.Fatalf("exit %d as text, %d as JSON:\n%s", code, jcode, text)
	}
	first, _, _ := strings.Cut(text, "\n")
	if first != r.Headline {
		t.Errorf("text's first line %q, JSON headline %q", first, r.Headline)
	}
	at := 0
	for i, p := range r.Problems {
		k := strings.Index(text[at:], fmt.Sprintf("%d. [%s] ", i+1, p.Severity))
		if k < 0 {
			t.Errorf("problem %d of the JSON (%s) not in the text in that place:\n%s", i+1, p.Kind, text)
			break
		}
		at += k + 1
	}
	return code, text, r
}

// kinds returns the kinds of r's problems, with the host's node number when a host is
// named ("down@1"), in order.
func (r *checkReport) kinds(c *harness.Cluster) []string {
	var out []string
	for _, p := range r.Problems {
		k := p.Kind
		if p.Host != "" {
			k += fmt.Sprintf("@%d", c.NodeByAddr(p.Host))
		}
		out = append(out, k)
	}
	return out
}

func (r *checkReport) hasProblem(sub string) bool {
	for _, p := range r.Problems {
		if strings.Contains(p.Problem, sub) && p.Fix != "" {
			return true
		}
	}
	return false
}

// wantKinds fails t unless r's problems are exactly want, in order (see kinds).
func wantKinds(t *testing.T, c *harness.Cluster, r *checkReport, text string, want ...string) {
	t.Helper()
	if got := r.kinds(c); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("problems %v, want %v in that order:\n%s", got, want, text)
	}
}

// wantHeadline fails t unless r's headline starts with prefix and contains each of subs.
func wantHeadline(t *testing.T, r *checkReport, text, prefix string, subs ...string) {
	t.Helper()
	ok := strings.HasPrefix(r.Headline, prefix)
	for _, s := range subs {
		ok = ok && strings.Contains(r.Headline, s)
	}
	if !ok {
		t.Fatalf("headline %q, want it to start with %q and say %q:\n%s", r.Headline, prefix, subs, text)
	}
}

// TestCheckCommand: `mysqlfailover check` against one 3-node cluster, in states an
// operator meets, each asserting the exit code, the headline (the first line) and the
// problems in their order, and never the password:
//   - healthy (as the app user without the privilege to read replication, then with it,
//     and as root): exit 0;
//   - localDC, and a promotion the DSN does not follow (writer not first): exit 2 with
//     targetSessionAttrs=any (every write fails with 1290), 1 with read-write (the
//     driver finds the writer);
//   - no writer (node 1 made read-only, nothing promoted): exit 2 for any and for
//     read-write, each worded for what its callers get, with the replica to promote;
//     degraded for standby;
//   - replication broken on node 2 (a duplicate key stops its SQL thread) and stopped on
//     node 3: exit 1, the broken one first;
//   - node 3 frozen (SIGSTOP; --timeout 1s bounds it): exit 1, worded as a hung host;
//   - node 1 killed (a dead primary) for any and for read-write: exit 2, no writer
//     first, then node 1, whose problem explains its replicas' connecting IO threads
//     (no problem of their own), the replica to promote named;
//   - every node gone: exit 2, "a new connection would fail";
//   - a Galera node (a cluster of its own) ready, desynced, rejecting queries
//     (checkGalera).
func TestCheckCommand(t *testing.T) {
	bin := buildCheck(t)
	c := harness.Start(t, 3)
	ctx := ctxT(t, 3*time.Minute)
	appDSN := c.DSN("readTimeout=2s")
	rwDSN := c.DSN("readTimeout=2s&targetSessionAttrs=read-write")
	var addrs []string
	for _, n := range c.Nodes() {
		addrs = append(addrs, n.Addr())
	}
	rootDSN := "root@tcp(" + strings.Join(addrs, ",") + ")/?readTimeout=2s"
	h1, h2, h3 := c.Node(1).ProxyAddr(), c.Node(2).ProxyAddr(), c.Node(3).ProxyAddr()
	must(t, c.WaitReplicasCaughtUp(ctx))

	t.Run("healthy", func(t *testing.T) {
		// The harness lets the app user read the replica status (for replicaReads' lag
		// probe): taken back here, so that check meets a user without the privilege.
		must(t, c.RevokeReplicaMonitor(ctx))
		code, text, r := checkBoth(t, bin, appDSN)
		if code != 0 || r.Status != "healthy" || len(r.Hosts) != 3 || r.Plan.Writer != h1 || r.Plan.Connect != h1 || len(r.Problems) != 0 {
			t.Fatalf("healthy, app user: exit %d, %+v\n%s", code, r, text)
		}
		wantHeadline(t, r, text, "healthy: every host answers; writes go to "+h1)
		for i, h := range r.Hosts {
			want := "standby"
			if i == 0 {
				want = "primary"
			}
			if !h.Reachable || h.Role != want || h.Version == "" || h.TLS || h.Replication.Status != "unknown (no privilege)" || h.Replication.Privilege == "" ||
				h.ServerID == 0 || h.GTID == "" || h.Cluster != "replication" || h.NotReady != "" {
				t.Fatalf("host %d as the app user: %+v, want reachable, role %s, replication unknown (no privilege), a server id and GTID", i+1, h, want)
			}
		}
		t.Logf("healthy, app user without the privilege:\n%s", text)
		must(t, c.GrantReplicaMonitor(ctx))
		code, text, r = checkBoth(t, bin, appDSN)
		if code != 0 {
			t.Fatalf("healthy, app user with the privilege: exit %d\n%s", code, text)
		}
		wantHeadline(t, r, text, "healthy: every host answers; writes go to "+h1, "2 replicas running")
		for i := 1; i < 3; i++ {
			if rep := r.Hosts[i].Replication; rep.State != "running" || rep.SourceHost != h1 || rep.LagSeconds == nil {
				t.Errorf("node %d: %+v, want running from node 1 (matched by server id), with a lag", i+1, rep)
			}
		}
		code, text, r = checkBoth(t, bin, rootDSN)
		if code != 0 {
			t.Fatalf("healthy cluster, root: exit %d, want 0:\n%s", code, text)
		}
		if rep := r.Hosts[0].Replication; rep.Status != "none" {
			t.Errorf("node 1 replication as root: %+v, want none", rep)
		}
		for i := 1; i < 3; i++ {
			rep := r.Hosts[i].Replication
			if rep.Status != "replica" || rep.LagSeconds == nil || !strings.HasSuffix(rep.Source, ":"+portOf(c.Node(1).Addr())) || rep.SourceHost != c.Node(1).Addr() {
				t.Errorf("node %d replication as root: %+v, want a replica of node 1 with a lag", i+1, rep)
			}
		}
		t.Logf("healthy, root:\n%s", text)
	})

	t.Run("roles", func(t *testing.T) {
		// Data centres: with localDC=west node 3 is the plan's primary, node 1 the one east
		// host used, node 2 ignored; the writer (node 1) is not where new connections go,
		// so with targetSessionAttrs=any every write fails (1290 on node 3): unusable.
		labelled := fmt.Sprintf("%s:%s@tcp(%s;dc=east,%s;dc=east,%s;dc=west)/%s?readTimeout=2s&localDC=west&usedHostsPerRemoteDC=1",
			harness.AppUser, harness.AppPassword, h1, h2, h3, harness.AppDB)
		code, text, r := checkBoth(t, bin, labelled)
		if code != 2 || r.Plan.Connect != h3 || len(r.Plan.Ignored) != 1 || r.Plan.Ignored[0] != h2 || r.Hosts[2].DC != "west" {
			t.Fatalf("localDC=west: exit %d, %+v\n%s", code, r, text)
		}
		wantKinds(t, c, r, text, "writer_not_first")

		// Demoted: node 1 read-only, node 2 writable (an orchestrator's promotion).
		must(t, c.Node(1).SetReadOnly(ctx, true))
		must(t, c.Node(2).SetReadOnly(ctx, false))
		defer func() {
			must(t, c.Node(2).SetReadOnly(ctx, true))
			must(t, c.Node(1).SetReadOnly(ctx, false))
		}()
		code, text, r = checkBoth(t, bin, appDSN)
		if code != 2 || r.Plan.Writer != h2 || r.Plan.Connect != h1 || !r.hasProblem("every write there fails with 1290") {
			t.Fatalf("demoted primary, any: exit %d, %+v\n%s", code, r, text)
		}
		wantKinds(t, c, r, text, "writer_not_first")
		wantHeadline(t, r, text, "unusable: the writer is "+h2+", not the list's primary "+h1+": every write fails with error 1290 on "+h1)
		// The fix that holds after the next promotion too comes first.
		if fix := r.Problems[0].Fix; !strings.HasPrefix(fix, "add targetSessionAttrs=read-write to the DSN") || !strings.Contains(fix, "or put "+h2+" first in the DSN") {
			t.Errorf("demoted primary, any: fix %q, want targetSessionAttrs=read-write first, then the host order", fix)
		}
		code, text, r = checkBoth(t, bin, rwDSN)
		if code != 1 || r.Plan.Connect != h2 {
			t.Fatalf("demoted primary, read-write: exit %d, %+v\n%s", code, r, text)
		}
		for _, p := range r.Problems {
			if p.Kind == "writer_not_first" && !strings.HasPrefix(p.Fix, "nothing is needed for the writes") {
				t.Errorf("demoted primary, read-write: fix %q, want nothing needed for the writes", p.Fix)
			}
		}
		t.Logf("demoted, read-write:\n%s", text)
	})

	t.Run("no writer", func(t *testing.T) {
		must(t, c.Node(1).SetReadOnly(ctx, true)) // and nothing promoted
		defer func() { must(t, c.Node(1).SetReadOnly(ctx, false)) }()
		code, text, r := checkBoth(t, bin, appDSN)
		if code != 2 || r.Plan.Writer != "" || r.Plan.Connect != h1 || (r.Plan.Promote != h2 && r.Plan.Promote != h3) {
			t.Fatalf("no writer, any: exit %d, plan %+v\n%s", code, r.Plan, text)
		}
		wantKinds(t, c, r, text, "no_writer")
		wantHeadline(t, r, text, "unusable: no writer (the primary "+h1+" is read-only, nothing promoted): every write fails with error 1290 on "+h1,
			"to promote: "+r.Plan.Promote)
		t.Logf("no writer, any:\n%s", text)
		code, text, r = checkBoth(t, bin, rwDSN)
		if code != 2 || r.Plan.Connect != "" {
			t.Fatalf("no writer, read-write: exit %d, plan %+v\n%s", code, r.Plan, text)
		}
		wantKinds(t, c, r, text, "no_writer") // not also no_host: one cause, one problem
		wantHeadline(t, r, text, "unusable: no writer", "*failover.NoHostAvailableError", "to promote: ")
		code, text, r = checkBoth(t, bin, c.DSN("readTimeout=2s&targetSessionAttrs=standby"))
		if code != 1 {
			t.Fatalf("no writer, standby: exit %d\n%s", code, text)
		}
		wantKinds(t, c, r, text, "no_writer")
		wantHeadline(t, r, text, "degraded: no writer", "this DSN only reads")
	})

	t.Run("replication", func(t *testing.T) {
		// Node 2 broken: a row written there alone (not in its binary log) makes the
		// primary's insert of the same key fail there (1062) and stop its SQL thread.
		// Node 3 stopped by hand.
		must(t, c.Node(1).Exec(ctx, "CREATE TABLE app.checkrep (id INT PRIMARY KEY)"))
		must(t, c.WaitReplicasCaughtUp(ctx))
		conn, err := c.Node(2).Admin().Conn(ctx)
		must(t, err)
		_, err = conn.ExecContext(ctx, "SET SESSION sql_log_bin = 0")
		must(t, err)
		_, err = conn.ExecContext(ctx, "INSERT INTO app.checkrep VALUES (1)")
		must(t, err)
		must(t, c.Node(3).Exec(ctx, "STOP SLAVE"))
		must(t, c.Node(1).Exec(ctx, "INSERT INTO app.checkrep VALUES (1)"))
		var code int
		var text string
		var r *checkReport
		if !healthPoll(10*time.Second, func() bool {
			code, text, r = checkBoth(t, bin, appDSN)
			return r.Hosts[1].Replication.State == "broken"
		}) {
			t.Fatalf("node 2's replication not broken 10 s after the duplicate key:\n%s", text)
		}
		if code != 1 {
			t.Fatalf("broken and stopped replicas: exit %d\n%s", code, text)
		}
		wantKinds(t, c, r, text, "replication_broken@2", "replication_stopped@3")
		wantHeadline(t, r, text, "degraded: "+h2+": replication from "+h1, "broken", "error 1062")
		if p := r.Problems[1]; !strings.Contains(p.Fix, "START REPLICA") {
			t.Errorf("stopped replica's fix %q, want START REPLICA", p.Fix)
		}
		t.Logf("replication broken on node 2, stopped on node 3:\n%s", text)
		// Repaired: node 2's own row removed (the event then applies), node 3 restarted.
		_, err = conn.ExecContext(ctx, "DELETE FROM app.checkrep")
		must(t, err)
		_ = conn.Close()
		must(t, c.Node(2).Exec(ctx, "START SLAVE"))
		must(t, c.Node(3).Exec(ctx, "START SLAVE"))
		must(t, c.WaitReplicasCaughtUp(ctx))
		if code, text, _ := checkBoth(t, bin, appDSN); code != 0 {
			t.Fatalf("after the repair: exit %d\n%s", code, text)
		}
	})

	t.Run("frozen", func(t *testing.T) {
		must(t, c.Node(3).Freeze())
		defer func() { must(t, c.Node(3).Thaw()) }()
		start := time.Now()
		code, text, r := checkBoth(t, bin, appDSN, "--timeout", "1s")
		if took := time.Since(start); took > 15*time.Second {
			t.Errorf("two checks with a frozen host took %v: --timeout 1s does not bound them", took)
		}
		if code != 1 || r.Hosts[2].Reachable || r.Hosts[2].Failure != "timeout" || !strings.Contains(r.Hosts[2].Error, "within 1s") {
			t.Fatalf("node 3 frozen: exit %d, %+v\n%s", code, r.Hosts[2], text)
		}
		wantKinds(t, c, r, text, "down@3")
		wantHeadline(t, r, text, "degraded: "+h3+": does not answer within 1s", "frozen or hung")
		if p := r.Problems[0]; strings.Contains(p.Fix, "start the server") || !strings.Contains(p.Fix, "look at the machine") {
			t.Errorf("frozen host's fix %q: want it worded for a hung host, not a stopped one", p.Fix)
		}
	})

	t.Run("dead primary", func(t *testing.T) {
		must(t, c.Node(1).Kill())
		// The replicas' IO threads notice at once (kill -9 closes the socket); poll a
		// little for both to say they are connecting.
		var code int
		var text string
		var r *checkReport
		if !healthPoll(10*time.Second, func() bool {
			code, text, r = checkBoth(t, bin, appDSN)
			return r.Hosts[1].Replication.State == "connecting" && r.Hosts[2].Replication.State == "connecting"
		}) {
			t.Fatalf("the replicas' IO threads not connecting 10 s after kill -9 of the primary:\n%s", text)
		}
		if code != 2 || r.Plan.Connect != h2 || r.Plan.Promote != h2 {
			t.Fatalf("dead primary, any: exit %d, plan %+v\n%s", code, r.Plan, text)
		}
		// The replicas have no problem of their own: node 1's explains their IO threads.
		wantKinds(t, c, r, text, "no_writer", "down@1")
		wantHeadline(t, r, text, "unusable: no writer (the primary "+h1+" does not answer", "every write fails with error 1290 on "+h2, "to promote: "+h2+". 1 more problem below")
		// Node 1 is dead behind its proxy, which accepts the connection and closes it: the
		// fix is to start it, not FLUSH HOSTS (a blocked client gets error 1129 instead).
		if p := r.Problems[1]; r.Hosts[0].Failure == "closed" && (strings.Contains(p.Fix, "FLUSH HOSTS") || !strings.Contains(p.Fix, "start")) {
			t.Errorf("node 1 dead behind its proxy (%s): fix %q", r.Hosts[0].Failure, p.Fix)
		}
		t.Logf("node 1's failure: %s (%s)", r.Hosts[0].Failure, r.Hosts[0].Error)
		if p := r.Problems[1]; !strings.Contains(p.Problem, "its replicas "+h2+", "+h3+" cannot reach it either") || !strings.Contains(p.Fix, "resume from it by themselves") {
			t.Errorf("node 1's problem does not explain its replicas:\n%+v", p)
		}
		if r.Hosts[1].Replication.SourceHost != h1 {
			t.Errorf("node 2's source %+v, want node 1 (the one host without a server id)", r.Hosts[1].Replication)
		}
		t.Logf("dead primary, any:\n%s", text)
		code, text, r = checkBoth(t, bin, rwDSN)
		if code != 2 || r.Plan.Promote != h2 {
			t.Fatalf("dead primary, read-write: exit %d, plan %+v\n%s", code, r.Plan, text)
		}
		wantKinds(t, c, r, text, "no_writer", "down@1")
		wantHeadline(t, r, text, "unusable: no writer (the primary "+h1+" does not answer", "every write fails with *failover.NoHostAvailableError", "to promote: "+h2)
		t.Logf("dead primary, read-write:\n%s", text)
	})

	t.Run("all down", func(t *testing.T) {
		must(t, c.Node(2).Kill())
		must(t, c.Node(3).Kill())
		code, text, r := checkBoth(t, bin, appDSN, "--timeout", "1s")
		if code != 2 || r.Status != "unusable" || r.Plan.Connect != "" {
			t.Fatalf("every node gone: exit %d, %+v\n%s", code, r, text)
		}
		wantKinds(t, c, r, text, "no_host", "down@1", "down@2", "down@3")
		wantHeadline(t, r, text, "unusable: a new connection would fail")
	})

	t.Run("galera", func(t *testing.T) { checkGalera(t, bin) })
}

// checkGalera: check against one node of a two-node Galera cluster of its own (a DSN of
// that one host): ready, it is healthy but for the single host; desynced (wsrep_desync=ON)
// and rejecting queries (wsrep_reject_queries=ALL) it is not ready, with the server's
// reason, and no new connection would be made (exit 2: the problems no_host, then the
// node's not_ready).
func checkGalera(t *testing.T, bin string) {
	c := harness.Start(t, 2, harness.WithGalera())
	ctx := ctxT(t, time.Minute)
	dsn := c.HostDSN(1, "readTimeout=2s")
	code, text, r := checkBoth(t, bin, dsn)
	if code != 1 || r.Hosts[0].Cluster != "galera" || r.Hosts[0].NotReady != "" || r.Plan.Writer != c.Node(1).ProxyAddr() {
		t.Fatalf("ready Galera node: exit %d, %+v\n%s", code, r.Hosts[0], text)
	}
	wantKinds(t, c, r, text, "single_host")
	for _, tc := range []struct{ set, reset, reason string }{
		{"SET GLOBAL wsrep_desync=ON", "SET GLOBAL wsrep_desync=OFF", "wsrep_desync=ON"},
		{"SET GLOBAL wsrep_reject_queries=ALL", "SET GLOBAL wsrep_reject_queries=NONE", "wsrep_reject_queries=ALL"},
	} {
		must(t, c.Node(1).Exec(ctx, tc.set))
		code, text, r = checkBoth(t, bin, dsn)
		must(t, c.Node(1).Exec(ctx, tc.reset))
		if code != 2 || !strings.HasPrefix(r.Hosts[0].NotReady, tc.reason) || r.Plan.Connect != "" {
			t.Fatalf("%s: exit %d, %+v\n%s", tc.set, code, r.Hosts[0], text)
		}
		wantKinds(t, c, r, text, "no_host", "not_ready@1", "single_host")
		if p := r.Problems[1]; !strings.Contains(p.Problem, tc.reason) || !strings.Contains(p.Fix, tc.reset) {
			t.Errorf("%s: problem %+v, want the reason and the fix %q", tc.set, p, tc.reset)
		}
		t.Logf("%s:\n%s", tc.set, text)
	}
}

func portOf(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }
