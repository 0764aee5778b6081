package cluster

// One writer: when more than one host of a replication cluster is writable at once (an
// old primary back with read_only=OFF after a promotion that did not fence it, a replica
// whose read_only was forgotten), which one the pool writes to, and the report of it.
// The look at the writable hosts (writerState.lookAt) reads, on a new session to each listed
// host, its role, its server_id, whom it replicates from, and for a writable host the
// replicas registered with it; it runs only when two hosts may be writable (a new pool's
// first walk with a write target, a fall-back to a writable home, a probe that finds a
// writable host beside the pool's writer), one at a time, and its answer is kept for
// DefaultWriterLookAge. The choice (writerEvidence.choose): the host the cluster follows
// (most replicas), then the one the pool writes to, then the list's order. The rules that
// use it: a fall-back never moves the pool from one writable host to another unless the
// cluster follows home (fallBackGate, returnBlocked), a new pool goes to the
// writer the cluster follows (firstWriter), and the monitor moves the pool to it
// (moveToWriter). Galera and Group Replication clusters have writers by design (every
// Galera node, a group's primary, whose secondaries are super_read_only): none of this
// applies to them.
//
// Lock order: writerState's mutex is taken alone; nothing is held while a look reads the
// servers, and the look records what it read (noteState) after releasing it.

import (
	"context"
	"database/sql/driver"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
	"github.com/mysqlfailover/mysqlfailover/policy"
)

// The queries of a look, besides ReadState and the replica status (ReplicaStatusQuery,
// or SlaveStatusQuery on servers that answer it with 1064). ReplicaHostsQuery (or
// SlaveHostsQuery on older servers) lists the replicas registered with a server; it needs
// REPLICATION MASTER ADMIN on MariaDB 10.5.2+ and REPLICATION SLAVE on MySQL, and without
// it the replicas' own status says whom they follow.
const (
	ServerIDQuery     = "SELECT @@server_id"
	ReplicaHostsQuery = "SHOW REPLICA HOSTS"
	SlaveHostsQuery   = "SHOW SLAVE HOSTS"
)

// writable reports whether a server of role r takes writes: read_only and
// super_read_only OFF (a RoleReadOnlyPrimary takes those of a READ WRITE transaction).
func writable(r failover.Role) bool {
	return r == failover.RolePrimary || r == failover.RoleReadOnlyPrimary
}

// oneWriter reports whether the cluster type has one writer by design: asynchronous
// replication (and a type not read yet). Every Galera node is a writer, and a Group
// Replication group names its own primary (its secondaries are super_read_only), so
// neither has two writers to choose between.
func (k Kind) oneWriter() bool {
	return k != KindGalera && k != KindGroup
}

// writerState is the last look at the writable hosts (Cluster.writers), under its own
// lock: its evidence, when it ended, the look in progress, and what was last reported.
type writerState struct {
	mu       sync.Mutex
	last     *writerEvidence // nil: no look yet
	reading  chan struct{}   // closed when the look in progress ends; nil: none
	reported string          // the writable hosts and the writer of the last EventTwoWriters

	cl   writersHost // the Cluster
	rec  *recorder   // the record of what a look reads (Cluster.rec)
	cfg  settings
	dial DialFunc // Env.Dial: a look's own sessions

	// gen counts the changes of what a look reads (a host's role, state or readiness):
	// an atomic, moved by the mechanisms that record them, so that a look taken before
	// one is not used after it.
	gen atomic.Int64
}

// writersHost is what the look at the writers needs of the Cluster: the host list in
// force, the clock and the events.
type writersHost interface {
	topo() *topo
	Now() time.Time
	emit(e failover.Event)
}

// writerEvidence is what one look found.
type writerEvidence struct {
	t   *topo
	at  time.Time // when the look ended
	gen int64     // writerState.gen when it ended
	// writable lists the hosts found writable and ready, in list order; followers gives,
	// by the same index, how many replicas were found following each (-1: unknown, the
	// replication of no host could be read).
	writable  []int
	followers []int
}

// has reports whether host id was found writable.
func (v *writerEvidence) has(id int) bool { return v != nil && slices.Contains(v.writable, id) }

