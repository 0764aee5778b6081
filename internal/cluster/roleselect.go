package cluster

// The learned role query: what a host's probes read of its server's role and type, once
// per DefaultRoleRelearn with RoleQuery (SHOW GLOBAL VARIABLES: it works on every version,
// and tells which of the variables the server has), and in between with a SELECT of the
// @@global values of exactly those variables. SHOW walks every variable of the server
// under its lock: on MariaDB 10.11 about 0.3 ms of the server's CPU, where the SELECT
// costs 0.03 ms. The probes of a fleet read roles tens of times a second per instance
// while a host looks wrong; a session's own role check (attempt) keeps RoleQuery.

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"sync/atomic"
	"time"

	"github.com/mysqlfailover/mysqlfailover/internal/dialect"
)

// DefaultRoleRelearn is how long a host's learned role query serves before RoleQuery
// reads the server's variables again: a server upgraded in place (restarted with a
// variable it lacked, super_read_only say) is read in full within it.
const DefaultRoleRelearn = 10 * time.Second

// roleSelect is a learned role query: a SELECT of the @@global values of names, in order,
// learned at at.
type roleSelect struct {
	query string
	names []string
	at    time.Time
}

// roleVars reads the role variables over conn as name-value pairs, names in lower case:
// with learned's query while it is younger than DefaultRoleRelearn at now, else with
// RoleQuery, from whose answer it learns the query again. A learned query that fails
// with 1193 (a variable the server no longer has) is forgotten, and RoleQuery runs. A
// nil learned always runs RoleQuery.
func roleVars(ctx context.Context, conn driver.Conn, learned *atomic.Pointer[roleSelect], now time.Time) (map[string]string, error) {
	if learned != nil {
		if sel := learned.Load(); sel != nil && now.Sub(sel.at) < DefaultRoleRelearn {
			vars, err := sel.read(ctx, conn)
			if !errors.Is(err, errUnlearn) && dialect.Number(err) != dialect.ErrUnknownSystemVariable {
				return vars, err
			}
			learned.CompareAndSwap(sel, nil)
		}
	}
	vars, err := showRows(ctx, conn, RoleQuery)
	if err == nil && learned != nil {
		learned.Store(learnRoleSelect(vars, now))
	}
	return vars, err
}

// errUnlearn: a learned query's answer was not one row of its names.
var errUnlearn = errors.New("mysqlfailover: the learned role query's answer has not its shape")

// learnRoleSelect returns the SELECT of the variables vars holds (RoleQuery's answer),
// in a fixed order, learned at now.
func learnRoleSelect(vars map[string]string, now time.Time) *roleSelect {
	sel := &roleSelect{at: now}
	var b strings.Builder
	b.WriteString("SELECT ")
	for _, name := range roleVarNames {
		if _, ok := vars[name]; !ok {
			continue
		}
		if len(sel.names) > 0 {
			b.WriteString(", ")
		}
		b.WriteString("@@global.")
		b.WriteString(name)
		sel.names = append(sel.names, name)
	}
	sel.query = b.String()
	return sel
}

// roleVarNames are the variables RoleQuery names, in its order.
var roleVarNames = []string{"read_only", "super_read_only", "transaction_read_only", "tx_read_only",
	"offline_mode", "wsrep_on", "wsrep_desync", "wsrep_reject_queries", "wsrep_sst_method",
	"group_replication_group_name", "server_id", "server_uuid"}

// read runs the learned query over conn and returns its one row as name-value pairs.
func (sel *roleSelect) read(ctx context.Context, conn driver.Conn) (map[string]string, error) {
	rows, err := queryRows(ctx, conn, sel.query)
	if err != nil {
		return nil, err
	}
	if len(rows) != 1 || len(rows[0]) != len(sel.names) {
		return nil, errUnlearn
	}
	vars := make(map[string]string, len(sel.names))
	for i, name := range sel.names {
		vars[name] = dialect.Text(rows[0][i])
	}
	return vars, nil
}
