#!/usr/bin/env bash
# Tests the image of scripts/build-image.sh (built first if missing) with real containers:
# the root password, MARIADB_DATABASE/USER/PASSWORD, init scripts (*.sql, *.sql.gz, *.sh),
# arguments reaching mariadbd, mariadbd as pid 1 and as the mysql user, stop/start keeping the
# data without a second init, MARIADB_ALLOW_EMPTY_ROOT_PASSWORD, MARIADB_RANDOM_ROOT_PASSWORD,
# and the refusal to start without a root password option.
#
#   scripts/test-image.sh [IMAGE]     IMAGE defaults to the one build-image.sh makes;
#                                     mariadb:11.4 runs the same checks on the official image
#
# Containers and the volume get the labels org.mysqlfailover.test=image and
# org.mysqlfailover.test.run=<id>; the script removes those of its own run only, also on failure
# or interrupt. Ports are published
# on 127.0.0.1 only, on ports Docker picks. The last line is "N passed, N failed".
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
image=${1:-$("$here/build-image.sh")}
run=$(date +%s)-$$
labels=(--label org.mysqlfailover.test=image --label "org.mysqlfailover.test.run=$run")
pass=0
fail=0
tmp=$(mktemp -d)

cleanup() {
	local ids
	ids=$(docker ps -aq --filter label=org.mysqlfailover.test=image --filter "label=org.mysqlfailover.test.run=$run")
	# shellcheck disable=SC2086
	if [ -n "$ids" ]; then docker rm -f -v $ids >/dev/null; fi
	ids=$(docker volume ls -q --filter label=org.mysqlfailover.test=image --filter "label=org.mysqlfailover.test.run=$run")
	# shellcheck disable=SC2086
	if [ -n "$ids" ]; then docker volume rm $ids >/dev/null; fi
	rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

ok() {
	echo "ok - $*"
	pass=$((pass + 1))
}
not_ok() {
	echo "not ok - $*"
	fail=$((fail + 1))
}
# check NAME WANT GOT
check() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1: want '$2', got '$3'"; fi
}

# sql CONTAINER USER PASSWORD SQL [DATABASE]: the result rows, tab-separated, no header; over TCP
# through the published port with the machine's client, else with the container's client.
sql() {
	local port
	if command -v mariadb >/dev/null 2>&1; then
		port=$(docker port "$1" 3306/tcp | head -1)
		port=${port##*:}
		MYSQL_PWD=$3 mariadb --protocol=tcp -h127.0.0.1 -P"$port" -u"$2" -N -B -e "$4" ${5:+"$5"} 2>&1
	else
		docker exec -e MYSQL_PWD="$3" "$1" mariadb --protocol=tcp -h127.0.0.1 -P3306 -u"$2" -N -B -e "$4" ${5:+"$5"} 2>&1
	fi
}

# wait_up CONTAINER USER PASSWORD: until the server answers on its published port (60 s).
wait_up() {
	for _ in $(seq 1 120); do
		if sql "$1" "$2" "$3" 'SELECT 1' >/dev/null 2>&1; then return 0; fi
		if [ "$(docker inspect -f '{{.State.Running}}' "$1")" != true ]; then
			echo "container $1 exited:" >&2
			docker logs --tail 30 "$1" >&2
			return 1
		fi
		sleep 0.5
	done
	echo "container $1 did not answer within 60 s:" >&2
	docker logs --tail 30 "$1" >&2
	return 1
}

since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }
start() { docker run -d "${labels[@]}" -p 127.0.0.1::3306 "$@"; }

