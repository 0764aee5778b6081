package mysqlfailover_test

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/conn"
)

// memConn is an in-memory physical connection that answers at once without allocating,
// so that a benchmark over it measures only the proxy's own cost.
type memConn struct{ rows memRows }

type memResult struct{}

func (memResult) LastInsertId() (int64, error) { return 0, nil }
func (memResult) RowsAffected() (int64, error) { return 1, nil }

type memRows struct{ left int }

func (r *memRows) Columns() []string { return []string{"n"} }
func (r *memRows) Close() error      { return nil }
func (r *memRows) Next(dest []sqldriver.Value) error {
	if r.left == 0 {
		return io.EOF
	}
	r.left--
	dest[0] = int64(1)
	return nil
}

func (c *memConn) Prepare(string) (sqldriver.Stmt, error) { return memStmt{c}, nil }

// memStmt is memConn's prepared statement (one pointer: held in an interface without
// allocating).
type memStmt struct{ c *memConn }

func (s memStmt) QueryContext(context.Context, []sqldriver.NamedValue) (sqldriver.Rows, error) {
	s.c.rows.left = 1
	return &s.c.rows, nil
}

func (memStmt) Close() error  { return nil }
func (memStmt) NumInput() int { return -1 }
func (memStmt) Exec([]sqldriver.Value) (sqldriver.Result, error) {
	return nil, errors.New("unused")
}
func (memStmt) Query([]sqldriver.Value) (sqldriver.Rows, error) { return nil, errors.New("unused") }
func (memStmt) ExecContext(context.Context, []sqldriver.NamedValue) (sqldriver.Result, error) {
	return memResult{}, nil
}
func (c *memConn) Close() error                 { return nil }
func (c *memConn) Begin() (sqldriver.Tx, error) { return memTx{}, nil }

// memTx is memConn's transaction.
type memTx struct{}

func (memTx) Commit() error   { return nil }
func (memTx) Rollback() error { return nil }
func (c *memConn) ExecContext(context.Context, string, []sqldriver.NamedValue) (sqldriver.Result, error) {
	return memResult{}, nil
}
func (c *memConn) QueryContext(_ context.Context, query string, _ []sqldriver.NamedValue) (sqldriver.Rows, error) {
	if query == cluster.RoleQuery {
		return &roleRows{}, nil // at connect: a writable server that is no cluster member
	}
	c.rows.left = 1
	return &c.rows, nil
}

// roleRows is memConn's answer to cluster.RoleQuery: read_only OFF.
type roleRows struct{ done bool }

func (r *roleRows) Columns() []string { return []string{"Variable_name", "Value"} }
func (r *roleRows) Close() error      { return nil }
func (r *roleRows) Next(dest []sqldriver.Value) error {
	if r.done {
		return io.EOF
	}
	r.done = true
	dest[0], dest[1] = "read_only", "OFF"
	return nil
}

type memConnector struct{}

func (memConnector) Connect(context.Context) (sqldriver.Conn, error) { return &memConn{}, nil }
func (memConnector) Driver() sqldriver.Driver                        { return nil }

func proxyOverMem(b *testing.B) sqldriver.Conn {
	cfg := &dsn.Config{Hosts: []dsn.Host{{Name: "h1", Port: 3306}, {Name: "h2", Port: 3306}}}
	var sock cluster.Socket // as the socket tracker gives every real connection
	cl, err := cluster.New(cfg, cluster.Env{
		Dial:   func(context.Context, int) (sqldriver.Conn, error) { return &memConn{}, nil },
		Socket: func(sqldriver.Conn) *cluster.Socket { return &sock },
	})
	if err != nil {
		b.Fatal(err)
	}
	c, err := conn.Open(context.Background(), cl, conn.Config{FailOverReadOnly: true})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// connImpls are the connections the in-memory benchmarks compare: the bare one and the
// proxy over it.
var connImpls = []struct {
	name string
	conn func(*testing.B) sqldriver.Conn
}{
	{"bare", func(*testing.B) sqldriver.Conn { return &memConn{} }},
	{"proxy", proxyOverMem},
}

// BenchmarkConnExec compares one Exec on the bare in-memory connection with the same call
// through the proxy: the difference is the proxy's cost per statement.
func BenchmarkConnExec(b *testing.B) {
	ctx := context.Background()
	for _, impl := range connImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			c := impl.conn(b).(sqldriver.ExecerContext)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.ExecContext(ctx, "UPDATE t SET n=n+1 WHERE id=1", nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkConnQuery is BenchmarkConnExec for a query that reads one row.
func BenchmarkConnQuery(b *testing.B) {
	ctx := context.Background()
	dest := make([]sqldriver.Value, 1)
	for _, impl := range connImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			c := impl.conn(b).(sqldriver.QueryerContext)
			b.ReportAllocs()
			for b.Loop() {
				rows, err := c.QueryContext(ctx, "SELECT n FROM t WHERE id=1", nil)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next(dest) == nil {
				}
				rows.Close()
			}
		})
	}
}

