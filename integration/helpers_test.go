package integration

import (
	"context"
	"database/sql"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql" // "mysql": plain single-host connections for checks

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// openDB opens a sql.DB and closes it when the test ends.
func openDB(t testing.TB, driverName, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driverName, dsn)
	must(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

// portOf runs SELECT @@port on q and returns the node it ran on.
func nodeOf(ctx context.Context, c *harness.Cluster, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}) (int, error) {
	var port int
	if err := q.QueryRowContext(ctx, "SELECT @@port").Scan(&port); err != nil {
		return 0, err
	}
	return c.NodeByPort(port), nil
}
