#!/usr/bin/env bash
# `make test`: every part CI runs, each timed, with a table of the times and the wall time of
# the whole run at the end. It stops at the first part that fails, in the foreground or in the
# background, and then stops whatever still runs (each part runs in a process group of its
# own, in this script's session, so that nice applies under autogroup scheduling too).
#
# Two chains run at once:
# - the foreground, at normal priority, the other parts in the order given (by default server,
#   integration, unit, gosqldriver-suite, soak, containers): real servers, timeouts and
#   failover timings, mostly waiting, whose timings must not be starved;
# - the background, at nice 19 from the start: vet, the unit tests' -race build (make
#   unit-build: compiles, runs no test) and fuzz-ci, one after the other. They are CPU-bound
#   with no real-time assertion (fuzz-ci's budgets are counts), so they take the CPU that the
#   foreground leaves idle. Each one's output is printed in a block `=== make vet (background)`
#   when it has ended, at the next boundary between foreground parts (never inside one).
# The unit tests run in the foreground, after integration, when their build is ready: some use
# real context deadlines (TestShortCallerDeadlineStillMovesPastAHungHost leaves its second host
# 50 ms) and fail at nice 19 beside a busy foreground (2 of 10 runs beside one busy core).
# The container image (scripts/build-image.sh, mostly downloads) builds in the background at
# nice 19 too, once the server part has run (both may run apt-get, and dpkg has one lock); the
# container suite waits for it, and a failed build stops the run at once.
#
#   ./scripts/test.sh                 every part
#   ./scripts/test.sh soak vet unit   only those parts: vet (and unit's build, since a part
#                                     runs before unit) in the background, soak then unit
#   TEST_SERIAL=1 ./scripts/test.sh   every part in series, in the order given
# When only vet, unit and fuzz-ci are given (nothing to overlap), they run in series; unit's
# build goes to the background only when a foreground part other than server precedes unit.
set -uo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
parts=("$@")
if [ ${#parts[@]} -eq 0 ]; then
  parts=(server vet fuzz-ci integration unit gosqldriver-suite soak containers)
fi
run_start=$(date +%s)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mysqlfailover-test.XXXXXX") || exit 1

has() { case " ${parts[*]} " in *" $1 "*) return 0 ;; esac; return 1; }

# The split into the two chains.
fg=()
bg=()
overlap=
if [ "${TEST_SERIAL:-0}" = 0 ]; then
  for p in "${parts[@]}"; do
    case $p in vet | unit | fuzz-ci) ;; *) overlap=1 ;; esac
  done
fi
if [ -n "$overlap" ]; then
  # unit's build goes to the background when a foreground part other than server runs before
  # unit (the build's time); otherwise unit would only compile the same packages beside it.
  early_unit=
  for p in "${parts[@]}"; do
    case $p in
    vet | fuzz-ci) continue ;;
    unit) early_unit=${early_unit:-yes} ;;
    server) ;;
    *) early_unit=${early_unit:-no} ;;
    esac
    fg+=("$p")
  done
  for p in vet unit-build fuzz-ci; do
    if has "$p" || { [ "$p" = unit-build ] && [ "$early_unit" = no ]; }; then bg+=("$p"); fi
  done
else
  fg=("${parts[@]}")
fi
in_bg() { case " ${bg[*]:-} " in *" $1 "*) return 0 ;; esac; return 1; }

fg_pid=
bg_pid=
image_pid=

