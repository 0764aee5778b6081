package mysqlfailover

import (
	"sync"
	_ "unsafe" // go:linkname: go-sql-driver's registry of dial functions

	"github.com/go-sql-driver/mysql"
)

// go-sql-driver keeps the functions registered with mysql.RegisterDialContext (and the
// deprecated RegisterDial) in an unexported map, which its connector reads under a read
// lock on every dial when Config.DialFunc is nil (connector.go of v1.10.1: dials[Net]).
// The socket tracker must set Config.DialFunc to see each socket, and go-sql-driver then
// never looks the map up, so the tracker reads it the same way and calls the function
// itself. go-sql-driver exports no lookup; both names have been the same since
// RegisterDialContext appeared (v1.5.0). Should a later go-sql-driver rename them, the
// build fails at link time rather than bypassing a registered dialer silently.

//go:linkname mysqlDials github.com/go-sql-driver/mysql.dials
var mysqlDials map[string]mysql.DialContextFunc

//go:linkname mysqlDialsLock github.com/go-sql-driver/mysql.dialsLock
var mysqlDialsLock sync.RWMutex

// registeredDial returns the function registered with mysql.RegisterDialContext for
// network, or nil, as go-sql-driver looks it up at each dial.
func registeredDial(network string) mysql.DialContextFunc {
	mysqlDialsLock.RLock()
	defer mysqlDialsLock.RUnlock()
	return mysqlDials[network]
}
