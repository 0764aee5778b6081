package mysqlfailover_test

import (
	"context"
	"testing"

	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// boundedCtx returns a context that ends fake.Bound (10 s of real time) after the call,
// cancelled when the test ends: the context of a call on fake hosts or a step clock that
// could otherwise wait forever, so that it returns and the test fails saying why.
func boundedCtx(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), fake.Bound)
	t.Cleanup(cancel)
	return ctx
}
