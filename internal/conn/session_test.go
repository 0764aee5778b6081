package conn

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// Case 13/14, invariant read-only-kept, Connector/J sequence A (failOverReadOnly=true): on a secondary
// the connection is read-only whatever the explicit flag says (READ ONLY sent during
// set-up, SetReadOnly(false) sends nothing); after the fall-back the explicit flag rules
// again and nothing read-only reaches H1 unless it was asked for.
func TestReadOnlySequenceA(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		explicit bool // SetReadOnly while failed over
		onH1     step // what the fall-back connection to H1 gets
	}{
		{"SetReadOnly(false) on the secondary", false, ok("AFTER")},
		{"SetReadOnly(true) on the secondary applies on the primary", true, all(ok(setReadOnly), ok("AFTER"))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			e.script(0, fails("Q0", mysql.ErrInvalidConn), tc.onH1)
			e.script(1, all(ok(setReadOnly), ok("Q1")))
			c := e.open(seqA)
			if c.ReadOnly() {
				t.Fatal("read-only on the primary")
			}
			e.refuse(0) // H1 is gone
			wantFailover(t, exec(c, "Q0"), h1, h2, true)
			if !c.ReadOnly() {
				t.Error("ReadOnly() = false on the secondary with failOverReadOnly=true")
			}
			if err := c.SetReadOnly(ctx, tc.explicit); err != nil {
				t.Fatalf("SetReadOnly(%v): %v", tc.explicit, err)
			}
			if !c.ReadOnly() {
				t.Errorf("ReadOnly() = false after SetReadOnly(%v) on the secondary", tc.explicit)
			}
			mustExec(t, c, "Q1")

			e.net.Up(0) // H1 is back
			e.clock.Advance(30 * time.Second)
			mustExec(t, c, "AFTER")
			wantHost(t, c, h1)
			if c.ReadOnly() != tc.explicit {
				t.Errorf("ReadOnly() = %v on the primary, want the explicit %v", c.ReadOnly(), tc.explicit)
			}
			e.allMet()
		})
	}
}

// Case 14, invariant read-only-kept, Connector/J sequence B (failOverReadOnly=false): a secondary is
// as writable as the explicit flag says; an explicit read-only is carried to it.
func TestReadOnlySequenceB(t *testing.T) {
	for _, tc := range []struct {
		name     string
		explicit bool
	}{{"no explicit flag", false}, {"SetReadOnly(true) on the primary", true}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			first, second := fails("Q0", mysql.ErrInvalidConn), ok("Q1")
			if tc.explicit {
				first, second = all(ok(setReadOnly), first), all(ok(setReadOnly), second)
			}
			e.script(0, first)
			e.script(1, second)
			c := e.open(seqB)
			if tc.explicit {
				if err := c.SetReadOnly(context.Background(), true); err != nil {
					t.Fatal(err)
				}
			}
			e.refuse(0)
			wantFailover(t, exec(c, "Q0"), h1, h2, true)
			if c.ReadOnly() != tc.explicit {
				t.Errorf("ReadOnly() = %v on the secondary, want %v", c.ReadOnly(), tc.explicit)
			}
			mustExec(t, c, "Q1")
			e.allMet()
		})
	}
}

// Invariant read-only-kept: SetReadOnly sends the SET once per change, and nothing when the state does
// not change.
func TestSetReadOnlySendsOnlyChanges(t *testing.T) {
	ctx := context.Background()
	e := newEnv(t, 2)
	e.script(0, all(ok(setReadOnly), ok(setReadWrite)))
	c := e.open(seqA)
	for _, ro := range []bool{false, true, true, false, false} {
		if err := c.SetReadOnly(ctx, ro); err != nil {
			t.Fatalf("SetReadOnly(%v): %v", ro, err)
		}
		if c.ReadOnly() != ro {
			t.Errorf("ReadOnly() = %v after SetReadOnly(%v)", c.ReadOnly(), ro)
		}
	}
	e.allMet()
}

