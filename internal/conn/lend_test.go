package conn

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"io"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// lendDB is a *sql.DB of one connection over a one-host env whose connections register
// with the returned Lender, and whose first physical connection expects script (nil:
// nothing): it is used once (opened) and once more (reset), and then sits idle with a
// session that may be lent.
func lendDB(t *testing.T, cfg Config, script step) (*env, *Lender, *sql.DB) {
	t.Helper()
	e := newEnv(t, 1)
	e.script(0, script)
	l := &Lender{}
	cfg.Lender = l
	db := e.db(cfg, 1)
	for range 2 {
		if err := db.PingContext(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	return e, l, db
}

// probeOn runs the probe's query on a lent session and reads its row.
func probeOn(t *testing.T, phys driver.Conn) error {
	t.Helper()
	rows, err := phys.(driver.QueryerContext).QueryContext(context.Background(), "SELECT 1", nil)
	if err != nil {
		return err
	}
	vals := make([]driver.Value, len(rows.Columns()))
	for err == nil {
		err = rows.Next(vals)
	}
	_ = rows.Close()
	if err != io.EOF {
		return err
	}
	return nil
}

// blockedIn reports whether a goroutine is blocked on a mutex inside fn.
func blockedIn(fn string) func() bool {
	return func() bool {
		buf := make([]byte, 1<<20)
		buf = buf[:runtime.Stack(buf, true)]
		for _, g := range strings.Split(string(buf), "\n\n") {
			if strings.Contains(g, "[sync.Mutex.Lock") && strings.Contains(g, fn) {
				return true
			}
		}
		return false
	}
}

// TestLenderLendsOnlyIdleSessions: a connection's session is lent once it sits idle in
// the pool after a reset (database/sql then resets it before its next use), never while
// a user holds the connection, never twice at once, never for another host; the first
// idle period after the connection opened lends nothing (database/sql may hand a
// connection it never reset to its next user without a reset).
func TestLenderLendsOnlyIdleSessions(t *testing.T) {
	e := newEnv(t, 2)
	l := &Lender{}
	db := e.db(Config{Lender: l}, 1)
	ctx := context.Background()
	// A connection nobody used, put back (as database/sql does for a fresh connection
	// whose caller gave up waiting, without marking it for reset): not lent.
	fresh := sqlConn(t, db)
	if err := fresh.Raw(func(dc any) error {
		dc.(driver.Validator).IsValid()
		if c, back := l.Borrow(0); c != nil {
			back(false)
			t.Error("a session nobody used was lent")
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := fresh.Close(); err != nil {
		t.Fatal(err)
	}
	if c, back := l.Borrow(0); c != nil {
		back(false)
		t.Fatal("a session nobody used was lent")
	}
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	sc := sqlConn(t, db)
	if c, back := l.Borrow(0); c != nil {
		back(false)
		t.Fatal("a session in use was lent")
	}
	if err := sc.Close(); err != nil {
		t.Fatal(err)
	}
	if c, back := l.Borrow(1); c != nil {
		back(false)
		t.Fatal("a session of host 0 was lent for host 1")
	}
	c, back := l.Borrow(0)
	if c != e.phys(0, 0) {
		t.Fatalf("lent %v, want the pool's session of host 0", c)
	}
	if c2, back2 := l.Borrow(0); c2 != nil {
		back2(false)
		t.Fatal("a lent session was lent again")
	}
	if err := probeOn(t, c); err != nil {
		t.Fatal(err)
	}
	back(false)
	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.dialed(0); n != 1 {
		t.Errorf("%d physical connections, want 1: a session given back unbroken stays", n)
	}
}

// TestLenderSkipsSessionsThatHoldState: a session that holds what its next user may
// observe (a user variable), one with a statement still prepared, and one whose
// autocommit is off (a probe's read would open a transaction) are not lent.
func TestLenderSkipsSessionsThatHoldState(t *testing.T) {
	ctx := context.Background()
	t.Run("user variable", func(t *testing.T) {
		_, l, db := lendDB(t, Config{}, ok("SET @a = 1"))
		if _, err := db.ExecContext(ctx, "SET @a = 1"); err != nil {
			t.Fatal(err)
		}
		if c, back := l.Borrow(0); c != nil {
			back(false)
			t.Fatal("a session holding a user variable was lent")
		}
	})
	t.Run("prepared statement", func(t *testing.T) {
		_, l, db := lendDB(t, Config{}, prepared("UPDATE t SET a = ?", 1, nil))
		st, err := db.PrepareContext(ctx, "UPDATE t SET a = ?")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.ExecContext(ctx, 1); err != nil {
			t.Fatal(err)
		}
		if c, back := l.Borrow(0); c != nil {
			back(false)
			t.Fatal("a session with a statement prepared was lent (database/sql may close it while the session sits idle)")
		}
		_ = st.Close()
	})
	t.Run("autocommit off", func(t *testing.T) {
		_, l, _ := lendDB(t, Config{Autocommit: "0"}, nil)
		if c, back := l.Borrow(0); c != nil {
			back(false)
			t.Fatal("a session with autocommit off was lent")
		}
	})
}

// TestResetSessionWaitsForProbe: database/sql's checkout of a connection whose session
// is lent waits for the probe to give it back, and then uses the same session.
func TestResetSessionWaitsForProbe(t *testing.T) {
	e, l, db := lendDB(t, Config{}, nil)
	c, back := l.Borrow(0)
	if c == nil {
		t.Fatal("nothing lent")
	}
	done := make(chan error, 1)
	go func() { done <- db.PingContext(context.Background()) }()
	fake.WaitFor(t, "the checkout to wait for the probe", blockedIn("(*lendState).busy"))
	if err := probeOn(t, c); err != nil {
		t.Fatal(err)
	}
	back(false)
	if err := fake.Recv(t, "the ping", done); err != nil {
		t.Fatal(err)
	}
	if n := e.dialed(0); n != 1 {
		t.Errorf("%d physical connections, want 1", n)
	}
}

// TestBrokenProbeDiscardsLentSession: a session given back broken is closed, once, and
// the connection's next user gets a new one, as for a session the server closed while
// it sat idle; the connection's Close closes nothing twice.
func TestBrokenProbeDiscardsLentSession(t *testing.T) {
	e, l, db := lendDB(t, Config{}, nil)
	c, back := l.Borrow(0)
	if c == nil {
		t.Fatal("nothing lent")
	}
	back(true)
	old := e.phys(0, 0)
	if old.Closes() != 1 {
		t.Fatalf("the broken session was closed %d times, want 1", old.Closes())
	}
	if err := db.PingContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := e.dialed(0); n != 2 {
		t.Fatalf("%d physical connections, want 2: the next user gets a new session", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if old.Closes() != 1 || e.phys(0, 1).Closes() != 1 {
		t.Errorf("closes: %d and %d, want 1 and 1", old.Closes(), e.phys(0, 1).Closes())
	}
}

// TestCloseDuringProbeClosesOnce: database/sql may close an idle connection (its idle
// cleaner, DB.Close) while a probe uses its session: Close waits for the probe, and the
// session is closed exactly once, whether the probe gives it back broken or not.
func TestCloseDuringProbeClosesOnce(t *testing.T) {
	for _, broken := range []bool{false, true} {
		e, l, db := lendDB(t, Config{}, nil)
		c, back := l.Borrow(0)
		if c == nil {
			t.Fatal("nothing lent")
		}
		done := make(chan error, 1)
		go func() { done <- db.Close() }()
		fake.WaitFor(t, "Close to wait for the probe", blockedIn("(*lendState).busy"))
		back(broken)
		if err := fake.Recv(t, "Close", done); err != nil {
			t.Fatal(err)
		}
		if n := e.phys(0, 0).Closes(); n != 1 {
			t.Errorf("broken %v: the session was closed %d times, want 1", broken, n)
		}
		if len(l.conns) != 0 {
			t.Errorf("broken %v: %d connections still registered, want 0", broken, len(l.conns))
		}
	}
}

// TestProbeAndStatementsNeverShareASession: probes that borrow and give back (some
// broken) while users run calls: run with -race, a probe and a call on the same
// connection at once would race on its state.
func TestProbeAndStatementsNeverShareASession(t *testing.T) {
	e := newEnv(t, 1)
	l := &Lender{}
	db := e.db(Config{Lender: l}, 2)
	ctx := context.Background()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if c, back := l.Borrow(0); c != nil {
				err := probeOn(t, c)
				back(err != nil || i%7 == 0)
			}
			runtime.Gosched()
		}
	}()
	var users sync.WaitGroup
	for range 2 {
		users.Add(1)
		go func() {
			defer users.Done()
			for range 300 {
				if err := db.PingContext(ctx); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	fake.Wait(t, "the users", &users)
	close(stop)
	fake.Wait(t, "the prober", &wg)
	_ = e
}

// TestLenderWaitsMinIdle: a session put back a moment ago is not lent (database/sql hands
// it to its next user first, who would wait for the probe); once it has sat idle MinIdle,
// it is.
func TestLenderWaitsMinIdle(t *testing.T) {
	clk := fake.NewClock()
	e := newEnv(t, 1)
	l := &Lender{Now: clk.Now, MinIdle: DefaultLendIdle}
	db := e.db(Config{Lender: l}, 1)
	for range 2 {
		if err := db.PingContext(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	clk.Advance(DefaultLendIdle - time.Millisecond)
	if c, back := l.Borrow(0); c != nil {
		back(false)
		t.Fatalf("a session idle for %v was lent, want at least %v", DefaultLendIdle-time.Millisecond, DefaultLendIdle)
	}
	clk.Advance(time.Millisecond)
	c, back := l.Borrow(0)
	if c != e.phys(0, 0) {
		t.Fatalf("a session idle for %v: lent %v, want the pool's session", DefaultLendIdle, c)
	}
	back(false)
}
