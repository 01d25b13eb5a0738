#!/usr/bin/env bash
# openmodel.sh — what an open-model arrival costs the generator, beside oha
# (the open-model peer: --latency-correction) and stampede's own paced
# closed model at the same rate (issue 31, item 1).
#
# nginx (1 worker) is pinned to NGX_CPU, every generator to GEN_CPU. For
# each rate R in RATES, rounds alternate the tools (even rounds reversed):
#   open:   stampede url --open -r R [-c C_OPEN]  (default -c unless set)
#   oha:    oha --latency-correction -q R -c 64 -z SECS
#   closed: stampede url -r R -c 64               (paced closed model)
# CPU per request: perf stat's task-clock of the tool (all its threads)
# divided by the requests nginx counted (stub_status), so neither figure
# rests on a tool's report of itself; context switches per request from
# the same perf stat. For stampede's open model the result file adds the
# delivered rate, the arrivals dropped and the lateness (lag) p99.
#
# After each open round, the machine's own floor at that rate: a pacer
# in C (bench/lib/pacer.c: no network, no runtime, paced as the tools
# pace) doing the open round's CPU per request of fixed work per arrival.
# Its lateness is what any generator of that cost meets on this machine:
# on a machine whose CPUs are taken away for milliseconds at a time (a
# busy virtual machine's host) the lateness of the open round is judged
# against it, not against zero. Left out where no C compiler is found.
#
#   RATES="20000 5000" SECS=10 ROUNDS=3 bench/openmodel.sh
#   STAMPEDE=/path/stampede OHA=/path/oha NGINX_BIN=/path/nginx ...
#   BEFORE=/path/older-stampede ...  # adds that binary's open model
# All traffic goes to 127.0.0.1.
set -euo pipefail
RATES=${RATES:-"20000 5000"}; SECS=${SECS:-10}; ROUNDS=${ROUNDS:-3}
PORT=${PORT:-8470}; SPORT=${SPORT:-8471}
NGX_CPU=${NGX_CPU:-1}; GEN_CPU=${GEN_CPU:-0}
NGINX_BIN=${NGINX_BIN:-nginx}; OHA=${OHA:-$(command -v oha || echo "$HOME/.cargo/bin/oha")}
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
W=$(mktemp -d /tmp/openmodel.XXXXXX)
NGINX_PID=""
cleanup() { [[ -n $NGINX_PID ]] && kill "$NGINX_PID" 2>/dev/null; wait 2>/dev/null || true; }
trap cleanup EXIT

STAMPEDE=${STAMPEDE:-$W/stampede}
[[ -x $STAMPEDE ]] || (cd "$HERE/.." && go build -o "$STAMPEDE" ./cmd/stampede)
# nginx and served(): bench/lib/nginx.sh.
source "$HERE/lib/nginx.sh"
nginx_start "$W" "$PORT" "$SPORT" "$NGX_CPU"

# round NAME RATE CMD...: appends "NAME rate requests task_ms ctxsw load
# delivered dropped lag_p99_us" to rounds.txt (the last three "-" unless
# the tool wrote a stampede result to $W/res.json).
round() {
  local name=$1 rate=$2; shift 2
  local before after load
  rm -f "$W/res.json"
  load=$(cut -d' ' -f1 /proc/loadavg)
  before=$(served)
  perf stat -x, -e task-clock,context-switches -o "$W/perf.txt" \
    taskset -c "$GEN_CPU" "$@" > "$W/out.$name.$rate" 2>&1 || true
  after=$(served)
  python3 - "$W/perf.txt" "$W/res.json" "$name" "$rate" "$((after - before - 1))" "$load" "$SECS" <<'PY' >> "$W/rounds.txt"
import sys, json, os
perf, res, name, rate, n, load, secs = sys.argv[1:]
f = {}
for l in open(perf):
    p = l.strip().split(",")
    if len(p) > 2 and p[2] in ("task-clock", "context-switches"):
        f[p[2]] = float(p[0])
deliv = drop = lag = "-"
if os.path.exists(res):
    r = json.load(open(res))
    by = r["totals"].get("by_class", {}) or {}
    drop = str(by.get("dropped", 0))
    deliv = f'{(r["totals"]["requests"] - int(drop)) / float(secs):.0f}'
    lag = str(r["generator"]["lag"]["p99_us"])
print(name, rate, n, f["task-clock"], int(f["context-switches"]), load, deliv, drop, lag)
PY
  tail -1 "$W/rounds.txt" >&2
}

PACER=""
if command -v "${CC:-cc}" >/dev/null; then
  "${CC:-cc}" -O2 -o "$W/pacer" "$HERE/lib/pacer.c" && PACER=$W/pacer
