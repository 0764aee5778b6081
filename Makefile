# mysqlfailover. `make test` is what CI runs (.ci/run); `make demo` shows failover live.
GO ?= go
BENCHSTAT = $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

.PHONY: test unit integration gosqldriver-suite vet server demo bench fuzz

# Unit tests (no server) and the real-cluster integration tests (installs MariaDB if missing).
test: vet unit integration gosqldriver-suite

vet:
	$(GO) vet ./...
	cd integration && $(GO) vet ./...

unit:
	$(GO) test -race -count=1 ./...

integration: server
	cd integration && $(GO) test -race -count=1 -timeout 8m ./...

# go-sql-driver's own test suite (the version go.mod requires), raw and through mysqlfailover,
# against one harness server: fails when a test passes raw only (scripts/gosqldriver-suite.sh).
gosqldriver-suite: server
	GO=$(GO) ./scripts/gosqldriver-suite.sh

# A MariaDB/MySQL server binary for the integration tests and the demo.
server:
	@./scripts/ensure-server.sh

# A local 3-node cluster, a live workload, the primary killed and restarted: a timeline.
demo: server
	cd integration && $(GO) run ./cmd/demo

# The proxy's own cost per statement (in-memory connection) and against one real server,
# bare vs proxy, as benchstat tables.
bench: server
	$(GO) test -run '^$$' -bench . -benchmem -count 6 . | tee bench.txt
	cd integration && $(GO) test -run '^$$' -bench Real -benchmem -count 6 ./ | tee ../bench-real.txt
	$(BENCHSTAT) -col /impl bench.txt
	$(BENCHSTAT) -col /impl bench-real.txt

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 60s -fuzzminimizetime 10s ./dsn/
