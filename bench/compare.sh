#!/usr/bin/env bash
# compare.sh — stampede against its peers, side by side, in one run.
#
#   bench/compare.sh [tests...]     default: test3 test4 test5
#
# Builds stampede, installs the peers that Debian ships (nginx, wrk, hey,
# ab, h2load, siege; oha too when cargo is present and INSTALL_OHA=1), and
# runs bench/peers.sh with stampede as the candidate:
#   test3  64 keep-alive connections, nginx pinned to CPU 0, generator to
#          CPU 1, max speed; requests counted by nginx itself; prints req/s,
#          CPU µs/request, peak RSS and the ratios to wrk
#   test4  5,000 connections at 2,000 req/s (connections held, RSS)
#   test5  coordinated omission against the stall server (true p99 ≈ 0.94 s)
# REPEATS (default 5) runs per cell, tools alternating within each round;
# tables show medians. Runs taken while other processes load the machine
# are retried (peers.sh's wait_quiet and contamination check). Environment
# variables of peers.sh (TOOLS, CONNS3, SECS3, ...) pass through. The
# floor of issue 19 (≥ 1.0× wrk's req/s at ≤ wrk's CPU per request):
#   REPEATS=5 TOOLS=wrk bench/compare.sh test3
# ENGINE (auto, loop or goroutines; default auto) is stampede's --engine:
# test3's plan runs the event-loop engine unless ENGINE=goroutines.
# All traffic goes to 127.0.0.1.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
export PATH="$PATH:/usr/sbin:/usr/local/go/bin:$HOME/.cargo/bin"

mkdir -p "$HERE/.bin"
(cd "$ROOT" && go build -o "$HERE/.bin/stampede" ./cmd/stampede)

need=()
for b in nginx:nginx wrk:wrk hey:hey ab:apache2-utils h2load:nghttp2-client siege:siege /usr/bin/time:time taskset:util-linux; do
  command -v "${b%%:*}" >/dev/null || need+=("${b#*:}")
done
if ((${#need[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq "${need[@]}" curl >/dev/null
fi
if [[ ${INSTALL_OHA:-0} == 1 ]] && ! command -v oha >/dev/null && command -v cargo >/dev/null; then
  cargo install oha --locked
fi

export CANDIDATE="$HERE/.bin/stampede url {url} -c {conns} -d {secs}s -r {rate} --format json --engine ${ENGINE:-auto}"
export CANDIDATE_NAME=stampede CANDIDATE_PARSE=auto
export CONNS3=${CONNS3:-64}
export REPEATS=${REPEATS:-5}
export TOOLS=${TOOLS:-"wrk hey ab h2load oha"}
tests=("$@")
((${#tests[@]})) || tests=(test3 test4 test5)
exec "$HERE/peers.sh" "${tests[@]}"
