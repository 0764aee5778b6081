package stmt

import (
	"context"
	"database/sql/driver"
	"io"
	"reflect"
)

// Rows is the result-set proxy. Its errors go to the owner, which switches hosts for the
// next statement; the rows themselves are never re-read elsewhere.
type Rows struct {
	own    Owner
	ctx    context.Context
	inner  driver.Rows
	epoch  uint64
	query  string // the statement the rows are of, for Owner.Fail
	closed bool
}

// NewRows wraps inner, read from the owner's physical connection of epoch, for a
// statement, query, that ran with ctx, and tells the owner (RowsOpened) that results
// are open.
// When the owner hands back a RowSink, the rows are a *SinkRows that shows it what the
// caller reads; otherwise a *Rows: the one the owner hands back for reuse (no
// allocation), or a new one.
func NewRows(own Owner, ctx context.Context, inner driver.Rows, epoch uint64, query string) driver.Rows {
	sink, reuse := own.RowsOpened(epoch)
	if sink == nil {
		if reuse == nil {
			reuse = new(Rows)
		}
		*reuse = Rows{own: own, ctx: ctx, inner: inner, epoch: epoch, query: query}
		return reuse
	}
	sink.Columns(inner.Columns())
	return &SinkRows{Rows: Rows{own: own, ctx: ctx, inner: inner, epoch: epoch, query: query}, sink: sink}
}

// SinkRows is a Rows whose RowSink sees every row the caller reads and the end.
type SinkRows struct {
	Rows
	sink RowSink
}

// Next implements driver.Rows, and shows the sink the row or the end.
func (r *SinkRows) Next(dest []driver.Value) error {
	err := r.Rows.Next(dest)
	switch err {
	case nil:
		r.sink.Row(dest)
	case io.EOF:
		r.sink.End()
	}
	return err
}

// Columns implements driver.Rows.
func (r *Rows) Columns() []string { return r.inner.Columns() }

// Close closes the physical rows once, and then tells the owner (RowsClosed); a
// communication error is handled by the owner.
func (r *Rows) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	err := r.inner.Close()
	r.own.RowsClosed(r.epoch, err != nil)
	if err != nil {
		_, out := r.own.Fail(r.ctx, err, Failure{Epoch: r.epoch, Query: r.query})
		return out
	}
	return nil
}

// Next implements driver.Rows; io.EOF is the normal end and passes through.
func (r *Rows) Next(dest []driver.Value) error {
	err := r.inner.Next(dest)
	if err == nil || err == io.EOF {
		return err
	}
	_, out := r.own.Fail(r.ctx, err, Failure{Epoch: r.epoch, Query: r.query})
	return out
}

// HasNextResultSet implements driver.RowsNextResultSet.
func (r *Rows) HasNextResultSet() bool {
	if n, ok := r.inner.(driver.RowsNextResultSet); ok {
		return n.HasNextResultSet()
	}
	return false
}

// NextResultSet implements driver.RowsNextResultSet.
func (r *Rows) NextResultSet() error {
	n, ok := r.inner.(driver.RowsNextResultSet)
	if !ok {
		return io.EOF
	}
	err := n.NextResultSet()
	if err == nil || err == io.EOF {
		return err
	}
	_, out := r.own.Fail(r.ctx, err, Failure{Epoch: r.epoch, Query: r.query})
	return out
}

var anyType = reflect.TypeOf(new(any)).Elem()

// ColumnTypeScanType forwards; without it database/sql would use any.
func (r *Rows) ColumnTypeScanType(i int) reflect.Type {
	if c, ok := r.inner.(driver.RowsColumnTypeScanType); ok {
		return c.ColumnTypeScanType(i)
	}
	return anyType
}

// ColumnTypeDatabaseTypeName forwards ("" when the driver does not say).
func (r *Rows) ColumnTypeDatabaseTypeName(i int) string {
	if c, ok := r.inner.(driver.RowsColumnTypeDatabaseTypeName); ok {
		return c.ColumnTypeDatabaseTypeName(i)
	}
	return ""
}

// ColumnTypeLength forwards.
func (r *Rows) ColumnTypeLength(i int) (int64, bool) {
	if c, ok := r.inner.(driver.RowsColumnTypeLength); ok {
		return c.ColumnTypeLength(i)
	}
	return 0, false
}

// ColumnTypeNullable forwards.
func (r *Rows) ColumnTypeNullable(i int) (nullable, ok bool) {
	if c, ok := r.inner.(driver.RowsColumnTypeNullable); ok {
		return c.ColumnTypeNullable(i)
	}
	return false, false
}

// ColumnTypePrecisionScale forwards.
func (r *Rows) ColumnTypePrecisionScale(i int) (precision, scale int64, ok bool) {
	if c, ok := r.inner.(driver.RowsColumnTypePrecisionScale); ok {
		return c.ColumnTypePrecisionScale(i)
	}
	return 0, 0, false
}

var (
	_ driver.Rows                           = (*Rows)(nil)
	_ driver.RowsNextResultSet              = (*SinkRows)(nil)
	_ driver.RowsColumnTypeScanType         = (*SinkRows)(nil)
	_ driver.RowsNextResultSet              = (*Rows)(nil)
	_ driver.RowsColumnTypeScanType         = (*Rows)(nil)
	_ driver.RowsColumnTypeDatabaseTypeName = (*Rows)(nil)
	_ driver.RowsColumnTypeLength           = (*Rows)(nil)
	_ driver.RowsColumnTypeNullable         = (*Rows)(nil)
	_ driver.RowsColumnTypePrecisionScale   = (*Rows)(nil)
)
