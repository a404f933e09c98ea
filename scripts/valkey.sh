#!/usr/bin/env bash
# Puts a Valkey 8.1 server in .tmp/valkey/ (or $ONCEONLY_VALKEY_DIR) for the suites and the benchmark
# of the Redis store's native compare-and-set path (SET ... IFEQ, which Redis 7 lacks). It comes from
# Debian's own packages: Debian 13 (trixie) carries valkey-server 8.1, built against trixie's C
# library, so trixie's libc and the few libraries Valkey links come along, and the server runs
# through trixie's dynamic loader. Nothing is installed on the system: apt reads a private copy of
# the machine's Debian sources (same mirrors, signature keys and checks; only the suite names
# changed) and downloads the packages, which are unpacked here. Prints the server's path.
#
#   bash scripts/valkey.sh          (again: prints the path, downloads nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${ONCEONLY_VALKEY_DIR:-.tmp/valkey}
server="$dest/valkey-server"
if [ -x "$server" ] && "$server" --version >/dev/null 2>&1; then
  readlink -f "$server"
  exit 0
fi

sources=/etc/apt/sources.list.d/debian.sources
if [ ! -r "$sources" ] || ! command -v apt-get >/dev/null; then
  echo "scripts/valkey.sh: needs a Debian machine with apt and $sources (deb822 sources)" >&2
  exit 1
fi
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/lists/partial" "$work/cache/archives/partial" "$work/debs"
# Each stanza's suites, renamed for trixie: the security archive's, and the main archive's.
awk '/^Suites:/ { if ($0 ~ /-security/) print "Suites: trixie-security"; else print "Suites: trixie trixie-updates"; next } { print }' \
  "$sources" >"$work/trixie.sources"
apt_opts=(
  -o "Dir::Etc::SourceList=$work/trixie.sources"
  -o "Dir::Etc::SourceParts=$work/none"
  -o "Dir::State::Lists=$work/lists"
  -o "Dir::Cache=$work/cache"
  -o "Debug::NoLocking=1"
  -o "APT::Sandbox::User=root"
  -qq
)
apt-get "${apt_opts[@]}" update
# valkey-server's and valkey-tools' run-time dependencies in trixie, with libsystemd0's own.
(cd "$work/debs" && apt-get "${apt_opts[@]}" download \
  valkey-server valkey-tools libc6 libssl3t64 libjemalloc2 liblzf1 libsystemd0 libatomic1 libcap2)

rm -rf "$dest"
mkdir -p "$dest/root"
for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$dest/root"; done
cat >"$server" <<'EOF'
#!/bin/sh
# Valkey 8.1 from Debian 13's packages, on the C library it was built against (scripts/valkey.sh).
here=$(dirname "$(readlink -f "$0")")
lib="$here/root/usr/lib/x86_64-linux-gnu"
exec "$lib/ld-linux-x86-64.so.2" --library-path "$lib" "$here/root/usr/bin/valkey-server" "$@"
EOF
chmod +x "$server"
"$server" --version >&2
readlink -f "$server"
