//go:build linux

package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// latPath is one way of running a statement on node 1 for the latency table.
type latPath struct {
	label  string
	driver string // "" for Connector/J
	dsn    string // Go paths
	url    string // Connector/J
}

// latStmts are the statements timed: a bare round trip, and a primary-key read with
// the key as an argument, as an application writes it (go-sql-driver without
// interpolateParams prepares, executes and closes a server-side statement: three round
// trips; Connector/J 2.7 sends it as text: one).
var latStmts = []string{"SELECT 1", "point SELECT"}

// latResult is one path's figures for one statement in one round.
type latResult struct {
	nsPerOp, cpuPerOp, allocs, bytes float64
}

// latRounds runs rounds rounds; in each, every path and statement once, in an order
// rotated per round, each for benchtime. Ratios are taken within a round.
func latRounds(c *harness.Cluster, paths []latPath, java *javaClient, rounds int, benchtime time.Duration) (map[string]map[string][]latResult, error) {
	ctx := context.Background()
	if err := c.Node(1).Exec(ctx, "CREATE TABLE IF NOT EXISTS app.bench (id INT PRIMARY KEY, v VARCHAR(64) NOT NULL)"); err != nil {
		return nil, err
	}
	if err := c.Node(1).Exec(ctx, "INSERT IGNORE INTO app.bench SELECT seq, CONCAT('value-', seq) FROM app.seq_1_to_1000"); err != nil {
		return nil, err
	}
	if err := c.WaitReplicasCaughtUp(ctx); err != nil {
		return nil, err
	}
	res := map[string]map[string][]latResult{}
	for _, p := range paths {
		res[p.label] = map[string][]latResult{}
	}
	for r := range rounds {
		for k := range paths {
			p := paths[(k+r)%len(paths)]
			// Only the measured path's pool is open: a probing pool's monitor would
			// count its allocations and CPU against every path.
			var db *sql.DB
			if p.driver != "" {
				var err error
				if db, err = sql.Open(p.driver, p.dsn); err != nil {
					return nil, err
				}
				db.SetMaxOpenConns(1)
				db.SetMaxIdleConns(1)
				if err := db.PingContext(ctx); err != nil {
					db.Close()
					return nil, fmt.Errorf("%s: %w", p.label, err)
				}
			}
			for _, stmt := range latStmts {
				var lr latResult
				if p.driver == "" {
					kind := map[string]string{"SELECT 1": "select1", "point SELECT": "point"}[stmt]
					ns, err := java.latency(p.url, kind, benchtime)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", p.label, err)
					}
					lr = latResult{nsPerOp: ns, cpuPerOp: -1, allocs: -1, bytes: -1}
				} else {
					var cpu float64
					br, err := benchGo(db, stmt, &cpu)
					if err != nil {
						db.Close()
						return nil, fmt.Errorf("%s: %w", p.label, err)
					}
					lr = latResult{
						cpuPerOp: cpu,
						nsPerOp:  float64(br.T.Nanoseconds()) / float64(br.N),
						allocs:   float64(br.AllocsPerOp()),
						bytes:    float64(br.AllocedBytesPerOp()),
					}
				}
				res[p.label][stmt] = append(res[p.label][stmt], lr)
			}
			if db != nil {
				db.Close()
			}
		}
		fmt.Fprintf(os.Stderr, "benchpeers: latency round %d/%d done\n", r+1, rounds)
	}
	return res, nil
}

// benchGo is testing.Benchmark of one statement on db (benchtime from -test.benchtime).
// cpuPerOp receives the CPU time of this whole process per call (ns), from
// /proc/self/task/*/schedstat: the client's own work without the waiting, which the
// machine's load inflates far less than the wall time.
func benchGo(db *sql.DB, stmt string, cpuPerOp *float64) (testing.BenchmarkResult, error) {
	ctx := context.Background()
	var failed error
	br := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		var v string
		cpu0 := procCPU()
		defer func() { *cpuPerOp = float64(procCPU()-cpu0) / float64(b.N) }() // the last, longest run stays
		for i := 0; i < b.N; i++ {
			var err error
			if stmt == "SELECT 1" {
				err = db.QueryRowContext(ctx, "SELECT 1").Scan(&v)
			} else {
				err = db.QueryRowContext(ctx, "SELECT v FROM bench WHERE id = ?", i%1000+1).Scan(&v)
			}
			if err != nil {
				failed = err
				b.FailNow()
			}
		}
	})
	return br, failed
}

// median of xs (xs is sorted in place).
func median(xs []float64) float64 {
	slices.Sort(xs)
	n := len(xs)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return xs[n/2]
	}
	return (xs[n/2-1] + xs[n/2]) / 2
}

// procCPU is the CPU time of every thread of this process so far (ns), 0 if unknown.
func procCPU() int64 {
	tasks, _ := filepath.Glob("/proc/self/task/*/schedstat")
	var sum int64
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		f := strings.Fields(string(b))
		if len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			sum += n
		}
	}
	return sum
}
