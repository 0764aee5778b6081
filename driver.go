package mysqlfailover

import (
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
// one Connector and thus one shared failover state. A Connector's Driver method returns
// a drv that names it (c), so that sql.DB.Driver leads to the pool's Connector without
// a connection (connectorOfDB); the registered drv has none.
type drv struct{ c *Connector }

// Open parses name and returns one connection: what wrappers that call only Driver.Open
// get (sql.Open calls OpenConnector instead, once per sql.DB). The connections Open
// returns for one DSN string share one Connector, so that the pool they form moves as
// one, and checkInterval and hostsURL work; the Connector lives while any of them is
// open, and 5 s after the last one closes (a connection opened meanwhile keeps
// it), then it is closed: its monitor stops and its probe connections close, since a
// wrapper's sql.DB.Close never reaches it. ConnectorOf finds it; its Close ends it at
// once, and the next Open makes a new one. It returns the dsn package's error for a
// bad DSN, NewConnector's for a bad configuration, and a *failover.NoHostAvailableError
// when no host answers.
func (drv) Open(name string) (sqldriver.Conn, error) {
	return openShared.open(name)
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
