#!/usr/bin/env bash
# h2rotate.sh — the HTTP/2 connection-rotation floor of issue 24: nginx over
# TLS with http2 and `keepalive_requests 5` (nginx sends GOAWAY with every
# 5th request of a connection), USERS users for SECS seconds through the
# binary. Checks, and prints:
#   - requests in the result = nginx's access-log lines (nothing resent,
#     nothing reported that nginx never saw);
#   - open files of the generator <= 2 x USERS at every 1 s sample;
#   - RSS flat: no sample after the first 10 s above 1.2 x the largest of
#     the first 10 s.
# All traffic goes to 127.0.0.1. Exit status 1 when a check fails.
#
#   bench/h2rotate.sh                 # 50 users, 60 s (the floor)
#   USERS=10 SECS=5 bench/h2rotate.sh # quick
# Needs nginx and openssl. STAMPEDE is the binary (default: built into the
# work dir). PORT (default 8443). VERSION is the plan's http.version (h2).
set -euo pipefail
USERS=${USERS:-50}; SECS=${SECS:-60}; PORT=${PORT:-8443}; VERSION=${VERSION:-h2}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=$(mktemp -d /tmp/h2rotate.XXXXXX)
log() { printf '[h2rotate %(%H:%M:%S)T] %s\n' -1 "$*" >&2; }
NGINX_PID=""
cleanup() { [[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

STAMPEDE=${STAMPEDE:-$W/stampede}
if [[ ! -x $STAMPEDE ]]; then
  (cd "$HERE/.." && go build -o "$STAMPEDE" ./cmd/stampede)
fi
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
events { worker_connections 16384; }
http {
    access_log access.log;
    keepalive_requests 5;
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
}
CONF
nginx -p "$W/" -c "$W/nginx.conf" -e "$W/error.log" &
NGINX_PID=$!
for _ in $(seq 50); do
  (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
  sleep 0.1
done
: > "$W/access.log"   # the readiness probe above is not a request, but be sure

cat > "$W/plan.yaml" <<PLAN
name: h2rotate
target: https://127.0.0.1:$PORT
tls: {ca_file: cert.pem}
http: {version: $VERSION}
scenarios:
  s:
    steps:
      - {name: GET /, get: /, timeout: 10s}
load:
  stages:
    - {duration: ${SECS}s, users: $USERS}
PLAN

log "nginx keepalive_requests 5 on :$PORT; $USERS users for ${SECS}s (version $VERSION)"
"$STAMPEDE" run "$W/plan.yaml" -q -o "$W/result.json" > "$W/summary.txt" 2> "$W/stderr.txt" &
GEN=$!
# One sample per second: open files and RSS (kB) of the generator.
: > "$W/samples.tsv"
while kill -0 "$GEN" 2>/dev/null; do
  fds=$(ls /proc/$GEN/fd 2>/dev/null | wc -l || echo 0)
  rss=$(awk '/^VmRSS/ {print $2}' /proc/$GEN/status 2>/dev/null || echo 0)
  [[ -n $rss && $rss != 0 ]] && printf '%s\t%s\t%s\n' "$(date +%s)" "$fds" "$rss" >> "$W/samples.tsv"
  sleep 1
done
wait "$GEN" || log "stampede exited with $? (thresholds or failures; the checks below decide)"
sleep 0.5   # nginx writes its log line after the response

requests=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["totals"]["requests"] if "totals" in r else r["requests"])' "$W/result.json" 2>/dev/null || jq '.totals.requests' "$W/result.json")
lines=$(wc -l < "$W/access.log")
python3 - "$W/samples.tsv" "$USERS" "$requests" "$lines" <<'PY'
import sys
rows = [list(map(int, l.split())) for l in open(sys.argv[1]) if l.strip()]
users, requests, lines = int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t0 = rows[0][0]
fds = [r[1] for r in rows]
first = [r[2] for r in rows if r[0] - t0 < 10] or [rows[0][2]]
later = [r[2] for r in rows if r[0] - t0 >= 10]
base = max(first)
ok = True
print(f"requests in the result: {requests}; nginx access-log lines: {lines}")
if requests != lines:
    ok = False; print("FAIL: the counts differ")
print(f"open files: max {max(fds)} over {len(fds)} samples (limit {2*users})")
if max(fds) > 2 * users:
    ok = False; print("FAIL: open files above 2 x users")
print(f"RSS: first 10 s max {base} kB; later max {max(later) if later else '-'} kB, last {rows[-1][2]} kB")
if later and max(later) > 1.2 * base:
    ok = False; print("FAIL: RSS grew more than 20 % over the first 10 s")
print("PASS" if ok else "FAILED")
sys.exit(0 if ok else 1)
PY
status=$?
grep -E "Total Requests|Successful|Failed|Throughput" "$W/summary.txt" || true
log "work dir: $W"
exit $status
