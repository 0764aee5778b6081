package mysqlfailover

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"

	"github.com/mysqlfailover/mysqlfailover/dsn"
)

// driverName is the name the driver is registered under with database/sql.
const driverName = "mysqlfailover"

func init() {
	sql.Register(driverName, drv{})
}

// drv is the database/sql driver. database/sql uses OpenConnector, so one sql.DB has
// one Connector and thus one shared failover state.
type drv struct{}

// Open parses name and returns one connection from a Connector of its own: what
// wrappers that call only Driver.Open get. sql.Open calls OpenConnector instead, once
// per sql.DB. It returns the dsn package's error for a bad DSN, and a
// *failover.NoHostAvailableError when no host answers. The Connector of a lone
// connection runs no monitor (checkInterval and hostsURL are ignored): nothing would
// ever stop it.
func (drv) Open(name string) (sqldriver.Conn, error) {
	cfg, err := dsn.Parse(name)
	if err != nil {
		return nil, err
	}
	cfg.CheckInterval, cfg.HostsURL, cfg.HostsToken = 0, "", ""
	c, err := NewConnector(cfg)
	if err != nil {
		return nil, err
	}
	return c.Connect(context.Background())
}

// OpenConnector parses name (see package dsn) and returns a *Connector.
func (drv) OpenConnector(name string) (sqldriver.Connector, error) {
	cfg, err := dsn.Parse(name)
	if err != nil {
		return nil, err
	}
	return NewConnector(cfg)
}

var (
	_ sqldriver.Driver        = drv{}
	_ sqldriver.DriverContext = drv{}
)
