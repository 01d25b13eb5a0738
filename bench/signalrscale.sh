#!/usr/bin/env bash
# signalrscale.sh — hold many idle SignalR connections (seed 000's kitchen
# displays, printers and phones) and report what they cost the generator.
#
#   bench/signalrscale.sh [TENANTS] [PER_TENANT...] [-- WORKERS [RAMP_S [HOLD_S]]]
#
#   bench/signalrscale.sh 2000 9                 18,000 from one process, one hub
#   bench/signalrscale.sh 2000 8 6 5 -- 2        38,000 from 2 worker processes,
#                                                three hubs (16,000 + 12,000 + 10,000)
#
# Each PER_TENANT is one scenario (one device kind) with its own
# `stampede demo` hub process, because a hub process, like any process
# here, may hold at most 20,000 open files. Every connection negotiates,
# connects, handshakes and joins its restaurant's group (JoinRestaurant),
# then stays idle, listening for OrderPlaced, through the hold.
#
# Every 5 s it prints the connections each hub counts and the RSS of every
# generator process; at the end, a table with the RSS taken at the last
# sample of the hold (every connection open and idle): all of it, its
# anonymous part (heap, stacks, histograms: what the process itself
# allocated; the rest is the mapped program file, ~35 MB per process,
# shared and not per connection), and the marginal cost over a baseline
# run of the same plan with 1 tenant.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
TENANTS=${1:-2000}
shift || true
PER=()
while (($#)) && [[ $1 != -- ]]; do PER+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
((${#PER[@]})) || PER=(9)
WORKERS=${1:-1}
RAMP=${2:-60}
HOLD=${3:-60}
BASE_PORT=${BASE_PORT:-8200}
export PATH="$PATH:/usr/local/go/bin"
mkdir -p "$HERE/.bin"
(cd "$ROOT" && go build -o "$HERE/.bin/stampede" ./cmd/stampede)
ulimit -n "$(ulimit -Hn)"
BIN=$HERE/.bin/stampede

dir=$(mktemp -d /tmp/signalrscale.XXXXXX)
hubs=()
cleanup() { kill "${hubs[@]}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"; }
trap cleanup EXIT
for i in "${!PER[@]}"; do
  "$BIN" demo --addr "127.0.0.1:$((BASE_PORT + i))" >"$dir/hub$i.log" 2>&1 &
  hubs+=($!)
done
for i in "${!PER[@]}"; do
  for _ in $(seq 50); do curl -fsS "http://127.0.0.1:$((BASE_PORT + i))/healthz" >/dev/null 2>&1 && break; sleep 0.2; done
done

plan() { # tenants ramp hold -> plan on stdout
  echo "name: signalr-idle"
  echo "target: http://127.0.0.1:$BASE_PORT"
  echo "tenants: {count: $1}"
  echo "scenarios:"
  for i in "${!PER[@]}"; do
    cat <<EOF
  devices-$i:
    per_tenant: ${PER[$i]}
    signalr:
      url: http://127.0.0.1:$((BASE_PORT + i))/hubs/kitchen
      invoke: [{method: JoinRestaurant, args: ["{{ tenant }}"], timeout: 30s}]
      listen: [OrderPlaced]
EOF
  done
  cat <<EOF
load:
  stages:
    - {duration: ${2}s, users: 0 -> 1}
    - {duration: ${3}s, users: 1}
  grace: 5s
EOF
}

hubconns() {
  local s=0 n
  for i in "${!PER[@]}"; do
    n=$(curl -fsS "http://127.0.0.1:$((BASE_PORT + i))/__stats" 2>/dev/null | sed -n 's/.*"kitchen":{"connections":\([0-9]*\).*/\1/p')
    s=$((s + ${n:-0}))
  done
  echo "$s"
}

# run tenants ramp hold -> "hub_conns rss_kb anon_kb" at the last sample of
# the hold, when every connection is open and idle.
run() {
  plan "$1" "$2" "$3" >"$dir/plan.yaml"
  local args=(run "$dir/plan.yaml" -q -o "$dir/run.json")
  ((WORKERS > 1)) && args+=(--workers "$WORKERS")
  local start; start=$(date +%s)
  "$BIN" "${args[@]}" >"$dir/summary.txt" 2>"$dir/err.log" &
  local parent=$! conns=0 rss=0 anon=0 per="" last=""
  while kill -0 $parent 2>/dev/null; do
    sleep 5
    local t=$(($(date +%s) - start))
    ((t > $2 + $3 - 1)) && break   # the run is ending: connections close
    conns=$(hubconns)
    rss=0 anon=0 per=""
    for k in $parent $(pgrep -P $parent || true); do
      local r a
      r=$(awk '/VmRSS/{print $2}' /proc/$k/status 2>/dev/null || echo 0)
      a=$(awk '/RssAnon/{print $2}' /proc/$k/status 2>/dev/null || echo 0)
      rss=$((rss + r)) anon=$((anon + a)); per="$per $((r / 1024))"
    done
    printf 't=%3ds hub connections=%6d generator RSS=%7.1f MB, anonymous %7.1f MB (processes:%s MB)\n' "$t" "$conns" \
      "$(awk -v r=$rss 'BEGIN{print r/1024}')" "$(awk -v r=$anon 'BEGIN{print r/1024}')" "$per" >&2
    last="$conns $rss $anon"
  done
  wait $parent || echo "stampede exit $?" >&2
  echo "$last"
}

total=0
for p in "${PER[@]}"; do total=$((total + p * TENANTS)); done
echo "baseline: 1 tenant ($((total / TENANTS)) connections)" >&2
# The big run lowers its GC percent to 10 by itself (a population of
# ≥ 1,000 connections); the baseline gets the same, so the difference is
# the connections alone.
read -r base_conns base_rss base_anon < <(GOGC=10 run 1 2 15)
echo "$total connections: $TENANTS tenants × (${PER[*]}), $WORKERS generator process(es), ${#PER[@]} hub process(es)" >&2
read -r conns rss anon < <(run "$TENANTS" "$RAMP" "$HOLD")
echo
echo "| connections asked | open (hubs' count) | generator processes | generator RSS, all processes | RSS / connection | anonymous RSS / connection | marginal / connection (minus the ${base_conns}-connection baseline, $((base_rss / 1024)) MB) |"
echo "|---|---|---|---|---|---|---|"
if ((${conns:-0} == 0)); then echo "no connection was open at the last sample: see the log below"; else
awk -v n="$total" -v e="$conns" -v w="$WORKERS" -v r="$rss" -v a="$anon" -v b="$base_rss" \
  'BEGIN{printf "| %d | %d | %d | %.1f MB | %.2f KB | %.2f KB | %.2f KB |\n", n, e, w, r/1024, r/e, a/e, (r-b)/e}'
fi
echo
for i in "${!PER[@]}"; do
  echo "hub $i RSS: $(awk '/VmRSS/{printf "%.0f MB", $2/1024}' /proc/${hubs[$i]}/status 2>/dev/null)"
done
echo
cat "$dir/err.log" | tail -n 5
sed -n '/Connections:/,/^$/p' "$dir/summary.txt"
grep -E "Generator" "$dir/summary.txt" || true
