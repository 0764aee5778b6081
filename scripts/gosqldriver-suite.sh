#!/usr/bin/env bash
# Runs go-sql-driver/mysql's own test suite, at the version go.mod requires, twice against
# one real server: raw (driver "mysql") and through mysqlfailover (driver "mysqlfailover",
# with go-sql-driver's driverNameTest hook), and fails when a test that passes raw does not
# pass through mysqlfailover, unless the list below names it with the reason.
#
#   scripts/gosqldriver-suite.sh          (make gosqldriver-suite)
#
# It copies the module from the module cache to a temporary directory, adds an external
# test file with a blank import of this checkout (a go.mod replace directive), and runs
#   go test -ldflags "-X github.com/go-sql-driver/mysql.driverNameTest=mysqlfailover"
# The server is one MariaDB of the integration harness (integration/cmd/oneserver), unless
# MYSQL_TEST_ADDR (and MYSQL_TEST_USER, MYSQL_TEST_PASS, MYSQL_TEST_DBNAME) name one.
# MYSQLFAILOVER_SUITE_KEEP=1 keeps the work directory and both logs.
set -euo pipefail

# Tests skipped in both runs: they test the environment, not a driver. One line each:
# name, reason.
skip_both=$(cat <<'LIST'
TestConnectorReturnsTimeout  needs the internet: dials 1.1.1.1:1234 and wants go-sql-driver's own dial timeout; where something answers there (a sandbox, a proxy) go-sql-driver's internal connector, built without a logger, panics and ends the whole run
LIST
)

# Tests that cannot pass through mysqlfailover, run raw only (each skipped through us:
# a failed type assertion would panic and end the whole run). One line each: name, reason.
not_through_us=$(cat <<'LIST'
TestPing                  type-asserts the connection in (*sql.Conn).Raw to go-sql-driver's unexported *mysqlConn to read its buffer and result (ours is mysqlfailover's proxy connection)
TestQueryMultipleResults  type-asserts the connection in (*sql.Conn).Raw to *mysqlConn to read affectedRows of each result of a multi-statement query
LIST
)

root=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-go}
mod=github.com/go-sql-driver/mysql
ver=$(cd "$root" && $GO list -m -f '{{.Version}}' "$mod")
(cd "$root" && $GO mod download "$mod@$ver")
src=$(cd "$root" && $GO list -m -f '{{.Dir}}' "$mod")
[ -d "$src" ] || { echo "gosqldriver-suite: no source of $mod@$ver in the module cache" >&2; exit 1; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gosqldriver-suite.XXXXXX")
server_pid=
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  if [ "${MYSQLFAILOVER_SUITE_KEEP:-}" = 1 ]; then echo "gosqldriver-suite: kept $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT

cp -R "$src" "$work/mysql"
chmod -R u+w "$work/mysql"
cd "$work/mysql"
grep -q '^var driverNameTest string' driver_test.go || {
  echo "gosqldriver-suite: $mod@$ver has no driverNameTest variable in driver_test.go: adapt this script" >&2; exit 1; }
cat > mysqlfailover_suite_test.go <<'GO'
package mysql_test

// Registers "mysqlfailover" for the run with -X ...driverNameTest=mysqlfailover.
import _ "github.com/mysqlfailover/mysqlfailover"
GO
$GO mod edit -require=github.com/mysqlfailover/mysqlfailover@v0.0.0 -replace=github.com/mysqlfailover/mysqlfailover="$root"
GOFLAGS=-mod=mod $GO mod tidy >/dev/null 2>&1 || true
# One test binary each way; the ldflags make go-sql-driver's tests open "mysqlfailover".
GOFLAGS=-mod=mod $GO test -c -o "$work/raw.test" .
GOFLAGS=-mod=mod $GO test -c -o "$work/ours.test" -ldflags "-X $mod.driverNameTest=mysqlfailover" .

if [ -z "${MYSQL_TEST_ADDR:-}" ]; then
  "$root/scripts/ensure-server.sh"
  (cd "$root/integration" && $GO build -o "$work/oneserver" ./cmd/oneserver)
  mkfifo "$work/server.out"
  # TLS for TestTLS; max_allowed_packet 4M instead of 16M: TestLongData sends packets of
# that size, 4 times faster.
"$work/oneserver" -db gotest -tls -- --max-allowed-packet=4M >"$work/server.out" 2>"$work/server.log" &
  server_pid=$!
  exec 3<"$work/server.out"
  while IFS= read -r line <&3; do
    case "$line" in
      READY) break ;;
      MYSQL_TEST_*=*) export "${line?}" ;;
    esac
  done
  [ -n "${MYSQL_TEST_ADDR:-}" ] || { echo "gosqldriver-suite: the server did not start:" >&2; cat "$work/server.log" >&2; exit 1; }
