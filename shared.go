package mysqlfailover

import (
	"context"
	sqldriver "database/sql/driver"
	"sync"
	"time"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// openLinger is how long the Connector that Driver.Open shares between the connections
// of one DSN outlives the last of them when nobody closes it (5 s): a connection opened
// meanwhile keeps it, with its failover state and its monitor, so that a pool whose
// connections come and go does not start over each time; after that it is closed
// (its monitor stops and its probe connections close) and forgotten, and the next
// Driver.Open makes a new one.
const openLinger = 5 * time.Second

// sharedConnectors are the Connectors of Driver.Open, one per DSN string, counted by
// the connections open on them (and Opens in progress). The DSN, password included, is
// only a map key: it is never logged or printed.
type sharedConnectors struct {
	mu    sync.Mutex
	byDSN map[string]*sharedConnector
	clock cluster.Clock // nil: the system clock; a test seam, as opts
	opts  []Option
}

// sharedConnector is one entry: its Connector, its count, and while the count is 0 the
// cancel function of the linger that will close it.
type sharedConnector struct {
	reg        *sharedConnectors
	name       string
	c          *Connector
	refs       int
	stopLinger context.CancelFunc
}

// openShared holds the Connectors of Driver.Open.
var openShared = &sharedConnectors{}

// open returns a new connection on name's shared Connector, made on first use.
func (r *sharedConnectors) open(name string) (sqldriver.Conn, error) {
	s, err := r.acquire(name)
	if err != nil {
		return nil, err
	}
	// Connect counts the connection it returns (until its Close); the count taken here
	// only keeps the Connector from its linger meanwhile.
	defer r.release(s)
	return s.c.Connect(context.Background())
}

// ref counts one more user of s (a connection being opened), stopping its linger.
func (r *sharedConnectors) ref(s *sharedConnector) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.refs++
	if s.stopLinger != nil {
		s.stopLinger()
		s.stopLinger = nil
	}
}

// acquire counts one more user of name's Connector, making it if there is none (or
// the last one was closed with Connector.Close), and stops its linger.
func (r *sharedConnectors) acquire(name string) (*sharedConnector, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.byDSN[name]
	if s == nil {
		cfg, err := dsn.Parse(name)
		if err != nil {
			return nil, err
		}
		opts := r.opts
		if r.clock != nil {
			clock := r.clock
			opts = append([]Option{func(o *options) { o.clock = clock }}, opts...)
		}
		c, err := NewConnector(cfg, opts...)
		if err != nil {
			return nil, err
		}
		s = &sharedConnector{reg: r, name: name, c: c}
		c.shared = s
		c.conns.Closed = func() { r.release(s) }
		if r.byDSN == nil {
			r.byDSN = map[string]*sharedConnector{}
		}
		r.byDSN[name] = s
	}
	s.refs++
	if s.stopLinger != nil {
		s.stopLinger()
		s.stopLinger = nil
	}
	return s, nil
}

// release counts one user less; at 0 the linger starts.
func (r *sharedConnectors) release(s *sharedConnector) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s.refs--
	if s.refs > 0 || r.byDSN[s.name] != s {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.stopLinger = cancel
	go r.linger(ctx, s)
}

// linger closes s's Connector after openLinger unless a connection came meanwhile
// (acquire cancels ctx, under r.mu).
func (r *sharedConnectors) linger(ctx context.Context, s *sharedConnector) {
	if r.sleep(ctx, openLinger) != nil {
		return
	}
	r.mu.Lock()
	if ctx.Err() != nil || s.refs > 0 || r.byDSN[s.name] != s {
		r.mu.Unlock()
		return
	}
	delete(r.byDSN, s.name)
	s.stopLinger = nil
	r.mu.Unlock()
	s.c.cluster.Close()
}

// sleep waits d on r.clock (the system clock without one), or until ctx ends (ctx.Err()).
func (r *sharedConnectors) sleep(ctx context.Context, d time.Duration) error {
	clock := r.clock
	if clock == nil {
		clock = cluster.SystemClock
	}
	return clock.Sleep(ctx, d)
}

// forget drops s when its Connector is closed by its user (Connector.Close): the next
// Driver.Open of the DSN makes a new one.
func (r *sharedConnectors) forget(s *sharedConnector) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byDSN[s.name] == s {
		delete(r.byDSN, s.name)
	}
	if s.stopLinger != nil {
		s.stopLinger()
		s.stopLinger = nil
	}
}

// count returns the number of shared Connectors alive.
func (r *sharedConnectors) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.byDSN)
}
