package failover

import (
	"context"
)

// ProvidedHost is one host of a HostListProvider's list.
type ProvidedHost struct {
	// Addr is host:port ("db1:3306", "10.0.0.1:3306", "[::1]:3306"): an IPv6 literal in
	// brackets, a port in 1..65535. Unlike in a DSN a missing port is an error.
	Addr string
	// DC is the host's data-centre label, "" for none. Same rule as DSN labels: 1..64
	// bytes of A-Z a-z 0-9 '.' '_' '-', case-sensitive.
	DC string
}

// HostListProvider supplies the host list at run time, primary first (Hosts[0] takes
// the role of a DSN's first host), in place of hostsURL: see
// mysqlfailover.WithHostListProvider. The pool polls it every checkInterval with a
// context that bounds the call to the fixed probe bound (max(checkInterval, 500ms), at most
// hostTimeout), and checks each list as strictly as a hostsURL document (see Host lists
// in the package documentation). A provider that fails, or returns an invalid list,
// never empties the pool: the pool keeps its last good list and reports the failure
// (EventHostList, the logger).
//
// Implementations must honour ctx, must be safe for use from several goroutines, and
// must keep any credential they use out of their errors.
type HostListProvider interface {
	// Hosts returns the current list, primary first.
	Hosts(ctx context.Context) ([]ProvidedHost, error)
}
