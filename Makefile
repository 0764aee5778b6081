# mysqlfailover: `make test` is what CI runs (.ci/run); `make bench` measures the proxy.
GO ?= go
BENCHSTAT = $(GO) run golang.org/x/perf/cmd/benchstat@v0.0.0-20260908200009-22c9c6c9d4da

.PHONY: test bench fuzz vet

test: vet
	$(GO) test -race -count=1 ./...

vet:
	$(GO) vet ./...

# The proxy's own cost per statement, bare connection vs proxy, in one table.
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 6 ./driver/ | tee bench.txt
	$(BENCHSTAT) -col /impl bench.txt

fuzz:
	$(GO) test -run '^$$' -fuzz FuzzParse -fuzztime 60s ./dsn/
