#!/usr/bin/env bash
# h2speed.sh — HTTP/2 over TLS, 64 streams: stampede (64 users, each its own
# connection, one stream at a time) against h2load -c 64 -m 1, or with
# MODE=shared stampede's shared connections against h2load -c 1 -m 64.
# The same measurement as tlsspeed.sh (nginx on CPU 0, generator on CPU 1,
# requests counted by nginx, CPU from the generator's own user+system
# time), with PROTO=h2.
#
#   bench/h2speed.sh                    # 3 rounds of 5 s
#   ROUNDS=1 SECS=3 MODE=shared bench/h2speed.sh
# Needs nginx, h2load (nghttp2-client), openssl, taskset, curl, bc. All
# traffic goes to 127.0.0.1.
set -euo pipefail
PROTO=h2 exec "$(dirname "${BASH_SOURCE[0]}")/tlsspeed.sh" "$@"
