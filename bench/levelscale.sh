#!/usr/bin/env bash
# levelscale.sh — levels at scale through the binary, each level's counts
# set against the server's own:
#
#   bench/levelscale.sh signalr   gates over tenants with --workers: three
#                                 levels of SignalR kitchen displays (up to
#                                 15,000 connections by default), each
#                                 level's handshakes and JoinRestaurant
#                                 invokes against bench/sighub's count of
#                                 OnConnected and JoinRestaurant calls
#   bench/levelscale.sh http      a sweep of HTTP users with --workers
#                                 against nginx (several worker processes),
#                                 each level's requests against nginx's
#                                 access log
#
# Environment (defaults fit a 2-core box with a 20,000 open-files limit):
#   SIG_TENANTS=1000,2500,5000    gates levels (tenants), PER_TENANT=3
#                                 displays each: 3,000 / 7,500 / 15,000
#   SIG_WORKERS=2                 generator processes per level
#   USERS=10000,50000             the sweep's user levels; a bigger machine
#                                 runs the third floor with one variable:
#                                 USERS=10000,50000,100000
#   HTTP_WORKERS=                 processes per level (default: the largest
#                                 level / 16,000, rounded up: each process
#                                 under its 20,000 open files)
#   NGINX_WORKERS=8               nginx worker processes (reuseport)
#   RAMP=10 HOLD=40               seconds, per level (SignalR: 60 and 25; on
#                                 the 2-core box at load 18 one sighub took
#                                 7,500 connections in 30 s, not 15,000)
#   STAMPEDE_BIN=path             a stampede binary to use instead of
#                                 building ./cmd/stampede
#
# The HTTP users send two requests each, both inside the level's measured
# hold (a first think longer than the ramp, a second short one), then idle
# on their kept-alive connection: the measured counts are then every request
# the level sent, exactly, and nginx's log is split between levels by the
# idle gap between them (each level's window in the result). Source
# addresses 127.0.0.1-127.0.0.14 (http.source_addresses: 127.0.0.0/28)
# give each connection its own port beyond the 28,000 one address has.
# Everything it starts is bounded in time and stopped on exit.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
MODE=${1:-}
case $MODE in signalr | http) ;; *) echo "usage: $0 signalr|http" >&2; exit 2 ;; esac
export PATH="$PATH:/usr/sbin:/usr/local/go/bin"
ulimit -n "$(ulimit -Hn)"
mkdir -p "$HERE/.bin/levelscale"
BIN=${STAMPEDE_BIN:-$HERE/.bin/levelscale/stampede}
[[ -n ${STAMPEDE_BIN:-} ]] || (cd "$ROOT" && go build -o "$BIN" ./cmd/stampede)
dir=$(mktemp -d /tmp/levelscale.XXXXXX)
pids=()
cleanup() {
  trap - EXIT INT TERM
  ((${#pids[@]})) && kill -TERM "${pids[@]}" 2>/dev/null || true
  sleep 1
  ((${#pids[@]})) && kill -KILL "${pids[@]}" 2>/dev/null || true
  wait 2>/dev/null || true
  [[ -n ${KEEP:-} ]] && echo "kept $dir" >&2 || rm -rf "$dir"
}
trap cleanup EXIT
trap 'echo interrupted >&2; exit 130' INT TERM

# tree PID: the process and its descendants (timeout(1), stampede, the
# segment processes of the level running).
tree() { echo "$1"; local c; for c in $(pgrep -P "$1" || true); do tree "$c"; done; }

# rss PID: its RSS with its descendants', in MB.
rss() {
  local k t=0
  for k in $(tree "$1"); do
    local r
    r=$(awk '/VmRSS/{print $2}' /proc/$k/status 2>/dev/null || true)
    t=$((t + ${r:-0})) # a process may end between the listing and the read
  done
  echo $((t / 1024))
}

signalr() {
  local port=${SIG_PORT:-8310} tenants=${SIG_TENANTS:-1000,2500,5000} per=${PER_TENANT:-3}
  local workers=${SIG_WORKERS:-2} ramp=${RAMP:-60} hold=${HOLD:-25}
  (cd "$ROOT" && go build -o "$HERE/.bin/levelscale/sighub" ./bench/sighub)
  "$HERE/.bin/levelscale/sighub" -addr "127.0.0.1:$port" >"$dir/hub.log" 2>&1 &
  local hub=$!
  pids+=($hub)
  for _ in $(seq 50); do curl -fsS -m 2 "http://127.0.0.1:$port/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
  cat >"$dir/plan.yaml" <<EOF
name: levelscale-signalr
target: http://127.0.0.1:$port
tenants: {count: 1}
scenarios:
  displays:
    per_tenant: $per
    signalr:
      url: http://127.0.0.1:$port/hubs/kitchen
      invoke: [{method: JoinRestaurant, args: ["{{ tenant }}"], timeout: 60s}]
      listen: [OrderPlaced]
load:
  stages: [{duration: 1s, users: 1}]
  grace: 5s
gates:
  vary: tenants
  levels: [$tenants]
  ramp: ${ramp}s
  hold: ${hold}s
  slo: ["handshake: error_rate < 1%"]
EOF
  # The hub's counters once a second; a level ends when its connections
  # are all closed again (its segment processes have exited).
  (while sleep 1; do
    printf '%s %s\n' "$(date +%s.%N)" "$(curl -fsS -m 2 "http://127.0.0.1:$port/__stats" 2>/dev/null || echo '{}')"
  done) >"$dir/hub.samples" &
  pids+=($!)
  local n
  n=$(awk -F, '{print NF}' <<<"$tenants")
  local budget=$((n * (ramp + 30 + hold + 60) + 60))
  echo "gates $tenants tenants x $per displays, --workers $workers, ramp ${ramp}s hold ${hold}s (bounded at ${budget}s); load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  local start=$SECONDS rc=0 peak=0
  timeout -k 10 "$budget" "$BIN" gates "$dir/plan.yaml" --workers "$workers" -q -o "$dir/gates.json" >"$dir/gates.txt" 2>"$dir/gates.err" &
  local gen=$!
  while kill -0 $gen 2>/dev/null; do
    sleep 5
    local r; r=$(rss $gen)
    ((r > peak)) && peak=$r
  done
  wait $gen || rc=$?
  sleep 2
  echo "gates exit $rc after $((SECONDS - start))s; generator peak RSS ${peak} MB (all processes); hub RSS $(rss $hub) MB; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  cat "$dir/gates.txt"
  tail -n 5 "$dir/gates.err"
  python3 - "$dir/gates.json" "$dir/hub.samples" <<'PY'
import json, sys
res = json.load(open(sys.argv[1]))
from datetime import datetime
ts = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
# The hub's totals as each level's hold ended: during a hold no connection
# opens, so the last answer in the hold is every connect up to the level
# (the hub may not answer while thousands of connections close).
samples = []
for line in open(sys.argv[2]):
    t, _, js = line.partition(' ')
    try:
        k = json.loads(js)["kitchen"]
        samples.append((float(t), k.get("connected", 0), k.get("joined", 0)))
    except Exception:
        continue
ends = []
for lv in res["levels"]:
    lo, hi = ts(lv["result"]["run"]["started"]), ts(lv["result"]["run"]["ended"])
    inside = [s[1:] for s in samples if lo <= s[0] <= hi]
    ends.append(inside[-1] if inside else None)
print("\n| level (tenants) | connections asked | opened | peak open | negotiate | handshake (failed) | JoinRestaurant (failed) | hub: OnConnected | hub: JoinRestaurant | equal |")
print("|---|---|---|---|---|---|---|---|---|---|")
prev, ok = (0, 0), True
for i, lv in enumerate(res["levels"]):
    r = lv["result"]
    steps = {s["name"]: s for s in r.get("steps", [])}
    c = (r.get("connections") or {}).get("scenarios", [{}])[0]
    hs = steps.get("handshake", {})
    inv = next((s for n, s in steps.items() if "JoinRestaurant" in n or n == "invoke"), {})
    hub = (None, None)
    if ends[i] is not None:
        hub, prev = (ends[i][0] - prev[0], ends[i][1] - prev[1]), ends[i]
    eq = hub == (hs.get("requests"), inv.get("requests")) and c.get("opened") == hs.get("successful")
    ok = ok and eq
    print(f"| {lv['value']:g} | {c.get('target')} | {c.get('opened')} | {c.get('peak_open')} | {steps.get('negotiate', {}).get('requests')} | "
          f"{hs.get('requests')} ({hs.get('failed')}) | {inv.get('requests')} ({inv.get('failed')}) | {hub[0]} | {hub[1]} | {'yes' if eq else 'NO'} |")
print("\nevery level equal to the hub's count" if ok else "\nMISMATCH between the levels and the hub")
PY
}

http() {
  local port=${HTTP_PORT:-8311} users=${USERS:-10000,50000} ramp=${RAMP:-10} hold=${HOLD:-40}
  # A user starts within the ramp and thinks from ramp + 3 s (its first
  # request after the population is in place) to ramp + 3 + spread, then
  # 1-5 s: its last request comes by 2·ramp + 8 + spread, 3 s before the
  # hold ends at ramp + hold.
  local spread=$((hold - ramp - 11))
  ((spread >= 1)) || { echo "HOLD must exceed RAMP + 11 s" >&2; exit 2; }
  local top; top=$(tr , '\n' <<<"$users" | sort -n | tail -1)
  local workers=${HTTP_WORKERS:-$(((top + 15999) / 16000))}
  ((workers < 2)) && workers=2
  local nw=${NGINX_WORKERS:-8}
  mkdir -p "$dir/tmp"
  cat >"$dir/nginx.conf" <<NGX
daemon off;
worker_processes $nw;
worker_rlimit_nofile 20000;
pid nginx.pid;
error_log error.log warn;
events { worker_connections 19000; }
http {
  log_format t '\$msec \$status';
  access_log access.log t buffer=256k flush=1s;
  keepalive_requests 1000000;
  keepalive_timeout 600s;
  client_body_temp_path tmp/cb; proxy_temp_path tmp/p; fastcgi_temp_path tmp/f; uwsgi_temp_path tmp/u; scgi_temp_path tmp/s;
  server { listen 127.0.0.1:$port reuseport backlog=16384; location / { return 200 "ok\n"; } }
}
NGX
  nginx -p "$dir/" -c "$dir/nginx.conf" -e "$dir/error.log" &
  local ngx=$!
  pids+=($ngx)
  sleep 1
  cat >"$dir/plan.yaml" <<EOF
name: levelscale-http
target: http://127.0.0.1:$port
http: {source_addresses: 127.0.0.0/28}
scenarios:
  browse:
    steps:
      - think: $((ramp + 3))s..$((ramp + 3 + spread))s
      - {name: first, get: /first}
      - think: 1s..5s
      - {name: second, get: /second}
      - think: 30m
load:
  stages: [{duration: 1s, users: 1}]
  grace: 5s
EOF
  local n; n=$(awk -F, '{print NF}' <<<"$users")
  local budget=$((n * (ramp + 30 + hold + 90) + 60))
  echo "sweep --users $users, --workers $workers, nginx $nw workers, ramp ${ramp}s hold ${hold}s (bounded at ${budget}s); load: $(cut -d' ' -f1-3 /proc/loadavg)" >&2
  local start=$SECONDS rc=0 peak=0 npeak=0
  timeout -k 10 "$budget" "$BIN" sweep "$dir/plan.yaml" --users "$users" --ramp "${ramp}s" --hold "${hold}s" \
    --workers "$workers" -q -o "$dir/sweep.json" >"$dir/sweep.txt" 2>"$dir/sweep.err" &
  local gen=$!
  while kill -0 $gen 2>/dev/null; do
    sleep 5
    local r; r=$(rss $gen)
    ((r > peak)) && peak=$r
    r=$(rss $ngx)
    ((r > npeak)) && npeak=$r
    printf 't=%3ds established=%6d generator RSS %6d MB nginx RSS %5d MB\n' $((SECONDS - start)) \
      "$(ss -Htn state established "( dport = :$port )" | wc -l)" "$(rss $gen)" "$r" >&2
  done
  wait $gen || rc=$?
  kill -HUP $ngx 2>/dev/null || true # reopens (flushes) the access log
  sleep 2
  echo "sweep exit $rc after $((SECONDS - start))s; generator peak RSS ${peak} MB (all processes); nginx peak RSS ${npeak} MB; load: $(cut -d' ' -f1-3 /proc/loadavg)"
  cat "$dir/sweep.txt"
  tail -n 5 "$dir/sweep.err"
  python3 - "$dir/sweep.json" "$dir/access.log" <<'PY'
import json, sys
from datetime import datetime
res = json.load(open(sys.argv[1]))
log = [line.split() for line in open(sys.argv[2])]
ts = lambda s: datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
lvs = res["levels"]
win = [(ts(l["result"]["run"]["started"]), ts(l["result"]["run"]["ended"])) for l in lvs]
# Each level owns the log from the middle of the idle gap before it to
# the middle of the gap after it.
cut = [(win[i][1] + win[i + 1][0]) / 2 for i in range(len(win) - 1)]
print("\n| users | measured requests (failed) | nginx access log | equal | outside every window |")
print("|---|---|---|---|---|")
ok = True
for i, l in enumerate(lvs):
    lo = cut[i - 1] if i else float("-inf")
    hi = cut[i] if i < len(cut) else float("inf")
    got = sum(1 for f in log if lo <= float(f[0]) < hi)
    inside = sum(1 for f in log if win[i][0] <= float(f[0]) <= win[i][1])
    t = l["result"]["totals"]
    eq = got == t["requests"]
    ok = ok and eq
    print(f"| {l['value']:g} | {t['requests']} ({t['failed']}) | {got} | {'yes' if eq else 'NO'} | {got - inside} |")
print("\nevery level equal to nginx's access log" if ok else "\nMISMATCH between the levels and nginx's log")
PY
}

$MODE
