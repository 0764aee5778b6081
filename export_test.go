package mysqlfailover

import (
	sqldriver "database/sql/driver"

	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// OpenLinger is openLinger, for the external tests.
const OpenLinger = openLinger

// WithClock and WithDial are test seams: a fake clock and fake hosts.
func WithClock(c cluster.Clock) Option { return func(o *options) { o.clock = c } }

func WithDial(d cluster.DialFunc) Option { return func(o *options) { o.dial = d } }

// WithSockets is a test seam: what the fake hosts' sockets count (see cluster.Env.Socket).
func WithSockets(f func(sqldriver.Conn) *cluster.Socket) Option {
	return func(o *options) { o.socket = f }
}

// SetOpenSeams makes the Connectors that Driver.Open makes from now on use clock (also
// for openLinger) and opts, until restore is called.
func SetOpenSeams(clock cluster.Clock, opts ...Option) (restore func()) {
	r := openShared
	r.mu.Lock()
	oldClock, oldOpts := r.clock, r.opts
	r.clock, r.opts = clock, opts
	r.mu.Unlock()
	return func() {
		r.mu.Lock()
		r.clock, r.opts = oldClock, oldOpts
		r.mu.Unlock()
	}
}

// SharedConnectors returns how many Connectors Driver.Open shares now.
func SharedConnectors() int { return openShared.count() }
