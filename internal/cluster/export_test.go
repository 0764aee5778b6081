package cluster

// CheckWaiters returns how many connections wait for the same-host check of host in
// progress (Recover), for tests.
func CheckWaiters(c *Cluster, host int) int {
	h := c.t.Load().host(host)
	h.checkMu.Lock()
	defer h.checkMu.Unlock()
	if h.check == nil {
		return 0
	}
	return int(h.check.waiters)
}

// HostSlots returns the size of the host table, for tests.
func HostSlots(c *Cluster) int { return len(c.t.Load().hosts) }

// FlightWaiters returns how many connections wait for the walk in progress after a
// failure (Failover), for tests.
func FlightWaiters(c *Cluster) int {
	c.flightMu.Lock()
	defer c.flightMu.Unlock()
	if c.flight == nil {
		return 0
	}
	return int(c.flight.waiters.Load())
}
