#!/usr/bin/env bash
# Builds the MariaDB container image of the integration tests from Debian packages, without a
# registry: debootstrap of a minimal Debian of this machine's release from this machine's own
# Debian mirror (as configured in /etc/apt/sources.list*), mariadb-server and galera-4 installed
# in it with apt-get, then `docker import` with scripts/image/entrypoint.sh as the entrypoint.
#
#   scripts/build-image.sh              builds the image unless present; prints its reference
#   scripts/build-image.sh --print-tag  prints the reference only, builds nothing
#
# stdout is exactly one line, the image reference (mysqlfailover-mariadb:<12 hex>); progress and
# errors go to stderr. The tag is a hash of everything that decides the result (this script, the
# entrypoint, the Debian release, architecture and sources), so an image already present is
# reused at once. Building needs root (or sudo -n) and a Docker engine; debootstrap is installed
# with apt-get when missing. Set MYSQLFAILOVER_BUILD_DIR to choose where the chroot is made
# (default /dev/shm when it has room, else the temp dir).
set -euo pipefail

self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
entrypoint=$(dirname "$self")/image/entrypoint.sh
repository=mysqlfailover-mariadb

say() { echo "build-image: $*" >&2; }
die() {
	say "error: $*"
	exit 1
}

mode=build
case "${1:-}" in
'') ;;
--print-tag) mode=tag ;;
-h | --help)
	sed -n '2,/^set -euo/p' "$self" | sed '$d; s/^# \{0,1\}//' >&2
	exit 0
	;;
*) die "unknown argument '$1' (want none or --print-tag)" ;;
esac
[ "$#" -le 1 ] || die "too many arguments (want none or --print-tag)"
[ -r "$entrypoint" ] || die "the entrypoint $entrypoint is missing"

# --- The Debian release and sources of this machine ---------------------------------------------
[ -r /etc/os-release ] || die "no /etc/os-release: this script builds from the machine's own Debian release"
# shellcheck disable=SC1091
os_id=$(. /etc/os-release && echo "${ID:-}")
# shellcheck disable=SC1091
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
[ "$os_id" = debian ] || die "this machine is '$os_id', not Debian (/etc/os-release): the image is built from the machine's own Debian release and mirror"
[ -n "$codename" ] || die "/etc/os-release has no VERSION_CODENAME (a Debian testing/sid machine?)"
arch=$(dpkg --print-architecture)

# apt_sources prints one line "URI SUITE COMPONENTS SIGNED-BY" (components comma-separated,
# SIGNED-BY a keyring file or -) for every enabled binary ("deb") source in the one-line files
# (sources.list, sources.list.d/*.list) and the deb822 files (sources.list.d/*.sources). Files
# with other names (*.disabled, *.save) are ignored, as apt ignores them.
apt_sources() {
	local f
	for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
		[ -f "$f" ] || continue
		awk '
			{ sub(/#.*/, "") }
			$1 != "deb" { next }
			{
				i = 2; signed = "-"
				if ($2 ~ /^\[/) {
					opts = ""
					for (; i <= NF; i++) { opts = opts " " $i; if ($i ~ /\]$/) { i++; break } }
					gsub(/[\[\]]/, " ", opts)
					n = split(opts, o, /[ \t]+/)
					for (k = 1; k <= n; k++) if (tolower(o[k]) ~ /^signed-by=/) { signed = o[k]; sub(/^[^=]*=/, "", signed) }
				}
				uri = $i; suite = $(i + 1); comps = ""
				for (k = i + 2; k <= NF; k++) comps = comps (comps == "" ? "" : ",") $k
				if (uri != "" && suite != "") print uri, suite, (comps == "" ? "-" : comps), signed
			}' "$f"
	done
	for f in /etc/apt/sources.list.d/*.sources; do
		[ -f "$f" ] || continue
		awk '
			function flush(   ui, si, nu, ns, u, s) {
				if (types ~ /(^| )deb( |$)/ && enabled !~ /^(no|false|0)$/) {
					nu = split(uris, u, /[ \t]+/); ns = split(suites, s, /[ \t]+/)
					for (ui = 1; ui <= nu; ui++) for (si = 1; si <= ns; si++)
						if (u[ui] != "" && s[si] != "") print u[ui], s[si], (comps == "" ? "-" : comps), (signed == "" ? "-" : signed)
				}
				types = uris = suites = comps = signed = enabled = ""; key = ""
			}
			/^[ \t]*#/ { next }
			/^[ \t]*$/ { flush(); next }
			/^[ \t]/ { next }  # continuation line (an inline Signed-By key): not a file name
			{
				key = tolower($0); sub(/:.*/, "", key)
				val = $0; sub(/^[^:]*:[ \t]*/, "", val); sub(/[ \t]+$/, "", val)
				if (key == "types") types = val
				else if (key == "uris") uris = val
				else if (key == "suites") suites = val
				else if (key == "components") { comps = val; gsub(/[ \t]+/, ",", comps) }
				else if (key == "signed-by") signed = (val ~ /^\// ? val : "-")
				else if (key == "enabled") enabled = tolower(val)
			}
			END { flush() }' "$f"
	done
}

# A source counts when its suite is the release or its -updates/-security, it has the main
# component, and (when apt has its Release file) the Release file says Origin: Debian.
sources=()
while read -r uri suite comps signed; do
	case "$suite" in "$codename" | "$codename-updates" | "$codename-security") ;; *) continue ;; esac
	case ",$comps," in *,main,*) ;; *) continue ;; esac
	case "$uri" in http://* | https://* | file:/*) ;; *) continue ;; esac
	list=$(echo "${uri%/}" | sed -E 's|^[a-z]+:/+||; s|^[^@/]*@||; s|/|_|g')
	release=
	for f in /var/lib/apt/lists/"${list}_dists_${suite}_"{InRelease,Release}; do
		if [ -f "$f" ]; then
			release=$f
			break
		fi
	done
	if [ -n "$release" ] && ! grep -qx 'Origin: Debian' "$release"; then continue; fi
	line="${uri%/} $suite $signed"
	case " ${sources[*]:-} " in *" $line "*) continue ;; esac # one copy each (several files)
	sources+=("$line")
