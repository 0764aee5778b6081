package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

// Config is the per-connection part of the DSN.
type Config struct {
	// ReadOnly is the initial explicit read-only flag (DSN readOnly, default false). It is
	// restored when database/sql hands the connection to its next user (ResetSession).
	ReadOnly bool
	// FailOverReadOnly makes the connection read-only while it is on a secondary (DSN
	// failOverReadOnly, default true), as Connector/J.
	FailOverReadOnly bool
	// DBName is the DSN's database: the one every new physical session starts in.
	DBName string
	// WriteIntent is set for targetSessionAttrs read-write and primary: a statement the
	// server rejects as read-only (1290, 1836) makes the connection check the host's
	// role and, if it was demoted, move to a writable host (see Conn.fail).
	WriteIntent bool
	// MultiStatements is go-sql-driver's multiStatements: a rejected statement is then
	// not run again after such a move, since earlier statements of its batch may have
	// run; and every statement of a query is followed for its effect on the transaction
	// state (see Conn), not only the first.
	MultiStatements bool
	// Autocommit is the DSN's autocommit parameter as go-sql-driver sends it on every
	// new physical connection (SET autocommit = <value>), "" when absent. 0, OFF and
	// FALSE (any case; 'ON' and 'OFF' also quoted) mean off, 1, ON, TRUE and "" on; any
	// other value leaves autocommit unknown, which counts as off, until the server is
	// asked.
	Autocommit string
	// CompletionType is the DSN's completion_type parameter likewise: 0 or NO_CHAIN (or
	// ""), 1 or CHAIN, 2 or RELEASE; it decides what COMMIT and ROLLBACK without AND
	// [NO] CHAIN or [NO] RELEASE do.
	CompletionType string
	// Owner is what Conn.Owner returns: the connector that opens the connections (the
	// driver's *Connector), for users who hold only a connection.
	Owner any
	// ReplicaReads routes read-intent statements to replicas (DSN replicaReads; see
	// replica.go); ReadFromSourceWhenNoReplicas runs them on the primary when no replica
	// qualifies (default true), else they fail; CausalReads is "", none, local or global.
	ReplicaReads                 bool
	ReadFromSourceWhenNoReplicas bool
	CausalReads                  string
	// AllowSourceDown lets a connection with ReplicaReads open, and stay valid,
	// without a primary session while no writer answers and a replica qualifies (DSN
	// allowSourceDownConnections, default true): its read-intent statements run on the
	// replicas, and the first statement that needs the primary looks for it (ready).
	AllowSourceDown bool
	// Replay is transactionReplay: the statements of an open transaction are recorded
	// and run again on the new session when the connection fails inside it (replay.go),
	// within ReplayMaxSize bytes recorded, ReplayAttempts replays and ReplayTimeout
	// (0: none) from the first failure.
	Replay         bool
	ReplayMaxSize  int
	ReplayAttempts int
	ReplayTimeout  time.Duration
	// RejectReadOnly is go-sql-driver's rejectReadOnly: it answers a write the server
	// refused as read-only with driver.ErrBadConn, after it was sent (see sent).
	RejectReadOnly bool
	// Closed, when set, is called once when the connection is closed (its first Close),
	// after the physical connection is: the connector counts its open connections
	// with it.
	Closed func()
	// Lender, when set, is the connector's registry of its connections, from which the
	// monitor's probes borrow an idle primary session (lend.go): the connection joins it
	// when it opens and leaves it when it closes.
	Lender *Lender
}

// ConfigFrom is the per-connection view of cfg: the one place where a DSN's options
// become a connection's. owner is the connector (see Config.Owner).
func ConfigFrom(cfg *dsn.Config, owner any) Config {
	write := cluster.WriteIntent(cfg.TargetSessionAttrs)
	return Config{
		ReadOnly: cfg.ReadOnly,
		// A host that passed the read-write or primary role check is a writer, wherever
		// it is in the list: failOverReadOnly does not apply.
		FailOverReadOnly: cfg.FailOverReadOnly && !write,
		DBName:           cfg.MySQL.DBName,
		WriteIntent:      write,
		MultiStatements:  cfg.MySQL.MultiStatements,
		RejectReadOnly:   cfg.MySQL.RejectReadOnly,
		// go-sql-driver sends these as SET on every new physical connection: they are
		// what a new session's transactions start with.
		Autocommit:     sessionVar(cfg.MySQL.Params, "autocommit"),
		CompletionType: sessionVar(cfg.MySQL.Params, "completion_type"),
		Owner:          owner,

		ReplicaReads:                 cfg.ReplicaReads,
		ReadFromSourceWhenNoReplicas: cfg.ReadFromSourceWhenNoReplicas,
		CausalReads:                  cfg.CausalReads,
		AllowSourceDown:              cfg.ReplicaReads && cfg.AllowSourceDownConnections,

		Replay:         cfg.TransactionReplay,
		ReplayMaxSize:  cfg.TransactionReplayMaxSize,
		ReplayAttempts: cfg.TransactionReplayAttempts,
		ReplayTimeout:  cfg.TransactionReplayTimeout,
	}
}

