package conn

// Replica reads (replicaReads): a Conn's replica sessions beside its primary one, the
// routing of read-intent statements to them, what a replica failure means, and causal
// reads. The design is Connector/J's replication connection: one logical connection, a
// source session and replica sessions, so that database/sql's one pool serves both
// intents; but the replica sessions are the pool's, shared (cluster.Replicas.Take): a
// statement takes an idle one of the replica it goes to, and its connection gives it
// back when the statement is over (giveBack), unless something needs that very session
// still (holds: its rows, a prepared statement, a read-only transaction). The sessions
// open on a replica follow the concurrent reads: at most one per pooled connection
// (replicaPoolSize bounds them further), plus one probe connection per host with
// checkInterval > 0 (none where the pool's primary sessions sit idle: the probes
// borrow one of those, lend.go).

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

// replicaEpoch is the bit of the epochs of replica sessions: a Conn's primary sessions
// count their epochs up from 1 and never reach it, so one number says which session a
// statement or Rows belongs to.
const replicaEpoch = stmt.SideEpoch

// rsession is one replica session: the pool's (idle, in cluster's shared stacks) or one
// Conn's (its split.sess) while that Conn uses it.
type rsession struct {
	phys     driver.Conn
	host     int
	epoch    uint64 // unique in the pool, with replicaEpoch set
	execer   driver.ExecerContext
	queryer  driver.QueryerContext
	db       string // the database it is in
	reached  string // the causal position it is known to have applied
	lastUsed int64  // cluster clock (UnixNano) of its last use: an idle one is checked first
	// holds counts what keeps the session with its Conn once a call is over: its open
	// rows, the preparations of statements on it, a read-only transaction on it.
	holds int
	// idled: it sat idle before the statement in progress (taken from the pool, or held
	// by the connection), so a break at once may be its server's restart under it, not
	// the host's death (failReplica).
	idled bool
	// dirty: a statement of a read-only transaction on it was not a plain one (SET, USE,
	// a COMMIT or BEGIN as a statement, ...): what it left on the session is this
	// connection's, so the session is closed when the transaction ends, never shared.
	dirty bool
}

// Replica implements cluster.PooledReplica.
func (rs *rsession) Replica() (driver.Conn, int, int64) { return rs.phys, rs.host, rs.lastUsed }

// split is a Conn's replica side; nil without replicaReads, which is the one check the
// statement path makes then.
type split struct {
	cl      *cluster.Cluster
	sess    []*rsession // the replica sessions it holds now, at most one per host
	tried   uint64      // hosts (bit per id) that failed the statement in progress
	prefer  int         // the replica the statement in progress went to (its PREPARE, or the ErrSkip before it; -1: none): its next step goes there too
	running *rsession   // the replica session of the prepared statement in progress (its attempt to Ran or fail)
	intent  bool        // the statement route last saw has a read intent (wherever it ran: not a write for causal reads)

	setup cluster.SetupFunc // a new replica session's (Conn.rsetup)

	causal    string // cluster.CausalLocal or CausalGlobal; "" for none
	wrote     bool   // local: a statement ran on the primary since pos was read
	wroteOn   uint64 // local: the epoch of the primary session the first write since pos ran on
	wroteHost int    // local: and its host
	pos       string // local: this connection's last write position ("" none known)
	toPrimary bool   // readFromSourceWhenNoReplicas

	// behind holds, per replica host, until when (cluster clock, UnixNano) it is skipped
	// by causal reads: it did not reach a position within causalReadsTimeout a moment
	// ago, so the next reads try the other replicas first, then the primary, without
	// waiting on it again (database/sql's prepare-then-run of a statement with arguments
	// asks three times, and each new write is a new position).
	behind map[int]int64
}

// newSplit returns the replica side for cfg, nil without ReplicaReads.
func newSplit(cfg Config, cl *cluster.Cluster) *split {
	if !cfg.ReplicaReads {
		return nil
	}
	sp := &split{cl: cl, prefer: -1, toPrimary: cfg.ReadFromSourceWhenNoReplicas}
	switch cfg.CausalReads {
	case cluster.CausalLocal, cluster.CausalGlobal:
		sp.causal = cfg.CausalReads
	}
	return sp
}

