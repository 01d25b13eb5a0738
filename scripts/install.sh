#!/bin/sh
# Installs a stampede release binary, with nothing but a POSIX shell,
# curl or wget, tar and sha256sum (or shasum) — no Go:
#
#   curl -fsSL https://github.com/stampede-load/stampede/releases/latest/download/install.sh | sh
#
# scripts/release.sh publishes this file beside the archives with the
# release's version written into it, so the latest release's install.sh
# installs that release. It picks the archive for this OS and CPU, checks
# it against the release's SHA256SUMS before unpacking anything, and puts
# the binary in $STAMPEDE_INSTALL_DIR (default: /usr/local/bin when it is
# writable, else ~/.local/bin).
#
# Settings (environment):
#   STAMPEDE_VERSION        a release other than the one this file came with
#   STAMPEDE_DOWNLOAD_URL   where the archives are (default: the GitHub release)
#   STAMPEDE_INSTALL_DIR    where the binary goes
set -eu

version=${STAMPEDE_VERSION:-__STAMPEDE_VERSION__}
case $version in
  __STAMPEDE_VERSION__) echo "install.sh: this copy names no release; set STAMPEDE_VERSION=1.2.3" >&2; exit 2 ;;
esac
base=${STAMPEDE_DOWNLOAD_URL:-https://github.com/stampede-load/stampede/releases/download/v${version#v}}

case $(uname -s) in
  Linux) os=linux ;;
  Darwin) os=darwin ;;
  *) echo "install.sh: no release binary for $(uname -s); Windows: download the windows archive from $base" >&2; exit 1 ;;
esac
case $(uname -m) in
  x86_64 | amd64) arch=amd64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "install.sh: no release binary for CPU $(uname -m) (amd64 and arm64 are built)" >&2; exit 1 ;;
esac

if command -v curl >/dev/null 2>&1; then
  fetch() { curl -fsSL -o "$2" "$1"; }
elif command -v wget >/dev/null 2>&1; then
  fetch() { wget -q -O "$2" "$1"; }
else
  echo "install.sh: needs curl or wget" >&2; exit 1
fi
if command -v sha256sum >/dev/null 2>&1; then
  digest() { sha256sum "$1" | cut -d' ' -f1; }
elif command -v shasum >/dev/null 2>&1; then
  digest() { shasum -a 256 "$1" | cut -d' ' -f1; }
else
  echo "install.sh: needs sha256sum or shasum to check the download" >&2; exit 1
fi

name="stampede_${version}_${os}_${arch}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT INT TERM
fetch "$base/$name.tar.gz" "$work/$name.tar.gz" || { echo "install.sh: could not download $base/$name.tar.gz" >&2; exit 1; }
fetch "$base/SHA256SUMS" "$work/SHA256SUMS" || { echo "install.sh: could not download $base/SHA256SUMS" >&2; exit 1; }
want=$(awk -v f="$name.tar.gz" '$2 == f { print $1 }' "$work/SHA256SUMS")
got=$(digest "$work/$name.tar.gz")
if [ -z "$want" ] || [ "$want" != "$got" ]; then
  echo "install.sh: $name.tar.gz does not match SHA256SUMS (want '${want:-not listed}', got $got); nothing installed" >&2
  exit 1
fi
tar -xzf "$work/$name.tar.gz" -C "$work"

dir=${STAMPEDE_INSTALL_DIR:-}
if [ -z "$dir" ]; then
  if [ -w /usr/local/bin ]; then dir=/usr/local/bin; else dir=$HOME/.local/bin; fi
fi
mkdir -p "$dir"
cp "$work/$name/stampede" "$dir/stampede.new"
chmod 0755 "$dir/stampede.new"
mv -f "$dir/stampede.new" "$dir/stampede"
echo "installed $("$dir/stampede" --version) at $dir/stampede"
case ":$PATH:" in
  *":$dir:"*) ;;
  *) echo "note: $dir is not on your PATH; add it, or run $dir/stampede" ;;
esac
