package cluster_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/policy"
)

// dcRig is the five hosts of case 23: H1, H2 in dc1; H3, H4 in dc2; H5 in dc3.
func dcRig(t *testing.T, localDC string, perRemote int, set func(*rigOpts)) *rig {
	return newRig(t, 5, func(o *rigOpts) {
		o.labels("dc1", "dc1", "dc2", "dc2", "dc3")
		o.LocalDC, o.UsedHostsPerRemoteDC = localDC, perRemote
		if set != nil {
			set(o)
		}
	})
}

func TestRotationPlan(t *testing.T) {
	hosts := make([]policy.Host, 4)
	for i := range hosts {
		hosts[i].Index = i
	}
	for _, tc := range []struct {
		name string
		w    policy.Walk
		want []int
	}{
		{"from the primary", policy.Walk{Start: 0}, []int{0, 1, 2, 3}},
		{"from the third host, wrapping", policy.Walk{Start: 2}, []int{2, 3, 0, 1}},
		{"primary first", policy.Walk{Start: 2, PrimaryFirst: true}, []int{0, 2, 3, 1}},
		{"primary skipped", policy.Walk{Start: 2, SkipPrimary: true}, []int{2, 3, 1}},
		{"another primary", policy.Walk{Start: 0, Primary: 2, SkipPrimary: true}, []int{0, 1, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tc.w
			w.Hosts = hosts
			if got := (cluster.Rotation{}).Plan(&w, nil); !slices.Equal(got, tc.want) {
				t.Errorf("plan %v, want %v", got, tc.want)
			}
		})
	}
}

func TestDCAwareDistances(t *testing.T) {
	hosts := []policy.Host{
		{Index: 0, DC: "dc1"}, {Index: 1, DC: "dc1"}, {Index: 2, DC: "dc2"}, {Index: 3, DC: "dc2"},
		{Index: 4, DC: "dc3"}, {Index: 5}, {Index: 6, DC: "DC1"},
	}
	for _, tc := range []struct {
		perRemote int
		want      []policy.Distance
	}{
		{0, []policy.Distance{policy.Local, policy.Local, policy.Ignored, policy.Ignored,
			policy.Ignored, policy.Local, policy.Ignored}},
		{1, []policy.Distance{policy.Local, policy.Local, policy.Remote, policy.Ignored,
			policy.Remote, policy.Local, policy.Remote}},
		{2, []policy.Distance{policy.Local, policy.Local, policy.Remote, policy.Remote,
			policy.Remote, policy.Local, policy.Remote}},
	} {
		p := cluster.NewDCAware(cluster.Rotation{}, hosts, "dc1", tc.perRemote)
		for i, h := range hosts {
			if got := p.Distance(h); got != tc.want[i] {
				t.Errorf("usedHostsPerRemoteDC=%d: host %d (dc %q) is %v, want %v (labels are case-sensitive; no label is local)",
					tc.perRemote, i, h.DC, got, tc.want[i])
			}
		}
		w := policy.Walk{Hosts: hosts, Start: 2}
		plan := p.Plan(&w, nil)
		var local, remote []int
		for _, h := range plan {
			switch tc.want[h] {
			case policy.Local:
				if len(remote) > 0 {
					t.Errorf("usedHostsPerRemoteDC=%d: plan %v has local host %d after a remote one", tc.perRemote, plan, h)
				}
				local = append(local, h)
			case policy.Remote:
				remote = append(remote, h)
			default:
				t.Errorf("usedHostsPerRemoteDC=%d: plan %v lists ignored host %d", tc.perRemote, plan, h)
			}
		}
		if !slices.Equal(local, []int{5, 0, 1}) {
			t.Errorf("usedHostsPerRemoteDC=%d: local hosts in plan order %v, want the rotation's [5 0 1]", tc.perRemote, local)
		}
	}
}

// TestDCAwareWalk is case 23's scenario on fake hosts: traffic stays in dc1, moves to
// one dc2 host and at most one dc3 host when dc1 is cut, never touches H4, and returns
// to dc1 by the fall-back rules.
func TestDCAwareWalk(t *testing.T) {
	r := dcRig(t, "dc1", 1, nil)
	l := r.connect()
	if l.host != 0 || r.cl.Primary() != 0 {
		t.Fatalf("first connection on H%d, primary %d; want H1", l.host+1, r.cl.Primary())
	}
	r.down(0, 1)
	l.fail()
	if l.host != 2 {
		t.Fatalf("after dc1 went down: on H%d, want H3 (first dc2 host)", l.host+1)
	}
	r.down(2)
	l.fail()
	if l.host != 4 {
		t.Fatalf("after H3 went down too: on H%d, want H5 (dc3); H4 is beyond usedHostsPerRemoteDC", l.host+1)
	}
	if h := r.history(); h != `/H1 \H2 /H3 \H2 /H5` {
		t.Errorf("history %q", h)
	}
	r.up(0, 1, 2)
	r.clock.Advance(30 * time.Second)
	c, _, err := r.cl.TryFallBack(context.Background(), nil)
	if err != nil || c == nil || r.cl.Active() != 0 {
		t.Fatalf("fall-back after 30 s: conn %v, err %v, active H%d; want H1", c, err, r.cl.Active()+1)
	}
	_ = c.Close()
	_ = l.c.Close()
	if n := len(r.net.Conns(3)); n != 0 {
		t.Errorf("H4 got %d connections, want 0 (ignored)", n)
	}
}

