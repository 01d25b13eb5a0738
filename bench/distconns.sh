#!/usr/bin/env bash
# distconns.sh — hold CONNS idle HTTP keep-alive connections from one
# machine with `stampede run --workers W` (W segment processes, each under
# the per-process open-files limit) and 14 loopback source addresses
# (127.0.0.0/28 less its two ends: 127.0.0.1–127.0.0.14, each with its own ephemeral port range), and report
# the total RSS of the generator processes once every connection is open.
#
#   bench/distconns.sh [CONNS] [WORKERS] [RAMP_S] [HOLD_S]   default 100000 6 60 40
#
# Target: nginx with 8 workers (reuseport, so the kernel spreads the
# connections over them; each worker stays under 20,000 open files).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
CONNS=${1:-100000}
WORKERS=${2:-6}
RAMP=${3:-60}
HOLD=${4:-40}
PORT=${PORT:-8091}
export PATH="$PATH:/usr/sbin:/usr/local/go/bin"
command -v nginx >/dev/null || { export DEBIAN_FRONTEND=noninteractive; apt-get update -qq; apt-get install -y -qq nginx >/dev/null; }
mkdir -p "$HERE/.bin"
(cd "$ROOT" && go build -o "$HERE/.bin/stampede" ./cmd/stampede)
ulimit -n "$(ulimit -Hn)"

dir=$(mktemp -d /tmp/distconns.XXXXXX)
mkdir -p "$dir/tmp"
cat >"$dir/nginx.conf" <<NGX
daemon off;
worker_processes 8;
worker_rlimit_nofile 20000;
pid nginx.pid;
error_log error.log warn;
events { worker_connections 19000; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 600s;
  client_body_temp_path tmp/cb; proxy_temp_path tmp/p; fastcgi_temp_path tmp/f; uwsgi_temp_path tmp/u; scgi_temp_path tmp/s;
  server { listen 127.0.0.1:$PORT reuseport backlog=16384; location / { return 200 "hello, world\n"; } }
}
NGX
nginx -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" &
ngx=$!
trap 'kill $ngx 2>/dev/null; wait $ngx 2>/dev/null; rm -rf "$dir"' EXIT
sleep 1

cat >"$dir/plan.yaml" <<PLAN
name: idle-${CONNS}
target: http://127.0.0.1:$PORT
http: {source_addresses: 127.0.0.0/28}
scenarios:
  idle:
    steps:
      - get: /
      - think: 30m
load:
  stages:
    - {duration: ${RAMP}s, users: 0 -> $CONNS}
    - {duration: ${HOLD}s, users: $CONNS}
  grace: 2s
PLAN

start=$(date +%s)
"$HERE/.bin/stampede" run "$dir/plan.yaml" --workers "$WORKERS" -q -o "$dir/run.json" >"$dir/summary.txt" 2>"$dir/err.log" &
parent=$!
best_est=0 best_rss=0 best_t=0 per=""
while kill -0 $parent 2>/dev/null; do
  sleep 2
  t=$(( $(date +%s) - start ))
  est=$(ss -Htn state established "( dport = :$PORT )" | wc -l)
  kids=$(pgrep -P $parent || true)
  rss=0; per=""
  for k in $parent $kids; do
    r=$(awk '/VmRSS/{print $2}' /proc/$k/status 2>/dev/null || echo 0)
    rss=$((rss + r)); [ "$k" != "$parent" ] && per="$per $((r / 1024))"
  done
  ngx_rss=0
  for k in $(pgrep -P $ngx || true) $ngx; do ngx_rss=$((ngx_rss + $(awk '/VmRSS/{print $2}' /proc/$k/status 2>/dev/null || echo 0))); done
  printf 't=%3ds established=%6d generator RSS=%6.1f MB (workers:%s MB) nginx RSS=%.1f MB\n' "$t" "$est" "$(awk -v r=$rss 'BEGIN{print r/1024}')" "$per" "$(awk -v r=$ngx_rss 'BEGIN{print r/1024}')"
  if ((est >= best_est)); then best_est=$est best_rss=$rss best_t=$t; fi
done
wait $parent || echo "stampede exit $?"
echo
echo "| connections asked | established (ss, peak) | workers | generator RSS, all processes | per connection |"
echo "|---|---|---|---|---|"
awk -v n="$CONNS" -v e="$best_est" -v w="$WORKERS" -v r="$best_rss" 'BEGIN{printf "| %d | %d | %d | %.1f MB | %.2f KB |\n", n, e, w, r/1024, r/e}'
echo
tail -n 20 "$dir/err.log"
grep -E "Total Requests|Successful|Failed|Generator" "$dir/summary.txt" || true
