#!/bin/bash
# Entrypoint of the mysqlfailover-mariadb image (scripts/build-image.sh builds it). It follows the
# interface of the official `mariadb` image, so that a harness written for one runs unchanged on
# the other:
#
#   MARIADB_ROOT_PASSWORD, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD, MARIADB_RANDOM_ROOT_PASSWORD
#                         one is required when the data directory is empty
#   MARIADB_ROOT_HOST     host part of the second root account (default %; "localhost": none)
#   MARIADB_DATABASE      a database created on first start
#   MARIADB_USER, MARIADB_PASSWORD
#                         an account created on first start, with ALL on MARIADB_DATABASE
#   MARIADB_INITDB_SKIP_TZINFO
#                         accepted; the image has no zoneinfo, so time zone tables are never loaded
#
# Every variable may also be given as VAR_FILE (read from that file) and under its MYSQL_ name
# (MYSQL_ROOT_PASSWORD, MYSQL_ALLOW_EMPTY_PASSWORD, MYSQL_RANDOM_ROOT_PASSWORD, MYSQL_ROOT_HOST,
# MYSQL_DATABASE, MYSQL_USER, MYSQL_PASSWORD), as the official image accepts.
#
# Arguments: none or `mariadbd [options]` runs the server; arguments starting with "-" are options
# for mariadbd (--help, --version and --print-defaults just run it); anything else is run as a
# command (`docker run IMAGE mariadb --version`).
# On an empty data directory (/var/lib/mysql, or --datadir=) the server is initialised with
# mariadb-install-db, then a server without networking (socket only) sets the accounts up and runs
# /docker-entrypoint-initdb.d/*.sh, *.sql, *.sql.gz (in name order, once), and stops. Then this
# script execs mariadbd as the mysql user, so mariadbd is pid 1 and gets docker's signals.
# Everything is logged to stderr.
set -euo pipefail
shopt -s nullglob

log() { printf '%s [Note] [Entrypoint]: %s\n' "$(date '+%F %T')" "$*" >&2; }
die() {
	printf '%s [ERROR] [Entrypoint]: %s\n' "$(date '+%F %T')" "$*" >&2
	exit 1
}

# env_var NAME [MYSQL_NAME]: NAME, else NAME_FILE's content, else MYSQL_NAME, else MYSQL_NAME_FILE.
env_var() {
	local n
	for n in "$@"; do
		local f="${n}_FILE"
		if [ -n "${!n:-}" ] && [ -n "${!f:-}" ]; then die "both $n and $f are set; use one"; fi
		if [ -n "${!n:-}" ]; then
			printf '%s' "${!n}"
			return
		fi
		if [ -n "${!f:-}" ]; then
			[ -r "${!f}" ] || die "$f=${!f} is not a readable file"
			cat "${!f}"
			return
		fi
	done
}

# SQL string literal and identifier quoting (backslash escapes are on in the init session).
sql_str() {
	local s=${1//\\/\\\\}
	printf "'%s'" "${s//\'/\\\'}"
}
# shellcheck disable=SC2016
sql_ident() { printf '`%s`' "${1//\`/\`\`}"; }

if [ "$#" -eq 0 ] || [ "${1:0:1}" = '-' ]; then
	set -- mariadbd "$@"
fi
case "$1" in
mariadbd | mysqld) ;;
*) exec "$@" ;;
esac
shift
server=/usr/sbin/mariadbd

# Options that only print something need no data directory.
for a in "$@"; do
	case "$a" in
	-'?' | --help | --print-defaults | -V | --version) exec "$server" "$@" ;;
	esac
done

