package main

import (
	"bytes"
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// clockTick is the kernel's USER_HZ, the unit of utime and stime in /proc/PID/stat (100 on
// every Linux architecture Go supports).
const clockTick = 100

// meter reads one server's own counters through a session of its own (root), and counts
// the statements it sends, so that they can be taken out of Questions.
type meter struct {
	node *harness.Node
	conn *sql.Conn
	pid  int
	sent int64 // statements this meter sent on conn
}

// hostWindow is what one host did over a window.
type hostWindow struct {
	node      int
	secs      float64
	questions int64   // Questions delta, the meter's own statements taken out
	connects  int64   // Connections delta: connection attempts, successful or not
	cpu       float64 // the server process's utime+stime over the window, seconds
	threads   float64 // Threads_connected, mean of the samples (the meter's session included)
	appRows   float64 // PROCESSLIST rows of the app user, mean of the samples
	samples   int
	err       string
}

// snap is a meter's reading at one instant.
type snap struct {
	at        time.Time
	questions int64
	connects  int64
	ticks     int64
}

func newMeter(ctx context.Context, n *harness.Node) (*meter, error) {
	c, err := n.Admin().Conn(ctx)
	if err != nil {
		return nil, err
	}
	m := &meter{node: n, conn: c}
	m.pid = serverPID(n.Port())
	return m, nil
}

func (m *meter) close() {
	if m.conn != nil {
		m.conn.Close()
	}
}

// status reads one global status variable (one statement).
func (m *meter) status(ctx context.Context, name string) (int64, error) {
	m.sent++
	var k string
	var v int64
	err := m.conn.QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE '"+name+"'").Scan(&k, &v)
	return v, err
}

func (m *meter) snap(ctx context.Context) (snap, error) {
	q, err := m.status(ctx, "Questions")
	if err != nil {
		return snap{}, err
	}
	c, err := m.status(ctx, "Connections")
	if err != nil {
		return snap{}, err
	}
	return snap{at: time.Now(), questions: q, connects: c, ticks: procTicks(m.pid)}, nil
}

// sessions reads Threads_connected and the app user's PROCESSLIST rows (two statements).
func (m *meter) sessions(ctx context.Context) (threads, app int64, err error) {
	if threads, err = m.status(ctx, "Threads_connected"); err != nil {
		return 0, 0, err
	}
	m.sent++
	err = m.conn.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE USER = '"+harness.AppUser+"'").Scan(&app)
	return threads, app, err
}

// measure reads every running node's counters over window, sampling the sessions once a
// second, and returns one hostWindow per node (err set for a node it could not read).
func measure(ctx context.Context, c *harness.Cluster, window time.Duration) []hostWindow {
	var ms []*meter
	out := make([]hostWindow, c.N())
	for i, n := range c.Nodes() {
		out[i].node = n.Index()
		if n.State() != harness.Running {
			out[i].err = "down"
			ms = append(ms, nil)
			continue
		}
		m, err := newMeter(ctx, n)
		if err != nil {
			out[i].err = err.Error()
		}
		ms = append(ms, m)
	}
	defer func() {
		for _, m := range ms {
			if m != nil {
				m.close()
			}
		}
	}()
	begin := make([]snap, len(ms))
	sentAt := make([]int64, len(ms))
	for i, m := range ms {
		if m == nil {
			continue
		}
		s, err := m.snap(ctx)
		if err != nil {
			out[i].err = err.Error()
			ms[i] = nil
			continue
		}
		begin[i], sentAt[i] = s, m.sent
	}
	end := time.Now().Add(window)
	for time.Until(end) > 0 {
		time.Sleep(min(time.Second, time.Until(end)))
		for i, m := range ms {
			if m == nil {
				continue
			}
			th, app, err := m.sessions(ctx)
			if err != nil {
				out[i].err = err.Error()
				continue
			}
			out[i].threads += float64(th)
			out[i].appRows += float64(app)
			out[i].samples++
		}
	}
	for i, m := range ms {
		if m == nil {
			continue
		}
		s, err := m.snap(ctx)
		if err != nil {
			out[i].err = err.Error()
			continue
		}
		o := &out[i]
		o.secs = s.at.Sub(begin[i].at).Seconds()
		// Each SHOW counts itself. In the delta: the opening snap's second SHOW, the
		// samples, the closing snap's first SHOW; not its second. That is m.sent - sentAt.
		o.questions = s.questions - begin[i].questions - (m.sent - sentAt[i])
		o.connects = s.connects - begin[i].connects
		if m.pid > 0 {
			o.cpu = float64(s.ticks-begin[i].ticks) / clockTick
		}
		if o.samples > 0 {
			o.threads /= float64(o.samples)
			o.appRows /= float64(o.samples)
		}
	}
	return out
}

// serverPID finds the mariadbd (or mysqld) process listening on port, by its command
// line (--port=PORT, as package harness starts it); 0 when there is none.
func serverPID(port int) int {
	want := []byte("--port=" + strconv.Itoa(port) + "\x00")
	dirs, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, d := range dirs {
		b, err := os.ReadFile(d)
		if err != nil || !bytes.Contains(b, want) {
			continue
		}
		name := filepath.Base(string(bytes.SplitN(b, []byte{0}, 2)[0]))
		if name != "mariadbd" && name != "mysqld" {
			continue
		}
		pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(d)))
		return pid
	}
	return 0
}

// procTicks is utime+stime of pid (fields 14 and 15 of /proc/PID/stat), in clock ticks.
func procTicks(pid int) int64 {
	if pid <= 0 {
		return 0
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The command name (field 2) is in parentheses and may hold spaces: count after it.
	s := string(b)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(f) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return u + st
}