// Case 14, invariants read-only-kept and pool-moves-as-one: database/sql's ResetSession restores the DSN's readOnly for
// the next user of a pooled connection, and never flips a failed-over connection to
// read-write.
func TestResetSessionRestoresDSNReadOnly(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		cfg      Config
		failover bool
		set      bool // SetReadOnly(set) by the first user
		h1, h2   step
		want     bool // ReadOnly() for the second user
		wantHost string
	}{
		{name: "readOnly=false, user set read-only", cfg: seqA, set: true,
			h1: all(ok(setReadOnly), ok(setReadWrite)), want: false, wantHost: h1},
		{name: "readOnly=true, user set read-write", cfg: Config{ReadOnly: true, FailOverReadOnly: true}, set: false,
			h1: all(ok(setReadOnly), ok(setReadWrite), ok(setReadOnly)), want: true, wantHost: h1},
		{name: "failed over with failOverReadOnly", cfg: seqA, failover: true, set: false,
			h1: fails("Q0", mysql.ErrInvalidConn), h2: ok(setReadOnly), want: true, wantHost: h2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 2)
			e.script(0, tc.h1)
			e.script(1, tc.h2)
			db := e.db(tc.cfg, 1)

			sc := sqlConn(t, db)
			if tc.failover {
				e.refuse(0)
				_, err := sc.ExecContext(ctx, "Q0")
				wantFailover(t, err, h1, h2, true)
			}
			withProxy(t, sc, func(c *Conn) {
				if err := c.SetReadOnly(ctx, tc.set); err != nil {
					t.Fatalf("SetReadOnly(%v): %v", tc.set, err)
				}
			})
			_ = sc.Close()

			sc = sqlConn(t, db) // the same connection, after ResetSession
			defer sc.Close()
			withProxy(t, sc, func(c *Conn) {
				wantHost(t, c, tc.wantHost)
				if c.ReadOnly() != tc.want {
					t.Errorf("ReadOnly() = %v for the next user, want %v", c.ReadOnly(), tc.want)
				}
			})
			if n := len(e.net.AllConns()); n != 1+btoi(tc.failover) {
				t.Errorf("%d physical connections, want the pooled one reused", n)
			}
			if cur := e.net.AllConns()[len(e.net.AllConns())-1]; cur.Resets() != 1 {
				t.Errorf("ResetSession forwarded %d times, want 1", cur.Resets())
			}
			e.allMet()
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Case 13 (read-only-reset-on-every-switch): the current database (the last successful
// USE) is restored on every new physical session, on the first switch and the second;
// the DSN's database, or no USE at all, sends nothing.
func TestCurrentDatabaseSurvivesSwitches(t *testing.T) {
	unknownDB := &mysql.MySQLError{Number: 1049, SQLState: [5]byte{'4', '2', '0', '0', '0'}, Message: "Unknown database 'missing'"}
	for _, tc := range []struct {
		name  string
		use   string
		useOK bool
		setup string // what every new session gets, "" for nothing
	}{
		{"no USE", "", false, ""},
		{"USE other", "USE other", true, "USE `other`"},
		{"backticked name with a backtick", "use `we``ird`", true, "USE `we``ird`"},
		{"USE of the DSN database", "USE app", true, ""},
		{"failed USE", "USE missing", false, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, 3)
			first := fails("Q1", mysql.ErrInvalidConn)
			if tc.useOK {
				first = all(ok(tc.use), first)
			} else if tc.use != "" {
				first = all(fails(tc.use, unknownDB), first)
			}
			var setup step = func(sqlmock.Sqlmock) {}
			if tc.setup != "" {
				setup = ok(tc.setup)
			}
			e.script(0, first)
			e.script(1, all(setup, fails("Q2", mysql.ErrInvalidConn)))
			e.script(2, all(setup, ok("Q3")))
			c := e.open(Config{DBName: "app"})
			if tc.use != "" {
				if err := exec(c, tc.use); tc.useOK != (err == nil) {
					t.Fatalf("%s: %v", tc.use, err)
				}
			}
			e.refuse(0)
			wantFailover(t, exec(c, "Q1"), h1, h2, true)
			e.refuse(1)
			wantFailover(t, exec(c, "Q2"), h2, h3, true)
			mustExec(t, c, "Q3")
			e.allMet()
		})
	}
}

// USE is followed with any leading white space or comment, and nothing else is taken
// for it.
func TestTrackFollowsUse(t *testing.T) {
	for _, tc := range []struct{ q, db string }{
		{"USE a", "a"},
		{" use b", "b"},
		{"\tUSE c", "c"},
		{"\r\nUSE d", "d"},
		{"UPDATE t SET x = 1", "app"},
		{"SELECT 1", "app"},
		{"DO 1", "app"},
		{"/* c */ USE e", "e"},
		{"-- c\nuse f;", "f"},
		{"USER x", "app"},
	} {
		c := &Conn{prim: prim{tracker: tracker{db: "app"}}}
		c.ran(dialect.Classify(tc.q, false), tc.q, false)
		if c.db != tc.db {
			t.Errorf("after %q: db %q, want %q", tc.q, c.db, tc.db)
		}
	}
}

// A multi-statement query that ran (Exec) is followed statement by statement, its USE
// included; one whose results are being read may have run every statement: the
// temporary tables they create count as held, in the database it started in.
func TestBatchHoldsItsTemporaryTables(t *testing.T) {
	const q = "SELECT 1; CREATE TEMPORARY TABLE a (x INT); USE other; CREATE TEMPORARY TABLE b (x INT)"
	for _, tc := range []struct {
		reading bool
		db      string
		temps   []string
	}{
		{reading: false, db: "other", temps: []string{"app.a", "other.b"}},
		{reading: true, db: "app", temps: []string{"app.a", "app.b"}},
	} {
		tr := tracker{db: "app"}
		tr.ran(dialect.Classify(q, true), q, tc.reading)
		if tr.db != tc.db || !slices.Equal(tr.sess.has.temps, tc.temps) {
			t.Errorf("reading %v: db %q, temporary tables %q; want %q, %q", tc.reading, tr.db, tr.sess.has.temps, tc.db, tc.temps)
		}
	}
}