else
  echo "no C compiler (${CC:-cc}): the pacer's floor rows are left out" >&2
fi

# floor RATE: the pacer at RATE with the last open round's CPU per
# request of work (its row: the arrivals, that work, its lateness p99).
floor() {
  local rate=$1 work load out
  [[ -n $PACER ]] || return 0
  work=$(awk -v r="$rate" '$1 == "open" && $2 == r { w = $4 * 1000 / ($3 > 0 ? $3 : 1) } END { printf "%.2f", w }' "$W/rounds.txt")
  load=$(cut -d' ' -f1 /proc/loadavg)
  out=$(taskset -c "$GEN_CPU" "$PACER" "$rate" "$SECS" "$work")
  echo "  pacer: $out" >&2
  awk -v r="$rate" -v s="$SECS" -v w="$work" -v l="$load" -v lag="$(sed -n 's/.* p99 \([0-9]*\) .*/\1/p' <<<"$out")" \
    'BEGIN { n = r * s; printf "floor %d %d %.2f 0 %s - - %s\n", r, n, n * w / 1000, l, lag }' >> "$W/rounds.txt"
  tail -1 "$W/rounds.txt" >&2
}

tools="open oha closed"
[[ -n ${BEFORE:-} ]] && tools="open before oha closed"
[[ -x $OHA ]] || { echo "oha not found ($OHA): its rounds are left out" >&2; tools=${tools/oha /}; }
: > "$W/rounds.txt"
for r in $(seq "$ROUNDS"); do
  for rate in $RATES; do
    order=$tools
    (( r % 2 )) || order=$(tr ' ' '\n' <<<"$tools" | tac | tr '\n' ' ')
    for tool in $order; do
      openc=(); [[ -n ${C_OPEN:-} ]] && openc=(-c "$C_OPEN")
      case $tool in
        open) round open "$rate" "$STAMPEDE" url --open -r "$rate" "${openc[@]}" -d "${SECS}s" -o "$W/res.json" "http://127.0.0.1:$PORT/"
              floor "$rate" ;;
        before) round before "$rate" "$BEFORE" url --open -r "$rate" "${openc[@]}" -d "${SECS}s" -o "$W/res.json" "http://127.0.0.1:$PORT/" ;;
        oha) round oha "$rate" "$OHA" --no-tui --latency-correction -q "$rate" -c 64 -z "${SECS}s" "http://127.0.0.1:$PORT/" ;;
        closed) round closed "$rate" "$STAMPEDE" url -r "$rate" -c 64 -d "${SECS}s" "http://127.0.0.1:$PORT/" ;;
      esac
    done
  done
done
python3 - "$W/rounds.txt" "$SECS" <<'PY'
import sys
from collections import defaultdict
rows = defaultdict(list)
for l in open(sys.argv[1]):
    if l.strip():
        name, rate, n, ms, cs, load, deliv, drop, lag = l.split()
        rows[(int(rate), name)].append((int(n), float(ms), int(cs), load, deliv, drop, lag))
print(f"{'rate':>6} {'tool':8} {'requests':>9} {'µs CPU/req':>11} {'ctxsw/req':>9} {'load':>5} {'delivered/s':>11} {'dropped':>7} {'lag p99 µs':>10}")
for (rate, name), rs in sorted(rows.items(), key=lambda kv: (-kv[0][0], kv[0][1])):
    for n, ms, cs, load, deliv, drop, lag in rs:
        print(f"{rate:6d} {name:8} {n:9d} {ms * 1e3 / max(n, 1):11.2f} {cs / max(n, 1):9.3f} {load:>5} {deliv:>11} {drop:>7} {lag:>10}")
# Ratios per rate: each round's open figure over the same round's peers.
for rate in sorted({k[0] for k in rows}, reverse=True):
    def us(name):
        return [ms * 1e3 / max(n, 1) for n, ms, *_ in rows.get((rate, name), [])]
    o = us("open")
    for peer in ("oha", "closed", "before"):
        p = us(peer)
        if o and p:
            ratios = ", ".join(f"{a / b:.2f}" for a, b in zip(o, p))
            print(f"{rate}/s open ÷ {peer}: {ratios} (per round)")
    # Lateness beside the machine's floor (the pacer after each open round).
    lags = lambda name: [lag for *_, lag in rows.get((rate, name), [])]
    if lags("floor"):
        pairs = ", ".join(f"{a} vs {b}" for a, b in zip(lags("open"), lags("floor")))
        print(f"{rate}/s lateness p99 µs, open vs the pacer's floor: {pairs} (per round)")
PY
