#!/usr/bin/env bash
# sigtransports.sh — what an idle SignalR connection costs the generator
# on each transport: N connections per transport (default 1,000), each
# transport in a generator run of its own against a hub of its own, with a
# baseline run of the same plan holding 1 connection.
#
#   bench/sigtransports.sh [N [RAMP_S [HOLD_S]]]     default 1000 20 40
#   CASES="sse/json long_polling/messagepack" bench/sigtransports.sh 500
#
# Cases are TRANSPORT/PROTOCOL (default: websockets/json
# websockets/messagepack sse/json long_polling/json). WebSockets and SSE
# are served by bench/sighub on github.com/philippseith/signalr; long
# polling, which no third-party Go hub here speaks, by bench/sighub
# -server sigtest (internal/proto/signalr/sigtest, written from the
# aspnetcore TransportProtocols spec). Each case is one
# bench/signalrscale.sh run (N tenants × 1 device); its own log goes to
# stderr, and the table below gathers the figures taken at the last sample
# of each hold, every connection open and idle:
#
#   RSS / connection            all the generator's resident memory over
#                               the connections (the ~40 MB program file
#                               included)
#   anonymous / connection      what the process allocated (heap, stacks)
#   marginal / connection       growth over the 1-connection baseline
#   marginal anonymous          the same, anonymous memory only
#   hub's count                 connections the hub holds (sigtest: negotiated
#                               and not closed)
#   TCP connections             established to the hub's port (ss): the
#                               sockets each transport holds
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
N=${1:-1000}
RAMP=${2:-20}
HOLD=${3:-40}
read -r -a cases <<<"${CASES:-websockets/json websockets/messagepack sse/json long_polling/json}"
export PATH="$PATH:/usr/local/go/bin"
mkdir -p "$HERE/.bin/sig"
# One build for every case: the runs then measure the same binaries.
(cd "$HERE/.." && go build -o "$HERE/.bin/sig/stampede" ./cmd/stampede && go build -o "$HERE/.bin/sig/sighub" ./bench/sighub)
echo "stampede built from $(cd "$HERE/.." && git rev-parse --short HEAD) plus the working tree at $(date -u '+%H:%M UTC')" >&2
dir=$(mktemp -d /tmp/sigtransports.XXXXXX)
child=""
cleanup() {
  trap - EXIT INT TERM
  # signalrscale.sh stops its generator and hub on TERM.
  if [[ -n $child ]]; then kill -TERM "$child" 2>/dev/null || true; wait "$child" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'echo "interrupted" >&2; exit 130' INT TERM

for c in "${cases[@]}"; do
  t=${c%/*} p=${c#*/}
  echo "=== $t / $p: $N connections" >&2
  rm -f "$dir/result"
  NO_BUILD=1 RESULT_FILE="$dir/result" TRANSPORT=$t PROTOCOL=$p HUB=sighub \
    "$HERE/signalrscale.sh" "$N" 1 -- 1 "$RAMP" "$HOLD" >"$dir/$t-$p.out" 2>"$dir/$t-$p.err" &
  child=$!
  # Waiting a second at a time: a TERM that lands as bash starts waiting
  # for a long child can go unnoticed until the child ends.
  while kill -0 "$child" 2>/dev/null; do sleep 1; done
  rc=0
  wait "$child" || rc=$?
  child=""
  cat "$dir/$t-$p.err" "$dir/$t-$p.out" >&2
  if ((rc != 0)) || [[ ! -s $dir/result ]]; then
    echo "$t $p failed (exit $rc)" >>"$dir/rows"
    continue
  fi
  read -r asked open rss anon bconns brss banon hrss _ socks <"$dir/result"
  echo "$t $p $asked $open $rss $anon $bconns $brss $banon $hrss $socks" >>"$dir/rows"
done

echo
echo "Idle SignalR connections per transport; $(date -u '+%Y-%m-%d %H:%M UTC'); load average $(cut -d' ' -f1-3 /proc/loadavg); $(nproc) cores"
echo
echo "| transport | protocol | asked | open (hub's count) | generator RSS | RSS / connection | anonymous / connection | marginal / connection | marginal anonymous / connection | baseline (1 connection) RSS | hub RSS / connection | TCP connections to the hub |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
while read -r t p asked open rss anon bconns brss banon hrss socks; do
  if [[ $asked == failed ]]; then echo "| $t | $p | $open $rss $anon | | | | | | | | |"; continue; fi
  if ((open <= bconns)); then echo "| $t | $p | $asked | $open | | | | | | | |"; continue; fi
  awk -v t="$t" -v p="$p" -v n="$asked" -v e="$open" -v r="$rss" -v a="$anon" -v bc="$bconns" -v b="$brss" -v ba="$banon" -v h="$hrss" -v s="$socks" \
    'BEGIN{printf "| %s | %s | %d | %d | %.1f MB | %.2f KB | %.2f KB | %.2f KB | %.2f KB | %.1f MB | %.1f KB | %d |\n", t, p, n, e, r/1024, r/e, a/e, (r-b)/(e-bc), (a-ba)/(e-bc), b/1024, h/e, s}'
done <"$dir/rows"
