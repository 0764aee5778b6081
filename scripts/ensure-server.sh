#!/usr/bin/env bash
# Makes sure a MariaDB (or MySQL) server binary is available for the integration tests and
# `make demo`. If none is found it installs MariaDB through the system's package manager
# where it can (apt-get as root or with sudo, Homebrew), saying what it installs, and
# otherwise stops with the exact command to run. With apt-get it also installs the Galera
# library and rsync of the Galera tests (Debian's galera-4, rsync: mariadb-server depends on
# both) when a server is there without them; elsewhere it only says they are missing.
set -euo pipefail

# ensure_galera: the Galera provider and rsync, for harness.WithGalera clusters.
ensure_galera() {
  local p
  if command -v rsync >/dev/null 2>&1; then
    for p in "${MYSQLFAILOVER_GALERA:-}" /usr/lib/galera/libgalera_smm.so /usr/lib/libgalera_smm.so \
      /usr/lib64/galera-4/libgalera_smm.so /usr/lib64/galera/libgalera_smm.so /usr/local/lib/libgalera_smm.so; do
      if [ -n "$p" ] && [ -e "$p" ]; then return 0; fi
    done
  fi
  if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" = 0 ] || { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; }; }; then
    local sudo=()
    [ "$(id -u)" = 0 ] || sudo=(sudo -n)
    echo "ensure-server: installing Debian packages galera-4 and rsync with apt-get (for the Galera tests)" >&2
    if ! DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq galera-4 rsync >/dev/null 2>&1; then
      "${sudo[@]}" apt-get update -qq
      DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq galera-4 rsync >/dev/null
    fi
    return 0
  fi
  echo "ensure-server: no Galera library (libgalera_smm.so) or no rsync: the Galera tests will skip (fail with CI=true); install galera-4 and rsync, or set MYSQLFAILOVER_GALERA" >&2
}

if [ -n "${MYSQLFAILOVER_MYSQLD:-}" ]; then
  if command -v "$MYSQLFAILOVER_MYSQLD" >/dev/null 2>&1; then exit 0; fi
  echo "ensure-server: MYSQLFAILOVER_MYSQLD=$MYSQLFAILOVER_MYSQLD is not an executable" >&2
  exit 1
fi
PATH="$PATH:/usr/sbin:/usr/local/sbin:/opt/homebrew/bin:/opt/homebrew/sbin"
for b in mariadbd mysqld; do
  if command -v "$b" >/dev/null 2>&1 && command -v mariadb-install-db >/dev/null 2>&1; then
    ensure_galera
    exit 0
  fi
done

manual="install a server yourself: 'sudo apt-get install mariadb-server' (Debian/Ubuntu), 'brew install mariadb' (macOS), 'sudo dnf install mariadb-server' (Fedora/RHEL), or set MYSQLFAILOVER_MYSQLD to a mariadbd binary"

if command -v apt-get >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then
    sudo=()
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo=(sudo -n)
  else
    echo "ensure-server: no MariaDB/MySQL server found and no root rights to install one; run: sudo apt-get install -y mariadb-server" >&2
    exit 1
  fi
  echo "ensure-server: no MariaDB/MySQL server found; installing Debian package mariadb-server with apt-get (for the integration tests and the demo)" >&2
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq mariadb-server >/dev/null
  echo "ensure-server: installed $(/usr/sbin/mariadbd --version 2>/dev/null || echo mariadb-server)" >&2
  exit 0
fi
if command -v brew >/dev/null 2>&1; then
  echo "ensure-server: no MariaDB/MySQL server found; installing mariadb with Homebrew (for the integration tests and the demo)" >&2
  brew install mariadb
  exit 0
fi
echo "ensure-server: no MariaDB/MySQL server found and no supported package manager; $manual" >&2
exit 1
