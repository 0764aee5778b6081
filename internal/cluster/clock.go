package cluster

// Time: the Clock every timestamp and wait comes from, the system clock, and the two
// places where a context forces the wall clock on the engine.

import (
	"context"
	"time"
)

// Clock is the time source of a Cluster: every timestamp and measured duration (the
// fall-back clock, backoff, runs of probes, connect times, event times) and every wait
// (the pause between passes, the followers' jitter, the full-host waits, the monitor's
// interval). Tests pass a fake one so that no test waits for real time.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// Sleep waits for d or until ctx ends, whichever is first, and returns ctx.Err() in
	// the second case.
	Sleep(ctx context.Context, d time.Duration) error
}

// systemClock is the real clock, the default of Env.Clock.
type systemClock struct{}

// SystemClock is the wall clock, for the driver's own waits outside a Cluster.
var SystemClock Clock = systemClock{}

// Now returns time.Now().
func (systemClock) Now() time.Time { return time.Now() }

// Sleep races a timer against ctx.Done().
func (systemClock) Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// The engine reads time from its Clock only (c.env.Clock: Now for every timestamp and
// duration it measures, Sleep for every wait), so that tests with a fake clock never wait.
// The two exceptions are below, and every use goes through them: a context lives on the
// wall clock, whatever the Cluster's clock.

// timeLeft returns the time until dl, the deadline of a caller's context. A context's
// deadline is an instant of the wall clock by definition (context.WithTimeout adds to
// time.Now, and the runtime's timer ends the context then), so it is measured on the
// wall clock: the injected Clock may be a fake one at a fixed instant, and
// dl.Sub(c.env.Clock.Now()) would be meaningless. With systemClock the two agree.
func timeLeft(dl time.Time) time.Duration { return time.Until(dl) }

// withBudget bounds ctx by d for one host attempt, probe or host-list poll. A context can
// only be bounded on the wall clock (context.WithTimeout): the budget's length follows
// the options and the rules of its caller, but it runs out in wall time, also under a
// fake Clock (where tests read it as the deadline of the context their dialer gets).
func withBudget(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, d)
}

// Ended reports whether the caller's context has ended: done (ctx.Err() is set), or past
// its deadline. A dialer that compares the deadline with the clock itself (net.Dialer
// does) fails with "i/o timeout" a moment before the context's own timer ends it, and
// that failure is the caller's, never the host's. The one test of "did the caller give
// up?" that blame, backoff and classification use (Classify among them). nil never ends.
func Ended(ctx context.Context) bool {
	if ctx == nil {
		return false
	}
	if ctx.Err() != nil {
		return true
	}
	dl, ok := ctx.Deadline()
	return ok && timeLeft(dl) <= 0
}

// EndErr returns the error of an ended context (see Ended): ctx.Err(), or
// context.DeadlineExceeded while its deadline has passed and its timer has not fired
// yet; nil when it has not ended.
func EndErr(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if Ended(ctx) {
		return context.DeadlineExceeded
	}
	return nil
}