func TestDCAwareAllDownNamesIgnoredHosts(t *testing.T) {
	r := dcRig(t, "dc1", 1, func(o *rigOpts) { o.RetriesAllDown = 1 })
	r.down(0, 1, 2, 3, 4)
	_, _, err := r.cl.Connect(context.Background(), nil)
	var nh *failover.NoHostAvailableError
	if !errors.As(err, &nh) {
		t.Fatalf("err %v, want NoHostAvailableError", err)
	}
	msg := err.Error()
	for _, want := range []string{"H1:3306: dial", "H2:3306: dial", "H3:3306: dial", "H5:3306: dial",
		"H4:3306: not tried (ignored: dc dc2 is remote, and usedHostsPerRemoteDC=1 uses only the first 1 host(s) of each remote DC)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if n := len(r.net.Conns(3)); n != 0 || strings.Contains(r.history(), "H4") {
		t.Errorf("H4 attempted: history %q", r.history())
	}
}

func TestDCAwareNoRemoteHostsWithoutUsedHostsPerRemoteDC(t *testing.T) {
	r := dcRig(t, "dc1", 0, func(o *rigOpts) { o.RetriesAllDown = 2 })
	r.connect()
	r.down(0, 1)
	_, _, err := r.cl.Failover(context.Background(), 0, mysql.ErrInvalidConn, nil)
	if err == nil {
		t.Fatal("walk found a host; want none: remote DCs are not used with usedHostsPerRemoteDC=0")
	}
	if h := r.history(); strings.ContainsAny(h, "345") {
		t.Errorf("remote hosts attempted: %q", h)
	}
}

// TestLocalDCPrimary: with localDC the primary is the local DC's first host, for the
// first connection and for fall-back.
func TestLocalDCPrimary(t *testing.T) {
	r := dcRig(t, "dc2", 1, nil)
	for i := range 5 { // H3, the local DC's first host, is the primary the others follow
		r.net.Follow(i, 2)
	}
	r.net.Follow(2, -1)
	if p := r.cl.Primary(); p != 2 {
		t.Fatalf("primary %d, want 2 (H3, first host of dc2)", p)
	}
	l := r.connect()
	if l.host != 2 {
		t.Fatalf("first connection on H%d, want H3", l.host+1)
	}
	r.down(2)
	l.fail()
	if l.host != 3 {
		t.Fatalf("on H%d after H3 failed, want H4 (local)", l.host+1)
	}
	r.up(2)
	r.clock.Advance(30 * time.Second)
	c, _, err := r.cl.TryFallBack(context.Background(), nil)
	if err != nil || c == nil || r.cl.Active() != 2 {
		t.Fatalf("fall-back: %v, active H%d; want H3", err, r.cl.Active()+1)
	}
	_ = c.Close()
	_ = l.c.Close()
}

func TestAccepts(t *testing.T) {
	roles := []failover.Role{failover.RoleUnknown, failover.RolePrimary, failover.RoleReadOnlyPrimary, failover.RoleStandby}
	for _, tc := range []struct {
		target string
		want   []bool // per role above
	}{
		{"", []bool{true, true, true, true}},
		{attrs.Any, []bool{true, true, true, true}},
		{attrs.ReadWrite, []bool{false, true, false, false}},
		{attrs.ReadOnly, []bool{false, false, true, true}},
		{attrs.Primary, []bool{false, true, true, false}},
		{attrs.Standby, []bool{false, false, false, true}},
		{attrs.PreferStandby, []bool{false, false, false, true}},
	} {
		for i, r := range roles {
			if got := cluster.Accepts(tc.target, r); got != tc.want[i] {
				t.Errorf("Accepts(%q, %v) = %v, want %v", tc.target, r, got, tc.want[i])
			}
		}
	}
}

// roleRows is a QueryerContext answering the role query with fixed variables.
type roleRows struct {
	driver.Conn
	vars [][2]string
	err  error
}

