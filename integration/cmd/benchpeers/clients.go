//go:build linux

package main

import (
	"bufio"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-sql-driver/mysql"

	_ "github.com/mysqlfailover/mysqlfailover" // registers "mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
)

// op is one SELECT @@port of a load worker.
type op struct {
	worker     int
	start, end time.Time
	node       int    // the node it ran on; 0 on failure
	err        string // the error's kind; "" on success
}

// recorder collects a client's operations as they end.
type recorder struct {
	mu  sync.Mutex
	ops []op
}

func (r *recorder) add(o op) {
	r.mu.Lock()
	r.ops = append(r.ops, o)
	r.mu.Unlock()
}

func (r *recorder) snapshot() []op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]op(nil), r.ops...)
}

// client is one way of reaching the cluster under the fault workload.
type client interface {
	name() string
	// start opens the client's connections for workers workers (addresses straight to
	// the servers, or through the toxiproxy proxies when proxied) and starts the load.
	start(workers int, pace time.Duration, proxied bool) error
	// ops returns the operations ended so far.
	ops() []op
	// stop ends the load and closes the client's connections.
	stop()
}

// goClient is a database/sql pool over go-sql-driver, mysqlfailover, or go-sql-driver
// through HAProxy.
type goClient struct {
	label  string
	driver string
	dsn    func(proxied bool) string
	nodeOf func(port int) int

	db     *sql.DB
	rec    *recorder
	halt   atomic.Bool
	wg     sync.WaitGroup
	cancel context.CancelFunc
}

func (g *goClient) name() string { return g.label }

// stmtDeadline bounds each statement of the fault workload (a caller's deadline), above
// every client's readTimeout (1 s), so that the clients' own timeouts are what shows.
const stmtDeadline = 3 * time.Second

func (g *goClient) start(workers int, pace time.Duration, proxied bool) error {
	db, err := sql.Open(g.driver, g.dsn(proxied))
	if err != nil {
		return fmt.Errorf("%s: %w", g.label, err)
	}
	db.SetMaxOpenConns(workers)
	db.SetMaxIdleConns(workers)
	g.db, g.rec = db, &recorder{}
	g.halt.Store(false)
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel = cancel
	// Open every connection before the load starts, as a warmed-up application has. A
	// peer may still be settling from the previous round (HAProxy cutting its backup's
	// sessions as the primary comes back up): try again for a while.
	conns := make([]*sql.Conn, 0, workers)
	for deadline := time.Now().Add(15 * time.Second); len(conns) < workers; {
		var cn *sql.Conn
		if cn, err = db.Conn(ctx); err == nil {
			err = cn.PingContext(ctx)
		}
		if err == nil {
			conns = append(conns, cn)
			continue
		}
		if cn != nil {
			cn.Raw(func(any) error { return driver.ErrBadConn }) // drop it from the pool
			cn.Close()
		}
		if time.Now().After(deadline) {
			for _, c := range conns {
				c.Close()
			}
			db.Close()
			cancel()
			return fmt.Errorf("%s: %w", g.label, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	for _, c := range conns {
		c.Close()
	}
	for w := range workers {
		g.wg.Add(1)
		go func() {
			defer g.wg.Done()
			for !g.halt.Load() {
				o := op{worker: w, start: time.Now()}
				sctx, scancel := context.WithTimeout(ctx, stmtDeadline)
				var port int
				err := db.QueryRowContext(sctx, "SELECT @@port").Scan(&port)
				scancel()
				o.end = time.Now()
				if err != nil {
					if g.halt.Load() {
						return
					}
					o.err = errKind(err)
				} else {
					o.node = g.nodeOf(port)
				}
				g.rec.add(o)
				time.Sleep(pace)
			}
		}()
	}
	return nil
}

func (g *goClient) ops() []op { return g.rec.snapshot() }

func (g *goClient) stop() {
	g.halt.Store(true)
	g.cancel()
	g.wg.Wait()
	g.db.Close()
}

// errKind names an error by what a caller can test, without addresses or ports.
func errKind(err error) string {
	var fe *failover.FailoverError
	var nh *failover.NoHostAvailableError
	var me *mysql.MySQLError
	var ne net.Error
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return "caller deadline"
	case errors.As(err, &nh):
		return "NoHostAvailableError"
	case errors.Is(err, failover.ErrTxLost):
		return "ErrTxLost"
	case errors.As(err, &fe):
		return "FailoverError"
	case errors.Is(err, driver.ErrBadConn):
		return "driver.ErrBadConn"
	case errors.As(err, &me):
		return fmt.Sprintf("MySQL %d", me.Number)
	case errors.Is(err, mysql.ErrInvalidConn):
		return "invalid connection"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "EOF"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &ne) && ne.Timeout():
		return "i/o timeout"
	}
	return fmt.Sprintf("%T", err)
}

// javaClient is MariaDB Connector/J in a JVM (PeerJ.java), driven over stdin/stdout.
type javaClient struct {
	label  string
	url    func(proxied bool) string
	nodeOf func(port int) int

	classpath string
	jvmArgs   []string

	cmd     *exec.Cmd
	in      io.WriteCloser
	replies chan string // lines other than "op"
	rec     atomic.Pointer[recorder]
}

// compileJava compiles PeerJ.java into dir: the class path to run it with jar.
func compileJava(dir, jar string) (string, error) {
	src := filepath.Join(dir, "PeerJ.java")
	if err := os.WriteFile(src, peerJSource, 0o644); err != nil {
		return "", err
	}
	if out, err := exec.Command("javac", "-nowarn", "-d", dir, "-cp", jar, src).CombinedOutput(); err != nil {
		return "", fmt.Errorf("javac: %v: %s", err, out)
	}
	return dir + string(os.PathListSeparator) + jar, nil
}

// launch starts a JVM running PeerJ. Connector/J keeps process-wide state (the
// blacklist of failed hosts, for loadBalanceBlacklistTimeout, 50 s), so each fault round
// gets a JVM of its own, as a restarted application would.
func (j *javaClient) launch() error {
	args := append([]string{"-Xss512k", "-XX:+UseSerialGC"}, j.jvmArgs...)
	cmd := exec.Command("java", append(args, "-cp", j.classpath, "PeerJ")...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = childAttr()
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	j.cmd, j.in, j.replies = cmd, in, make(chan string, 16)
	if j.rec.Load() == nil {
		j.rec.Store(&recorder{})
	}
	replies := j.replies
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "op ") {
				if o, ok := j.parseOp(line); ok {
					j.rec.Load().add(o)
				}
				continue
			}
			replies <- line
		}
		close(replies)
	}()
	return nil
}

