package cluster

import (
	"context"
	"time"
)

// Clock is the time source of a Cluster: the fall-back clock and the pause between
// passes. Tests pass a fake one so that no test waits for real time.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits for d or until ctx ends, whichever is first, and returns ctx.Err() in
	// the second case.
	Sleep(ctx context.Context, d time.Duration) error
}

// SystemClock is the real clock, the default of Env.Clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// Sleep races a timer against ctx.Done().
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
