#!/usr/bin/env bash
# `make mutants`: a mutation run over the decisions that protect users. Each mutant of
# scripts/mutants.txt (a name, a file, the exact original text and its replacement) is
# applied alone to a temporary copy of the tree, never to the working tree, and the unit
# suite (go test ./... of the root module) runs on that copy with a timeout. Per mutant it
# reports "killed by <tests>" (the top-level tests that failed), SURVIVED (every test
# passed: a hole in the tests), HUNG (the suite hit its timeout: a test waits without a
# bound, itself a defect), or BAD (the original text is not in the file exactly once, or
# the mutant does not compile: the list needs updating). It first runs the suite
# unmutated, which must pass, and reports its time. Not part of `make test`: about 20 to
# 40 s per mutant on 2 cores.
#
#   scripts/mutants.sh                   every mutant
#   scripts/mutants.sh NAME...           only those
#   scripts/mutants.sh --list            the names
#   scripts/mutants.sh --check           only check that every original text is found
#                                        exactly once (no test run; a second or so)
# Environment: MUTANTS_TIMEOUT (go test -timeout per mutant, default 100s: a run ends in
# under two minutes), MUTANTS_SKIP (a go test -skip pattern: which other tests kill a
# mutant when the usual killer is left out), MUTANTS_RACE=1 (run with -race; slower),
# MUTANTS_KEEP=1 (keep the temporary copy and the logs; their directory is printed),
# MUTANTS_INTEGRATION=PATTERN (run the integration module's tests matching PATTERN, on real
# servers, instead of the unit suite: does a real-server test catch the mutant too? e.g.
# MUTANTS_INTEGRATION=TestCausalReadsWritePaths scripts/mutants.sh causal-commit-not-counted).
#
# Adding a mutant with each new invariant: when a change adds or moves a decision that
# protects users (a classification, a retry, a transaction rule, a routing or readiness
# rule), add an entry to scripts/mutants.txt that breaks it the way a plausible later
# change would (a condition dropped, a case removed, the wrong error returned), naming the
# invariant and the tests meant to catch it in its comment; run `scripts/mutants.sh NAME`
# and make sure it is killed, by a test that fails for the rule, not by accident. When a
# refactor changes the original text, `--check` says which entries to update.
#
# The working tree is only read: the copy is made with rsync (uncommitted changes
# included), mutated there, and removed on exit, Ctrl-C or TERM (MUTANTS_KEEP aside).
set -uo pipefail
# The whole script is one brace group: bash reads it all before it runs any of it, so that
# editing this file during a run cannot change the run.
{
cd "$(dirname "$0")/.."
root=$(pwd)
list=$root/scripts/mutants.txt
GO=${GO:-go}
timeout_go=${MUTANTS_TIMEOUT:-100s}

# parse prints the mutants of the list as records separated by NUL bytes:
# name \x1f file \x1f original \x1f replacement. Format of the list: see its header.
parse() {
  perl -e '
    local $/; my $t = <STDIN>; my @out;
    my @lines = split /\n/, $t, -1;
    my ($name, $file, $mode, @o, @r);
    my $flush = sub {
      return unless defined $name;
      die "mutants.txt: $name: no \@\@ file line\n" unless defined $file;
      die "mutants.txt: $name: no <<< ... === ... >>> block\n" unless $mode && $mode eq "done";
      push @out, join("\x1f", $name, $file, join("\n", @o), join("\n", @r));
      ($name, $file, $mode, @o, @r) = (undef, undef, undef);
    };
    for my $l (@lines) {
      if (!$mode || $mode eq "done") {
        if ($l =~ /^## (\S+)\s*$/) { $flush->(); $name = $1; next }
        next if $l =~ /^#/ || $l =~ /^\s*$/;
        if ($l =~ /^@@ (\S+)\s*$/) { $file = $1; next }
        if ($l eq "<<<") { die "mutants.txt: a block outside a mutant\n" unless defined $name; $mode = "o"; next }
        die "mutants.txt: unexpected line: $l\n";
      }
      if ($mode eq "o") { if ($l eq "===") { $mode = "r"; next } push @o, $l; next }
      if ($mode eq "r") { if ($l eq ">>>") { $mode = "done"; next } push @r, $l; next }
    }
    $flush->();
    print map { "$_\0" } @out;
  ' <"$list"
}

# apply DIR FILE: replaces the original ($ORIG) by the replacement ($REPL) in DIR/FILE,
# which must hold the original exactly once. Exit 2 when it does not.
apply() {
  perl -e '
    my ($path) = @ARGV;
    open(my $f, "<", $path) or do { print STDERR "cannot read $path\n"; exit 2 };
    local $/; my $t = <$f>; close $f;
    my $o = $ENV{ORIG}; my $r = $ENV{REPL};
    my $n = () = $t =~ /\Q$o\E/g;
    if ($n != 1) { print STDERR "the original text is found $n times in $path (want exactly 1)\n"; exit 2 }
    $t =~ s/\Q$o\E/$r/;
    if (!$ENV{DRY}) { open(my $w, ">", $path) or exit 2; print $w $t; close $w }
  ' "$1/$2"
}

names=()
files=()
origs=()
repls=()
while IFS=$'\x1f' read -r -d '' n f o r; do
  names+=("$n")
  files+=("$f")
  origs+=("$o")
  repls+=("$r")
done < <(parse)
[ ${#names[@]} -gt 0 ] || { echo "mutants: no mutant in $list" >&2; exit 1; }

case ${1:-} in
--list)
  printf '%s\n' "${names[@]}"
  exit 0
  ;;
--check)
  bad=0
  for i in "${!names[@]}"; do
    if ! ORIG=${origs[$i]} REPL=${repls[$i]} DRY=1 apply "$root" "${files[$i]}" 2>/tmp/mutants-check.$$; then
      echo "BAD ${names[$i]}: $(cat /tmp/mutants-check.$$)"
      bad=1
    fi
  done
  rm -f /tmp/mutants-check.$$
  [ $bad = 0 ] && echo "mutants: all ${#names[@]} original texts found exactly once"
  exit $bad
  ;;
esac

# Which mutants: the named ones, in the list's order.
sel=()
if [ $# -gt 0 ]; then
  for want in "$@"; do
    found=
    for i in "${!names[@]}"; do
      [ "${names[$i]}" = "$want" ] && sel+=("$i") && found=1
    done
    [ -n "$found" ] || { echo "mutants: no mutant named $want (scripts/mutants.sh --list)" >&2; exit 1; }
  done
else
  sel=("${!names[@]}")
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/mysqlfailover-mutants.XXXXXX") || exit 1
child=
cleanup() {
  if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null; wait "$child" 2>/dev/null; fi
  if [ "${MUTANTS_KEEP:-0}" = 1 ]; then echo "mutants: kept $tmp"; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
trap 'echo; echo "mutants: interrupted"; exit 130' INT TERM HUP

src=$tmp/src
mkdir -p "$src" "$tmp/logs"
# The root module only: the nested modules (integration, metrics/prometheus, metrics/otel,
# cmd/mysqlfailover) are not in its ./... and are left out, unless the integration tests
# run (they replace the library and the metrics modules with these directories).
if [ -n "${MUTANTS_INTEGRATION:-}" ]; then
  rsync -a --exclude=.git "$root/" "$src/" || exit 1
else
  rsync -a --exclude=.git --exclude=/integration --exclude=/cmd --exclude=/metrics/prometheus \
    --exclude=/metrics/otel "$root/" "$src/" || exit 1
fi

flags=(-count=1 -vet=off -timeout "$timeout_go")
[ "${MUTANTS_RACE:-0}" = 1 ] && flags+=(-race)
[ -n "${MUTANTS_SKIP:-}" ] && flags+=(-skip "$MUTANTS_SKIP")
# The outer bound: go test's own -timeout, plus the time to build and to print the panic.
outer=$(( ${timeout_go%s} + 20 ))

# suite LOG: runs the unit suite in the copy, in the background so that the traps can stop
# it; coreutils timeout runs it in a process group of its own and signals the whole group.
suite() {
  if [ -n "${MUTANTS_INTEGRATION:-}" ]; then
    (cd "$src/integration" && exec timeout -k 5 "$outer" "$GO" test "${flags[@]}" -run "$MUTANTS_INTEGRATION" .) >"$1" 2>&1 &
  else
    (cd "$src" && exec timeout -k 5 "$outer" "$GO" test "${flags[@]}" ./...) >"$1" 2>&1 &
  fi
  child=$!
  wait "$child"
  local rc=$?
  child=
  return $rc
}

# verdict LOG RC: one line saying what the run found. Each package's output is printed as
# one block that ends with its "ok" or "FAIL" line, so a failed (or, after go test's
# timeout panic, a running) test is named package.Test, the package's last path element.
verdict() {
  local log=$1 rc=$2
  local killers hung
  killers=$(awk '/^--- FAIL: /{f[++n]=$3; next}
    /^(ok|FAIL)[ \t]+[a-z]/{p=$2; sub(/.*\//, "", p); for (i = 1; i <= n; i++) print p "." f[i]; n=0}' "$log" | sort -u)
  hung=$(awk '/^[ \t]*running tests:/{r=1; next}
    r && /^\t/{x=$0; gsub(/^\t+/, "", x); split(x, w, " "); f[++n]=w[1]; next}
    {r=0}
    /^(ok|FAIL)[ \t]+[a-z]/{p=$2; sub(/.*\//, "", p); for (i = 1; i <= n; i++) print p "." f[i]; n=0}' "$log" | sort -u)
  local shown=
  if [ -n "$killers" ]; then
    local n
    n=$(printf '%s\n' "$killers" | wc -l)
    shown=$(printf '%s\n' "$killers" | head -4 | tr '\n' ' ')
    if [ "$n" -gt 4 ]; then shown="$shown(+$((n - 4)) more)"; fi
  fi
  if [ -n "$hung" ] || grep -q '^panic: test timed out after' "$log" || [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
    echo "HUNG (timeout $timeout_go) in $(printf '%s\n' "$hung" | tr '\n' ' ')${shown:+; failed too: $shown}"
    return
  fi
  if grep -qE '\[(build|setup) failed\]' "$log"; then
    echo "BAD: does not compile: $(grep -m1 -E '\.go:[0-9]+:[0-9]+: ' "$log" | sed "s|$src/||")"
    return
  fi
  if [ -n "$shown" ]; then
    echo "killed by $shown"
    return
  fi
  if [ "$rc" != 0 ]; then
    echo "killed by $(grep -m1 -E '^(FAIL|panic:)' "$log")"
    return
  fi
  echo "SURVIVED"
}

what="./..."
[ -n "${MUTANTS_INTEGRATION:-}" ] && what="-run $MUTANTS_INTEGRATION . (integration/)"
echo "mutants: ${#sel[@]} of ${#names[@]} mutants; go test ${flags[*]} $what on a copy in $tmp"
t0=$(date +%s)
if ! suite "$tmp/logs/baseline.log"; then
  echo "mutants: the unmutated suite fails; fix it first:"
  grep -E '^(--- FAIL|FAIL|panic)' "$tmp/logs/baseline.log" | head -20
  exit 1
fi
base=$(( $(date +%s) - t0 ))
echo "mutants: the unmutated suite passes in ${base}s (build included)"

results=()
survived=0
for i in "${sel[@]}"; do
  n=${names[$i]} f=${files[$i]}
  cp "$root/$f" "$src/$f" # the file as the working tree has it
  if ! ORIG=${origs[$i]} REPL=${repls[$i]} apply "$src" "$f" 2>"$tmp/logs/$n.apply"; then
    line="BAD: $(cat "$tmp/logs/$n.apply")"
    secs=0
  else
    s0=$(date +%s)
    suite "$tmp/logs/$n.log"
    rc=$?
    secs=$(( $(date +%s) - s0 ))
    line=$(verdict "$tmp/logs/$n.log" "$rc")
  fi
  cp "$root/$f" "$src/$f" # undo
  case $line in killed*) ;; *) survived=$((survived + 1)) ;; esac
  printf '%-34s %4ss  %s\n' "$n" "$secs" "$line"
  results+=("$(printf '%-34s %4ss  %s' "$n" "$secs" "$line")")
done

echo
echo "mutants: ${#sel[@]} run, $(( ${#sel[@]} - survived )) killed, $survived not (SURVIVED, HUNG or BAD); unmutated suite ${base}s; total $(( $(date +%s) - t0 ))s"
[ "$survived" = 0 ]
exit
}
