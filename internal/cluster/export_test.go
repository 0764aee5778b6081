package cluster

import (
	"context"
	"database/sql/driver"
	"strings"
	"sync/atomic"
	"time"
)

// CheckWaiters returns how many connections wait for the same-host check of host in
// progress (Recover), for tests.
func CheckWaiters(c *Cluster, host int) int {
	h := c.topo().host(host)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.check == nil {
		return 0
	}
	return int(h.check.waiters)
}

// HostSlots returns the size of the host table, for tests.
func HostSlots(c *Cluster) int { return len(c.topo().hosts) }

// FlightWaiters returns how many connections wait for the walk in progress after a
// failure (Failover), for tests.
func FlightWaiters(c *Cluster) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.flight == nil {
		return 0
	}
	return c.flight.waiters
}

// ProbeAgain reports whether a host's last probe asked for its next one at once (it
// timed out on a host not declared down yet, or inconclusively) and clears it, as the
// monitor does, for tests.
func ProbeAgain(c *Cluster) bool {
	again := false
	t := c.topo()
	for _, id := range t.list {
		again = t.hosts[id].mon.takeAgain() || again
	}
	return again
}

// MonitorProbes returns how many probes the monitor goroutine started and has not yet
// seen end, for tests that step its clock.
func MonitorProbes(c *Cluster) int { return int(c.mon.running.Load()) }

// Position is the pool's position now, for DecideAt.
type Position = *position

// Pos returns the position now, for tests.
func Pos(c *Cluster) Position { return c.pos.Load() }

// DecideAt runs the monitor's decision on pos, a position read earlier, as decide does
// on the one it read, for tests of a move made meanwhile.
func DecideAt(c *Cluster, pos Position) { c.mon.decideAt(pos) }

// ClosedHandshake is closedHandshake, for tests.
var ClosedHandshake = closedHandshake

// CalmPhase returns the connector's phase on the monitor's calm grid, for tests.
func CalmPhase(c *Cluster) time.Duration { return c.mon.calmPhase }

// RoleLearner is a host's learned role query (roleselect.go), for tests.
type RoleLearner struct{ p atomic.Pointer[roleSelect] }

// Read reads the state of a replication server over conn at now through l.
func (l *RoleLearner) Read(ctx context.Context, conn driver.Conn, now time.Time) (State, error) {
	return readState(ctx, conn, KindReplication, &l.p, now)
}

// Query is l's learned query ("": none).
func (l *RoleLearner) Query() string {
	if s := l.p.Load(); s != nil {
		return s.query
	}
	return ""
}

// Set has l learn the SELECT of names at at.
func (l *RoleLearner) Set(names []string, at time.Time) {
	l.p.Store(&roleSelect{query: "SELECT @@global." + strings.Join(names, ", @@global."), names: names, at: at})
}

// RoleVarNames is the list the learned role query selects from.
func RoleVarNames() []string { return roleVarNames }

// News returns how much news ended or would end the walks' pauses so far (passNews), for
// tests.
func News(c *Cluster) uint64 { return c.news.seen() }
