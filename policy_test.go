package mysqlfailover_test

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
	"github.com/mysqlfailover/mysqlfailover/policy"
)

const setReadOnlySQL = "SET SESSION TRANSACTION READ ONLY"

// portScript answers SELECT @@port once with the host's port (3301 for H1, ...); with
// readOnlySet the connection also expects the read-only set-up (declared last, so
// that an unmet SET is the only unmet expectation when it was not sent).
func portScript(readOnlySet bool) func(host, seq int, m sqlmock.Sqlmock) {
	return func(host, _ int, m sqlmock.Sqlmock) {
		m.ExpectQuery("SELECT @@port").WillReturnRows(sqlmock.NewRows([]string{"port"}).AddRow(3301 + host))
		if readOnlySet {
			m.ExpectExec(setReadOnlySQL).WillReturnResult(sqlmock.NewResult(0, 0))
		}
	}
}

// newPolicyPool is newPool with the scripts and extra options given.
func newPolicyPool(t *testing.T, hosts int, params string, script func(host, seq int, m sqlmock.Sqlmock), opts ...mysqlfailover.Option) *pool {
	t.Helper()
	p := &pool{t: t, net: fake.NewNet(t, hosts)}
	for i := 0; i < hosts; i++ {
		host := i
		p.net.Script(i, func(seq int, m sqlmock.Sqlmock) { script(host, seq, m) })
	}
	cfg, err := dsn.Parse("app:" + password + "@tcp(" + strings.Join(p.net.Addrs(), ",") + ")/shop?" + params)
	if err != nil {
		t.Fatal(err)
	}
	opts = append([]mysqlfailover.Option{mysqlfailover.WithDial(p.net.Dial), mysqlfailover.WithClock(fake.NewClock()),
		mysqlfailover.WithEventHook(func(e failover.Event) {
			p.mu.Lock()
			p.evs = append(p.evs, e)
			p.mu.Unlock()
		})}, opts...)
	p.c, err = mysqlfailover.NewConnector(cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	p.db = sql.OpenDB(p.c)
	t.Cleanup(func() { _ = p.db.Close() })
	return p
}

// proxy returns the pinned connection's host and effective read-only state.
func proxy(t *testing.T, c *sql.Conn) (host string, ro bool) {
	t.Helper()
	if err := c.Raw(func(dc any) error {
		pc, _ := mysqlfailover.ConnOf(dc)
		host, ro = pc.Host(), pc.ReadOnly()
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return host, ro
}

// targetSessionAttrs through the DSN: the first connection skips the host whose role
// does not qualify. With write intent (read-write, primary) the host it lands on passed
// the writer check, so failOverReadOnly does not apply and no SET SESSION TRANSACTION
// READ ONLY is sent there although it is a secondary; with standby it is sent
// (failOverReadOnly applies on a secondary).
func TestTargetSessionAttrsThroughDSN(t *testing.T) {
	for _, tc := range []struct {
		target   string
		readOnly int  // the host with read_only=ON
		wantSet  bool // SET SESSION TRANSACTION READ ONLY on H2
	}{
		{"read-write", 0, false},
		{"primary", 0, false},
		{"standby", 1, true},
	} {
		t.Run(tc.target, func(t *testing.T) {
			p := newPolicyPool(t, 2, "targetSessionAttrs="+tc.target, portScript(true))
			p.net.SetReadOnly(tc.readOnly, true)
			ctx := context.Background()
			c, err := p.db.Conn(ctx)
			if err != nil {
				t.Fatalf("Conn: %v\nevents:\n%s", err, p.eventText())
			}
			defer c.Close()
			if port, err := p.port(ctx, c); err != nil || port != 3302 {
				t.Fatalf("port %d, %v; want 3302\nevents:\n%s", port, err, p.eventText())
			}
			if h, ro := proxy(t, c); h != "H2:3306" || ro != tc.wantSet {
				t.Errorf("on %s read-only %v, want H2:3306 read-only %v", h, ro, tc.wantSet)
			}
			if n := p.net.RoleChecks(0); n != 1 {
				t.Errorf("H1 answered %d role queries, want 1", n)
			}
			h1 := p.net.Conns(0)
			if len(h1) != 1 || h1[0].Closes() != 1 {
				t.Fatalf("H1: %d connections, want 1, closed once after its role check", len(h1))
			}
			var re *cluster.RoleError
			p.mu.Lock()
			for _, e := range p.evs {
				if e.Kind == failover.EventConnect && e.Host == "H1:3306" && !errors.As(e.Err, &re) {
					t.Errorf("connect event for H1: %v, want a *cluster.RoleError", e)
				}
			}
			p.mu.Unlock()
			if re == nil || string(re.Wanted) != tc.target {
				t.Errorf("H1's RoleError %v, want one for %s", re, tc.target)
			}
			// The SET is declared last: with one SELECT @@port scripted and run, it is
			// the only expectation that can be left, and only when it was not sent.
			err = p.net.Conns(1)[0].Mock.ExpectationsWereMet()
			if tc.wantSet && err != nil {
				t.Errorf("H2: %v", err)
			}
			if !tc.wantSet && (err == nil || !strings.Contains(err.Error(), setReadOnlySQL)) {
				t.Errorf("H2: want only the read-only set-up unmet (never sent), got: %v", err)
			}
		})
	}
}

// reversed is a user layer that reverses its child's plan and keeps its distances.
type reversed struct{ child policy.Policy }

func (r reversed) Distance(h policy.Host) policy.Distance { return r.child.Distance(h) }

func (r reversed) Plan(w *policy.Walk, dst []int) []int {
	start := len(dst)
	dst = r.child.Plan(w, dst)
	slices.Reverse(dst[start:])
	return dst
}

// first is a user layer that moves one host to the front of its child's plan.
type first struct {
	child policy.Policy
	host  int
}

func (f first) Distance(h policy.Host) policy.Distance { return f.child.Distance(h) }

func (f first) Plan(w *policy.Walk, dst []int) []int {
	start := len(dst)
	dst = f.child.Plan(w, dst)
	plan := dst[start:]
	if i := slices.Index(plan, f.host); i > 0 {
		copy(plan[1:i+1], plan[:i])
		plan[0] = f.host
	}
	return dst
}

// WithPolicy layers run: a layer that reverses the plan makes the first connection land
// on the last host, with no attempt on the others.
func TestWithPolicyReversesPlan(t *testing.T) {
	p := newPolicyPool(t, 3, "", portScript(true),
		mysqlfailover.WithPolicy(func(child policy.Policy) policy.Policy { return reversed{child} }))
	ctx := context.Background()
	if port, err := p.port(ctx, p.db); err != nil || port != 3303 {
		t.Fatalf("port %d, %v; want 3303 (H3)\nevents:\n%s", port, err, p.eventText())
	}
	if a, b, c := p.attempts(0), p.attempts(1), p.attempts(2); a != 0 || b != 0 || c != 1 {
		t.Errorf("attempts H1 %d, H2 %d, H3 %d; want 0, 0, 1", a, b, c)
	}
}

// Several WithPolicy options stack in the order given, the last one outermost: it
// receives the previous layer as its child, and its plan is the one the walk follows.
func TestWithPolicyStacksLastOutermost(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order []int // the hosts the layers move first, in option order
		want  int   // port of the host the first connection lands on
	}{
		{"H2 then H3", []int{1, 2}, 3303},
		{"H3 then H2", []int{2, 1}, 3302},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var children []policy.Policy
			var opts []mysqlfailover.Option
			for _, h := range tc.order {
				opts = append(opts, mysqlfailover.WithPolicy(func(child policy.Policy) policy.Policy {
					children = append(children, child)
					return first{child: child, host: h}
				}))
			}
			p := newPolicyPool(t, 3, "", portScript(true), opts...)
			if len(children) != 2 {
				t.Fatalf("layers called %d times, want 2", len(children))
			}
			if _, ok := children[0].(cluster.Rotation); !ok {
				t.Errorf("the first layer's child is %T, want cluster.Rotation (no localDC, no target)", children[0])
			}
			if f, ok := children[1].(first); !ok || f.host != tc.order[0] {
				t.Errorf("the second layer's child is %#v, want the first layer", children[1])
			}
			if port, err := p.port(context.Background(), p.db); err != nil || port != tc.want {
				t.Fatalf("port %d, %v; want %d\nevents:\n%s", port, err, tc.want, p.eventText())
			}
			if p.attempts(0) != 0 {
				t.Errorf("%d attempts on H1, want 0", p.attempts(0))
			}
		})
	}
}