func (c roleRows) QueryContext(ctx context.Context, q string, _ []driver.NamedValue) (driver.Rows, error) {
	if q != cluster.RoleQuery {
		return nil, fmt.Errorf("unexpected query %q", q)
	}
	if c.err != nil {
		return nil, c.err
	}
	return &varRows{vars: c.vars}, nil
}

type varRows struct {
	vars [][2]string
	i    int
}

func (r *varRows) Columns() []string { return []string{"Variable_name", "Value"} }
func (r *varRows) Close() error      { return nil }
func (r *varRows) Next(dest []driver.Value) error {
	if r.i == len(r.vars) {
		return io.EOF
	}
	dest[0], dest[1] = []byte(r.vars[r.i][0]), []byte(r.vars[r.i][1])
	r.i++
	return nil
}

func TestReadRole(t *testing.T) {
	for _, tc := range []struct {
		name string
		vars [][2]string
		want failover.Role
		err  string
	}{
		{"MariaDB 10.11 primary", [][2]string{{"read_only", "OFF"}, {"tx_read_only", "OFF"}}, failover.RolePrimary, ""},
		{"MariaDB replica", [][2]string{{"read_only", "ON"}, {"tx_read_only", "OFF"}}, failover.RoleStandby, ""},
		{"MariaDB 11 NO_LOCK", [][2]string{{"read_only", "NO_LOCK"}}, failover.RoleStandby, ""},
		{"MySQL 8 super_read_only", [][2]string{{"read_only", "OFF"}, {"super_read_only", "ON"}, {"transaction_read_only", "OFF"}}, failover.RoleStandby, ""},
		{"MySQL 8 read-only transactions", [][2]string{{"read_only", "OFF"}, {"super_read_only", "OFF"}, {"transaction_read_only", "ON"}}, failover.RoleReadOnlyPrimary, ""},
		{"no read_only", [][2]string{{"tx_read_only", "OFF"}}, failover.RoleUnknown, "did not report read_only"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := cluster.ReadRole(context.Background(), roleRows{vars: tc.vars})
			if got != tc.want || (err == nil) != (tc.err == "") || err != nil && !strings.Contains(err.Error(), tc.err) {
				t.Errorf("ReadRole = %v, %v; want %v, error containing %q", got, err, tc.want, tc.err)
			}
		})
	}
	if _, err := cluster.ReadRole(context.Background(), roleRows{err: mysql.ErrInvalidConn}); !errors.Is(err, mysql.ErrInvalidConn) {
		t.Errorf("a broken connection: %v, want mysql.ErrInvalidConn as is", err)
	}
}

// roleRig is a three-host rig with targetSessionAttrs.
func roleRig(t *testing.T, target string, set func(*rigOpts)) *rig {
	return newRig(t, 3, func(o *rigOpts) {
		o.TargetSessionAttrs = target
		if set != nil {
			set(o)
		}
	})
}

// TestClusterTypeReadOnce: with targetSessionAttrs any, a session's state is read only to
// learn the cluster type (cluster=auto), once per pool; with cluster=replication, or a
// single host, never.
func TestClusterTypeReadOnce(t *testing.T) {
	for _, tc := range []struct {
		name    string
		cluster string
		hosts   int
		want    int
	}{
		{"auto", "auto", 3, 1},
		{"replication", "replication", 3, 0},
		{"auto single host", "auto", 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRig(t, tc.hosts, func(o *rigOpts) { o.Cluster = tc.cluster })
			for range 3 {
				l := r.connect()
				_ = l.c.Close()
				r.cl.Release(l.host)
			}
			if n := r.net.RoleChecks(0); n != tc.want {
				t.Errorf("%d role queries over three connects, want %d", n, tc.want)
			}
		})
	}
}