func (j *javaClient) parseOp(line string) (op, bool) {
	f := strings.Fields(line)
	if len(f) != 6 {
		return op{}, false
	}
	w, _ := strconv.Atoi(f[1])
	s, _ := strconv.ParseInt(f[2], 10, 64)
	e, _ := strconv.ParseInt(f[3], 10, 64)
	port, _ := strconv.Atoi(f[4])
	o := op{worker: w, start: time.UnixMicro(s), end: time.UnixMicro(e)}
	if f[5] != "-" {
		o.err = f[5]
	} else {
		o.node = j.nodeOf(port)
	}
	return o, true
}

// ask sends one command and waits for its reply line.
func (j *javaClient) ask(cmd string, timeout time.Duration) (string, error) {
	if _, err := fmt.Fprintln(j.in, cmd); err != nil {
		return "", err
	}
	select {
	case r, ok := <-j.replies:
		if !ok {
			return "", errors.New("Connector/J process ended")
		}
		if strings.HasPrefix(r, "error ") {
			return "", errors.New(r)
		}
		return r, nil
	case <-time.After(timeout):
		return "", fmt.Errorf("no answer to %q within %v", strings.Fields(cmd)[0], timeout)
	}
}

func (j *javaClient) name() string { return j.label }

func (j *javaClient) start(workers int, pace time.Duration, proxied bool) error {
	j.rec.Store(&recorder{})
	if err := j.launch(); err != nil {
		return err
	}
	_, err := j.ask(fmt.Sprintf("start %s %d %d", j.url(proxied), workers, pace.Milliseconds()), 30*time.Second)
	return err
}

func (j *javaClient) ops() []op { return j.rec.Load().snapshot() }

func (j *javaClient) stop() {
	if _, err := j.ask("stop", 30*time.Second); err != nil {
		fmt.Fprintf(os.Stderr, "benchpeers: %s: stop: %v\n", j.label, err)
	}
	j.close()
}

// latency runs KIND calls for d on one connection: nanoseconds per call.
func (j *javaClient) latency(url, kind string, d time.Duration) (float64, error) {
	r, err := j.ask(fmt.Sprintf("lat %s %s %d", url, kind, d.Milliseconds()), d+time.Minute)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(r)
	if len(f) != 3 || f[0] != "lat" {
		return 0, fmt.Errorf("unexpected answer %q", r)
	}
	return strconv.ParseFloat(f[1], 64)
}

func (j *javaClient) close() {
	if j.cmd == nil {
		return
	}
	fmt.Fprintln(j.in, "quit")
	j.in.Close()
	done := make(chan struct{})
	go func() { j.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		j.cmd.Process.Kill()
		<-done
	}
	j.cmd = nil
}
