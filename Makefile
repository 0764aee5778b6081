# mysqlfailover. `make test` is what CI runs (.ci/run); `make demo` shows failover live.
GO ?= go
# Nested modules beside integration/: the metrics collectors and the check command (their
# live-cluster tests, TestMetrics and TestCheckCommand, are in integration/).
NESTED = metrics/prometheus metrics/otel cmd/mysqlfailover
BENCHSTAT = $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

.PHONY: test unit unit-build integration gosqldriver-suite containers containers-all container-run vet server demo bench fuzz fuzz-ci soak bench-peers mutants bench-detect bench-fleet

# Vet, unit tests (no server), short fuzz runs, the real-cluster integration tests (installs
# MariaDB if missing), go-sql-driver's own suite through mysqlfailover, a 60 s chaos soak and,
# when a Docker engine answers, the container-level scenarios. scripts/test.sh runs the parts
# that wait on servers and clocks in this order at normal priority, and meanwhile, at nice 19,
# vet, the unit tests' build and fuzz-ci (CPU-bound, no real-time assertions) and the
# container image's build; it times each part and the whole run (TEST_SERIAL=1: in series).
test:
	@MAKE="$(MAKE)" GO="$(GO)" ./scripts/test.sh server vet fuzz-ci integration unit gosqldriver-suite soak containers

# Also checks that every mutant of scripts/mutants.txt still finds its text (a refactor that
# moves it leaves `make mutants` blind to that decision).
vet:
	$(GO) vet ./...
	./scripts/mutants.sh --check
	cd integration && $(GO) vet ./...
	for m in $(NESTED); do (cd $$m && $(GO) vet ./...) || exit 1; done

# Each benchmark also runs once (-benchtime 1x): one that no longer runs fails here, not
# only at the next `make bench`.
unit:
	$(GO) test -race -count=1 -bench . -benchtime 1x ./...
	for m in $(NESTED); do (cd $$m && $(GO) test -race -count=1 ./...) || exit 1; done

# The mutation run (scripts/mutants.sh): each mutant of scripts/mutants.txt, a decision that
# protects users broken the way a later change might, applied alone to a temporary copy of the
# tree, the unit suite run on it; every mutant must be killed. Not part of `make test` (about
# 22 minutes for 127 mutants on 2 cores). MUTANTS="name ..." runs only those.
MUTANTS ?=
mutants:
	GO=$(GO) ./scripts/mutants.sh $(MUTANTS)

# The unit tests' -race build without running a test (`-run '^$$'`), for `make test`'s
# background chain: `make unit` then finds it in the build cache.
unit-build:
	$(GO) test -race -count=1 -run '^$$' ./...
	for m in $(NESTED); do (cd $$m && $(GO) test -race -count=1 -run '^$$' ./...) || exit 1; done

integration: server
	cd integration && $(GO) test -race -count=1 -timeout 8m ./...

# go-sql-driver's own test suite (the version go.mod requires), raw and through mysqlfailover,
# against one harness server: fails when a test passes raw only (scripts/gosqldriver-suite.sh).
gosqldriver-suite: server
	GO=$(GO) ./scripts/gosqldriver-suite.sh

# The container backend, one test body per backend: `make containers` (in `make test`)
# runs the container-level faults (74 s on a fresh machine; the Galera fixture's test adds 14 s at
# load 1, 30 s at load 8); `make containers-all` every cluster scenario, the 20 stop/start cycles and the
# read/write splitting scenarios (19 tests: 4 min 11 s at load 1 to 2, 13 min at load 20; the 8
# of read/write splitting add about 2 min; TestGaleraHarness, every Galera fault, 55 s, 88 s at load 8). The image is built when missing
# (scripts/build-image.sh; a set MYSQLFAILOVER_IMAGE skips it). No engine: skipped in one line.
CONTAINER_TESTS = TestContainerBackend|TestFreezeDetection|TestPartitionedPrimary|TestPromotionUnderWriters|TestKillPrimaryUnderLoad|TestGaleraFixture
CONTAINER_TESTS_ALL = $(CONTAINER_TESTS)|TestStopStartCyclesNoLeak|TestExample|TestTLSPerHostErrors|TestKillPrimaryIdlePool|TestFreezePrimary|TestResetPeerDuringUpdate|TestReadOnlyOnSecondary|TestFallBackTimer|TestMidTransactionFailure|TestCommitOutcomeUnknown|TestCallerCancellation|TestAllNodesDown|TestKillRestartCyclesNoLeak|TestSessionStateAcrossSwitches|TestReplicaHarness|TestReplicaReadsRouting|TestReplicaLagAvoided|TestCausalReads|TestRoutingKeyAffinity|TestKillReplicaUnderReaders|TestKillPrimaryMixedLoad|TestReplicaSessionState|TestGaleraHarness
containers:
	@$(MAKE) --no-print-directory container-run RUN='$(CONTAINER_TESTS)'
containers-all:
	@$(MAKE) --no-print-directory container-run RUN='$(CONTAINER_TESTS_ALL)'
container-run:
	@if ! docker info >/dev/null 2>&1; then echo "containers: no Docker engine answers (docker info): container suite skipped"; exit 0; fi; \
	image=$${MYSQLFAILOVER_IMAGE:-$$(./scripts/build-image.sh)} || exit 1; \
	cd integration && MYSQLFAILOVER_BACKEND=container MYSQLFAILOVER_IMAGE=$$image \
		$(GO) test -race -count=1 -p 1 -timeout 20m -run '^($(RUN))$$' . ./failovertest ./harness

