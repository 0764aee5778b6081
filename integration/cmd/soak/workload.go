package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
)

// outcome of one key or transaction.
type outcome int8

const (
	unknown outcome = iota // may or may not be there
	acked                  // the write, or the commit, succeeded
	notRun                 // provably not written
)

type ledger struct {
	mu     sync.Mutex
	writes map[int64]outcome
	txs    map[int64]outcome
}

func (l *ledger) setWrite(k int64, o outcome) {
	l.mu.Lock()
	l.writes[k] = o
	l.mu.Unlock()
}

func (l *ledger) setTx(k int64, o outcome) {
	l.mu.Lock()
	l.txs[k] = o
	l.mu.Unlock()
}

// tables are the two tables one workload writes: its keys (soak_w) and its transactions
// (soak_tx). In a fleet (-instances) each instance has its own, named with its number.
type tables struct{ w, tx string }

// soloTables are the tables of a soak of one instance.
var soloTables = tables{w: "soak_w", tx: "soak_tx"}

// instanceTables are instance i's tables in a fleet.
func instanceTables(i int) tables {
	return tables{w: fmt.Sprintf("soak_w_%d", i), tx: fmt.Sprintf("soak_tx_%d", i)}
}

// create are the statements that create t on database db.
func (t tables) create(db string) []string {
	return []string{
		"CREATE TABLE " + db + "." + t.w + " (k BIGINT PRIMARY KEY, w INT NOT NULL, port INT NOT NULL)",
		"CREATE TABLE " + db + "." + t.tx + " (txid BIGINT NOT NULL, part TINYINT NOT NULL, PRIMARY KEY (txid, part))",
	}
}

// workload is the 16 workers.
type workload struct {
	r    *result
	db   *sql.DB
	led  *ledger
	b    map[string]time.Duration
	t    tables
	stop chan struct{}
}

func (w *workload) stopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}

// call runs fn with a context of deadline dl and accounts for it.
func (w *workload) call(class, what string, dl time.Duration, fn func(ctx context.Context) error) error {
	ctx, cancel := context.WithTimeout(context.Background(), dl)
	defer cancel()
	begin := time.Now()
	err := fn(ctx)
	bound := w.b[class]
	if class == "short" {
		bound = dl + slack
	}
	w.r.record(class, what, time.Since(begin), err, bound)
	return err
}

// Worker roles by index: 0-4 writers, 5-7 transactions, 8-11 readers, 12-15 pinned.
func (w *workload) run(i int) {
	rng := rand.New(rand.NewPCG(uint64(i), 1))
	seq := int64(0)
	next := func() int64 { seq++; return int64(i)*1_000_000_000 + seq }
	for !w.stopped() {
		switch {
		case i < 5:
			w.write(nil, i, next(), rng.IntN(2) == 0, false)
		case i < 8:
			w.tx(next())
		case i < 12:
			w.read(rng)
		default:
			w.pinned(i, rng, next)
		}
		time.Sleep(pause) // a shared machine: no hot loop on fast errors either
	}
}

// execer is what a write runs on: the pool or a pinned connection.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// write inserts key k, once, and again (at most twice) while SafeToRetry says the last
// attempt did not run; ro says the connection was set read-only.
func (w *workload) write(conn *sql.Conn, worker int, k int64, withArgs, ro bool) {
	var ex execer = w.db
	class, dl := "pool", poolDL
	if conn != nil {
		ex, class, dl = conn, "pinned", pinnedDL
	}
	// The key's outcome: acked once an attempt succeeded; unknown once an attempt may
	// have run; otherwise (every attempt said it did not run) notRun.
	final := notRun
	for attempt := 0; attempt < 3 && !w.stopped(); attempt++ {
		if attempt > 0 {
			time.Sleep(50 * time.Millisecond)
		}
		what := fmt.Sprintf("write %d (attempt %d, %s)", k, attempt+1, class)
		err := w.call(class, what, dl, func(ctx context.Context) error {
			var err error
			if withArgs {
				_, err = ex.ExecContext(ctx, "INSERT INTO "+w.t.w+" (k, w, port) VALUES (?, ?, @@port)", k, worker)
			} else {
				_, err = ex.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (k, w, port) VALUES (%d, %d, @@port)", w.t.w, k, worker))
			}
			return err
		})
		var me *mysql.MySQLError
		isMy := errors.As(err, &me) && errKind(err) == "mysql-"+strconv.Itoa(int(me.Number)) // a bare data error
		switch {
		case err == nil:
			final = acked
			if ro {
				w.r.violate("ro-write", "%s succeeded after SetReadOnly(true)", what)
			}
		case isMy && me.Number == 1062:
			if attempt == 0 {
				w.r.violate("dup-first", "%s: %v: the key is written once, so the statement ran twice", what, err)
			} else {
				w.r.violate("dup-retry", "%s: %v: SafeToRetry said the previous attempt did not run", what, err)
			}
			final = acked // it is there
		case isMy && (me.Number == 1290 || me.Number == 1792 || me.Number == 1836):
			// a read-only rejection: the server ran nothing; final stays notRun
		case mysqlfailover.SafeToRetry(err) == mysqlfailover.RetryStatement:
			continue // it did not run: again
		default:
			final = unknown
		}
		break
	}
	w.led.setWrite(k, final)
}