func TestTargetSessionAttrsWalk(t *testing.T) {
	for _, tc := range []struct {
		target   string
		readOnly []bool // per host
		want     int
		history  string
	}{
		{attrs.ReadWrite, []bool{false, true, true}, 0, "/H1"},
		{attrs.ReadWrite, []bool{true, false, true}, 1, `\H1 /H2`},
		{attrs.Primary, []bool{true, true, false}, 2, `\H1 \H2 /H3`},
		{attrs.Standby, []bool{false, true, true}, 1, `\H1 /H2`},
		{attrs.ReadOnly, []bool{false, false, true}, 2, `\H1 \H2 /H3`},
		{attrs.PreferStandby, []bool{false, true, true}, 1, `/H1 /H2`},
		{attrs.Any, []bool{true, true, true}, 0, "/H1"},
	} {
		t.Run(fmt.Sprint(tc.target, tc.readOnly), func(t *testing.T) {
			r := roleRig(t, tc.target, nil)
			for i, ro := range tc.readOnly {
				r.net.SetReadOnly(i, ro)
			}
			l := r.connect()
			defer l.c.Close()
			if l.host != tc.want || r.history() != tc.history {
				t.Errorf("landed on H%d after %q; want H%d after %q", l.host+1, r.history(), tc.want+1, tc.history)
			}
			for _, e := range r.events(failover.EventConnect) {
				var re *cluster.RoleError
				if e.Err != nil && (!errors.As(e.Err, &re) || re.Wanted != tc.target) {
					t.Errorf("failed attempt %v: want a *RoleError wanting %q", e, tc.target)
				}
			}
			// Every physical connection that was not kept was closed exactly once.
			for _, c := range r.net.AllConns() {
				if want := 1; driver.Conn(c) != l.c && c.Closes() != want {
					t.Errorf("H%d connection closed %d times, want 1", c.Host+1, c.Closes())
				}
			}
			if tc.target == attrs.Any {
				// cluster=auto: the first session reads what the cluster is, once per pool.
				l2 := r.connect()
				defer l2.c.Close()
				if n := r.net.RoleChecks(0); n != 1 || r.cl.Kind() != cluster.KindReplication {
					t.Errorf("any: %d role queries over two connects, cluster type %v; want 1 (the cluster type, once), replication", n, r.cl.Kind())
				}
			}
		})
	}
}

// TestPreferStandbyLastResort: with no standby answering, prefer-standby takes the first
// non-standby that answered in the first pass, without a second connection to it.
func TestPreferStandbyLastResort(t *testing.T) {
	r := roleRig(t, attrs.PreferStandby, nil)
	r.net.SetReadOnly(2, true)
	r.down(1, 2)
	l := r.connect()
	defer l.c.Close()
	if l.host != 0 || r.history() != `/H1 \H2 \H3` || len(r.net.Conns(0)) != 1 {
		t.Fatalf("on H%d after %q with %d H1 connections; want H1 after /H1 \\H2 \\H3, one connection",
			l.host+1, r.history(), len(r.net.Conns(0)))
	}
	// With a standby back, the next connection that joins the pool goes there: H1 is
	// known not to be one, so the role layer tries it last.
	r.up(2)
	c, h, err := r.cl.Connect(context.Background(), nil)
	if err != nil || h != 2 {
		t.Fatalf("next connection: H%d, %v; want H3", h+1, err)
	}
	_ = c.Close()
}

func TestAllHostsWrongRoleSaysWhy(t *testing.T) {
	r := roleRig(t, attrs.ReadWrite, func(o *rigOpts) { o.RetriesAllDown = 2 })
	for i := range 3 {
		r.net.SetReadOnly(i, true)
	}
	_, _, err := r.cl.Connect(context.Background(), nil)
	var nh *failover.NoHostAvailableError
	if !errors.As(err, &nh) || nh.Passes != 2 {
		t.Fatalf("err %v, want NoHostAvailableError after 2 passes", err)
	}
	for _, h := range []string{"H1", "H2", "H3"} {
		if want := h + ":3306: skipped: role is standby, wanted read-write"; !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q:\n%v", want, err)
		}
	}
	if got := r.clock.Sleeps(); !slices.Equal(got, []time.Duration{cluster.DefaultPassPause}) {
		t.Errorf("sleeps %v, want one DefaultPassPause between the passes", got)
	}
}

// TestWalkPauseEndsOnNews: a walk that found no host of its role pauses DefaultPassPause
// before its next pass, unless news came meanwhile: a host came to qualify (a probe read
// its new role) or the pool moved (another walk, the monitor, an operator's SwitchTo).
// Then the next pass starts at once and takes the promoted host. Here the news comes
// while the first pass tries its last host, H3.
func TestWalkPauseEndsOnNews(t *testing.T) {
	for _, tc := range []struct {
		name string
		news func(r *rig)
	}{
		{"host qualifies", func(r *rig) { r.cl.NoteRole(1, failover.RolePrimary) }},
		{"pool moves", func(r *rig) {
			if err := r.cl.SwitchTo(context.Background(), "H2:3306"); err != nil {
				r.t.Errorf("SwitchTo(H2): %v", err)
			}
		}},
		{"none", func(*rig) {}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r *rig
			once := false
			r = roleRig(t, attrs.ReadWrite, func(o *rigOpts) {
				o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
					if h == 2 && !once {
						once = true
						r.net.SetReadOnly(1, false) // H2 promoted
						tc.news(r)
					}
					return r.net.Dial(ctx, h)
				}
			})
			for i := range 3 {
				r.net.SetReadOnly(i, true)
			}
			c, h, err := r.cl.Connect(context.Background(), nil)
			if err != nil || h != 1 {
				t.Fatalf("Connect: H%d, %v; want H2, promoted during the first pass", h+1, err)
			}
			_ = c.Close()
			want := []time.Duration(nil)
			if tc.name == "none" {
				want = []time.Duration{cluster.DefaultPassPause}
			}
			if got := r.clock.Sleeps(); !slices.Equal(got, want) {
				t.Errorf("sleeps %v, want %v", got, want)
			}
		})
	}
}

