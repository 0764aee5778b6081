package conn

// Transaction replay (transactionReplay=true): the statements of the open
// transaction are recorded, each with a copy of its arguments and a digest of what the
// application saw of its result, so that when the session fails inside the transaction
// the connection can run it again on the new session and compare, statement by
// statement, before the interrupted statement runs there. The anchors are MaxScale
// readwritesplit's transaction_replay (a checksum of every result, compared during the
// replay) and MariaDB Connector/J's transactionReplay (statements only); see
// replayHere for what is never replayed. Without the option prim.log is nil and none of
// this runs.

import (
	"context"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
	"github.com/mysqlfailover/mysqlfailover/internal/stmt"
)

// entryOverhead is what one recorded statement counts against transactionReplayMaxSize
// besides its text and arguments (bytes): its entry, digest and bookkeeping.
const entryOverhead = 64

// digest is a running 64-bit FNV-1a hash of what the application read of a result: a
// collision between a recorded and a replayed result has a chance of 2^-64.
type digest uint64

const (
	fnvOffset digest = 14695981039346656037
	fnvPrime  digest = 1099511628211
)

func (d *digest) byte1(b byte) { *d = (*d ^ digest(b)) * fnvPrime }

func (d *digest) bytes(b []byte) {
	h := *d
	for _, c := range b {
		h = (h ^ digest(c)) * fnvPrime
	}
	*d = h
}

func (d *digest) str(s string) {
	h := *d
	for i := 0; i < len(s); i++ {
		h = (h ^ digest(s[i])) * fnvPrime
	}
	*d = h
}

func (d *digest) u64(v uint64) {
	h := *d
	for i := 0; i < 8; i++ {
		h = (h ^ digest(byte(v>>(8*i)))) * fnvPrime
	}
	*d = h
}

// txLog is the record of the open transaction (one per connection, reused).
type txLog struct {
	maxSize  int           // transactionReplayMaxSize, bytes
	attempts int           // transactionReplayAttempts, count
	timeout  time.Duration // transactionReplayTimeout, 0: none
	multi    bool          // multiStatements: a query may hold several statements

	on       bool // a transaction is being recorded
	tx       bool // opened by BeginTx (opts); else by its first entry
	opts     driver.TxOptions
	db       string // the current database when it started
	entries  []*entry
	size     int
	unsafe   string // why it cannot be replayed, "" when it can
	tooBig   bool   // over maxSize: entries dropped
	replays  int    // replays so far
	failedAt time.Time
	sink     *entry // the query whose rows RowsOpened hands a sink to next
	trying   trying // the statement whose failure fail is about to judge
	moved    bool   // the replay changed its session beyond the transaction (USE, a SET): see abandon

	// sess says why no transaction of this physical session can be replayed: it set
	// up state a new session lacks (temporary tables, user variables, named locks);
	// gone is the sess of the last session closed (closePhys), the one a replay after
	// its failure replaces.
	sess, gone string
}

// via says how a statement ran, for the record: what a replay sends.
type via uint8

const (
	viaExec     via = 0         // an Exec on the connection
	viaQuery    via = 1 << iota // a query: its rows are recorded as they are read
	viaPrepared                 // through a prepared statement: re-prepared on replay
)

// noted is a statement that ran, as noteStmt is told it: its kind, text, arguments, and
// how it ran.
type noted struct {
	k     stmt.Kind
	query string
	args  []driver.NamedValue
	how   via
}

// trying is a statement that failed, kept for noteFailed: fail has only its kind.
type trying struct {
	query string
	args  []driver.NamedValue
	how   via
	epoch uint64 // of the session it failed on
}

// try keeps the statement that just failed on the session of epoch (see noteFailed).
func (l *txLog) try(query string, args []driver.NamedValue, how via, epoch uint64) {
	if l.on {
		l.trying = trying{query, args, how, epoch}
	}
}

