package conn

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

const uuid = "9c5d6b3e-1f0a-11ef-8e2b-5bd7a1c0d0a1"

// galeraEnv is an env over n synced Galera nodes (cluster=auto).
func galeraEnv(t *testing.T, n int, opts ...func(*dsn.Config)) *env {
	e := newEnv(t, n, opts...)
	for i := range n {
		e.net.Galera(i, "synced", uuid, n)
	}
	return e
}

// A Galera node that leaves the Primary component while the pool is on it refuses an
// autocommit statement with 1047: the statement did not run, so it runs on the next
// ready node and the caller sees no error. The node is not-ready in Stats, the pool has
// moved (a new connection goes to H2), and no session there is read-only: every Galera
// node writes (failOverReadOnly does not apply).
func TestRefusedStatementRunsOnNextNode(t *testing.T) {
	const ins = "INSERT INTO t VALUES(1)"
	e := galeraEnv(t, 3)
	e.script(0, trap(ins))
	e.script(1, ok(ins), ok(ins))
	c := e.open(seqA)
	wantHost(t, c, h1)
	e.net.Galera(0, "non-primary", uuid, 1)

	mustExec(t, c, ins)
	wantHost(t, c, h2)
	e.untouched(0, 0, ins)
	if s := stateOf(e, h1); s.State != failover.HostNotReady {
		t.Errorf("H1 in Stats: %v (%v), want not-ready", s.State, s.LastError)
	}
	if e.cl.Active() != 1 {
		t.Fatalf("pool on H%d, want H2", e.cl.Active()+1)
	}
	c2 := e.open(seqA)
	wantHost(t, c2, h2)
	mustExec(t, c2, ins)
	e.wantEvents(failover.EventSwitch, h2, 1)
	notReady := 0
	for _, ev := range e.ev.evs {
		if ev.Kind == failover.EventHostState && ev.Host == h1 && ev.State == failover.HostNotReady {
			notReady++
		}
	}
	if notReady != 1 {
		t.Errorf("%d EventHostState not-ready for H1, want 1\n%s", notReady, e.ev)
	}
}