done < <(apt_sources)
mirror=
keyring=
for s in "${sources[@]}"; do
	read -r uri suite signed <<<"$s"
	if [ "$suite" = "$codename" ]; then
		mirror=$uri
		keyring=$signed
		break
	fi
done
[ -n "$mirror" ] || die "no enabled Debian source for '$codename' with component main in /etc/apt/sources.list or /etc/apt/sources.list.d/*.list, *.sources"

hash=$(
	{
		echo "format 1 $codename $arch"
		printf '%s\n' "${sources[@]}"
		cat "$self" "$entrypoint"
	} | sha256sum | cut -c1-12
)
ref=$repository:$hash

if [ "$mode" = tag ]; then
	echo "$ref"
	exit 0
fi

if docker image inspect "$ref" >/dev/null 2>&1; then
	say "$ref is present"
	echo "$ref"
	exit 0
fi
if ! out=$(docker version --format '{{.Server.Version}}' 2>&1); then
	die "the Docker engine does not answer to 'docker version' ($(echo "$out" | tail -1)): start it or get access to it, or run the tests with the process backend"
fi

# --- Build (as root) ----------------------------------------------------------------------------
if [ "$(id -u)" != 0 ]; then
	if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
		exec sudo -n --preserve-env=MYSQLFAILOVER_BUILD_DIR,TMPDIR -- "$self"
	fi
	die "building $ref needs root (debootstrap, chroot): run it as root or with sudo"
fi

lock=${TMPDIR:-/tmp}/mysqlfailover-image-build.lock
exec 9>"$lock"
if ! flock -n 9; then
	say "another build is running; waiting for it (lock $lock)"
	flock -w 900 9 || die "waited 15 minutes for the other build (lock $lock)"
fi
if docker image inspect "$ref" >/dev/null 2>&1; then
	say "$ref was built meanwhile"
	echo "$ref"
	exit 0
fi

start=$(date +%s)
PATH=$PATH:/usr/sbin:/sbin
if ! command -v debootstrap >/dev/null 2>&1; then
	say "installing debootstrap with apt-get"
	export DEBIAN_FRONTEND=noninteractive
	if ! apt-get install -y -qq debootstrap >/dev/null 2>&1; then
		apt-get update -qq >&2 || die "apt-get update failed"
		apt-get install -y -qq debootstrap >/dev/null || die "apt-get install debootstrap failed"
	fi
fi