// entry is one recorded statement and what the application saw of its result.
type entry struct {
	query string
	args  []driver.NamedValue
	k     stmt.Kind // its kind: one other than kPlain and kBegin may change the session's own state
	how   via

	// An Exec's result, and which of it the application read (recResult).
	affected, insertID int64
	sawAffected        bool
	sawInsertID        bool

	// A query's rows: how many the application read, whether it read to the end, and
	// a digest of the column names and every value it read.
	rows   int
	eof    bool
	digest digest

	// errno is the server's error the statement got (the application saw it), 0 for
	// success: a replay must get the same one.
	errno uint16
}

func newLog(cfg Config) *txLog {
	if !cfg.Replay {
		return nil
	}
	return &txLog{maxSize: cfg.ReplayMaxSize, attempts: cfg.ReplayAttempts, timeout: cfg.ReplayTimeout, multi: cfg.MultiStatements}
}

// start begins recording a transaction, in database db; opts for one opened by BeginTx
// (tx).
func (l *txLog) start(tx bool, opts driver.TxOptions, db string) {
	l.clear()
	l.on, l.tx, l.opts, l.db = true, tx, opts, db
}

// clear ends the record: the transaction ended, or will not be replayed.
func (l *txLog) clear() {
	for i := range l.entries {
		l.entries[i] = nil
	}
	*l = txLog{maxSize: l.maxSize, attempts: l.attempts, timeout: l.timeout, multi: l.multi, entries: l.entries[:0], sess: l.sess, gone: l.gone}
}

// refuse marks the transaction as one that cannot be replayed, for why (the first
// reason stays).
func (l *txLog) refuse(why string) {
	if l.unsafe == "" {
		l.unsafe = why
	}
}

// add records a statement of kind k that ran inside the transaction, with a copy of its
// arguments, and returns the entry (nil when nothing is recorded: over the budget).
func (l *txLog) add(k stmt.Kind, query string, args []driver.NamedValue, how via) *entry {
	if l.tooBig {
		return nil
	}
	cp, n, why := copyArgs(args)
	if why != "" {
		l.refuse(why)
	}
	l.size += entryOverhead + len(query) + n
	if l.size > l.maxSize {
		l.tooBig = true
		for i := range l.entries {
			l.entries[i] = nil // the memory goes now, not at the end of the transaction
		}
		l.entries = l.entries[:0]
		return nil
	}
	e := &entry{query: query, args: cp, k: k, how: how, digest: fnvOffset}
	l.entries = append(l.entries, e)
	return e
}

// copyArgs returns a deep copy of args (the caller may reuse its buffers), their size in
// bytes, and why they cannot be kept ("" when they can): a value of a type that may
// share memory with the caller other than []byte.
func copyArgs(args []driver.NamedValue) ([]driver.NamedValue, int, string) {
	if len(args) == 0 {
		return nil, 0, ""
	}
	out := make([]driver.NamedValue, len(args))
	n := 0
	for i, a := range args {
		out[i] = a
		switch v := a.Value.(type) {
		case nil, bool, int64, uint64, float64, time.Time:
			n += 8
		case string:
			n += len(v)
		case []byte:
			out[i].Value = append([]byte(nil), v...)
			n += len(v)
		case json.RawMessage:
			out[i].Value = append(json.RawMessage(nil), v...)
			n += len(v)
		default:
			switch rv := reflect.ValueOf(v); rv.Kind() {
			case reflect.Bool, reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
				reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64,
				reflect.Float32, reflect.Float64:
				n += 8
			case reflect.String:
				n += rv.Len()
			default:
				return nil, 0, fmt.Sprintf("an argument of type %T, which cannot be copied", v)
			}
		}
	}
	return out, n, ""
}

// recResult is the result of a recorded Exec: it notes which of its values the
// application read, and after a replay answers with the replayed statement's.
type recResult struct{ e *entry }

// LastInsertId implements driver.Result.
func (r recResult) LastInsertId() (int64, error) { r.e.sawInsertID = true; return r.e.insertID, nil }

