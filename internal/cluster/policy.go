package cluster

// The built-in host policies, which newTopo stacks: Rotation (Connector/J's order),
// DCAware (localDC, usedHostsPerRemoteDC) and RoleAware (targetSessionAttrs). A user's
// layers (Env.Layer) go on top.

import (
	"slices"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/policy"
)

// Rotation is the base policy, Connector/J FailoverConnectionProxy's order: every host
// local; each pass visits the hosts in list order starting at w.Start and wrapping
// around, with the primary first when w.PrimaryFirst and left out when w.SkipPrimary.
// A nil w.List means every host of w.Hosts, in id order.
type Rotation struct{}

// Distance returns policy.Local.
func (Rotation) Distance(policy.Host) policy.Distance { return policy.Local }

// Plan implements Policy.
func (Rotation) Plan(w *policy.Walk, dst []int) []int {
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
	child  policy.Policy
	local  string
	remote []bool // per host index: a remote host within the cap
}

// NewDCAware returns the DC layer over child for hosts, in list order (the remote caps
// take the first hosts of each DC in that order; policy.Host.Index is each host's id).
// usedHostsPerRemoteDC is a count (0: remote DCs are never used). It does not validate
// localDC: dsn.Config.Validate does.
func NewDCAware(child policy.Policy, hosts []policy.Host, localDC string, usedHostsPerRemoteDC int) *DCAware {
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
func (p *DCAware) Distance(h policy.Host) policy.Distance {
	d := policy.Local
	if h.DC != "" && h.DC != p.local {
		d = policy.Ignored
		if h.Index >= 0 && h.Index < len(p.remote) && p.remote[h.Index] {
			d = policy.Remote
		}
	}
	return max(d, p.child.Distance(h))
}

// Plan implements Policy.
func (p *DCAware) Plan(w *policy.Walk, dst []int) []int {
	start := len(dst)
	dst = p.child.Plan(w, dst)
	plan := dst[start:]
	var remote [8]int
	far := remote[:0]
	k := 0
	for _, h := range plan {
		switch p.Distance(w.Hosts[h]) {
		case policy.Local:
			plan[k] = h
			k++
		case policy.Remote:
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
	child  policy.Policy
	target string
}

// NewRoleAware returns the role layer over child for target.
func NewRoleAware(child policy.Policy, target string) *RoleAware {
	return &RoleAware{child: child, target: target}
}

// Distance implements Policy.
func (p *RoleAware) Distance(h policy.Host) policy.Distance { return p.child.Distance(h) }

// Plan implements Policy.
func (p *RoleAware) Plan(w *policy.Walk, dst []int) []int {
	start := len(dst)
	dst = p.child.Plan(w, dst)
	if w.PrimaryFirst {
		return dst
	}
	rank := func(h int) int {
		r := w.Hosts[h].Role
		switch {
		case r == failover.RoleUnknown:
			return 1
		case Accepts(p.target, r):
			return 0
		}
		return 2
	}
	if p.target != attrs.PreferStandby {
		rank = func(h int) int {
			if r := w.Hosts[h].Role; r != failover.RoleUnknown && !Accepts(p.target, r) {
				return 1
			}
			return 0
		}
	}
	slices.SortStableFunc(dst[start:], func(a, b int) int { return rank(a) - rank(b) })
	return dst
}

var (
	_ policy.Policy = Rotation{}
	_ policy.Policy = (*DCAware)(nil)
	_ policy.Policy = (*RoleAware)(nil)
)
