// Package attrs names the values of the DSN option targetSessionAttrs (Config.TargetSessionAttrs,
// a plain string), libpq's and pgx's target_session_attrs: the kind of session a connection
// must get, a host whose session does not qualify being passed over for the next one. The
// empty string means Any in a hand-built Config. Package failover documents the role model;
// the variables named are MySQL's global read_only, super_read_only and
// transaction_read_only (tx_read_only on older servers), the last being the default of
// every new session.
package attrs

const (
	// Any accepts any host that completes the handshake: no check. It is the default.
	Any = "any"
	// ReadWrite accepts a host where read_only, super_read_only and the global
	// transaction_read_only are all OFF: a new session can write.
	ReadWrite = "read-write"
	// ReadOnly accepts a host where read_only or super_read_only is ON, or the global
	// transaction_read_only is ON: a new session cannot write.
	ReadOnly = "read-only"
	// Primary accepts a host where read_only and super_read_only are OFF: a server that
	// takes writes, whatever the global transaction_read_only.
	Primary = "primary"
	// Standby accepts a host where read_only or super_read_only is ON: a replica.
	Standby = "standby"
	// PreferStandby tries the standbys first (as Standby) and takes any host as a last
	// resort, when no standby qualifies.
	PreferStandby = "prefer-standby"
)

// All lists the values in the order messages and the documentation list them.
var All = []string{Any, ReadWrite, ReadOnly, Primary, Standby, PreferStandby}
