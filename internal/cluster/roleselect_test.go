package cluster_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// A host's probes read its role with RoleQuery once, then with the learned SELECT of the
// variables the server showed, until DefaultRoleRelearn has passed; a learned query that
// names a variable the server lacks (1193) is forgotten at once, and RoleQuery answers.
func TestRoleVarsLearnsTheSelect(t *testing.T) {
	net := fake.NewNet(t, 1)
	net.SetReadOnly(0, true)
	conn, err := net.Dial(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var learned cluster.RoleLearner
	t0 := time.Unix(1000, 0)
	read := func(at time.Duration) failover.Role {
		t.Helper()
		st, err := learned.Read(context.Background(), conn, t0.Add(at))
		if err != nil {
			t.Fatal(err)
		}
		return st.Role
	}
	if r := read(0); r != failover.RoleStandby {
		t.Fatalf("role %v, want standby", r)
	}
	sel := learned.Query()
	if !strings.HasPrefix(sel, "SELECT @@global.read_only") {
		t.Fatalf("learned %q, want a SELECT of @@global.read_only and the rest", sel)
	}
	checks := net.RoleChecks(0)
	net.SetReadOnly(0, false)
	if r := read(cluster.DefaultRoleRelearn - time.Millisecond); r != failover.RolePrimary || learned.Query() != sel {
		t.Fatalf("role %v with the learned query %q, want primary with the same query", r, learned.Query())
	}
	if n := net.RoleChecks(0); n != checks+1 {
		t.Fatalf("%d role checks, want one more", n-checks)
	}
	checks = net.RoleChecks(0)
	read(cluster.DefaultRoleRelearn)
	if n := net.RoleChecks(0); n != checks+1 || learned.Query() != sel {
		t.Fatalf("%d role checks past DefaultRoleRelearn, learned %q; want RoleQuery once, and the same query learned again", n-checks, learned.Query())
	}
	learned.Set([]string{"read_only", "super_read_only"}, t0.Add(cluster.DefaultRoleRelearn))
	if r := read(cluster.DefaultRoleRelearn + time.Second); r != failover.RolePrimary {
		t.Fatalf("role %v after the learned query failed with 1193, want primary (RoleQuery's answer)", r)
	}
	if got := learned.Query(); got != sel {
		t.Fatalf("learned %q after 1193, want it learned again from RoleQuery (%q)", got, sel)
	}
}

// The learned query selects exactly the variables RoleQuery names: a variable added to
// RoleQuery and not to the learned list would be read once per DefaultRoleRelearn only.
func TestRoleSelectNamesRoleQuery(t *testing.T) {
	names := cluster.RoleVarNames()
	for _, n := range names {
		if !strings.Contains(cluster.RoleQuery, "'"+n+"'") {
			t.Errorf("%s is learned but not in RoleQuery", n)
		}
	}
	if got := strings.Count(cluster.RoleQuery, "'"); got != 2*len(names) {
		t.Errorf("RoleQuery names %d variables, the learned query knows %d", got/2, len(names))
	}
}
