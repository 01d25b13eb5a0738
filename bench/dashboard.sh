#!/usr/bin/env bash
# dashboard.sh — what a live dashboard page costs the generator.
#
#   bench/dashboard.sh
#
# Runs the same open-model load (RATE arrivals/s for SECS, default 20,000/s
# for 10 s) against nginx (one worker, `return 200`, pinned to CPU 0),
# stampede pinned to CPU 1, ROUNDS times (default 3) each way, alternating:
#   plain      stampede run PLAN
#   dashboard  stampede run PLAN --dashboard, with a real headless Chromium
#              page open on it (pinned to CPU 0 beside nginx), so every
#              update is rendered and fetched as a person watching would
# and prints the generator's own CPU per request (user+system of the
# stampede process over its requests, from the result file) for each, the
# medians and the difference. The floor of issue 18: at most 2 % more.
# All traffic goes to 127.0.0.1. Needs nginx, chromium, taskset and jq.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PATH="$PATH:/usr/sbin:/usr/local/go/bin"
RATE=${RATE:-20000}
SECS=${SECS:-10}
ROUNDS=${ROUNDS:-3}
PORT=${PORT:-18095}
DASH=${DASH:-18096}
CHROMIUM=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || command -v google-chrome)}

work=$(mktemp -d /tmp/stampede-dashbench.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

STAMPEDE=${STAMPEDE:-}
if [[ -z $STAMPEDE ]]; then
  (cd "$ROOT" && go build -o "$work/stampede" ./cmd/stampede)
  STAMPEDE=$work/stampede
fi

mkdir -p "$work/nginx/tmp"
cat >"$work/nginx/nginx.conf" <<EOF
daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 20000;
pid nginx.pid;
error_log error.log warn;
events { worker_connections 8192; multi_accept on; }
http {
  access_log off;
  keepalive_requests 1000000;
  keepalive_timeout 75s;
  default_type text/plain;
  client_body_temp_path tmp/client_body;
  proxy_temp_path tmp/proxy;
  fastcgi_temp_path tmp/fastcgi;
  uwsgi_temp_path tmp/uwsgi;
  scgi_temp_path tmp/scgi;
  server { listen 127.0.0.1:$PORT backlog=4096; location / { return 200 "hello, world\n"; } }
}
EOF
taskset -c 0 nginx -p "$work/nginx/" -c "$work/nginx/nginx.conf" -e "$work/nginx/error.log" &
pids+=($!)
for _ in $(seq 50); do
  curl -fs "http://127.0.0.1:$PORT/" >/dev/null && break
  sleep 0.1
done

cat >"$work/plan.yaml" <<EOF
name: dashboard-bench
target: http://127.0.0.1:$PORT
scenarios:
  s:
    steps:
      - get: /
load:
  max_in_flight: 200
  stages: [{duration: ${SECS}s, rate: ${RATE}/s}]
EOF

run_plain() {
  taskset -c 1 "$STAMPEDE" run "$work/plan.yaml" -q -o "$work/$1.json" >/dev/null 2>&1
}

run_dashboard() {
  taskset -c 1 "$STAMPEDE" run "$work/plan.yaml" -q -o "$work/$1.json" --dashboard=127.0.0.1:$DASH >/dev/null 2>"$work/$1.err" &
  local run=$! url=""
  # The page is at the printed URL only: its path holds the run's token.
  for _ in $(seq 100); do
    url=$(sed -n 's/^dashboard: //p' "$work/$1.err" | head -n1)
    [ -n "$url" ] && curl -fs "$url/" >/dev/null && break
    sleep 0.05
  done
  taskset -c 0 "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
    --user-data-dir="$work/chromium-$1" --remote-debugging-port=0 "$url/" >/dev/null 2>&1 &
  local chr=$!
  wait "$run"
  kill "$chr" 2>/dev/null || true
  wait "$chr" 2>/dev/null || true
}

fig() { jq -r '[.generator.cpu_per_request_us, .totals.requests, .generator.lag.p99_us] | @tsv' "$work/$1.json"; }

printf '%-10s %5s %14s %10s %12s\n' mode round cpu_us_per_req requests lag_p99_us
plain=() dash=()
for r in $(seq "$ROUNDS"); do
  run_plain "plain$r"
  read -r cpu n lag < <(fig "plain$r")
  printf '%-10s %5d %14.2f %10d %12d\n' plain "$r" "$cpu" "$n" "$lag"
  plain+=("$cpu")
  run_dashboard "dash$r"
  read -r cpu n lag < <(fig "dash$r")
  printf '%-10s %5d %14.2f %10d %12d\n' dashboard "$r" "$cpu" "$n" "$lag"
  dash+=("$cpu")
done
median() { printf '%s\n' "$@" | sort -g | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
mp=$(median "${plain[@]}")
md=$(median "${dash[@]}")
awk -v p="$mp" -v d="$md" 'BEGIN { printf "median CPU per request: plain %.2f µs, dashboard %.2f µs: %+.1f %%\n", p, d, (d-p)/p*100 }'
