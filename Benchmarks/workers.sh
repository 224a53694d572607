#!/usr/bin/env bash
# Worker scaling: GET /groups from Tributary with one worker and with two, side by side in one
# run against the same nginx upstream fixture of ../shared/bench (N groups, no delay), with
# wrk; medians of ROUNDS interleaved rounds, and the ratio two/one.
#
#   Benchmarks/workers.sh [N=10]
#
# Both run the release build with the shipped configuration (poolSize 128 for the process,
# so two workers hold 64 each) and the access log off. Env: ROUNDS=5 DURATION=10s
# CONNECTIONS=64 PORT_BASE=8280. Every process started here is stopped by its PID on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-10}
rounds=${ROUNDS:-5}
duration=${DURATION:-10s}
connections=${CONNECTIONS:-64}
base=${PORT_BASE:-8280}
upstream_port=$base
bench=${BENCH_SOURCE:-$root/../shared/bench}
work=$(mktemp -d /tmp/tributary-workers-bench.XXXXXX)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    "$bench/upstream/stop-upstream.sh" "$upstream_port" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

command -v wrk >/dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 1; }
(cd "$root" && swift build -c release --product tributary >/dev/null)
binary=$root/.build/release/tributary
python3 "$bench/upstream/gen.py" "$n" "$work/fixtures" >/dev/null
chmod -R a+rX "$work"   # nginx workers run unprivileged
"$bench/upstream/run-upstream.sh" "$upstream_port" "$work/fixtures" >/dev/null

declare -A port=([one]=$((base + 1)) [two]=$((base + 2)))
declare -A workers=([one]=1 [two]=2)
for target in one two; do
    TRIBUTARY_WORKERS=${workers[$target]} TRIBUTARY_LOG_LEVEL=warning "$binary" serve \
        --config "$root/config/tributary.yaml" --listen "127.0.0.1:${port[$target]}" \
        --upstream "tasks=http://127.0.0.1:$upstream_port" >"$work/$target.log" 2>&1 &
    pids+=($!)
done
for target in one two; do
    for _ in $(seq 1 100); do curl -fs -o /dev/null "http://127.0.0.1:${port[$target]}/healthz" && break; sleep 0.1; done
    cmp -s <(curl -fs "http://127.0.0.1:${port[$target]}/groups") "$work/fixtures/expected.json" ||
        { echo "workers=${workers[$target]}: GET /groups differs from the fixture's expected.json" >&2; exit 1; }
done

declare -A results=()
for round in $(seq 1 "$rounds"); do
    for target in one two; do
        url="http://127.0.0.1:${port[$target]}/groups"
        wrk -t2 -c"$connections" -d2s "$url" >/dev/null   # warm-up
        results[$target]+="$(wrk -t2 -c"$connections" -d"$duration" "$url" | awk '/Requests\/sec/ {print $2}') "
    done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
one=$(echo "${results[one]}" | median)
two=$(echo "${results[two]}" | median)
printf '%-10s %10s   %s\n' workers "req/s" rounds
printf '%-10s %10.0f   %s\n' 1 "$one" "${results[one]}"
printf '%-10s %10.0f   %s\n' 2 "$two" "${results[two]}"
printf 'scaling 1 -> 2 workers: x%.2f\n' "$(echo "$two / $one" | bc -l)"
echo "GET /groups, N=$n, wrk -t2 -c$connections -d$duration, $rounds interleaved rounds, medians; nginx 1 worker; $(nproc) cores shared by all"