// Inside a transaction a refusal loses the transaction: failover.ErrTxLost with a
// FailoverError that says nothing ran (MaybeExecuted false) and wraps the server's
// 1047; later statements of it run nowhere; Rollback is nil; the connection is on H2 for
// the next one. A transaction opened with BEGIN gets the same.
func TestRefusedInsideTransactionLosesIt(t *testing.T) {
	const ins, ins2, next = "INSERT INTO t VALUES(1)", "INSERT INTO t VALUES(2)", "INSERT INTO t VALUES(3)"
	for _, sqlTx := range []bool{false, true} {
		name := "BeginTx"
		if sqlTx {
			name = "BEGIN"
		}
		t.Run(name, func(t *testing.T) {
			e := galeraEnv(t, 2)
			if sqlTx {
				e.script(0, ok("BEGIN"))
			} else {
				e.script(0, begin())
			}
			e.script(1, all(ok(next), trap(ins2)))
			c := e.open(seqA)
			var tx driver.Tx
			if sqlTx {
				mustExec(t, c, "BEGIN")
			} else {
				var err error
				if tx, err = c.BeginTx(context.Background(), driver.TxOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			e.net.Galera(0, "non-primary", uuid, 1)

			err := exec(c, ins)
			if !errors.Is(err, failover.ErrTxLost) {
				t.Fatalf("error %v, want ErrTxLost", err)
			}
			fe := wantFailover(t, err, h1, h2, false)
			var me *mysql.MySQLError
			var nr *cluster.NotReadyError
			if !errors.As(fe.Err, &nr) || !errors.As(err, &me) || me.Number != 1047 {
				t.Errorf("cause %v, want a *cluster.NotReadyError wrapping the 1047", fe.Err)
			}
			if !strings.Contains(err.Error(), "left H1:3306, not ready") {
				t.Errorf("error %q, want it to say the connection left H1 as not ready", err)
			}
			if err := exec(c, ins2); !errors.Is(err, failover.ErrTxLost) {
				t.Errorf("next statement of the lost transaction: %v, want ErrTxLost", err)
			}
			if sqlTx {
				mustExec(t, c, "ROLLBACK")
			} else if err := tx.Rollback(); err != nil {
				t.Errorf("Rollback: %v, want nil", err)
			}
			mustExec(t, c, next)
			wantHost(t, c, h2)
			e.untouched(1, 0, ins2)
		})
	}
}

// A COMMIT that a node refuses with 1047 committed nothing anywhere: the transaction is
// lost (ErrTxLost), never an unknown outcome.
func TestRefusedCommitIsLost(t *testing.T) {
	const ins = "INSERT INTO t VALUES(1)"
	e := galeraEnv(t, 2)
	e.script(0, all(begin(), ok(ins)))
	c := e.open(seqA)
	tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, ins)
	e.net.Galera(0, "non-primary", uuid, 1)
	err = tx.Commit()
	if !errors.Is(err, failover.ErrTxLost) || errors.Is(err, failover.ErrCommitOutcomeUnknown) {
		t.Fatalf("Commit refused with 1047: %v; want ErrTxLost, not ErrCommitOutcomeUnknown", err)
	}
	wantFailover(t, err, h1, h2, false)
	wantHost(t, c, h2)
}

// BEGIN refused by a node that is not ready ran nowhere: it runs on the next node.
func TestRefusedBeginRunsOnNextNode(t *testing.T) {
	e := galeraEnv(t, 2)
	e.script(1, begin())
	c := e.open(seqA)
	e.net.Galera(0, "non-primary", uuid, 1)
	tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
	if err != nil {
		t.Fatalf("BeginTx on a node that refuses: %v, want it begun on H2", err)
	}
	wantHost(t, c, h2)
	_ = tx
}

// MySQL's offline_mode refuses new sessions of a user without CONNECTION_ADMIN with 3032
// at connect: not a refusal every host would repeat (the walk goes on to the next host),
// and not a dead host (no backoff). An open session's next statement gets 3032 too, and
// runs on the next host.
func TestOfflineModeAtConnectAndOnStatement(t *testing.T) {
	const sel = "UPDATE t SET a = 1"
	e := newEnv(t, 3, func(c *dsn.Config) { c.Cluster = "replication" })
	e.script(1, ok(sel))
	e.script(2, ok(sel))
	e.net.RefuseDial(0, fake.OfflineError)
	c := e.open(seqB)
	wantHost(t, c, h2)
	if s := stateOf(e, h1); s.State != failover.HostNotReady || !strings.Contains(s.LastError.Error(), "offline_mode") {
		t.Errorf("H1: %v (%v), want not-ready for offline_mode", s.State, s.LastError)
	}
	if s := stateOf(e, h1); !s.RetryAt.IsZero() {
		t.Errorf("H1 in backoff until %v: an offline host answers, it is not down", s.RetryAt)
	}
	mustExec(t, c, sel)

	e.net.Refuse(1, fake.OfflineError)
	mustExec(t, c, sel) // refused on H2: runs on H3
	wantHost(t, c, h3)

	// Every host offline: the error names each and why.
	e.net.RefuseDial(1, fake.OfflineError)
	e.net.RefuseDial(2, fake.OfflineError)
	_, err := Open(context.Background(), e.cl, seqB)
	var nh *failover.NoHostAvailableError
	if !errors.As(err, &nh) || !strings.Contains(err.Error(), "H2:3306: not ready: offline_mode") {
		t.Fatalf("Open with every host offline: %v, want a *NoHostAvailableError naming each host's offline_mode", err)
	}
}

// Group Replication: a member that is not ONLINE refuses a transaction with 3796; the
// statement runs on the next member, and with targetSessionAttrs read-write the walk
// takes only the ONLINE primary.
func TestGroupReplicationRefusal(t *testing.T) {
	const ins = "INSERT INTO t VALUES(1)"
	e := newEnv(t, 3, target(attrs.ReadWrite))
	e.net.GroupMember(0, "ONLINE", 3, 0, true)
	e.net.GroupMember(1, "ONLINE", 3, 0, false)
	e.net.GroupMember(2, "ONLINE", 3, 0, false)
	e.script(0, fails(ins, fake.GroupNotOnlineError))
	c := e.open(writer)
	wantHost(t, c, h1)
	// H1 drops out (ERROR) and H3 is elected primary.
	e.net.GroupMember(0, "ERROR", 1, 0, false)
	e.net.GroupMember(2, "ONLINE", 2, 0, true)
	e.script(2, ok(ins))
	mustExec(t, c, ins)
	wantHost(t, c, h3)
	if s := stateOf(e, h1); s.State != failover.HostNotReady {
		t.Errorf("H1: %v (%v), want not-ready", s.State, s.LastError)
	}
}

// cluster=galera on servers that do not run Galera: no host is used, and the error says
// so for each, naming the option.
func TestForcedGaleraOnReplication(t *testing.T) {
	e := newEnv(t, 2, func(c *dsn.Config) { c.Cluster = "galera" })
	_, err := Open(context.Background(), e.cl, seqA)
	if err == nil || !strings.Contains(err.Error(), "H1:3306: not ready: cluster=galera, but the server does not run Galera") {
		t.Fatalf("Open: %v, want each host named as not running Galera", err)
	}
}

// stateOf returns host's entry of the cluster's Stats.
func stateOf(e *env, host string) failover.HostStats {
	for _, h := range e.cl.Stats().Hosts {
		if h.Addr == host {
			return h
		}
	}
	e.t.Fatalf("no host %s in Stats", host)
	return failover.HostStats{}
}

// On a Galera cluster causal reads use the node's own causality check: the replica
// session is set up with wsrep_sync_wait=1 and no position is read on the writer; a read
// whose check did not catch up within the provider's repl.causal_read_timeout (1205) ran
// nowhere and goes to another replica, or the primary.
func TestGaleraCausalReads(t *testing.T) {
	e := galeraEnv(t, 3, replicaReads, func(c *dsn.Config) { c.CausalReads = "local" })
	cfg := splitCfg
	cfg.CausalReads = "local"
	r := e.cl.Replicas().Pick("k", true, 0)
	other := 3 - r
	lockWait := &mysql.MySQLError{Number: 1205, Message: "Lock wait timeout exceeded; try restarting transaction"}
	e.script(0, all(ok("INSERT a"), ok("INSERT b")))
	e.script(r, all(ok(setReadOnly), ok("SET SESSION wsrep_sync_wait = 1"), queryRows("SELECT r", int64(r+1)),
		func(m sqlmock.Sqlmock) { m.ExpectQuery("SELECT s").WillReturnError(lockWait) }))
	e.script(other, all(ok(setReadOnly), ok("SET SESSION wsrep_sync_wait = 1"), queryRows("SELECT s", int64(other+1))))
	c := e.open(cfg)
	if e.cl.Kind() != cluster.KindGalera {
		t.Fatalf("cluster type %v, want galera", e.cl.Kind())
	}
	keyed := WithReadIntent(context.Background(), "k")
	mustExec(t, c, "INSERT a")
	if got := readOne(t, c, keyed, "SELECT r"); got != int64(r+1) {
		t.Fatalf("causal read on H%d, want the key's replica H%d", got, r+1)
	}
	mustExec(t, c, "INSERT b")
	if got := readOne(t, c, keyed, "SELECT s"); got != int64(other+1) {
		t.Fatalf("read after the key's replica's check timed out on H%d, want the other replica H%d", got, other+1)
	}
	e.allMet()
}

// A Galera node that loses the Primary component while it replicates a commit answers
// 1180 "Not connected to Primary Component" (dialect.LostPrimary): the node is not ready,
// so the connection and the pool leave it at once, but the other nodes may have committed
// the write set, so nothing runs again. An autocommit statement gets a FailoverError with
// MaybeExecuted wrapping the 1180, never the raw 1180, and is not run on H2; a
// statement of a transaction (a streaming replication fragment) loses the transaction
// (ErrTxLost: nothing of it committed); a COMMIT, by Tx.Commit or as a statement, has an
// unknown outcome (ErrCommitOutcomeUnknown). Either way the next statement runs on H2
// with no error, and H1 is not ready in Stats. Its status still says Synced here: the
// 1180 alone says it.
func TestGaleraLostPrimary(t *testing.T) {
	const ins, next = "INSERT INTO t VALUES(1)", "INSERT INTO t VALUES(2)"
	for _, tc := range []struct {
		name  string
		h1    step                                    // H1's script
		run   func(t *testing.T, c *Conn) (err error) // up to the failing call
		want  error                                   // failover.ErrTxLost, ErrCommitOutcomeUnknown, or nil
		retry bool                                    // the statement is a trap on H2 (autocommit)
	}{
		{name: "autocommit", h1: fails(ins, fake.LostPrimaryError), retry: true,
			run: func(t *testing.T, c *Conn) error { return exec(c, ins) }},
		{name: "statement in BeginTx", h1: all(begin(), fails(ins, fake.LostPrimaryError)), want: failover.ErrTxLost,
			run: func(t *testing.T, c *Conn) error {
				tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
				if err != nil {
					t.Fatal(err)
				}
				err = exec(c, ins)
				if rerr := tx.Rollback(); rerr != nil {
					t.Errorf("Rollback of the lost transaction: %v, want nil", rerr)
				}
				return err
			}},
		{name: "Tx.Commit", h1: all(begin(), ok(ins), commit(fake.LostPrimaryError)), want: failover.ErrCommitOutcomeUnknown,
			run: func(t *testing.T, c *Conn) error {
				tx, err := c.BeginTx(context.Background(), driver.TxOptions{})
				if err != nil {
					t.Fatal(err)
				}
				mustExec(t, c, ins)
				return tx.Commit()
			}},
		{name: "COMMIT statement", h1: all(ok("BEGIN"), ok(ins), fails("COMMIT", fake.LostPrimaryError)), want: failover.ErrCommitOutcomeUnknown,
			run: func(t *testing.T, c *Conn) error {
				mustExec(t, c, "BEGIN")
				mustExec(t, c, ins)
				return exec(c, "COMMIT")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := galeraEnv(t, 3)
			e.script(0, tc.h1)
			if tc.retry {
				e.script(1, all(ok(next), trap(ins)))
			} else {
				e.script(1, ok(next))
			}
			c := e.open(seqA)
			err := tc.run(t, c)
			fe := wantFailover(t, err, h1, h2, true)
			var me *mysql.MySQLError
			var nr *cluster.NotReadyError
			if !errors.As(fe.Err, &nr) || !errors.As(err, &me) || me.Number != 1180 {
				t.Errorf("cause %v, want a *cluster.NotReadyError wrapping the 1180", fe.Err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if tc.want != failover.ErrTxLost && errors.Is(err, failover.ErrTxLost) {
				t.Errorf("error %v says nothing committed: the other nodes may have committed it", err)
			}
			wantHost(t, c, h2)
			mustExec(t, c, next)
			if tc.retry {
				e.untouched(1, 0, ins)
			}
			if s := stateOf(e, h1); s.State != failover.HostNotReady {
				t.Errorf("H1 in Stats: %v (%v), want not-ready", s.State, s.LastError)
			}
			if a := e.cl.Active(); a != 1 {
				t.Errorf("pool on H%d, want H2", a+1)
			}
		})
	}
}
