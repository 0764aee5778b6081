package integration

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

// The real-server benchmarks: the cost of mysqlfailover per statement against one real
// MariaDB node, compared with plain go-sql-driver on the same address. Both open the node
// straight (Cluster.DirectDSN: no toxiproxy in between), one connection (MaxOpen=1), so
// the difference is the proxy's own work plus noise. Sub-benchmarks impl=mysql and
// impl=mysqlfailover; compare them with
//
//	go test -run '^$' -bench Real -benchmem -count 6 ./ | tee real.txt
//	go run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da -col /impl real.txt
//
// Without a server binary harness.Start skips (fails with CI=true).
//
// Besides sec/op, each reports cpu-ns/op on Linux: the CPU time of the test process (every
// thread, from /proc/self/task/*/schedstat) per statement. The client shares two cores
// with the server and with whatever else runs, so wall time is noisy; the proxy's cost is
// client CPU, which this measures without the waiting.
//
// `go test -count N` runs each sub-benchmark N times in a row (all impl=mysql rounds, then
// all impl=mysqlfailover), so a change of machine load between the two halves biases the
// ratio; for interleaved rounds run the test binary N times with -test.count 1, or use
// BenchmarkPairedDrivers. On a small shared machine the spread is mostly where the
// scheduler puts the server's connection threads: `taskset -c 1 go test ...` (the servers
// inherit the CPU) makes the runs repeatable, ±1-3 % instead of ±20-50 %.

// benchImpls are the drivers compared: the same single-host DSN through each.
var benchImpls = []string{"mysql", "mysqlfailover"}

// benchRows is the size of the point-select table.
const benchRows = 1000

// benchEachImpl runs the statement op returns once per iteration through each driver of
// benchImpls, on a one-connection pool straight to node 1 of c (op gets the pool first,
// to prepare what it needs), reporting allocations and cpu-ns/op.
func benchEachImpl(b *testing.B, c *harness.Cluster, op func(b *testing.B, db *sql.DB) func() error) {
	for _, impl := range benchImpls {
		b.Run("impl="+impl, func(b *testing.B) {
			run := op(b, benchOpen(b, impl, c.DirectDSN(1, "")))
			b.ReportAllocs()
			cpu := benchCPUStart()
			for b.Loop() {
				if err := run(); err != nil {
					b.Fatal(err)
				}
			}
			cpu.report(b)
		})
	}
}

// BenchmarkRealSelect1 is one `SELECT 1` round trip (text protocol, no arguments).
func BenchmarkRealSelect1(b *testing.B) {
	ctx := context.Background()
	benchEachImpl(b, harness.Start(b, 1), func(_ *testing.B, db *sql.DB) func() error {
		var v int
		return func() error { return db.QueryRowContext(ctx, "SELECT 1").Scan(&v) }
	})
}

// BenchmarkRealPointSelect is a primary-key point SELECT on a small InnoDB table, with
// the key as an argument as an application writes it: go-sql-driver (without
// interpolateParams) answers driver.ErrSkip and database/sql prepares, executes and
// closes a server-side statement, three round trips.
func BenchmarkRealPointSelect(b *testing.B) {
	c := harness.Start(b, 1)
	ctx := context.Background()
	benchPointTable(b, c)
	benchEachImpl(b, c, func(_ *testing.B, db *sql.DB) func() error {
		var v string
		id := 0
		return func() error {
			id = id%benchRows + 1
			return db.QueryRowContext(ctx, "SELECT v FROM bench_pk WHERE id = ?", id).Scan(&v)
		}
	})
}

// BenchmarkRealPrepared is a loop over one prepared statement (db.Prepare once, then
// the point SELECT of BenchmarkRealPointSelect run through it): one round trip each.
func BenchmarkRealPrepared(b *testing.B) {
	c := harness.Start(b, 1)
	ctx := context.Background()
	benchPointTable(b, c)
	benchEachImpl(b, c, func(b *testing.B, db *sql.DB) func() error {
		st, err := db.PrepareContext(ctx, "SELECT v FROM bench_pk WHERE id = ?")
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { st.Close() })
		var v string
		id := 0
		return func() error {
			id = id%benchRows + 1
			return st.QueryRowContext(ctx, id).Scan(&v)
		}
	})
}

// BenchmarkRealScan reads 100 rows of two columns (id, v) of the point-select table.
func BenchmarkRealScan(b *testing.B) {
	c := harness.Start(b, 1)
	ctx := context.Background()
	benchPointTable(b, c)
	benchEachImpl(b, c, func(_ *testing.B, db *sql.DB) func() error {
		var id int
		var v string
		return func() error {
			rows, err := db.QueryContext(ctx, "SELECT id, v FROM bench_pk WHERE id <= 100")
			if err != nil {
				return err
			}
			n := 0
			for rows.Next() {
				if err := rows.Scan(&id, &v); err != nil {
					return err
				}
				n++
			}
			if err := rows.Close(); err != nil || n != 100 {
				return fmt.Errorf("%d rows, %v", n, err)
			}
			return nil
		}
	})
}

