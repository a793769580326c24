#!/usr/bin/env bash
# Install CRIU 4.2.x for gomr's attempt cloning (see docs/criu.md).
#
#   install.sh [CRIU_DIR]        (default: $CRIU_DIR, else /opt/gomr/criu)
#
# GOMR_CRIU_ARCHIVE overrides the Debian archive (default http://deb.debian.org/debian).
#
# Debian 12's own criu (3.17) fails on these machines' 6.18 kernel (vdso), and
# Debian 13's (4.1) cannot dump a task holding an inet socket on kernel >= 6.16.
# So this script downloads Debian unstable's criu 4.2.x .debs (criu, libcompel1,
# libnet9, libnl-3-200) and Debian 13's libc6 with apt, using a private sources
# list and private apt state/cache directories (the system's apt configuration
# is neither read for sources nor changed; signatures are verified against
# /usr/share/keyrings/debian-archive-keyring.gpg), unpacks them with dpkg-deb -x
# into CRIU_DIR/root, installs from the host's own suite whichever other
# libraries criu needs are missing (libprotobuf-c1, libnftables1, ...), and
# writes CRIU_DIR/criu.sh, a wrapper that runs criu under the private ld.so.
#
# Exit status: 0 when CRIU >= 4.2 is ready at CRIU_DIR/criu.sh (quick check when
# it already is), also 0 when not root (nothing installed, a message says that
# cloning is unavailable); non-zero when installing as root failed.
set -euo pipefail

