//go:build linux

package main

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"slices"
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
	nsPerOp, allocs, bytes float64
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
	dbs := map[string]*sql.DB{}
	for _, p := range paths {
		res[p.label] = map[string][]latResult{}
		if p.driver == "" {
			continue
		}
		db, err := sql.Open(p.driver, p.dsn)
		if err != nil {
			return nil, err
		}
		db.SetMaxOpenConns(1)
		db.SetMaxIdleConns(1)
		defer db.Close()
		if err := db.PingContext(ctx); err != nil {
			return nil, fmt.Errorf("%s: %w", p.label, err)
		}
		dbs[p.label] = db
	}
	for r := range rounds {
		for k := range paths {
			p := paths[(k+r)%len(paths)]
			for _, stmt := range latStmts {
				var lr latResult
				if p.driver == "" {
					kind := map[string]string{"SELECT 1": "select1", "point SELECT": "point"}[stmt]
					ns, err := java.latency(p.url, kind, benchtime)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", p.label, err)
					}
					lr = latResult{nsPerOp: ns, allocs: -1, bytes: -1}
				} else {
					br, err := benchGo(dbs[p.label], stmt)
					if err != nil {
						return nil, fmt.Errorf("%s: %w", p.label, err)
					}
					lr = latResult{
						nsPerOp: float64(br.T.Nanoseconds()) / float64(br.N),
						allocs:  float64(br.AllocsPerOp()),
						bytes:   float64(br.AllocedBytesPerOp()),
					}
				}
				res[p.label][stmt] = append(res[p.label][stmt], lr)
			}
		}
		fmt.Fprintf(os.Stderr, "benchpeers: latency round %d/%d done\n", r+1, rounds)
	}
	return res, nil
}

// benchGo is testing.Benchmark of one statement on db (benchtime from -test.benchtime).
func benchGo(db *sql.DB, stmt string) (testing.BenchmarkResult, error) {
	ctx := context.Background()
	var failed error
	br := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		var v string
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
