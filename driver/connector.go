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
}

// WithEventHook sets a function that receives every failover.Event: each connection
// attempt (host, ok or error), each host failure, switch and fall-back. It is called
// synchronously, possibly from several goroutines at once, so it must be fast and must
// not block. Events never contain a password.
func WithEventHook(fn func(failover.Event)) Option {
	return func(o *options) { o.onEvent = fn }
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
	for i, h := range cfg.Hosts {
		addrs[i] = h.Addr()
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
	cn, err := conn.Open(ctx, c.cluster, conn.Config{
		ReadOnly:         c.cfg.ReadOnly,
		FailOverReadOnly: c.cfg.FailOverReadOnly,
		DBName:           c.cfg.MySQL.DBName,
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