CRIU_DIR=${1:-${CRIU_DIR:-/opt/gomr/criu}}
CRIU_DIR=$(realpath -m -- "$CRIU_DIR")
case $CRIU_DIR in *"'"*) echo "criu-install: ERROR: CRIU_DIR $CRIU_DIR contains a quote" >&2; exit 1 ;; esac
WRAPPER=$CRIU_DIR/criu.sh
MIN_VERSION=4.2
ARCHIVE=${GOMR_CRIU_ARCHIVE:-http://deb.debian.org/debian} # a Debian mirror with sid and trixie
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
CRIU_SUITE=sid         # criu 4.2.x and the libraries built with it
LIBC_SUITE=trixie      # Debian 13's glibc 2.41: new enough for sid's criu
SHIPPED="criu libcompel1 libnet9 libnl-3-200 libc6"   # what goes into CRIU_DIR/root

say() { echo "criu-install: $*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# version_ok V: V >= MIN_VERSION.
version_ok() {
	[ -n "$1" ] && [ "$(printf '%s\n%s\n' "$MIN_VERSION" "$1" | sort -V | head -n1)" = "$MIN_VERSION" ]
}

# wrapper_version W: the version W --version prints ("" when it does not run).
wrapper_version() {
	[ -x "$1" ] || return 0
	"$1" --version 2>/dev/null | sed -n 's/^Version: *//p' | head -n1 || true
}

# installed: CRIU >= MIN_VERSION runs through the wrapper.
installed() {
	local v
	v=$(wrapper_version "$WRAPPER")
	version_ok "$v" || return 1
	if [ "$(id -u)" = 0 ]; then
		say "CRIU $v ready: $WRAPPER"
	else
		say "CRIU $v installed at $WRAPPER, but it needs root: cloning is unavailable to uid $(id -u)"
	fi
}

installed && exit 0

if [ "$(id -u)" != 0 ]; then
	say "CRIU >= $MIN_VERSION is not installed at $WRAPPER and installing it (and running it) needs root;"
	say "CRIU cloning will be unavailable: TaskTrackers start fresh attempts instead and the CRIU tests skip."
	exit 0
fi

for cmd in apt-get dpkg-deb dpkg-query flock realpath sort; do
	command -v "$cmd" >/dev/null || die "$cmd not found: this installer needs a Debian system with apt and dpkg"
done
[ -r "$KEYRING" ] || die "Debian archive keyring $KEYRING missing (apt-get install debian-archive-keyring)"
[ "$(dpkg --print-architecture)" = amd64 ] || die "only amd64 is supported (this is $(dpkg --print-architecture))"

mkdir -p "$CRIU_DIR" || die "cannot create $CRIU_DIR"
exec 9>"$CRIU_DIR/.install.lock"
flock -w 900 9 || die "another install holds $CRIU_DIR/.install.lock"
installed && exit 0 # installed by whoever held the lock

tmp=$(mktemp -d "${TMPDIR:-/tmp}/gomr-criu.XXXXXX")
trap 'rm -rf "$tmp" "$CRIU_DIR/.root.new" "$CRIU_DIR/.criu.sh.new"' EXIT
chmod 755 "$tmp" # apt's _apt sandbox user must reach the download dir
mkdir -p "$tmp"/{empty,lists/partial,archives/partial,debs}
: >"$tmp/status"
cat >"$tmp/sources.list" <<EOF
deb [arch=amd64 signed-by=$KEYRING] $ARCHIVE $CRIU_SUITE main
deb [arch=amd64 signed-by=$KEYRING] $ARCHIVE $LIBC_SUITE main
EOF
# Read first (APT_CONFIG): keep the host's apt.conf.d out (its hooks, its
# index targets); only a configured HTTP proxy is carried over.
proxy=
eval "$(apt-config shell proxy Acquire::http::Proxy 2>/dev/null)" || proxy=
{
	echo "Dir::Etc::Parts \"$tmp/empty\";"
	echo 'Dir::Etc::Main "/dev/null";'
	[ -z "$proxy" ] || echo "Acquire::http::Proxy \"$proxy\";"
} >"$tmp/apt.conf"
apt_opts=(
	-o "Dir::Etc::SourceList=$tmp/sources.list"
	-o "Dir::Etc::SourceParts=$tmp/empty"
	-o "Dir::Etc::Preferences=/dev/null"
	-o "Dir::Etc::PreferencesParts=$tmp/empty"
	-o "Dir::State=$tmp"
	-o "Dir::State::Lists=$tmp/lists"
	-o "Dir::State::status=$tmp/status"
	-o "Dir::Cache=$tmp"
	-o "Dir::Cache::Archives=$tmp/archives"
	-o "Acquire::Languages=none"
	-o "APT::Architectures::=amd64"
	# Debian's unstable Release files carry a one-week Valid-Until and these
	# machines' clocks can run ahead of the archive; the InRelease signature
	# is still checked against the keyring above.
	-o "Acquire::Check-Valid-Until=false"
	-q
)
papt() { APT_CONFIG=$tmp/apt.conf "$@" "${apt_opts[@]}"; }

say "downloading the Debian $CRIU_SUITE and $LIBC_SUITE package indexes (~20 MB) from $ARCHIVE"
papt apt-get update >"$tmp/update.log" 2>&1 || {
	cat "$tmp/update.log" >&2
	die "apt-get update of $CRIU_SUITE/$LIBC_SUITE from $ARCHIVE failed (network to deb.debian.org? keyring?)"
}
if grep -E '^(E: |W: Failed to fetch|W: Some index files failed)' "$tmp/update.log" >&2; then
	die "could not fetch the Debian $CRIU_SUITE/$LIBC_SUITE package indexes from $ARCHIVE (above; network to deb.debian.org?)"
fi
grep -E '^W: ' "$tmp/update.log" >&2 || true

cd "$tmp/debs"
papt apt-get download criu/$CRIU_SUITE libcompel1/$CRIU_SUITE libnet9/$CRIU_SUITE \
	libnl-3-200/$CRIU_SUITE libc6/$LIBC_SUITE >"$tmp/download.log" 2>&1 || {
	cat "$tmp/download.log" >&2
	die "apt-get download of criu, libcompel1, libnet9, libnl-3-200 ($CRIU_SUITE) and libc6 ($LIBC_SUITE) failed"
}
cd "$tmp"
criu_deb=$(echo "$tmp"/debs/criu_*.deb)
[ -f "$criu_deb" ] || die "apt-get download produced no criu .deb in $tmp/debs"
deb_version=$(dpkg-deb -f "$criu_deb" Version)
version_ok "${deb_version%%-*}" || die "Debian $CRIU_SUITE has criu $deb_version; need >= $MIN_VERSION"
say "got $(cd debs && echo *.deb)"

# Libraries the shipped packages depend on and that come from the host: install
# the missing ones from the host's own suite (names without the t64 suffix of
# Debian >= 13). The shipped packages themselves are left out.
need=()
for deb in "$tmp"/debs/*.deb; do
	deps=$(dpkg-deb -f "$deb" Depends | tr ',' '\n' | sed 's/[(|].*//; s/:any//; s/ //g')
	for p in $deps; do
		p=${p%t64}
		case " $SHIPPED " in *" $p "*) continue ;; esac
		case " ${need[*]} " in *" $p "*) continue ;; esac
		need+=("$p")
	done