// two reports whether more than one host was found writable.
func (v *writerEvidence) two() bool { return v != nil && len(v.writable) > 1 }

// choose returns the writer among the writable hosts, and why: the one most replicas
// follow; among those that tie, inUse (the host the pool writes to, -1 for none); then
// the first in list order. It returns -1 when no host was found writable.
func (v *writerEvidence) choose(inUse int) (writer int, why string) {
	if v == nil || len(v.writable) == 0 {
		return -1, ""
	}
	most := slices.Max(v.followers)
	var tied []int
	for k, id := range v.writable {
		if v.followers[k] == most {
			tied = append(tied, id)
		}
	}
	switch {
	case len(tied) == 1 && most > 0:
		return tied[0], "the cluster follows it"
	case slices.Contains(tied, inUse):
		return inUse, "the pool already writes to it"
	}
	return tied[0], "the first of the list"
}

// err describes the two writers for events and errors, with writer the chosen one.
func (v *writerEvidence) err(writer int, why string) *WritersError {
	e := &WritersError{Writer: v.t.hosts[writer].addr, Why: why}
	for k, id := range v.writable {
		e.Hosts = append(e.Hosts, v.t.hosts[id].addr)
		e.Followers = append(e.Followers, v.followers[k])
	}
	return e
}

// WritersError says that more than one host of a replication cluster was found writable
// at once (read_only OFF: two writers, whose data diverge), which one the pool writes to
// and why, and how to end it: fence the others. It is not a communication error.
type WritersError struct {
	// Writer is the host:port the pool writes to (or, when a fall-back was refused,
	// would write to: the pool stays where it is).
	Writer string
	// Why says why: "the cluster follows it" (its replicas), "the pool already writes to
	// it" or "the first of the list".
	Why string
	// Hosts lists every writable host:port, in list order.
	Hosts []string
	// Followers gives, by Hosts, the replicas found following each (count; -1: unknown,
	// no replication could be read).
	Followers []int
}

// Error names every writable host, with its followers, the writer and the fix, e.g.
// "two writers: db1:3306 (followed by 0 replicas) and db2:3306 (followed by 1 replica)
// are writable; the writer is db2:3306 (the cluster follows it); fence db1:3306:
// SET GLOBAL read_only=ON on it (super_read_only=ON on MySQL), or stop it".
func (e *WritersError) Error() string {
	parts := make([]string, len(e.Hosts))
	var others []string
	for k, h := range e.Hosts {
		switch n := e.Followers[k]; {
		case n < 0:
			parts[k] = h + " (followers unknown)"
		case n == 1:
			parts[k] = h + " (followed by 1 replica)"
		default:
			parts[k] = h + " (followed by " + strconv.Itoa(n) + " replicas)"
		}
		if h != e.Writer {
			others = append(others, h)
		}
	}
	list := strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
	fix := "fence " + strings.Join(others, ", ")
	if e.Why != "the cluster follows it" {
		fix = "fence every writable host but the primary"
	}
	return "two writers: " + list + " are writable; the writer is " + e.Writer + " (" + e.Why + "); " +
		fix + ": SET GLOBAL read_only=ON on it (super_read_only=ON on MySQL), or stop it"
}

// fresh returns the last look's evidence when it is about the list in force, no
// host's role, state or readiness changed since, and it is younger than
// DefaultWriterLookAge; else nil.
func (ws *writerState) fresh() *writerEvidence {
	ws.mu.Lock()
	v := ws.last
	ws.mu.Unlock()
	if v == nil || v.t != ws.cl.topo() || v.gen != ws.gen.Load() || ws.cl.Now().Sub(v.at) >= DefaultWriterLookAge {
		return nil
	}
	return v
}

// session is a host's session that a look reads instead of opening one (id -1: none),
// with the state just read on it (nil: not read).
type session struct {
	id   int
	conn driver.Conn
	st   *State
}

