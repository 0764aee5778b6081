#!/usr/bin/env bash
# Makes sure the peers `make bench-peers` compares mysqlfailover with are installed:
# HAProxy (Debian package haproxy) and, for MariaDB Connector/J, a JDK (javac) and Debian's
# libmariadb-java. Missing ones are installed with apt-get, as root or with `sudo -n`,
# saying what is installed; without those rights it stops with the command to run.
# BENCH_NO_JAVA=1 skips Connector/J (the benchmark then leaves its rows out and says so).
set -euo pipefail
PATH="$PATH:/usr/sbin:/usr/local/sbin"

want=()
command -v haproxy >/dev/null 2>&1 || want+=(haproxy)
if [ "${BENCH_NO_JAVA:-}" != 1 ]; then
  command -v javac >/dev/null 2>&1 || want+=(default-jdk-headless)
  ls /usr/share/java/mariadb-java-client*.jar >/dev/null 2>&1 || want+=(libmariadb-java)
fi
[ ${#want[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure-peers: missing ${want[*]} and no apt-get; install HAProxy (and a JDK with MariaDB Connector/J, or set BENCH_NO_JAVA=1) yourself" >&2
  exit 1
fi
if [ "$(id -u)" = 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  sudo=(sudo -n)
else
  echo "ensure-peers: missing ${want[*]} and no root rights; run: sudo apt-get install -y ${want[*]}" >&2
  exit 1
fi
echo "ensure-peers: installing Debian packages ${want[*]} with apt-get (for make bench-peers)" >&2
# Another apt-get may hold the lock (a shared machine, CI set-up): wait for it.
apt=("${sudo[@]}" apt-get -o DPkg::Lock::Timeout=300 -y -qq)
if ! DEBIAN_FRONTEND=noninteractive "${apt[@]}" install "${want[@]}" >/dev/null; then
  "${apt[@]}" update
  DEBIAN_FRONTEND=noninteractive "${apt[@]}" install "${want[@]}" >/dev/null
fi
echo "ensure-peers: $(haproxy -v 2>/dev/null | head -1)" >&2