// BenchmarkStmtExec is BenchmarkConnExec for a prepared statement: the Stmt proxy's
// cost per run.
func BenchmarkStmtExec(b *testing.B) {
	ctx := context.Background()
	for _, impl := range connImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			s, err := impl.conn(b).Prepare("UPDATE t SET n=n+1 WHERE id=?")
			if err != nil {
				b.Fatal(err)
			}
			e := s.(sqldriver.StmtExecContext)
			args := []sqldriver.NamedValue{{Ordinal: 1, Value: int64(1)}}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := e.ExecContext(ctx, args); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkPrepareQuery is what database/sql does for a query with arguments when
// go-sql-driver answers driver.ErrSkip (interpolateParams off): prepare, query, read one
// row, close the rows and the statement. The proxy reuses its Stmt and Rows proxies, so it
// allocates no more than the bare connection.
func BenchmarkPrepareQuery(b *testing.B) {
	ctx := context.Background()
	dest := make([]sqldriver.Value, 1)
	args := []sqldriver.NamedValue{{Ordinal: 1, Value: int64(1)}}
	for _, impl := range connImpls {
		b.Run("impl="+impl.name, func(b *testing.B) {
			c := impl.conn(b)
			b.ReportAllocs()
			for b.Loop() {
				s, err := c.Prepare("SELECT v FROM t WHERE id=?")
				if err != nil {
					b.Fatal(err)
				}
				rows, err := s.(sqldriver.StmtQueryContext).QueryContext(ctx, args)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next(dest) == nil {
				}
				rows.Close()
				s.Close()
			}
		})
	}
}

// BenchmarkDBExec is the same comparison through database/sql, as an application sees it
// (each Exec a checkout and a put back); impl=proxy-lend with probes on, where each put
// back marks the connection's session as one the probes may borrow and each checkout
// takes it back.
func BenchmarkDBExec(b *testing.B) {
	cfg, err := dsn.Parse("app:pw@tcp(h1:3306,h2:3306)/shop")
	if err != nil {
		b.Fatal(err)
	}
	probing, err := dsn.Parse("app:pw@tcp(h1:3306,h2:3306)/shop?checkInterval=1m")
	if err != nil {
		b.Fatal(err)
	}
	for _, impl := range []struct {
		name      string
		connector func() sqldriver.Connector
	}{
		{"bare", func() sqldriver.Connector { return memConnector{} }},
		{"proxy", func() sqldriver.Connector {
			fo, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithDial(func(context.Context, int) (sqldriver.Conn, error) { return &memConn{}, nil }))
			if err != nil {
				b.Fatal(err)
			}
			return fo
		}},
		{"proxy-lend", func() sqldriver.Connector {
			fo, err := mysqlfailover.NewConnector(probing, mysqlfailover.WithDial(func(context.Context, int) (sqldriver.Conn, error) { return &memConn{}, nil }))
			if err != nil {
				b.Fatal(err)
			}
			return fo
		}},
	} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			db := sql.OpenDB(impl.connector()) // DB.Close closes the connector
			defer db.Close()
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				if _, err := db.ExecContext(ctx, "UPDATE t SET n=n+1 WHERE id=1"); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// overMem is proxyOverMem with the options of cfg (conn.ConfigFrom), its hosts named h1...hn.
func overMem(b *testing.B, hosts int, set func(*dsn.Config)) sqldriver.Conn {
	cfg := dsn.NewConfig()
	for k := range hosts {
		cfg.Hosts = append(cfg.Hosts, dsn.Host{Name: fmt.Sprintf("h%d", k+1), Port: 3306})
	}
	set(cfg)
	var sock cluster.Socket // as the socket tracker gives every real connection
	cl, err := cluster.New(cfg, cluster.Env{
		Dial:   func(context.Context, int) (sqldriver.Conn, error) { return &memConn{}, nil },
		Socket: func(sqldriver.Conn) *cluster.Socket { return &sock },
	})
	if err != nil {
		b.Fatal(err)
	}
	c, err := conn.Open(context.Background(), cl, conn.ConfigFrom(cfg, nil))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// splitOverMem is proxyOverMem over a primary and two replicas with replicaReads=true.
func splitOverMem(b *testing.B) sqldriver.Conn {
	return overMem(b, 3, func(cfg *dsn.Config) { cfg.ReplicaReads = true })
}

// BenchmarkRouting is the cost of read/write splitting per query (the goal: at
// most 50 ns and no allocation for a read without a routing key): the proxy without
// replicaReads (impl=proxy), with it for a statement without intent (impl=split-primary),
// a read-intent one (impl=split-read, over the two replicas in turn) and one with a
// routing key (impl=split-key, rendezvous over the replicas; the key's hash included).
func BenchmarkRouting(b *testing.B) {
	dest := make([]sqldriver.Value, 1)
	read := mysqlfailover.WithReadIntent(context.Background(), "")
	keyed := mysqlfailover.WithReadIntent(context.Background(), "customer-4711")
	for _, impl := range []struct {
		name string
		conn func(*testing.B) sqldriver.Conn
		ctx  context.Context
	}{
		{"proxy", proxyOverMem, read},
		{"split-primary", splitOverMem, context.Background()},
		{"split-read", splitOverMem, read},
		{"split-key", splitOverMem, keyed},
	} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			c := impl.conn(b).(sqldriver.QueryerContext)
			b.ReportAllocs()
			for b.Loop() {
				rows, err := c.QueryContext(impl.ctx, "SELECT n FROM t WHERE id=1", nil)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next(dest) == nil {
				}
				rows.Close()
			}
		})
	}
}

