//go:build !unix

package harness

import (
	"context"
	"fmt"
)

// LocalBackend needs Unix signals (SIGSTOP, SIGCONT, SIGKILL); elsewhere it reports
// ErrNoServer so the tests skip.
type LocalBackend struct {
	Binary         string
	Dir            string
	Args           []string
	Logf           func(format string, args ...any)
	GaleraProvider string
}

// EnvGalera: see the Unix build.
const EnvGalera = "MYSQLFAILOVER_GALERA"

func (b *LocalBackend) StartNode(ctx context.Context, spec NodeSpec) (Instance, error) {
	return nil, fmt.Errorf("%w: LocalBackend runs on Unix only", ErrNoServer)
}

func (b *LocalBackend) Close() error { return nil }
