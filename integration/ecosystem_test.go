package integration

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"

	"entgo.io/ent/dialect"
	entsql "entgo.io/ent/dialect/sql"
	"github.com/XSAM/otelsql"
	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"
	"github.com/luna-duclos/instrumentedsql"
	"github.com/ngrok/sqlmw"
	"github.com/pressly/goose/v3"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	gormmysql "gorm.io/driver/mysql"
	"gorm.io/gorm"
	gormlogger "gorm.io/gorm/logger"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// The libraries people open their pools with, each through mysqlfailover on a real
// 3-node cluster. Each test shows the library works, and that the public API reaches the
// driver behind whatever *sql.DB the library made: mysqlfailover.ConnectorOf (Stats,
// SwitchTo) and mysqlfailover.ConnOf inside (*sql.Conn).Raw (Host, ReadOnly, SetReadOnly),
// also through the wrappers' own connection types.

// reachDriver checks that db reaches mysqlfailover: ConnectorOf returns a Connector whose
// Stats name node as the active host, and a connection's Raw hands over a driver
// connection (the library's wrapper, if any) in which ConnOf finds a Conn on node, as the
// session's @@port says. It returns the Connector and the Raw value's type.
func reachDriver(t *testing.T, ctx context.Context, c *harness.Cluster, db *sql.DB, node int) (*mysqlfailover.Connector, string) {
	t.Helper()
	cn, err := mysqlfailover.ConnectorOf(ctx, db)
	if err != nil {
		t.Fatalf("ConnectorOf: %v", err)
	}
	st := cn.Stats()
	if a := c.NodeByAddr(st.Active); a != node {
		t.Errorf("ConnectorOf(db).Stats().Active = %q (node %d), want node %d", st.Active, a, node)
	}
	if len(st.Hosts) != c.N() {
		t.Errorf("Stats().Hosts has %d hosts, want %d", len(st.Hosts), c.N())
	}
	sc, err := db.Conn(ctx)
	must(t, err)
	defer sc.Close()
	onNode, err := nodeOf(ctx, c, sc)
	must(t, err)
	var typ, host string
	var ro bool
	err = sc.Raw(func(dc any) error {
		typ = fmt.Sprintf("%T", dc)
		fc, ok := mysqlfailover.ConnOf(dc)
		if !ok {
			return fmt.Errorf("ConnOf(%s) found no mysqlfailover connection", typ)
		}
		host, ro = fc.Host(), fc.ReadOnly()
		return nil
	})
	if err != nil {
		t.Fatalf("Raw: %v", err)
	}
	if h := c.NodeByAddr(host); h != node || onNode != node {
		t.Errorf("ConnOf(%s).Host() = %q (node %d), session on node %d; want node %d", typ, host, h, onNode, node)
	}
	t.Logf("ConnOf inside Raw: %s on %s, read-only %v", typ, host, ro)
	return cn, typ
}

// ecoTable creates table (id, name, qty) in database app on node 1 as root and waits until
// the replicas have it.
func ecoTable(t *testing.T, ctx context.Context, c *harness.Cluster, table string) {
	t.Helper()
	must(t, c.Node(1).Exec(ctx, "CREATE TABLE app."+table+" (id INT PRIMARY KEY, name VARCHAR(64) NOT NULL, qty INT NOT NULL)"))
	must(t, c.WaitReplicasCaughtUp(ctx))
}

// mysqlErrNumber returns the number of the *mysql.MySQLError in err's chain, or 0.
func mysqlErrNumber(err error) uint16 {
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		return me.Number
	}
	return 0
}

type gormItem struct {
	ID   uint   `gorm:"primaryKey"`
	Name string `gorm:"size:64;not null"`
	Qty  int    `gorm:"not null"`
}

func (gormItem) TableName() string { return "gorm_items" }

