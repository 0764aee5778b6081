package dialect

import (
	"context"
	"database/sql/driver"
	"io"
)

// All is the bound of ReadRows and Query that keeps every row.
const All = -1

// ReadRows reads rows to the end and closes them. It keeps the first max rows (every
// row with All), each in a slice of its own whose []byte values are copied to strings,
// since the driver reuses its buffers; the rest are read and dropped, so that the
// session is ready for its next statement. err is the first failure: of Next (other
// than io.EOF), else of Close; the rows are nil then.
func ReadRows(rows driver.Rows, max int) ([][]driver.Value, error) {
	vals := make([]driver.Value, len(rows.Columns()))
	var out [][]driver.Value
	var err error
	for {
		if err = rows.Next(vals); err != nil {
			break
		}
		if max >= 0 && len(out) >= max {
			continue
		}
		row := make([]driver.Value, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = string(b)
			}
			row[i] = v
		}
		out = append(out, row)
	}
	cerr := rows.Close()
	switch {
	case err != io.EOF:
		return nil, err
	case cerr != nil:
		return nil, cerr
	}
	return out, nil
}

// Query runs query on q without arguments and returns its column names and ReadRows'
// answer with max. An error of the query itself is returned as it is.
func Query(ctx context.Context, q driver.QueryerContext, query string, max int) ([]string, [][]driver.Value, error) {
	rows, err := q.QueryContext(ctx, query, nil)
	if err != nil {
		return nil, nil, err
	}
	cols := rows.Columns()
	out, err := ReadRows(rows, max)
	if err != nil {
		return nil, nil, err
	}
	return cols, out, nil
}
