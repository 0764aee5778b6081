package conn

import (
	"context"
	"database/sql/driver"
	"io"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
)

// idsOf is a result with an id column holding vals.
func idsOf(vals ...int64) *sqlmock.Rows {
	r := sqlmock.NewRows([]string{"id"})
	for _, v := range vals {
		r.AddRow(v)
	}
	return r
}

// readAll reads r to its end and closes it.
func readAll(t *testing.T, r driver.Rows) []int64 {
	t.Helper()
	var got []int64
	dest := make([]driver.Value, 1)
	for {
		err := r.Next(dest)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		got = append(got, dest[0].(int64))
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	return got
}

// A connection reuses its Rows and Stmt proxies (a statement allocates nothing
// go-sql-driver does not), but never one in use: rows opened while others are open get
// a Rows of their own, each reading its own results; a prepare wraps the last closed
// Stmt, never one still open, and the reused one runs its own query.
func TestProxiesReusedOnlyWhenClosed(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 1)
	e.script(0, all(
		query("SELECT a", idsOf(1, 2)),
		query("SELECT b", idsOf(10)),
		query("SELECT c", idsOf(3)),
		preparedQuery("SELECT p1", idsOf(11)),
		preparedQuery("SELECT p2", idsOf(12)),
		preparedQuery("SELECT p3", idsOf(13)),
	))
	c := e.open(seqA)

	a := mustQuery(t, c, "SELECT a")
	dest := make([]driver.Value, 1)
	if err := a.Next(dest); err != nil || dest[0] != int64(1) {
		t.Fatalf("SELECT a, first row: %v, %v", dest[0], err)
	}
	b := mustQuery(t, c, "SELECT b") // a is still open
	if b == a {
		t.Fatalf("the rows of SELECT b reuse those of SELECT a, still open")
	}
	if got := readAll(t, b); len(got) != 1 || got[0] != 10 {
		t.Errorf("SELECT b read %v, want [10]", got)
	}
	if got := readAll(t, a); len(got) != 1 || got[0] != 2 {
		t.Errorf("SELECT a's second row %v, want [2]", got)
	}
	cr := mustQuery(t, c, "SELECT c") // none open: the first Rows again
	if cr != a {
		t.Errorf("SELECT c, with no rows open, got a new Rows: want the connection's own reused")
	}
	if got := readAll(t, cr); len(got) != 1 || got[0] != 3 {
		t.Errorf("SELECT c read %v, want [3]", got)
	}

	queryStmt := func(s driver.Stmt) []int64 {
		t.Helper()
		r, err := s.(driver.StmtQueryContext).QueryContext(ctx, nil)
		if err != nil {
			t.Fatalf("query: %v", err)
		}
		return readAll(t, r)
	}
	p1 := prepare(t, c, "SELECT p1")
	if got := queryStmt(p1); len(got) != 1 || got[0] != 11 {
		t.Errorf("p1 read %v, want [11]", got)
	}
	if err := p1.Close(); err != nil {
		t.Fatal(err)
	}
	p2 := prepare(t, c, "SELECT p2")
	if p2 != p1 {
		t.Errorf("the prepare after p1's Close got a new Stmt: want p1's reused")
	}
	if got := queryStmt(p2); len(got) != 1 || got[0] != 12 {
		t.Errorf("p2 (in p1's Stmt) read %v, want [12]", got)
	}
	p3 := prepare(t, c, "SELECT p3") // p2 is still open
	if p3 == p2 {
		t.Fatalf("p3 reuses p2's Stmt, still open")
	}
	if got := queryStmt(p3); len(got) != 1 || got[0] != 13 {
		t.Errorf("p3 read %v, want [13]", got)
	}
	for _, s := range []driver.Stmt{p2, p3} {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := p2.Close(); err != nil { // database/sql never does; nothing happens
		t.Errorf("second Close: %v", err)
	}
	e.allMet()
}