// TestGORM: GORM (gorm.io/gorm with gorm.io/driver/mysql) over mysqlfailover through
// mysql.Config.DriverName. AutoMigrate makes the table on node 1, rows go in and come out,
// db.DB() reaches the Connector and the proxy connection; node 1 is killed and the next
// GORM call (a read: node 2 is a read-only replica) runs on node 2 without an error, Stats
// count the failover, and a GORM write there gets the server's read-only rejection
// untouched (failOverReadOnly, the default). mysql.Open(dsn), by contrast, registers
// go-sql-driver's "mysql" driver, which cannot use the host list.
func TestGORM(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, 30*time.Second)
	dsnStr := c.DSN("readTimeout=2s")

	t.Run("DriverName", func(t *testing.T) {
		db, err := gorm.Open(gormmysql.New(gormmysql.Config{DriverName: "mysqlfailover", DSN: dsnStr}),
			&gorm.Config{Logger: gormlogger.Discard})
		must(t, err)
		sqlDB, err := db.DB()
		must(t, err)
		t.Cleanup(func() { sqlDB.Close() })
		gdb := db.WithContext(ctx)

		must(t, gdb.AutoMigrate(&gormItem{}))
		want := []gormItem{{ID: 1, Name: "apple", Qty: 3}, {ID: 2, Name: "pear", Qty: 5}, {ID: 3, Name: "plum", Qty: 7}}
		must(t, gdb.Create(&want).Error)
		var got []gormItem
		must(t, gdb.Order("id").Find(&got).Error)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("rows read back: %v, want %v", got, want)
		}
		var port int
		must(t, gdb.Raw("SELECT @@port").Scan(&port).Error)
		if n := c.NodeByPort(port); n != 1 {
			t.Errorf("GORM ran on node %d, want 1", n)
		}
		cn, typ := reachDriver(t, ctx, c, sqlDB, 1)
		t.Logf("FIGURE %s: raw_conn_type=%s", t.Name(), typ)
		must(t, c.WaitReplicasCaughtUp(ctx)) // the rows are on node 2 before node 1 dies
		for i := 2; i <= 3; i++ {
			if n, err := c.Node(i).QueryInt(ctx, "SELECT COUNT(*) FROM app.gorm_items"); err != nil || n != 3 {
				t.Errorf("node %d has %d rows (%v), want 3: AutoMigrate and Create replicated", i, n, err)
			}
		}

		must(t, c.Node(1).Kill())
		start := time.Now()
		got = nil
		if err := gdb.Order("id").Find(&got).Error; err != nil {
			t.Fatalf("the first GORM call after killing node 1: %v, want none (the idle connections are retired before anything is sent)", err)
		}
		took := time.Since(start)
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("rows read on node 2: %v, want %v", got, want)
		}
		must(t, gdb.Raw("SELECT @@port").Scan(&port).Error)
		if n := c.NodeByPort(port); n != 2 {
			t.Errorf("after the kill GORM ran on node %d, want 2", n)
		}
		st := cn.Stats()
		if a := c.NodeByAddr(st.Active); a != 2 || st.Failovers != 1 {
			t.Errorf("Stats after the kill: Active %q (node %d), Failovers %d; want node 2, 1", st.Active, a, st.Failovers)
		}
		if s := st.Hosts[0].State; s != failover.HostDown && s != failover.HostBackoff {
			t.Errorf("Stats: node 1 is %v, want down or backoff", s)
		}
		err = gdb.Create(&gormItem{ID: 4, Name: "fig", Qty: 1}).Error
		if n := mysqlErrNumber(err); n != 1792 {
			t.Errorf("GORM write on node 2: %v, want MySQL error 1792 (the session is read-only on a secondary)", err)
		}
		t.Logf("GORM write on node 2: %v", err)
		t.Logf("FIGURE %s: first_call_after_kill_ms=%d", t.Name(), took.Milliseconds())
	})

	// gorm.io/driver/mysql.Open(dsn) leaves DriverName empty, which means "mysql":
	// go-sql-driver's own driver, which takes "host1:p1,host2:p2,host3:p3" for one address.
	// GORM's first statement (SELECT VERSION()) then fails, and nothing of mysqlfailover is
	// involved: this is why the README shows DriverName.
	t.Run("mysql.Open bypasses mysqlfailover", func(t *testing.T) {
		db, err := gorm.Open(gormmysql.Open(dsnStr), &gorm.Config{Logger: gormlogger.Discard})
		if err == nil {
			sqlDB, _ := db.DB()
			t.Cleanup(func() { sqlDB.Close() })
			if _, cerr := mysqlfailover.ConnectorOf(ctx, sqlDB); cerr == nil {
				t.Fatalf("gorm mysql.Open(dsn) reached mysqlfailover")
			}
			t.Fatalf("gorm mysql.Open with a multi-host DSN opened a pool; want an error")
		}
		t.Logf("gorm.Open(mysql.Open(multi-host DSN)): %v", err)
		if !strings.Contains(err.Error(), c.Node(1).ProxyAddr()+","+c.Node(2).ProxyAddr()) {
			t.Errorf("error %q, want go-sql-driver's dial of the whole host list as one address", err)
		}
		t.Logf("FIGURE %s: gorm_mysql_open_error=%q", t.Name(), err.Error())
	})
}