work=
tmp_tag=
# run LOG CMD...: CMD in a session of its own with its output appended to LOG, waited for in
# the background, so that a signal to this script is handled at once and cleanup can stop CMD
# with all it started.
child=
run() {
	local rc=0 log=$1
	shift
	setsid "$@" >>"$log" 2>&1 &
	child=$!
	wait "$child" || rc=$?
	child=
	return "$rc"
}
cleanup() {
	local rc=$? m
	set +e
	if [ -n "$child" ]; then
		kill -TERM -- "-$child" 2>/dev/null
		for _ in $(seq 1 50); do kill -0 "$child" 2>/dev/null || break; sleep 0.2; done
		kill -KILL -- "-$child" 2>/dev/null
		wait "$child" 2>/dev/null
	fi
	if [ -n "$work" ] && [ -d "$work" ]; then
		# Whatever is still mounted in the chroot (debootstrap or we were interrupted) first.
		awk -v p="$work/" 'index($2, p) == 1 { print $2 }' /proc/mounts | sort -r | while read -r m; do
			umount "$m" 2>/dev/null || umount -l "$m"
		done
		rm -rf --one-file-system "$work"
	fi
	if [ -n "$tmp_tag" ]; then docker rmi "$tmp_tag" >/dev/null 2>&1; fi
	if [ "$rc" != 0 ]; then say "failed after $(($(date +%s) - start)) s; the chroot and any partial image are removed"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

base=${MYSQLFAILOVER_BUILD_DIR:-}
if [ -z "$base" ]; then
	base=${TMPDIR:-/tmp}
	opts=$(findmnt -no OPTIONS --target /dev/shm 2>/dev/null || true)
	free=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 { print $4 }')
	if [ -w /dev/shm ] && [[ ",$opts," != *,noexec,* && ",$opts," != *,nodev,* ]] && [ "${free:-0}" -gt 2000000 ]; then
		base=/dev/shm
	fi
fi
work=$(mktemp -d "$base/mysqlfailover-image.XXXXXX")
root=$work/root

say "building $ref: Debian $codename/$arch from $mirror, with mariadb-server and galera-4 (in $work)"
keyopt=()
if [ "$keyring" != - ] && [ -r "$keyring" ]; then
	keyopt=(--keyring="$keyring")
elif [ -r /usr/share/keyrings/debian-archive-keyring.gpg ]; then
	keyopt=(--keyring=/usr/share/keyrings/debian-archive-keyring.gpg)
fi
say "debootstrap --variant=minbase (log: $work/debootstrap.log while it runs)"
if ! run "$work/debootstrap.log" debootstrap --variant=minbase --arch="$arch" "${keyopt[@]}" "$codename" "$root" "$mirror"; then
	tail -20 "$work/debootstrap.log" >&2
	die "debootstrap failed"
fi
say "debootstrap done after $(($(date +%s) - start)) s"

# No docs, man pages or translations from here on; dpkg without fsync; no services started.
cat >"$root/etc/dpkg/dpkg.cfg.d/01-mysqlfailover-nodoc" <<'EOF'
path-exclude=/usr/share/doc/*
path-include=/usr/share/doc/*/copyright
path-exclude=/usr/share/man/*
path-exclude=/usr/share/info/*
path-exclude=/usr/share/locale/*
path-exclude=/usr/share/lintian/*
EOF
echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/02-mysqlfailover-unsafe-io"
printf '#!/bin/sh\nexit 101\n' >"$root/usr/sbin/policy-rc.d"
chmod 755 "$root/usr/sbin/policy-rc.d"
cat >"$root/etc/apt/apt.conf.d/01-mysqlfailover" <<'EOF'
APT::Install-Recommends "false";
Acquire::Languages "none";
EOF

# The machine's Debian sources for the release (main only), with their keyrings.
: >"$root/etc/apt/sources.list"
mkdir -p "$root/etc/apt/keyrings"
for s in "${sources[@]}"; do
	read -r uri suite signed <<<"$s"
	opt=
	if [ "$signed" != - ] && [ -r "$signed" ]; then
		cp "$signed" "$root/etc/apt/keyrings/"
		opt="[signed-by=/etc/apt/keyrings/$(basename "$signed")] "
	fi
	echo "deb $opt$uri $suite main" >>"$root/etc/apt/sources.list"
	# apt's lists of the machine, when it has them, so that apt-get update fetches only changes.
	list=$(echo "$uri" | sed -E 's|^[a-z]+:/+||; s|^[^@/]*@||; s|/|_|g')
	cp /var/lib/apt/lists/"${list}_dists_${suite}_"{InRelease,Release,Release.gpg} "$root/var/lib/apt/lists/" 2>/dev/null || true
	cp /var/lib/apt/lists/"${list}_dists_${suite}_main_binary-${arch}_Packages"* "$root/var/lib/apt/lists/" 2>/dev/null || true
done

# The mysql account of the official image (uid and gid 999), made before the package's preinst
# would make one with the next free system id, so data directories move between the images.
chroot "$root" groupadd --system --gid 999 mysql
chroot "$root" useradd --system --uid 999 --gid 999 --home-dir /nonexistent --no-create-home \
	--shell /bin/false --comment "MySQL Server" mysql

mount -t proc proc "$root/proc"
say "apt-get install mariadb-server galera-4"
if ! run "$work/apt.log" chroot "$root" apt-get update -q ||
	! run "$work/apt.log" env DEBIAN_FRONTEND=noninteractive chroot "$root" apt-get install -y -q mariadb-server galera-4; then
	tail -20 "$work/apt.log" >&2
	die "installing mariadb-server galera-4 in the chroot failed"
fi
umount "$root/proc"
# shellcheck disable=SC2016
version=$(chroot "$root" dpkg-query -W -f '${Version}' mariadb-server)
say "installed mariadb-server $version after $(($(date +%s) - start)) s"

# The server's configuration for a container: listen on every address (Debian's 50-server.cnf
# says 127.0.0.1), no DNS look-ups of clients. The error log already goes to stderr.
sed -i -E 's/^([[:space:]]*bind-address[[:space:]]*=)/#\1/' "$root/etc/mysql/mariadb.conf.d/50-server.cnf"
cat >"$root/etc/mysql/mariadb.conf.d/05-container.cnf" <<'EOF'
# mysqlfailover-mariadb image: the settings of a server in a container.
[mariadbd]
host-cache-size = 0
skip-name-resolve
EOF
install -m 755 "$entrypoint" "$root/usr/local/bin/docker-entrypoint.sh"
mkdir -p "$root/docker-entrypoint-initdb.d" "$root/run/mysqld"
rm -rf "${root:?}/var/lib/mysql" && mkdir -p "$root/var/lib/mysql"
chroot "$root" chown mysql:mysql /var/lib/mysql /run/mysqld
chmod 755 "$root/var/lib/mysql"

# What a running server does not need.
rm -f "$root/etc/dpkg/dpkg.cfg.d/02-mysqlfailover-unsafe-io" "$root/etc/resolv.conf" "$root/etc/hostname"
chroot "$root" apt-get clean
rm -rf "$root"/var/lib/apt/lists/* "$root"/var/cache/apt/*.bin "$root"/var/cache/debconf/*-old \
	"$root"/var/log/* "$root"/tmp/* "$root"/usr/share/man/* "$root"/usr/share/info/* \
	"$root"/usr/share/locale/* "$root"/usr/share/lintian/*
find "$root/usr/share/doc" -mindepth 1 -not -type d -not -name copyright -delete
find "$root/usr/share/doc" -mindepth 1 -type d -empty -delete

tmp_tag=$repository:build-$hash-$$
say "docker import after $(($(date +%s) - start)) s"
# shellcheck disable=SC2016
run "$work/import.log" bash -c 'set -o pipefail; tar --numeric-owner -C "$1" -c --exclude="./dev/*" --exclude="./proc/*" --exclude="./sys/*" . | docker import "${@:3}" - "$2" >/dev/null' \
	import "$root" "$tmp_tag" \
		--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
		--change 'ENV LANG=C.UTF-8' \
		--change 'ENTRYPOINT ["/usr/local/bin/docker-entrypoint.sh"]' \
		--change 'CMD ["mariadbd"]' \
		--change 'EXPOSE 3306' \
		--change "LABEL org.mysqlfailover.image=mariadb org.mysqlfailover.image.hash=$hash org.mysqlfailover.mariadb.version=$version org.mysqlfailover.debian=$codename" \
		--message "mysqlfailover-mariadb: Debian $codename, mariadb-server $version" || {
	tail -20 "$work/import.log" >&2
	die "docker import failed"
}
rm -rf --one-file-system "$root"

# A last check before the image gets its real name: the server binary runs.
docker run --rm --network none --entrypoint /usr/sbin/mariadbd "$tmp_tag" --version >&2 ||
	die "the imported image cannot run mariadbd"
docker tag "$tmp_tag" "$ref"
size=$(docker image inspect --format '{{.Size}}' "$ref")
cpu=$(awk -v hz="$(getconf CLK_TCK)" '{ printf "%.0f s user, %.0f s system", $16 / hz, $17 / hz }' "/proc/$$/stat")
say "built $ref in $(($(date +%s) - start)) s (CPU of the build's processes: $cpu; $((size / 1000000)) MB)"
echo "$ref"