// RowsAffected implements driver.Result.
func (r recResult) RowsAffected() (int64, error) { r.e.sawAffected = true; return r.e.affected, nil }

// Columns implements stmt.RowSink.
func (e *entry) Columns(cols []string) { hashColumns(&e.digest, cols) }

// hashColumns adds the column names of a result to d.
func hashColumns(d *digest, cols []string) {
	for _, c := range cols {
		d.str(c)
		d.byte1(0)
	}
	d.byte1(1)
}

// Row implements stmt.RowSink.
func (e *entry) Row(dest []driver.Value) {
	e.rows++
	hashRow(&e.digest, dest)
}

// End implements stmt.RowSink.
func (e *entry) End() { e.eof = true }

// hashRow adds the values of one row to d, each with its type and length, so that 1,
// "1" and []byte("1") differ, as the application sees them differ.
func hashRow(d *digest, row []driver.Value) {
	for _, v := range row {
		switch v := v.(type) {
		case nil:
			d.byte1('n')
		case []byte:
			d.byte1('b')
			d.u64(uint64(len(v)))
			d.bytes(v)
		case string:
			d.byte1('s')
			d.u64(uint64(len(v)))
			d.str(v)
		case int64:
			d.byte1('i')
			d.u64(uint64(v))
		case uint64:
			d.byte1('u')
			d.u64(v)
		case float64:
			d.byte1('f')
			d.u64(math.Float64bits(v))
		case float32:
			d.byte1('g')
			d.u64(uint64(math.Float32bits(v)))
		case bool:
			d.byte1('t')
			if v {
				d.byte1(1)
			} else {
				d.byte1(0)
			}
		case time.Time:
			d.byte1('d')
			d.str(v.Format(time.RFC3339Nano))
		default:
			d.byte1('?')
			d.str(fmt.Sprintf("%T %v", v, v))
		}
	}
	d.byte1('\n')
}

// whyPending is why a transaction begun with characteristics that SET TRANSACTION gave
// it (a Tx's or one opened by statements) is not replayed. Repeating them exactly would
// mean repeating every such statement since the last transaction: they add up (an
// isolation level in one, READ ONLY in the next), may be @@ assignments, prepared or in a
// batch; a replay that missed one would run the transaction, and then the interrupted
// statement, with other characteristics (a write the READ ONLY original refused with
// 1792 would commit). BeginTx's TxOptions (Isolation, ReadOnly) are replayed as given.
const whyPending = "characteristics set by SET TRANSACTION (a new session does not have them; BeginTx's TxOptions are replayed)"

// unreplayable says why a statement of kind k, query q, makes its transaction one that
// cannot be replayed ("" when it does not).
func unreplayable(k dialect.Kind, q string) string {
	switch k {
	case dialect.Unknown:
		return "a statement whose effect the driver cannot tell (CALL, EXECUTE, a compound statement, an executable comment)"
	case dialect.Batch:
		return "a multi-statement batch"
	case dialect.LockTables, dialect.Lock:
		return "table locks (LOCK TABLES, FLUSH TABLES ... WITH READ LOCK)"
	case dialect.XAStart, dialect.XAPrepare, dialect.XACommit, dialect.XARollback:
		return "XA"
	case dialect.Plain:
		if dialect.LoadsData(q) {
			return "LOAD DATA or LOAD XML (the data is not recorded)"
		}
	}
	return ""
}

// stepped is the physical session's state across one statement, for noteStmt: its
// transaction state before and after, and its database before.
type stepped struct {
	before, after txState
	db            string
}

