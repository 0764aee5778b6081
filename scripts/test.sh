#!/usr/bin/env bash
# `make test`: every part CI runs, in order, each timed, with a table of the times at the end.
# The container image (scripts/build-image.sh, mostly downloads) is built in the background
# at the lowest priority while the other parts run, so that a fresh machine does not pay
# for it in series; the container suite waits for it. It stops at the first part that fails.
#
#   ./scripts/test.sh                 every part
#   ./scripts/test.sh unit soak       only those parts (in the order given)
set -uo pipefail
cd "$(dirname "$0")/.."
MAKE=${MAKE:-make}
parts=("$@")
if [ ${#parts[@]} -eq 0 ]; then
  parts=(server vet unit fuzz-ci integration gosqldriver-suite soak containers)
fi

times=()
report() {
  echo
  echo "make test: time of each part"
  for t in "${times[@]}"; do echo "  $t"; done
}

# The image build starts once the server part has installed what apt must install (the
# build installs debootstrap with apt-get too, and two apt-gets at once fail on dpkg's lock).
image_pid=
image_log=$(mktemp)
image_ref=$(mktemp)
trap 'rm -f "$image_log" "$image_ref"' EXIT
start_image() {
  if [ -n "${MYSQLFAILOVER_IMAGE:-}" ]; then return; fi
  if ! docker info >/dev/null 2>&1; then return; fi
  case " ${parts[*]} " in *" containers "*) ;; *) return ;; esac
  image_start=$(date +%s)
  (nice -n 19 ./scripts/build-image.sh >"$image_ref" 2>"$image_log"; echo $? >>"$image_log.rc"; date +%s >"$image_log.end") &
  image_pid=$!
}

case " ${parts[*]} " in *" server "*) ;; *) start_image ;; esac
for p in "${parts[@]}"; do
  if [ "$p" = containers ] && [ -n "$image_pid" ]; then
    wait "$image_pid"
    rc=$(cat "$image_log.rc" 2>/dev/null || echo 1)
    image_end=$(cat "$image_log.end" 2>/dev/null || date +%s)
    rm -f "$image_log.rc" "$image_log.end"
    times+=("image (built in the background): $(( image_end - image_start )) s, exit $rc")
    if [ "$rc" != 0 ]; then
      cat "$image_log" >&2
      echo "make test: scripts/build-image.sh failed" >&2
      report
      exit 1
    fi
    MYSQLFAILOVER_IMAGE=$(cat "$image_ref")
    export MYSQLFAILOVER_IMAGE
    echo "make test: image $MYSQLFAILOVER_IMAGE"
  fi
  echo "=== make $p"
  begin=$(date +%s)
  "$MAKE" --no-print-directory "$p"
  rc=$?
  times+=("$p: $(( $(date +%s) - begin )) s$([ $rc = 0 ] || echo ", FAILED (exit $rc)")")
  if [ $rc != 0 ]; then
    report
    exit $rc
  fi
  if [ "$p" = server ]; then start_image; fi
done
report
