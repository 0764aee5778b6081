package failover

import (
	"slices"
	"time"

	"github.com/mysqlfailover/mysqlfailover/dsn"
)

// Distance is how a policy rates a host, as the DataStax Java driver's HostDistance.
type Distance int

const (
	// DistanceLocal hosts are tried first.
	DistanceLocal Distance = iota
	// DistanceRemote hosts are tried after the local ones.
	DistanceRemote
	// DistanceIgnored hosts are never connected to; a Plan that lists one anyway is
	// corrected by the Cluster.
	DistanceIgnored
)

// String returns "local", "remote" or "ignored".
func (d Distance) String() string {
	switch d {
	case DistanceLocal:
		return "local"
	case DistanceRemote:
		return "remote"
	}
	return "ignored"
}

// HostInfo is what a Policy knows of one configured host.
type HostInfo struct {
	// Index is the host's position in the DSN (0-based).
	Index int
	// Addr is host:port.
	Addr string
	// DC is the host's data-centre label ("" for none).
	DC string
	// Role is what the last role check on the host found (RoleUnknown without
	// targetSessionAttrs, or before the first check).
	Role Role
	// ConnectTime is the smoothed duration of the host's successful attempts (dial,
	// handshake, role check, session set-up); 0 until one succeeded.
	ConnectTime time.Duration
}