type sqlxItem struct {
	ID   int    `db:"id"`
	Name string `db:"name"`
	Qty  int    `db:"qty"`
}

// TestSQLX: sqlx.Connect("mysqlfailover", dsn), Get and Select into structs, NamedExec;
// ConnectorOf(db.DB) and ConnOf reach the driver; SwitchTo node 2 moves every statement
// there (a write gets node 2's read_only rejection, 1290: the server's, not the session's,
// since SwitchTo made node 2 the primary), and SwitchTo node 1 brings writes back.
func TestSQLX(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, 30*time.Second)
	ecoTable(t, ctx, c, "sqlx_items")

	db, err := sqlx.Connect("mysqlfailover", c.DSN("readTimeout=2s"))
	must(t, err)
	t.Cleanup(func() { db.Close() })

	for _, it := range []sqlxItem{{1, "apple", 3}, {2, "pear", 5}} {
		_, err := db.NamedExecContext(ctx, "INSERT INTO sqlx_items (id, name, qty) VALUES (:id, :name, :qty)", it)
		must(t, err)
	}
	var one sqlxItem
	must(t, db.GetContext(ctx, &one, "SELECT id, name, qty FROM sqlx_items WHERE id = ?", 2))
	if one != (sqlxItem{2, "pear", 5}) {
		t.Errorf("Get: %+v", one)
	}
	cn, typ := reachDriver(t, ctx, c, db.DB, 1)
	t.Logf("FIGURE %s: raw_conn_type=%s", t.Name(), typ)
	must(t, c.WaitReplicasCaughtUp(ctx))

	must(t, cn.SwitchTo(ctx, c.Node(2).ProxyAddr()))
	wrong := 0
	for range 10 { // the idle connections move at their next statement, without an error
		var port int
		must(t, db.GetContext(ctx, &port, "SELECT @@port"))
		if c.NodeByPort(port) != 2 {
			wrong++
		}
	}
	if wrong > 0 {
		t.Errorf("%d of 10 statements after SwitchTo(node 2) ran elsewhere", wrong)
	}
	var all []sqlxItem
	must(t, db.SelectContext(ctx, &all, "SELECT id, name, qty FROM sqlx_items ORDER BY id"))
	if fmt.Sprint(all) != fmt.Sprint([]sqlxItem{{1, "apple", 3}, {2, "pear", 5}}) {
		t.Errorf("Select on node 2: %+v", all)
	}
	if st := cn.Stats(); c.NodeByAddr(st.Active) != 2 || c.NodeByAddr(st.Primary) != 2 {
		t.Errorf("Stats after SwitchTo(node 2): Active %q, Primary %q; want node 2 for both", st.Active, st.Primary)
	}
	reachDriver(t, ctx, c, db.DB, 2)
	_, err = db.NamedExecContext(ctx, "INSERT INTO sqlx_items (id, name, qty) VALUES (:id, :name, :qty)", sqlxItem{3, "plum", 7})
	if n := mysqlErrNumber(err); n != 1290 {
		t.Errorf("write on node 2 after SwitchTo: %v, want the server's read_only rejection 1290", err)
	}

	must(t, cn.SwitchTo(ctx, c.Node(1).ProxyAddr()))
	_, err = db.NamedExecContext(ctx, "INSERT INTO sqlx_items (id, name, qty) VALUES (:id, :name, :qty)", sqlxItem{3, "plum", 7})
	must(t, err)
	if n, err := c.Node(1).QueryInt(ctx, "SELECT COUNT(*) FROM app.sqlx_items"); err != nil || n != 3 {
		t.Errorf("node 1 has %d rows (%v), want 3", n, err)
	}
}

