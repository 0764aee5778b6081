package cluster

// Server roles for targetSessionAttrs: reading a server's role (ReadRole), which roles a
// target accepts (Accepts), the RoleError of a host passed over or found demoted, and the
// read-only rejections that make a connection check again.

import (
	"context"
	"database/sql/driver"

	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/attrs"
)

// Accepts reports whether a host of role r qualifies for target, as libpq's
// target_session_attrs: any takes every host; read-write only RolePrimary; read-only
// RoleStandby and RoleReadOnlyPrimary; primary RolePrimary and RoleReadOnlyPrimary;
// standby and prefer-standby only RoleStandby (prefer-standby takes any host as a last
// resort, which the walk decides, not Accepts). "" counts as any.
func Accepts(target string, r failover.Role) bool {
	switch target {
	case attrs.ReadWrite:
		return r == failover.RolePrimary
	case attrs.ReadOnly:
		return r == failover.RoleStandby || r == failover.RoleReadOnlyPrimary
	case attrs.Primary:
		return r == failover.RolePrimary || r == failover.RoleReadOnlyPrimary
	case attrs.Standby, attrs.PreferStandby:
		return r == failover.RoleStandby
	}
	return true
}

// RoleQuery is the one round trip ReadRole makes. SHOW works on every MySQL and
// MariaDB version, where SELECT @@global.super_read_only or @@global.transaction_read_only
// fails on servers that lack the variable; it needs no privilege, and a Galera node
// outside the Primary component answers it. Besides the role it reads what ReadState
// needs to tell the cluster type and readiness (offline_mode, wsrep_*,
// group_replication_group_name), so that the role and the type cost one round trip, and
// the server's identity (server_id; server_uuid on MySQL), which tells a host that
// discovery reports under another address from a new one.
const RoleQuery = "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('read_only', 'super_read_only', 'transaction_read_only', 'tx_read_only', " +
	"'offline_mode', 'wsrep_on', 'wsrep_desync', 'wsrep_reject_queries', 'wsrep_sst_method', 'group_replication_group_name', " +
	"'server_id', 'server_uuid')"

// ReadRole reads the server's role over conn with RoleQuery: one round trip. Its error is
// the driver's (a communication error from a broken connection), or a plain error when
// conn cannot run queries or the answer lacks read_only.
func ReadRole(ctx context.Context, conn driver.Conn) (failover.Role, error) {
	vars, err := showRows(ctx, conn, RoleQuery)
	if err != nil {
		return failover.RoleUnknown, err
	}
	return roleOf(vars)
}

// RoleError says that a host was not used because of its role: the role check after
// connecting found Role where targetSessionAttrs wanted Wanted, or (Cause set) a write on
// a host believed writable was rejected because the server had become read-only (a
// demoted primary). It is not a communication error: the host is up, and the walk goes
// on to the next host.
type RoleError struct {
	// Role is the role the check found.
	Role failover.Role
	// Wanted is the configured targetSessionAttrs.
	Wanted string
	// Cause is the rejection that made the proxy check the role again (a
	// *mysql.MySQLError 1290 or 1836), or nil for a check right after connecting.
	Cause error
}

// Error returns "skipped: role is standby, wanted read-write" for a check after
// connecting, and "demoted: role is standby now, wanted read-write (the server rejected a
// write: ...)" when Cause is set.
func (e *RoleError) Error() string {
	if e.Cause != nil {
		return "demoted: role is " + e.Role.String() + " now, wanted " + string(e.Wanted) +
			" (the server rejected a write: " + e.Cause.Error() + ")"
	}
	return "skipped: role is " + e.Role.String() + ", wanted " + string(e.Wanted)
}

// Unwrap returns Cause.
func (e *RoleError) Unwrap() error { return e.Cause }

// Demoted reports whether the error is a host found demoted by a rejected write (Cause
// set), rather than a role check after connecting.
func (e *RoleError) Demoted() bool { return e.Cause != nil }

// WriteIntent reports whether t asks for a session that can write: read-write and
// primary. Those walks look for the writer wherever it is (the primary is never left out
// of a first pass), failOverReadOnly does not apply, and a write rejected as read-only
// makes the connection check the host's role.
func WriteIntent(t string) bool {
	return t == attrs.ReadWrite || t == attrs.Primary
}