fi
export MYSQL_TEST_USER=${MYSQL_TEST_USER:-root} MYSQL_TEST_PASS=${MYSQL_TEST_PASS:-} MYSQL_TEST_DBNAME=${MYSQL_TEST_DBNAME:-gotest}

names() { printf '%s\n' "$@" | awk 'NF {printf "%s%s", sep, $1; sep="|"}'; }
rawskip=(-skip "^($(names "$skip_both"))\$")
ourskip=(-skip "^($(names "$skip_both" "$not_through_us"))\$")

t0=$(date +%s.%N)
"$work/raw.test" -test.count=1 -test.v "${rawskip[@]/#-/-test.}" >"$work/raw.log" 2>&1 || true
t1=$(date +%s.%N)
"$work/ours.test" -test.count=1 -test.v "${ourskip[@]/#-/-test.}" >"$work/ours.log" 2>&1 || true
t2=$(date +%s.%N)

# Results of tests and subtests: "--- PASS: TestX (0.01s)", "    --- FAIL: TestX/sub (0.01s)".
results() { sed -n -E 's/^ *--- (PASS|FAIL|SKIP): ([^ ]+) .*/\2 \1/p' "$1" | sort -u; }
results "$work/raw.log" >"$work/raw.res"
results "$work/ours.log" >"$work/ours.res"
count() { awk -v s="$2" '$2 == s && $1 !~ /\//' "$1" | wc -l | tr -d ' '; }
subcount() { awk -v s="$2" '$2 == s && $1 ~ /\//' "$1" | wc -l | tr -d ' '; }
for f in raw ours; do
  grep -q -E '^(PASS|FAIL)$' "$work/$f.log" || { echo "gosqldriver-suite: the $f run did not finish:" >&2; tail -40 "$work/$f.log" >&2; exit 1; }
done
printf 'gosqldriver-suite: %s@%s against %s\n' "$mod" "$ver" "$MYSQL_TEST_ADDR"
for f in raw ours; do
  if [ $f = raw ]; then label="raw:          "; a=$t0; b=$t1; else label="mysqlfailover:"; a=$t1; b=$t2; fi
  printf '  %s tests %s passed, %s failed, %s skipped; subtests %s passed, %s failed, %s skipped (%.1f s)\n' "$label" \
    "$(count "$work/$f.res" PASS)" "$(count "$work/$f.res" FAIL)" "$(count "$work/$f.res" SKIP)" \
    "$(subcount "$work/$f.res" PASS)" "$(subcount "$work/$f.res" FAIL)" "$(subcount "$work/$f.res" SKIP)" \
    "$(awk -v a="$a" -v b="$b" 'BEGIN {print b - a}')"
done
printf '  not run: %s in both runs, %s more through mysqlfailover (the lists in %s)\n' \
  "$(printf '%s\n' "$skip_both" | awk 'NF' | wc -l | tr -d ' ')" "$(printf '%s\n' "$not_through_us" | awk 'NF' | wc -l | tr -d ' ')" "$0"

regressions=()
while read -r name status; do
  [ "$status" = PASS ] || continue
  ours=$(awk -v n="$name" '$1 == n {print $2}' "$work/ours.res")
  [ "$ours" = PASS ] && continue
  top=${name%%/*}
  if printf '%s\n' "$not_through_us" | awk -v n="$top" '$1 == n {f=1} END {exit !f}'; then continue; fi
  regressions+=("$name")
done <"$work/raw.res"
if [ ${#regressions[@]} -gt 0 ]; then
  # Some of go-sql-driver's tests time a cancellation against a 500 ms window, which a
  # loaded machine misses now and then, raw or not: each one runs once more alone.
  again=$(printf '%s\n' "${regressions[@]}" | sed 's,/.*,,' | sort -u | paste -sd '|' -)
  "$work/ours.test" -test.count=1 -test.v -test.run "^($again)\$" >"$work/again.log" 2>&1 || true
  bad=0
  for name in "${regressions[@]}"; do
    if grep -q -F -e "--- PASS: $name " "$work/again.log"; then
      echo "  $name failed through mysqlfailover, then passed when run again alone (timing under load):" >&2
      continue
    fi
    echo "gosqldriver-suite: $name passes raw, fails through mysqlfailover (twice):" >&2
    awk -v n="${name%%/*}" '$0 == "=== RUN   "n {p=1; print; next} p && /^=== RUN/ && index($0, "=== RUN   "n"/") != 1 {exit} p' "$work/again.log" | head -40 >&2
    bad=1
  done
  if [ "$bad" != 0 ]; then exit 1; fi
fi
echo "  every test that passes raw passes through mysqlfailover, but the listed ones"