// TestNewsIsGoodNews: what ends a walk's pause is news that a pass may find a host there:
// a host that came to qualify, a move of the pool (here an operator's SwitchTo to a host
// already known to qualify, so that no role change says it); not a host that lost its
// role or failed a probe.
func TestNewsIsGoodNews(t *testing.T) {
	r := roleRig(t, attrs.ReadWrite, nil)
	r.net.SetReadOnly(1, true)
	l := r.connect() // H1, the writer
	defer l.c.Close()
	r.cl.NoteRole(1, failover.RoleStandby)
	n := cluster.News(r.cl)
	r.cl.NoteRole(2, failover.RoleStandby) // H3's first role read: it does not qualify
	r.cl.NoteRole(1, failover.RoleStandby) // no change
	if got := cluster.News(r.cl); got != n {
		t.Errorf("roles that do not qualify made %d news", got-n)
	}
	r.net.SetReadOnly(1, false)
	r.cl.NoteRole(1, failover.RolePrimary) // H2 came to qualify
	if cluster.News(r.cl) == n {
		t.Error("a host that came to qualify made no news")
	}
	n = cluster.News(r.cl)
	if err := r.cl.SwitchTo(context.Background(), "H2:3306"); err != nil || r.cl.Active() != 1 {
		t.Fatalf("SwitchTo(H2): %v, the pool on H%d", err, r.cl.Active()+1)
	}
	if cluster.News(r.cl) == n {
		t.Error("the pool's move to H2 made no news")
	}
}

// TestPrimaryNotSkippedWithWriteIntent: a walk that looks for a writer tries the primary
// in its first pass even when fall-back is not due, and tries hosts known to be of the
// wrong role last.
func TestPrimaryNotSkippedWithWriteIntent(t *testing.T) {
	r := roleRig(t, attrs.ReadWrite, nil)
	r.net.SetReadOnly(0, true)
	r.net.SetReadOnly(2, true)
	l := r.connect() // \H1 (standby) /H2
	// The operator switches back: H2 demoted, H1 promoted.
	r.net.SetReadOnly(1, true)
	r.net.SetReadOnly(0, false)
	_ = l.c.Close()
	if r.cl.NoteRole(1, failover.RoleStandby) {
		t.Fatal("NoteRole(standby) says it qualifies for read-write")
	}
	c, h, err := r.cl.Failover(context.Background(), 1, &cluster.RoleError{Role: failover.RoleStandby, Wanted: attrs.ReadWrite}, nil)
	if err != nil || h != 0 {
		t.Fatalf("walk after demotion of H2: H%d, %v; want H1", h+1, err)
	}
	_ = c.Close()
	// H3 was never checked, so it stays in its rotation place: H3 then H1.
	if got := r.history(); got != `\H1 /H2 \H3 /H1` {
		t.Errorf("history %q, want \\H1 /H2 \\H3 /H1", got)
	}
	// Now every host's role is known; a walk from H1 tries the standbys last.
	r.net.SetReadOnly(0, true)
	r.net.SetReadOnly(1, false)
	r.cl.NoteRole(0, failover.RoleStandby)
	c, h, err = r.cl.Failover(context.Background(), 0, &cluster.RoleError{Role: failover.RoleStandby, Wanted: attrs.ReadWrite}, nil)
	if err != nil || h != 1 {
		t.Fatalf("second walk: H%d, %v; want H2", h+1, err)
	}
	_ = c.Close()
}

// TestFallBackProbeChecksRole: a fall-back to a primary that is now a standby fails,
// quietly, and restarts the clocks.
func TestFallBackProbeChecksRole(t *testing.T) {
	r := roleRig(t, attrs.ReadWrite, nil)
	r.net.SetReadOnly(0, true)
	l := r.connect()
	defer l.c.Close()
	if l.host != 1 {
		t.Fatalf("on H%d, want H2", l.host+1)
	}
	r.clock.Advance(30 * time.Second)
	if !r.cl.FallBackDue() {
		t.Fatal("fall-back not due after 30 s")
	}
	c, _, err := r.cl.TryFallBack(context.Background(), nil)
	var re *cluster.RoleError
	if c != nil || !errors.As(err, &re) || re.Role != failover.RoleStandby {
		t.Fatalf("TryFallBack = %v, %v; want a *RoleError", c, err)
	}
	if r.cl.FallBackDue() || r.cl.Active() != 1 || len(r.events(failover.EventFallBackFailed)) != 1 {
		t.Errorf("after the failed probe: due %v, active H%d, %d fall-back-failed events; want false, H2, 1",
			r.cl.FallBackDue(), r.cl.Active()+1, len(r.events(failover.EventFallBackFailed)))
	}
}