// noteStmt records a statement that succeeded on the primary session: n (a query's rows
// are recorded as they are read), res its result (nil for a query), tx the open Tx (nil:
// none), st the session's state across it. It returns the result for the caller. Only
// statements inside a transaction are recorded: one the statement opened (BEGIN, the
// first statement with autocommit off) starts the record, and a statement after which no
// transaction is open clears it (an autocommit statement is never recorded, so never
// replayed).
func (l *txLog) noteStmt(n noted, res driver.Result, tx *Tx, st stepped) driver.Result {
	k, q := n.k, n.query
	if l.sess == "" {
		l.sess = dialect.SessionState(q, l.multi)
	}
	if tx == nil {
		if !l.noteOutsideTx(st, k, q) {
			return res
		}
	} else if tx.rs != nil || !l.on {
		return res // a read-only transaction on a replica is not replayed
	} else if commits(k) || k.Kind() == dialect.Rollback {
		l.refuse("a statement that ends the transaction inside a Tx (COMMIT, ROLLBACK, or one that commits implicitly)")
	}
	l.trying = trying{}
	l.refuseUnreplayable(k, q, st.after)
	e := l.add(k, q, n.args, n.how)
	if e == nil {
		return res
	}
	if n.how&viaQuery != 0 {
		l.sink = e
		return nil
	}
	e.affected, _ = res.RowsAffected()
	e.insertID, _ = res.LastInsertId()
	return recResult{e}
}

// noteOutsideTx is noteStmt's decision for a statement run outside a Tx (kind k, query
// q; st as for noteStmt): it reports whether the statement is to be recorded. With no
// transaction open after it the record is cleared; with one whose state cannot be told
// it is refused; a statement that opened the transaction starts the record.
func (l *txLog) noteOutsideTx(st stepped, k stmt.Kind, q string) (record bool) {
	if st.after.txn == txnUnknown && l.on {
		// Whether the transaction goes on cannot be told (CALL, EXECUTE...): it
		// counts as open, and cannot be replayed.
		l.refuse(unreplayable(dialect.Unknown, q))
		return false
	}
	if st.after.txn != txnOpen {
		l.clear()
		return false
	}
	cls := k.Kind()
	if !l.on || st.before.txn != txnOpen || cls == dialect.Begin || cls == dialect.XAStart || cls == dialect.Commit || cls == dialect.Rollback {
		l.start(false, driver.TxOptions{}, st.db)
		switch {
		case cls == dialect.Commit || cls == dialect.Rollback:
			l.refuse("a transaction opened by AND CHAIN (its characteristics are not known)")
		case st.before.pending:
			l.refuse(whyPending)
		}
	}
	return true
}

// refuseUnreplayable refuses the record for a statement of kind k, query q, that cannot
// be replayed: by its kind or text, under table locks (after: the state after it), or
// several statements in one (multiStatements).
func (l *txLog) refuseUnreplayable(k stmt.Kind, q string, after txState) {
	if why := unreplayable(k.Kind(), q); why != "" {
		l.refuse(why)
	}
	if after.locks {
		l.refuse(unreplayable(dialect.LockTables, q))
	}
	if l.multi && strings.IndexByte(q, ';') >= 0 && dialect.Multiple(q) {
		l.refuse(unreplayable(dialect.Batch, q))
	}
}

// noteFailed records, with replay on, the statement whose data error err fail just
// judged (kind k; see txLog.try), on the primary session of epoch, t its tracker: inside a transaction the application saw that error,
// so a replay must get it too (a failed statement changes nothing, but it may take
// locks, and the application acted on the error). A failure that is not the server's
// own error, or of a batch, makes the transaction one that cannot be replayed.
func (l *txLog) noteFailed(k stmt.Kind, err error, t *tracker, epoch uint64) {
	tr := l.trying
	l.trying = trying{}
	if !l.on || t.tx == nil && t.st.txn != txnOpen {
		if l.on && t.tx == nil && t.st.txn == txnNone {
			l.clear()
		}
		return
	}
	switch k.Kind() {
	case dialect.Plain, dialect.Use, dialect.Unknown, dialect.Batch:
	default:
		return // not a statement of the transaction (a PREPARE, a session call)
	}
	switch {
	case tr.query == "" || tr.epoch != epoch:
		l.refuse("a statement that failed without being recorded")
	case k.Kind() == dialect.Batch || l.multi && dialect.Multiple(tr.query):
		l.refuse(unreplayable(dialect.Batch, tr.query))
	case dialect.ServerError(err) == nil:
		l.refuse("a statement that failed with an error of the driver's: " + err.Error())
	default:
		if e := l.add(k, tr.query, tr.args, tr.how); e != nil {
			e.errno = dialect.Number(err)
		}
	}
}