// route says where statement query of kind k runs: a replica session, or nil for the
// primary session (err is then the error of a read no replica could serve, with
// readFromSourceWhenNoReplicas=false, or of a lost read-only transaction). first marks
// the first attempt of a statement: the replicas that failed the last one may serve it.
// Inside a Tx, the Tx's session; outside one, a replica only for a read intent (the
// context's, or SetReadOnly(true)) on a plain statement (not a SET, USE or BEGIN, nor
// one that creates or drops a temporary table: dialect.Session; nor one whose text
// touches the primary session's own state: dialect.Holds, dialect.Reads), with
// autocommit on, no transaction opened by statements on the primary session, and no
// temporary table held by it (its reads would not find the table on a replica: MaxScale
// sends them to the primary too).
func (c *Conn) route(ctx context.Context, k stmt.Kind, first bool) (*rsession, error) {
	sp := c.sp
	if first {
		sp.tried = 0
	}
	sp.intent = false
	if c.tx != nil {
		if rs := c.tx.rs; rs != nil {
			if c.tx.lost != nil {
				return nil, c.tx.lost
			}
			if k != kPlain {
				rs.dirty = true // a statement that changes the session: it is not shared again
			}
		}
		return c.tx.rs, nil
	}
	if g := c.gone; g != nil && (g.NamedLocks > 0 || len(g.TempTables) > 0 || g.UserVariables) {
		return nil, nil // the primary session ended holding state: ready says what it held
	}
	if k != kPlain || c.lost != nil || c.st.ac != acOn || c.st.held() || len(c.sess.has.temps) > 0 {
		return nil, nil
	}
	key, ok := readIntent(ctx)
	if !ok && !c.explicitRO {
		return nil, nil
	}
	sp.intent = true
	return c.replica(ctx, key)
}

// prepareReplica is PrepareContext's run on the replica session rs (see attempts): a
// read-intent statement is prepared on the replica it will run on (its runs go
// there too: split.prefer).
func (c *Conn) prepareReplica(ctx context.Context, rs *rsession, query string, k stmt.Kind) (driver.Stmt, bool, error) {
	s, err := prepareOn(ctx, rs.phys, query)
	if err != nil {
		return nil, false, err
	}
	c.sp.prefer = rs.host
	return c.free.newStmt((*h)(c), query, s, rs.epoch, k), true, nil
}

// replica returns a replica session for a read-intent statement with routing key key
// ("" none), its causal wait done, or nil to run the statement on the primary.
func (c *Conn) replica(ctx context.Context, key string) (*rsession, error) {
	sp := c.sp
	behind := false // a replica did not have the write: the primary serves it, whatever readFromSourceWhenNoReplicas says
	for range cluster.DefaultReplicaTries {
		host := -1
		if p := sp.prefer; p >= 0 {
			sp.prefer = -1
			if key == "" && c.cl.Replicas().Qualifies(p) && (p >= 64 || sp.tried&(1<<p) == 0) {
				host = p
			}
		}
		if host < 0 {
			host = c.cl.Replicas().Pick(key, key != "", sp.tried)
		}
		if host < 0 {
			break
		}
		if sp.causal != "" && sp.behind[host] > c.cl.Now().UnixNano() {
			sp.tried |= bit(host) // it missed a position a moment ago: the others first
			behind = true
			continue
		}
		rs, err := sp.sessionOn(ctx, host, c.db)
		if err == nil && sp.causal != "" {
			var ok bool
			if ok, err = c.causalWait(ctx, rs); err == nil && !ok {
				// The replica is behind the write: another replica, or the primary.
				if sp.behind == nil {
					sp.behind = map[int]int64{}
				}
				sp.behind[host] = c.cl.Now().Add(c.cl.Replicas().CausalTimeout()).UnixNano()
				sp.tried |= bit(host)
				behind = true
				continue
			}
		}
		if err == nil {
			return rs, nil
		}
		if cluster.Ended(ctx) {
			return nil, cluster.EndErr(ctx)
		}
		if errors.Is(err, errNoPosition) {
			c.cl.Replicas().NoteCausal(false)
			return nil, nil
		}
		if rs != nil {
			sp.dropReplica(rs) // its wait failed: a new session next time
		}
		sp.tried |= bit(host)
	}
	if behind {
		c.cl.Replicas().NoteCausal(false) // no qualifying replica had the write in time: the primary
		return nil, nil
	}
	if !sp.toPrimary {
		return nil, c.cl.Replicas().NoneError()
	}
	c.cl.Replicas().NoteToPrimary()
	return nil, nil
}

