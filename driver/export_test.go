package driver

import "github.com/mysqlfailover/mysqlfailover/failover"

// WithClock and WithDial are test seams: a fake clock and fake hosts.
func WithClock(c failover.Clock) Option { return func(o *options) { o.clock = c } }

func WithDial(d failover.DialFunc) Option { return func(o *options) { o.dial = d } }
