package cluster

// Home reports whether host is where the pool wants to be, so that a pool there has
// nothing to fall back to: the primary, or with targetSessionAttrs standby, read-only or
// prefer-standby any local host (unless prefer-standby had to take it as a last resort).
// It is on every statement's path: three loads.
func (c *Cluster) Home(host int) bool { return c.home(c.t.Load(), host) && !c.lastResort.Load() }

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
// Home in one, with one read of the host list. It is on every statement's path.
func (c *Cluster) Place(host int) Place {
	if int(c.active.Load()) != host {
		return PlaceAway
	}
	t := c.t.Load()
	h := t.host(host)
	switch {
	case h == nil || h.unfit.Load() || !t.member[host]:
		return PlaceAway
	case c.home(t, host) && !c.lastResort.Load():
		return PlaceHome
	}
	return PlaceActive
}

// Active returns the id of the host the pool uses now. Connections on another host move
// to it at their next safe point.
func (c *Cluster) Active() int { return int(c.active.Load()) }

// Unfit reports whether a connection on host must move before its next statement or
// transaction although the host may be the active one: the last role check found a role
// that targetSessionAttrs does not accept (a connection on a demoted primary joins the
// walk instead of sending there while another connection looks for the writer), or the
// host left the list. Always false with targetSessionAttrs any and a fixed list.
func (c *Cluster) Unfit(host int) bool {
	t := c.t.Load()
	h := t.host(host)
	return h == nil || h.unfit.Load() || !t.member[host]
}