// takeSink hands the query just recorded its rows' sink (see stmt.Owner.RowsOpened).
func (l *txLog) takeSink() stmt.RowSink {
	e := l.sink
	l.sink = nil
	if e == nil {
		return nil
	}
	return e
}

// replayError is why a replay failed: the statement (from 1) whose result differed, or
// whose run failed, on host.
type replayError struct {
	n     int
	query string
	host  string
	why   string
}

func (e *replayError) Error() string {
	q := e.query
	if len(q) > 80 {
		q = q[:77] + "..."
	}
	return fmt.Sprintf("the replay on %s differed at statement %d (%s): %s", e.host, e.n, q, e.why)
}

// errReplayStopped is a replay cut short by the caller's context or
// transactionReplayTimeout.
var errReplayStopped = errors.New("the replay ran out of time (the caller's context or transactionReplayTimeout)")

// replayHere runs the recorded transaction again on the connection's new session, after
// its session (on m.failed) failed with a communication error in a call of kind m.k that
// the caller runs again (m.r). It reports whether it did (the caller then runs its call
// again, on the new session, inside the replayed transaction), and otherwise why not (a
// note for the error, "" without replay). m.before is the session's transaction state
// when the call failed; m.werr the error of the walk that should have found the new
// session.
//
// Nothing is replayed for a call that may commit (COMMIT in any spelling, prepared or
// not, a statement that commits implicitly: the caller gets
// failover.ErrCommitOutcomeUnknown, as without replay), for a call the caller does not
// run again (results being read, Commit, Rollback), nor for a transaction that could not
// be recorded whole (see noteStmt, unreplayable, dialect.SessionState,
// transactionReplayMaxSize) or that used up transactionReplayAttempts or
// transactionReplayTimeout. A replay whose session fails too is run again on the next
// one, within those limits.
func (p *prim) replayHere(ctx context.Context, m *switched) (bool, error) {
	k, r, werr, failed, before := m.k, m.r, m.werr, m.failed, m.before
	l := p.log
	if l == nil || !l.on || p.tx != nil && p.tx.rs != nil || r != stmt.RetryAlways && r != stmt.RetryIfNotSent {
		return false, nil
	}
	if commits(k) {
		l.clear()
		return false, nil
	}
	if err := l.refusal(werr, failed, p.cl, p.cl.Host(p.host)); err != nil {
		l.clear()
		return false, err
	}
	rctx, cancel, err := l.deadline(ctx, p.cl.Now())
	if err != nil {
		l.clear()
		return false, err
	}
	defer cancel()
	return p.replayRounds(ctx, rctx, before, failed)
}

// refusal says why the record cannot be replayed (nil when it can): it is too big, it
// used what a new session lacks, or the walk (werr) found no new session. The first two
// are reported to cl (cluster.Cluster.NoteReplay) as failures on the session's host
// (here) of a call that failed on the host failed.
func (l *txLog) refusal(werr error, failed string, cl *cluster.Cluster, here string) error {
	why := ""
	switch {
	case l.tooBig:
		why = fmt.Sprintf("not replayed: the transaction recorded more than transactionReplayMaxSize (%d bytes)", l.maxSize)
		cl.NoteReplay(cluster.ReplayTooBig, failed, here, errors.New(why))
	case l.unsafe != "" || l.gone != "":
		why = l.unsafe
		if why == "" {
			why = l.gone
		}
		why = "not replayed: the transaction used " + why
		cl.NoteReplay(cluster.ReplayUnsafe, failed, here, errors.New(why))
	case werr != nil:
		why = "not replayed: no new session"
	}
	if why == "" {
		return nil
	}
	return errors.New(why)
}