// lookAt returns the evidence of a look at the writable hosts: the last one while
// it is fresh and found the hosts of need writable (they are now), else a new one (one at
// a time: the callers that come meanwhile wait for it within their context), which reads
// have's host over have's session. inUse is the host the pool writes to (-1: none), for
// the report. The caller holds c.inUse for reading.
func (ws *writerState) lookAt(ctx context.Context, inUse int, have session, need ...int) *writerEvidence {
	waited := false
	for {
		if v := ws.fresh(); v != nil && (waited || hasAll(v, need)) {
			return v
		}
		ws.mu.Lock()
		if wait := ws.reading; wait != nil {
			ws.mu.Unlock()
			select {
			case <-wait:
				waited = true // a look that ended after the caller came
				continue
			case <-ctx.Done():
				return nil
			}
		}
		done := make(chan struct{})
		ws.reading = done
		ws.mu.Unlock()
		v := ws.look(ctx, have)
		if v != nil {
			v.gen = ws.gen.Load() // after the look's own records of what it read
		}
		ws.mu.Lock()
		if v != nil {
			ws.last = v
		}
		ws.reading = nil
		close(done)
		ws.mu.Unlock()
		if v != nil {
			ws.report(v, inUse)
		}
		return v
	}
}

// hasAll reports whether v found every host of ids writable.
func hasAll(v *writerEvidence, ids []int) bool {
	for _, id := range ids {
		if !v.has(id) {
			return false
		}
	}
	return true
}

// report emits EventTwoWriters for v, once per set of writable hosts and writer.
func (ws *writerState) report(v *writerEvidence, inUse int) {
	if !v.two() {
		ws.mu.Lock()
		ws.reported = ""
		ws.mu.Unlock()
		return
	}
	w, why := v.choose(inUse)
	key := fmt.Sprint(v.writable, w)
	ws.mu.Lock()
	same := ws.reported == key
	ws.reported = key
	ws.mu.Unlock()
	if same {
		return
	}
	e := v.err(w, why)
	ev := failover.Event{Kind: failover.EventTwoWriters, Host: e.Writer, Err: e}
	for _, h := range e.Hosts {
		if h != e.Writer {
			ev.From = h
			break
		}
	}
	ws.cl.emit(ev)
}

// hostEvidence is what a look read of one host.
type hostEvidence struct {
	read     bool    // the state was read
	st       State   // its role and readiness
	serverID int64   // @@server_id (0: not read)
	status   bool    // its replica status was read
	sources  []int64 // the server_ids its replication follows (Master_Server_Id)
	replicas []int64 // the server_ids registered with it (ReplicaHostsQuery); nil: not read
}

// look reads every listed host the policy does not ignore and the probes have not
// declared down, in parallel, each on a new session within the fixed probe bound (have's
// host on have's session), and returns what it found (nil when ctx ended first). It
// records each host's state (noteState).
func (ws *writerState) look(ctx context.Context, have session) *writerEvidence {
	t := ws.cl.topo()
	infos := t.infos()
	ev := make([]hostEvidence, len(t.hosts))
	var wg sync.WaitGroup
	for _, id := range t.list {
		if t.distance(infos[id]) == policy.Ignored || t.hosts[id].health().down {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if id == have.id {
				ev[id] = ws.readEvidence(ctx, id, have.conn, have.st)
			} else {
				ev[id] = ws.readEvidence(ctx, id, nil, nil)
			}
		}()
	}
	wg.Wait()
	if ctx.Err() != nil {
		return nil
	}
	v := &writerEvidence{t: t}
	known := false
	for _, id := range t.list {
		e := ev[id]
		if !e.read {
			continue
		}
		ws.rec.noteState(id, e.st)
		known = known || e.status || e.replicas != nil
		if writable(e.st.Role) && e.st.NotReady == nil {
			v.writable = append(v.writable, id)
		}
	}
	v.followers = followers(t.list, ev, v.writable, known)
	v.at = ws.cl.Now()
	return v
}

// followers returns, for each of the writable hosts (in their order), how many replicas
// of list follow it, by what the look read (ev, by id); -1 for each when no host's
// replication could be read (known false). A replica's own status says whom it follows;
// a registration on a writable host counts only for the replicas whose status could not
// be read.
func followers(list []int, ev []hostEvidence, writable []int, known bool) []int {
	out := make([]int, 0, len(writable))
	said := map[int64]bool{}
	for _, id := range list {
		if ev[id].status && ev[id].serverID != 0 {
			said[ev[id].serverID] = true
		}
	}
	for _, w := range writable {
		n := -1
		if known {
			who := map[int64]bool{}
			if sid := ev[w].serverID; sid != 0 {
				for _, id := range list {
					if id != w && ev[id].status && slices.Contains(ev[id].sources, sid) {
						who[ev[id].serverID] = true
					}
				}
			}
			for _, r := range ev[w].replicas {
				if !said[r] && r != ev[w].serverID {
					who[r] = true
				}
			}
			n = len(who)
		}
		out = append(out, n)
	}
	return out
}

