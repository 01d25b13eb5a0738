#!/usr/bin/env bash
# connscale.sh — how little memory stampede needs per idle connection.
#
#   bench/connscale.sh [CONNS] [SECS]      default 19000 connections, 40 s
#
# Starts nginx on 127.0.0.1 (4 workers, 20,000 connections each), then runs
# one stampede process holding CONNS keep-alive connections, each user
# sending one request every 10 s (the connections are idle almost all the
# time). Once every connection is established it reads the generator's RSS
# from /proc and prints RSS per connection, next to a 1-connection baseline
# so the fixed cost (binary, histograms) is visible apart from the
# per-connection cost. Needs the open-files hard limit ≥ CONNS + 100.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
CONNS=${1:-19000}
SECS=${2:-40}
PORT=${PORT:-8090}
export PATH="$PATH:/usr/sbin:/usr/local/go/bin"
command -v nginx >/dev/null || { export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; apt-get install -y -qq nginx >/dev/null; }
mkdir -p "$HERE/.bin"
(cd "$ROOT" && go build -o "$HERE/.bin/stampede" ./cmd/stampede)
ulimit -n "$(ulimit -Hn)"

dir=$(mktemp -d /tmp/connscale.XXXXXX)
mkdir -p "$dir/tmp"
cat >"$dir/nginx.conf" <<NGX
daemon off;
worker_processes 4;
worker_rlimit_nofile 20000;
pid nginx.pid;
error_log error.log warn;
events { worker_connections 20000; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 300s;
  client_body_temp_path tmp/cb; proxy_temp_path tmp/p; fastcgi_temp_path tmp/f; uwsgi_temp_path tmp/u; scgi_temp_path tmp/s;
  server { listen 127.0.0.1:$PORT backlog=8192; location / { return 200 "hello, world\n"; } }
}
NGX
nginx -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" &
ngx=$!
trap 'kill $ngx 2>/dev/null; wait $ngx 2>/dev/null; rm -rf "$dir"' EXIT
sleep 1

measure() { # conns secs -> prints "established rss_kb"
  local n=$1 secs=$2
  "$HERE/.bin/stampede" url "http://127.0.0.1:$PORT/" -c "$n" -r "$(awk -v n="$n" 'BEGIN{printf "%g", n/10}')" \
    -d "${secs}s" --format json >"$dir/out.json" 2>"$dir/err.log" &
  local pid=$! est=0 rss=0 t=0
  # Wait until every user has connected (the first pace period spreads
  # the connects over 10 s), then sample at the quietest moment.
  while kill -0 $pid 2>/dev/null && ((t < secs - 3)); do
    sleep 1; t=$((t + 1))
    est=$(ss -Htn state established "( dport = :$PORT )" | wc -l)
    ((est >= n)) && ((t >= 12)) && break
  done
  rss=$(awk '/VmRSS/{print $2}' /proc/$pid/status 2>/dev/null || echo 0)
  wait $pid || true
  echo "$est $rss"
}

read -r base_est base_rss < <(measure 1 14)
read -r est rss < <(measure "$CONNS" "$SECS")
echo
echo "| connections asked | established | stampede RSS | RSS per connection | marginal per connection (minus 1-connection baseline $((base_rss / 1024)) MB) |"
echo "|---|---|---|---|---|"
awk -v n="$CONNS" -v e="$est" -v r="$rss" -v b="$base_rss" 'BEGIN{printf "| %d | %d | %.1f MB | %.2f KB | %.2f KB |\n", n, e, r/1024, r/e, (r-b)/e}'
echo
echo "summary of the run:"; cat "$dir/out.json"