// bit is host's bit in split.tried (none from 64 on).
func bit(host int) uint64 {
	if host >= 64 {
		return 0
	}
	return 1 << host
}

// sessionOn returns a replica session on host for this connection, in its current
// database db: the one it holds there, else an idle one of the pool's, else a new one. A
// session idle for cluster.DefaultIdleCheck or more first gets go-sql-driver's liveness
// check, as the primary session does (stale): a replica restarted or a wait_timeout
// meanwhile leaves dead sessions, and database/sql checks a pooled connection only when
// it hands it out, never between the calls of a pinned *sql.Conn. A dead one is replaced
// on the same host, so that a routing key keeps to its replica.
func (sp *split) sessionOn(ctx context.Context, host int, db string) (*rsession, error) {
	now := sp.cl.Now().UnixNano()
	for _, rs := range sp.sess {
		if rs.host == host {
			if sp.replicaDead(ctx, rs, now, sp.cl.Replicas().Suspect(host, rs.lastUsed)) {
				break // dead while it sat idle: another one on the same host
			}
			rs.idled = true
			return sp.inDB(ctx, rs, db)
		}
	}
	for {
		p, check, err := sp.cl.Replicas().Take(ctx, host, now)
		if err != nil {
			return nil, err
		}
		if p == nil {
			break // none idle: a new one
		}
		rs := p.(*rsession)
		sp.sess = append(sp.sess, rs)
		if db == "" && rs.db != "" {
			// Another connection moved it to a database, and no statement leaves one:
			// a connection in none (a DSN without one, no USE) needs a session in none.
			sp.dropReplica(rs)
			continue
		}
		if !sp.replicaDead(ctx, rs, now, check) {
			rs.idled = true
			return sp.inDB(ctx, rs, db)
		}
	}
	phys, err := sp.cl.Replicas().Open(ctx, host, sp.setup)
	if err != nil {
		sp.cl.Replicas().Closed(host, false)
		return nil, err
	}
	rs := &rsession{phys: phys, host: host, epoch: replicaEpoch | sp.cl.Replicas().Epoch(), db: db, lastUsed: now}
	rs.execer, _ = phys.(driver.ExecerContext)
	rs.queryer, _ = phys.(driver.QueryerContext)
	sp.sess = append(sp.sess, rs)
	return rs, nil
}

// replicaDead reports whether replica session rs, which this connection holds, was
// found dead (and dropped) by the liveness check it gets after sitting idle, or when
// check (it sat idle while another session of its host broke); else it is used at now.
func (sp *split) replicaDead(ctx context.Context, rs *rsession, now int64, check bool) bool {
	if check || now-rs.lastUsed >= int64(cluster.DefaultIdleCheck) {
		if r, ok := rs.phys.(driver.SessionResetter); ok && r.ResetSession(ctx) != nil {
			sp.dropReplica(rs)
			return true
		}
	}
	rs.lastUsed = now
	return false
}

// inDB moves replica session rs to the connection's current database db.
func (sp *split) inDB(ctx context.Context, rs *rsession, db string) (*rsession, error) {
	if rs.db != db && db != "" {
		if err := execOn(ctx, rs.phys, "USE "+dialect.QuoteIdent(db)); err != nil {
			sp.dropReplica(rs)
			return nil, err
		}
		rs.db = db
	}
	return rs, nil
}

