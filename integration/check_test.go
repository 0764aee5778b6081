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
	Status   string `json:"status"`
	ExitCode int    `json:"exit_code"`
	Hosts    []struct {
		Host        string `json:"host"`
		DC          string `json:"dc"`
		Reachable   bool   `json:"reachable"`
		Error       string `json:"error"`
		Version     string `json:"version"`
		ReadOnly    string `json:"read_only"`
		Role        string `json:"role"`
		Replication struct {
			Status     string `json:"status"`
			Source     string `json:"source"`
			LagSeconds *int64 `json:"lag_seconds"`
			Privilege  string `json:"privilege_needed"`
		} `json:"replication"`
		TLS bool `json:"tls"`
	} `json:"hosts"`
	Plan struct {
		Writer  string   `json:"writer"`
		Connect string   `json:"connect"`
		Ignored []string `json:"ignored"`
	} `json:"plan"`
	Problems []struct {
		Severity string `json:"severity"`
		Problem  string `json:"problem"`
		Fix      string `json:"fix"`
	} `json:"problems"`
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

func (r *checkReport) hasProblem(sub string) bool {
	for _, p := range r.Problems {
		if strings.Contains(p.Problem, sub) && p.Fix != "" {
			return true
		}
	}
	return false
}

// TestCheckCommand: `mysqlfailover check` against a 3-node cluster, healthy (as the app
// user, who may not read replication status, and as root, who may), with the primary
// demoted and node 2 promoted, with node 3 killed, node 2 frozen (SIGSTOP; --timeout 1s
// bounds it), and with every node gone: exit codes 0, 1, 1, 1, 2, the JSON fields, and
// never the password.
func TestCheckCommand(t *testing.T) {
	bin := buildCheck(t)
	c := harness.Start(t, 3)
	ctx := ctxT(t, 2*time.Minute)
	appDSN := c.DSN("readTimeout=2s")
	var addrs []string
	for _, n := range c.Nodes() {
		addrs = append(addrs, n.Addr())
	}
	rootDSN := "root@tcp(" + strings.Join(addrs, ",") + ")/?readTimeout=2s"
	// The harness lets the app user read the replica status (for replicaReads' lag probe):
	// taken back here, so that check meets a user without the privilege.
	must(t, c.RevokeReplicaMonitor(ctx))
	must(t, c.WaitReplicasCaughtUp(ctx))

	code, text, _ := runCheck(t, bin, appDSN)
	if code != 0 {
		t.Fatalf("healthy cluster, app user: exit %d, want 0:\n%s", code, text)
	}
	t.Logf("healthy, app user:\n%s", text)
	code, _, r := runCheck(t, bin, "--json", appDSN)
	if code != 0 || r.Status != "healthy" || len(r.Hosts) != 3 || r.Plan.Writer != c.Node(1).ProxyAddr() || r.Plan.Connect != c.Node(1).ProxyAddr() {
		t.Fatalf("healthy --json: exit %d, %+v", code, r)
	}
	for i, h := range r.Hosts {
		want := "standby"
		if i == 0 {
			want = "primary"
		}
		if !h.Reachable || h.Role != want || h.Version == "" || h.TLS || h.Replication.Status != "unknown (no privilege)" || h.Replication.Privilege == "" {
			t.Fatalf("host %d as the app user: %+v, want reachable, role %s, replication unknown (no privilege)", i+1, h, want)
		}
	}
	code, text, r = runCheck(t, bin, "--json", rootDSN)
	if code != 0 {
		t.Fatalf("healthy cluster, root: exit %d, want 0:\n%s", code, text)
	}
	if rep := r.Hosts[0].Replication; rep.Status != "none" {
		t.Errorf("node 1 replication as root: %+v, want none", rep)
	}
	for i := 1; i < 3; i++ {
		rep := r.Hosts[i].Replication
		if rep.Status != "replica" || rep.LagSeconds == nil || !strings.HasSuffix(rep.Source, ":"+portOf(c.Node(1).Addr())) {
			t.Errorf("node %d replication as root: %+v, want a replica of node 1 with a lag", i+1, rep)
		}
	}
	_, text, _ = runCheck(t, bin, rootDSN)
	t.Logf("healthy, root:\n%s", text)

	// Data centres: with localDC=west node 3 is the plan's primary, node 1 the one east
	// host used, node 2 ignored; the writer (node 1) is not where new connections go.
	labelled := fmt.Sprintf("%s:%s@tcp(%s;dc=east,%s;dc=east,%s;dc=west)/%s?readTimeout=2s&localDC=west&usedHostsPerRemoteDC=1",
		harness.AppUser, harness.AppPassword, c.Node(1).ProxyAddr(), c.Node(2).ProxyAddr(), c.Node(3).ProxyAddr(), harness.AppDB)
	code, text, r = runCheck(t, bin, "--json", labelled)
	if code != 1 || r.Plan.Connect != c.Node(3).ProxyAddr() || len(r.Plan.Ignored) != 1 || r.Plan.Ignored[0] != c.Node(2).ProxyAddr() ||
		r.Hosts[2].DC != "west" || !r.hasProblem("not the list's primary") {
		t.Fatalf("localDC=west: exit %d, %+v\n%s", code, r, text)
	}

	// Demoted: node 1 read-only, node 2 writable (an orchestrator's promotion).
	must(t, c.Node(1).SetReadOnly(ctx, true))
	must(t, c.Node(2).SetReadOnly(ctx, false))
	code, text, r = runCheck(t, bin, "--json", appDSN)
	if code != 1 || r.Plan.Writer != c.Node(2).ProxyAddr() || r.Plan.Connect != c.Node(1).ProxyAddr() || !r.hasProblem("not the list's primary") {
		t.Fatalf("demoted primary, any: exit %d, %+v\n%s", code, r, text)
	}
	code, text, r = runCheck(t, bin, "--json", c.DSN("readTimeout=2s&targetSessionAttrs=read-write"))
	if code != 1 || r.Plan.Connect != c.Node(2).ProxyAddr() {
		t.Fatalf("demoted primary, read-write: exit %d, %+v\n%s", code, r, text)
	}
	_, text, _ = runCheck(t, bin, c.DSN("readTimeout=2s&targetSessionAttrs=read-write"))
	t.Logf("demoted, read-write:\n%s", text)
	must(t, c.Node(2).SetReadOnly(ctx, true))
	must(t, c.Node(1).SetReadOnly(ctx, false))

	// Down and frozen.
	must(t, c.Node(3).Kill())
	must(t, c.Node(2).Freeze())
	defer func() { _ = c.Node(2).Thaw() }()
	start := time.Now()
	code, text, r = runCheck(t, bin, "--json", "--timeout", "1s", appDSN)
	took := time.Since(start)
	if code != 1 || !r.Hosts[0].Reachable || r.Hosts[1].Reachable || r.Hosts[2].Reachable || !strings.Contains(r.Hosts[1].Error, "within 1s") {
		t.Fatalf("node 2 frozen, node 3 killed: exit %d, %+v\n%s", code, r, text)
	}
	if took > 15*time.Second {
		t.Errorf("check with a frozen host took %v: --timeout 1s does not bound it", took)
	}
	_, text, _ = runCheck(t, bin, "--timeout", "1s", appDSN)
	t.Logf("degraded (node 2 frozen, node 3 killed), took %v:\n%s", took, text)

	// Unusable: nothing answers.
	must(t, c.Node(1).Kill())
	code, text, r = runCheck(t, bin, "--json", "--timeout", "1s", appDSN)
	if code != 2 || r.Status != "unusable" || r.Plan.Connect != "" || !r.hasProblem("a new connection would fail") {
		t.Fatalf("every node gone: exit %d, %+v\n%s", code, r, text)
	}
}

func portOf(addr string) string { return addr[strings.LastIndexByte(addr, ':')+1:] }
