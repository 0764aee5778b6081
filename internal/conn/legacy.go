package conn

import (
	"context"
	"database/sql/driver"
)

// Exec implements the deprecated driver.Execer, as go-sql-driver's connection does, for
// code that asserts it on the connection (*sql.Conn).Raw hands over: ExecContext with a
// background context. database/sql itself uses ExecContext.
func (c *Conn) Exec(query string, args []driver.Value) (driver.Result, error) {
	return c.ExecContext(context.Background(), query, named(args))
}

// Query implements the deprecated driver.Queryer likewise: QueryContext with a
// background context.
func (c *Conn) Query(query string, args []driver.Value) (driver.Rows, error) {
	return c.QueryContext(context.Background(), query, named(args))
}

// named gives positional arguments their ordinals, as database/sql does.
func named(args []driver.Value) []driver.NamedValue {
	if len(args) == 0 {
		return nil
	}
	nv := make([]driver.NamedValue, len(args))
	for i, v := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: v}
	}
	return nv
}

//lint:ignore SA1019 deprecated, implemented for parity with go-sql-driver's connection
var _ driver.Execer = (*Conn)(nil)

//lint:ignore SA1019 likewise
var _ driver.Queryer = (*Conn)(nil)