// TestOtelSQL: otelsql.Open("mysqlfailover", dsn) with a TracerProvider that records
// spans. ConnectorOf sees through otelsql's connector, ConnOf through its connection
// (whose Raw method returns ours); SetReadOnly through that works; spans are recorded
// for our statements; killing node 1 under an idle pool moves the next statements to
// node 2 without an error, behind otelsql too.
func TestOtelSQL(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, 30*time.Second)
	ecoTable(t, ctx, c, "otel_items")

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { tp.Shutdown(context.Background()) })
	db, err := otelsql.Open("mysqlfailover", c.DSN("readTimeout=2s"), otelsql.WithTracerProvider(tp))
	must(t, err)
	t.Cleanup(func() { db.Close() })
	db.SetMaxIdleConns(4)

	_, err = db.ExecContext(ctx, "INSERT INTO otel_items (id, name, qty) VALUES (1, 'apple', 3)")
	must(t, err)
	var name string
	must(t, db.QueryRowContext(ctx, "SELECT name FROM otel_items WHERE id = ?", 1).Scan(&name))
	if name != "apple" {
		t.Errorf("read back %q", name)
	}
	cn, typ := reachDriver(t, ctx, c, db, 1)
	t.Logf("FIGURE %s: raw_conn_type=%s", t.Name(), typ)
	if strings.Contains(typ, "mysqlfailover") {
		t.Errorf("Raw handed over %s: want otelsql's own connection type (the test would prove nothing)", typ)
	}

	// SetReadOnly through otelsql's connection.
	sc, err := db.Conn(ctx)
	must(t, err)
	must(t, sc.Raw(func(dc any) error {
		fc, ok := mysqlfailover.ConnOf(dc)
		if !ok {
			return fmt.Errorf("ConnOf(%T): none", dc)
		}
		if err := fc.SetReadOnly(ctx, true); err != nil {
			return err
		}
		if !fc.ReadOnly() {
			return errors.New("ReadOnly() false after SetReadOnly(true)")
		}
		return nil
	}))
	_, err = sc.ExecContext(ctx, "INSERT INTO otel_items (id, name, qty) VALUES (2, 'pear', 5)")
	if n := mysqlErrNumber(err); n != 1792 {
		t.Errorf("write after SetReadOnly(true): %v, want MySQL error 1792", err)
	}
	must(t, sc.Close()) // database/sql resets the flag to the DSN's for the next user

	spans := map[string]int{}
	sawStatement := false
	for _, s := range rec.Ended() {
		spans[s.Name()]++
		for _, a := range s.Attributes() {
			if strings.Contains(a.Value.Emit(), "SELECT name FROM otel_items") {
				sawStatement = true
			}
		}
	}
	t.Logf("spans: %v", spans)
	for _, n := range []string{"sql.connector.connect", "sql.conn.exec", "sql.conn.query"} {
		if spans[n] == 0 {
			t.Errorf("no %q span recorded; spans: %v", n, spans)
		}
	}
	if !sawStatement {
		t.Errorf("no span carries the SELECT's text")
	}
	t.Logf("FIGURE %s: spans=%d", t.Name(), len(rec.Ended()))

	// A kill under the idle pool, behind otelsql.
	warmPool(t, ctx, c, db, 4)
	must(t, c.Node(1).Kill())
	errs, wrong := 0, 0
	for range 20 {
		n, err := nodeOf(ctx, c, db)
		if err != nil {
			errs++
			t.Logf("statement after the kill: %v", err)
		} else if n != 2 {
			wrong++
		}
	}
	if errs > 0 || wrong > 0 {
		t.Errorf("after killing node 1: %d of 20 statements failed, %d ran elsewhere than node 2", errs, wrong)
	}
	if st := cn.Stats(); c.NodeByAddr(st.Active) != 2 || st.Failovers != 1 {
		t.Errorf("Stats after the kill: Active %q, Failovers %d; want node 2, 1", st.Active, st.Failovers)
	}
}