// readEvidence reads host id's state (unless st gives it), server_id, replica status
// and, when it is writable, the replicas registered with it, within the fixed probe
// bound, over conn or a session it opens (and closes) when conn is nil. What could not
// be read stays unknown.
func (ws *writerState) readEvidence(ctx context.Context, id int, conn driver.Conn, st *State) (e hostEvidence) {
	rctx, cancel := withBudget(ctx, ws.cfg.probeTimeout())
	defer cancel()
	if conn == nil {
		var err error
		if conn, err = ws.dial(rctx, id); err != nil {
			return e
		}
		defer conn.Close()
	}
	if st != nil {
		e.st = *st
	} else {
		var err error
		if e.st, err = ReadState(rctx, conn, kindOf(ws.cfg.Cluster)); err != nil {
			return e
		}
	}
	e.read = true
	if rows, err := queryRows(rctx, conn, ServerIDQuery); err == nil && len(rows) == 1 && len(rows[0]) == 1 {
		e.serverID, _ = strconv.ParseInt(dialect.Text(rows[0][0]), 10, 64)
	}
	e.sources, e.status = readSources(rctx, conn)
	if writable(e.st.Role) {
		e.replicas = readReplicaHosts(rctx, conn)
	}
	return e
}

// readSources reads whom the server replicates from: the Master_Server_Id (or
// Source_Server_Id) of each replication channel, the last source its IO thread reached,
// whether the thread runs now or not (a replica stopped by hand still belongs to its
// source; one re-pointed elsewhere names its new source once it has connected to it),
// and whether the status could be read at all.
func readSources(ctx context.Context, conn driver.Conn) ([]int64, bool) {
	rows, cols, err := queryColumns(ctx, conn, ReplicaStatusQuery)
	if dialect.Number(err) == dialect.ErrParse {
		rows, cols, err = queryColumns(ctx, conn, SlaveStatusQuery)
	}
	if err != nil {
		return nil, false
	}
	src := column(cols, "Source_Server_Id", "Master_Server_Id")
	var out []int64
	for _, r := range rows {
		if src < 0 {
			continue
		}
		if n, err := strconv.ParseInt(dialect.Text(r[src]), 10, 64); err == nil && n != 0 {
			out = append(out, n)
		}
	}
	return out, true
}

// readReplicaHosts reads the server_ids of the replicas registered with the server
// (ReplicaHostsQuery), or nil when it cannot be read (no privilege).
func readReplicaHosts(ctx context.Context, conn driver.Conn) []int64 {
	hosts, _, err := registeredReplicas(ctx, conn)
	if err != nil {
		return nil
	}
	out := []int64{}
	for _, h := range hosts {
		out = append(out, h.serverID)
	}
	return out
}

// registered is one replica registered with a server: its server_id and the address
// it reports (report_host and report_port; MariaDB lists one without report_host under
// its own port and the address it connected from).
type registered struct {
	serverID int64
	host     string
	port     int
}

// registeredReplicas reads the replicas registered with the server: ReplicaHostsQuery, or
// SlaveHostsQuery on a server that answers it with 1064. The query that failed comes
// with the error.
func registeredReplicas(ctx context.Context, conn driver.Conn) ([]registered, string, error) {
	query := ReplicaHostsQuery
	rows, cols, err := queryColumns(ctx, conn, query)
	if dialect.Number(err) == dialect.ErrParse {
		query = SlaveHostsQuery
		rows, cols, err = queryColumns(ctx, conn, query)
	}
	if err != nil {
		return nil, query, err
	}
	id, host, port := column(cols, "Server_id"), column(cols, "Host"), column(cols, "Port")
	if id < 0 {
		return nil, query, fmt.Errorf("mysqlfailover: %s answered without a Server_id column", query)
	}
	out := make([]registered, 0, len(rows))
	for _, r := range rows {
		n, err := strconv.ParseInt(dialect.Text(r[id]), 10, 64)
		if err != nil {
			continue
		}
		h := registered{serverID: n}
		if host >= 0 {
			h.host = strings.TrimSpace(dialect.Text(r[host]))
		}
		if port >= 0 {
			h.port, _ = strconv.Atoi(dialect.Text(r[port]))
		}
		out = append(out, h)
	}
	return out, query, nil
}

