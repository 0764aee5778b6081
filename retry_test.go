package mysqlfailover_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"

	"github.com/mysqlfailover/mysqlfailover"
	"github.com/mysqlfailover/mysqlfailover/failover"
	"github.com/mysqlfailover/mysqlfailover/internal/cluster"
)

// One function says what is safe to run again.
func TestSafeToRetry(t *testing.T) {
	fe := func(maybe bool) error {
		return &failover.FailoverError{Failed: "H1:3306", Current: "H2:3306", MaybeExecuted: maybe, Err: mysql.ErrInvalidConn}
	}
	for _, tc := range []struct {
		name string
		err  error
		want mysqlfailover.Retry
	}{
		{"nil", nil, mysqlfailover.RetryNothing},
		{"may have run", fe(true), mysqlfailover.RetryNothing},
		{"provably not run", fe(false), mysqlfailover.RetryStatement},
		{"a read that may have run", &failover.FailoverError{Failed: "H1:3306", Current: "H2:3306", MaybeExecuted: true, Read: true, Err: mysql.ErrInvalidConn}, mysqlfailover.RetryStatement},
		{"a read in a lost transaction", fmt.Errorf("%w: %w", failover.ErrTxLost, &failover.FailoverError{Failed: "H1:3306", MaybeExecuted: true, Read: true}), mysqlfailover.RetryTransaction},
		{"transaction lost", fmt.Errorf("%w: %w", failover.ErrTxLost, fe(true)), mysqlfailover.RetryTransaction},
		{"lost, not sent", fmt.Errorf("%w (not sent)", failover.ErrTxLost), mysqlfailover.RetryTransaction},
		{"commit outcome unknown", fmt.Errorf("%w: %w", failover.ErrCommitOutcomeUnknown, fe(true)), mysqlfailover.RetryNothing},
		{"a batch: lost and outcome unknown", fmt.Errorf("%w: %w: %w", failover.ErrCommitOutcomeUnknown, failover.ErrTxLost, fe(true)), mysqlfailover.RetryNothing},
		{"no host", &failover.NoHostAvailableError{Passes: 1}, mysqlfailover.RetryStatement},
		{"full host", fmt.Errorf("host H1:3306 is full: %w", &mysql.MySQLError{Number: 1040}), mysqlfailover.RetryStatement},
		{"handshakes closed", &cluster.SessionClosedError{Host: "H1:3306", Attempts: 4, Err: &cluster.HandshakeClosedError{Err: mysql.ErrInvalidConn}}, mysqlfailover.RetryStatement},
		{"deadlock", &mysql.MySQLError{Number: 1213}, mysqlfailover.RetryTransaction},
		{"Group Replication rolled back at COMMIT", &mysql.MySQLError{Number: 3101}, mysqlfailover.RetryTransaction},
		{"XA branch rolled back for a deadlock", &mysql.MySQLError{Number: 1614}, mysqlfailover.RetryTransaction},
		{"rolled back by the server", fmt.Errorf("%w: %w", failover.ErrTxRolledBack, &mysql.MySQLError{Number: 1205}), mysqlfailover.RetryTransaction},
		{"lock wait timeout", &mysql.MySQLError{Number: 1205}, mysqlfailover.RetryStatement},
		{"Galera node not ready", &mysql.MySQLError{Number: 1047, Message: "WSREP has not yet prepared node for application use"}, mysqlfailover.RetryStatement},
		{"offline mode", &mysql.MySQLError{Number: 3032}, mysqlfailover.RetryStatement},
		{"group member not ONLINE", &mysql.MySQLError{Number: 3796}, mysqlfailover.RetryStatement},
		{"left a node that refused, not run", &failover.FailoverError{Failed: "H1:3306", Current: "H2:3306", Err: &mysql.MySQLError{Number: 1047}}, mysqlfailover.RetryStatement},
		{"refused inside a transaction", fmt.Errorf("%w: %w", failover.ErrTxLost, &failover.FailoverError{Failed: "H1:3306", Err: &mysql.MySQLError{Number: 1047}}), mysqlfailover.RetryTransaction},
		{"Galera lost the Primary component during a commit", &mysql.MySQLError{Number: 1180, Message: "Error while appending streaming replication fragment(provider status: Not connected to Primary Component)"}, mysqlfailover.RetryNothing},
		{"left a node that lost the Primary component, may have run", &failover.FailoverError{Failed: "H1:3306", Current: "H2:3306", MaybeExecuted: true, Err: &mysql.MySQLError{Number: 1180}}, mysqlfailover.RetryNothing},
		{"lost the Primary component inside a transaction", fmt.Errorf("%w: %w", failover.ErrTxLost, &failover.FailoverError{Failed: "H1:3306", MaybeExecuted: true, Err: &mysql.MySQLError{Number: 1180}}), mysqlfailover.RetryTransaction},
		{"duplicate key", &mysql.MySQLError{Number: 1062}, mysqlfailover.RetryNothing},
		{"closed", failover.ErrClosed, mysqlfailover.RetryNothing},
		{"session state lost, not sent", &failover.SessionStateError{Host: "H1:3306", NamedLocks: 1, Err: errors.New("the server closed the connection while it sat idle")}, mysqlfailover.RetryNothing},
		{"session state lost with its host, not sent", &failover.SessionStateError{Host: "H1:3306", TempTables: []string{"app.t"}, Err: fe(false)}, mysqlfailover.RetryNothing},
		{"session state lost with a transaction", &failover.SessionStateError{Host: "H1:3306", UserVariables: true, Err: fmt.Errorf("%w: %w", failover.ErrTxLost, fe(true))}, mysqlfailover.RetryNothing},
		{"cancelled", context.Canceled, mysqlfailover.RetryNothing},
		{"other", errors.New("x"), mysqlfailover.RetryNothing},
	} {
		if got := mysqlfailover.SafeToRetry(tc.err); got != tc.want {
			t.Errorf("%s: SafeToRetry = %v, want %v", tc.name, got, tc.want)
		}
	}
	for r, s := range map[mysqlfailover.Retry]string{mysqlfailover.RetryNothing: "nothing", mysqlfailover.RetryStatement: "statement", mysqlfailover.RetryTransaction: "transaction"} {
		if r.String() != s {
			t.Errorf("%d.String() = %q, want %q", r, r.String(), s)
		}
	}
}
