package cluster

// The pool's position: the host list in force, which host of it the pool uses (the
// active host) and whether only as a last resort, the fall-back clock, and the counts of
// the moves. They change together (a walk that lands elsewhere moves the host and starts
// the clock; a new host list may move the host), so every change is made under
// Cluster.mu, on a copy, and published whole as a new position through Cluster.pos.
// Readers take one atomic load and never a lock: Place, Home and Active run before every
// statement.

// position is one version of the pool's position. It is never modified once published.
type position struct {
	t          *topo // the host list that active (and every id) refers to
	active     int   // id of the host the pool uses
	lastResort bool  // prefer-standby: the pool is on a non-standby for want of a standby

	// The fall-back clock, as clock times (UnixNano): since is when the pool left home
	// or last failed to return (0: never), failedAt the last failed attempt to return
	// (0: none). The statement counter that goes with them is Cluster.ran.
	since, failedAt int64

	failovers, fallBacks int64 // moves off a host for a failure, and returns home (Stats)
	settled              bool  // a walk has landed: the pool has chosen a host (a new pool has not)

	// Derived by publish from the above and the active host's role, for the hot path.
	home  bool  // the active host is home (see Cluster.Home)
	place Place // what a connection on the active host needs (see Cluster.Place)
}

// publish derives p's hot-path fields and makes p the position. It is called with c.mu
// held (or, in New, before the Cluster is shared), and reads the active host's fitness:
// whoever changes that (setRole) publishes again afterwards, so the last publication
// always reflects it.
func (c *Cluster) publish(p position) *position {
	p.home = !p.lastResort && p.t.isHome(p.active)
	switch h := p.t.host(p.active); {
	case h == nil || h.isUnfit() || !p.t.member[p.active]:
		p.place = PlaceAway
	case p.home:
		p.place = PlaceHome
	default:
		p.place = PlaceActive
	}
	if prev := c.pos.Load(); prev != nil && (prev.active != p.active || prev.t != p.t) {
		defer c.news.post() // a walk that pauses may find the pool's new host
	}
	c.pos.Store(&p)
	return &p
}

// update applies change to a copy of the position under c.mu and publishes the result.
// It returns the positions before and after. change must not block or call out.
func (c *Cluster) update(change func(p *position)) (prev, cur *position) {
	c.mu.Lock()
	defer c.mu.Unlock()
	prev = c.pos.Load()
	p := *prev
	change(&p)
	return prev, c.publish(p)
}

// refit publishes the position again when host is the active host, whose fitness (its
// role) has just changed.
func (c *Cluster) refit(host int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if p := c.pos.Load(); p.active == host {
		c.publish(*p)
	}
}

// topo returns the host list in force.
func (c *Cluster) topo() *topo { return c.pos.Load().t }

// Home reports whether host is where the pool wants to be, so that a pool there has
// nothing to fall back to: the primary, or with targetSessionAttrs standby, read-only or
// prefer-standby any local host (unless prefer-standby had to take it as a last resort).
// It is on every statement's path: one load.
func (c *Cluster) Home(host int) bool {
	p := c.pos.Load()
	if host == p.active {
		return p.home
	}
	return !p.lastResort && p.t.isHome(host)
}

// Place is where a connection's host stands for its next statement (see Cluster.Place).
type Place int

const (
	// PlaceAway: not the pool's host, or unfit (see Unfit): the connection joins the
	// pool's host before it sends anything.
	PlaceAway Place = iota
	// PlaceActive: the pool's host, but not home: the statement may first fall back.
	PlaceActive
	// PlaceHome: the pool's host and home (see Home): nothing to do.
	PlaceHome
)

// Place tells a connection on host what its next statement needs: Active, Unfit and
// Home in one, with one load. It is on every statement's path.
func (c *Cluster) Place(host int) Place {
	p := c.pos.Load()
	if p.active != host {
		return PlaceAway
	}
	return p.place
}

// Active returns the id of the host the pool uses now. Connections on another host move
// to it at their next safe point.
func (c *Cluster) Active() int { return c.pos.Load().active }

// Unfit reports whether a connection on host must move before its next statement or
// transaction although the host may be the active one: the last role check found a role
// that targetSessionAttrs does not accept (a connection on a demoted primary joins the
// walk instead of sending there while another connection looks for the writer), or the
// host left the list. Always false with targetSessionAttrs any and a fixed list.
func (c *Cluster) Unfit(host int) bool {
	p := c.pos.Load()
	if host == p.active {
		return p.place == PlaceAway
	}
	h := p.t.host(host)
	return h == nil || h.isUnfit() || !p.t.member[host]
}
