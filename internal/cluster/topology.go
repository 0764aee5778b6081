package cluster

// The host list: one immutable topo per version of the list (the hosts by id, the list,
// the primary, the home hosts and the policy stack built for them). SetHosts (a
// HostListProvider's list) and SwitchTo (a new primary) replace it, as part of the
// position (position.go).

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/policy"
)

// hostLists makes and applies the host lists (newTopo, set, put, apply: a provider's
// list, or discovery's change). It owns no state: the list is the position's, applied
// under Cluster.mu, and one change at a time runs under discovery's apply lock. It
// reaches the rest of the Cluster through c.
type hostLists struct {
	c   *Cluster
	cfg settings // c.cfg
	env *Env     // &c.env
}

// topo is one version of the host list. It is never modified once published: a new list
// (HostListProvider) or a new primary (SwitchTo) publishes a new topo.
type topo struct {
	hosts   []*hostState  // by id; every host ever listed
	list    []int         // the current host list, in order (ids)
	member  []bool        // by id: in list
	primary int           // the id of the primary: home for classic targets
	home    []bool        // by id: a member where the pool wants to be (see Cluster.Home)
	policy  policy.Policy // the whole stack, user layers included
	base    policy.Policy // the built-in stack: user layers may reorder, never widen it
	from    []hostFrom    // by id: where a member came from (Stats)
}

// hostFrom is where a host of the list came from: the DSN, the provider's list, or
// discovery, and when discovery first found it.
type hostFrom struct {
	origin failover.HostOrigin
	since  time.Time // OriginDiscovered: when first found
}

// listEntry is one host of a list to apply (hostLists.set), with where it came from.
type listEntry struct {
	failover.ProvidedHost
	from hostFrom
}

// fromOf returns where member id of t came from.
func (t *topo) fromOf(id int) hostFrom {
	if id >= 0 && id < len(t.from) {
		return t.from[id]
	}
	return hostFrom{}
}

// newTopo builds a topo over hosts (ids; list the current list) for opts's policy
// settings. primary < 0 means the first local member.
func (hl *hostLists) newTopo(hosts []*hostState, list []int, primary int) (*topo, error) {
	t := &topo{hosts: hosts, list: list, member: make([]bool, len(hosts)), home: make([]bool, len(hosts))}
	for _, id := range list {
		t.member[id] = true
	}
	infos := t.infos()
	if hl.cfg.LocalDC != "" {
		found := false
		for _, id := range list {
			if dc := hosts[id].dc; dc == "" || dc == hl.cfg.LocalDC {
				found = true
				if primary < 0 {
					primary = id
				}
			}
		}
		if !found {
			return nil, fmt.Errorf("mysqlfailover: localDC %q matches no host of the list", hl.cfg.LocalDC)
		}
	}
	if primary < 0 {
		primary = list[0]
	}
	t.primary = primary
	var p policy.Policy = Rotation{}
	if hl.cfg.LocalDC != "" {
		listed := make([]policy.Host, len(list))
		for k, id := range list {
			listed[k] = infos[id]
		}
		p = NewDCAware(p, listed, hl.cfg.LocalDC, hl.cfg.UsedHostsPerRemoteDC)
	}
	if hl.c.Target() != attrs.Any {
		p = NewRoleAware(p, hl.c.Target())
	}
	t.base = p
	if hl.env.Layer != nil {
		if p = hl.env.Layer(p); p == nil {
			return nil, errors.New("mysqlfailover: a WithPolicy layer returned a nil Policy")
		}
	}
	t.policy = p
	standby := hl.cfg.standbyIntent()
	for _, id := range list {
		if standby {
			t.home[id] = t.base.Distance(infos[id]) == policy.Local
		} else {
			t.home[id] = id == primary
		}
	}
	return t, nil
}

// infos returns what policies see of every host now, by id.
func (t *topo) infos() []policy.Host {
	hs := make([]policy.Host, len(t.hosts))
	for i, h := range t.hosts {
		v := h.health()
		hs[i] = policy.Host{
			Index: i, Addr: h.addr, DC: h.dc,
			Role: v.role, ConnectTime: v.typical,
		}
	}
	return hs
}

// distance rates h with the whole stack, never nearer than the built-in layers, and a
// host that is not in the list is ignored.
func (t *topo) distance(h policy.Host) policy.Distance {
	if h.Index < 0 || h.Index >= len(t.member) || !t.member[h.Index] {
		return policy.Ignored
	}
	return max(t.policy.Distance(h), t.base.Distance(h))
}

// isHome reports whether host is where the pool wants to be (see Cluster.Home),
// ignoring the last-resort flag: the primary, or with a standby target any member that
// the built-in policy rates local.
func (t *topo) isHome(host int) bool { return host >= 0 && host < len(t.home) && t.home[host] }

