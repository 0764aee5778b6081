package mysqlfailover_test

import (
	"context"
	"testing"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/fake"
)

// TestWithEventHookTwice: every hook given receives every event, in the order the
// options were given (a user's hook and a metrics collector's); a nil hook adds nothing.
func TestWithEventHookTwice(t *testing.T) {
	n := fake.NewNet(t, 2)
	cfg, err := dsn.Parse("app:" + password + "@tcp(H1:3306,H2:3306)/shop")
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	hook := func(name string) func(failover.Event) {
		return func(e failover.Event) {
			if e.Kind == failover.EventConnect {
				order = append(order, name)
			}
		}
	}
	c, err := mysqlfailover.NewConnector(cfg, mysqlfailover.WithDial(n.Dial), mysqlfailover.WithClock(fake.NewClock()),
		mysqlfailover.WithEventHook(hook("a")), mysqlfailover.WithEventHook(nil), mysqlfailover.WithEventHook(hook("b")))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cn, err := c.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	_ = cn.Close()
	if len(order) != 2 || order[0] != "a" || order[1] != "b" {
		t.Fatalf("hooks called %v for one connection attempt, want [a b]", order)
	}
}
