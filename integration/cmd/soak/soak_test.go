package main

import (
	"context"
	"errors"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/mysqlfailover/mysqlfailover/integration/harness"
)

// TestSoakFindsViolations: a short soak with planted violations (sabotageRun) reports
// each of them, so the checks are known to fail when they should.
func TestSoakFindsViolations(t *testing.T) {
	if testing.Short() {
		t.Skip("short: needs a local cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	r, err := soak(ctx, 3, false, 6*time.Second, true)
	if errors.Is(err, harness.ErrNoServer) {
		if ci, _ := strconv.ParseBool(os.Getenv(harness.EnvCI)); ci {
			t.Fatalf("%v (CI=true: a server is required)", err)
		}
		t.Skip(err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Log(r.summary())
	for _, kind := range []string{"dup-first", "ack-missing", "tx-partial", "tx-committed-missing", "not-run-present",
		"badconn", "undocumented", "slow-pool", "password", "sessions", "goroutines"} {
		if r.viol[kind] == 0 {
			t.Errorf("planted %s violation not reported", kind)
		}
	}
}
