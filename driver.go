// Package driver registers the "mysqlfailover" database/sql driver and provides its
// Connector.
//
// Importing the package for its side effect registers the driver:
//
//	import _ "github.com/mysqlfailover/mysqlfailover/driver"
//
//	db, err := sql.Open("mysqlfailover", "app:pw@tcp(db1:3306,db2:3306,db3:3306)/shop?readTimeout=2s")
//
// or, with a Config built in code:
//
//	c, err := driver.NewConnector(cfg)
//	db := sql.OpenDB(c) // db.Close closes the connector
//
// The first host is the primary and the rest are secondaries in order of preference.
// Every connection database/sql pools is a proxy around one go-sql-driver connection at a
// time; when that connection fails, the proxy moves to the next host, restores the
// session's read-only state and database, and only then returns the error. All
// connections of one Connector share their failover state, so the pool moves as one, and
// they return to the primary together, at safe points, after secondsBeforeRetryMaster or
// queriesBeforeRetryMaster (with checkInterval > 0: once the primary has passed its
// probes for switchBackDelay). The semantics follow MySQL Connector/J's failover mode
// (FailoverConnectionProxy); the dsn package lists the options.
package mysqlfailover

import (
	"context"
	"database/sql"
	sqldriver "database/sql/driver"

	"github.com/mysqlfailover/mysqlfailover/dsn"
)

// Name is the name the driver is registered under with database/sql.
const Name = "mysqlfailover"

func init() {
	sql.Register(Name, Driver{})
}

// Driver is the database/sql driver. database/sql uses OpenConnector, so one sql.DB has
// one Connector and thus one shared failover state.
type Driver struct{}

// Open parses name and returns one connection from a Connector of its own. Prefer
// sql.Open, which calls OpenConnector once per sql.DB. It returns the dsn package's
// error for a bad DSN, and the failover package's *NoHostAvailableError when no host
// answers. The Connector of a lone connection runs no monitor (checkInterval and
// hostsURL are ignored): nothing would ever stop it.
func (d Driver) Open(name string) (sqldriver.Conn, error) {
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
func (Driver) OpenConnector(name string) (sqldriver.Connector, error) {
	cfg, err := dsn.Parse(name)
	if err != nil {
		return nil, err
	}
	return NewConnector(cfg)
}

var (
	_ sqldriver.Driver        = Driver{}
	_ sqldriver.DriverContext = Driver{}
)