// giveBack gives back to the pool, once a call is over, every replica session this
// connection holds for nothing (no holds, no prepared statement running on it).
func (sp *split) giveBack() {
	for i := 0; i < len(sp.sess); {
		rs := sp.sess[i]
		if rs.holds > 0 || rs == sp.running {
			i++
			continue
		}
		if v, ok := rs.phys.(driver.Validator); ok && !v.IsValid() {
			// go-sql-driver closed it (a context that ended after the statement's
			// result was read): never into the pool's shared ones.
			sp.dropReplica(rs)
			continue
		}
		sp.sess = slices.Delete(sp.sess, i, i+1)
		sp.cl.Replicas().Put(rs) // idle since its last use began (sessionOn): no clock read per read
	}
}

// hold counts (n > 0) and uncounts (n < 0) what keeps the replica session of epoch with
// this connection: rows, a statement's preparation, a transaction; then, with back,
// gives back what nothing holds (only once the physical rows, statement or transaction
// is closed: the next connection may use the session at once). Other epochs (the
// primary's, a replica session dropped since) count nothing.
func (sp *split) hold(epoch uint64, n int, back bool) {
	if sp == nil || epoch&replicaEpoch == 0 {
		return
	}
	if rs := sp.byEpoch(epoch); rs != nil {
		rs.holds += n
	}
	if back {
		sp.giveBack()
	}
}

// rsetup is the cluster.SetupFunc of a replica session: read-only (the server then
// refuses a write that carries a read intent by mistake, and a failed read may run
// again elsewhere), the connection's current database, autocommit on where the DSN
// turns it off (a routed statement runs with autocommit on: route). go-sql-driver
// applies the DSN's variables itself.
func (c *Conn) rsetup(ctx context.Context, phys driver.Conn, _ int) error {
	if err := c.prim.exec(ctx, phys, readOnlySQL(true)); err != nil {
		return err
	}
	if c.sp.galeraCausal() {
		// Galera's own causality check: each read waits until the node has applied
		// every write set the cluster committed before the read began (causalWait).
		if err := c.prim.exec(ctx, phys, "SET SESSION wsrep_sync_wait = 1"); err != nil {
			return err
		}
	}
	if c.db != c.cfg.DBName && c.db != "" {
		if err := c.prim.exec(ctx, phys, "USE "+dialect.QuoteIdent(c.db)); err != nil {
			return err
		}
	}
	if c.dsnAC != acOn {
		return c.prim.exec(ctx, phys, autocommitSQL[acOn])
	}
	return nil
}

// dropReplica closes replica session rs.
func (sp *split) dropReplica(rs *rsession) {
	if i := slices.Index(sp.sess, rs); i >= 0 {
		sp.sess = slices.Delete(sp.sess, i, i+1)
		_ = rs.phys.Close()
		sp.cl.Replicas().Closed(rs.host, true)
	}
	if sp.running == rs {
		sp.running = nil
	}
}

// closeReplicas gives back the replica sessions this connection holds for nothing and
// closes the others (Close).
func (sp *split) closeReplicas() {
	if sp == nil {
		return
	}
	sp.running = nil
	sp.giveBack()
	for len(sp.sess) > 0 {
		sp.dropReplica(sp.sess[0])
	}
}

// resetReplicas forwards database/sql's check before reuse to each replica session
// (go-sql-driver's liveness check), dropping those found dead, and those to a host that
// left the host list (which would otherwise keep its id held): the next read opens a
// new one where it must.
func (sp *split) resetReplicas(ctx context.Context) {
	if sp == nil {
		return
	}
	sp.prefer = -1
	for i := 0; i < len(sp.sess); {
		rs := sp.sess[i]
		if !sp.cl.Member(rs.host) {
			sp.dropReplica(rs)
			continue
		}
		if r, ok := rs.phys.(driver.SessionResetter); ok && r.ResetSession(ctx) != nil {
			sp.dropReplica(rs)
			continue
		}
		i++
	}
	sp.giveBack()
}

// byEpoch returns the replica session of epoch, nil when it is gone.
func (sp *split) byEpoch(epoch uint64) *rsession {
	for _, rs := range sp.sess {
		if rs.epoch == epoch {
			return rs
		}
	}
	return nil
}

