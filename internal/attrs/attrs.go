// Package attrs names the values of the DSN option targetSessionAttrs (Config.TargetSessionAttrs,
// a plain string; the empty string means Any in a hand-built Config). Which hosts each value
// accepts is said once, in package failover's section Roles.
package attrs

// The values, as the DSN writes them.
const (
	Any           = "any"
	ReadWrite     = "read-write"
	ReadOnly      = "read-only"
	Primary       = "primary"
	Standby       = "standby"
	PreferStandby = "prefer-standby"
)

// All lists the values in the order messages and the documentation list them.
var All = []string{Any, ReadWrite, ReadOnly, Primary, Standby, PreferStandby}