// deadline returns the context a replay runs in: ctx, bounded by what
// transactionReplayTimeout leaves of the time since the first failure (now, at the
// first), or an error when nothing is left. The caller calls cancel when done.
func (l *txLog) deadline(ctx context.Context, now time.Time) (context.Context, context.CancelFunc, error) {
	if l.failedAt.IsZero() {
		l.failedAt = now
	}
	if l.timeout <= 0 {
		return ctx, func() {}, nil
	}
	left := l.timeout - now.Sub(l.failedAt)
	if left <= 0 {
		return nil, nil, errors.New("not replayed: transactionReplayTimeout has passed since the first failure")
	}
	rctx, cancel := context.WithTimeout(ctx, left)
	return rctx, cancel, nil
}

// replayRounds replays the recorded transaction (replay) within rctx, on the next
// session each time the session fails during the replay, up to transactionReplayAttempts
// replays in all. before is the state the failed call left (see replayHere). A replay
// that differed or failed otherwise is abandoned (within ctx: see abandon).
func (p *prim) replayRounds(ctx, rctx context.Context, before txState, failed string) (bool, error) {
	l := p.log
	for {
		if n := l.replays; n >= l.attempts {
			l.clear()
			return false, fmt.Errorf("not replayed: %d replays already (transactionReplayAttempts)", n)
		}
		l.replays++
		host := p.cl.Host(p.host)
		err := p.replay(rctx, before)
		if err == nil {
			p.cl.NoteReplay(cluster.Replayed, failed, host, nil)
			return true, nil
		}
		var re *replayError
		switch {
		case errors.As(err, &re):
		case cluster.Ended(rctx):
			err = errReplayStopped
		case cluster.Classify(rctx, err) == cluster.Communication:
			// The new session failed during the replay: the next one, if any.
			if err := p.nextSession(rctx, err, host); err != nil {
				l.clear()
				return false, err
			}
			continue
		default:
			err = &replayError{host: host, why: "the replay failed: " + err.Error()}
		}
		p.abandon(ctx)
		if errors.As(err, &re) {
			p.cl.NoteReplay(cluster.ReplayMismatch, failed, host, err)
		}
		l.clear()
		return false, err
	}
}

// nextSession replaces the session that failed with err during a replay on host by the
// next one (cluster.Cluster.Recover), or says why there is none.
func (p *prim) nextSession(ctx context.Context, err error, host string) error {
	from := p.host
	held := p.closePhys()
	p.clean()
	phys, h, werr := p.cl.Recover(ctx, from, err, p.setup)
	if held {
		p.cl.Release(from)
	}
	if werr != nil {
		return fmt.Errorf("not replayed: %s failed during the replay (%v) and no host answered: %w", host, dialect.NotBadConn(err, ""), werr)
	}
	p.attach(phys, h)
	return nil
}

// abandon ends what a failed replay left on the session, so that the session is what
// the connection believes it is: no transaction (the lost one's state), and the
// database, autocommit and completion_type the connection follows. It rolls back the
// part of the transaction that ran; a replay that changed the session beyond its
// transaction (the USE of the transaction's first database, a statement that sets the
// session's state) left it elsewhere, so that session is dropped instead (the next call
// opens one set up from what the connection knows), as is one whose ROLLBACK fails.
func (p *prim) abandon(ctx context.Context) {
	if p.phys == nil {
		return
	}
	if v, ok := p.phys.(driver.Validator); ok && !v.IsValid() || p.log.moved {
		p.drop()
		return
	}
	var err error
	if p.tx != nil && p.tx.epoch == p.epoch {
		err = p.tx.inner.Rollback()
	} else {
		err = p.exec(context.WithoutCancel(ctx), p.phys, "ROLLBACK")
	}
	if err != nil {
		p.drop()
		return
	}
	p.st.end(false)
}