// failReplica is fail for an error from replica session epoch. A data error passes
// through (the session stays, unless go-sql-driver closed it); the caller's context
// ending is the context's error. A communication error closes the session without
// blaming the host (its probes and the next attempt decide that); a refusal of a server
// that is not ready (dialect.NotReady) marks the host not ready and is handled as one,
// nothing of the statement having run. Either way, outside a
// transaction, has the statement run once more on another replica (r permitting: a
// read-only session wrote nothing, so even a statement that was sent may run again, but
// not one whose results were being read); inside a read-only transaction it loses the
// transaction (failover.ErrTxLost).
func (c *Conn) failReplica(ctx context.Context, epoch uint64, f failure, r stmt.Retry, k stmt.Kind) (bool, error) {
	sp := c.sp
	err := f.err
	rs := sp.byEpoch(epoch)
	if sp.running != nil && sp.running.epoch == epoch {
		c.cl.ReplicaDone(sp.running.host, false)
		sp.running = nil
	}
	if rs == nil {
		return false, dialect.NotBadConn(err, "")
	}
	inTx := k == kTxEnd || c.tx != nil && c.tx.rs == rs
	if sp.galeraCausal() && !inTx && dialect.Number(err) == dialect.ErrLockWaitTimeout && r != stmt.NoRetry {
		// The node's causality check did not catch up within repl.causal_read_timeout
		// (causalWait): the read ran nowhere; another replica or the primary serves it.
		sp.noteBehind(rs)
		return true, nil
	}
	refused := f.refused()
	if f.class != cluster.Communication && !refused {
		return false, c.tracker.replicaDataErr(ctx, sp, rs, f, inTx)
	}
	fe := c.sp.replicaBroken(rs, f, c.cl.Host(c.host))
	if inTx {
		if c.tx != nil {
			c.lose(c.tx, lost("the read-only transaction failed earlier on replica "+fe.Failed+": "+fe.Err.Error()))
		}
		return false, heldBy(fe, "", failover.ErrTxLost)
	}
	if r != stmt.NoRetry {
		if !refused && sp.brokeIdle(rs) {
			// It was dead before the read reached it (a replica restarted under its idle
			// sessions): the host stays a candidate, so that the statement runs there
			// again on a live session (the others idle beside it are checked first), and
			// a routing key keeps to its replica.
			sp.tried &^= bit(rs.host)
		}
		c.cl.Replicas().NoteRetry()
		return true, nil
	}
	fe.Read = c.failedRead(k)
	return false, fe
}

// brokeIdle reports whether replica session rs, just broken by a communication error,
// was an idle one that broke at once: within cluster.DefaultIdleCheck of its take, as a
// session its server closed while it sat idle (a restart, a KILL) breaks on its first
// use, where a hung host would have kept the read until readTimeout.
func (sp *split) brokeIdle(rs *rsession) bool {
	return rs.idled && sp.cl.Now().UnixNano()-rs.lastUsed < int64(cluster.DefaultIdleCheck)
}

// pingReplicaTx is Ping during the read-only transaction t on a replica: it pings t's
// session, the one the connection's statements go to; the primary session (idle, and
// perhaps on a writer that is gone) plays no part in the transaction. A lost
// transaction returns its error; a failure loses it (failReplica).
func (c *Conn) pingReplicaTx(ctx context.Context, t *Tx) error {
	if t.lost != nil {
		return t.lost
	}
	p, ok := t.rs.phys.(driver.Pinger)
	if !ok {
		return nil
	}
	if err := p.Ping(ctx); err != nil {
		_, out := c.fail(ctx, t.rs.epoch, err, stmt.NoRetry, kPlain)
		return out
	}
	return nil
}

// noteBehind records that replica session rs's node did not catch up in time for a
// causal read: causal reads skip its host for the causal timeout (split.behind), and it
// counts as tried.
func (sp *split) noteBehind(rs *rsession) {
	if sp.behind == nil {
		sp.behind = map[int]int64{}
	}
	sp.behind[rs.host] = sp.cl.Now().Add(sp.cl.Replicas().CausalTimeout()).UnixNano()
	sp.tried |= bit(rs.host)
}

