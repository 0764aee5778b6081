// Package policy holds what a writer of a host policy layer needs (Policy, Walk, Host,
// Distance); applications that only use the driver never import it.
//
// The plan of each pass is built by composable policies, as the DataStax Java
// driver's TokenAwarePolicy wraps a child policy: Connector/J's rotation at
// the base, a DC-aware layer on it with localDC, a role-aware layer on that
// with targetSessionAttrs, and the layers given with mysqlfailover.WithPolicy
// on top, the last one outermost. Each layer rates hosts (Distance) and
// reorders its child's Plan. Whatever a layer plans or rates, hosts the
// built-in layers ignore are never attempted (a layer may reorder and narrow,
// not widen), repeats are dropped, the host that just failed goes last in the
// first pass, and a connection that joins a failed-over pool tries the pool's
// host first. Package mysqlfailover's example LowestConnectTimeFirst is a layer
// that tries the hosts that usually connect fastest first.
package policy

import (
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

// Distance is how a policy rates a host, as the DataStax Java driver's HostDistance.
type Distance int

const (
	// Local hosts are tried first.
	Local Distance = iota
	// Remote hosts are tried after the local ones.
	Remote
	// Ignored hosts are never connected to; a Plan that lists one anyway is
	// corrected by the driver.
	Ignored
)

// String returns "local", "remote" or "ignored".
func (d Distance) String() string {
	switch d {
	case Local:
		return "local"
	case Remote:
		return "remote"
	}
	return "ignored"
}

// Host is what a Policy knows of one configured host.
type Host struct {
	// Index is the host's position in the DSN (0-based).
	Index int
	// Addr is host:port.
	Addr string
	// DC is the host's data-centre label ("" for none).
	DC string
	// Role is what the last role check on the host found (failover.RoleUnknown without
	// targetSessionAttrs, or before the first check).
	Role failover.Role
	// ConnectTime is the smoothed duration of the host's successful attempts (dial,
	// handshake, role check, session set-up); 0 until one succeeded.
	ConnectTime time.Duration
}

// Walk describes one pass of a walk over the hosts to a Policy.
type Walk struct {
	// Hosts is every host the pool knows, by id: Hosts[i].Index == i. Ids are the
	// DSN's order; a failover.HostListProvider's new hosts get the next ids.
	Hosts []Host
	// List is the current host list, in order (ids): the DSN's hosts, or the last list
	// a failover.HostListProvider gave. Hosts not in it are never tried.
	List []int
	// Primary is the id of the primary: the first host of the list (of the local DC
	// with localDC), or the host of the last SwitchTo.
	Primary int
	// Start is where the rotation starts: the host after the one that failed, or the
	// pool's host for a connection that joins the pool.
	Start int
	// Failed is the host whose failure started the walk, or -1.
	Failed int
	// Pass is the 0-based pass number (retriesAllDown passes at most).
	Pass int
	// PrimaryFirst is set in pass 0 when fall-back to the primary is due: the primary
	// goes first.
	PrimaryFirst bool
	// SkipPrimary is set in pass 0 when fall-back is enabled but not due: the primary
	// is left out (Connector/J does not return to it before its time).
	SkipPrimary bool
}

// Policy decides which hosts a walk tries and in what order. Policies compose as the
// DataStax Java driver's TokenAwarePolicy wraps a child: a layer holds a child Policy,
// rates hosts from the child's Distance (it may only make them farther) and reorders or
// filters the child's Plan. The base is Connector/J's rotation; the driver stacks the
// DC-aware layer (localDC), the role-aware layer (targetSessionAttrs) and then the
// layers of mysqlfailover.WithPolicy on it (see the package documentation).
//
// Policies are called from many goroutines at once, during walks only (never on the
// statement path), and must not block.
type Policy interface {
	// Distance rates h.
	Distance(h Host) Distance
	// Plan appends to dst the indexes of the hosts to try in pass w.Pass, in order,
	// each at most once, and returns the extended slice. Whatever a Plan says, the
	// driver drops ignored hosts and repeats, moves w.Failed last in pass 0, and, once
	// the pool has failed over, for a connection that joins it (Failed -1) puts the
	// pool's host (w.Start) first in pass 0 (after the primary when w.PrimaryFirst)
	// unless its role disqualifies it: new connections follow a failed-over pool, and
	// the way back is the fall-back rules'.
	Plan(w *Walk, dst []int) []int
}