// reverse is a user layer: it reverses its child's plan.
type reverse struct{ child policy.Policy }

func (p reverse) Distance(h policy.Host) policy.Distance { return p.child.Distance(h) }
func (p reverse) Plan(w *policy.Walk, dst []int) []int {
	start := len(dst)
	dst = p.child.Plan(w, dst)
	slices.Reverse(dst[start:])
	return dst
}

// TestUserLayerCannotReachIgnoredHosts: whatever a user layer plans, ignored hosts are
// never attempted, repeats are dropped, and the failed host goes last in the first pass.
func TestUserLayerCannotReachIgnoredHosts(t *testing.T) {
	r := dcRig(t, "dc1", 1, func(o *rigOpts) {
		o.Layer = func(child policy.Policy) policy.Policy { return everything{child} }
	})
	l := r.connect()
	defer l.c.Close()
	r.down(0, 1, 2, 4)
	_, _, err := r.cl.Failover(context.Background(), 0, mysql.ErrInvalidConn, nil)
	if err == nil {
		t.Fatal("walk succeeded: it must have reached H4, which is ignored")
	}
	if n := len(r.net.Conns(3)); n != 0 {
		t.Errorf("H4 got %d connections", n)
	}
}

// everything plans every host twice, ignored ones included, and calls every host local.
type everything struct{ child policy.Policy }

func (p everything) Distance(policy.Host) policy.Distance { return policy.Local }
func (p everything) Plan(w *policy.Walk, dst []int) []int {
	for range 2 {
		for i := range w.Hosts {
			dst = append(dst, i)
		}
	}
	return dst
}

func TestUserLayerReordersPlan(t *testing.T) {
	r := newRig(t, 3, func(o *rigOpts) {
		o.Layer = func(child policy.Policy) policy.Policy { return reverse{child} }
	})
	l := r.connect()
	defer l.c.Close()
	if l.host != 2 {
		t.Fatalf("on H%d, want H3 (reversed plan)", l.host+1)
	}
	if _, err := cluster.New(&dsn.Config{Hosts: []dsn.Host{{Name: "a", Port: 1}}}, cluster.Env{Dial: r.net.Dial,
		Layer: func(policy.Policy) policy.Policy { return nil }}); err == nil {
		t.Error("a nil layer was accepted")
	}
}

// TestPreferStandbyLastResortInALaterPass: the last resort also applies when nothing
// answered in the first pass and only a non-standby answers in a later one.
func TestPreferStandbyLastResortInALaterPass(t *testing.T) {
	var r *rig
	dials := 0
	r = roleRig(t, attrs.PreferStandby, func(o *rigOpts) {
		o.RetriesAllDown = 3
		o.Dial = func(ctx context.Context, h int) (driver.Conn, error) {
			if dials++; dials == 3 {
				r.up(0) // the end of the first pass: the primary comes back
			}
			return r.net.Dial(ctx, h)
		}
	})
	r.down(0, 1, 2)
	l := r.connect()
	defer l.c.Close()
	if l.host != 0 || r.history() != `\H1 \H2 \H3 /H1 \H2 \H3` {
		t.Fatalf("on H%d after %q; want H1 after \\H1 \\H2 \\H3 /H1 \\H2 \\H3", l.host+1, r.history())
	}
}

// TestJoiningConnectionFollowsFailedOverPool: once the pool is on a remote host, a new
// connection goes there first; it does not try the local host that is down first, and
// it does not take the pool back to dc1 ahead of the fall-back rules.
func TestJoiningConnectionFollowsFailedOverPool(t *testing.T) {
	r := dcRig(t, "dc1", 1, nil)
	l := r.connect()
	defer func() { _ = l.c.Close() }()
	r.down(0, 1)
	l.fail() // \H2 /H3
	before := r.history()
	c, h, err := r.cl.Connect(context.Background(), nil)
	if err != nil || h != 2 {
		t.Fatalf("new connection: H%d, %v; want H3", h+1, err)
	}
	_ = c.Close()
	if got := strings.TrimPrefix(r.history(), before); got != " /H3" {
		t.Errorf("new connection's attempts %q, want only /H3", got)
	}
	// dc1 is back, fall-back not due: new connections still follow the pool.
	r.up(0, 1)
	c, h, err = r.cl.Connect(context.Background(), nil)
	if err != nil || h != 2 || r.cl.Active() != 2 {
		t.Fatalf("new connection with dc1 back: H%d, %v, active H%d; want H3", h+1, err, r.cl.Active()+1)
	}
	_ = c.Close()
	// Fall-back due: the primary first.
	r.clock.Advance(30 * time.Second)
	c, h, err = r.cl.Connect(context.Background(), nil)
	if err != nil || h != 0 {
		t.Fatalf("new connection after 30 s: H%d, %v; want H1", h+1, err)
	}
	_ = c.Close()
}

