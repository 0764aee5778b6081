package conn

import (
	"context"
	"testing"

	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// testWait (fake.Bound, 10 s) bounds, in real time, every wait of a test on the fake clock and fake hosts: a
// call that waits for something that never comes (a walk that sleeps one pass more, a
// pool that never frees a connection) ends with the context's error within it, and the
// test fails saying so, instead of hanging until go test's own timeout.
const testWait = fake.Bound

// testCtx returns a context that ends testWait after the call, cancelled when the test
// ends.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testWait)
	t.Cleanup(cancel)
	return ctx
}