// Walk describes one pass of a walk over the hosts to a Policy.
type Walk struct {
	// Hosts is every host the Cluster knows, by id: Hosts[i].Index == i. Ids are the
	// DSN's order; a HostListProvider's new hosts get the next ids.
	Hosts []HostInfo
	// List is the current host list, in order (ids): the DSN's hosts, or the last list
	// a HostListProvider gave. Hosts not in it are never tried.
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
// filters the child's Plan. The base is Rotation; the Cluster stacks the DC-aware layer
// (localDC), the role-aware layer (targetSessionAttrs) and then any user layers
// (driver.WithPolicy) on it.
//
// Policies are called from many goroutines at once, during walks only (never on the
// statement path), and must not block.
type Policy interface {
	// Distance rates h.
	Distance(h HostInfo) Distance
	// Plan appends to dst the indexes of the hosts to try in pass w.Pass, in order,
	// each at most once, and returns the extended slice. Whatever a Plan says, the
	// Cluster drops ignored hosts and repeats, moves w.Failed last in pass 0, and, once
	// the pool has failed over, for a connection that joins it (Failed -1) puts the
	// pool's host (w.Start) first in pass 0 (after the primary when w.PrimaryFirst)
	// unless its role disqualifies it: new connections follow a failed-over pool, and
	// the way back is the fall-back rules'.
	Plan(w *Walk, dst []int) []int
}

// Rotation is the base policy, Connector/J FailoverConnectionProxy's order: every host
// local; each pass visits the hosts in list order starting at w.Start and wrapping
// around, with the primary first when w.PrimaryFirst and left out when w.SkipPrimary.
// A nil w.List means every host of w.Hosts, in id order.
type Rotation struct{}

// Distance returns DistanceLocal.
func (Rotation) Distance(HostInfo) Distance { return DistanceLocal }

// Plan implements Policy.
func (Rotation) Plan(w *Walk, dst []int) []int {
	list := w.List
	if list == nil {
		list = make([]int, len(w.Hosts))
		for i := range list {
			list[i] = i
		}
	}
	n := len(list)
	first := 0
	for k, h := range list {
		if h == w.Start {
			first = k
			break
		}
	}
	if w.PrimaryFirst {
		dst = append(dst, w.Primary)
	}
	for k := 0; k < n; k++ {
		h := list[(first+k)%n]
		if h == w.Primary && (w.PrimaryFirst || w.SkipPrimary) {
			continue
		}
		dst = append(dst, h)
	}
	return dst
}

// DCAware is the data-centre layer, as the DataStax Java driver's
// DCAwareRoundRobinPolicy without the round robin: hosts of LocalDC, and hosts without a
// label, are local; of each other DC the first UsedHostsPerRemoteDC hosts in DSN order
// are remote and the rest ignored (never connected to). Plan keeps the child's order
// within each distance: local hosts, then remote ones.
type DCAware struct {
	child  Policy
	local  string
	remote []bool // per host index: a remote host within the cap
}

// NewDCAware returns the DC layer over child for hosts, in list order (the remote caps
// take the first hosts of each DC in that order; HostInfo.Index is each host's id).
// usedHostsPerRemoteDC is a count (0: remote DCs are never used). It does not validate
// localDC: dsn.Config.Validate does.
func NewDCAware(child Policy, hosts []HostInfo, localDC string, usedHostsPerRemoteDC int) *DCAware {
	n := 0
	for _, h := range hosts {
		n = max(n, h.Index+1)
	}
	p := &DCAware{child: child, local: localDC, remote: make([]bool, n)}
	used := map[string]int{}
	for _, h := range hosts {
		if h.DC == "" || h.DC == localDC || h.Index < 0 {
			continue
		}
		if used[h.DC] < usedHostsPerRemoteDC {
			used[h.DC]++
			p.remote[h.Index] = true
		}
	}
	return p
}

// Distance implements Policy.
func (p *DCAware) Distance(h HostInfo) Distance {
	d := DistanceLocal
	if h.DC != "" && h.DC != p.local {
		d = DistanceIgnored
		if h.Index >= 0 && h.Index < len(p.remote) && p.remote[h.Index] {
			d = DistanceRemote
		}
	}
	return max(d, p.child.Distance(h))
}

// Plan implements Policy.
func (p *DCAware) Plan(w *Walk, dst []int) []int {
	start := len(dst)
	dst = p.child.Plan(w, dst)
	plan := dst[start:]
	var remote [8]int
	far := remote[:0]
	k := 0
	for _, h := range plan {
		switch p.Distance(w.Hosts[h]) {
		case DistanceLocal:
			plan[k] = h
			k++
		case DistanceRemote:
			far = append(far, h)
		}
	}
	return append(dst[:start+k], far...)
}

// RoleAware is the role layer for targetSessionAttrs: it leaves distances to its child
// and moves to the end of the child's plan the hosts whose last role check says they do
// not qualify (for prefer-standby: standbys first, then hosts not checked yet, then the
// rest), so that a walk reaches the right host first while still trying the others,
// whose roles may have changed. In a pass where the primary goes first (fall-back due)
// the child's order is kept: that attempt is the probe that finds out whether the
// primary qualifies again.
type RoleAware struct {
	child  Policy
	target dsn.TargetSessionAttrs
}

// NewRoleAware returns the role layer over child for target.
func NewRoleAware(child Policy, target dsn.TargetSessionAttrs) *RoleAware {
	return &RoleAware{child: child, target: target}
}

// Distance implements Policy.
func (p *RoleAware) Distance(h HostInfo) Distance { return p.child.Distance(h) }

// Plan implements Policy.
func (p *RoleAware) Plan(w *Walk, dst []int) []int {
	start := len(dst)
	dst = p.child.Plan(w, dst)
	if w.PrimaryFirst {
		return dst
	}
	rank := func(h int) int {
		r := w.Hosts[h].Role
		switch {
		case r == RoleUnknown:
			return 1
		case Accepts(p.target, r):
			return 0
		}
		return 2
	}
	if p.target != dsn.TargetPreferStandby {
		rank = func(h int) int {
			if r := w.Hosts[h].Role; r != RoleUnknown && !Accepts(p.target, r) {
				return 1
			}
			return 0
		}
	}
	slices.SortStableFunc(dst[start:], func(a, b int) int { return rank(a) - rank(b) })
	return dst
}

var (
	_ Policy = Rotation{}
	_ Policy = (*DCAware)(nil)
	_ Policy = (*RoleAware)(nil)
)
