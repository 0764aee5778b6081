package dialect_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"reflect"
	"testing"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// fakeRows returns its rows through one reused buffer, as go-sql-driver does, then
// nextErr (io.EOF when nil); Close returns closeErr.
type fakeRows struct {
	cols     []string
	rows     [][]driver.Value
	nextErr  error
	closeErr error
	buf      []byte
	read     int
	closed   bool
}

func (r *fakeRows) Columns() []string { return r.cols }

func (r *fakeRows) Close() error {
	r.closed = true
	return r.closeErr
}

func (r *fakeRows) Next(dest []driver.Value) error {
	if r.read == len(r.rows) {
		if r.nextErr != nil {
			return r.nextErr
		}
		return io.EOF
	}
	r.buf = r.buf[:0] // the row's text values share one buffer, reused for the next row
	for i, v := range r.rows[r.read] {
		if s, ok := v.(string); ok {
			start := len(r.buf)
			r.buf = append(r.buf, s...)
			v = r.buf[start:len(r.buf):len(r.buf)]
		}
		dest[i] = v
	}
	r.read++
	return nil
}

func (r *fakeRows) QueryContext(context.Context, string, []driver.NamedValue) (driver.Rows, error) {
	return r, nil
}

// ReadRows keeps at most its bound of rows, copies the driver's reused bytes into
// strings, reads the rest to the end and closes the rows.
func TestReadRows(t *testing.T) {
	rows := [][]driver.Value{{"a", int64(1)}, {"b", nil}, {"c", uint64(3)}}
	for _, tc := range []struct {
		max  int
		want [][]driver.Value
	}{
		{dialect.All, [][]driver.Value{{"a", int64(1)}, {"b", nil}, {"c", uint64(3)}}},
		{1, [][]driver.Value{{"a", int64(1)}}},
		{0, nil},
	} {
		r := &fakeRows{cols: []string{"k", "v"}, rows: rows}
		got, err := dialect.ReadRows(r, tc.max)
		if err != nil || !reflect.DeepEqual(got, tc.want) {
			t.Errorf("ReadRows(max %d) = %#v, %v; want %#v", tc.max, got, err, tc.want)
		}
		if r.read != len(rows) || !r.closed {
			t.Errorf("ReadRows(max %d) read %d of %d rows, closed %v: want all read, closed", tc.max, r.read, len(rows), r.closed)
		}
	}
}

// A failure of Next (not io.EOF) wins over Close's; Close's is returned after a clean
// end; the rows are closed either way, and no rows come with an error.
func TestReadRowsErrors(t *testing.T) {
	next, closeErr := errors.New("next"), errors.New("close")
	for _, tc := range []struct {
		name            string
		nextErr, closed error
		want            error
	}{
		{"next fails", next, nil, next},
		{"both fail", next, closeErr, next},
		{"close fails", nil, closeErr, closeErr},
	} {
		r := &fakeRows{cols: []string{"v"}, rows: [][]driver.Value{{"x"}}, nextErr: tc.nextErr, closeErr: tc.closed}
		got, err := dialect.ReadRows(r, dialect.All)
		if err != tc.want || got != nil || !r.closed {
			t.Errorf("%s: ReadRows = %v, %v (closed %v); want nil, %v, closed", tc.name, got, err, r.closed, tc.want)
		}
	}
}

// Query returns the columns with the rows, and a query's own error as it is.
func TestQuery(t *testing.T) {
	r := &fakeRows{cols: []string{"Variable_name", "Value"}, rows: [][]driver.Value{{"read_only", "OFF"}}}
	cols, rows, err := dialect.Query(context.Background(), r, "SHOW", 1)
	if err != nil || !reflect.DeepEqual(cols, r.cols) || !reflect.DeepEqual(rows, [][]driver.Value{{"read_only", "OFF"}}) {
		t.Fatalf("Query = %v, %v, %v", cols, rows, err)
	}
	fail := errors.New("refused")
	if _, _, err := dialect.Query(context.Background(), failing{fail}, "SELECT 1", 1); err != fail {
		t.Fatalf("Query of a failing query: %v, want %v", err, fail)
	}
}

type failing struct{ err error }

func (f failing) QueryContext(context.Context, string, []driver.NamedValue) (driver.Rows, error) {
	return nil, f.err
}
