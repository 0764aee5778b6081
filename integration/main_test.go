// Package integration runs mysqlfailover against real MariaDB servers with real faults;
// see README.md and package harness.
package integration

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the run if any goroutine outlives the tests: the driver's, database/sql's,
// toxiproxy's and the harness's own must all be gone once every cluster and sql.DB is
// closed.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
