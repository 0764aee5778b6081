package harness

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// noServer is a Backend that finds no server.
type noServer struct{}

func (noServer) StartNode(context.Context, NodeSpec) (Instance, error) {
	return nil, fmt.Errorf("looking: %w", ErrNoServer)
}
func (noServer) Close() error { return nil }

// recorder is a testing.TB that records Skip and Fatal instead of ending the test.
type recorder struct {
	testing.TB
	skipped, failed bool
	msg             string
}

func (r *recorder) Helper()             {}
func (r *recorder) Logf(string, ...any) {}
func (r *recorder) Cleanup(func())      {}
func (r *recorder) Skipf(f string, a ...any) {
	r.skipped, r.msg = true, fmt.Sprintf(f, a...)
	runtime.Goexit()
}
func (r *recorder) Fatalf(f string, a ...any) {
	r.failed, r.msg = true, fmt.Sprintf(f, a...)
	runtime.Goexit()
}

func startWith(t *testing.T, b Backend) *recorder {
	r := &recorder{TB: t}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Start(r, 3, WithBackend(b))
	}()
	<-done
	return r
}

func TestStartWithoutServer(t *testing.T) {
	t.Run("skips outside CI", func(t *testing.T) {
		t.Setenv(EnvCI, "")
		r := startWith(t, noServer{})
		if !r.skipped || r.failed || !strings.Contains(r.msg, "apt-get install mariadb-server") {
			t.Errorf("skipped=%v failed=%v msg=%q, want a skip saying how to install", r.skipped, r.failed, r.msg)
		}
	})
	t.Run("fails in CI", func(t *testing.T) {
		t.Setenv(EnvCI, "true")
		r := startWith(t, noServer{})
		if r.skipped || !r.failed {
			t.Errorf("skipped=%v failed=%v msg=%q, want a failure", r.skipped, r.failed, r.msg)
		}
	})
}

func TestAppDSN(t *testing.T) {
	for _, tc := range []struct{ params, want string }{
		{"", "app:apppw@tcp(h1:1,h2:2)/app"},
		{"readTimeout=2s", "app:apppw@tcp(h1:1,h2:2)/app?readTimeout=2s"},
		{"?readTimeout=2s", "app:apppw@tcp(h1:1,h2:2)/app?readTimeout=2s"},
	} {
		if got := appDSN("h1:1,h2:2", tc.params); got != tc.want {
			t.Errorf("appDSN(%q) = %q, want %q", tc.params, got, tc.want)
		}
	}
}