// sessionVar returns the value params (mysql.Config.Params) sets the system variable
// name to, "" when none; variable names are case-insensitive.
func sessionVar(params map[string]string, name string) string {
	for k, v := range params {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// Owner returns Config.Owner: the connector that opened the connection.
func (c *Conn) Owner() any { return c.cfg.Owner }

// Conn is the proxy around one physical go-sql-driver connection at a time: the
// driver.Conn that database/sql pools. database/sql uses a driver.Conn from one goroutine
// at a time, so Conn has no lock; the state it shares with the pool lives in the
// cluster.Cluster.
//
// Besides the driver interfaces, users reach three methods through (*sql.Conn).Raw:
// SetReadOnly, ReadOnly and Host.
//
// A Conn follows its physical session's transaction state through the statements that run
// on it (see dialect.Classify): a transaction opened by BEGIN, START TRANSACTION or XA
// START run as statements, or by any statement while autocommit is off (from the DSN or
// SET autocommit), is treated as one opened by BeginTx, and so is a state the statements
// do not tell (CALL, EXECUTE ...), until the server says otherwise (see resolve).
type Conn struct {
	prim // the primary session: written out (c.prim.x) where its methods are called

	closed bool

	free spares // the proxies the next statement reuses

	sp *split // the replica sessions (replicaReads); nil without

	failingCall // the query whose run or rows failed, while fail handles it (FailoverError.Read)
}

// prim is a connection's primary session: the cluster it runs in, the physical
// connection, and what the connection knows of that session. Its methods act on that
// state alone: they attach, drop, replace, set up and replay the session.
type prim struct {
	cl  *cluster.Cluster
	cfg Config

	phys  driver.Conn // nil when lost: the next call joins the pool's host
	host  int         // index of phys's host
	epoch uint64      // changes with phys; statements prepared on an older one re-prepare

	wire // what the connector's socket tracker knows of phys's socket (see mark and sent)

	// the physical connection's optional interfaces, looked up once per connection
	execer  driver.ExecerContext
	queryer driver.QueryerContext
	checker driver.NamedValueChecker // kept from the last physical connection: it is stateless

	explicitRO bool // the last SetReadOnly value, or Config.ReadOnly
	appliedRO  bool // the read-only state of the physical session
	roPending  bool // with replica reads: appliedRO may differ from the state wanted now; ready applies it (applyReadOnly)
	rows       int  // open result sets: no switch while results are being read
	counted    bool // the last ready counted a statement towards queriesBeforeRetryMaster

	live liveness // when the session was last used, for its liveness check (stale)

	tracker // the session's transaction state, database, and what else it told (txtrack.go)

	log *txLog // the open transaction's record (transactionReplay); nil without

	lend lendState // its lending to the monitor's probes while it sits idle (lend.go)
}

// liveness is what the liveness check of an idle physical session (prim.stale) knows.
type liveness struct {
	lastUsed int64 // cluster clock (UnixNano) of the last call that talked to the server
	checked  bool  // ResetSession just ran the liveness check: the next ready skips its own
}

// spares holds the proxies the next statement reuses: rows, the Rows proxy the next
// result set reuses when none is open (prim.rows is 0), and stmt the last closed Stmt
// proxy, which the next prepare reuses: a statement through the proxy allocates nothing
// go-sql-driver does not.
type spares struct {
	rows stmt.Rows
	stmt *stmt.Stmt
}

// sessionFacts is what the connection learnt of its physical session, beyond its
// transaction state; a new session starts with none (Conn.clean).
type sessionFacts struct {
	noInTrans bool  // the session's server has no @@in_transaction (MySQL)
	mute      bool  // the session's server did not answer resolve: not asked again
	has       hold  // named locks, temporary tables, user variables: it stays on its host while it holds any (stays)
	rbot      uint8 // the session's server's innodb_rollback_on_timeout, once read (see timeoutEnded); rbotUnknown is 0
}

// Open returns a connection on the pool's host, walking the host list if needed, with
// the session state (read-only, database) set up. It never returns driver.ErrBadConn.
//
// With AllowSourceDown (replica reads), while a replica qualifies, a connection opens
// without a primary session and without a walk: database/sql opens connections for
// reads as well as writes, and a read must not wait for a writer that died a moment
// ago, hangs or was never there. Its read-intent statements run on the replicas; its
// first statement that needs the primary opens the session then (ready), with every
// pass retriesAllDown allows, failing as the walk does.
func Open(ctx context.Context, cl *cluster.Cluster, cfg Config) (*Conn, error) {
	c := &Conn{prim: prim{cl: cl, cfg: cfg, explicitRO: cfg.ReadOnly,
		wire:    wire{rejects: cfg.RejectReadOnly && !cfg.MultiStatements},
		tracker: tracker{db: cfg.DBName, dsnAC: autocommitOf(cfg.Autocommit), dsnCT: completionOf(cfg.CompletionType)},
		log:     newLog(cfg)}, sp: newSplit(cfg, cl)}
	c.st.ac, c.st.ct = c.dsnAC, c.dsnCT
	if c.sp != nil {
		c.sp.setup = c.rsetup // its replica sessions' (sessionOn)
	}
	// With AllowSourceDown and a replica, the primary session opens with the first
	// statement that needs it.
	if !cfg.AllowSourceDown || !cl.AnyReplica() {
		phys, host, err := cl.Connect(ctx, c.prim.setup)
		if err != nil {
			return nil, c.prim.saw(c.prim.refusedWrite(err))
		}
		c.prim.attach(phys, host)
	}
	if cfg.Lender != nil {
		cfg.Lender.add(c)
	}
	return c, nil
}

// attach makes phys, on host, the physical connection.
func (p *prim) attach(phys driver.Conn, host int) {
	p.phys, p.host = phys, host
	p.sock = p.cl.SocketOf(phys)
	p.appliedRO = p.readOnlyOn(host) // setup applied it
	p.roPending = false
	p.live.lastUsed = p.cl.Now().UnixNano()
	p.epoch++
	p.execer, _ = phys.(driver.ExecerContext)
	p.queryer, _ = phys.(driver.QueryerContext)
	if ch, ok := phys.(driver.NamedValueChecker); ok {
		p.checker = ch
	}
}

// drop closes the physical connection; the logical one lives on. The next physical
// session starts with no transaction and, where the old one's was unknown, the DSN's
// autocommit and completion_type (setup restores known ones).
func (p *prim) drop() {
	if p.closePhys() {
		p.cl.Release(p.host)
	}
	p.clean()
}

// discard drops the physical connection between calls (found dead, or its state could
// not be restored), without blaming its host. What it held for a call of kind k is lost
// with it: a transaction opened by statements (see lost); a Tx's is the caller's to
// mark.
func (p *prim) discard(why string, k stmt.Kind) {
	if p.primaryTx() == nil && p.lost == nil && p.phys != nil && p.judge(k, false)&vLost != 0 {
		p.lose(nil, lostOn(p.st.what(), p.cl.Host(p.host), why))
	}
	if p.phys != nil {
		p.tracker.noteGone(p.cl.Host(p.host), notSentCause(why))
	}
	p.drop()
}

// lostOn is the error every statement gets while what (see txState.what) is lost: it
// was held by the session on host, which ended with cause.
func lostOn(what, host, cause string) error {
	return lost(what + " failed earlier on " + host + ": " + cause)
}

// closePhys closes the physical connection without releasing its host's id (see
// cluster.Cluster.Release), and reports whether there was one.
func (p *prim) closePhys() bool {
	if p.phys == nil {
		return false
	}
	_ = p.phys.Close()
	p.phys, p.execer, p.queryer, p.sock = nil, nil, nil, nil
	p.epoch++
	if p.log != nil {
		// What the session held goes with it; a replay needs to know (see replayHere).
		p.log.gone, p.log.sess = p.log.sess, ""
	}
	return true
}

// h exposes the stmt.Owner methods without adding them to Conn's method set, which users
// see through (*sql.Conn).Raw. The conversion costs nothing.
type h Conn

// uncount takes back the statement the last ready counted.
func (p *prim) uncount() {
	if p.counted {
		p.cl.ForgetStatement()
		p.counted = false
	}
}

// fail is the one place that decides what an error from the physical connection of the
// given epoch means, and whether the call that got it may run again (see stmt.Retry).
//
//   - Data errors pass through untouched; the connection stays.
//   - The caller's context ending is not a host failure: the error goes back as the
//     context error, and a physical connection go-sql-driver closed on cancel is dropped,
//     to be replaced on the pool's host.
//   - A server's refusal because it is not ready (Galera's 1047, offline_mode's 3032,
//     Group Replication's 3796 and 3799: dialect.NotReady) means the statement did not
//     run and the host must be left: see refused. A server that stopped being ready
//     while it ran the statement (Galera's 1180 "Not connected to Primary Component":
//     dialect.LostPrimary) is left the same way, but the statement may have taken
//     effect: nothing runs again.
//   - A communication error closes the physical connection, reports the host, walks to
//     the next one and restores the session there, and only then returns a
//     *failover.FailoverError. Inside a transaction the transaction is lost (ErrTxLost)
//     and nothing is repeated. Outside one, a call that provably sent nothing (see
//     sent) is repeated once on the new host; driver.ErrBadConn itself never
//     goes back to database/sql, which would repeat the call up to three times however
//     much of it ran (go-sql-driver#582, golang/go#11978).
//
// k is the kind of the call's statement (kSession, kTxEnd for other calls): it says
// what a data error leaves of the transaction state (txState.failed) and, inside a
// transaction opened by statements, what a failure means for it (see move).
func (c *Conn) fail(ctx context.Context, epoch uint64, err error, r stmt.Retry, k stmt.Kind) (bool, error) {
	defer c.forgetFailing()
	f := failureOf(ctx, err) // once: the helpers below act on f
	if epoch&replicaEpoch != 0 && c.sp != nil {
		return c.failReplica(ctx, epoch, f, r, k)
	}
	if epoch != c.epoch {
		// The physical connection this came from is already gone (a Rows closed after
		// its failure was handled): nothing more to decide.
		return false, dialect.NotBadConn(err, "")
	}
	switch f.class {
	case cluster.NotReady:
		return c.refused(ctx, f.nr, r, c.cfg.MultiStatements, k)
	case cluster.NotReadyMidway:
		return c.refused(ctx, f.nr, r, true, k)
	case cluster.Data:
		c.prim.refusedWrite(err)
		if c.cfg.WriteIntent && dialect.ReadOnly(err) && !cluster.Ended(ctx) {
			return c.rejected(ctx, err, r, c.cfg.MultiStatements, k)
		}
		if c.cfg.MultiStatements {
			// A query of several statements may have written before the one that failed
			// (a failed statement alone writes nothing): for causal reads it is a write.
			c.sp.wroteOnPrimary(c.epoch, c.host)
		}
		out := c.failedWith(ctx, err, k) // a transaction the server rolled back is over
		if c.log != nil {
			c.log.noteFailed(k, err, &c.tracker, c.epoch)
		}
		c.prim.dropIfInvalid(err, k)
		return false, out
	case cluster.Canceled:
		c.prim.dropIfInvalid(err, k)
		if cerr := cluster.EndErr(ctx); !errors.Is(err, cerr) {
			return false, fmt.Errorf("%w (%v)", cerr, dialect.NotBadConn(err, ""))
		}
		return false, err
	}
	return c.move(ctx, err, !c.sent(err), r, k)
}

// wire is what the connector's socket tracker knows of the physical session's socket
// (sock, nil: nothing), and its counts of bytes written and of failed writes when the
// call in flight began (see mark and sent).
type wire struct {
	sock    *cluster.Socket
	wrote   uint64
	wfailed uint64
	rejects bool // rejectReadOnly without multiStatements: a failed write may be a refusal (sent)
}

// mark notes, just before a call is sent on the physical connection, how many bytes its
// socket has taken so far, and how many writes failed, for sent. It allocates nothing.
func (w *wire) mark() {
	if w.sock != nil {
		w.wrote, w.wfailed = w.sock.Written(), w.sock.WriteFailures()
	}
}

// sent reports whether the call that failed with err, from the current physical
// connection, may have run on the server: the one place that decides whether a failed
// call may run again (no silent re-execution). Any error but driver.ErrBadConn says it
// may. With driver.ErrBadConn, when the socket is known, the call was sent if any byte
// was written to it since mark, whatever the driver calls the error: go-sql-driver
// answers driver.ErrBadConn when writing a LOAD DATA LOCAL file packet fails, after the
// statement itself was sent. One such answer says the call did not run: with
// go-sql-driver's rejectReadOnly, a write the server refused as read-only (1290, 1792,
// 1836), its whole answer read and no write failed; unless multiStatements is on (a
// batch's earlier statements may have run). Without the socket (a dialer the tracker
// does not see), driver.ErrBadConn says nothing was written.
func (w *wire) sent(err error) bool {
	switch {
	case !errors.Is(err, driver.ErrBadConn):
		return true
	case w.sock == nil || w.sock.Written() == w.wrote:
		return false
	}
	refused := w.rejects && w.sock.WriteFailures() == w.wfailed
	return !refused
}

// failedData records a data error of a statement of kind k: the session lives on.
func (t *tracker) failedData(k stmt.Kind) {
	if k.Kind() == dialect.Batch {
		t.st.failedBatch(t.batch)
	} else {
		t.st.failed(k)
	}
}

// judge says what a communication failure of a call of kind k means for the session's
// transaction state (notSent: nothing of the call was sent).
func (t *tracker) judge(k stmt.Kind, notSent bool) verdict {
	if k.Kind() == dialect.Batch {
		return t.st.verdictBatch(t.batch, notSent)
	}
	return t.st.verdict(k)
}

// rejected handles a write the server refused because it is read-only (1290, 1836) on a
// connection that wants a writer (targetSessionAttrs read-write or primary): one query
// reads the host's role. If it still qualifies (1290 is also --secure-file-priv and
// others) the rejection is an ordinary data error. Otherwise the topology changed (a
// demoted primary): the host's role is recorded and the connection moves as for a
// communication error, with a *cluster.RoleError wrapping the rejection as the cause.
// The rejected statement did not run, so outside a transaction it runs again on the new
// host, unless it may be a batch (multiStatements: earlier statements of it may have run).
func (c *Conn) rejected(ctx context.Context, err error, r stmt.Retry, batch bool, k stmt.Kind) (bool, error) {
	role, rerr := cluster.ReadRole(ctx, c.phys)
	if rerr != nil {
		switch f := failureOf(ctx, rerr); f.class {
		case cluster.Data:
			c.failedData(k)
			return false, err // the role is unknown: leave the rejection as it is
		case cluster.Canceled:
			return c.fail(ctx, c.epoch, rerr, stmt.NoRetry, k)
		case cluster.NotReady:
			return c.refused(ctx, f.nr, r, batch, k) // the rejected statement did not run either
		}
		// The connection broke right after the rejection: the rejected statement did
		// not run, but with multiStatements earlier statements of its batch may have.
		return c.move(ctx, rerr, !batch, r, k)
	}
	if c.cl.NoteRole(c.host, role) {
		c.failedData(k)
		return false, err
	}
	return c.move(ctx, &cluster.RoleError{Role: role, Wanted: c.cl.Target(), Cause: err}, !batch, r, k)
}

// refused handles a server's refusal to run anything because it is not ready (nr, as
// failureOf found it: Galera's 1047, offline_mode's 3032, Group Replication's 3796 and
// 3799). The statement did not run: the host is recorded as not ready
// (Cluster.NoteRefusal, the one call that tells the engine), which no walk chooses
// until its server says it is ready again, and the connection leaves it as for a
// communication error, with nr as the cause, so the pool moves too. Outside a
// transaction the statement then runs on the new host and the caller sees no error,
// unless something of the call may have run (ran): a batch (multiStatements: earlier
// statements of it may have run), or a commit a Galera node could not replicate as it
// left the Primary component (dialect.LostPrimary: the other nodes may have committed
// it), whose caller gets the *failover.FailoverError with MaybeExecuted. Inside a transaction the
// transaction is lost (failover.ErrTxLost); a refused COMMIT committed nothing, one the
// node could not replicate has an unknown outcome (failover.ErrCommitOutcomeUnknown).
func (c *Conn) refused(ctx context.Context, nr *cluster.NotReadyError, r stmt.Retry, ran bool, k stmt.Kind) (bool, error) {
	c.cl.NoteRefusal(c.host, nr)
	return c.move(ctx, nr, !ran, r, k)
}

// move closes the physical connection, whose host failed with err, walks to the next
// host and restores the session there, then says whether the call may run again (r, and
// notSent: nothing of it ran) or returns the *failover.FailoverError.
//
// Inside a transaction opened by statements (see txState.verdict; k is the call's
// kind) nothing runs again, and the error says what the session took with it: a
// statement of the transaction gets failover.ErrTxLost, and so does every later one
// until COMMIT or ROLLBACK (see whileLost); a COMMIT, or a statement that commits
// implicitly, failover.ErrCommitOutcomeUnknown (failover.ErrTxLost when it was not
// sent); a ROLLBACK the failover error alone (the transaction is rolled back either
// way). A prepared XA transaction survives its session on the server:
// failover.ErrCommitOutcomeUnknown, whatever the statement.
func (c *Conn) move(ctx context.Context, err error, notSent bool, r stmt.Retry, k stmt.Kind) (bool, error) {
	failed := c.host
	sock := c.sock // the failed session's, for a COMMIT's settling (see settled)
	before := c.st // what a replay restores
	var v verdict
	var what string
	if c.primaryTx() == nil {
		v, what = c.judge(k, notSent), c.st.what()
	}
	fe, werr := c.prim.reconnect(ctx, failed, err, notSent)
	m := switched{k: k, r: r, notSent: notSent, v: v, what: what, old: ended{failed, sock}, failed: fe.Failed, before: before, fe: fe, werr: werr}
	retry, out := c.moved(ctx, &m)
	if c.gone != nil {
		// What the session held went with it: the call says so, and does not run again.
		cause := out
		if cause == nil {
			cause = fe
		}
		if lerr := c.lostState(k, cause); lerr != nil {
			return false, lerr
		}
	}
	return retry, out
}

// switched is what move knows of a call whose session failed, once the connection has
// a new one (or the walk failed): what moved, moveTx, heldErr and replayHere decide from.
type switched struct {
	k       stmt.Kind  // the call's kind
	r       stmt.Retry // which failures may run it again
	notSent bool       // nothing of the call ran
	v       verdict    // what the old session held of a transaction (judge; none inside a Tx)
	what    string     // that state, for the error (txState.what)
	old     ended      // the session that ended
	failed  string     // its host's address
	before  txState    // the transaction state when the call failed: what a replay restores
	fe      *failover.FailoverError
	werr    error // the walk's error: then there is no new session
}

// moved is move's answer once the connection has a new session (m.fe, m.werr: see
// reconnect), from the verdict m.v on what the old one held of a transaction and the
// state before the call failed: the call runs again, or the error.
func (c *Conn) moved(ctx context.Context, m *switched) (bool, error) {
	k, r, v, old, fe, werr := m.k, m.r, m.v, m.old, m.fe, m.werr
	if c.primaryTx() != nil {
		c.failingCall.settleRun(ctx, c.cl, old, fe) // before a replay there meets the old thread's locks
		return c.prim.moveTx(ctx, m)
	}
	var why error
	if v&vLost != 0 && v&(vCommit|vPrepared) == 0 {
		c.failingCall.settleRun(ctx, c.cl, old, fe)
		var ok bool
		if ok, why = c.prim.replayHere(ctx, m); ok {
			return true, nil
		}
	} else if c.log != nil {
		c.log.clear()
	}
	if herr := c.tracker.heldErr(ctx, c.cl, m, why); herr != nil {
		return false, herr
	}
	if werr == nil && (r == stmt.RetryAlways || r == stmt.RetryIfNotSent && m.notSent) {
		return true, nil
	}
	fe.Read = c.failedRead(k) // outside any transaction: heldErr found none
	c.failingCall.settleRun(ctx, c.cl, old, fe)
	return false, fe
}

// settleRun ends the server thread of session old, whose statement failed with fe,
// when that statement may still be running there: it may have run (MaybeExecuted), it
// is a statement (failing; not a PING, PREPARE, BEGIN or SET the driver sent),
// and its host answered the new session the connection now has (Current == Failed: a
// read past readTimeout, a network cut, a KILL). A host that did not answer is not
// tried. An autocommit write is its own COMMIT, and a statement of a lost transaction
// holds the transaction's locks until its thread ends: either is settled as a COMMIT
// whose outcome is unknown is (cluster.Cluster.Settle: killed, and gone from the
// process list), and fe says whether that was confirmed (Settled, Unsettled), so that
// the data read after the error is final. A read (fe.Read) that may simply run again
// is only killed (cluster.Cluster.Kill), without the wait: its outcome changes
// nothing, but its server would go on with work nobody waits for, once more for every
// retry. It runs only on a failure.
func (f *failingCall) settleRun(ctx context.Context, cl *cluster.Cluster, old ended, fe *failover.FailoverError) {
	switch {
	case !fe.MaybeExecuted || f.failing == "" || fe.Current != fe.Failed:
		return
	case fe.Read:
		_ = cl.Kill(ctx, old.host, fe.Failed, old.sock)
		return
	}
	fe.Unsettled = cl.Settle(ctx, old.host, fe.Failed, old.sock)
	fe.Settled = fe.Unsettled == nil
}

// failedRead reports whether the call that failed, of kind k, was a read that may run
// again (failover.FailoverError.Read): a statement's run or rows (Conn.failing, set just
// before fail) that dialect.Rereadable accepts. The caller knows that no transaction is
// open.
func (f *failingCall) failedRead(k stmt.Kind) bool {
	return k.Kind() == dialect.Plain && f.failing != "" && dialect.Rereadable(f.failing)
}

// forgetFailing clears failing when fail is done with it.
func (f *failingCall) forgetFailing() { f.failing = "" }

// failingCall is the call that failed, while fail handles it: failing is the query whose
// run or rows failed ("" none, or not a query).
type failingCall struct {
	failing string
}

// reconnect is move's switch: it closes the physical connection, whose host failed
// with err, and has the cluster recover (a new session on the same host, or on the next
// one), and attaches to the new session. It returns the *failover.FailoverError that
// says so (notSent: nothing of the call ran), and Recover's error (then no session).
func (p *prim) reconnect(ctx context.Context, failed int, err error, notSent bool) (*failover.FailoverError, error) {
	if p.phys != nil {
		p.tracker.noteGone(p.cl.Host(p.host), nil) // move says why
	}
	held := p.closePhys() // the id stays held until Recover has used it
	p.clean()
	broken := "the connection was broken before the request was sent"
	if !notSent {
		broken = "the connection broke while the request was being sent"
	}
	fe := &failover.FailoverError{
		Failed:        p.cl.Host(failed),
		MaybeExecuted: !notSent && !dialect.PacketTooLarge(err),
		Err:           dialect.NotBadConn(err, broken),
	}
	// The cluster decides whether the host or only this session is gone, and returns a
	// new session on the same host, or on the next one.
	phys, host, werr := p.cl.Recover(ctx, failed, err, p.setup)
	if held {
		p.cl.Release(failed)
	}
	if werr != nil {
		fe.Reconnect = p.refusedWrite(werr)
	} else {
		p.attach(phys, host)
		fe.Current = p.cl.Host(host)
	}
	return fe, werr
}

// moveTx is move's answer inside a Tx (BeginTx): the transaction runs again on the new
// session (replayHere; so does the call), or it is lost, for this call and the Tx's
// later ones.
func (p *prim) moveTx(ctx context.Context, m *switched) (bool, error) {
	fe := m.fe
	if ok, why := p.replayHere(ctx, m); ok {
		return true, nil // the transaction runs again here: so does the call
	} else if why != nil {
		p.lose(p.tx, lost("the transaction failed earlier on "+fe.Failed+": "+fe.Err.Error()+"; "+why.Error()))
		return false, heldWhy(fe, why, failover.ErrTxLost)
	}
	p.lose(p.tx, lost("the transaction failed earlier on "+fe.Failed+": "+fe.Err.Error()))
	return false, heldBy(fe, "", failover.ErrTxLost)
}

// heldErr returns move's error for a call whose session took something with it, by
// verdict m.v (why: why a replay was not possible), or nil when it took nothing (the
// call may run again). A COMMIT whose outcome is unknown is settled first (see settled;
// cl settles it).
func (t *tracker) heldErr(ctx context.Context, cl *cluster.Cluster, m *switched, why error) error {
	v, what, old, fe, notSent := m.v, m.what, m.old, m.fe, m.notSent
	failed := old.host
	switch {
	case v&vLost != 0:
		if why != nil {
			t.lose(nil, lostOn(what, cl.Host(failed), fe.Err.Error()+"; "+why.Error()))
			return heldWhy(fe, why, failover.ErrTxLost)
		}
		t.lose(nil, lostOn(what, cl.Host(failed), fe.Err.Error()))
		if v&vCommit != 0 && !notSent { // a batch with a COMMIT in it, or a statement that autocommits
			return heldBy(fe, "", settled(ctx, cl, old, fe), failover.ErrTxLost)
		}
		if v&vPrepared != 0 {
			return heldBy(fe, "", failover.ErrCommitOutcomeUnknown, failover.ErrTxLost)
		}
		return heldBy(fe, "", failover.ErrTxLost)
	case v&vPrepared != 0:
		return heldBy(fe, "the XA transaction was prepared: it survives on "+fe.Failed+" until XA COMMIT or XA ROLLBACK runs there",
			failover.ErrCommitOutcomeUnknown)
	case v&vCommit != 0 && notSent:
		return heldBy(fe, "", failover.ErrTxLost)
	case v&vCommit != 0:
		return heldBy(fe, "", settled(ctx, cl, old, fe))
	case v&vEnded != 0:
		return fe
	}
	return nil
}

// dropIfInvalid drops a physical connection that go-sql-driver has closed (after a
// cancel, or a protocol error): the host is fine, the next call reconnects to the pool's
// host.
// Inside a transaction that loses the transaction (k: the failed call's kind).
func (p *prim) dropIfInvalid(err error, k stmt.Kind) {
	if v, ok := p.phys.(driver.Validator); ok && !v.IsValid() {
		why := dialect.NotBadConn(err, "").Error()
		p.discard("the connection broke: "+why, k)
		if t := p.primaryTx(); t != nil && t.lost == nil {
			p.lose(t, lost("the connection broke earlier: "+why))
		}
	}
}

// Attempts implements stmt.Owner: a prepared statement's call is one of the connection's
// (attempts). A statement routed to a replica session runs there (split.running until Ran
// or fail), and the replica sessions it tried go back to the pool at once, as after each
// failure (failAttempt): its own preparations hold those it keeps.
func (o *h) Attempts(ctx context.Context, s *stmt.Stmt) (bool, error) {
	c := (*Conn)(o)
	k := s.Kind()
	err := c.attempts(ctx, &call{kind: k, counts: true, at: routed, stmt: k, prepared: s}, func(rs *rsession) (bool, error) {
		phys, epoch := c.phys, c.epoch
		if rs != nil {
			c.sp.running = rs
			c.sp.giveBack() // the others it tried
			c.cl.ReplicaStart(rs.host)
			phys, epoch = rs.phys, rs.epoch
		} else {
			if c.sp != nil {
				c.sp.giveBack()
			}
			c.mark()
		}
		err := s.Attempt(ctx, phys, epoch)
		return err == nil, err
	})
	if c.sp != nil {
		c.sp.giveBack() // the replica sessions tried, unless the statement's preparation holds one
	}
	if err == errAnswered {
		return true, nil
	}
	return false, err
}

// Ran implements stmt.Owner.
func (o *h) Ran(k stmt.Kind, query string, args []driver.NamedValue, res driver.Result) driver.Result {
	c := (*Conn)(o)
	if c.sp != nil {
		if rs := c.sp.running; rs != nil {
			c.sp.running = nil
			c.cl.ReplicaDone(rs.host, true)
			c.sp.giveBack() // unless the statement's preparation holds it (it does, as it ran there)
			return res
		}
	}
	how := viaPrepared
	if res == nil {
		how |= viaQuery
	}
	return c.ranHere(k, query, args, how, res)
}

// Failing implements stmt.Owner.
func (o *h) Failing(query string, args []driver.NamedValue, isQuery bool) {
	if o.log != nil {
		how := viaPrepared
		if isQuery {
			how |= viaQuery
		}
		o.log.try(query, args, how, o.epoch)
	}
}

// Fail implements stmt.Owner.
func (o *h) Fail(ctx context.Context, err error, f stmt.Failure) (bool, error) {
	c := (*Conn)(o)
	c.failing = f.Query
	retry, out := c.fail(ctx, f.Epoch, err, f.Retry, f.Kind)
	if c.sp != nil {
		c.sp.giveBack()
	}
	return retry, c.prim.saw(out)
}

// RowsOpened implements stmt.Owner: every Rows, of a plain query or of a prepared
// statement, counts, so that the count never goes negative and no switch or fall-back
// closes a physical connection whose results are still being read.
func (o *h) RowsOpened(epoch uint64) (stmt.RowSink, *stmt.Rows) {
	var reuse *stmt.Rows
	if o.rows == 0 {
		reuse = &o.free.rows // every earlier Rows is closed, the one in it too
	}
	o.rows++
	o.sp.hold(epoch, 1, false) // rows read from a replica session keep it
	if o.log != nil {
		return o.log.takeSink(), reuse
	}
	return nil, reuse
}

// RowsClosed implements stmt.Owner. Rows whose Close failed give their replica session
// back in Fail, which first drops a broken one.
func (o *h) RowsClosed(epoch uint64, failed bool) {
	o.rows--
	o.sp.hold(epoch, -1, !failed)
}

// Prepared implements stmt.Owner: a preparation on a replica session keeps it, and no
// session of the connection is lent while one is open (lendIdle).
func (o *h) Prepared(epoch uint64) {
	o.lend.stmts++
	o.sp.hold(epoch, 1, false)
}

// Unprepared implements stmt.Owner.
func (o *h) Unprepared(epoch uint64) {
	o.lend.stmts--
	o.sp.hold(epoch, -1, true)
}

// StmtClosed implements stmt.Owner: the next prepare reuses s.
func (o *h) StmtClosed(s *stmt.Stmt) { o.free.stmt = s }

// newStmt wraps inner, prepared from query on the physical connection of epoch, for
// own, in the last closed Stmt proxy, or in a new one.
func (f *spares) newStmt(own stmt.Owner, query string, inner driver.Stmt, epoch uint64, k stmt.Kind) *stmt.Stmt {
	s := stmt.New(f.stmt, own, query, k, stmt.Prepared{Inner: inner, Epoch: epoch})
	f.stmt = nil
	return s
}

// CheckNamedValue implements stmt.Owner.
func (o *h) CheckNamedValue(nv *driver.NamedValue) error {
	return (*Conn)(o).CheckNamedValue(nv)
}

// ExecContext implements driver.ExecerContext.
func (c *Conn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	res, _, err := c.statement(ctx, query, args, viaExec)
	return res, err
}

// QueryContext implements driver.QueryerContext.
func (c *Conn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	_, rows, err := c.statement(ctx, query, args, viaQuery)
	return rows, err
}

// statement is the one path of ExecContext and QueryContext (how says which). The query
// is classified here, once; its kind k goes down with it, to route, ready, the run and
// the bookkeeping after it (ranHere). A query's rows may keep a replica session.
func (c *Conn) statement(ctx context.Context, query string, args []driver.NamedValue, how via) (driver.Result, driver.Rows, error) {
	k := dialect.Classify(query, c.cfg.MultiStatements)
	if k.Kind() == dialect.Batch {
		c.batch = query
	}
	var res driver.Result
	var rows driver.Rows
	var epoch uint64 // the session's the rows come from
	err := c.attempts(ctx, &call{kind: k, fails: k, retry: stmt.RetryIfNotSent, counts: true, at: routed, stmt: k, rfails: k},
		func(rs *rsession) (bool, error) {
			var final bool
			var err error
			if rs != nil {
				res, rows, final, err = c.runReplica(ctx, rs, query, args, how)
				epoch = rs.epoch
			} else {
				res, rows, final, err = c.runPrimary(ctx, k, query, args, how)
				epoch = c.epoch
			}
			return final, err
		})
	if err == nil && how&viaQuery != 0 {
		rows = stmt.NewRows((*h)(c), ctx, rows, epoch, query)
	}
	if c.sp != nil {
		c.sp.giveBack() // the replica sessions the statement used, unless its rows hold one
	}
	switch {
	case err == errAnswered && how&viaQuery != 0:
		return nil, noRows{}, nil
	case err == errAnswered:
		return driver.RowsAffected(0), nil, nil
	case err != nil:
		return nil, nil, err
	}
	return res, rows, nil
}

// Prepare implements driver.Conn.
func (c *Conn) Prepare(query string) (driver.Stmt, error) {
	return c.PrepareContext(context.Background(), query)
}

// PrepareContext implements driver.ConnPrepareContext. PREPARE has no side effects, so a
// communication failure is retried once on the new host (outside transactions). While a
// transaction opened by statements is lost only COMMIT and ROLLBACK can be prepared (their
// run ends the lost state, see whileLost).
func (c *Conn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	if c.sp != nil {
		s, err := c.prepareContext(ctx, query)
		c.sp.giveBack() // the replica sessions tried, unless the statement holds one
		return s, err
	}
	return c.prepareContext(ctx, query)
}

func (c *Conn) prepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	k := dialect.Classify(query, false)                         // a prepared statement is one statement
	rk := dialect.Of(dialect.Plain, 0, k.Flags()&dialect.Reads) // no move before a statement that reads the last one's values
	if endsLost(k) {
		rk = kSession
	}
	var s driver.Stmt
	err := c.attempts(ctx, &call{kind: rk, fails: kSession, retry: stmt.RetryAlways, at: routed, stmt: k, rfails: kPlain},
		func(rs *rsession) (bool, error) {
			var err error
			if rs != nil {
				var final bool
				s, final, err = c.prepareReplica(ctx, rs, query, k)
				return final, err
			}
			c.mark()
			if s, err = prepareOn(ctx, c.phys, query); err == nil {
				s = c.free.newStmt((*h)(c), query, s, c.epoch, k)
			}
			return err == nil, err
		})
	if err != nil {
		return nil, err
	}
	return s, nil
}

// Ping implements driver.Pinger; a failed ping moves the connection and pings the new
// host once. During a read-only transaction on a replica it pings that transaction's
// session (pingReplicaTx).
func (c *Conn) Ping(ctx context.Context) error {
	if c.sp != nil {
		if c.tx != nil && c.tx.rs != nil {
			return c.pingReplicaTx(ctx, c.tx)
		}
		c.sp.intent = false
	}
	return c.attempts(ctx, &call{kind: kPlain, fails: kPlain, retry: stmt.RetryAlways}, func(*rsession) (bool, error) {
		p, ok := c.phys.(driver.Pinger)
		if !ok {
			return true, nil
		}
		c.mark()
		err := p.Ping(ctx)
		return err == nil, err
	})
}

// CheckNamedValue forwards to the physical connection so that go-sql-driver's value
// converter is kept; driver.ErrSkip lets database/sql use its default.
func (c *Conn) CheckNamedValue(nv *driver.NamedValue) error {
	if c.checker != nil {
		return c.checker.CheckNamedValue(nv)
	}
	return driver.ErrSkip
}

// ResetSession is called by database/sql before it hands a pooled connection to its next
// user. It repairs rather than retires: a physical connection whose host the pool has
// left or that lost its wanted role (Cluster.Unfit), or that go-sql-driver's liveness
// check (forwarded here, go-sql-driver#657) finds stale, is dropped without blaming its
// host, and the next call joins the pool's host before it sends anything (ready). A
// session inside a transaction opened by statements stays, whatever host it is on (the
// pool moving does not move it; ready does, at its next safe point); if the liveness
// check finds it dead, its transaction is lost (see whileLost). It never returns
// driver.ErrBadConn: when database/sql hands a connection to a caller queued at
// MaxOpenConns, it passes that error to the caller as is. It restores the DSN's
// read-only flag for the next user. A connection that cannot join any host fails its
// next call with the walk's error and is then discarded (IsValid).
//
// The next user has no claim on what the last one left on the session (named locks,
// temporary tables, user variables): database/sql may hand each call of a pooled *sql.DB
// another connection, so none can rely on what an earlier call left. From here the
// session holds nothing for the driver: the pool's move takes it, and its loss is said
// to no one. The server keeps that state until the session ends (database/sql sends no
// reset), so a user who reads it still finds it while the session lives.
//
// With probes (Config.Lender), it first waits for a probe of the monitor that borrowed
// the idle session (lend.go; at most the probe's bound); a session the probe broke is
// gone, and the next call opens a new one.
func (c *Conn) ResetSession(ctx context.Context) error {
	if c.cfg.Lender != nil {
		c.lend.busy() // a probe on its session first ends (it may have closed it)
	}
	c.lend.used = true
	if c.closed {
		return driver.ErrBadConn // database/sql never resets a closed connection
	}
	c.explicitRO = c.cfg.ReadOnly
	c.sess.has = hold{}
	c.sp.resetReplicas(ctx)
	if c.phys != nil && !c.st.held() && (c.host != c.cl.Active() || c.cl.Unfit(c.host)) {
		c.prim.drop()
	}
	if r, ok := c.phys.(driver.SessionResetter); ok && r.ResetSession(ctx) != nil {
		c.prim.discard("the server closed the connection while it sat idle in the pool", kPlain)
	}
	c.gone = nil // the last user's: not the next one's to hear
	c.live.checked = true
	if c.phys == nil {
		return nil // setup applies the restored read-only flag on the new session
	}
	if c.sp != nil {
		// With replica reads the next user may only read, on the replicas: the primary
		// session gets the flag before its next statement (ready), not a round trip now.
		c.roPending = c.prim.readOnlyOn(c.host) != c.appliedRO
		return nil
	}
	if want := c.prim.readOnlyOn(c.host); want != c.appliedRO {
		if err := c.prim.exec(ctx, c.phys, readOnlySQL(want)); err != nil {
			// The SET ran or not: a new session starts clean.
			c.prim.discard("restoring read-only failed: "+dialect.NotBadConn(err, "").Error(), kSession)
			c.gone = nil
			return nil
		}
		c.appliedRO = want
	}
	return nil
}

// IsValid implements driver.Validator: false once the physical connection is gone
// (unless AllowSourceDown keeps it for its replica sessions while a replica qualifies),
// and while a transaction opened by statements is lost (database/sql then closes a pooled
// connection instead of handing the lost state to its next user). A connection inside
// an open transaction stays valid: closing it would roll the transaction back.
//
// With AllowSourceDown a primary session that go-sql-driver closed (a write whose
// context ended while it ran) is dropped here, and the connection stays valid while a
// replica qualifies: database/sql would otherwise close it, and open a new one, for
// every write that fails while no writer answers.
//
// A valid connection whose primary session may be lent (lendIdle) is marked idle: the
// monitor's probes may borrow that session until ResetSession or Close.
func (c *Conn) IsValid() bool {
	if c.closed || c.lost != nil {
		return false
	}
	if c.phys != nil {
		if v, ok := c.phys.(driver.Validator); ok && !v.IsValid() {
			if !c.cfg.AllowSourceDown || c.primaryTx() != nil {
				return false
			}
			c.prim.discard("the connection broke", kPlain)
			if c.lost != nil {
				return false
			}
		}
	}
	if c.phys == nil {
		// Without a primary session: valid only while its replica sessions may serve
		// (AllowSourceDown); its next statement that needs the primary walks (ready).
		return c.cfg.AllowSourceDown && c.cl.AnyReplica()
	}
	c.prim.lendIdle()
	return true
}

// Close closes the physical connection, exactly once, after a probe of the monitor that
// borrowed it has ended (lend.go).
func (c *Conn) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if c.cfg.Lender != nil {
		c.lend.busy() // a probe on its session first ends (it may have closed it)
		c.cfg.Lender.remove(c)
	}
	if c.cfg.Closed != nil {
		defer c.cfg.Closed()
	}
	c.sp.closeReplicas()
	if c.phys == nil {
		return nil
	}
	err := c.phys.Close()
	c.cl.Release(c.host)
	c.phys, c.execer, c.queryer = nil, nil, nil
	return dialect.NotBadConn(err, "")
}

var (
	_ driver.Conn               = (*Conn)(nil)
	_ driver.ConnBeginTx        = (*Conn)(nil)
	_ driver.ConnPrepareContext = (*Conn)(nil)
	_ driver.ExecerContext      = (*Conn)(nil)
	_ driver.QueryerContext     = (*Conn)(nil)
	_ driver.Pinger             = (*Conn)(nil)
	_ driver.NamedValueChecker  = (*Conn)(nil)
	_ driver.SessionResetter    = (*Conn)(nil)
	_ driver.Validator          = (*Conn)(nil)
	_ stmt.Owner                = (*h)(nil)
)

// prepareOn prepares query on phys.
func prepareOn(ctx context.Context, phys driver.Conn, query string) (driver.Stmt, error) {
	if p, ok := phys.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return phys.Prepare(query)
}
