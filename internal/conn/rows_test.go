package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
)

const sel = "SELECT id FROM t"

// openRows runs sel on c, as a plain query or through a prepared statement; closeStmt
// closes the statement (if any) and checks the error.
func openRows(t *testing.T, c *Conn, prepared bool) (r driver.Rows, closeStmt func()) {
	t.Helper()
	ctx := context.Background()
	var err error
	closeStmt = func() {}
	if prepared {
		s := prepare(t, c, sel)
		closeStmt = func() {
			t.Helper()
			if err := s.Close(); err != nil {
				t.Errorf("Stmt.Close: %v", err)
			}
		}
		r, err = s.(driver.StmtQueryContext).QueryContext(ctx, nil)
	} else {
		r, err = c.QueryContext(ctx, sel, nil)
	}
	if err != nil {
		t.Fatalf("%s: %v", sel, err)
	}
	return r, closeStmt
}

func scripted(prepared bool) func(string, *sqlmock.Rows) step {
	if prepared {
		return preparedQuery
	}
	return query
}

// Rows never move: a communication error while reading returns a *FailoverError after
// the connection switched, and the next statement runs on H2. Closing the failed Rows,
// even with an error, does not switch a second time.
func TestRowsErrorReturnsFailoverErrorAndNextStatementRunsOnNewHost(t *testing.T) {
	for _, prepared := range []bool{false, true} {
		for _, closeErr := range []error{nil, mysql.ErrInvalidConn} {
			t.Run(name(prepared, closeErr), func(t *testing.T) {
				e := newEnv(t, 3)
				e.script(0, scripted(prepared)(sel, idRows(2, 1, mysql.ErrInvalidConn, closeErr)))
				e.script(1, all(ok(setReadOnly), ok("NEXT")))
				c := e.open(seqA)
				r, closeStmt := openRows(t, c, prepared)

				dest := make([]driver.Value, 1)
				if err := r.Next(dest); err != nil || dest[0] != int64(1) {
					t.Fatalf("first row: %v, %v", dest[0], err)
				}
				e.refuse(0) // H1 is gone
				err := r.Next(dest)
				wantFailover(t, err, h1, h2, true)
				if !errors.Is(err, mysql.ErrInvalidConn) {
					t.Errorf("error does not wrap mysql.ErrInvalidConn: %v", err)
				}
				cerr := r.Close()
				if !errors.Is(cerr, closeErr) {
					t.Errorf("Close: %v, want %v", cerr, closeErr)
				}
				notBadConn(t, cerr)
				var fe *failover.FailoverError
				if errors.As(cerr, &fe) {
					t.Errorf("Close reported a second failover: %v", cerr)
				}
				e.wantEvents(failover.EventHostFailed, "", 1)
				e.wantEvents(failover.EventSwitch, "", 1)

				mustExec(t, c, "NEXT")
				wantHost(t, c, h2)
				if n := len(e.net.Conns(2)); n != 0 {
					t.Errorf("H3 dialed %d times, want 0", n)
				}
				closeStmt()
				e.allMet()
			})
		}
	}
}

func name(prepared bool, closeErr error) string {
	s := "query"
	if prepared {
		s = "prepared"
	}
	if closeErr != nil {
		s += ", Close fails too"
	}
	return s
}

// io.EOF is the normal end of a result: it passes through untouched and moves nothing.
func TestRowsEOFPassesThroughUntouched(t *testing.T) {
	for _, prepared := range []bool{false, true} {
		t.Run(name(prepared, nil), func(t *testing.T) {
			e := newEnv(t, 2)
			e.script(0, all(scripted(prepared)(sel, idRows(2, 0, nil, nil)), ok("NEXT")))
			c := e.open(seqA)
			r, closeStmt := openRows(t, c, prepared)
			dest := make([]driver.Value, 1)
			for i := 1; i <= 2; i++ {
				if err := r.Next(dest); err != nil || dest[0] != int64(i) {
					t.Fatalf("row %d: %v, %v", i, dest[0], err)
				}
			}
			if err := r.Next(dest); err != io.EOF {
				t.Fatalf("after the last row: %v, want io.EOF itself", err)
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			closeStmt()
			mustExec(t, c, "NEXT")
			wantHost(t, c, h1)
			e.wantEvents(failover.EventHostFailed, "", 0)
			e.wantEvents(failover.EventSwitch, "", 0)
			e.allMet()
		})
	}
}

// Through database/sql: the failed read is rows.Err(), the connection goes back to the
// pool on H2, and the next statement runs there without an error.
func TestRowsErrorThroughDatabaseSQL(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, query(sel, idRows(3, 1, mysql.ErrInvalidConn, nil)))
	e.script(1, all(ok(setReadOnly), ok("NEXT")))
	db := e.db(seqA, 1)
	ctx := context.Background()
	rows, err := db.QueryContext(ctx, sel)
	if err != nil {
		t.Fatal(err)
	}
	e.refuse(0) // H1 is gone
	n := 0
	for rows.Next() {
		n++
	}
	err = rows.Err()
	wantFailover(t, err, h1, h2, true)
	if n != 1 {
		t.Errorf("read %d rows before the failure, want 1", n)
	}
	if err := rows.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if _, err := db.ExecContext(ctx, "NEXT"); err != nil {
		t.Fatalf("next statement: %v", err)
	}
	e.wantEvents(failover.EventSwitch, "", 1)
	if n := len(e.net.Conns(1)); n != 1 {
		t.Errorf("H2 dialed %d times, want 1 (the same logical connection moved)", n)
	}
	e.allMet()
}

// Invariant fall-back-at-safe-points: the rows of a prepared statement count as open results like any other:
// while they are open nothing falls back (it would close the physical connection under
// them), and once they are closed the fall-back is no longer held up.
func TestPreparedStatementRowsHoldFallBackUntilClosed(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, fails("MOVE", mysql.ErrInvalidConn), ok("BACK"))
	e.script(1, all(ok(setReadOnly), preparedQuery(sel, idRows(1, 0, nil, nil)), ok("DURING")))
	c := e.open(seqA)
	e.refuse(0)
	wantFailover(t, exec(c, "MOVE"), h1, h2, true)
	e.net.Up(0)

	r, closeStmt := openRows(t, c, true)
	e.clock.Advance(31 * time.Second) // fall-back due
	mustExec(t, c, "DURING")
	wantHost(t, c, h2)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	closeStmt()
	mustExec(t, c, "BACK")
	wantHost(t, c, h1)
	e.wantEvents(failover.EventFallBack, "", 1)
	e.allMet()
}

// A communication error from closing a result that was read without error is a host
// failure like any other: the connection moves, and Close says so.
func TestRowsCloseCommunicationErrorSwitches(t *testing.T) {
	e := newEnv(t, 2)
	e.script(0, query(sel, idRows(1, 0, nil, mysql.ErrInvalidConn)))
	e.script(1, all(ok(setReadOnly), ok("NEXT")))
	c := e.open(seqA)
	r, _ := openRows(t, c, false)
	dest := make([]driver.Value, 1)
	if err := r.Next(dest); err != nil {
		t.Fatal(err)
	}
	e.refuse(0)
	wantFailover(t, r.Close(), h1, h2, true)
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	e.wantEvents(failover.EventSwitch, "", 1)
	mustExec(t, c, "NEXT")
	wantHost(t, c, h2)
	e.allMet()
}
