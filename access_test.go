package mysqlfailover_test

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"
	"testing"

	"github.com/mysqlfailover/mysqlfailover"
)

// Wrappers as the instrumentation libraries write them: one with an unwrap method
// (XSAM/otelsql's Raw), one that keeps the wrapped connection in an unexported field of a
// struct passed by value (ngrok/sqlmw), one by pointer with the field not first
// (luna-duclos/instrumentedsql).
type rawWrapper struct{ sqldriver.Conn }

func (w *rawWrapper) Prepare(string) (sqldriver.Stmt, error) { return nil, nil }
func (w *rawWrapper) Close() error                           { return nil }
func (w *rawWrapper) Begin() (sqldriver.Tx, error)           { return nil, nil }

func (w *rawWrapper) Raw() sqldriver.Conn { return w.Conn }

type valueWrapper struct {
	hooks  int // a field before the wrapped connection, as in the real wrappers
	parent sqldriver.Conn
}

func (valueWrapper) Prepare(string) (sqldriver.Stmt, error) { return nil, nil }
func (valueWrapper) Close() error                           { return nil }
func (valueWrapper) Begin() (sqldriver.Tx, error)           { return nil, nil }

type pointerWrapper struct {
	name   string // fields before the wrapped connection, as in the real wrappers
	opts   *int
	parent sqldriver.Conn
}

func (*pointerWrapper) Prepare(string) (sqldriver.Stmt, error) { return nil, nil }
func (*pointerWrapper) Close() error                           { return nil }
func (*pointerWrapper) Begin() (sqldriver.Tx, error)           { return nil, nil }

// The proxy connection is reached from (*sql.Conn).Raw, also behind wrappers,
// and the Connector from a *sql.DB.
func TestConnOfAndConnectorOf(t *testing.T) {
	p := newPool(t, 2, "")
	ctx := context.Background()
	sc, err := p.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer sc.Close()
	var proxy sqldriver.Conn
	_ = sc.Raw(func(dc any) error { proxy, _ = dc.(sqldriver.Conn); return nil })
	for name, v := range map[string]any{
		"bare":                      proxy,
		"Raw method":                &rawWrapper{proxy},
		"unexported field, value":   valueWrapper{parent: proxy},
		"unexported field, pointer": &pointerWrapper{parent: proxy},
		"three deep":                &rawWrapper{valueWrapper{parent: &pointerWrapper{parent: proxy}}},
	} {
		c, ok := mysqlfailover.ConnOf(v)
		if !ok || c.Host() != "H1:3306" || c.ReadOnly() {
			t.Errorf("%s: ConnOf = %v, %v, want the proxy on H1", name, c, ok)
		}
	}
	for name, v := range map[string]any{
		"nil": nil, "a string": "x", "an empty wrapper": valueWrapper{}, "a nil pointer": (*pointerWrapper)(nil),
		"a loop": loop(),
	} {
		if _, ok := mysqlfailover.ConnOf(v); ok {
			t.Errorf("%s: ConnOf found a connection", name)
		}
	}

	c, err := mysqlfailover.ConnectorOf(ctx, p.db)
	if err != nil || c != p.c {
		t.Fatalf("ConnectorOf = %p, %v; want the pool's connector %p", c, err, p.c)
	}
	if s := c.Stats(); s.Active != "H1:3306" {
		t.Fatalf("Stats().Active = %q", s.Active)
	}
	other := sql.OpenDB(notOurs{})
	defer other.Close()
	if _, err := mysqlfailover.ConnectorOf(ctx, other); err == nil {
		t.Fatal("ConnectorOf found a Connector behind another driver")
	}
}

// loop is a wrapper that unwraps to itself: ConnOf gives up after eight.
func loop() any {
	w := &rawWrapper{}
	w.Conn = w
	return w
}

type notOurs struct{}

func (notOurs) Connect(context.Context) (sqldriver.Conn, error) { return valueWrapper{}, nil }
func (notOurs) Driver() sqldriver.Driver                        { return nil }
