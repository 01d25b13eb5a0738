#!/usr/bin/env bash
# signalrscale.sh — hold many idle SignalR connections (seed 000's kitchen
# displays, printers and phones) and report what they cost the generator.
#
#   bench/signalrscale.sh [TENANTS] [PER_TENANT...] [-- WORKERS [RAMP_S [HOLD_S]]]
#
#   bench/signalrscale.sh 2000 9                 18,000 from one process, one hub
#   PROTOCOL=messagepack bench/signalrscale.sh 2000 9
#   bench/signalrscale.sh 2000 8 6 5 -- 2        38,000 from 2 worker processes,
#                                                three hubs (16,000 + 12,000 + 10,000)
#
# Environment:
#   HUB=sighub (default) | demo   the hub processes: bench/sighub (a lean
#                                 hub on philippseith/signalr) or
#                                 `stampede demo` (same library; 139 KB per
#                                 connection against sighub's 118 KB at 2,000:
#                                 see docs/benchmarks.md)
#   PROTOCOL=json (default) | messagepack
#   TRANSPORT=websockets (default) | sse | long_polling   long polling is
#                                 served by sighub -server sigtest (HUB=sighub only)
#   SIGHUB_FLAGS="-max-message 32768"   more flags for sighub (go run ./bench/sighub -h)
#   BASE_PORT=8200                hub i listens on 127.0.0.1:BASE_PORT+i
#   RESULT_FILE=path              also write the figures there, one line
#                                 (for bench/sigtransports.sh)
#   ORDERS=N                      at the middle of the hold, place one order
#                                 for each of the first N restaurants on
#                                 every hub (OrderPlaced pushes), and at the
#                                 end set each hub's own counts (connects,
#                                 peak, pushes) beside the result's per hub
#   SPREAD=N                      one scenario (one PER_TENANT) spread over N
#                                 hub processes with `urls:` (round-robin):
#                                 a fleet larger than one hub process, e.g.
#                                 SPREAD=2 bench/signalrscale.sh 2000 18 -- 2
#                                 (36,000 from two workers over two hubs)
#
# Each PER_TENANT is one scenario (one device kind) with its own hub
# process, because a hub process, like any process here, may hold at most
# 20,000 open files. Every connection negotiates, connects, handshakes and
# joins its restaurant's group (JoinRestaurant), then stays idle,
# listening for OrderPlaced, through the hold.
#
# Every 5 s it prints the connections the hubs count and the RSS of every
# generator process and of the hubs; at the end, a table with the RSS taken
# at the last sample of the hold (every connection open and idle): all of
# it, its anonymous part (heap, stacks, histograms: what the process itself
# allocated; the rest is the mapped program file, ~35-45 MB per process,
# shared and not per connection), and the marginal cost over a baseline
# run of the same plan with 1 tenant. Everything it starts is bounded in
# time and stopped on exit, Ctrl-C included.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
TENANTS=${1:-2000}
shift || true
PER=()
while (($#)) && [[ $1 != -- ]]; do PER+=("$1"); shift; done
[[ ${1:-} == -- ]] && shift
((${#PER[@]})) || PER=(9)
SPREAD=${SPREAD:-}
if [[ -n $SPREAD ]]; then
  ((${#PER[@]} == 1)) || { echo "SPREAD: give one PER_TENANT (one scenario spread over the hubs)" >&2; exit 2; }
  HUBIDX=($(seq 0 $((SPREAD - 1))))
else
  HUBIDX=("${!PER[@]}")
fi
WORKERS=${1:-1}
RAMP=${2:-60}
HOLD=${3:-60}
BASE_PORT=${BASE_PORT:-8200}
HUB=${HUB:-sighub}
PROTOCOL=${PROTOCOL:-json}
TRANSPORT=${TRANSPORT:-websockets}
case $HUB in sighub | demo) ;; *) echo "HUB must be sighub or demo" >&2; exit 2 ;; esac
case $PROTOCOL in json | messagepack) ;; *) echo "PROTOCOL must be json or messagepack" >&2; exit 2 ;; esac
case $TRANSPORT in websockets | sse | long_polling) ;; *) echo "TRANSPORT must be websockets, sse or long_polling" >&2; exit 2 ;; esac
if [[ $TRANSPORT == long_polling && $HUB != sighub ]]; then
  echo "long polling: only sighub -server sigtest serves it (philippseith/signalr does not)" >&2; exit 2
fi
export PATH="$PATH:/usr/local/go/bin"
mkdir -p "$HERE/.bin/sig"
# NO_BUILD=1 runs the binaries already in bench/.bin/sig (bench/sigtransports.sh
# builds them once for all its runs).
# stampede is built as scripts/release.sh and the Dockerfile build it (static,
# no symbol tables): the program file's pages a process maps are part of
# its RSS, 12 MB fewer than a plain `go build`'s (cgo on).
[[ -n ${NO_BUILD:-} ]] || (cd "$ROOT" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o "$HERE/.bin/sig/stampede" ./cmd/stampede && go build -o "$HERE/.bin/sig/sighub" ./bench/sighub)
ulimit -n "$(ulimit -Hn)"
BIN=$HERE/.bin/sig/stampede

dir=$(mktemp -d /tmp/signalrscale.XXXXXX)
hubs=()
gen=""
gens=""
cleanup() {
  trap - EXIT INT TERM
  # The generator first (its workers are its children), then the hubs;
  # background jobs of a script ignore Ctrl-C, so they are ended here.
  if [[ -n $gen ]]; then
    gens=$(tree "$gen")
    kill -TERM $gens 2>/dev/null || true
  fi
  ((${#hubs[@]})) && kill -TERM "${hubs[@]}" 2>/dev/null || true
  for _ in $(seq 50); do
    local alive=0
    for p in $gens "${hubs[@]}"; do kill -0 "$p" 2>/dev/null && alive=1; done
    ((alive)) || break
    sleep 0.2
  done
  for p in $gens "${hubs[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'echo "interrupted" >&2; exit 130' INT TERM

for i in "${HUBIDX[@]}"; do
  port=$((BASE_PORT + i))
  if curl -fsS -m 2 "http://127.0.0.1:$port/healthz" >/dev/null 2>&1; then
    echo "127.0.0.1:$port already answers: another hub is running (set BASE_PORT)" >&2; exit 1
  fi
  case $HUB in
  demo)
    # stampede demo's hub drops silent clients at the socket, not with the
    # library's timeout (internal/demo/hub.go), so MessagePack needs nothing.
    "$BIN" demo --addr "127.0.0.1:$port" >"$dir/hub$i.log" 2>&1 &
    ;;
  sighub)
    server=philippseith flags=()
    [[ $TRANSPORT == long_polling ]] && server=sigtest
    # philippseith/signalr v0.11.0 reads a MessagePack frame's varint
    # length with a 5-byte read and keeps the buffer's zero padding as
    # frame bytes, so a ping (3 bytes) is parsed only when later bytes
    # arrive, and ever later: an idle MessagePack client's pings stop
    # resetting the hub's timeout, and the hub closes it after the timeout
    # (30 s, or 60 s when raised to 60 s: both measured). The benchmark
    # measures idle clients, so the hub waits an hour.
    [[ $PROTOCOL == messagepack && $server == philippseith ]] && flags+=(-timeout 1h)
    "$HERE/.bin/sig/sighub" -addr "127.0.0.1:$port" -server $server -transports LongPolling "${flags[@]}" ${SIGHUB_FLAGS:-} >"$dir/hub$i.log" 2>&1 &
    ;;
  esac
  hubs+=($!)
done
for i in "${HUBIDX[@]}"; do
  ok=0
  for _ in $(seq 50); do
    curl -fsS -m 2 "http://127.0.0.1:$((BASE_PORT + i))/healthz" >/dev/null 2>&1 && { ok=1; break; }
    sleep 0.2
  done
  ((ok)) || { echo "hub $i did not come up:" >&2; cat "$dir/hub$i.log" >&2; exit 1; }
done
echo "hubs: $HUB ($(for i in "${HUBIDX[@]}"; do printf '127.0.0.1:%d ' $((BASE_PORT + i)); done)), protocol $PROTOCOL, transport $TRANSPORT" >&2

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
$(if [[ -n $SPREAD ]]; then
  echo "      urls:"
  for h in "${HUBIDX[@]}"; do echo "        - http://127.0.0.1:$((BASE_PORT + h))/hubs/kitchen"; done
else
  echo "      url: http://127.0.0.1:$((BASE_PORT + i))/hubs/kitchen"
fi)
      protocol: $PROTOCOL
      transport: $TRANSPORT
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
  for i in "${HUBIDX[@]}"; do
    n=$(curl -fsS -m 5 "http://127.0.0.1:$((BASE_PORT + i))/__stats" 2>/dev/null |
      grep -o '"kitchen":{"connections":[0-9]*' | grep -o '[0-9]*$' || true)
    s=$((s + ${n:-0}))
  done
  echo "$s"
}

# tree PID: the process and its descendants (timeout(1), stampede, its
# workers).
tree() { echo "$1"; local c; for c in $(pgrep -P "$1" || true); do tree "$c"; done; }

# sockets PORT...: established TCP connections to those ports (the
# generator's side), e.g. two per long-polling connection.
sockets() {
  local f="" p
  for p in "$@"; do f="$f${f:+ or }dport = :$p"; done
  ss -Htn state established "( $f )" 2>/dev/null | wc -l
}

kb() { awk -v k="$2" '$1 == k":" {print $2; f=1} END {if (!f) print 0}' "/proc/$1/status" 2>/dev/null || echo 0; }

# run NAME tenants ramp hold: writes "hub_conns rss_kb anon_kb hub_rss_kb
# hub_anon_kb tcp_conns" at the last sample of the hold, when every connection is
# open and idle, to $dir/NAME.
run() {
  local name=$1
  plan "$2" "$3" "$4" >"$dir/plan.yaml"
  local args=(run "$dir/plan.yaml" -q -o "$dir/$name.json")
  ((WORKERS > 1)) && args+=(--workers "$WORKERS")
  local start; start=$(date +%s)
  # Bounded: the plan ends at ramp + hold + grace; closing thousands of
  # connections takes seconds more, never minutes.
  timeout -k 10 $(($3 + $4 + 120)) "$BIN" "${args[@]}" >"$dir/$name.summary" 2>"$dir/$name.err" &
  gen=$!
  local conns=0 rss=0 anon=0 hrss=0 hanon=0 socks=0 per="" last="0 0 0 0 0 0" lastprocs=""
  while kill -0 "$gen" 2>/dev/null; do
    sleep 5
    local t=$(($(date +%s) - start))
    ((t > $3 + $4 - 1)) && break # the run is ending: connections close
    conns=$(hubconns)
    rss=0 anon=0 per="" hrss=0 hanon=0
    # stampede and its workers; not timeout(1), which only waits.
    for k in $(tree "$gen" | tail -n +2); do
      local r a
      r=$(kb "$k" VmRSS) a=$(kb "$k" RssAnon)
      ((r)) || continue
      rss=$((rss + r)) anon=$((anon + a)) per="$per $((r / 1024))"
      # Its open files: the connections a worker holds, plus a dozen of
      # its own (the result file, pipes, epoll). Kept for the table.
      echo "$k $r $a $(ls "/proc/$k/fd" 2>/dev/null | wc -l)" >>"$dir/$1.procs.$t"
    done
    socks=$(sockets $(for i in "${HUBIDX[@]}"; do echo $((BASE_PORT + i)); done))
    for k in "${hubs[@]}"; do hrss=$((hrss + $(kb "$k" VmRSS))) hanon=$((hanon + $(kb "$k" RssAnon))); done
    printf 't=%3ds hub connections=%6d TCP=%6d generator RSS=%7.1f MB, anonymous %7.1f MB (processes:%s MB); hubs RSS %7.1f MB\n' "$t" "$conns" "$socks" \
      "$(awk -v r=$rss 'BEGIN{print r/1024}')" "$(awk -v r=$anon 'BEGIN{print r/1024}')" "$per" \
      "$(awk -v r=$hrss 'BEGIN{print r/1024}')" >&2
    last="$conns $rss $anon $hrss $hanon $socks"
    if [[ $name == big && -n ${ORDERS:-} && -z ${ordered:-} ]] && ((t >= $3 + $4 / 2)); then
      ordered=1
      for h in "${HUBIDX[@]}"; do
        for ((o = 0; o < ORDERS; o++)); do
          curl -fsS -m 10 -X POST "http://127.0.0.1:$((BASE_PORT + h))/restaurants/$o/orders" >/dev/null || true
        done
      done
      echo "placed $ORDERS orders on each hub" >&2
    fi
    lastprocs="$dir/$1.procs.$t"
  done
  local rc=0
  wait "$gen" || rc=$?
  gen=""
  ((rc == 0)) || echo "stampede exit $rc$( ((rc == 124)) && echo ' (timed out)')" >&2
  echo "$last" >"$dir/$name"
  [[ -n ${lastprocs:-} && -f $lastprocs ]] && cp "$lastprocs" "$dir/$name.procs"
  return 0
}

total=0
for p in "${PER[@]}"; do total=$((total + p * TENANTS)); done
echo "baseline: 1 tenant ($((total / TENANTS)) connections)" >&2
# The big run lowers its GC percent to 10 by itself (a population of
# ≥ 1,000 connections); the baseline gets the same, so the difference is
# the connections alone.
GOGC=10 run base 1 2 15
read -r base_conns base_rss base_anon _ _ _ <"$dir/base"
echo "$total connections: $TENANTS tenants × (${PER[*]}), $WORKERS generator process(es), ${#HUBIDX[@]} hub process(es)" >&2
# The hubs' counts before the big run: the baseline's connects and pushes
# are taken off theirs in the per-hub table.
for i in "${HUBIDX[@]}"; do
  curl -fsS -m 5 "http://127.0.0.1:$((BASE_PORT + i))/__stats" >"$dir/hubpre$i.json" 2>/dev/null || echo '{}' >"$dir/hubpre$i.json"
done
run big "$TENANTS" "$RAMP" "$HOLD"
read -r conns rss anon hrss hanon socks <"$dir/big"

echo
echo "SignalR $PROTOCOL over $TRANSPORT, hub $HUB; $(date -u '+%Y-%m-%d %H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
echo "stampede built $(date -u -r "$BIN" '+%H:%M UTC') from $(cd "$ROOT" && git rev-parse --short HEAD 2>/dev/null) and the working tree then"
echo
echo "| connections asked | open (hubs' count) | generator processes | generator RSS, all processes | RSS / connection | anonymous RSS / connection | marginal / connection (minus the ${base_conns}-connection baseline, $((base_rss / 1024)) MB) | marginal anonymous / connection | hubs' RSS (/ connection) | TCP connections to the hubs |"
echo "|---|---|---|---|---|---|---|---|---|---|"
if ((${conns:-0} <= ${base_conns:-0})); then
  echo "no connection was open at the last sample: see the log below"
else
  awk -v n="$total" -v e="$conns" -v w="$WORKERS" -v r="$rss" -v a="$anon" -v b="$base_rss" -v ba="$base_anon" -v bc="$base_conns" -v h="$hrss" -v s="$socks" \
    'BEGIN{printf "| %d | %d | %d | %.1f MB | %.2f KB | %.2f KB | %.2f KB | %.2f KB | %.0f MB (%.1f KB) | %d |\n", n, e, w, r/1024, r/e, a/e, (r-b)/(e-bc), (a-ba)/(e-bc), h/1024, h/e, s}'
fi
if ((${conns:-0} < total)); then
  echo
  echo "WARNING: the hubs counted $conns of $total connections open at the last sample: the figures are a churn's, not $total idle connections'."
fi
if [[ -n ${RESULT_FILE:-} ]]; then
  echo "$total $conns $rss $anon $base_conns $base_rss $base_anon $hrss $hanon $socks" >"$RESULT_FILE"
fi
if [[ -f $dir/big.procs ]]; then
  echo
  echo "Each generator process at the last sample (open files = its connections + about a dozen of its own):"
  echo
  echo "| process | open files | RSS | anonymous RSS | RSS / open file | anonymous / open file |"
  echo "|---|---|---|---|---|---|"
  awk '{printf "| %d | %d | %.1f MB | %.1f MB | %.2f KB | %.2f KB |\n", $1, $4, $2/1024, $3/1024, $2/($4>0?$4:1), $3/($4>0?$4:1)}' "$dir/big.procs"
fi
echo
echo "Each hub's own counts against the merged result's:"
for i in "${HUBIDX[@]}"; do
  curl -fsS -m 5 "http://127.0.0.1:$((BASE_PORT + i))/__stats" >"$dir/hubstats$i.json" 2>/dev/null || echo '{}' >"$dir/hubstats$i.json"
done
python3 - "$dir/big.json" "$BASE_PORT" "${HUBIDX[@]}" <<'PY' || true
import json, sys
res = json.load(open(sys.argv[1]))
base = int(sys.argv[2])
hubs = {}
for sc in (res.get("connections") or {}).get("scenarios") or []:
    for h in sc.get("hubs") or []:
        hubs.setdefault(h["url"].split("//")[1].split("/")[0], []).append(h)
    if not sc.get("hubs"):
        hubs.setdefault("(one url)", []).append({"opened": sc.get("opened"), "peak_open": sc.get("peak_open"),
                                                 "pushes": sum((sc.get("pushes") or {}).values())})
print("| hub | hub: connects (this run) | result: opened | hub: peak | result: peak open | hub: pushes (group members addressed) | result: pushes received |")
print("|---|---|---|---|---|---|---|")
for i in sys.argv[3:]:
    addr = "127.0.0.1:%d" % (base + int(i))
    d = sys.argv[1].rsplit("/", 1)[0]
    st = json.load(open(d + "/hubstats%s.json" % i)).get("kitchen", {})
    pre = json.load(open(d + "/hubpre%s.json" % i)).get("kitchen", {})
    since = lambda k: (st[k] - pre.get(k, 0)) if k in st else "?"
    r = hubs.get(addr, [{}])
    f = lambda k: sum(x.get(k) or 0 for x in r)
    print("| %s | %s | %d | %s | %d | %s | %d |" % (addr, since("connected"), f("opened"), st.get("peak", "?"), f("peak_open"), since("pushes"), f("pushes")))
PY
echo
for i in "${HUBIDX[@]}"; do
  echo "hub $i at the end: $(awk '/VmRSS/{printf "RSS %.0f MB", $2/1024} /RssAnon/{printf ", anonymous %.0f MB", $2/1024}' "/proc/${hubs[$i]}/status" 2>/dev/null)"
done
echo
tail -n 5 "$dir/big.err"
sed -n '/Connections:/,/^$/p' "$dir/big.summary"
grep -E "Generator" "$dir/big.summary" || true
