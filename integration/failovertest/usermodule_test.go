package failovertest_test

import (
	"go/ast"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// userTest is a user's own test of their service, in their own module: the pool built as
// README and the Prometheus package's documentation show it, with its metrics served
// over HTTP, read before and after the primary's death.
const userTest = `package usersvc

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/integration/failovertest"
	mysqlfailoverprom "github.com/mysqlfailover/mysqlfailover/metrics/prometheus"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

func scrape(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestServiceSurvivesPrimaryKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	c := failovertest.Start(t, 1)
	cfg, err := dsn.Parse(c.DSN("readTimeout=2s"))
	if err != nil {
		t.Fatal(err)
	}
	col := mysqlfailoverprom.New()
	cn, err := mysqlfailover.NewConnector(cfg, col.Option())
	if err != nil {
		t.Fatal(err)
	}
	col.SetConnector(cn)
	reg := prometheus.NewRegistry()
	reg.MustRegister(col)
	srv := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer srv.Close()
	db := sql.OpenDB(cn)
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id INT)"); err != nil {
		t.Fatal(err)
	}
	before := scrape(t, srv.URL)
	for _, want := range []string{"mysqlfailover_host_state{", "mysqlfailover_caller_errors_total 0", "mysqlfailover_write_refusals_total 0"} {
		if !strings.Contains(before, want) {
			t.Fatalf("metrics before the kill lack %q:\n%s", want, before)
		}
	}
	if err := c.WaitReplicated(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Kill(1); err != nil {
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM t").Scan(&n); err != nil {
		t.Fatalf("read after the primary's death: %v", err)
	}
	after := scrape(t, srv.URL)
	if want := "mysqlfailover_host_active{dc=\"\",host=\"" + c.Harness().Node(2).ProxyAddr() + "\"} 1"; !strings.Contains(after, want) {
		t.Fatalf("metrics after the kill lack %q:\n%s", want, after)
	}
	t.Log("USER-MODULE-OK")
}
`

// userService is the service the examples of the package documentation run
// (runCheckout), with what the user module's TestMain checks once every test has run: no
// service outlives its test, and no two run at once.
const userService = `package usersvc

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"
)

var running, overlaps, runs, writes, failed atomic.Int64
var firstErr atomic.Value

// runCheckout is the user's service: it writes a row every 10 ms until ctx ends.
func runCheckout(ctx context.Context, db *sql.DB) {
	if running.Add(1) > 1 {
		overlaps.Add(1) // another test's service still runs
	}
	defer running.Add(-1)
	runs.Add(1)
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS checkout (id INT AUTO_INCREMENT PRIMARY KEY, at DATETIME(6))"); err != nil {
		firstErr.CompareAndSwap(nil, err.Error())
	}
	for ctx.Err() == nil {
		wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if _, err := db.ExecContext(wctx, "INSERT INTO checkout (at) VALUES (NOW(6))"); err == nil {
			writes.Add(1)
		} else if ctx.Err() == nil {
			failed.Add(1)
			firstErr.CompareAndSwap(nil, err.Error())
		}
		cancel()
		select {
		case <-ctx.Done():
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	for end := time.Now().Add(2 * time.Second); running.Load() != 0 && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	fmt.Printf("SERVICE-RUNS: %d services, %d writes, %d failed (the first: %v)\n", runs.Load(), writes.Load(), failed.Load(), firstErr.Load())
	if n := running.Load(); n != 0 {
		fmt.Printf("SERVICE-LEAK: %d services outlived their test\n", n)
		code = 1
	}
	if n := overlaps.Load(); n != 0 {
		fmt.Printf("SERVICE-OVERLAP: %d services started while another test's still ran\n", n)
		code = 1
	}
	os.Exit(code)
}
`

// TestUserModule proves that a reader who follows README alone gets a working service
// with metrics, and that the fixture's examples are bounded by their tests. It builds a
// module of a user's own in a temporary directory outside the repository: its go.mod is
// README's Install block as it stands (the checkout's path for /path/to/mysqlfailover),
// `go mod tidy` resolves every module it imports (the driver, metrics/prometheus, the
// integration module's failovertest) from those replace lines alone, and `go test` runs
// userTest (a pool built as README shows, its Prometheus metrics scraped before and
// after kill -9 of the primary) and both examples of this package's documentation,
// extracted from it, in one file with a service (runCheckout) that records whether it
// outlived its test or overlapped the next one's. It skips with -short.
func TestUserModule(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: building a module of its own takes tens of seconds")
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH")
	}
	_, file, _, _ := runtime.Caller(0)
	integ := filepath.Dir(filepath.Dir(file))
	root := filepath.Dir(integ)
	dir := t.TempDir()

	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	must(t, err)
	install := installBlock(string(readme))
	if install == "" {
		t.Fatal("README.md has no Install block (the replace lines of a user's go.mod)")
	}
	goMod := "module example.com/usersvc\n\ngo 1.26.0\n\n" + strings.ReplaceAll(install, "/path/to/mysqlfailover", root) + "\n"
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(goMod), 0o644))
	sum, err := os.ReadFile(filepath.Join(integ, "go.sum"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "svc_test.go"), []byte(userTest), 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "service_test.go"), []byte(userService), 0o644))
	examples := docExamples(t, filepath.Join(integ, "failovertest", "failovertest.go"))
	if len(examples) != 2 {
		t.Fatalf("%d examples in failovertest's package documentation, want 2 (the replication and Galera tests)", len(examples))
	}
	src := "package usersvc\n\nimport (\n\t\"context\"\n\t\"database/sql\"\n\t\"sync\"\n\t\"testing\"\n\n" +
		"\t_ \"github.com/mysqlfailover/mysqlfailover\"\n\t\"github.com/mysqlfailover/mysqlfailover/integration/failovertest\"\n)\n\n" +
		"var _, _ = context.Background, sync.WaitGroup{} // whatever the examples use\n\n" +
		strings.Join(examples, "\n")
	must(t, os.WriteFile(filepath.Join(dir, "examples_test.go"), []byte(src), 0o644))

	run := func(args ...string) (string, error) {
		t.Helper()
		begin := time.Now()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		t.Logf("go %s: %v", strings.Join(args, " "), time.Since(begin).Round(time.Millisecond))
		return string(out), err
	}
	begin := time.Now()
	if out, err := run("mod", "tidy"); err != nil {
		t.Fatalf("go mod tidy with README's Install block:\n%s\n%v\n%s", goMod, err, out)
	}
	out, err := run("test", "-count=1", "-v", ".")
	t.Logf("FIGURE %s: seconds=%.1f", t.Name(), time.Since(begin).Seconds())
	for _, bad := range []string{"SERVICE-LEAK", "SERVICE-OVERLAP"} {
		if strings.Contains(out, bad) {
			t.Fatalf("the examples' services are not bounded by their tests (%s):\n%s", bad, out)
		}
	}
	switch {
	case err != nil:
		t.Fatalf("go test in %s: %v\n%s", dir, err, out)
	case strings.Contains(out, "USER-MODULE-OK") && strings.Contains(out, "--- PASS: TestCheckoutSurvivesFailover"):
		t.Logf("%s", lastLines(out, "SERVICE-RUNS"))
	case strings.Contains(out, "--- SKIP"):
		t.Skipf("the user's tests skipped:\n%s", out)
	default:
		t.Fatalf("the user's tests did not run:\n%s", out)
	}
}

// installBlock returns README's block with the replace lines of a user's go.mod.
func installBlock(readme string) string {
	lines := strings.Split(readme, "\n")
	for i := 0; i < len(lines); i++ {
		if !strings.HasPrefix(lines[i], "```") {
			continue
		}
		var body []string
		for i++; i < len(lines) && !strings.HasPrefix(lines[i], "```"); i++ {
			body = append(body, lines[i])
		}
		if code := strings.Join(body, "\n"); strings.Contains(code, "github.com/mysqlfailover/mysqlfailover =>") {
			return code
		}
	}
	return ""
}

// docExamples returns the code blocks of the package documentation in file that are test
// functions (func Test...), as written there.
func docExamples(t *testing.T, file string) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments|parser.PackageClauseOnly)
	must(t, err)
	var out []string
	for _, block := range new(comment.Parser).Parse(docText(f.Doc)).Content {
		if c, ok := block.(*comment.Code); ok && strings.HasPrefix(c.Text, "func Test") {
			out = append(out, c.Text)
		}
	}
	return out
}

func docText(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	return g.Text()
}

// lastLines returns the lines of out that contain sub.
func lastLines(out, sub string) string {
	var keep []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, sub) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
