#!/usr/bin/env bash
# Puts a Valkey 8.1 server in .tmp/valkey/ (or $ONCEONLY_VALKEY_DIR) for the suites and the benchmark
# of the Redis store's native compare-and-set path (SET ... IFEQ, which Redis 7 lacks). It comes from
# Debian's own packages: Debian 13 (trixie) carries valkey-server 8.1, built against trixie's C
# library, so trixie's libc and every library Valkey loads come along (none from the host), and
# the server runs through trixie's dynamic loader. Nothing is installed on the system: apt reads a private copy of
# the machine's Debian sources (same mirrors, signature keys and checks; only the suite names
# changed) and downloads the packages, which are unpacked here. Prints the server's path.
#
#   bash scripts/valkey.sh          (again: prints the path, downloads nothing)
set -euo pipefail
cd "$(dirname "$0")/.."
dest=${ONCEONLY_VALKEY_DIR:-.tmp/valkey}
server="$dest/valkey-server"
# One run at a time per directory (CI, the suite and the bench may all ask at once): the others wait
# and then find the finished install.
mkdir -p "$dest"
exec 9>"$dest/.lock"
flock 9
# The dynamic loader under root $1, relative to it: x86_64 and aarch64 name it ld-linux*, ppc64el
# and s390x ld64.
find_loader() {
  local candidate
  for candidate in "$1"/usr/lib/*-linux-gnu/ld-linux*.so.* "$1"/usr/lib/*-linux-gnu/ld64.so.*; do
    if [ -e "$candidate" ]; then
      echo "${candidate#"$1"/}"
      return 0
    fi
  done
  return 1
}
# Succeeds when every library the server under $1/root loads comes from there (the others, printed).
own_libraries() {
  local root loader listed
  root=$(readlink -f "$1/root") || return 1
  loader=$(find_loader "$root") || return 1
  listed=$("$root/$loader" --library-path "$root/$(dirname "$loader")" --list "$root/usr/bin/valkey-server") || return 1
  ! grep '=>' <<<"$listed" | grep -v -F "$root/"
}
# An install is reused only if it passes the same checks as a new one (an earlier run or an earlier
# version of this script may have left one that loads libraries from the host).
if [ -x "$server" ] && "$server" --version >/dev/null 2>&1 && own_libraries "$dest" >/dev/null 2>&1; then
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
if ! apt-get "${apt_opts[@]}" update; then
  echo "scripts/valkey.sh: apt could not read Debian 13's package lists (offline, or a keyring without Debian 13's keys: debian-archive-keyring 2023.3+deb12u1 or later has them)" >&2
  exit 1
fi
# valkey-server's and valkey-tools' run-time dependencies in trixie, and theirs: libsystemd0's
# libcap2, jemalloc's libstdc++6 and libgcc-s1, libcrypto's zlib1g and libzstd1.
(cd "$work/debs" && apt-get "${apt_opts[@]}" download \
  valkey-server valkey-tools libc6 libssl3t64 libjemalloc2 liblzf1 libsystemd0 libatomic1 libcap2 \
  libstdc++6 libgcc-s1 zlib1g libzstd1)

# Only what this script puts there is removed (the directory may be one given by hand).
rm -rf "$dest/root" "$server"
mkdir -p "$dest/root"
for deb in "$work"/debs/*.deb; do dpkg-deb -x "$deb" "$dest/root"; done
# The loader and library directory of this machine's architecture (x86_64-linux-gnu, aarch64-...).
loader=$(find_loader "$dest/root")
libdir=$(dirname "$loader")
# Every library the server loads must come from here, none from the host; the wrapper is written
# only then, so a failed run leaves nothing the next one would reuse.
if ! own_libraries "$dest" >&2; then
  echo "scripts/valkey.sh: the libraries above come from the host, not from Debian 13's packages" >&2
  exit 1
fi
cat >"$server.new" <<EOF
#!/bin/sh
# Valkey 8.1 from Debian 13's packages, on the C library it was built against (scripts/valkey.sh).
here=\$(dirname "\$(readlink -f "\$0")")
exec "\$here/root/$loader" --library-path "\$here/root/$libdir" "\$here/root/usr/bin/valkey-server" "\$@"
EOF
chmod +x "$server.new"
mv -f "$server.new" "$server"
"$server" --version >&2
readlink -f "$server"