// tx inserts (txid, 1) and (txid, 2) in one transaction.
func (w *workload) tx(txid int64) {
	ctx, cancel := context.WithTimeout(context.Background(), poolDL)
	defer cancel()
	timed := func(what string, fn func() error) error {
		begin := time.Now()
		err := fn()
		w.r.record("pool", fmt.Sprintf("tx %d %s", txid, what), time.Since(begin), err, w.b["pool"])
		return err
	}
	var tx *sql.Tx
	if err := timed("begin", func() (err error) { tx, err = w.db.BeginTx(ctx, nil); return err }); err != nil {
		w.led.setTx(txid, notRun)
		return
	}
	for part := 1; part <= 2; part++ {
		err := timed("insert "+strconv.Itoa(part), func() error {
			_, err := tx.ExecContext(ctx, "INSERT INTO "+w.t.tx+" (txid, part) VALUES (?, ?)", txid, part)
			return err
		})
		if err != nil {
			var me *mysql.MySQLError
			if errors.As(err, &me) && me.Number == 1062 {
				w.r.violate("dup-first", "tx %d insert %d: %v", txid, part, err)
			}
			_ = timed("rollback", tx.Rollback)
			w.led.setTx(txid, notRun)
			return
		}
	}
	err := timed("commit", tx.Commit)
	switch {
	case err == nil:
		w.led.setTx(txid, acked)
	case errors.Is(err, failover.ErrTxLost) && !errors.Is(err, failover.ErrCommitOutcomeUnknown):
		w.led.setTx(txid, notRun)
	default:
		w.led.setTx(txid, unknown)
	}
}

// read runs a small query; a third of them with a short deadline.
func (w *workload) read(rng *rand.Rand) {
	class, dl := "pool", poolDL
	if rng.IntN(3) == 0 {
		class, dl = "short", shortMin+time.Duration(rng.Int64N(int64(shortMax-shortMin)))
	}
	q := "SELECT @@port"
	if rng.IntN(2) == 0 {
		q = "SELECT COALESCE(MAX(k), 0) FROM " + w.t.w + " WHERE k < 5000000000"
	}
	_ = w.call(class, "read "+q, dl, func(ctx context.Context) error {
		var v int64
		return w.db.QueryRowContext(ctx, q).Scan(&v)
	})
}

// pinned holds one connection for 20 rounds: SetReadOnly(true or false), a read and a
// write in that state.
func (w *workload) pinned(i int, rng *rand.Rand, next func() int64) {
	var conn *sql.Conn
	if w.call("pool", "db.Conn", poolDL, func(ctx context.Context) (err error) { conn, err = w.db.Conn(ctx); return err }) != nil {
		time.Sleep(50 * time.Millisecond)
		return
	}
	defer conn.Close()
	for round := 0; round < 20 && !w.stopped(); round++ {
		ro := rng.IntN(2) == 0
		err := w.call("pinned", fmt.Sprintf("SetReadOnly(%v)", ro), pinnedDL, func(ctx context.Context) error {
			return conn.Raw(func(dc any) error {
				fc, ok := mysqlfailover.ConnOf(dc)
				if !ok {
					return errors.New("soak: not a mysqlfailover connection")
				}
				return fc.SetReadOnly(ctx, ro)
			})
		})
		if err != nil {
			if errKind(err) == "" || errKind(err) == "sql-conndone" {
				return
			}
			continue
		}
		_ = w.call("pinned", "pinned read", pinnedDL, func(ctx context.Context) error {
			var v int64
			return conn.QueryRowContext(ctx, "SELECT @@port").Scan(&v)
		})
		w.write(conn, i, next(), rng.IntN(2) == 0, ro)
	}
}