# A MariaDB/MySQL server binary for the integration tests and the demo.
server:
	@./scripts/ensure-server.sh

# Two local 3-node clusters, the primary killed under reads and under writes (node2 promoted):
# timelines and a summary (cd integration && go run ./cmd/demo -svg PATH also draws the chart).
demo: server
	cd integration && $(GO) run ./cmd/demo

# The proxy's own cost per statement (in-memory connection) and against one real server,
# bare vs proxy, as benchstat tables.
bench: server
	$(GO) test -run '^$$' -bench . -benchmem -count 6 . | tee bench.txt
	cd integration && $(GO) test -run '^$$' -bench Real -benchmem -count 6 ./ | tee ../bench-real.txt
	$(BENCHSTAT) -col /impl bench.txt
	$(BENCHSTAT) -col /impl bench-real.txt

# Budgets are execution counts, not durations: with a duration, go1.26's fuzz coordinator can
# fail a clean run with a bare "context deadline exceeded" at the deadline (golang/go#75804,
# fixed in go1.27). 400000 runs are about a minute per target here.
FUZZ_LONG ?= 400000x
fuzz:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZ_LONG) -fuzzminimizetime 10s ./dsn/
	$(GO) test -run '^$$' -fuzz '^FuzzClassify$$' -fuzztime $(FUZZ_LONG) -fuzzminimizetime 10s ./internal/cluster/
	$(GO) test -run '^$$' -fuzz '^FuzzWaitQuery$$' -fuzztime $(FUZZ_LONG) -fuzzminimizetime 10s ./internal/cluster/

# CI's share of fuzzing: FUZZ_RUNS executions of each fuzz target (20000, 2 to 6 s here).
FUZZ_RUNS ?= 20000x
fuzz-ci:
	$(GO) test -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZ_RUNS) ./dsn/
	$(GO) test -run '^$$' -fuzz '^FuzzClassify$$' -fuzztime $(FUZZ_RUNS) ./internal/cluster/
	$(GO) test -run '^$$' -fuzz '^FuzzWaitQuery$$' -fuzztime $(FUZZ_RUNS) ./internal/cluster/

# A bounded chaos soak (integration/cmd/soak): random faults from a printed seed under a
# workload, probing off then on, SOAK_SECONDS in all (default 60); SOAK_SEED replays a run.
# SOAK_INSTANCES=N (default 4) runs the workload in N processes, each its own pool on its own
# tables, against the same cluster and faults (a fleet soak; 1: one pool in the soak's own
# process). 4 instances take the same 60 s (61 s here at a load average of 20 to 35).
SOAK_SECONDS ?= 60
SOAK_SEED ?= 0
SOAK_INSTANCES ?= 4
soak: server
	cd integration && $(GO) run ./cmd/soak -seconds $(SOAK_SECONDS) -seed $(SOAK_SEED) -instances $(SOAK_INSTANCES)

# mysqlfailover against its peers (go-sql-driver, HAProxy tcp-check and mysql-check,
# MariaDB Connector/J) on one local cluster: latency and failover tables for BENCHMARKS.md
# (about 7 minutes; BENCH_QUICK=1 for a one-minute smoke run). Not part of `make test`.
bench-peers: server
	@./scripts/ensure-peers.sh
	cd integration && $(GO) run ./cmd/benchpeers > ../bench-peers.md
	@cat bench-peers.md

# The failure detector against a real server (integration/cmd/benchdetect): a slow primary
# (steady 150 ms, jumps and a step to 200 ms, jitter 100 +- 100 ms, a CPU-starved server, long
# queries; DETECT_SECONDS each, default 20) and a frozen one (DETECT_FREEZES SIGSTOPs, default
# 25) at checkInterval=100ms&failoverDelay=100ms: false failovers, reads off the primary, the
# time to leave a frozen one. About 4 minutes; the tables go to bench-detect.md (and stdout),
# for BENCHMARKS.md. Not part of `make test`.
bench-detect: server
	cd integration && $(GO) run ./cmd/benchdetect > ../bench-detect.md
	@cat bench-detect.md

# A fleet of instances (integration/cmd/fleet): FLEET_N processes (default 100), each its own
# mysqlfailover pool of 4, against one local 3-node cluster, probing on and off: cold starts,
# idle, under load, kill -9 of the primary with node 2 promoted; per host sessions,
# statements/s and server CPU from the servers' own counters. The tables go to bench-fleet.md
# (and stdout), for BENCHMARKS.md ("A fleet of instances"). About 5 minutes at FLEET_N=100;
# FLEET_FLAGS adds flags (-phases, -window, -runs, -dsnopts, -probe, -label). Not part of
# `make test`.
FLEET_N ?= 100
FLEET_FLAGS ?=
bench-fleet: server
	cd integration && nice -n 5 $(GO) run ./cmd/fleet -n $(FLEET_N) -out ../bench-fleet.md $(FLEET_FLAGS) > /dev/null
	@cat bench-fleet.md

# The MariaDB container image of the container tests, built from Debian packages (no registry):
# prints its reference; reused when present. `make image-test` checks it with real containers.
.PHONY: image image-test
image:
	@./scripts/build-image.sh

image-test:
	./scripts/test-image.sh