// The built-in layers come first: a user layer's child is RoleAware over DCAware over
// Rotation when the DSN sets localDC and targetSessionAttrs.
func TestWithPolicyChildIsBuiltInStack(t *testing.T) {
	cfg, err := dsn.Parse("app:" + password + "@tcp(H1:3306;dc=east,H2:3306;dc=west)/shop?localDC=east&targetSessionAttrs=read-write")
	if err != nil {
		t.Fatal(err)
	}
	var child policy.Policy
	c, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithDial(fake.NewNet(t, 2).Dial),
		mysqlfailover.WithPolicy(func(p policy.Policy) policy.Policy { child = p; return p }))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, ok := child.(*cluster.RoleAware); !ok {
		t.Fatalf("the user layer's child is %T, want *cluster.RoleAware", child)
	}
	// H2 is in the remote DC with usedHostsPerRemoteDC 0: the stack ignores it.
	if d := child.Distance(policy.Host{Index: 1, Addr: "H2:3306", DC: "west"}); d != policy.Ignored {
		t.Errorf("Distance(H2 in west) = %v, want ignored", d)
	}
}

// A layer that returns nil makes NewConnector fail, before any connection is opened,
// also when it comes after a valid layer.
func TestWithPolicyNilLayerFailsNewConnector(t *testing.T) {
	nilLayer := mysqlfailover.WithPolicy(func(policy.Policy) policy.Policy { return nil })
	keep := mysqlfailover.WithPolicy(func(p policy.Policy) policy.Policy { return p })
	for _, tc := range []struct {
		name string
		opts []mysqlfailover.Option
	}{
		{"alone", []mysqlfailover.Option{nilLayer}},
		{"after a valid layer", []mysqlfailover.Option{keep, nilLayer}},
		{"before a valid layer", []mysqlfailover.Option{nilLayer, keep}},
		// A nil layer and a nil option are refused too, instead of a panic.
		{"WithPolicy(nil)", []mysqlfailover.Option{mysqlfailover.WithPolicy(nil)}},
		{"a nil Option", []mysqlfailover.Option{nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := dsn.Parse("app:" + password + "@tcp(H1:3306,H2:3306)/shop")
			if err != nil {
				t.Fatal(err)
			}
			var dials atomic.Int32
			dial := func(context.Context, int) (sqldriver.Conn, error) {
				dials.Add(1)
				return nil, errors.New("dial must not be called")
			}
			c, err := mysqlfailover.NewConnector(cfg, append([]mysqlfailover.Option{mysqlfailover.WithDial(dial)}, tc.opts...)...)
			if err == nil || c != nil {
				t.Fatalf("NewConnector = %v, %v; want an error", c, err)
			}
			if !strings.Contains(err.Error(), "nil") {
				t.Errorf("error %q does not say the policy was nil", err)
			}
			if strings.Contains(err.Error(), password) {
				t.Errorf("password in error: %v", err)
			}
			if n := dials.Load(); n != 0 {
				t.Errorf("%d dials, want 0", n)
			}
		})
	}
}