// replicaDataErr is failReplica's answer to failure f (neither a communication error
// nor a refusal) from replica session rs: the session stays unless go-sql-driver closed
// it (sp drops it; then, inTx, the transaction is lost for the statements after this
// one), and the caller's context ending is the context's error.
func (t *tracker) replicaDataErr(ctx context.Context, sp *split, rs *rsession, f failure, inTx bool) error {
	err := f.err
	if v, ok := rs.phys.(driver.Validator); ok && !v.IsValid() {
		sp.dropReplica(rs)
		if inTx && t.tx != nil && t.tx.lost == nil {
			t.lose(t.tx, lost("the replica session broke earlier: "+dialect.NotBadConn(err, "").Error()))
		}
	}
	if f.class == cluster.Canceled {
		if cerr := cluster.EndErr(ctx); !errors.Is(err, cerr) {
			return fmt.Errorf("%w (%v)", cerr, dialect.NotBadConn(err, ""))
		}
	}
	return err
}

// replicaBroken closes replica session rs after failure f (a communication error, or a
// refusal), without blaming its host, tells the engine (Cluster.NoteRefusal for a
// refusal, then Replicas.SessionEnded), and returns the error that says so. current is
// the address of the connection's primary session's host.
func (sp *split) replicaBroken(rs *rsession, f failure, current string) *failover.FailoverError {
	if f.refused() {
		// The replica's server is not ready (a Galera node outside the Primary
		// component...): a read-only session wrote nothing; the host serves no reads
		// until it says it is ready.
		sp.cl.NoteRefusal(rs.host, f.nr)
	}
	err := f.err
	addr := sp.cl.Host(rs.host)
	sp.dropReplica(rs)
	sp.tried |= bit(rs.host)
	sp.cl.Replicas().SessionEnded(rs.host, err)
	return &failover.FailoverError{
		Failed:  addr,
		Current: current,
		// A replica session is read-only: what ran there wrote nothing, but a read
		// that was sent may have run.
		MaybeExecuted: !errors.Is(err, driver.ErrBadConn) && !f.refused(),
		Err:           dialect.NotBadConn(err, "the replica connection was broken before the request was sent"),
	}
}

// readIntentTx reports whether a transaction begun with opts goes to a replica: ReadOnly,
// or a connection after SetReadOnly(true) (as Connector/J's replication connection runs
// its transactions on a replica once setReadOnly(true)). A read intent on the context
// alone does not: a request context that carries one may begin a read-write
// transaction, whose writes a replica would refuse (1792). The context's routing key
// still chooses the replica.
func readIntentTx(opts driver.TxOptions, explicitRO bool) bool {
	return opts.ReadOnly || explicitRO
}

// beginReplica opens a read-only transaction (BeginTx with ReadOnly) on a replica; nil,
// nil when it belongs on the primary (no replica qualifies, or the primary session holds
// a transaction opened by statements, or a temporary table). Its errors are counted
// (saw). A failed BEGIN runs once more on a replica (failReplica), as attempts says.
func (c *Conn) beginReplica(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	if c.lost != nil || c.st.held() || len(c.sess.has.temps) > 0 {
		return nil, nil // its reads may need the temporary table, which only the primary session has
	}
	err := c.attempts(ctx, &call{at: onReplica, retry: retryAlways, rfails: kBegin}, func(rs *rsession) (bool, error) {
		var tx driver.Tx
		var err error
		if b, ok := rs.phys.(driver.ConnBeginTx); ok {
			tx, err = b.BeginTx(ctx, opts)
		} else {
			tx, err = rs.phys.Begin() //nolint:staticcheck // fallback for drivers without ConnBeginTx
		}
		if err != nil {
			return false, err
		}
		c.tx = &Tx{c: c, inner: tx, ctx: ctx, epoch: rs.epoch, rs: rs, held: c.sess.has.any()}
		rs.holds++ // until Commit or Rollback
		return true, nil
	})
	switch {
	case err == errNoReplica:
		return nil, nil
	case err != nil:
		return nil, err
	}
	return c.tx, nil
}

