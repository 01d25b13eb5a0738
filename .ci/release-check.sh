#!/usr/bin/env bash
# The release path a user without Go takes, end to end: scripts/release.sh
# builds this machine's archive, a loopback web server stands in for the
# release page, the published install.sh is piped to sh in an environment
# whose PATH holds only the few tools the script names (no Go, no build
# tools), and the installed binary runs the README's quickstart.
set -euo pipefail
cd "$(dirname "$0")/.."

version=0.0.0-ci
work=$(mktemp -d)
server_pid=
cleanup() {
  [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

host="$(go env GOOS)/$(go env GOARCH)"
RELEASE_TARGETS=$host bash scripts/release.sh "$version" "$work/dist" >/dev/null
# A tampered copy beside it: install.sh must refuse it and install nothing.
mkdir "$work/dist/tampered"
cp "$work/dist"/*.tar.gz "$work/dist/tampered/"
sed 's/^\(.\)/0\1/; s/^\(.\{64\}\)./\1/' "$work/dist/SHA256SUMS" >"$work/dist/tampered/SHA256SUMS"

# A web server on a free loopback port; it writes the port once bound.
python3 - "$work/dist" "$work/port" >"$work/server.log" 2>&1 <<'EOF' &
import functools, http.server, sys
handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=sys.argv[1])
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
open(sys.argv[2], "w").write(str(srv.server_address[1]))
srv.serve_forever()
EOF
server_pid=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
[ -s "$work/port" ] || { echo "release-check: the web server did not start" >&2; cat "$work/server.log" >&2; exit 1; }
url="http://127.0.0.1:$(cat "$work/port")"

# Only what install.sh and the quickstart need; whatever else this
# machine has (go above all) is out of reach.
mkdir -p "$work/tools" "$work/home"
for t in sh curl tar gzip sha256sum awk cut uname mktemp mkdir cp chmod mv rm cat; do
  p=$(command -v "$t") || { echo "release-check: $t is not installed" >&2; exit 1; }
  ln -s "$p" "$work/tools/$t"
done
bare() { env -i HOME="$work/home" PATH="$work/tools" "$@"; }
if bare sh -c 'command -v go' >/dev/null; then
  echo "release-check: go is reachable in the bare environment" >&2; exit 1
fi

if bare STAMPEDE_DOWNLOAD_URL="$url/tampered" STAMPEDE_INSTALL_DIR="$work/bin" \
  sh -c "curl -fsSL $url/install.sh | sh" 2>"$work/tampered.log"; then
  echo "release-check: install.sh installed an archive that does not match SHA256SUMS" >&2; exit 1
fi
grep -q "does not match SHA256SUMS" "$work/tampered.log" || { cat "$work/tampered.log" >&2; exit 1; }
[ ! -e "$work/bin/stampede" ] || { echo "release-check: a tampered archive left a binary" >&2; exit 1; }

bare STAMPEDE_DOWNLOAD_URL="$url" STAMPEDE_INSTALL_DIR="$work/bin" \
  sh -c "curl -fsSL $url/install.sh | sh"
said=$(bare "$work/bin/stampede" --version)
[ "$said" = "stampede $version" ] || { echo "release-check: installed binary says '$said'" >&2; exit 1; }
bare "$work/bin/stampede" run examples/quickstart.yaml -o "$work/quickstart.json" >"$work/run.log" 2>&1 ||
  { echo "release-check: the installed binary failed the quickstart:" >&2; cat "$work/run.log" >&2; exit 1; }
[ -s "$work/quickstart.json" ] || { echo "release-check: no result file" >&2; exit 1; }
echo "release-check: $said installed with one command from $url and ran the quickstart"
