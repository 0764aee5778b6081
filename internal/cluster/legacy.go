package cluster

// Old names, kept for the code outside this package that still uses them while issue 10
// lands: each is Deprecated, and goes once its last user has moved.

import (
	"fmt"
	"net"
	"strconv"

	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
)

// RetryPause is the old name of DefaultPassPause.
//
// Deprecated: use DefaultPassPause. Kept for integration/all_down_test.go.
const RetryPause = DefaultPassPause

// BackoffMax is the old name of DefaultBackoffMax.
//
// Deprecated: use DefaultBackoffMax. Kept for integration/controlled_test.go.
const BackoffMax = DefaultBackoffMax

// Options is the configuration NewCluster took before issue 10, reduced to the fields
// that its last callers set.
//
// Deprecated: use New with a *dsn.Config (and Env for the rest). Kept for the test rigs
// of internal/conn (helpers_test.go, role_test.go) and internal/stmt (helpers_test.go)
// until they build a *dsn.Config; remove it with NewCluster then.
type Options struct {
	Hosts                    []string               // host:port addresses; Hosts[0] is the primary
	RetriesAllDown           int                    // dsn.Config.RetriesAllDown (count)
	SecondsBeforeRetryMaster int                    // dsn.Config.SecondsBeforeRetryMaster (seconds)
	QueriesBeforeRetryMaster int                    // dsn.Config.QueriesBeforeRetryMaster (count)
	Target                   dsn.TargetSessionAttrs // dsn.Config.TargetSessionAttrs
	Dial                     DialFunc               // Env.Dial
	Clock                    Clock                  // Env.Clock
	OnEvent                  func(failover.Event)   // Env.OnEvent
}

// NewCluster builds the *dsn.Config that opts describe (every other option 0) and
// returns New's Cluster over it.
//
// Deprecated: use New. See Options.
func NewCluster(opts Options) (*Cluster, error) {
	cfg := &dsn.Config{
		RetriesAllDown:           opts.RetriesAllDown,
		SecondsBeforeRetryMaster: opts.SecondsBeforeRetryMaster,
		QueriesBeforeRetryMaster: opts.QueriesBeforeRetryMaster,
		TargetSessionAttrs:       opts.Target,
	}
	for _, a := range opts.Hosts {
		name, port, err := net.SplitHostPort(a)
		if err != nil {
			return nil, fmt.Errorf("mysqlfailover: host %q: %w", a, err)
		}
		n, err := strconv.Atoi(port)
		if err != nil {
			return nil, fmt.Errorf("mysqlfailover: host %q: bad port", a)
		}
		cfg.Hosts = append(cfg.Hosts, dsn.Host{Name: name, Port: n})
	}
	return New(cfg, Env{Dial: opts.Dial, Clock: opts.Clock, OnEvent: opts.OnEvent})
}
