package dsn

import "errors"

// Sentinel errors. Every error that Parse and Validate return for a problem found
// by this package wraps exactly one of them, so callers can branch with errors.Is
// while the message itself names the offending key, value or host. Errors from
// go-sql-driver's own DSN parser are wrapped as they are (errors.Is and errors.As
// reach them) and wrap none of these.
var (
	// ErrSyntax: the DSN does not have the shape
	// [user[:password]@][net[(addrlist)]]/dbname[?param=value&...], as
	// go-sql-driver would also reject it (missing '/', unterminated address
	// list); one of our parameters has no "=value"; the DSN has
	// go-sql-driver's removed strict parameter (go-sql-driver would panic on
	// it); or parsing panicked (Parse recovers, the panic is a bug).
	ErrSyntax = errors.New("dsn: malformed DSN")

	// ErrNotTCP: the network cannot carry the host list: unix with more than
	// one socket (a socket names one local server: no failover), a packet
	// network (udp, ip, unixgram, ...), or a "network" that is not a name
	// (usually a DSN whose '@' is missing). See Networks.
	ErrNotTCP = errors.New("dsn: the network cannot carry this host list")

	// ErrInvalidHost: a host list entry is empty, has a bad port (not a decimal
	// in 1..65535), unbalanced brackets, an unbracketed IPv6 literal, a
	// character that cannot be part of a host name, a bad attribute (an
	// unknown key, no "=", "dc" twice, or a dc label that is empty, too long
	// or has a character outside A-Z a-z 0-9 . _ -), or repeats an earlier
	// entry (whatever the labels); or Config.Hosts is empty.
	ErrInvalidHost = errors.New("dsn: invalid host")

	// ErrInvalidOption: one of the failover options has a bad value, is given
	// twice (or with its alias) with different values, or hides in
	// mysql.Config.Params; or an unknown key is one of them misspelled (in
	// case, or, for keys of 8 characters or more, by one or two edits) or one
	// of go-sql-driver's keys in another case; or a Config field is out of range;
	// or localDC matches no host's dc label, or usedHostsPerRemoteDC > 0 lacks
	// localDC or labelled hosts; or checkInterval is below 10ms but not 0;
	// or hostsURL is not an http(s) URL with a host, has user info, is plain
	// http to a non-loopback host without hostsAllowHTTP, or lacks
	// checkInterval; or hostsToken is not a bearer token or lacks hostsURL;
	// or maxReplicaLag > 0 lacks replicaReads or checkInterval, causalReads
	// local or global lacks replicaReads, or causalReadsTimeout is not > 0;
	// or the Config or its MySQL is nil.
	ErrInvalidOption = errors.New("dsn: invalid failover option")
)

// dsnError carries a full message (which already starts with "dsn: ") and the
// sentinel it belongs to. fmt.Errorf("%w") would repeat the sentinel's text.
type dsnError struct {
	msg  string
	kind error
}

func (e *dsnError) Error() string { return e.msg }
func (e *dsnError) Unwrap() error { return e.kind }

func newError(kind error, msg string) error { return &dsnError{msg: msg, kind: kind} }