done
missing=()
for p in "${need[@]}"; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
	say "installing from the host's apt sources: ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	inst=(apt-get install -y -q --no-install-recommends -o DPkg::Lock::Timeout=300)
	if ! "${inst[@]}" "${missing[@]}" >"$tmp/install.log" 2>&1; then
		say "apt-get install failed; refreshing the host's package lists and retrying"
		apt-get update -q >>"$tmp/install.log" 2>&1 || true
		"${inst[@]}" "${missing[@]}" >>"$tmp/install.log" 2>&1 || {
			cat "$tmp/install.log" >&2
			die "apt-get install ${missing[*]} from the host's sources failed"
		}
	fi
fi

# write_wrapper FILE ROOT: the wrapper, with ROOT baked in.
write_wrapper() {
	cat >"$1" <<EOF
#!/bin/sh
# CRIU ${deb_version} from Debian $CRIU_SUITE with Debian $LIBC_SUITE's glibc, run by
# the private ld.so. Written by gomr's tasktracker/criu/install.sh.
R='$2'
exec "\$R/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" --library-path "\$R/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu" "\$R/usr/sbin/criu" "\$@"
EOF
	chmod 755 "$1"
}

# check_root ROOT WRAPPER: every library resolves and --version is >= MIN_VERSION.
check_root() {
	local ldso=$1/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2 v
	[ -x "$ldso" ] || die "no ld.so at $ldso after unpacking libc6"
	if "$ldso" --list --library-path "$1/usr/lib/x86_64-linux-gnu:/lib/x86_64-linux-gnu" \
		"$1/usr/sbin/criu" 2>&1 | grep -i 'not found' >&2; then
		die "libraries of $1/usr/sbin/criu not found (above)"
	fi
	v=$(wrapper_version "$2")
	version_ok "$v" || die "$2 --version gives '$v' ($("$2" --version 2>&1 | head -n3 | tr '\n' ' '))"
}

rm -rf "$CRIU_DIR/.root.new"
mkdir "$CRIU_DIR/.root.new"
for deb in "$tmp"/debs/*.deb; do
	dpkg-deb -x "$deb" "$CRIU_DIR/.root.new" || die "dpkg-deb -x $deb failed"
done
write_wrapper "$CRIU_DIR/.criu.sh.new" "$CRIU_DIR/.root.new"
check_root "$CRIU_DIR/.root.new" "$CRIU_DIR/.criu.sh.new"

rm -rf "$CRIU_DIR/root"
mv "$CRIU_DIR/.root.new" "$CRIU_DIR/root"
write_wrapper "$CRIU_DIR/.criu.sh.new" "$CRIU_DIR/root"
check_root "$CRIU_DIR/root" "$CRIU_DIR/.criu.sh.new"
mv "$CRIU_DIR/.criu.sh.new" "$WRAPPER"
installed || die "$WRAPPER does not run after installing"