// SetHosts replaces the host list (a HostListProvider's answer, primary first); the
// hosts discovery found (discoverHosts) follow it. Hosts
// already known (same address, case-insensitive, and same DC label) keep their state and
// id; new ones take the id of a host that left the list and is no longer used (see
// hostState), or a new one. A list equal to the current one changes nothing and reports
// nothing. It returns an error, and changes nothing, when ValidateHosts refuses the list
// (empty, a bad address or label, a duplicate; ErrInvalidHostList) or, with localDC, it
// has no local host. Connections on hosts that left the list, or away from the new
// primary, move at their next safe point: the active host becomes the new list's primary
// when the old active host left the list or the primary changed.
func (c *Cluster) SetHosts(hosts []failover.ProvidedHost) error {
	if err := ValidateHosts(hosts); err != nil {
		return err
	}
	return c.lists.apply(hosts)
}

// put applies entries (a valid list) as the host list. provided says the list
// comes from the provider (EventHostList), with the primary the first local host; else
// the change is discovery's, and the primary is kept where it is when it stays in the
// list. It reports the events once c.mu is released, and closes the idle
// shared sessions of hosts that left the list.
func (hl *hostLists) put(entries []listEntry, provided bool) error {
	evs, err := hl.set(entries, provided)
	for _, e := range evs {
		hl.c.emit(e)
	}
	hl.c.rpool.sweep(hl.env.Clock.Now().UnixNano()) // the idle shared sessions of hosts that left the list
	return err
}

// set is put under Cluster.mu. It returns the events to report once the lock is
// released.
func (hl *hostLists) set(hosts []listEntry, provided bool) ([]failover.Event, error) {
	keepPrimary := !provided
	hl.c.mu.Lock()
	defer hl.c.mu.Unlock()
	cur := hl.c.pos.Load()
	old := cur.t
	all := old.hosts
	// Ids of hosts that left the list may be given to new hosts when nothing can still
	// hold them: no physical connection is out (refs), no probe connection is kept, and
	// no walk, check or monitor round is running (they hold c.inUse for reading while
	// they use ids of the list they loaded; taking it for writing never waits).
	var free []int
	if hl.c.inUse.TryLock() {
		defer hl.c.inUse.Unlock()
		for i, s := range all {
			if !old.member[i] && i != cur.active && s.refs.Load() == 0 && !hl.c.mon.probes.has(i) {
				free = append(free, i)
			}
		}
	}
	list, all, copied := assignIds(hosts, all, free)
	from := make([]hostFrom, len(all))
	for k, id := range list {
		from[id] = hosts[k].from
	}
	if slices.Equal(list, old.list) && len(all) == len(old.hosts) && !copied && sameFrom(list, from, old) {
		return nil, nil
	}
	primary := -1
	if keepPrimary && slices.Contains(list, old.primary) {
		primary = old.primary
	}
	t, err := hl.newTopo(all, list, primary)
	if err != nil {
		return nil, err
	}
	t.from = from
	p := *cur
	p.t = t
	var evs []failover.Event
	if from := cur.active; !t.member[from] || t.primary != old.primary {
		p.active, p.lastResort = t.primary, false
		evs = append(evs, failover.Event{Kind: failover.EventSwitch, Host: t.hosts[t.primary].addr, From: t.hosts[from].addr,
			Err: errors.New("the host list changed")})
	}
	hl.c.publish(p)
	if !provided {
		return evs, nil
	}
	return append(evs, failover.Event{Kind: failover.EventHostList, Host: t.hosts[t.primary].addr, Err: nil}), nil
}

// assignIds gives each entry of hosts its id among all, the hosts ever listed: the id of
// the host of the same address and DC, or else one of free (ids of hosts that left the
// list, which nothing holds any more), or else a new one. It returns the list of ids in
// order, all with the new hosts in it, and whether all's slice was copied (readers of the
// older topo must never see its slice change: a free id is reused in a copy, and append
// copies through a three-index slice).
func assignIds(hosts []listEntry, all []*hostState, free []int) (list []int, _ []*hostState, copied bool) {
	list = make([]int, 0, len(hosts))
	for _, e := range hosts {
		h := e.ProvidedHost
		id := -1
		for i, s := range all {
			if strings.EqualFold(s.addr, h.Addr) && s.dc == h.DC {
				id = i
				break
			}
		}
		if k := slices.Index(free, id); k >= 0 {
			free = slices.Delete(free, k, k+1) // back in the list: it keeps its state
		}
		switch {
		case id >= 0:
		case len(free) > 0:
			if !copied {
				all, copied = slices.Clone(all), true
			}
			id, free = free[0], free[1:]
			all[id] = newHostState(h.Addr, h.DC)
		default:
			all = append(all[:len(all):len(all)], newHostState(h.Addr, h.DC))
			id = len(all) - 1
		}
		list = append(list, id)
	}
	return list, all, copied
}

// sameFrom reports whether the members of list came from where they came from in old.
func sameFrom(list []int, from []hostFrom, old *topo) bool {
	for _, id := range list {
		if from[id] != old.fromOf(id) {
			return false
		}
	}
	return true
}

// host returns the state of host id i in t, or nil.
func (t *topo) host(i int) *hostState {
	if i < 0 || i >= len(t.hosts) {
		return nil
	}
	return t.hosts[i]
}
