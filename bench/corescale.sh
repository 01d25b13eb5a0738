#!/usr/bin/env bash
# corescale.sh — how stampede's closed and open models scale with cores,
# beside wrk, on a machine with at least 2 × max(CORES) CPUs.
#
# nginx (NGX_WORKERS workers) is pinned to the upper half of the CPUs and
# the generator to the first C CPUs, for each C in CORES. Per C, rounds
# alternate the tools:
#   closed: stampede url -c 64·C (full speed)   vs  wrk -t C -c 64·C
#   open:   stampede url --open -r RATE·C       (CPU per request and the
#           share of the rate delivered; no open-model peer is installed
#           here, so this row compares stampede with itself across C)
# Requests are counted by nginx (stub_status), CPU by the generator's own
# user+system time (bash's `time`), so neither figure rests on a tool's
# report of itself.
#
#   CORES="1 2 4 8" SECS=5 ROUNDS=1 bench/corescale.sh
#   NGINX_BIN=/path/nginx WRK=/path/wrk STAMPEDE=/path/stampede bench/corescale.sh
#   BEFORE=/path/older-stampede ...  # adds that binary's closed model to
#                                    # the same rounds (before/after a change)
#   NGX_FIRST=1 NGX_WORKERS=1 CORES=1  # nginx on CPU 1, generator on CPU 0
# All traffic goes to 127.0.0.1.
set -euo pipefail
CORES=${CORES:-"1 2 4 8"}; SECS=${SECS:-5}; RATE=${RATE:-20000}
PORT=${PORT:-8460}; SPORT=${SPORT:-8461}
NGINX_BIN=${NGINX_BIN:-nginx}; WRK=${WRK:-wrk}
NCPU=$(nproc)
NGX_FIRST=${NGX_FIRST:-$((NCPU / 2))}
NGX_WORKERS=${NGX_WORKERS:-$((NCPU - NGX_FIRST))}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=$(mktemp -d /tmp/corescale.XXXXXX)
NGINX_PID=""
cleanup() { [[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

STAMPEDE=${STAMPEDE:-$W/stampede}
[[ -x $STAMPEDE ]] || (cd "$HERE/.." && go build -o "$STAMPEDE" ./cmd/stampede)
# nginx and served(): bench/lib/nginx.sh.
source "$HERE/lib/nginx.sh"
nginx_start "$W" "$PORT" "$SPORT" "$NGX_FIRST-$((NCPU - 1))" "$NGX_WORKERS"

# round NAME CPUS CMD...: prints "NAME cores requests cpu_seconds".
round() {
  local name=$1 c=$2; shift 2
  local before after t
  before=$(served)
  t=$( { TIMEFORMAT='%U %S'; time taskset -c "0-$((c - 1))" "$@" > "$W/out.$name.$c" 2>&1 || true; } 2>&1 )
  after=$(served)
  # stub_status counts its own request too.
  echo "$name $c $((after - before - 1)) $(python3 -c 'import sys; print(sum(map(float, sys.argv[1:])))' $t)"
}

: > "$W/rounds.txt"
for r in $(seq "${ROUNDS:-1}"); do
for c in $CORES; do
  conns=$((64 * c)); rate=$((RATE * c))
  tools="wrk stampede-closed stampede-open"
  [[ -n ${BEFORE:-} ]] && tools="wrk before-closed stampede-closed stampede-open"
  # Even rounds run the tools in reverse order, so no tool always goes first.
  (( r % 2 )) || tools=$(tr ' ' '\n' <<<"$tools" | tac | tr '\n' ' ')
  for tool in $tools; do
    case $tool in
      wrk) round wrk "$c" "$WRK" -t "$c" -c "$conns" -d "${SECS}s" "http://127.0.0.1:$PORT/" ;;
      before-closed) round before-closed "$c" "$BEFORE" url -c "$conns" -d "${SECS}s" "http://127.0.0.1:$PORT/" ;;
      stampede-closed) round stampede-closed "$c" "$STAMPEDE" url -c "$conns" -d "${SECS}s" "http://127.0.0.1:$PORT/" ;;
      stampede-open) round stampede-open "$c" "$STAMPEDE" url --open -r "$rate" -c $((4 * conns)) -d "${SECS}s" "http://127.0.0.1:$PORT/" ;;
    esac >> "$W/rounds.txt"
    tail -1 "$W/rounds.txt" >&2
  done
done
done
python3 - "$W/rounds.txt" "$SECS" "$RATE" <<'PY'
import sys, statistics
from collections import defaultdict
rows = defaultdict(list)
for l in open(sys.argv[1]):
    if l.strip():
        name, c, n, cpu = l.split()
        rows[(name, int(c))].append((int(n), float(cpu)))
secs, rate = float(sys.argv[2]), float(sys.argv[3])
print(f"{'tool':16} {'cores':>5} {'rounds':>6} {'req/s':>10} {'µs CPU/req':>11} {'per core req/s':>15} {'of rate':>8}")
for (name, c), rs in sorted(rows.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    rps = statistics.median(n / secs for n, _ in rs)
    us = statistics.median(cpu / max(n, 1) * 1e6 for n, cpu in rs)
    share = f"{rps / (rate * c):.1%}" if name == "stampede-open" else ""
    print(f"{name:16} {c:5d} {len(rs):6d} {rps:10.0f} {us:11.2f} {rps / c:15.0f} {share:>8}")
PY
