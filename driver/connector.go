package driver

import (
	"context"
	sqldriver "database/sql/driver"
	"fmt"

	"github.com/go-sql-driver/mysql"
	"github.com/mysqlfailover/mysqlfailover/conn"
	"github.com/mysqlfailover/mysqlfailover/dsn"
	"github.com/mysqlfailover/mysqlfailover/failover"
)

// Connector is the driver.Connector of one pool: it owns the failover.Cluster that every
// connection it opens shares. It implements io.Closer; sql.DB.Close calls Close.
type Connector struct {
	cfg     *dsn.Config
	cluster *failover.Cluster
}

// Option configures a Connector beyond the DSN.
type Option func(*options)

type options struct {
	onEvent func(failover.Event)
	clock   failover.Clock
	dial    failover.DialFunc
	layers  []func(failover.Policy) failover.Policy
}

// WithEventHook sets a function that receives every failover.Event: each connection
// attempt (host, ok or error), each host failure, switch and fall-back. It is called
// synchronously, possibly from several goroutines at once, so it must be fast and must
// not block. Events never contain a password.
func WithEventHook(fn func(failover.Event)) Option {
	return func(o *options) { o.onEvent = fn }
}

// WithPolicy adds a layer on top of the host policy, as the DataStax Java driver's
// TokenAwarePolicy wraps a child policy: layer receives the policy built from the DSN
// (failover.Rotation, then failover.DCAware with localDC, then failover.RoleAware with
// targetSessionAttrs) and returns the policy to use, which typically rates hosts with the
// child's Distance and reorders the child's Plan (see failover.Policy; the example
// "lowest connect time first" is in this package's tests). Several WithPolicy options
// stack in the order given, the last one outermost. A layer that returns nil makes
// NewConnector fail.
func WithPolicy(layer func(child failover.Policy) failover.Policy) Option {
	return func(o *options) { o.layers = append(o.layers, layer) }
}

// NewConnector validates a copy of cfg (the caller's struct is never changed) and returns
// a Connector for sql.OpenDB. No connection is opened until database/sql asks for one.
// It returns cfg.Validate's error for a bad configuration and an error when a host's
// go-sql-driver configuration is rejected (for example an unknown TLS config name).
func NewConnector(cfg *dsn.Config, opts ...Option) (*Connector, error) {
	if cfg == nil {
		return nil, fmt.Errorf("mysqlfailover: nil *dsn.Config")
	}
	cfg = cfg.Clone()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	dial := o.dial
	if dial == nil {
		hosts := make([]sqldriver.Connector, len(cfg.Hosts))
		for i := range cfg.Hosts {
			c, err := mysql.NewConnector(cfg.HostConfig(i))
			if err != nil {
				return nil, fmt.Errorf("mysqlfailover: host %s: %w", cfg.Hosts[i].Addr(), err)
			}
			hosts[i] = c
		}
		dial = func(ctx context.Context, i int) (sqldriver.Conn, error) {
			return hosts[i].Connect(ctx)
		}
	}
	addrs := make([]string, len(cfg.Hosts))
	dcs := make([]string, len(cfg.Hosts))
	for i, h := range cfg.Hosts {
		addrs[i], dcs[i] = h.Addr(), h.DC
	}
	var layer func(failover.Policy) failover.Policy
	if len(o.layers) > 0 {
		layer = func(p failover.Policy) failover.Policy {
			for _, l := range o.layers {
				if p = l(p); p == nil {
					return nil
				}
			}
			return p
		}
	}
	cl, err := failover.NewCluster(failover.Options{
		Hosts:                    addrs,
		RetriesAllDown:           cfg.RetriesAllDown,
		SecondsBeforeRetryMaster: cfg.SecondsBeforeRetryMaster,
		QueriesBeforeRetryMaster: cfg.QueriesBeforeRetryMaster,
		HostTimeout:              cfg.HostTimeout,
		Dial:                     dial,
		Clock:                    o.clock,
		OnEvent:                  o.onEvent,
		DCs:                      dcs,
		LocalDC:                  cfg.LocalDC,
		UsedHostsPerRemoteDC:     cfg.UsedHostsPerRemoteDC,
		Target:                   cfg.TargetSessionAttrs,
		Layer:                    layer,
	})
	if err != nil {
		return nil, err
	}
	return &Connector{cfg: cfg, cluster: cl}, nil
}

// Connect implements driver.Connector: it opens a connection on the pool's host (the
// primary unless the pool has failed over), walking the host list as needed within ctx.
// It never returns driver.ErrBadConn (database/sql would repeat the whole walk); when no
// host answers it returns a *failover.NoHostAvailableError naming every host and its
// cause, and a data error from a host (access denied, unknown database) ends the walk and
// is returned wrapped with the host. After Close it returns failover.ErrClosed.
func (c *Connector) Connect(ctx context.Context) (sqldriver.Conn, error) {
	write := c.cfg.TargetSessionAttrs.WriteIntent()
	cn, err := conn.Open(ctx, c.cluster, conn.Config{
		ReadOnly: c.cfg.ReadOnly,
		// A host that passed the read-write or primary role check is a writer,
		// wherever it is in the list: failOverReadOnly does not apply.
		FailOverReadOnly: c.cfg.FailOverReadOnly && !write,
		DBName:           c.cfg.MySQL.DBName,
		WriteIntent:      write,
		MultiStatements:  c.cfg.MySQL.MultiStatements,
	})
	if err != nil {
		return nil, err
	}
	return cn, nil
}

// Driver implements driver.Connector.
func (c *Connector) Driver() sqldriver.Driver { return Driver{} }

// Close stops the connector: later Connect calls fail with failover.ErrClosed.
// Connections already open are closed by database/sql. The connector starts no
// goroutines, so none outlives it. Close always returns nil.
func (c *Connector) Close() error {
	c.cluster.Close()
	return nil
}

// String describes the connector without its password.
func (c *Connector) String() string { return "mysqlfailover.Connector(" + c.cfg.String() + ")" }

var _ sqldriver.Connector = (*Connector)(nil)
