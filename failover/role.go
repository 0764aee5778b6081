package failover

// Role is what a server's global settings say it is, as the role check of
// targetSessionAttrs reads them (see Roles in the package documentation). MySQL and
// MariaDB have no recovery mode: an orchestrator marks replicas with the global read_only
// (MySQL also with super_read_only), and that is what standby means here.
type Role int

const (
	// RoleUnknown: not checked yet.
	RoleUnknown Role = iota
	// RolePrimary: read_only and super_read_only OFF, and transactions start read-write
	// (global transaction_read_only, tx_read_only before MySQL 8.0 and MariaDB 11.1, OFF).
	RolePrimary
	// RoleReadOnlyPrimary: read_only and super_read_only OFF, but the global
	// transaction_read_only is ON: every transaction starts read-only by default (as
	// PostgreSQL's default_transaction_read_only, which libpq's read-write excludes).
	RoleReadOnlyPrimary
	// RoleStandby: read_only or super_read_only ON (any value other than OFF, for
	// MariaDB 11's NO_LOCK variants too).
	RoleStandby
)

// String returns "unknown", "primary", "primary with transaction_read_only=ON" or
// "standby".
func (r Role) String() string {
	switch r {
	case RolePrimary:
		return "primary"
	case RoleReadOnlyPrimary:
		return "primary with transaction_read_only=ON"
	case RoleStandby:
		return "standby"
	}
	return "unknown"
}
