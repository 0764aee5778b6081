package mysqlfailover

import "github.com/mysqlfailover/mysqlfailover/internal/cluster"

// WithClock and WithDial are test seams: a fake clock and fake hosts.
func WithClock(c cluster.Clock) Option { return func(o *options) { o.clock = c } }

func WithDial(d cluster.DialFunc) Option { return func(o *options) { o.dial = d } }
