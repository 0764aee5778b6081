// Package fake holds the test doubles shared by the unit tests of failover, conn, stmt and
// driver: a fake clock and a set of fake hosts whose physical connections are go-sqlmock
// connections (opened through the sqlmock driver's Open) failing with the real
// go-sql-driver error values. It is internal: no user code depends on it.
package fake

import (
	"context"
	"sync"
	"time"
)

// Clock is a manual clock: Now moves only with Advance and Sleep, and Sleep never waits.
type Clock struct {
	mu     sync.Mutex
	now    time.Time
	sleeps []time.Duration
}

// NewClock returns a clock at a fixed instant.
func NewClock() *Clock { return &Clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Advance moves the clock forward by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// Sleep records d, advances the clock by d and returns at once, or returns ctx.Err().
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.now = c.now.Add(d)
	c.mu.Unlock()
	return nil
}

// Sleeps returns every duration Sleep was called with.
func (c *Clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.sleeps...)
}