// TestUnfitActiveHost: the active host found demoted is unfit until a check says
// otherwise; prefer-standby never makes a host unfit.
func TestUnfitActiveHost(t *testing.T) {
	r := roleRig(t, attrs.ReadWrite, nil)
	l := r.connect()
	defer func() { _ = l.c.Close() }()
	if r.cl.Unfit(0) {
		t.Fatal("writable H1 unfit")
	}
	r.cl.NoteRole(0, failover.RoleStandby)
	if !r.cl.Unfit(0) || r.cl.Active() != 0 {
		t.Fatalf("after demotion: unfit %v, active H%d; want true, H1 (no walk has landed yet)", r.cl.Unfit(0), r.cl.Active()+1)
	}
	r.cl.NoteRole(0, failover.RolePrimary)
	if r.cl.Unfit(0) {
		t.Fatal("promoted again, still unfit")
	}
	p := roleRig(t, attrs.PreferStandby, nil)
	p.cl.NoteRole(0, failover.RolePrimary)
	if p.cl.Unfit(0) {
		t.Error("prefer-standby: a primary is a last resort, not unfit")
	}
}

// TestLayerIgnoringHostsIsNamed: hosts a user layer ignores are named as such, not as
// the DC layer's doing.
func TestLayerIgnoringHostsIsNamed(t *testing.T) {
	r := newRig(t, 2, func(o *rigOpts) {
		o.RetriesAllDown = 1
		o.Layer = func(child policy.Policy) policy.Policy { return onlyFirst{child} }
	})
	r.down(0)
	_, _, err := r.cl.Connect(context.Background(), nil)
	if err == nil || !strings.Contains(err.Error(), "H2:3306: not tried (ignored by a policy layer (mysqlfailover.WithPolicy))") {
		t.Fatalf("err %v", err)
	}
}

// onlyFirst ignores every host but the first.
type onlyFirst struct{ policy.Policy }

func (p onlyFirst) Distance(h policy.Host) policy.Distance {
	if h.Index > 0 {
		return policy.Ignored
	}
	return p.Policy.Distance(h)
}

// TestPreferStandbyLeavesLastResortByTheFallBackRules: a prefer-standby pool that had to
// take the primary looks for a standby again when fall-back is due, even though it is on
// the primary; a failed search restarts the clocks.
func TestPreferStandbyLeavesLastResortByTheFallBackRules(t *testing.T) {
	r := roleRig(t, attrs.PreferStandby, nil)
	r.net.SetReadOnly(1, true)
	r.net.SetReadOnly(2, true)
	r.down(1, 2)
	l := r.connect()
	defer func() { _ = l.c.Close() }()
	if l.host != 0 || r.cl.Home(0) {
		t.Fatalf("on H%d, home %v; want H1 as a last resort, not home", l.host+1, r.cl.Home(0))
	}
	r.clock.Advance(30 * time.Second)
	if c, h, err := r.cl.TryFallBack(context.Background(), nil); c != nil || err == nil {
		t.Fatalf("search with both standbys down: H%d, %v; want a failure", h+1, err)
	}
	if r.cl.FallBackDue() || r.cl.Active() != 0 {
		t.Fatal("a failed search did not restart the clocks, or moved the pool")
	}
	r.up(2)
	r.clock.Advance(30 * time.Second)
	c, h, err := r.cl.TryFallBack(context.Background(), nil)
	if err != nil || h != 2 || r.cl.Active() != 2 || !r.cl.Home(2) {
		t.Fatalf("search with H3 back: H%d, %v, active H%d; want H3, home", h+1, err, r.cl.Active()+1)
	}
	_ = c.Close()
	if n := len(r.events(failover.EventFallBack)); n != 1 {
		t.Errorf("%d fall-back events, want 1", n)
	}
}

// TestStandbyTargetHasNoFallBackToTheWriter: with targetSessionAttrs=standby any standby
// is home: after moving from H2 to H3 the pool never tries to return, and in particular
// never probes the primary, which is a writer.
func TestStandbyTargetHasNoFallBackToTheWriter(t *testing.T) {
	r := roleRig(t, attrs.Standby, nil)
	r.net.SetReadOnly(1, true)
	r.net.SetReadOnly(2, true)
	l := r.connect() // \H1 /H2
	defer func() { _ = l.c.Close() }()
	r.down(1)
	l.fail()
	if l.host != 2 {
		t.Fatalf("on H%d, want H3", l.host+1)
	}
	r.up(1)
	r.clock.Advance(time.Hour)
	if r.cl.FallBackDue() {
		t.Error("fall-back due on a standby with a standby target")
	}
	if got := r.history(); got != `\H1 /H2 /H3` {
		t.Errorf("history %q: the primary must be skipped in the failover walk (fall-back enabled, not due)", got)
	}
}

