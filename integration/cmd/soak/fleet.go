package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.uber.org/goleak"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// A fleet soak (-instances N) runs the soak's workload in N processes at once, each its
// own pool on its own tables (instanceTables), against one cluster whose faults this
// process injects. An instance is this binary run again with envInstance set to its
// number and envDSN to the DSN; it runs until its stdin closes, then closes its pool,
// looks for goroutines left behind, and prints its account as one JSON line that starts
// with reportMark. The parent checks every instance's acknowledged writes against its
// tables, and the sessions once every instance has exited.
const (
	envInstance = "SOAK_INSTANCE"
	envDSN      = "SOAK_DSN"
	reportMark  = `{"instance":`
)

// instanceReport is what one instance tells the parent.
type instanceReport struct {
	Instance   int                      `json:"instance"`
	Calls      int64                    `json:"calls"`
	Errs       map[string]int           `json:"errs"`
	Longest    map[string]time.Duration `json:"longest"`
	LongestWhy map[string]string        `json:"longest_why"`
	FirstErr   map[string]string        `json:"first_err"`
	Viol       map[string]int           `json:"viol"`
	Details    []string                 `json:"details"`
	LogLines   int64                    `json:"log_lines"`
	Events     map[string]int64         `json:"events"`
	Writes     map[int64]outcome        `json:"writes"`
	Txs        map[int64]outcome        `json:"txs"`
}

// soakInstance is the instance side: the workload on its own pool until stdin closes.
func soakInstance() int {
	id, err := strconv.Atoi(os.Getenv(envInstance))
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak instance: %s=%q\n", envInstance, os.Getenv(envInstance))
		return 2
	}
	leakOpts := []goleak.Option{goleak.IgnoreCurrent()}
	r := newResult(0, false, 0)
	pl, err := openPool(r, os.Getenv(envDSN))
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak instance %d: %v\n", id, err)
		return 2
	}
	led := &ledger{writes: map[int64]outcome{}, txs: map[int64]outcome{}}
	w := &workload{r: r, db: pl.db, led: led, b: bounds(3), t: instanceTables(id), stop: make(chan struct{})}
	var wg sync.WaitGroup
	for i := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.run(i)
		}()
	}
	_, _ = io.Copy(io.Discard, os.Stdin) // until the parent closes it
	close(w.stop)
	wg.Wait()
	if err := pl.db.Close(); err != nil {
		r.violate("close", "db.Close: %v", err)
	}
	if err := goleak.Find(leakOpts...); err != nil {
		r.violate("goroutines", "after Close: %v", err)
	}
	rep := instanceReport{Instance: id, Events: map[string]int64{}, Writes: led.writes, Txs: led.txs}
	pl.events.Range(func(k, v any) bool {
		rep.Events[k.(string)] = v.(*atomic.Int64).Load()
		return true
	})
	r.mu.Lock()
	rep.Calls, rep.Errs, rep.Longest, rep.LongestWhy = r.calls, r.errs, r.longest, r.longestWhy
	rep.FirstErr, rep.Viol, rep.Details = r.firstErr, r.viol, r.details
	r.mu.Unlock()
	rep.LogLines = r.logLines.Load()
	b, err := json.Marshal(rep)
	if err != nil {
		fmt.Fprintf(os.Stderr, "soak instance %d: %v\n", id, err)
		return 2
	}
	fmt.Println(string(b))
	return 0
}

// soakChild is one instance's process, seen from the parent.
type soakChild struct {
	id     int
	cmd    *exec.Cmd
	in     io.WriteCloser
	report chan *instanceReport // one report, or closed without one
}

// startSoakChild starts instance id on dsnText. Its lines other than the report (its
// violations as they happen) are printed with its number.
func startSoakChild(id int, dsnText string) (*soakChild, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), envInstance+"="+strconv.Itoa(id), envDSN+"="+dsnText)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	ch := &soakChild{id: id, cmd: cmd, in: in, report: make(chan *instanceReport, 1)}
	go func() {
		defer close(ch.report)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 256<<20) // the ledger: some MB
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, reportMark) {
				var rep instanceReport
				if err := json.Unmarshal([]byte(line), &rep); err != nil {
					fmt.Printf("soak[%d]: bad report: %v\n", id, err)
					continue
				}
				ch.report <- &rep
				continue
			}
			fmt.Printf("soak[%d]: %s\n", id, line)
		}
	}()
	return ch, nil
}

