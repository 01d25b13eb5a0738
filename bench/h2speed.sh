#!/usr/bin/env bash
# h2speed.sh — HTTP/2 over TLS, 64 streams: stampede (64 users, each its own
# connection, one stream at a time) against h2load -c 64 -m 1, or with
# MODE=shared stampede's shared connections against h2load -c 1 -m 64.
# nginx is pinned to CPU 0 and the generator to CPU 1; ROUNDS rounds of
# SECS seconds, the tools alternating. Requests are counted by nginx
# (stub_status), CPU by the generator's own user+system time (/proc), so
# neither figure depends on a tool's report of itself.
#
#   bench/h2speed.sh                    # 3 rounds of 5 s
#   ROUNDS=1 SECS=3 bench/h2speed.sh
# Needs nginx, h2load (nghttp2-client), openssl, taskset. All traffic goes
# to 127.0.0.1.
set -euo pipefail
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-5}; PORT=${PORT:-8444}; SPORT=${SPORT:-8445}
CONNS=${CONNS:-64}; MODE=${MODE:-per-user}
NGINX_CPU=${NGINX_CPU:-0}; GEN_CPU=${GEN_CPU:-1}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=$(mktemp -d /tmp/h2speed.XXXXXX)
log() { printf '[h2speed %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
NGINX_PID=""
cleanup() { [[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

STAMPEDE=${STAMPEDE:-$W/stampede}
[[ -x $STAMPEDE ]] || (cd "$HERE/.." && go build -o "$STAMPEDE" ./cmd/stampede)
mkdir -p "$W/tmp"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 \
  -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$W/key.pem" -out "$W/cert.pem" 2>/dev/null
cat > "$W/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 20000;
pid nginx.pid;
error_log error.log warn;
events { worker_connections 16384; multi_accept on; }
http {
    access_log off;
    keepalive_requests 1000000;
    http2_max_requests 1000000;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    server {
        listen 127.0.0.1:$PORT ssl http2 backlog=4096;
        ssl_certificate cert.pem;
        ssl_certificate_key key.pem;
        location / { return 200 "hello, world\n"; }
    }
    server { listen 127.0.0.1:$SPORT; location / { stub_status; } }
}
CONF
taskset -c "$NGINX_CPU" nginx -p "$W/" -c "$W/nginx.conf" -e "$W/error.log" &
NGINX_PID=$!
sleep 1
served() { curl -s "http://127.0.0.1:$SPORT/" | awk 'NR==3 {print $3}'; }

cat > "$W/plan.yaml" <<PLAN
name: h2speed
target: https://127.0.0.1:$PORT
tls: {insecure: true}
http: {version: h2}
scenarios:
  s:
    steps:
      - {name: GET /, get: /, timeout: 10s}
load:
  stages:
    - {duration: ${SECS}s, users: $CONNS}
PLAN
if [[ $MODE == shared ]]; then
  sed -i 's/^http: {version: h2}/http: {version: h2, h2_connections: shared}/' "$W/plan.yaml"
  H2LOAD_ARGS="-c 1 -m $CONNS"
else
  H2LOAD_ARGS="-c $CONNS -m 1"
fi

# run NAME CMD...: one round; prints "NAME requests cpu_seconds".
run() {
  local name=$1; shift
  local before after
  before=$(served)
  /usr/bin/time -f '%U %S' -o "$W/time.$name" taskset -c "$GEN_CPU" "$@" > "$W/out.$name" 2>&1 || true
  after=$(served)
  read -r u s < "$W/time.$name"
  # stub_status counts its own request too.
  echo "$name $((after - before - 1)) $(echo "$u + $s" | bc)"
}

: > "$W/rounds.txt"
for r in $(seq "$ROUNDS"); do
  if (( r % 2 )); then order="h2load stampede"; else order="stampede h2load"; fi
  for tool in $order; do
    case $tool in
      h2load) run h2load h2load $H2LOAD_ARGS -D "$SECS" "https://127.0.0.1:$PORT/" >> "$W/rounds.txt" ;;
      stampede) run stampede "$STAMPEDE" run "$W/plan.yaml" -q -o "$W/result.json" >> "$W/rounds.txt" ;;
    esac
    tail -1 "$W/rounds.txt" >&2
  done
done
python3 - "$W/rounds.txt" "$SECS" <<'PY'
import sys, statistics
secs = float(sys.argv[2])
by = {}
for line in open(sys.argv[1]):
    name, req, cpu = line.split()
    by.setdefault(name, []).append((int(req), float(cpu)))
print(f"{'tool':10} {'req/s (median)':>15} {'CPU us/req (median)':>20}")
res = {}
for name, rows in by.items():
    rps = statistics.median(r / secs for r, _ in rows)
    us = statistics.median(c / r * 1e6 for r, c in rows if r)
    res[name] = (rps, us)
    print(f"{name:10} {rps:15.0f} {us:20.1f}")
if "stampede" in res and "h2load" in res:
    print(f"stampede / h2load: throughput {res['stampede'][0] / res['h2load'][0]:.2f}x, CPU per request {res['stampede'][1] / res['h2load'][1]:.2f}x")
PY
log "work dir: $W"
