package fake

import (
	"runtime"
	"testing"
	"time"
)

// WaitFor polls cond, yielding the processor, for at most 10 s of real time, and fails
// the test naming what when cond never holds: a synchronisation with other goroutines
// (a monitor, a probe), not a timing assumption.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		runtime.Gosched()
	}
}
