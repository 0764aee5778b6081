package stmt

import (
	"context"
	"database/sql/driver"
	"io"
	"testing"
)

// log records, in order, what the owner and the physical rows and statements were told.
type log []string

// owner is an Owner that records its calls in a log.
type owner struct{ l *log }

func (o owner) add(s string) { *o.l = append(*o.l, s) }

func (o owner) Attempts(context.Context, *Stmt) (bool, error) { return false, nil }
func (o owner) Ran(Kind, string, []driver.NamedValue, driver.Result) driver.Result {
	return nil
}
func (o owner) Fail(context.Context, error, Failure) (bool, error) {
	o.add("Fail")
	return false, io.ErrUnexpectedEOF
}
func (o owner) Failing(string, []driver.NamedValue, bool) {}
func (o owner) RowsOpened(uint64) (RowSink, *Rows)        { o.add("RowsOpened"); return nil, nil }
func (o owner) RowsClosed(_ uint64, failed bool) {
	o.add(map[bool]string{false: "RowsClosed", true: "RowsClosed failed"}[failed])
}
func (o owner) Prepared(uint64)                          { o.add("Prepared") }
func (o owner) Unprepared(uint64)                        { o.add("Unprepared") }
func (o owner) StmtClosed(*Stmt)                         { o.add("StmtClosed") }
func (o owner) CheckNamedValue(*driver.NamedValue) error { return driver.ErrSkip }

// physical is a physical Rows and Stmt that logs its Close.
type physical struct {
	l   *log
	err error
}

func (p physical) Columns() []string                          { return nil }
func (p physical) Next([]driver.Value) error                  { return io.EOF }
func (p physical) NumInput() int                              { return -1 }
func (p physical) Exec([]driver.Value) (driver.Result, error) { return nil, nil }
func (p physical) Query([]driver.Value) (driver.Rows, error)  { return nil, nil }
func (p physical) Close() error {
	*p.l = append(*p.l, "physical Close")
	return p.err
}

// The owner hears of a closed Rows or Stmt only after its physical rows or statement is
// closed: it may hand the session they were on to another connection at once (shared
// replica sessions), which must never find a Close of ours still running on it.
func TestOwnerToldAfterPhysicalClose(t *testing.T) {
	for _, tc := range []struct {
		name string
		run  func(o owner, l *log)
		want []string
	}{
		{"rows", func(o owner, l *log) {
			r := NewRows(o, context.Background(), physical{l: l}, SideEpoch|1, "SELECT 1")
			_ = r.Close()
		}, []string{"RowsOpened", "physical Close", "RowsClosed"}},
		{"rows whose Close fails", func(o owner, l *log) {
			r := NewRows(o, context.Background(), physical{l: l, err: io.ErrUnexpectedEOF}, SideEpoch|1, "SELECT 1")
			_ = r.Close()
		}, []string{"RowsOpened", "physical Close", "RowsClosed failed", "Fail"}},
		{"statement", func(o owner, l *log) {
			s := New(nil, o, "SELECT 1", 0, Prepared{physical{l: l}, SideEpoch | 1})
			_ = s.Close()
		}, []string{"Prepared", "physical Close", "Unprepared", "StmtClosed"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var l log
			tc.run(owner{&l}, &l)
			if len(l) != len(tc.want) {
				t.Fatalf("calls %q, want %q", l, tc.want)
			}
			for i := range l {
				if l[i] != tc.want[i] {
					t.Fatalf("calls %q, want %q", l, tc.want)
				}
			}
		})
	}
}
