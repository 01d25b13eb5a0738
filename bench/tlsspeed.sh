#!/usr/bin/env bash
# tlsspeed.sh — stampede against a peer over TLS, CONNS (64) connections.
#   PROTO=h1 (default): HTTP/1.1 keep-alive, stampede (64 users, each its
#     own connection) against wrk -t1 -c 64.
#   PROTO=h2 (bench/h2speed.sh): HTTP/2, 64 users each on its own
#     connection, one stream at a time, against h2load -c 64 -m 1; with
#     MODE=shared stampede's shared connections against h2load -c 1 -m 64.
# nginx (TLS 1.3, a self-signed P-256 certificate made in a temp dir) is
# pinned to CPU 0 and the generator to CPU 1; ROUNDS rounds of SECS
# seconds, the tools alternating. Requests are counted by nginx
# (stub_status), CPU by the generator's own user+system time, so neither
# figure depends on a tool's report of itself.
#
#   bench/tlsspeed.sh                   # 3 rounds of 5 s
#   ROUNDS=1 SECS=3 bench/tlsspeed.sh
#   ENGINE=goroutines bench/tlsspeed.sh # stampede's --engine (PROTO=h1
#                                       # runs on the event loop by default)
#   BOTH=1 bench/tlsspeed.sh            # also stampede on goroutines
#                                       # (stampede-g), in the same rounds
# Needs nginx, wrk (h1) or h2load from nghttp2-client (h2), openssl,
# taskset, curl, bc. All traffic goes to 127.0.0.1.
set -euo pipefail
ROUNDS=${ROUNDS:-3}; SECS=${SECS:-5}; PORT=${PORT:-8446}; SPORT=${SPORT:-8447}
CONNS=${CONNS:-64}; PROTO=${PROTO:-h1}; MODE=${MODE:-per-user}
case $PROTO in
  h1) PEER=wrk; LISTEN="ssl"; VERSION="http/1.1" ;;
  h2) PEER=h2load; LISTEN="ssl http2"; VERSION="h2" ;;
  *) echo "PROTO must be h1 or h2" >&2; exit 2 ;;
esac
H2LOAD_ARGS="-c $CONNS -m 1"
if [[ $MODE == shared ]]; then
  [[ $PROTO == h2 ]] || { echo "MODE=shared needs PROTO=h2" >&2; exit 2; }
  VERSION="h2, h2_connections: shared"; H2LOAD_ARGS="-c 1 -m $CONNS"
fi
NGINX_CPU=${NGINX_CPU:-0}; GEN_CPU=${GEN_CPU:-1}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=$(mktemp -d /tmp/tlsspeed.XXXXXX)
log() { printf '[tlsspeed %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
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
    keepalive_timeout 75s;
    http2_max_requests 1000000;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    server {
        listen 127.0.0.1:$PORT $LISTEN backlog=4096;
        ssl_certificate cert.pem;
        ssl_certificate_key key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        location / { return 200 "hello, world\n"; }
    }
    server { listen 127.0.0.1:$SPORT; location / { stub_status; } }
}
CONF
taskset -c "$NGINX_CPU" nginx -p "$W/" -c "$W/nginx.conf" -e "$W/error.log" &
NGINX_PID=$!
for _ in $(seq 50); do curl -s "http://127.0.0.1:$SPORT/" >/dev/null && break; sleep 0.1; done
served() { curl -s "http://127.0.0.1:$SPORT/" | awk 'NR==3 {print $3}'; }

cat > "$W/plan.yaml" <<PLAN
name: tlsspeed-$PROTO
target: https://127.0.0.1:$PORT
tls: {insecure: true}
http: {version: $VERSION}
scenarios:
  s:
    steps:
      - {name: GET /, get: /, timeout: 10s}
load:
  stages:
    - {duration: ${SECS}s, users: $CONNS}
PLAN

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
tools=("$PEER" stampede)
[[ ${BOTH:-} == 1 ]] && tools+=(stampede-g)
for r in $(seq "$ROUNDS"); do
  # Each round starts with the next tool, so none always goes first.
  k=$(( (r - 1) % ${#tools[@]} ))
  order="${tools[*]:k} ${tools[*]:0:k}"
  for tool in $order; do
    case $tool in
      wrk) run wrk wrk -t1 -c "$CONNS" -d "${SECS}s" "https://127.0.0.1:$PORT/" >> "$W/rounds.txt" ;;
      h2load) run h2load h2load $H2LOAD_ARGS -D "$SECS" "https://127.0.0.1:$PORT/" >> "$W/rounds.txt" ;;
      stampede) run stampede "$STAMPEDE" run "$W/plan.yaml" -q --engine "${ENGINE:-auto}" -o "$W/result.json" >> "$W/rounds.txt" ;;
      stampede-g) run stampede-g "$STAMPEDE" run "$W/plan.yaml" -q --engine goroutines -o "$W/result-g.json" >> "$W/rounds.txt" ;;
    esac
    tail -1 "$W/rounds.txt" >&2
  done
done
python3 - "$W/rounds.txt" "$SECS" "$PEER" <<'PY'
import sys, statistics
secs, peer = float(sys.argv[2]), sys.argv[3]
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
for name in ("stampede", "stampede-g"):
    if name in res and peer in res:
        print(f"{name} / {peer}: throughput {res[name][0] / res[peer][0]:.2f}x, CPU per request {res[name][1] / res[peer][1]:.2f}x")
PY
python3 - "$W/result.json" <<'PY' || true
import json, sys
r = json.load(open(sys.argv[1]))
t = r.get("tls")
print("stampede's last round: engine", r.get("run", {}).get("engine"), "requests", r["totals"]["requests"], "failed", r["totals"]["failed"],
      "tls", {k: t[k] for k in ("handshakes", "full", "resumed", "failed")} if t else None)
PY
log "work dir: $W"
