package conn

import (
	"context"

	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// failure is a failed call's error as fail judged it, once (cluster.Judge): the helpers
// that act on it read the judgement, and none classifies the error again.
type failure struct {
	err   error
	class cluster.Class
	nr    *cluster.NotReadyError // the server's word, with NotReady and NotReadyMidway
}

// failureOf classifies err, the error of a call under ctx (invariant classify-then-judge).
func failureOf(ctx context.Context, err error) failure {
	class, nr := cluster.Judge(ctx, err)
	return failure{err: err, class: class, nr: nr}
}

// refused reports whether f is a server's refusal for not being ready: the host is left.
func (f failure) refused() bool {
	return f.class == cluster.NotReady || f.class == cluster.NotReadyMidway
}