// dsn.Config.Validate's topology checks reach NewConnector: a hand-built Config whose
// localDC matches no host's label (or usedHostsPerRemoteDC without localDC) fails with
// dsn.ErrInvalidOption before any dial; a valid localDC makes the first host of that DC
// the primary.
func TestLocalDCValidationReachesNewConnector(t *testing.T) {
	hosts := []dsn.Host{{Name: "H1", Port: 3306, DC: "east"}, {Name: "H2", Port: 3306, DC: "west"}}
	for _, tc := range []struct {
		name    string
		localDC string
		remote  int
	}{
		{"unknown localDC", "dc9", 0},
		{"localDC differs in case", "East", 0},
		{"usedHostsPerRemoteDC without localDC", "", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := dsn.NewConfig()
			cfg.Hosts = slices.Clone(hosts)
			cfg.LocalDC, cfg.UsedHostsPerRemoteDC = tc.localDC, tc.remote
			var dials atomic.Int32
			dial := func(context.Context, int) (sqldriver.Conn, error) {
				dials.Add(1)
				return nil, errors.New("dial must not be called")
			}
			c, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithDial(dial))
			if !errors.Is(err, dsn.ErrInvalidOption) || c != nil {
				t.Fatalf("NewConnector = %v, %v; want dsn.ErrInvalidOption", c, err)
			}
			if n := dials.Load(); n != 0 {
				t.Errorf("%d dials, want 0", n)
			}
		})
	}
	t.Run("valid localDC", func(t *testing.T) {
		cfg := dsn.NewConfig()
		cfg.Hosts = slices.Clone(hosts)
		cfg.LocalDC = "west"
		net := fake.NewNet(t, 2)
		net.Script(1, func(_ int, m sqlmock.Sqlmock) {
			m.ExpectQuery("SELECT @@port").WillReturnRows(sqlmock.NewRows([]string{"port"}).AddRow(3302))
		})
		c, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithDial(net.Dial), mysqlfailover.WithClock(fake.NewClock()))
		if err != nil {
			t.Fatal(err)
		}
		db := sql.OpenDB(c)
		defer db.Close()
		var port int
		if err := db.QueryRow("SELECT @@port").Scan(&port); err != nil || port != 3302 {
			t.Fatalf("port %d, %v; want 3302 (H2, the primary of west)", port, err)
		}
		if n := len(net.Conns(0)); n != 0 {
			t.Errorf("%d dials to H1 (remote, usedHostsPerRemoteDC 0), want 0", n)
		}
	})
}