// TestEnt: ent's SQL driver (entgo.io/ent/dialect/sql, no generated code) over a *sql.DB
// opened with "mysqlfailover": builder-made INSERTs in an ent transaction, a
// builder-made SELECT, and ConnectorOf(drv.DB()).
func TestEnt(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, 30*time.Second)
	ecoTable(t, ctx, c, "ent_items")

	drv := entsql.OpenDB(dialect.MySQL, openDB(t, "mysqlfailover", c.DSN("readTimeout=2s")))
	b := entsql.Dialect(dialect.MySQL)

	tx, err := drv.Tx(ctx)
	must(t, err)
	for id, name := range []string{"apple", "pear", "plum"} {
		q, args := b.Insert("ent_items").Columns("id", "name", "qty").Values(id+1, name, 10*(id+1)).Query()
		must(t, tx.Exec(ctx, q, args, nil))
	}
	must(t, tx.Commit())

	q, args := b.Select("name", "qty").From(entsql.Table("ent_items")).Where(entsql.GT("qty", 10)).OrderBy("id").Query()
	t.Logf("ent query: %s %v", q, args)
	var rows entsql.Rows
	must(t, drv.Query(ctx, q, args, &rows))
	var got []string
	for rows.Next() {
		var name string
		var qty int
		must(t, rows.Scan(&name, &qty))
		got = append(got, fmt.Sprintf("%s=%d", name, qty))
	}
	must(t, rows.Err())
	must(t, rows.Close())
	if strings.Join(got, ",") != "pear=20,plum=30" {
		t.Errorf("ent SELECT: %v, want [pear=20 plum=30]", got)
	}
	cn, _ := reachDriver(t, ctx, c, drv.DB(), 1)
	if n := cn.Stats().Hosts[0].OpenConns; n < 1 {
		t.Errorf("Stats: node 1 has %d open connections, want at least 1", n)
	}
}

// gooseLogger sends goose's output to the test log.
type gooseLogger struct{ t *testing.T }

func (l gooseLogger) Printf(format string, v ...any) {
	l.t.Logf("goose: "+strings.TrimSpace(format), v...)
}
func (l gooseLogger) Fatalf(format string, v ...any) { l.t.Errorf("goose: "+format, v...) }

// TestGoose: two goose migrations from an in-test file system, run with goose.Up through
// mysqlfailover on node 1; the tables and goose's version table are on every node.
func TestGoose(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, 30*time.Second)
	db := openDB(t, "mysqlfailover", c.DSN("readTimeout=2s"))

	fsys := fstest.MapFS{
		"migrations/00001_accounts.sql": {Data: []byte(`-- +goose Up
CREATE TABLE goose_accounts (id INT PRIMARY KEY, owner VARCHAR(64) NOT NULL);
-- +goose Down
DROP TABLE goose_accounts;
`)},
		"migrations/00002_ledger.sql": {Data: []byte(`-- +goose Up
CREATE TABLE goose_ledger (id INT PRIMARY KEY, account INT NOT NULL, amount INT NOT NULL);
INSERT INTO goose_accounts (id, owner) VALUES (1, 'alice'), (2, 'bob');
-- +goose Down
DROP TABLE goose_ledger;
`)},
	}
	goose.SetBaseFS(fsys)
	goose.SetLogger(gooseLogger{t})
	t.Cleanup(func() { goose.SetBaseFS(nil); goose.SetLogger(goose.NopLogger()) })
	must(t, goose.SetDialect("mysql"))
	if err := goose.UpContext(ctx, db, "migrations"); err != nil {
		t.Fatalf("goose.Up: %v", err)
	}
	v, err := goose.GetDBVersionContext(ctx, db)
	must(t, err)
	if v != 2 {
		t.Errorf("goose version %d, want 2", v)
	}
	reachDriver(t, ctx, c, db, 1)

	must(t, c.WaitReplicasCaughtUp(ctx))
	for i := 1; i <= 3; i++ {
		n, err := c.Node(i).QueryInt(ctx, "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = 'app' AND TABLE_NAME IN ('goose_accounts', 'goose_ledger', 'goose_db_version')")
		must(t, err)
		applied, err := c.Node(i).QueryInt(ctx, "SELECT MAX(version_id) FROM app.goose_db_version WHERE is_applied")
		must(t, err)
		accounts, err := c.Node(i).QueryInt(ctx, "SELECT COUNT(*) FROM app.goose_accounts")
		must(t, err)
		if n != 3 || applied != 2 || accounts != 2 {
			t.Errorf("node %d: %d of the 3 tables, version %d, %d accounts; want 3, 2, 2", i, n, applied, accounts)
		}
	}
}

// Wrappers of a driver.Driver: ngrok/sqlmw and luna-duclos/instrumentedsql. Both
// implement driver.DriverContext and pass OpenConnector on to mysqlfailover's, so a pool
// opened with sql.Open on the wrapped name has one Connector of ours for all its
// connections (the Driver.Open path, a Connector per connection, is not taken; the
// "-open" case shows it, with sqlmw around Driver.Open alone). Neither wrapper's
// Connector implements io.Closer, so sql.DB.Close cannot reach ours: the tests show that
// and close it themselves (with checkInterval > 0 its monitor would run on).

