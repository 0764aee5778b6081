package failovertest_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// userTest is a user's own test of their service, in their own module.
const userTest = `package usersvc

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/integration/failovertest"
)

func TestServiceSurvivesPrimaryKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c := failovertest.Start(t, 1)
	db, err := sql.Open("mysqlfailover", c.DSN("readTimeout=2s"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE TABLE t (id INT)"); err != nil {
		t.Fatal(err)
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
	t.Log("USER-MODULE-OK")
}
`

// TestUserModule proves the fixture works from `go test` in a user's own module: a
// module in a temporary directory outside the repository, whose go.mod requires the
// library and this module (replaced by the local copies), runs a test that imports
// failovertest. It skips with -short.
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
	goMod := "module example.com/usersvc\n\ngo 1.26.0\n\n" +
		"require (\n\tgithub.com/mysqlfailover/mysqlfailover v0.0.0-00010101000000-000000000000\n" +
		"\tgithub.com/mysqlfailover/mysqlfailover/integration v0.0.0-00010101000000-000000000000\n)\n\n" +
		"replace github.com/mysqlfailover/mysqlfailover => " + root + "\n\n" +
		"replace github.com/mysqlfailover/mysqlfailover/integration => " + integ + "\n"
	must(t, os.WriteFile(filepath.Join(dir, "go.mod"), []byte(goMod), 0o644))
	sum, err := os.ReadFile(filepath.Join(integ, "go.sum"))
	must(t, err)
	must(t, os.WriteFile(filepath.Join(dir, "go.sum"), sum, 0o644))
	must(t, os.WriteFile(filepath.Join(dir, "svc_test.go"), []byte(userTest), 0o644))

	run := func(args ...string) string {
		t.Helper()
		begin := time.Now()
		cmd := exec.Command(goBin, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
		out, err := cmd.CombinedOutput()
		t.Logf("go %s: %v", strings.Join(args, " "), time.Since(begin).Round(time.Millisecond))
		if err != nil {
			t.Fatalf("go %s in %s: %v\n%s", strings.Join(args, " "), dir, err, out)
		}
		return string(out)
	}
	begin := time.Now()
	run("mod", "tidy")
	out := run("test", "-count=1", "-v", ".")
	t.Logf("FIGURE %s: seconds=%.1f", t.Name(), time.Since(begin).Seconds())
	switch {
	case strings.Contains(out, "USER-MODULE-OK"):
	case strings.Contains(out, "--- SKIP"):
		t.Skipf("the user's test skipped:\n%s", out)
	default:
		t.Fatalf("the user's test did not run:\n%s", out)
	}
}
