#!/usr/bin/env bash
# signalrstorm.sh — a 429 storm: many SignalR connections against a service
# that admits fewer than they are, as 38,000 devices would meet an Azure
# SignalR Service unit above its quota. It shows how stampede's
# connections retry: how many negotiates they make, and whether they come
# back spread out or in lockstep waves.
#
#   bench/signalrstorm.sh [CONNECTIONS [QUOTA [SECONDS]]]     defaults 4000 1000 60
#
# Environment:
#   RECONNECT='{initial: 1s, max: 30s}'   the scenario's reconnect: value
#                                          (e.g. '{initial: 1s, max: 1s, jitter: none}'
#                                          for a fixed delay, the lockstep of old)
#   RETRY_AFTER=5s                         the service's Retry-After on a 429
#   STATS_PORT=8299                        the service imitation's /__stats port
#
# The service is bench/sigstorm (sigtest.Azure: the app server's negotiate
# redirects to the service, which checks the bearer token, holds at most
# QUOTA connections and answers 429 with Retry-After above that), served on
# loopback over Server-Sent Events. All connections want to be open from
# the first second to the last. At the end it prints the run's attempts,
# opens, failures, give-ups, the waits Retry-After lengthened, the peak
# waiting to retry, and the attempts started in each second (from the
# result's attempts_per_s) beside the service's own count of negotiates
# in each second, with the largest second after the first against the
# mean of those seconds (a lockstep wave shows as a second far above it).
set -euo pipefail
CONNS=${1:-4000}
QUOTA=${2:-1000}
SECS=${3:-60}
RECONNECT=${RECONNECT:-"{initial: 1s, max: 30s}"}
RETRY_AFTER=${RETRY_AFTER:-5s}
STATS_PORT=${STATS_PORT:-8299}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
mkdir -p "$HERE/.bin/storm"
[[ -n ${NO_BUILD:-} ]] || (cd "$ROOT" && go build -o "$HERE/.bin/storm/stampede" ./cmd/stampede && go build -o "$HERE/.bin/storm/sigstorm" ./bench/sigstorm)

dir=$(mktemp -d /tmp/signalrstorm.XXXXXX)
svc=
cleanup() {
  trap - EXIT INT TERM
  [[ -z $svc ]] || kill "$svc" 2>/dev/null || true
  [[ -z $svc ]] || wait "$svc" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
trap 'echo "interrupted" >&2; exit 130' INT TERM

"$HERE/.bin/storm/sigstorm" -quota "$QUOTA" -retry-after "$RETRY_AFTER" -stats "127.0.0.1:$STATS_PORT" >"$dir/svc.out" 2>"$dir/svc.err" &
svc=$!
for _ in $(seq 50); do [[ -s $dir/svc.out ]] && break; sleep 0.1; done
hub=$(head -1 "$dir/svc.out")
[[ $hub == http://127.0.0.1:* ]] || { echo "the service did not start: $(cat "$dir/svc.err")" >&2; exit 1; }

cat >"$dir/storm.yaml" <<YAML
name: signalr-storm
target: ${hub%/hubs/*}
seed: 29
scenarios:
  display:
    users: $CONNS
    signalr:
      url: $hub
      transport: sse
      reconnect: $RECONNECT
load: {grace: 2s, stages: [{duration: ${SECS}s, users: 1}]}
YAML
echo "$CONNS connections, a service that admits $QUOTA (429, Retry-After $RETRY_AFTER), ${SECS}s, reconnect: $RECONNECT; load $(cut -d' ' -f1-3 /proc/loadavg)"
set +e
timeout $((SECS + 60)) "$HERE/.bin/storm/stampede" run "$dir/storm.yaml" -o "$dir/result.json" >"$dir/run.out" 2>&1
rc=$?
set -e
curl -s "http://127.0.0.1:$STATS_PORT/__stats" >"$dir/stats.json"
[[ $rc -le 1 && -s $dir/result.json ]] || { echo "stampede exited $rc:"; tail -20 "$dir/run.out"; exit 1; }
echo "load at the end $(cut -d' ' -f1-3 /proc/loadavg)"
python3 - "$dir/result.json" "$dir/stats.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
s = json.load(open(sys.argv[2]))
c = next(x for x in r["connections"]["scenarios"] if x["scenario"] == "display")
print(f"stampede: {c['attempts']} attempts, {c['opened']} opened, {c['failed']} failed {c.get('by_class', {})}, "
      f"{c.get('gave_up', 0)} gave up, {c.get('retry_after', 0)} waits lengthened by Retry-After, "
      f"peak {c.get('peak_waiting', '(not counted)')} waiting to retry, {c['open_at_end']} open at the end")
print(f"service:  {s['admitted']} admitted, {s['over_quota']} answered 429, {s['issued']} tokens issued")
a = c.get("attempts_per_s", [])
print("attempts started per second:", " ".join(map(str, a)))
print("service negotiates per second:", " ".join(map(str, s["negotiates_per_s"])))
later = a[1:]
if later:
    mean = sum(later) / len(later)
    print(f"after the first second: mean {mean:.1f}/s, largest second {max(later)} ({max(later) / mean if mean else 0:.2f}× the mean), "
          f"smallest {min(later)}")
PY
