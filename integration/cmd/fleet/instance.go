package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
)

// envInstance, set in a child's environment, makes the binary an instance: envDSN holds
// its DSN (not on the command line, where ps shows it), envID its number from 0.
const (
	envInstance = "FLEET_INSTANCE"
	envDSN      = "FLEET_DSN"
	envID       = "FLEET_ID"
)

// poolSize is each instance's SetMaxOpenConns and SetMaxIdleConns.
const poolSize = 4

// msg is one line an instance writes on its stdout (JSON), and the parent reads.
type msg struct {
	Ev string `json:"ev"` // up, open, ok, report, error

	// open: how long the 4 sessions took (ms), the host of each (Conn.Host) and the
	// pool's Stats().Active afterwards; Err is the first error.
	Ms     float64  `json:"ms,omitempty"`
	Hosts  []string `json:"hosts,omitempty"`
	Active string   `json:"active,omitempty"`
	Err    string   `json:"err,omitempty"`

	// report: the first write that started at or after the kill and succeeded (its end,
	// Unix ns; 0: none), the writes and failed writes since "write" began, the process's
	// CPU time so far (utime+stime, ns).
	First  int64 `json:"first,omitempty"`
	Writes int64 `json:"writes,omitempty"`
	Fails  int64 `json:"fails,omitempty"`
	CPU    int64 `json:"cpu,omitempty"`
	// report: the pool's Stats().Failovers so far (walks that moved it after a failure).
	Failovers int64 `json:"failovers,omitempty"`
	// report: the failed writes' errors by text (at most maxErrTexts texts, the rest
	// counted under "other").
	Errs map[string]int `json:"errs,omitempty"`
}

// maxErrTexts is how many distinct error texts an instance keeps.
const maxErrTexts = 5

// instance is one member of the fleet: its own process, its own pool, driven by the
// parent's commands on stdin, one a line:
//
//	open            take 4 sessions at once (db.Conn in 4 goroutines), each pinged, then
//	                give them back to the pool (idle): reply "open"
//	idle            stop any workload: reply "ok"
//	load R          R statements a second, half reads, half INSERTs: reply "ok"
//	write MS        one INSERT every MS milliseconds (a deadline of 2 s each): reply "ok"
//	report KILLNS   stop any workload; reply "report" (the first write after KILLNS)
//	cpu             reply "report" with the CPU time and the pool's failovers only
//
// EOF on stdin closes the pool and ends the process.
func instance() int {
	mysql.SetLogger(log.New(io.Discard, "", 0)) // a killed server makes go-sql-driver log
	id, _ := strconv.Atoi(os.Getenv(envID))
	db, err := openDB(id)
	if err != nil {
		fmt.Fprintf(os.Stderr, "fleet instance %d: %v\n", id, err)
		return 1
	}
	defer db.Close()
	db.SetMaxOpenConns(poolSize)
	db.SetMaxIdleConns(poolSize)
	db.SetConnMaxIdleTime(0)
	db.SetConnMaxLifetime(0)
	out := json.NewEncoder(os.Stdout)
	send := func(m msg) { _ = out.Encode(m) } // one Write a line: the parent reads lines
	send(msg{Ev: "up"})

	w := &work{db: db, id: id}
	failovers := func() int64 {
		c, err := mysqlfailover.ConnectorOf(context.Background(), db) // sql.Open: at once
		if err != nil {
			return 0
		}
		return c.Stats().Failovers
	}
	sc := bufio.NewScanner(os.Stdin)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		arg := int64(0)
		if len(f) > 1 {
			arg, _ = strconv.ParseInt(f[1], 10, 64)
		}
		switch f[0] {
		case "open":
			send(openPool(db))
		case "idle":
			w.stop()
			send(msg{Ev: "ok"})
		case "load":
			w.stop()
			w.start(func(ctx context.Context) { w.load(ctx, int(arg)) })
			send(msg{Ev: "ok"})
		case "write":
			w.stop()
			w.start(func(ctx context.Context) { w.write(ctx, time.Duration(arg)*time.Millisecond) })
			send(msg{Ev: "ok"})
		case "report":
			w.stop()
			m := w.report(arg)
			m.CPU, m.Failovers = cpuTime(), failovers()
			send(m)
		case "cpu":
			send(msg{Ev: "report", CPU: cpuTime(), Failovers: failovers()})
		default:
			send(msg{Ev: "error", Err: "unknown command " + f[0]})
		}
	}
	w.stop()
	return 0
}