// replayOverMem is proxyOverMem with transactionReplay=true.
func replayOverMem(b *testing.B) sqldriver.Conn {
	return overMem(b, 2, func(cfg *dsn.Config) { cfg.TransactionReplay = true })
}

// BenchmarkTxStatements is one transaction of two statements (an UPDATE with an
// argument, a query reading one row) and its commit, through the proxy without replay
// (impl=proxy) and with transactionReplay=true (impl=replay), which records both
// statements (a copy of the argument, the result, a digest of the row): the difference
// is replay's cost for two recorded statements.
func BenchmarkTxStatements(b *testing.B) {
	ctx := context.Background()
	dest := make([]sqldriver.Value, 1)
	args := []sqldriver.NamedValue{{Ordinal: 1, Value: int64(1)}}
	for _, impl := range []struct {
		name string
		conn func(*testing.B) sqldriver.Conn
	}{
		{"proxy", proxyOverMem},
		{"replay", replayOverMem},
	} {
		b.Run("impl="+impl.name, func(b *testing.B) {
			c := impl.conn(b)
			bt := c.(sqldriver.ConnBeginTx)
			ex := c.(sqldriver.ExecerContext)
			q := c.(sqldriver.QueryerContext)
			b.ReportAllocs()
			for b.Loop() {
				tx, err := bt.BeginTx(ctx, sqldriver.TxOptions{})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := ex.ExecContext(ctx, "UPDATE t SET n=n+1 WHERE id=?", args); err != nil {
					b.Fatal(err)
				}
				rows, err := q.QueryContext(ctx, "SELECT n FROM t WHERE id=1", nil)
				if err != nil {
					b.Fatal(err)
				}
				for rows.Next(dest) == nil {
				}
				rows.Close()
				if err := tx.Commit(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
