package conn

import (
	"database/sql/driver"
	"errors"
	"io"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// TestPoolMoveWhileRowsOpen (invariant pool-moves-as-one): when the pool moves while a
// connection is reading a result set (another connection's failover, or SwitchTo), the
// reading connection stays on its session until the rows are closed: the proxy never
// closes a session under open rows. They are readable to the end; a call it makes
// meanwhile goes to that session, whose answer it gets unchanged (this fake answers a
// data error, the C client's 2014 "Commands out of sync"; go-sql-driver itself closes the
// session and answers driver.ErrBadConn, which then moves the connection as any
// communication error does); and its next statement after the rows are closed moves to
// the pool's host without an error. TestPreparedStatementRowsHoldFallBackUntilClosed
// covers the same for a fall-back.
func TestPoolMoveWhileRowsOpen(t *testing.T) {
	outOfSync := &mysql.MySQLError{Number: 2014, Message: "Commands out of sync; you can't run this command now"}
	moves := []struct {
		name  string
		other step   // the other connection's session on H1
		h2    []step // the sessions opened on H2, in turn; the reader's is the last
		move  func(t *testing.T, e *env, other *Conn)
	}{
		{"another connection's failover", fails("MOVE", mysql.ErrInvalidConn),
			// H2 is a secondary: read-only (sequence A).
			[]step{ok(setReadOnly), all(ok(setReadOnly), ok("NEXT"))},
			func(t *testing.T, e *env, other *Conn) {
				e.refuse(0) // H1's sessions live on, new ones are refused
				wantFailover(t, exec(other, "MOVE"), h1, h2, true)
			}},
		{"SwitchTo", nil,
			// SwitchTo's own attempt, then the reader's: H2 is the primary now.
			[]step{nil, ok("NEXT")},
			func(t *testing.T, e *env, _ *Conn) {
				if err := e.cl.SwitchTo(fake.Context(t), h2); err != nil {
					t.Fatalf("SwitchTo: %v", err)
				}
			}},
	}
	for _, mv := range moves {
		for _, prep := range []bool{false, true} {
			t.Run(mv.name+"/"+name(prep, nil), func(t *testing.T) {
				e := newEnv(t, 2)
				e.script(0, all(scripted(prep)(sel, idRows(3, 0, nil, nil)), fails("DURING", outOfSync)), mv.other)
				e.script(1, mv.h2...)
				reader, other := e.open(seqA), e.open(seqA)
				r, closeStmt := openRows(t, reader, prep)
				dest := make([]driver.Value, 1)
				if err := r.Next(dest); err != nil || dest[0] != int64(1) {
					t.Fatalf("row 1: %v, %v", dest[0], err)
				}

				mv.move(t, e, other)
				if a := e.cl.Active(); a != 1 {
					t.Fatalf("the pool is on H%d after the move, want H2", a+1)
				}

				// A statement while the rows are open: the session's own answer.
				err := exec(reader, "DURING")
				if err != outOfSync {
					t.Fatalf("statement while the rows are open: %v, want the reading session's own answer (2014), unchanged", err)
				}
				var fe *failover.FailoverError
				if errors.As(err, &fe) {
					t.Fatalf("statement while the rows are open moved the connection: %v", err)
				}
				wantHost(t, reader, h1)
				if n := e.phys(0, 0).Closes(); n != 0 {
					t.Fatalf("the reading session was closed %d times under its open rows", n)
				}
				for i := int64(2); i <= 3; i++ {
					if err := r.Next(dest); err != nil || dest[0] != i {
						t.Fatalf("row %d after the move: %v, %v", i, dest[0], err)
					}
				}
				if err := r.Next(dest); err != io.EOF {
					t.Fatalf("after the last row: %v, want io.EOF", err)
				}
				if err := r.Close(); err != nil {
					t.Fatalf("Rows.Close: %v", err)
				}
				closeStmt()

				// The next statement joins the pool's host, unseen.
				mustExec(t, reader, "NEXT")
				wantHost(t, reader, h2)
				if n := e.phys(0, 0).Closes(); n != 1 {
					t.Errorf("the reading session closed %d times after it moved, want 1", n)
				}
				e.allMet()
			})
		}
	}
}