// TestStandbyTargetReturnsToLocalDC: with localDC a standby pool on a remote standby
// returns to a local one by the fall-back rules.
func TestStandbyTargetReturnsToLocalDC(t *testing.T) {
	r := newRig(t, 4, func(o *rigOpts) {
		o.TargetSessionAttrs = attrs.Standby
		o.labels("dc1", "dc1", "dc2", "dc2")
		o.LocalDC, o.UsedHostsPerRemoteDC = "dc1", 1
	})
	for i := 1; i < 4; i++ {
		r.net.SetReadOnly(i, true)
	}
	l := r.connect()
	defer func() { _ = l.c.Close() }()
	if l.host != 1 {
		t.Fatalf("on H%d, want H2 (the local standby)", l.host+1)
	}
	r.down(1)
	l.fail()
	if l.host != 2 || r.cl.Home(2) {
		t.Fatalf("on H%d (home %v), want remote H3, not home", l.host+1, r.cl.Home(2))
	}
	r.up(1)
	r.clock.Advance(30 * time.Second)
	c, h, err := r.cl.TryFallBack(context.Background(), nil)
	if err != nil || h != 1 {
		t.Fatalf("fall-back: H%d, %v; want H2", h+1, err)
	}
	_ = c.Close()
	if n := len(r.net.Conns(3)); n != 0 {
		t.Errorf("H4 (beyond usedHostsPerRemoteDC) got %d connections", n)
	}
}

// A prefer-standby pool that leaves a remote standby for a local writer as a
// last resort (no standby answers) is not home there: the fall-back clocks make it look
// for a local standby again, and it returns to one once it is back. (It used to take
// the writer for home, since the last-resort flag was only set when leaving home.)
func TestPreferStandbyLastResortAfterARemoteStandby(t *testing.T) {
	r := newRig(t, 3, func(o *rigOpts) {
		o.TargetSessionAttrs = attrs.PreferStandby
		o.labels("dc1", "dc1", "dc2")
		o.LocalDC, o.UsedHostsPerRemoteDC = "dc1", 1
	})
	r.net.SetReadOnly(1, true)
	r.net.SetReadOnly(2, true)
	r.down(1) // the local standby
	l := r.connect()
	defer func() { _ = l.c.Close() }()
	if l.host != 2 || r.cl.Home(2) {
		t.Fatalf("on H%d (home %v), want the remote standby H3, not home", l.host+1, r.cl.Home(2))
	}
	r.down(2)
	l.fail() // no standby answers: H1, the local writer, as a last resort
	if l.host != 0 {
		t.Fatalf("on H%d after H3 failed, want H1 as a last resort (%s)", l.host+1, r.history())
	}
	if r.cl.Home(0) {
		t.Fatal("the last resort H1 counts as home: the pool would never look for a standby again")
	}
	r.up(1)
	r.clock.Advance(30 * time.Second)
	if !r.cl.FallBackDue() {
		t.Fatal("no fall-back due 30 s after taking the last resort")
	}
	c, h, err := r.cl.TryFallBack(context.Background(), nil)
	if err != nil || h != 1 || !r.cl.Home(1) {
		t.Fatalf("fall-back: H%d, %v; want the local standby H2, home", h+1, err)
	}
	_ = c.Close()
}

// A writer in backoff is still tried by a new connection when no other host of the plan
// qualifies (the standbys answer, but are the wrong role): backoff spares the pool a dead
// host's cost only while another host can serve it. (A new user's trial: writes came back
// up to 4.7 s after the restarted writer answered, every failure saying "not tried".)
func TestBackoffDoesNotHideTheOnlyWriter(t *testing.T) {
	r := roleRig(t, attrs.ReadWrite, nil)
	r.net.SetReadOnly(1, true)
	r.net.SetReadOnly(2, true)
	r.connect().c.Close()
	r.down(0)
	for range 3 {
		if _, _, err := r.cl.Connect(context.Background(), nil); err == nil {
			t.Fatal("Connect with the writer down: no error")
		}
	}
	if st := r.stat(0); st.RetryAt.IsZero() {
		t.Fatalf("H1 not in backoff after failing: %+v", st)
	}
	r.up(0)
	c, h, err := r.cl.Connect(context.Background(), nil)
	if err != nil || h != 0 {
		t.Fatalf("Connect after the writer came back (in backoff, the standbys unfit): H%d %v, want H1; history %s", h+1, err, r.history())
	}
	c.Close()
}