// column returns the index of the first of names among cols (case-insensitive), or -1.
func column(cols []string, names ...string) int {
	for _, n := range names {
		for i, c := range cols {
			if strings.EqualFold(c, n) {
				return i
			}
		}
	}
	return -1
}

// fallBackGate decides whether a fall-back to home over conn (a new session there) may
// move the pool from its host from: never from one writable host to another, unless the
// cluster follows home (its replicas). It reads home's role on conn when the attempt did
// not (targetSessionAttrs any), and when home is writable looks at the writable hosts. It
// returns nil when the fall-back may go on, the *WritersError when two writers keep the
// pool where it is, or the error that broke conn. The caller holds c.inUse for reading.
func (wk *walker) fallBackGate(ctx context.Context, conn driver.Conn, home, from int) error {
	if !wk.c.Kind().oneWriter() || wk.cfg.standbyIntent() {
		return nil
	}
	role := wk.c.topo().hosts[home].health().role
	if wk.c.Target() == attrs.Any {
		// The attempt read no role (or only the cluster type's, once): one round trip.
		r, err := ReadRole(ctx, conn)
		if err != nil {
			if Classify(ctx, err) == Data {
				return nil // the role cannot be read: the fall-back goes on as it always did
			}
			return dialect.NotBadConn(err, "role check failed")
		}
		role = r
		wk.c.rec.setRole(home, r)
	}
	if !writable(role) {
		return nil
	}
	need := []int{home}
	if writable(wk.c.topo().hosts[from].health().role) {
		need = append(need, from)
	}
	v := wk.c.writers.lookAt(ctx, from, session{home, conn, &State{Role: role, Kind: wk.c.Kind()}}, need...)
	if v == nil {
		return EndErr(ctx)
	}
	return writerBlocks(v, home, from)
}

// writerBlocks returns the *WritersError that keeps the pool on from rather than return
// to home, by the evidence v: both writable, and the cluster does not follow home; nil
// when the return may go on.
func writerBlocks(v *writerEvidence, home, from int) error {
	if !v.has(home) || !v.has(from) {
		return nil
	}
	if w, why := v.choose(from); w != home {
		return v.err(w, why)
	}
	return nil
}

// firstWriter is the choice of a new pool's first walk (write targets only), which
// connected to host h over conn: when a host the walk has not tried is writable too and
// the cluster follows it (or it comes first in the list), the walk takes that one
// instead. It
// returns the connection and host to land on; when the attempt at the writer fails,
// conn is closed, the writer's error recorded, and the *WritersError returned: the walk
// goes on past h. The caller holds c.inUse for reading.
func (wk *walker) firstWriter(ctx context.Context, w *walkRun, h int, conn driver.Conn, setup SetupFunc) (driver.Conn, int, error) {
	if wk.c.pos.Load().settled || !WriteIntent(wk.c.Target()) || !wk.c.Kind().oneWriter() || !writable(w.t.hosts[h].health().role) {
		return conn, h, nil
	}
	// The hosts this walk tried before h failed it (unreachable, not ready, of a role
	// that does not write): with no other host to ask, h is the one writer.
	untried := false
	for _, x := range w.t.list {
		untried = untried || x != h && !w.tried[x]
	}
	if !untried {
		return conn, h, nil
	}
	v := wk.c.writers.lookAt(ctx, -1, session{h, conn, &State{Role: w.t.hosts[h].health().role, Kind: wk.c.Kind()}}, h)
	writer, why := v.choose(-1)
	if !v.two() || writer == h || !v.has(h) {
		return conn, h, nil
	}
	_ = conn.Close()
	wk.c.Release(h)
	werr := v.err(writer, why)
	w.errs[h] = werr // the cause of the switch this walk makes
	w.tried[writer] = true
	next, _, err := wk.c.att.attempt(ctx, writer, setup, false)
	if err != nil {
		w.errs[writer] = err
		return nil, h, werr
	}
	return next, writer, nil
}

