#!/usr/bin/env bash
# Builds stampede's release artifacts: a static binary for each of
# linux, darwin and windows on amd64 and arm64, each in a .tar.gz with the
# LICENSE (Windows 10 and later unpack it with the tar it ships), and a
# SHA256SUMS file over the archives. The version is stamped into every
# binary (`stampede --version`), and the image build that goes with it is
# printed at the end so the image's tag is the same version.
#
#   scripts/release.sh VERSION [OUTDIR]      (OUTDIR: dist/VERSION)
#   RELEASE_TARGETS="linux/amd64" scripts/release.sh 1.2.3   # one target
#
# It lives in scripts/ rather than bench/ (benchmarks) or .ci/ (CI's own
# steps): it is for the person cutting a release, on any machine with Go.
set -euo pipefail
cd "$(dirname "$0")/.."

version=${1:-}
if [[ ! $version =~ ^v?[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "usage: scripts/release.sh VERSION [OUTDIR]   (VERSION like 1.2.3 or v1.2.3-rc.1, got '${version}')" >&2
  exit 2
fi
out=${2:-dist/$version}
targets=${RELEASE_TARGETS:-"linux/amd64 linux/arm64 darwin/amd64 darwin/arm64 windows/amd64 windows/arm64"}

if [ -e "$out" ] && [ -n "$(ls -A "$out")" ]; then
  echo "release: $out is not empty; remove it or name another directory" >&2
  exit 2
fi
host="$(go env GOOS)/$(go env GOARCH)"
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# sha256sum on Linux, shasum on macOS: the same file format.
if command -v sha256sum >/dev/null; then sum() { sha256sum "$@"; }; else sum() { shasum -a 256 "$@"; }; fi

for target in $targets; do
  goos=${target%/*}
  goarch=${target#*/}
  name="stampede_${version}_${goos}_${goarch}"
  exe=stampede
  [ "$goos" = windows ] && exe=stampede.exe
  mkdir -p "$work/$name"
  # Static (no cgo: no libc to match), no build paths in the binary, no
  # symbol tables, and the version where `stampede --version` reads it.
  CGO_ENABLED=0 GOOS=$goos GOARCH=$goarch go build -trimpath \
    -ldflags "-s -w -X main.version=$version" -o "$work/$name/$exe" ./cmd/stampede
  # The stamp is checked by running the binary where it runs here, and
  # by finding the version in it for the other platforms.
  if [ "$target" = "$host" ]; then
    said=$("$work/$name/$exe" --version)
    if [ "$said" != "stampede $version" ]; then
      echo "release: $name says '$said', want 'stampede $version'" >&2
      exit 1
    fi
  elif ! grep -aqF -- "$version" "$work/$name/$exe"; then
    echo "release: $name: version $version not stamped" >&2
    exit 1
  fi
  cp LICENSE "$work/$name/"
  tar -C "$work" -czf "$out/$name.tar.gz" "$name"
  echo "built $out/$name.tar.gz"
done

(cd "$out" && sum ./*.tar.gz | sed 's| \./| |' >SHA256SUMS)
echo "wrote $out/SHA256SUMS"
# The one-command install (curl ... | sh) for this release: install.sh
# with the version written in, published beside the archives.
sed "s/__STAMPEDE_VERSION__}/$version}/" scripts/install.sh >"$out/install.sh"
grep -qF -- "version=\${STAMPEDE_VERSION:-$version}" "$out/install.sh" || { echo "release: install.sh not stamped with $version" >&2; exit 1; }
echo "wrote $out/install.sh"
echo "the image for this version (stampede k8s --image ...):"
echo "  docker build --build-arg VERSION=$version -t ghcr.io/stampede-load/stampede:$version ."