// openPool takes poolSize sessions at once and returns them to the pool.
func openPool(db *sql.DB) msg {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	begin := time.Now()
	m := msg{Ev: "open", Hosts: make([]string, poolSize)}
	conns := make([]*sql.Conn, poolSize)
	errs := make([]error, poolSize)
	var wg sync.WaitGroup
	for i := range poolSize {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := db.Conn(ctx)
			if err == nil {
				err = c.PingContext(ctx)
			}
			if err == nil {
				err = c.Raw(func(dc any) error {
					fc, ok := mysqlfailover.ConnOf(dc)
					if !ok {
						return errors.New("not a mysqlfailover connection")
					}
					m.Hosts[i] = fc.Host()
					return nil
				})
			}
			conns[i], errs[i] = c, err
		}()
	}
	wg.Wait()
	m.Ms = float64(time.Since(begin).Microseconds()) / 1000
	for i, c := range conns {
		if c != nil {
			c.Close()
		}
		if errs[i] != nil && m.Err == "" {
			m.Err = errs[i].Error()
		}
	}
	if c, err := mysqlfailover.ConnectorOf(ctx, db); err == nil {
		st := c.Stats()
		m.Active, m.Failovers = st.Active, st.Failovers
	}
	return m
}

// work is the instance's workload, one at a time.
type work struct {
	db     *sql.DB
	id     int
	seq    int64
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex
	oks    []span // successful writes of the current "write"
	writes int64
	fails  int64
	errs   map[string]int
}

// span is one successful write: when it started and ended (Unix ns).
type span struct{ start, end int64 }

func (w *work) start(f func(ctx context.Context)) {
	ctx, cancel := context.WithCancel(context.Background())
	w.cancel, w.done = cancel, make(chan struct{})
	go func() {
		defer close(w.done)
		f(ctx)
	}()
}

func (w *work) stop() {
	if w.cancel != nil {
		w.cancel()
		<-w.done
		w.cancel = nil
	}
}

// insert writes the instance's next row, literal SQL: one statement at the server (with
// arguments and no interpolateParams, go-sql-driver would prepare, run and close).
func (w *work) insert(ctx context.Context) error {
	w.seq++
	_, err := w.db.ExecContext(ctx, fmt.Sprintf("INSERT INTO fleet_w (inst, seq) VALUES (%d, %d)", w.id, w.seq))
	return err
}

// load runs rate statements a second until ctx ends: a point read, then an INSERT.
func (w *work) load(ctx context.Context, rate int) {
	if rate <= 0 {
		<-ctx.Done()
		return
	}
	t := time.NewTicker(time.Second / time.Duration(rate))
	defer t.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if i%2 == 0 {
			var v sql.NullInt64
			_ = w.db.QueryRowContext(sctx, fmt.Sprintf("SELECT MAX(seq) FROM fleet_w WHERE inst = %d", w.id)).Scan(&v)
		} else {
			_ = w.insert(sctx)
		}
		cancel()
	}
}

// write runs one INSERT every every until ctx ends, and keeps the successful ones.
func (w *work) write(ctx context.Context, every time.Duration) {
	w.mu.Lock()
	w.oks, w.writes, w.fails, w.errs = nil, 0, 0, map[string]int{}
	w.mu.Unlock()
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		begin := time.Now()
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		err := w.insert(sctx)
		cancel()
		if ctx.Err() != nil {
			return
		}
		w.mu.Lock()
		w.writes++
		if err != nil {
			w.fails++
			if dbgLog != nil {
				dbgLog.Info("write failed", "took", time.Since(begin), "err", err.Error())
			}
			e := err.Error()
			e = durationRE.ReplaceAllString(e, "D") // one text for a shape, as the parent counts them
			if len(e) > 400 {
				e = e[:400] + "..."
			}
			if _, ok := w.errs[e]; !ok && len(w.errs) >= maxErrTexts {
				e = "other"
			}
			w.errs[e]++
		} else {
			if dbgLog != nil && time.Since(begin) > 50*time.Millisecond {
				dbgLog.Info("write slow", "took", time.Since(begin))
			}
			w.oks = append(w.oks, span{begin.UnixNano(), time.Now().UnixNano()})
		}
		w.mu.Unlock()
	}
}

// report gives the end of the first successful write that started at or after killNS.
func (w *work) report(killNS int64) msg {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := msg{Ev: "report", Writes: w.writes, Fails: w.fails, Errs: w.errs}
	for _, s := range w.oks {
		if s.start >= killNS {
			m.First = s.end
			break
		}
	}
	return m
}

// cpuTime is the process's user and system CPU time so far, in ns.
func cpuTime() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// dbgLog is the driver's log of this instance at Debug (WithLogger), and its failed and
// slow writes, when FLEET_LOG names a directory.
var dbgLog *slog.Logger

// openDB opens the pool; with FLEET_LOG=DIR, with the driver's debug log in DIR/ID.log.
func openDB(id int) (*sql.DB, error) {
	dir := os.Getenv("FLEET_LOG")
	if dir == "" {
		return sql.Open("mysqlfailover", os.Getenv(envDSN))
	}
	cfg, err := dsn.Parse(os.Getenv(envDSN))
	if err != nil {
		return nil, err
	}
	f, err := os.Create(fmt.Sprintf("%s/%d.log", dir, id))
	if err != nil {
		return nil, err
	}
	dbgLog = slog.New(slog.NewTextHandler(f, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithLogger(dbgLog))
	if err != nil {
		return nil, err
	}
	return sql.OpenDB(c), nil
}