// soakFleet runs one half as soak does, with n instances as n processes.
func soakFleet(ctx context.Context, seed uint64, probing bool, d time.Duration, n int) (*result, error) {
	r := newResult(seed, probing, d)
	r.instances = n
	loop := max(d-tail, MinGap)
	r.sched = Schedule(seed, loop)
	r.digest = Digest(r.sched)
	mode := "off"
	if probing {
		mode = "on"
	}
	fmt.Printf("soak: %d instances, probing %s, %v, %d faults scheduled (digest %s)\n", n, mode, d, len(r.sched), r.digest)
	c, err := harness.StartCluster(ctx, 3, harness.WithLogf(log.New(io.Discard, "", 0).Printf))
	if err != nil {
		if errors.Is(err, harness.ErrNoServer) {
			return nil, fmt.Errorf("%w (install MariaDB: make server)", err)
		}
		return nil, err
	}
	defer c.Close()
	ts := make([]tables, n)
	for i := range ts {
		ts[i] = instanceTables(i)
	}
	if err := createSoak(ctx, c, ts...); err != nil {
		return nil, err
	}
	dsnText := soakDSN(c, probing)
	var kids []*soakChild
	stopKids := func() {
		for _, k := range kids {
			k.in.Close()
		}
	}
	for i := range n {
		k, err := startSoakChild(i, dsnText)
		if err != nil {
			stopKids()
			return nil, fmt.Errorf("instance %d: %w", i, err)
		}
		kids = append(kids, k)
	}

	start := time.Now()
	harnessErr := faults(ctx, c, r, start, loop)
	heal(c, r)
	if harnessErr == nil {
		select {
		case <-time.After(time.Until(start.Add(d))):
		case <-ctx.Done():
		}
	}
	stopKids()
	if harnessErr != nil {
		r.violate("harness", "%v", harnessErr)
	}
	// An instance stops once its workers' calls return: within a pinned statement's
	// deadline, and the checks after.
	reports := make([]*instanceReport, n)
	deadline := time.Now().Add(pinnedDL + 30*time.Second)
	for i, k := range kids {
		select {
		case rep, ok := <-k.report:
			if ok {
				reports[i] = rep
			}
		case <-time.After(time.Until(deadline)):
			_ = k.cmd.Process.Kill()
		}
		if err := k.cmd.Wait(); err != nil || reports[i] == nil {
			r.violate("instance", "instance %d ended without its report: %v", i, err)
		}
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("interrupted")
	}

	checkCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	events := map[string]int64{}
	for i, rep := range reports {
		if rep == nil {
			continue
		}
		r.merge(rep)
		for k, v := range rep.Events {
			events[k] += v
		}
		fmt.Printf("soak: instance %d's data:\n", i)
		checkData(checkCtx, c, r, &ledger{writes: rep.Writes, txs: rep.Txs}, ts[i])
	}
	checkSessions(checkCtx, c, r)
	var ev []string
	for _, k := range slices.Sorted(maps.Keys(events)) {
		ev = append(ev, fmt.Sprintf("%s:%d", k, events[k]))
	}
	fmt.Printf("soak: events (all instances) %s\n", strings.Join(ev, ","))
	r.printDetails()
	return r, nil
}

// merge adds one instance's account to r: its calls, errors, longest calls and
// violations (their details named with the instance).
func (r *result) merge(rep *instanceReport) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls += rep.Calls
	for k, v := range rep.Errs {
		r.errs[k] += v
	}
	for k, v := range rep.Longest {
		if v > r.longest[k] {
			r.longest[k] = v
			r.longestWhy[k] = fmt.Sprintf("instance %d: %s", rep.Instance, rep.LongestWhy[k])
		}
	}
	for k, v := range rep.FirstErr {
		if _, ok := r.firstErr[k]; !ok {
			r.firstErr[k] = fmt.Sprintf("instance %d: %s", rep.Instance, v)
		}
	}
	for k, v := range rep.Viol {
		r.viol[k] += v
	}
	for _, d := range rep.Details {
		r.details = append(r.details, fmt.Sprintf("instance %d: %s", rep.Instance, d))
	}
	r.logLines.Add(rep.LogLines)
	var ev int64
	for _, v := range rep.Events {
		ev += v
	}
	r.events.Add(ev)
}