// openLinger is how long Driver.Open's shared Connector outlives its last connection,
// as the driver documents it (doc.go: 5 s).
const openLinger = 5 * time.Second

var registerWrappers sync.Once

// sqlmwCount and isqlCount count the statements the wrappers saw.
var sqlmwCount, isqlCount atomic.Int64

type countingInterceptor struct{ sqlmw.NullInterceptor }

func (countingInterceptor) ConnQueryContext(ctx context.Context, conn sqldriver.QueryerContext, query string, args []sqldriver.NamedValue) (context.Context, sqldriver.Rows, error) {
	sqlmwCount.Add(1)
	rows, err := conn.QueryContext(ctx, query, args)
	return ctx, rows, err
}

// openOnly hides mysqlfailover's driver.DriverContext: a wrapper around it gets
// Driver.Open alone, as wrappers that do not implement DriverContext themselves do.
type openOnly struct{ sqldriver.Driver }

// wrappedDrivers registers "mysqlfailover-sqlmw" and "mysqlfailover-instrumentedsql", each
// around mysqlfailover's driver.Driver (got from a sql.DB: the type is unexported), and
// "mysqlfailover-sqlmw-open", sqlmw around that driver's Open alone.
func wrappedDrivers(t *testing.T, dsnStr string) {
	t.Helper()
	registerWrappers.Do(func() {
		db, err := sql.Open("mysqlfailover", dsnStr)
		must(t, err)
		d := db.Driver()
		must(t, db.Close())
		sql.Register("mysqlfailover-sqlmw", sqlmw.Driver(d, countingInterceptor{}))
		sql.Register("mysqlfailover-sqlmw-open", sqlmw.Driver(openOnly{d}, countingInterceptor{}))
		sql.Register("mysqlfailover-instrumentedsql", instrumentedsql.WrapDriver(d,
			instrumentedsql.WithLogger(instrumentedsql.LoggerFunc(func(_ context.Context, msg string, _ ...any) {
				if msg == instrumentedsql.OpSQLConnQuery {
					isqlCount.Add(1)
				}
			}))))
	})
}

func TestDriverWrappers(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, 30*time.Second)
	dsnStr := c.DSN("readTimeout=2s&checkInterval=200ms")
	wrappedDrivers(t, dsnStr)

	for _, w := range []struct {
		name   string
		count  *atomic.Int64
		shared bool // one Connector for the pool's connections
	}{
		{"mysqlfailover-sqlmw", &sqlmwCount, true},
		{"mysqlfailover-instrumentedsql", &isqlCount, true},
		// Through Driver.Open the connections of one DSN share one Connector too (issue
		// 12), which lives openLinger past the last of them: see TestDriverOpenOnlyWrapper.
		{"mysqlfailover-sqlmw-open", &sqlmwCount, true},
	} {
		if w.name == "mysqlfailover-sqlmw-open" {
			continue // TestDriverOpenOnlyWrapper
		}
		t.Run(w.name, func(t *testing.T) {
			db, err := sql.Open(w.name, dsnStr)
			must(t, err)
			db.SetMaxIdleConns(0) // every Conn is a new connection: do they share one Connector?
			before := w.count.Load()
			var one int
			must(t, db.QueryRowContext(ctx, "SELECT 1").Scan(&one))
			if w.count.Load() == before {
				t.Errorf("the wrapper saw no query")
			}
			cn, typ := reachDriver(t, ctx, c, db, 1)
			t.Logf("FIGURE %s: raw_conn_type=%s", t.Name(), typ)
			cn2, err := mysqlfailover.ConnectorOf(ctx, db)
			must(t, err)
			t.Logf("FIGURE %s: shared_connector=%v", t.Name(), cn == cn2)
			if shared := cn == cn2; shared != w.shared {
				t.Errorf("two connections of one pool share a Connector: %v, want %v", shared, w.shared)
			}
			must(t, db.Close())

			// sql.DB.Close did not close our Connector: it still connects.
			conn, err := cn.Connect(ctx)
			closedByDB := errors.Is(err, failover.ErrClosed)
			if err == nil {
				conn.Close()
			}
			t.Logf("FIGURE %s: connector_closed_by_db_close=%v", t.Name(), closedByDB)
			if closedByDB {
				t.Errorf("sql.DB.Close closed the Connector behind %s: the wrapper has changed; update the README", w.name)
			}
			must(t, cn.Close())
			if _, err := cn.Connect(ctx); !errors.Is(err, failover.ErrClosed) {
				t.Errorf("Connect after Connector.Close: %v, want failover.ErrClosed", err)
			}
		})
	}
}