// BenchmarkPairedDrivers runs the same statements as BenchmarkRealSelect1 and
// BenchmarkRealPointSelect through both drivers alternately, one statement each per
// iteration (the order swapped every iteration), each timed on its own: both see the same
// machine load within microseconds, which the sub-benchmarks above, run one after the
// other, do not. It reports per driver the mean and the median (p50) latency of a
// statement and the ratios mysqlfailover/mysql; sec/op is the time of the pair.
//
// It is named so that `-bench Real` leaves it out of the impl table; run it with
// `-bench Paired`.
func BenchmarkPairedDrivers(b *testing.B) {
	c := harness.Start(b, 1)
	ctx := context.Background()
	benchPointTable(b, c)
	for _, q := range []struct {
		name  string
		query string
		arg   bool
	}{
		{"query=select1", "SELECT 1", false},
		{"query=point", "SELECT v FROM bench_pk WHERE id = ?", true},
	} {
		b.Run(q.name, func(b *testing.B) {
			dbs := [2]*sql.DB{benchOpen(b, "mysql", c.DirectDSN(1, "")), benchOpen(b, "mysqlfailover", c.DirectDSN(1, ""))}
			var lat [2][]time.Duration
			var v any
			id, i := 0, 0
			run := func(k int) {
				var args []any
				if q.arg {
					id = id%benchRows + 1
					args = []any{id}
				}
				t0 := time.Now()
				if err := dbs[k].QueryRowContext(ctx, q.query, args...).Scan(&v); err != nil {
					b.Fatal(err)
				}
				lat[k] = append(lat[k], time.Since(t0))
			}
			b.ReportAllocs()
			for b.Loop() {
				first := i & 1
				run(first)
				run(1 - first)
				i++
			}
			var mean, p50 [2]float64
			for k := range lat {
				var sum time.Duration
				for _, d := range lat[k] {
					sum += d
				}
				mean[k] = float64(sum) / float64(len(lat[k]))
				slices.Sort(lat[k])
				p50[k] = float64(lat[k][len(lat[k])/2])
			}
			b.ReportMetric(mean[0], "mysql-ns/stmt")
			b.ReportMetric(mean[1], "mysqlfailover-ns/stmt")
			b.ReportMetric(p50[0], "mysql-p50-ns/stmt")
			b.ReportMetric(p50[1], "mysqlfailover-p50-ns/stmt")
			b.ReportMetric(mean[1]/mean[0], "ratio-mean")
			b.ReportMetric(p50[1]/p50[0], "ratio-p50")
		})
	}
}

// benchPointTable creates app.bench_pk with benchRows rows on node 1.
func benchPointTable(b *testing.B, c *harness.Cluster) {
	b.Helper()
	ctx := context.Background()
	must(b, c.Node(1).Exec(ctx, "CREATE TABLE app.bench_pk (id INT PRIMARY KEY, v VARCHAR(32) NOT NULL)"))
	for i := 1; i <= benchRows; i += 100 {
		q := "INSERT INTO app.bench_pk VALUES "
		for k := i; k < i+100; k++ {
			if k > i {
				q += ","
			}
			q += fmt.Sprintf("(%d, 'value-%d')", k, k)
		}
		must(b, c.Node(1).Exec(ctx, q))
	}
}

// benchOpen opens a one-connection pool through driverName, warmed up (connected), and
// closes it when b ends.
func benchOpen(b *testing.B, driverName, dsn string) *sql.DB {
	b.Helper()
	db := openDB(b, driverName, dsn)
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	must(b, db.PingContext(context.Background()))
	return db
}

// benchCPU is the process's CPU time when a measurement started; -1 when unknown.
type benchCPU time.Duration

func benchCPUStart() benchCPU { return benchCPU(benchProcessCPU()) }

// report adds cpu-ns/op: the process's CPU time since the start, per iteration.
func (c benchCPU) report(b *testing.B) {
	end := benchProcessCPU()
	if c < 0 || end < 0 || b.N == 0 {
		return
	}
	b.ReportMetric(float64(end-time.Duration(c))/float64(b.N), "cpu-ns/op")
}

// benchProcessCPU sums the on-CPU time (nanoseconds, first field of schedstat) of every
// thread of the process; -1 where /proc is not available. Go rarely ends threads, so
// little is lost with them.
func benchProcessCPU() time.Duration {
	files, err := filepath.Glob("/proc/self/task/*/schedstat")
	if err != nil || len(files) == 0 {
		return -1
	}
	var sum time.Duration
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			continue // the thread ended
		}
		first, _, _ := strings.Cut(string(b), " ")
		ns, err := strconv.ParseInt(first, 10, 64)
		if err != nil {
			return -1
		}
		sum += time.Duration(ns)
	}
	return sum
}
