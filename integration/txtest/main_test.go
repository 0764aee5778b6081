// Package txtest runs the transaction scenarios against real MariaDB
// servers: transactions the server rolled back (a deadlock, a lock wait timeout under
// innodb_rollback_on_timeout), mysqlfailover.RunInTx through failures, and transaction
// replay (transactionReplay=true). It is a package of its own so that it runs beside the
// big integration package (go test runs packages in parallel), each test on one cluster
// shared by its subtests.
package txtest

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine outlives the tests. One goroutine of
// toxiproxy's own is let go, as in the integration package: a link's NoopToxic blocked
// sending to the next stage of a link that is being torn down (toxiproxy 2.5.0), seen
// after TestLoadDataLocalCut stops node 1's proxy under a connection that is writing.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m, goleak.IgnoreTopFunction("github.com/Shopify/toxiproxy/v2/toxics.(*NoopToxic).Pipe"))
}
