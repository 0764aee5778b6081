package cluster_test

import (
	"context"
	"testing"

	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// testCtx returns a context that ends fake.Bound (10 s of real time) after the call and
// is cancelled when the test ends: the caller's context of a call that might otherwise
// wait forever on a fake host (a dial that blocks until its context ends, a flight or a
// check that never lands), so that it returns and the test fails saying why.
func testCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), fake.Bound)
	t.Cleanup(cancel)
	return ctx
}