# Init scripts, as a user would mount them.
mkdir "$tmp/initdb"
cat >"$tmp/initdb/01-schema.sql" <<'EOF'
CREATE TABLE seed (id INT AUTO_INCREMENT PRIMARY KEY, src VARCHAR(16));
INSERT INTO seed (src) VALUES ('sql');
EOF
echo "INSERT INTO seed (src) VALUES ('sql.gz');" | gzip >"$tmp/initdb/02-more.sql.gz"
cat >"$tmp/initdb/03-script.sh" <<'EOF'
mariadb --protocol=socket -uroot -p"$MARIADB_ROOT_PASSWORD" -e "INSERT INTO shop.seed (src) VALUES ('sh')"
EOF
chmod 755 "$tmp" "$tmp/initdb"
chmod 644 "$tmp/initdb"/*

root_pw="r00t'pw\"#x"
echo "# image $image"
# The main container keeps its data in a named volume, as the container backend does (the
# storage driver's own layer can be much slower: fuse-overlayfs here).
vol=$(docker volume create "${labels[@]}")
main=$(start -v "$vol:/var/lib/mysql" -v "$tmp/initdb:/docker-entrypoint-initdb.d:ro" \
	-e MARIADB_ROOT_PASSWORD="$root_pw" -e MARIADB_DATABASE=shop -e MARIADB_USER=shopper \
	-e MARIADB_PASSWORD=sh0pper "$image" --server-id=7 --log-bin=binlog)
# The two other flavours of root password and a missing one start alongside.
empty=$(start -e MARIADB_ALLOW_EMPTY_ROOT_PASSWORD=1 "$image")
random=$(start -e MARIADB_RANDOM_ROOT_PASSWORD=yes "$image")
nopw=$(docker create "${labels[@]}" "$image")
docker start -a "$nopw" >"$tmp/nopw.log" 2>&1 || true

check "no root password option: the container exits with 1" 1 "$(docker inspect -f '{{.State.ExitCode}}' "$nopw")"
if grep -q 'MARIADB_ROOT_PASSWORD' "$tmp/nopw.log"; then ok "no root password option: the log names MARIADB_ROOT_PASSWORD"; else not_ok "no root password option: the log does not say why: $(tail -3 "$tmp/nopw.log")"; fi

t0=$(date +%s.%N)
wait_up "$main" root "$root_pw"
echo "# first start (initialisation included) answered after $(since "$t0") s"
check "root logs in over TCP with MARIADB_ROOT_PASSWORD (root@%)" "root@%" "$(sql "$main" root "$root_pw" 'SELECT CURRENT_USER()')"
if sql "$main" root wrong 'SELECT 1' >/dev/null; then not_ok "a wrong root password is refused"; else ok "a wrong root password is refused"; fi
check "MARIADB_DATABASE exists" shop "$(sql "$main" root "$root_pw" "SHOW DATABASES LIKE 'shop'")"
check "MARIADB_USER logs in with MARIADB_PASSWORD" "shopper@%" "$(sql "$main" shopper sh0pper 'SELECT CURRENT_USER()')"
check "MARIADB_USER has all on MARIADB_DATABASE" "1" "$(sql "$main" shopper sh0pper 'CREATE TABLE t (i INT); INSERT INTO t VALUES (1); SELECT COUNT(*) FROM t; DROP TABLE t' shop)"
if sql "$main" shopper sh0pper 'SELECT COUNT(*) FROM mysql.user' >/dev/null; then not_ok "MARIADB_USER has no privilege outside MARIADB_DATABASE"; else ok "MARIADB_USER has no privilege outside MARIADB_DATABASE"; fi
check "init scripts ran in name order (.sql, .sql.gz, .sh) in MARIADB_DATABASE" "sql,sql.gz,sh" "$(sql "$main" root "$root_pw" 'SELECT GROUP_CONCAT(src ORDER BY id) FROM shop.seed')"
check "arguments reach mariadbd (--server-id=7)" 7 "$(sql "$main" root "$root_pw" 'SELECT @@server_id')"
check "arguments reach mariadbd (--log-bin)" 1 "$(sql "$main" root "$root_pw" 'SELECT @@log_bin')"
check "account set-up stays out of the binary log" 0 "$(sql "$main" root "$root_pw" "SHOW BINLOG EVENTS" | grep -ci 'CREATE USER' || true)"
check "pid 1 is mariadbd" mariadbd "$(docker exec "$main" cat /proc/1/comm)"
check "mariadbd runs as mysql" mysql "$(docker exec "$main" stat -c %U /proc/1)"
check "data directory is /var/lib/mysql" /var/lib/mysql/ "$(sql "$main" root "$root_pw" 'SELECT @@datadir')"
check "ready line in the log" 1 "$(docker logs "$main" 2>&1 | grep -c 'port: 3306')"

sql "$main" root "$root_pw" "CREATE TABLE shop.kept (i INT); INSERT INTO shop.kept VALUES (42)" >/dev/null
t0=$(date +%s.%N)
docker stop "$main" >/dev/null
echo "# docker stop took $(since "$t0") s"
check "docker stop: mariadbd shut down cleanly on SIGTERM (exit code 0)" 0 "$(docker inspect -f '{{.State.ExitCode}}' "$main")"
docker start "$main" >/dev/null
t0=$(date +%s.%N)
wait_up "$main" root "$root_pw"
echo "# restart answered after $(since "$t0") s"
check "stop/start keeps the data" 42 "$(sql "$main" root "$root_pw" 'SELECT i FROM shop.kept')"
check "stop/start does not initialise again" 1 "$(docker logs "$main" 2>&1 | grep -c 'init process done')"
check "stop/start does not run the init scripts again" 3 "$(sql "$main" root "$root_pw" 'SELECT COUNT(*) FROM shop.seed')"
check "the arguments apply after a restart too" 7 "$(sql "$main" root "$root_pw" 'SELECT @@server_id')"

wait_up "$empty" root ""
check "MARIADB_ALLOW_EMPTY_ROOT_PASSWORD: root logs in without a password" "root@%" "$(sql "$empty" root "" 'SELECT CURRENT_USER()')"

pw=$(docker logs "$random" 2>&1 | sed -n 's/.*GENERATED ROOT PASSWORD: //p' | head -1)
if [ -n "$pw" ]; then ok "MARIADB_RANDOM_ROOT_PASSWORD: the log has the generated password"; else not_ok "MARIADB_RANDOM_ROOT_PASSWORD: no GENERATED ROOT PASSWORD line"; fi
wait_up "$random" root "$pw"
check "MARIADB_RANDOM_ROOT_PASSWORD: root logs in with it" "root@%" "$(sql "$random" root "$pw" 'SELECT CURRENT_USER()')"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
