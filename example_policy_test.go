package mysqlfailover_test

import (
	"cmp"
	"database/sql"
	"fmt"
	"slices"
	"time"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/policy"
)

// lowestConnectTimeFirst is a policy layer that tries the hosts that usually connect
// fastest first. It keeps its child's Distance (so localDC still decides which hosts are
// local, remote or ignored) and reorders the child's Plan, stably, by distance and then
// by policy.Host.ConnectTime; a host that never connected (ConnectTime 0) goes
// after the measured ones of its distance.
type lowestConnectTimeFirst struct{ child policy.Policy }

func (p lowestConnectTimeFirst) Distance(h policy.Host) policy.Distance {
	return p.child.Distance(h)
}

func (p lowestConnectTimeFirst) Plan(w *policy.Walk, dst []int) []int {
	start := len(dst)
	dst = p.child.Plan(w, dst)
	key := func(h int) (policy.Distance, time.Duration) {
		if h < 0 || h >= len(w.Hosts) {
			return policy.Ignored, 0 // the Cluster drops it anyway
		}
		t := w.Hosts[h].ConnectTime
		if t == 0 {
			t = time.Duration(1<<63 - 1) // unknown: last
		}
		return p.Distance(w.Hosts[h]), t
	}
	slices.SortStableFunc(dst[start:], func(a, b int) int {
		da, ta := key(a)
		db, tb := key(b)
		return cmp.Or(cmp.Compare(da, db), cmp.Compare(ta, tb))
	})
	return dst
}

// A user policy layer plugged in with mysqlfailover.WithPolicy on top of the layers the DSN
// builds (localDC here). The pool calls it during walks only; this example calls its
// Plan directly, for a walk with fixed connect times, to show the order it gives.
func Example_lowestConnectTimeFirst() {
	cfg, err := dsn.Parse("app:pw@tcp(db1:3306;dc=east,db2:3306;dc=east,db3:3306;dc=east,db4:3306;dc=west,db5:3306;dc=east)/shop" +
		"?localDC=east&usedHostsPerRemoteDC=1")
	if err != nil {
		fmt.Println(err)
		return
	}
	var layer policy.Policy
	c, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithPolicy(func(child policy.Policy) policy.Policy {
		layer = lowestConnectTimeFirst{child}
		return layer
	}))
	if err != nil {
		fmt.Println(err)
		return
	}
	db := sql.OpenDB(c) // no connection is opened until one is needed
	defer db.Close()

	w := &policy.Walk{
		Hosts: []policy.Host{
			{Index: 0, Addr: "db1:3306", DC: "east", ConnectTime: 30 * time.Millisecond},
			{Index: 1, Addr: "db2:3306", DC: "east"}, // never connected yet
			{Index: 2, Addr: "db3:3306", DC: "east", ConnectTime: 4 * time.Millisecond},
			{Index: 3, Addr: "db4:3306", DC: "west", ConnectTime: 2 * time.Millisecond},
			{Index: 4, Addr: "db5:3306", DC: "east", ConnectTime: 4 * time.Millisecond},
		},
		Primary: 0,
		Start:   0,
		Failed:  -1,
	}
	for _, h := range layer.Plan(w, nil) {
		info := w.Hosts[h]
		t := "unknown"
		if info.ConnectTime > 0 {
			t = info.ConnectTime.String()
		}
		fmt.Println(info.Addr, layer.Distance(info), t)
	}
	// Output:
	// db3:3306 local 4ms
	// db5:3306 local 4ms
	// db1:3306 local 30ms
	// db2:3306 local unknown
	// db4:3306 remote 2ms
}