# The options that decide where the data and the socket are.
datadir=/var/lib/mysql
socket=/run/mysqld/mysqld.sock
for a in "$@"; do
	case "$a" in
	--datadir=*) datadir=${a#--datadir=} ;;
	--socket=*) socket=${a#--socket=} ;;
	esac
done

# As root: own the data and socket directories, then run this script again as mysql.
if [ "$(id -u)" = 0 ]; then
	mkdir -p "$datadir" "$(dirname "$socket")"
	find "$datadir" "$(dirname "$socket")" \! -user mysql -exec chown mysql:mysql '{}' +
	exec setpriv --reuid=mysql --regid=mysql --init-groups "$0" mariadbd "$@"
fi

if [ ! -d "$datadir/mysql" ]; then
	root_password=$(env_var MARIADB_ROOT_PASSWORD MYSQL_ROOT_PASSWORD)
	allow_empty=$(env_var MARIADB_ALLOW_EMPTY_ROOT_PASSWORD MYSQL_ALLOW_EMPTY_PASSWORD)
	random_root=$(env_var MARIADB_RANDOM_ROOT_PASSWORD MYSQL_RANDOM_ROOT_PASSWORD)
	root_host=$(env_var MARIADB_ROOT_HOST MYSQL_ROOT_HOST)
	root_host=${root_host:-%}
	database=$(env_var MARIADB_DATABASE MYSQL_DATABASE)
	user=$(env_var MARIADB_USER MYSQL_USER)
	password=$(env_var MARIADB_PASSWORD MYSQL_PASSWORD)
	case "$allow_empty" in '' | 0 | no | false) allow_empty= ;; esac
	case "$random_root" in '' | 0 | no | false) random_root= ;; esac
	if [ -z "$root_password" ] && [ -z "$allow_empty" ] && [ -z "$random_root" ]; then
		die "the database is uninitialized and no root password option is set: set one of MARIADB_ROOT_PASSWORD, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD or MARIADB_RANDOM_ROOT_PASSWORD"
	fi
	if [ "$user" = root ]; then
		die "MARIADB_USER=root: the root account is set up by MARIADB_ROOT_PASSWORD; choose another user name"
	fi
	if [ -n "$user" ] && [ -z "$password" ]; then
		die "MARIADB_USER is set but MARIADB_PASSWORD is not"
	fi
	if [ -n "$random_root" ]; then
		root_password=$(tr -dc 'A-Za-z0-9_+~@%^*()-' </dev/urandom | head -c 32 || true)
		log "GENERATED ROOT PASSWORD: $root_password"
	fi

	log "initializing database files in $datadir"
	mariadb-install-db --datadir="$datadir" "$@" \
		--rpm --auth-root-authentication-method=normal --skip-test-db --default-time-zone=SYSTEM \
		--skip-log-bin --expire-logs-days=0 --skip-name-resolve \
		--loose-innodb_buffer_pool_load_at_startup=0 --loose-innodb_buffer_pool_dump_at_shutdown=0 \
		>/dev/null || die "mariadb-install-db failed"

	log "starting a temporary server (no networking) for the set-up"
	"$server" "$@" --skip-networking --socket="$socket" --default-time-zone=SYSTEM --wsrep_on=OFF \
		--expire-logs-days=0 --skip-slave-start --loose-innodb_buffer_pool_load_at_startup=0 \
		--loose-innodb_buffer_pool_dump_at_shutdown=0 &
	pid=$!
	client=(mariadb --protocol=socket --socket="$socket" -uroot)
	for i in $(seq 1 300); do
		if "${client[@]}" -e 'SELECT 1' >/dev/null 2>&1; then break; fi
		kill -0 "$pid" 2>/dev/null || die "the temporary server exited during start-up"
		[ "$i" = 300 ] && die "the temporary server did not answer within 30 s"
		sleep 0.1
	done

	{
		echo "SET @@SESSION.SQL_LOG_BIN=0;"
		echo "SET @@SESSION.SQL_MODE=REPLACE(@@SESSION.SQL_MODE, 'NO_BACKSLASH_ESCAPES', '');"
		echo "DROP USER IF EXISTS root@'127.0.0.1', root@'::1';"
		# shellcheck disable=SC2028
		echo "EXECUTE IMMEDIATE CONCAT('DROP USER IF EXISTS root@\\'', @@hostname, '\\'');"
		echo "SET PASSWORD FOR root@localhost = PASSWORD($(sql_str "$root_password"));"
		if [ "$root_host" != localhost ]; then
			echo "CREATE USER root@$(sql_str "$root_host") IDENTIFIED BY $(sql_str "$root_password");"
			echo "GRANT ALL ON *.* TO root@$(sql_str "$root_host") WITH GRANT OPTION;"
			echo "GRANT PROXY ON ''@'%' TO root@$(sql_str "$root_host") WITH GRANT OPTION;"
		fi
		if [ -n "$database" ]; then
			echo "CREATE DATABASE IF NOT EXISTS $(sql_ident "$database");"
		fi
		if [ -n "$user" ]; then
			echo "CREATE USER $(sql_str "$user")@'%' IDENTIFIED BY $(sql_str "$password");"
			if [ -n "$database" ]; then
				echo "GRANT ALL ON $(sql_ident "${database//_/\\_}").* TO $(sql_str "$user")@'%';"
			fi
		fi
	} | "${client[@]}" || die "setting up the accounts failed"

	# From here on root has its password; a defaults file keeps it off the command line.
	defaults=$(mktemp)
	trap 'rm -f "$defaults"' EXIT
	pw=${root_password//\\/\\\\}
	printf '[client]\npassword="%s"\n' "${pw//\"/\\\"}" >"$defaults"
	client=(mariadb --defaults-extra-file="$defaults" --protocol=socket --socket="$socket" -uroot)
	if [ -n "$database" ]; then client+=("--database=$database"); fi

	for f in /docker-entrypoint-initdb.d/*; do
		case "$f" in
		*.sh)
			if [ -x "$f" ]; then
				log "running $f"
				"$f" || die "$f failed"
			else
				log "sourcing $f"
				# shellcheck disable=SC1090
				. "$f"
			fi
			;;
		*.sql)
			log "running $f"
			"${client[@]}" <"$f" || die "$f failed"
			;;
		*.sql.gz)
			log "running $f"
			gzip -dc "$f" | "${client[@]}" || die "$f failed"
			;;
		*) log "ignoring $f" ;;
		esac
	done

	kill -TERM "$pid"
	wait "$pid" || die "the temporary server did not stop cleanly"
	rm -f "$defaults"
	trap - EXIT
	log "MariaDB init process done. Ready for start up."
fi

log "starting $("$server" --version)"
exec "$server" "$@"
