#!/usr/bin/env bash
# voting.sh — what the seed's voting flow costs the generator per request,
# beside a static GET, and beside k6 and Locust running the same flow
# (issue 31, item 2).
#
# The flow (bench/voting/flow.yaml, k6.js, locustfile.py): a CSV row per
# iteration, GET /elections/2026/parties, the first party's id captured
# from the JSON, POST /votes with the row's voter-id and
# election-district-id headers and a JSON body templated from the capture,
# the status of each and the vote's JSON ("status": "counted") checked.
# The target is nginx (1 worker) pinned to NGX_CPU, answering the parties
# document and, for a POST /votes carrying both headers, 201
# {"status":"counted"} (400 without them), so the server costs little and
# the same for every tool; every generator runs on GEN_CPU, USERS users
# (connections), closed model, no think time, SECS seconds. Rounds
# alternate the tools (even rounds reversed):
#   static:   stampede url -c USERS against the parties URL (a static GET)
#   flow:     stampede run bench/voting/flow.yaml
#   k6:       k6 run bench/voting/k6.js            (if K6 is found)
#   locust:   locust -f bench/voting/locustfile.py (if LOCUST is found)
# CPU per request: perf stat's task-clock of the tool (every thread and
# child) divided by the requests nginx counted (stub_status); failed
# requests: nginx's own status counts (a 400 or 404 in the access log).
#
#   SECS=10 ROUNDS=3 USERS=64 bench/voting.sh
#   STAMPEDE=/path/stampede K6=/path/k6 LOCUST=/path/locust ...
#   BEFORE=/path/older-stampede ...   # adds that binary's flow (before/after)
#   TOOLS="static flow before" ...    # a subset
# All traffic goes to 127.0.0.1.
set -euo pipefail
SECS=${SECS:-10}; ROUNDS=${ROUNDS:-3}; USERS=${USERS:-64}
PORT=${PORT:-8480}; SPORT=${SPORT:-8481}
NGX_CPU=${NGX_CPU:-1}; GEN_CPU=${GEN_CPU:-0}
NGINX_BIN=${NGINX_BIN:-nginx}
K6=${K6:-$(command -v k6 || echo "$HOME/go/bin/k6")}
LOCUST=${LOCUST:-$(command -v locust || echo locust)}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=$(mktemp -d /tmp/voting.XXXXXX)
NGINX_PID=""
cleanup() { [[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

STAMPEDE=${STAMPEDE:-$W/stampede}
[[ -x $STAMPEDE ]] || (cd "$HERE/.." && go build -o "$STAMPEDE" ./cmd/stampede)
zcat "$HERE/../examples/voters.csv.gz" > "$W/voters.csv"
cp "$HERE/voting/flow.yaml" "$W/flow.yaml" # beside voters.csv, the one file it reads
mkdir -p "$W/tmp"
cat > "$W/nginx.conf" <<CONF
daemon off;
master_process on;
worker_processes 1;
worker_rlimit_nofile 20000;
pid nginx.pid;
error_log error.log warn;
events { worker_connections 16384; multi_accept on; }
http {
    # Only the failures are logged: their count is the run's failed requests.
    map \$status \$failed { ~^[23] 0; default 1; }
    access_log failed.log combined if=\$failed;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    client_body_temp_path tmp/client_body;
    proxy_temp_path tmp/proxy;
    fastcgi_temp_path tmp/fastcgi;
    uwsgi_temp_path tmp/uwsgi;
    scgi_temp_path tmp/scgi;
    default_type application/json;
    server {
        listen 127.0.0.1:$PORT backlog=8192 reuseport;
        location = /elections/2026/parties {
            return 200 '{"election":2026,"parties":[{"id":"p1","name":"Blue"},{"id":"p2","name":"Green"},{"id":"p3","name":"Red"}]}';
        }
        location = /votes {
            if (\$http_voter_id = "") { return 400 '{"error":"no voter-id"}'; }
            if (\$http_election_district_id = "") { return 400 '{"error":"no election-district-id"}'; }
            return 201 '{"status":"counted"}';
        }
        location / { return 404; }
    }
    server { listen 127.0.0.1:$SPORT; access_log off; location / { stub_status; } }
}
CONF
taskset -c "$NGX_CPU" "$NGINX_BIN" -p "$W/" -c "$W/nginx.conf" -e "$W/error.log" &
NGINX_PID=$!
served() {
  python3 -c 'import urllib.request,sys; print(urllib.request.urlopen(sys.argv[1]).read().decode().split("\n")[2].split()[2])' \
    "http://127.0.0.1:$SPORT/"
}
for _ in $(seq 50); do served >/dev/null 2>&1 && break; sleep 0.1; done
failed() { [[ -f $W/failed.log ]] && wc -l < "$W/failed.log" || echo 0; }

# round NAME CMD...: appends "NAME requests task_ms failed load" to rounds.txt.
round() {
  local name=$1; shift
  local before after fb fa load
  load=$(cut -d' ' -f1 /proc/loadavg)
  before=$(served); fb=$(failed)
  perf stat -x, -e task-clock -o "$W/perf.txt" taskset -c "$GEN_CPU" "$@" > "$W/out.$name" 2>&1 || true
  after=$(served); fa=$(failed)
  # stub_status counts its own request too.
  echo "$name $((after - before - 1)) $(awk -F, '$3 == "task-clock" { print $1 }' "$W/perf.txt") $((fa - fb)) $load" >> "$W/rounds.txt"
  tail -1 "$W/rounds.txt" >&2
}

TARGET=http://127.0.0.1:$PORT
tools="static flow"
[[ -n ${BEFORE:-} ]] && tools="$tools before"
[[ -x $K6 ]] && tools="$tools k6" || echo "k6 not found ($K6): its rounds are left out" >&2
command -v "$LOCUST" >/dev/null && tools="$tools locust" || echo "locust not found: its rounds are left out" >&2
tools=${TOOLS:-$tools}
: > "$W/rounds.txt"
for r in $(seq "$ROUNDS"); do
  order=$tools
  (( r % 2 )) || order=$(tr ' ' '\n' <<<"$tools" | tac | tr '\n' ' ')
  for tool in $order; do
    case $tool in
      static) round static "$STAMPEDE" url -c "$USERS" -d "${SECS}s" "$TARGET/elections/2026/parties" ;;
      flow) TARGET=$TARGET USERS=$USERS SECS=$SECS round flow "$STAMPEDE" run -o "$W/flow.json" "$W/flow.yaml" ;;
      before) TARGET=$TARGET USERS=$USERS SECS=$SECS round before "$BEFORE" run -o "$W/before.json" "$W/flow.yaml" ;;
      k6) TARGET=$TARGET USERS=$USERS SECS=$SECS VOTERS=$W/voters.csv round k6 "$K6" run --quiet --summary-mode=disabled "$HERE/voting/k6.js" ;;
      locust) VOTERS=$W/voters.csv round locust "$LOCUST" -f "$HERE/voting/locustfile.py" --headless --only-summary \
          -u "$USERS" -r "$USERS" -t "${SECS}s" --stop-timeout 2 -H "$TARGET" ;;
    esac
  done
done
python3 - "$W/rounds.txt" "$SECS" <<'PY'
import sys
from collections import defaultdict
rows = defaultdict(list)
for l in open(sys.argv[1]):
    if l.strip():
        name, n, ms, failed, load = l.split()
        rows[name].append((int(n), float(ms), int(failed), load))
secs = float(sys.argv[2])
print(f"{'tool':8} {'requests':>9} {'req/s':>8} {'µs CPU/req':>11} {'failed':>6} {'load':>5}")
for name, rs in rows.items():
    for n, ms, failed, load in rs:
        print(f"{name:8} {n:9d} {n / secs:8.0f} {ms * 1e3 / max(n, 1):11.2f} {failed:6d} {load:>5}")
def us(name):
    return [ms * 1e3 / max(n, 1) for n, ms, *_ in rows.get(name, [])]
for peer in ("static", "before", "k6", "locust"):
    f, p = us("flow"), us(peer)
    if f and p:
        print(f"flow ÷ {peer}: " + ", ".join(f"{a / b:.2f}" for a, b in zip(f, p)) + " (per round)")
PY
