package fake

import (
	"context"
	"sync"
	"testing"
	"time"
)

// Bound is how long, in real time, a test waits for another goroutine (Await, Wait,
// Recv; WaitFor has the same 10 s) before it fails naming what it waited for: long enough
// for a busy machine, short enough that a change of the code that never signals ends the
// suite quickly instead of hanging it until go test's timeout.
const Bound = 10 * time.Second

// Context returns a context that ends Bound after the call, cancelled when the test ends:
// the context of a call on fake hosts or the fake clock that could otherwise wait forever
// (a dial that blocks until its context ends, a walk that sleeps one pass more, a pool
// that never frees a connection), so that it returns with the context's error and the
// test fails saying why instead of hanging until go test's timeout.
func Context(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), Bound)
	t.Cleanup(cancel)
	return ctx
}

// Await waits for done to be closed (or to deliver a value) for at most Bound of real
// time, and fails the test naming what when it is not.
func Await(t testing.TB, what string, done <-chan struct{}) {
	t.Helper()
	Recv(t, what, done)
}

// Recv receives one value from ch, waiting at most Bound of real time, and fails the test
// naming what when none comes.
func Recv[T any](t testing.TB, what string, ch <-chan T) T {
	t.Helper()
	timer := time.NewTimer(Bound)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("timed out after %v waiting for %s", Bound, what)
	}
	var zero T
	return zero
}

// Wait waits for wg for at most Bound of real time, and fails the test naming what when
// it is not done by then (the goroutine that waits for wg is then left behind: the test
// has failed).
func Wait(t testing.TB, what string, wg *sync.WaitGroup) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	Await(t, what, done)
}