// commits reports whether a call of kind k may commit the open transaction: COMMIT (also
// XA COMMIT, and Tx.Commit), a statement that commits implicitly, a BEGIN (which commits
// what is open), SET autocommit = 1, UNLOCK TABLES.
func commits(k stmt.Kind) bool {
	switch k.Kind() {
	case dialect.Commit, dialect.XACommit, dialect.Begin, dialect.XAStart, dialect.Implicit, dialect.Maybe,
		dialect.LockTables, dialect.Unlock, dialect.AutocommitOn, dialect.AutocommitUnknown, dialect.Batch,
		dialect.Unknown, kTxEnd.Kind():
		return true
	}
	return false
}

// replay runs the record on the connection's new session: the transaction's database,
// BEGIN with its options (a Tx), then every statement, each compared with what the
// application saw of it. It returns a *replayError for a difference (the session then
// holds the part that ran, and l.moved says whether it changed the session beyond the
// transaction), or the session's own error. Once it succeeded the session holds the
// transaction again, in the state before (the failed call runs next).
func (p *prim) replay(ctx context.Context, before txState) error {
	l := p.log
	host := p.cl.Host(p.host)
	l.moved = false
	if l.db != p.db {
		if l.db == "" {
			return &replayError{host: host, why: "the transaction began without a database and chose one with USE"}
		}
		l.moved = true // the session is in l.db until the record's own USE, if it gets there
		if err := p.exec(ctx, p.phys, "USE `"+strings.ReplaceAll(l.db, "`", "``")+"`"); err != nil {
			return err
		}
	}
	if l.tx {
		var tx driver.Tx
		var err error
		if b, ok := p.phys.(driver.ConnBeginTx); ok {
			tx, err = b.BeginTx(ctx, l.opts)
		} else {
			tx, err = p.phys.Begin() //nolint:staticcheck // fallback for drivers without ConnBeginTx
		}
		if err != nil {
			return err
		}
		p.tx.inner, p.tx.epoch = tx, p.epoch
	}
	r := replayer{p.phys, p.execer, p.queryer}
	for i, e := range l.entries {
		if e.k != kPlain && e.k != kBegin {
			l.moved = true // USE, SET ...: the session's own state, as it was at this point
		}
		if err := r.one(ctx, e); err != nil {
			var re *replayError
			if errors.As(err, &re) {
				re.n, re.query, re.host = i+1, e.query, host
			}
			return err
		}
	}
	if !l.tx {
		p.st = before
	}
	return nil
}

// replayer runs the recorded statements on the new physical session phys, through its
// optional interfaces (nil where it lacks one).
type replayer struct {
	phys    driver.Conn
	execer  driver.ExecerContext
	queryer driver.QueryerContext
}

// one runs one recorded statement and compares its result with the record.
func (r replayer) one(ctx context.Context, e *entry) error {
	var s driver.Stmt
	if e.how&viaPrepared != 0 {
		var err error
		if s, err = prepareOn(ctx, r.phys, e.query); err != nil {
			return dataAsMismatch(ctx, err)
		}
		defer s.Close()
	}
	if e.errno != 0 {
		return r.failed(ctx, e, s)
	}
	if e.how&viaQuery == 0 {
		res, err := r.exec(ctx, e, s)
		if err != nil {
			return dataAsMismatch(ctx, err)
		}
		affected, _ := res.RowsAffected()
		id, _ := res.LastInsertId()
		switch {
		case e.sawAffected && affected != e.affected:
			return &replayError{why: fmt.Sprintf("%d rows affected, the application saw %d", affected, e.affected)}
		case e.sawInsertID && id != e.insertID:
			return &replayError{why: fmt.Sprintf("insert id %d, the application saw %d", id, e.insertID)}
		}
		e.affected, e.insertID = affected, id // what the result answers from now on
		return nil
	}
	rows, err := r.query(ctx, e, s)
	if err != nil {
		return dataAsMismatch(ctx, err)
	}
	defer rows.Close()
	h := fnvOffset
	cols := rows.Columns()
	hashColumns(&h, cols)
	dest := make([]driver.Value, len(cols))
	for n := 0; n < e.rows; n++ {
		if err := rows.Next(dest); err != nil {
			if err == io.EOF {
				return &replayError{why: fmt.Sprintf("%d rows, the application read %d", n, e.rows)}
			}
			return dataAsMismatch(ctx, err)
		}
		hashRow(&h, dest)
	}
	if h != e.digest {
		return &replayError{why: "the rows differ from those the application read"}
	}
	if e.eof {
		switch err := rows.Next(dest); err {
		case io.EOF:
		case nil:
			return &replayError{why: fmt.Sprintf("more than the %d rows the application read to the end", e.rows)}
		default:
			return dataAsMismatch(ctx, err)
		}
	}
	return nil
}

