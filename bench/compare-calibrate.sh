#!/usr/bin/env bash
# compare-calibrate.sh — how often `stampede compare` cries wolf, and how
# often it sees a real regression (issue 26's floors).
#
#   bench/compare-calibrate.sh [runs|judge|all]     default: all
#
#   runs   N rounds (N=10 by default) of examples/quickstart.yaml against the
#          built-in demo, with `stress-ng --cpu 1` loading the machine. Each
#          round runs, in this order, the plan against
#            aa   the demo as it is (service=2ms, the default),
#            s20  a demo 20 % slower in service time (service=2.4ms),
#            s5   a demo 5 % slower (service=2.1ms),
#          so load drift on the machine falls on every kind alike.
#   judge  compares every pair: the N·(N−1)/2 A/A pairs (aa-i vs aa-j,
#          i < j) and the N² pairs aa-i vs s20-j and aa-i vs s5-j; counts
#          worse / better / within noise / not judged, and prints the p50
#          and p95 changes each verdict rests on (for choosing --min-effect).
#
# BIN=path BUILD=0 uses a binary built elsewhere instead of building one.
# DIR (default /tmp/stampede-calibrate) keeps the result files, so `judge` can be
# run again on the same runs with another MIN_EFFECT (passed to compare as
# --min-effect when set). Floors: A/A ≤ 5 % of pairs called worse or
# better; s20 called worse in ≥ 95 % of pairs. All traffic goes to
# 127.0.0.1 (the demo target).
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PATH="$PATH:/usr/local/go/bin"
N=${N:-10}
DIR=${DIR:-${TMPDIR:-/tmp}/stampede-calibrate}
PLAN=$ROOT/examples/quickstart.yaml
BIN=${BIN:-$HERE/.bin/stampede}
mode=${1:-all}

build() {
  [[ ${BUILD:-1} == 0 ]] && return
  mkdir -p "$HERE/.bin"
  (cd "$ROOT" && go build -o "$BIN" ./cmd/stampede)
}

runs() {
  command -v stress-ng >/dev/null || { echo "stress-ng is not installed (apt-get install stress-ng)" >&2; exit 2; }
  mkdir -p "$DIR"
  stress-ng --cpu 1 --timeout 3600s --quiet &
  local stress=$!
  trap 'kill "$stress" 2>/dev/null || true' EXIT
  echo "load: stress-ng --cpu 1 (pid $stress); uptime before: $(uptime)"
  for ((i = 1; i <= N; i++)); do
    for kind in aa s20 s5; do
      local demo=""
      case $kind in
        s20) demo="service=2.4ms" ;;
        s5) demo="service=2.1ms" ;;
      esac
      local args=(run "$PLAN" -q -o "$DIR/$kind-$i.json")
      [[ -n $demo ]] && args+=(--demo "$demo")
      # Exit 1 is a failed threshold, which a loaded machine may cause;
      # the result is written all the same.
      (cd "$ROOT" && timeout 120 "$BIN" "${args[@]}" >/dev/null) || [[ $? == 1 ]]
    done
    echo "round $i/$N done; load $(cut -d' ' -f1-3 /proc/loadavg)"
  done
  kill "$stress" 2>/dev/null || true
  trap - EXIT
}

# verdict A B prints B's outcome against A and the p50/p95 findings.
verdict() {
  local extra=()
  [[ -n ${MIN_EFFECT:-} ]] && extra+=(--min-effect "$MIN_EFFECT")
  local out
  out=$("$BIN" compare "$1" "$2" --labels A,B "${extra[@]}" 2>&1) || true
  local outcome
  outcome=$(sed -n '/^Verdict/,$ s/^  B: \(.*\)$/\1/p' <<<"$out" | head -1)
  local p50 p95
  p50=$(grep -o 'p50 [+-][0-9.]* % \[[^]]*\]' <<<"$out" | head -1 || true)
  p95=$(grep -o 'p95 [+-][0-9.]* % \[[^]]*\]' <<<"$out" | head -1 || true)
  printf '%s\t%s\t%s\t%s\t%s\n' "$(basename "$1" .json)" "$(basename "$2" .json)" "${outcome:-?}" "$p50" "$p95"
}

tally() {
  local name=$1 file=$2
  local total worse better noise other
  total=$(wc -l <"$file")
  worse=$(awk -F'\t' '$3=="worse"' "$file" | wc -l)
  better=$(awk -F'\t' '$3=="better"' "$file" | wc -l)
  noise=$(awk -F'\t' '$3=="within noise"' "$file" | wc -l)
  other=$((total - worse - better - noise))
  printf '%-5s pairs %3d: worse %3d, better %3d, within noise %3d, not judged %3d\n' "$name" "$total" "$worse" "$better" "$noise" "$other"
}

judge() {
  local out=$DIR/verdicts
  mkdir -p "$out"
  : >"$out/aa.tsv"
  : >"$out/s20.tsv"
  : >"$out/s5.tsv"
  for ((i = 1; i <= N; i++)); do
    for ((j = i + 1; j <= N; j++)); do
      verdict "$DIR/aa-$i.json" "$DIR/aa-$j.json" >>"$out/aa.tsv"
    done
    for ((j = 1; j <= N; j++)); do
      verdict "$DIR/aa-$i.json" "$DIR/s20-$j.json" >>"$out/s20.tsv"
      verdict "$DIR/aa-$i.json" "$DIR/s5-$j.json" >>"$out/s5.tsv"
    done
  done
  echo "min effect: ${MIN_EFFECT:-default}"
  tally A/A "$out/aa.tsv"
  tally s20 "$out/s20.tsv"
  tally s5 "$out/s5.tsv"
  # Repeats as the unit: the first half of the A runs against the second
  # half, and against the first half of the s20 and s5 runs.
  local h=$((N / 2)) a1=() a2=() b20=() b5=()
  for ((i = 1; i <= h; i++)); do
    a1+=("$DIR/aa-$i.json")
    a2+=("$DIR/aa-$((i + h)).json")
    b20+=("$DIR/s20-$i.json")
    b5+=("$DIR/s5-$i.json")
  done
  for side in a2 b20 b5; do
    local -n other=$side
    echo "--- repeats: aa 1..$h --vs $side"
    "$BIN" compare "${a1[@]}" --vs "${other[@]}" ${MIN_EFFECT:+--min-effect "$MIN_EFFECT"} 2>&1 | sed -n '/^Verdict/,/^$/p'
  done
  echo "verdicts per pair: $out/*.tsv"
}

build
case $mode in
  runs) runs ;;
  judge) judge ;;
  all) runs && judge ;;
  *) echo "usage: $0 [runs|judge|all]" >&2; exit 2 ;;
esac