// TestDriverOpenOnlyWrapper: through a wrapper that calls only Driver.Open (sqlmw around
// Open alone), the connections of one DSN share one Connector: its monitor
// probes every host at checkInterval (the server counts the probes' SELECTs), and once
// db.Close has closed the last connection, the Connector is closed after openLinger:
// the probe connections are gone from every server and Connect fails with ErrClosed.
// TestMain's goleak then finds none of its goroutines.
func TestDriverOpenOnlyWrapper(t *testing.T) {
	c := harness.Start(t, 3)
	ctx := ctxT(t, 60*time.Second)
	dsnStr := c.DSN("readTimeout=2s&checkInterval=200ms")
	wrappedDrivers(t, dsnStr)

	db, err := sql.Open("mysqlfailover-sqlmw-open", dsnStr)
	must(t, err)
	defer db.Close()
	db.SetMaxIdleConns(0) // every Conn is a new connection through Driver.Open
	before := sqlmwCount.Load()
	var one int
	must(t, db.QueryRowContext(ctx, "SELECT 1").Scan(&one))
	if sqlmwCount.Load() == before {
		t.Errorf("the wrapper saw no query")
	}
	cn, typ := reachDriver(t, ctx, c, db, 1)
	cn2, err := mysqlfailover.ConnectorOf(ctx, db)
	must(t, err)
	t.Logf("FIGURE %s: raw_conn_type=%s shared_connector=%v", t.Name(), typ, cn == cn2)
	if cn != cn2 {
		t.Fatalf("two connections through Driver.Open have Connectors %p and %p, want one", cn, cn2)
	}

	// A connection stays open until db.Close, so that the linger starts there.
	pinned, err := db.Conn(ctx)
	must(t, err)

	// Probes: node 3 is a replica no statement reaches, so its Com_select counts them
	// (SHOW STATUS is no SELECT).
	selects := func() int64 {
		var name string
		var n int64
		must(t, c.Node(3).Admin().QueryRowContext(ctx, "SHOW GLOBAL STATUS LIKE 'Com_select'").Scan(&name, &n))
		return n
	}
	// A calm host is probed once per calmCheckInterval (2 s): about 5 in 10 s.
	base, start := selects(), time.Now()
	for selects() < base+3 {
		if time.Since(start) > 10*time.Second {
			t.Fatalf("node 3 answered %d SELECTs in 10 s with checkInterval=200ms (calm: one probe per 2 s): the monitor does not run", selects()-base)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Logf("FIGURE %s: probes_on_node3=3 in=%v (checkInterval=200ms, calmCheckInterval 2s)", t.Name(), time.Since(start).Round(10*time.Millisecond))

	// db.Close closes the last connection (sqlmw's db.Close never reaches our Connector);
	// openLinger later, the Connector closes its probe connections and stops.
	closed := time.Now()
	must(t, pinned.Close())
	must(t, db.Close())
	for {
		var sessions int64
		for _, n := range c.Nodes() {
			s, err := n.AppSessions(ctx)
			must(t, err)
			sessions += s
		}
		if sessions == 0 {
			break
		}
		if time.Since(closed) > openLinger+10*time.Second {
			t.Fatalf("%v after db.Close: %d app sessions (probes) still on the servers, want none", time.Since(closed), sessions)
		}
		time.Sleep(100 * time.Millisecond)
	}
	gone := time.Since(closed)
	t.Logf("FIGURE %s: probes_gone_after=%v (OpenLinger %v)", t.Name(), gone.Round(10*time.Millisecond), openLinger)
	if gone < openLinger {
		t.Errorf("the probe connections closed %v after db.Close, before OpenLinger (%v)", gone, openLinger)
	}
	if conn, err := cn.Connect(ctx); !errors.Is(err, failover.ErrClosed) {
		if err == nil {
			conn.Close()
		}
		t.Errorf("Connect after the linger: %v, want failover.ErrClosed", err)
	}
}