// failed runs a recorded statement that failed (e.errno) through s (nil: not
// prepared): it must fail with the same error.
func (r replayer) failed(ctx context.Context, e *entry, s driver.Stmt) error {
	var err error
	if e.how&viaQuery != 0 {
		var rows driver.Rows
		if rows, err = r.query(ctx, e, s); err == nil {
			_ = rows.Close()
		}
	} else {
		_, err = r.exec(ctx, e, s)
	}
	switch {
	case err == nil:
		return &replayError{why: fmt.Sprintf("it succeeded on replay, the application saw error %d", e.errno)}
	case dialect.ServerError(err) != nil && dialect.Number(err) == e.errno:
		return nil
	}
	if m := dataAsMismatch(ctx, err); m != err {
		return &replayError{why: fmt.Sprintf("it failed with %v on replay, the application saw error %d", err, e.errno)}
	}
	return err
}

// exec runs the recorded statement e through s (nil: not prepared) or the session.
func (r replayer) exec(ctx context.Context, e *entry, s driver.Stmt) (driver.Result, error) {
	switch {
	case s != nil:
		return s.(driver.StmtExecContext).ExecContext(ctx, e.args)
	case r.execer != nil:
		return r.execer.ExecContext(ctx, e.query, e.args)
	}
	return nil, &replayError{why: "the connection cannot run statements directly"}
}

// query runs the recorded query e through s (nil: not prepared) or the session.
func (r replayer) query(ctx context.Context, e *entry, s driver.Stmt) (driver.Rows, error) {
	switch {
	case s != nil:
		return s.(driver.StmtQueryContext).QueryContext(ctx, e.args)
	case r.queryer != nil:
		return r.queryer.QueryContext(ctx, e.query, e.args)
	}
	return nil, &replayError{why: "the connection cannot run queries directly"}
}

// dataAsMismatch returns err when it is the session's failure (communication, or the
// context), else a *replayError: a statement that succeeded before failed on replay.
func dataAsMismatch(ctx context.Context, err error) error {
	if cluster.Classify(ctx, err) != cluster.Data {
		return err
	}
	return &replayError{why: "it failed on replay: " + err.Error()}
}

// replayIdle replays, with replay on, the transaction of a session that stale found
// dead before a call of kind k was sent (wait_timeout, a KILL of the idle session, a
// restart): on a new session on the pool's host, nothing of the call having run. before
// is the state the dead session held. It reports whether the transaction runs again.
func (p *prim) replayIdle(ctx context.Context, before txState, k stmt.Kind) bool {
	l := p.log
	if l == nil || !l.on || p.phys != nil || p.tx != nil && (p.tx.rs != nil || p.tx.lost != nil) {
		return false
	}
	if p.tx == nil && before.txn != txnOpen {
		return false
	}
	failed := p.cl.Host(p.host)
	phys, host, err := p.cl.Connect(ctx, p.setup)
	if err != nil {
		l.clear()
		return false
	}
	p.attach(phys, host)
	ok, _ := p.replayHere(ctx, &switched{k: k, r: stmt.RetryIfNotSent, failed: failed, before: before})
	if ok && p.tx == nil {
		p.lost = nil // discard took the transaction for lost
	}
	return ok
}
