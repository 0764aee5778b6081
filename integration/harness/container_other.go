//go:build !unix

package harness

import (
	"context"
	"fmt"
	"time"
)

// Environment variables read by StartCluster.
const (
	EnvBackend = "MYSQLFAILOVER_BACKEND"
	EnvImage   = "MYSQLFAILOVER_IMAGE"
)

// ErrNoDocker: see the Unix build. The container backend runs on Unix only.
var ErrNoDocker = fmt.Errorf("no Docker engine answers (docker info)")

// ContainerBackend runs on Unix only; elsewhere StartNode reports ErrNoDocker.
type ContainerBackend struct {
	Image        string
	Flavour      Flavour
	Args         []string
	StartTimeout time.Duration
	Logf         func(format string, args ...any)
}

func (b *ContainerBackend) StartNode(ctx context.Context, spec NodeSpec) (Instance, error) {
	return nil, fmt.Errorf("harness: %w: the container backend runs on Unix only", ErrNoDocker)
}

func (b *ContainerBackend) Close() error { return nil }
