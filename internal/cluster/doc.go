// Package failover is the brain of mysqlfailover: error classification, the host walk,
// the fall-back clock and counter, and the errors and events users see. It knows nothing
// of database/sql pooling; package conn drives it.
//
// # The shared state
//
// One Cluster serves every pooled connection of one connector. It holds the index of the
// active host, the host the pool uses. A connection that finds its host is no longer the
// active one moves at its next safe point, before it sends anything, so a single failure
// moves the whole pool and the other callers see no error.
//
// # The walk
//
// Connect (a connection joining the pool) and Failover (a connection whose host failed)
// walk the host list the way Connector/J's FailoverConnectionProxy does. A first
// connection tries the primary, then the secondaries in DSN order. After a failure on
// host k the walk goes round-robin from k+1 and ends the pass with k itself; while
// fall-back is enabled but not due, the primary is skipped in the first pass and included
// from the second; when fall-back is due, the primary is tried first. Each pass may be
// followed by another, RetriesAllDown in all, with DefaultPassPause (250 ms) between them. Every
// host attempt (dial, handshake, session set-up) is bounded by HostTimeout and by the
// caller's context, which also bounds the walk. A failure that belongs to the host (it
// is unreachable, slow, full, of the wrong role, fails the TLS handshake, greets
// wrongly) moves the walk to the next host; a server's refusal every host would repeat
// (access denied, unknown database) ends it. A walk that finds no host returns a
// *NoHostAvailableError naming every host and its last error, or why it was not tried.
//
// # A dead session is not a dead host
//
// A communication error on an established session proves only that the session died.
// Recover decides: from what the Cluster knows (probes, a failed attempt a moment ago,
// the server's own words), or with one quick attempt on the same host, shared by the
// sessions that fail together. A host that answers keeps the pool, and the connection
// gets a new session there; only a host that does not answer is left (Failover). A host
// that answers full (1040, 1203) is waited for, never left by the connections that join
// the pool.
//
// # Fall-back
//
// Once the pool is on a secondary it returns to the primary when
// SecondsBeforeRetryMaster seconds have passed or QueriesBeforeRetryMaster statements ran
// since it left (both 0: never; the primary is then an ordinary member of the rotation).
// Connections check this only at safe points, before a statement outside a transaction,
// and one connection at a time makes the attempt (TryFallBack). If the primary does not
// answer, the pool stays and both clocks restart, silently.
//
// # Active health
//
// With CheckInterval > 0, Start runs a monitor that probes every host, polls the
// HostListProvider and moves the pool itself: away from an active host that failed its
// probes for FailoverDelay, back home after SwitchBackDelay of passed probes (see
// Check). The fall-back clock and counter are then not used. SwitchTo moves the pool
// on an operator's request.
//
// # Classification
//
// Classify sorts errors into Data (returned untouched), Communication (the session is gone,
// or a host did not answer in time) and Canceled (the caller's context ended, read from
// the context itself; the host is fine). Errors this
// package returns never match driver.ErrBadConn (NotBadConn cuts that chain), because
// database/sql repeats any call that fails with it.
package cluster