# alive PGID: some process of the group is still running (zombies aside: they are not reaped
# where the container's init does not reap orphans).
alive() {
  ps -eo pgid=,stat= 2>/dev/null | awk -v g="$1" '$1 == g && $2 !~ /^Z/ { n++ } END { exit !n }'
}
# stop_all: TERM to every group still running, KILL to what is left after 30 s (the image
# build removes its chroot and partial image on TERM).
stop_all() {
  local g groups=() i
  for g in $fg_pid $bg_pid $image_pid; do
    if kill -TERM -- "-$g" 2>/dev/null; then groups+=("$g"); fi
  done
  [ ${#groups[@]} -gt 0 ] || return 0
  for i in $(seq 1 150); do
    for g in "${groups[@]}"; do
      if alive "$g"; then break; fi
      g=
    done
    [ -n "$g" ] || break
    sleep 0.2
  done
  for g in "${groups[@]}"; do kill -KILL -- "-$g" 2>/dev/null; done
  fg_pid= bg_pid= image_pid=
}
trap 'stop_all; rm -rf "$tmp"' EXIT
trap 'echo "make test: interrupted" >&2; exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP

# put FILE TEXT: writes FILE whole (a reader never sees it half written).
put() { echo "$2" >"$1.new" && mv "$1.new" "$1"; }

# The background chain: one subshell in a process group of its own; each part's log, start
# and end (exit status and time) in $tmp.
start_background() {
  [ ${#bg[@]} -gt 0 ] || return 0
  echo "make test: in the background at nice 19: ${bg[*]} (each one's output follows when it has ended)"
  set -m
  (
    for p in "${bg[@]}"; do
      put "$tmp/$p.begin" "$(date +%s)"
      nice -n 19 "$MAKE" --no-print-directory "$p" >"$tmp/$p.log" 2>&1
      rc=$?
      put "$tmp/$p.end" "$rc $(date +%s)"
      [ "$rc" = 0 ] || exit "$rc"
    done
  ) </dev/null &
  bg_pid=$!
  set +m
}

# The image build starts once the server part has installed what apt must install (the
# build installs debootstrap with apt-get too, and two apt-gets at once fail on dpkg's lock).
start_image() {
  if [ -n "${MYSQLFAILOVER_IMAGE:-}" ]; then return; fi
  if ! docker info >/dev/null 2>&1; then return; fi
  has containers || return
  put "$tmp/image.begin" "$(date +%s)"
  set -m
  (
    nice -n 19 ./scripts/build-image.sh >"$tmp/image.ref" 2>"$tmp/image.log"
    put "$tmp/image.end" "$? $(date +%s)"
  ) </dev/null &
  image_pid=$!
  set +m
}

# failed_background: true when a background job failed or died, named in $failed; forgets
# the jobs that ended well.
failed=
failed_background() {
  local p rc
  for p in ${bg[@]+"${bg[@]}"} image; do
    if [ -f "$tmp/$p.end" ]; then
      read -r rc _ <"$tmp/$p.end"
      if [ "$rc" != 0 ]; then failed=$p && return 0; fi
    fi
  done
  if [ -n "$bg_pid" ] && ! kill -0 "$bg_pid" 2>/dev/null; then
    for p in "${bg[@]}"; do
      if [ ! -f "$tmp/$p.end" ]; then failed=$p && return 0; fi # the chain was killed
    done
    bg_pid=
  fi
  if [ -n "$image_pid" ] && ! kill -0 "$image_pid" 2>/dev/null; then
    if [ ! -f "$tmp/image.end" ]; then failed=image && return 0; fi
    image_pid=
  fi
  return 1
}

# show_background: prints the log of every background part that has ended and is not shown
# yet; with "stopped", also those the run stopped.
show_background() {
  local p rc end begin
  for p in ${bg[@]+"${bg[@]}"}; do
    [ ! -f "$tmp/$p.shown" ] || continue
    if [ -f "$tmp/$p.end" ]; then
      read -r rc end <"$tmp/$p.end"
      begin=$(cat "$tmp/$p.begin")
      echo "=== make $p (background)"
      cat "$tmp/$p.log"
      echo "--- make $p (background): $([ "$rc" = 0 ] && echo ok || echo "FAILED (exit $rc)") after $((end - begin)) s"
    elif [ "${1:-}" = stopped ] && [ -f "$tmp/$p.begin" ]; then
      echo "=== make $p (background, stopped)"
      cat "$tmp/$p.log"
    else
      continue
    fi
    : >"$tmp/$p.shown"
  done
}

# row P TEXT: P's line in the report.
row() { echo "  $2" >>"$tmp/$1.row"; }
report() {
  local p rc end begin now
  now=$(date +%s)
  echo
  echo "make test: time of each part"
  for p in "${parts[@]}"; do
    if [ "$p" = unit ] && in_bg unit-build; then background_row unit-build; fi
    if [ "$p" = containers ] && [ -f "$tmp/image.begin" ]; then
      begin=$(cat "$tmp/image.begin")
      if [ -f "$tmp/image.end" ]; then
        read -r rc end <"$tmp/image.end"
        echo "  image (built in the background): $((end - begin)) s, exit $rc$(grep -q ' is present$' "$tmp/image.log" && echo ', present already')"
      else
        echo "  image (built in the background): stopped after $((now - begin)) s"
      fi
    fi
    if in_bg "$p"; then
      background_row "$p"
    elif [ -f "$tmp/$p.row" ]; then
      cat "$tmp/$p.row"
    else
      echo "  $p: not run"
    fi
  done
  echo "  the whole run: $((now - run_start)) s (wall time)"
}
background_row() {
  local rc end begin
  if [ -f "$tmp/$1.end" ]; then
    read -r rc end <"$tmp/$1.end"
    begin=$(cat "$tmp/$1.begin")
    echo "  $1 (background): $((end - begin)) s$([ "$rc" = 0 ] || echo ", FAILED (exit $rc)")"
  elif [ -f "$tmp/$1.begin" ]; then
    echo "  $1 (background): stopped after $(($(date +%s) - $(cat "$tmp/$1.begin"))) s"
  else
    echo "  $1 (background): not run"
  fi
}

# fail NAME RC: the run failed in NAME: stop the rest, show the logs, the report, exit RC.
fail() {
  stop_all
  show_background stopped
  if [ "$1" = image ]; then
    cat "$tmp/image.log" >&2
    echo "make test: scripts/build-image.sh failed" >&2
  elif in_bg "$1" && [ ! -f "$tmp/$1.end" ]; then
    echo "make test: make $1 (in the background) was killed" >&2
  else
    echo "make test: make $1 failed$(in_bg "$1" && echo ' (in the background)')" >&2
  fi
  report
  exit "$2"
}
# exit_of NAME: the exit status of a background job that ended (1 when it was killed).
exit_of() {
  local rc=1
  if [ -f "$tmp/$1.end" ]; then read -r rc _ <"$tmp/$1.end"; fi
  [ "$rc" != 0 ] || rc=1
  echo "$rc"
}

# run_part P: make P in the foreground chain (own process group, output as it comes),
# stopped at once when a background job fails.
run_part() {
  local p=$1 begin rc
  echo "=== make $p"
  begin=$(date +%s)
  set -m
  "$MAKE" --no-print-directory "$p" </dev/null &
  fg_pid=$!
  set +m
  while kill -0 "$fg_pid" 2>/dev/null; do
    if [ -z "$bg_pid$image_pid" ]; then break; fi # nothing left to watch: wait below
    if failed_background; then
      stop_all
      row "$p" "$p: stopped after $(($(date +%s) - begin)) s (make $failed failed)"
      fail "$failed" "$(exit_of "$failed")"
    fi
    sleep 0.2
  done
  wait "$fg_pid"
  rc=$?
  fg_pid=
  row "$p" "$p: $(($(date +%s) - begin)) s$([ "$rc" = 0 ] || echo ", FAILED (exit $rc)")"
  if [ "$rc" != 0 ]; then fail "$p" "$rc"; fi
}

start_background
has server || start_image
for p in "${fg[@]}"; do
  show_background
  if failed_background; then fail "$failed" "$(exit_of "$failed")"; fi
  if [ "$p" = containers ] && [ -f "$tmp/image.begin" ]; then
    if [ ! -f "$tmp/image.end" ]; then echo "make test: waiting for the image build"; fi
    while [ ! -f "$tmp/image.end" ]; do
      if failed_background; then fail "$failed" "$(exit_of "$failed")"; fi
      show_background
      sleep 0.2
    done
    if failed_background; then fail "$failed" "$(exit_of "$failed")"; fi
    image_pid=
    MYSQLFAILOVER_IMAGE=$(cat "$tmp/image.ref")
    export MYSQLFAILOVER_IMAGE
    echo "make test: image $MYSQLFAILOVER_IMAGE"
  fi
  run_part "$p"
  if [ "$p" = server ]; then start_image; fi
done
# The foreground is done: the rest of the background chain.
while [ -n "$bg_pid" ]; do
  show_background
  if failed_background; then fail "$failed" "$(exit_of "$failed")"; fi
  [ -z "$bg_pid" ] || sleep 0.2
done
show_background
report