// moveToWriter moves the pool at pos to the writer the cluster follows when the last
// fresh look found its active host writable beside another one that more replicas follow
// (write targets only), once that host's probes have passed for SwitchBackDelay, as a
// return home waits (a read_only that flaps never draws the pool back and forth), and
// reports whether it did. A writer that is home is returnHome's to return to.
func (mon *monitor) moveToWriter(pos *position, now time.Time) bool {
	if !WriteIntent(mon.c.Target()) || !mon.c.Kind().oneWriter() {
		return false
	}
	v := mon.c.writers.fresh()
	a := pos.active
	if !v.two() || !v.has(a) || v.t != pos.t {
		return false
	}
	w, why := v.choose(a)
	if w == a || pos.t.isHome(w) || !pos.t.hosts[w].healthy(now, mon.cfg.SwitchBackDelay) {
		return false
	}
	cause := v.err(w, why)
	if !mon.c.moveFrom(pos, func(p *position) {
		p.active, p.lastResort = w, false
		if !p.t.isHome(w) {
			mon.c.restartClocks(p, false)
		}
		p.failovers++
	}) {
		return false
	}
	mon.c.emit(failover.Event{Kind: failover.EventSwitch, Host: pos.t.hosts[w].addr, From: pos.t.hosts[a].addr, Err: cause})
	return true
}

// probeLooks has a passed probe of host id, which read st (nil: SELECT 1), look at the
// writable hosts when the pool may have two writers to choose between: the pool is away
// from home, id is home and has passed its probes for SwitchBackDelay (returnHome needs
// the look before it returns), or, with a write target, the probe found id writable
// while the pool's host is writable too (moveToWriter acts on the look). The look is the
// last one while fresh. The caller holds c.inUse for reading.
func (mon *monitor) probeLooks(ctx context.Context, id int, st *State) {
	pos := mon.c.pos.Load()
	if !mon.c.Kind().oneWriter() || mon.cfg.standbyIntent() || id == pos.active || st != nil && !writable(st.Role) {
		return
	}
	switch {
	case !pos.home && id == pos.t.primary:
		if !pos.t.hosts[id].healthy(mon.env.Clock.Now(), mon.cfg.SwitchBackDelay) {
			return
		}
	case st == nil || !WriteIntent(mon.c.Target()) || !writable(pos.t.hosts[pos.active].health().role):
		return
	}
	if st != nil {
		mon.c.writers.lookAt(ctx, pos.active, session{id: -1}, id)
	} else {
		mon.c.writers.lookAt(ctx, pos.active, session{id: -1})
	}
}

// stats is Stats.Writers at position p: the hosts the last look found writable,
// the pool's writer first, while more than one of them is still writable and up as far
// as the driver knows; nil otherwise.
func (ws *writerState) stats(p *position) []string {
	ws.mu.Lock()
	v := ws.last
	ws.mu.Unlock()
	if !v.two() || v.t != p.t {
		return nil
	}
	w, _ := v.choose(p.active)
	var out []string
	for _, id := range v.writable {
		h := p.t.hosts[id].health()
		if h.down || !writable(h.role) {
			continue
		}
		if id == w {
			out = append([]string{p.t.hosts[id].addr}, out...)
		} else {
			out = append(out, p.t.hosts[id].addr)
		}
	}
	if len(out) < 2 {
		return nil
	}
	return out
}

// returnBlocked reports whether the monitor's return to home from the pool's host from
// waits: in a replication cluster, with a target that writes, until a fresh look at the
// writable hosts (the probes of home make one while the pool is away) says that they are
// not both writable, or that the cluster follows home.
func (mon *monitor) returnBlocked(home, from int) bool {
	if !mon.c.Kind().oneWriter() || mon.cfg.standbyIntent() {
		return false
	}
	v := mon.c.writers.fresh()
	return v == nil || writerBlocks(v, home, from) != nil
}