// wroteOnPrimary records that a statement ran on the primary session (epoch, on host),
// for causal reads: it may have written, unless it had a read intent (no replica
// served it).
func (sp *split) wroteOnPrimary(epoch uint64, host int) {
	if sp != nil && sp.causal != "" && !sp.intent {
		if sp.causal == cluster.CausalGlobal {
			sp.cl.Replicas().NoteWrite()
		} else if !sp.wrote {
			// The first write since the position was last read: its session and host
			// (causalWait reads the position there, or knows it cannot).
			sp.wrote, sp.wroteOn, sp.wroteHost = true, epoch, host
		}
	}
}

// galeraCausal reports whether causal reads use Galera's causality check (a Galera
// cluster, causalReads local or global).
func (sp *split) galeraCausal() bool {
	return sp != nil && sp.causal != "" && sp.cl.Kind() == cluster.KindGalera
}

// errNoPosition is causalWait's error when the position to wait for cannot be read (the
// primary session is gone or failed): the read goes to the primary.
var errNoPosition = errors.New("mysqlfailover: the causal position could not be read")

// causalWait makes replica session rs wait for the position this read must see: local,
// this connection's last write (read from the primary session after a write: one round
// trip); global, the pool's latest (read again after any write of the pool: one round
// trip, shared). The wait is one round trip on the replica, skipped when rs is known to
// have reached the position. It reports false when the replica did not reach it within
// causalReadsTimeout; errNoPosition when the position cannot be read.
//
// On a Galera cluster the read waits itself, on the replica: its session has
// wsrep_sync_wait=1 (rsetup), so the node first applies every write set committed in
// the cluster before the read began, whichever node wrote it: no position is read.
// (WSREP_LAST_WRITTEN_GTID on the writer and WSREP_SYNC_WAIT_UPTO_GTID on the reader,
// MaxScale's way, let 9 of 2000 reads here miss the write just waited for.) The wait is
// bounded by the provider's repl.causal_read_timeout, which a client cannot set per
// session; a read that passes it fails with 1205, and goes to another replica or the
// primary (failReplica).
func (c *Conn) causalWait(ctx context.Context, rs *rsession) (bool, error) {
	sp := c.sp
	if sp.galeraCausal() {
		c.cl.Replicas().NoteCausal(true) // the read's own causality check: the replica serves it in step
		return true, nil
	}
	var pos string
	if sp.causal == cluster.CausalGlobal {
		p, current, mark := c.cl.Replicas().GlobalPosition()
		if !current {
			if c.phys == nil && c.join(ctx, false) != nil {
				// Opened without a primary session (AllowSourceDown), and no writer answers:
				// the position is not known.
				return false, errNoPosition
			}
			if c.host != c.cl.Active() {
				return false, errNoPosition // only the pool's writer knows its writes
			}
			var err error
			if p, err = c.cl.Replicas().CausalPosition(ctx, c.phys, true); err != nil {
				return false, errNoPosition
			}
			c.cl.Replicas().SetGlobalPosition(p, mark, c.host)
		}
		pos = p
	} else {
		if sp.wrote {
			if c.phys == nil || c.host != sp.wroteHost {
				return false, errNoPosition // the write's host is gone: the primary serves the read
			}
			// The session's own last write position, on the session that wrote; when that
			// session was replaced since (the host verdict opened a new one), a new one
			// knows nothing of it, but its host's global position covers every write
			// committed there.
			p, err := c.cl.Replicas().CausalPosition(ctx, c.phys, c.epoch != sp.wroteOn)
			if err != nil {
				return false, errNoPosition
			}
			sp.pos, sp.wrote = p, false
		}
		pos = sp.pos
	}
	if pos == "" || pos == rs.reached {
		return true, nil
	}
	ok, err := c.cl.Replicas().CausalWait(ctx, rs.phys, pos)
	if err != nil {
		return false, err
	}
	if ok {
		c.cl.Replicas().NoteCausal(true)
		rs.reached = pos
	}
	return ok, nil
}
