#!/usr/bin/env bash
# Batched details side by side in one run (DESIGN part 3, "Batched details"): GET /groups over
# the nginx fixture of ../shared/bench, N groups, every target measured by the harness's own
# run.sh (the same wrk settings, body checked against expected.json):
#
#   unbatched   Tributary, one detail call per item                    (N+1 calls per answer)
#   batched     Tributary, details.batch max: MAX                      (1 + ⌈N/MAX⌉)
#   windowed    Tributary, details.batch max: MAX, batchWindow: WINDOW (fewer: concurrent
#               requests share batch calls)
#   go          the Go peer of ../shared/bench (no batching: N+1 calls per answer, always)
#
# then the latency phase (wrk -c8) against a delayed upstream. Every Tributary runs with
# coalescing off (the peers do not coalesce): requests share nothing but batch windows. After
# each phase it prints, per Tributary, the upstream calls and detail calls per answer, read
# from its /metrics before and after (`tributary_upstream_request_duration_seconds_count`,
# `tributary_detail_batches_total`, `tributary_http_requests_total{route="/groups"}`).
#
#   Benchmarks/batching.sh [N=100] [DELAY_MS=20]
#
# Env: MAX=50 (one of gen.py's batch sizes: 1 5 10 20 25 50 100 200), WINDOW=2ms, DURATION=10s,
# ROUNDS=1, QUIET_MAX=15 QUIET_WAIT=600 (as bench-all.sh), PORT_BASE=18480 (upstreams on +1 and +2, targets on +11 to +14), BENCH_SOURCE,
# BENCH_COPY (where the Go peer is built, as in groups.sh). Loopback only; every process
# started here is stopped by its PID on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-100}
delay=${2:-20}
max=${MAX:-50}
window=${WINDOW:-2ms}
source_dir=${BENCH_SOURCE:-$root/../shared/bench}
copy=${BENCH_COPY:-/tmp/tributary-bench}
base=${PORT_BASE:-18480}
up_port=$((base + 1)) delay_port=$((base + 2))
declare -A port=([unbatched]=$((base + 11)) [batched]=$((base + 12)) [windowed]=$((base + 13)) [go]=$((base + 14)))
fixture=/tmp/batching-bench-fx$n
work=$(mktemp -d)
pids=()

stop_targets() {
    local pid
    for pid in "${pids[@]}"; do
        kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true
    done
    pids=()
}
cleanup() {
    stop_targets
    "$source_dir/upstream/stop-upstream.sh" "$up_port" >/dev/null 2>&1 || true
    "$source_dir/upstream/stop-upstream.sh" "$delay_port" >/dev/null 2>&1 || true
}
trap 'cleanup; rm -rf "$work"' EXIT

[ -x "$copy/peers/go/peer-go" ] || {
    mkdir -p "$copy/peers"
    cp -r "$source_dir/peers/go" "$copy/peers/"
    chmod -R u+w "$copy/peers/go"
    (cd "$copy/peers/go" && GOFLAGS=-mod=mod GOPROXY=off go build -o peer-go .)
}
(cd "$root" && SWIFT_DETERMINISTIC_HASHING=1 swift build -c release --static-swift-stdlib --product tributary >/dev/null)
python3 "$source_dir/upstream/gen.py" "$n" "$fixture" >/dev/null

"$root/Benchmarks/coalesce-config.sh" off >"$work/unbatched.yaml"
BATCH=$max "$root/Benchmarks/coalesce-config.sh" off >"$work/batched.yaml"
BATCH=$max BATCH_WINDOW=$window "$root/Benchmarks/coalesce-config.sh" off >"$work/windowed.yaml"

# start UPSTREAM_URL: every target, on its port, against that upstream.
start() {
    local up=$1 name
    for name in unbatched batched windowed; do
        TRIBUTARY_LOG_LEVEL=warning "$root/.build/release/tributary" serve --config "$work/$name.yaml" \
            --listen "127.0.0.1:${port[$name]}" --upstream "tasks=$up" >"$work/$name.log" 2>&1 &
        pids+=($!)
    done
    "$copy/peers/go/peer-go" --port "${port[go]}" --upstream "$up" --pool 128 >"$work/go.log" 2>&1 &
    pids+=($!)
    for name in unbatched batched windowed go; do
        for _ in $(seq 1 100); do curl -fs -o /dev/null "http://127.0.0.1:${port[$name]}/groups" && break; sleep 0.1; done
    done
}

# counters NAME: "answers upstream_calls detail_batches" of Tributary NAME now.
counters() {
    curl -fs "http://127.0.0.1:${port[$1]}/metrics" | python3 -c '
import re, sys
answers = calls = batches = 0.0
for line in sys.stdin:
    if line.startswith("#"): continue
    name, _, value = line.rpartition(" ")
    if name.startswith("tributary_http_requests_total{") and "route=\"/groups\"" in name and "status=\"200\"" in name: answers += float(value)
    elif name.startswith("tributary_upstream_request_duration_seconds_count{") and "upstream=\"tasks\"" in name: calls += float(value)
    elif name.startswith("tributary_detail_batches_total{") and "resource=\"groups\"" in name: batches += float(value)
print(f"{answers:.0f} {calls:.0f} {batches:.0f}")'
}

source "$root/Benchmarks/quiet.sh"   # wait_quiet

# phase MODE UPSTREAM_URL [run.sh options]: the harness's run.sh over every target, then the
# calls per answer of each Tributary over that run.
phase() {
    local mode=$1 up=$2 name; shift 2
    declare -A before=()
    start "$up"
    wait_quiet 600
    for name in unbatched batched windowed; do before[$name]=$(counters "$name"); done
    "$source_dir/run.sh" "$mode" --upstream "$up" -d "${DURATION:-10s}" --rounds "${ROUNDS:-1}" --expected "$fixture/expected.json" "$@" \
        unbatched="http://127.0.0.1:${port[unbatched]}" batched="http://127.0.0.1:${port[batched]}" \
        windowed="http://127.0.0.1:${port[windowed]}" go="http://127.0.0.1:${port[go]}"
    echo "# upstream calls per answer over this phase (go: N+1 = $((n + 1)) by construction, it does not batch)"
    printf "%-10s %9s %10s %16s %18s\n" name answers "calls" "calls/answer" "detail calls/ans"
    for name in unbatched batched windowed; do
        read -r a0 c0 b0 <<<"${before[$name]}"
        read -r a1 c1 b1 <<<"$(counters "$name")"
        awk -v name="$name" -v a="$((a1 - a0))" -v c="$((c1 - c0))" -v b="$((b1 - b0))" -v unbatched="$([ "$name" = unbatched ] && echo 1 || echo 0)" \
            'BEGIN { d = unbatched ? c - a : b; printf "%-10s %9d %10d %16.3f %18.3f\n", name, a, c, (a ? c / a : 0), (a ? d / a : 0) }'
    done
    stop_targets
}

echo "# $(date -u +%FT%TZ)  N=$n  max=$max  window=$window  delay=${delay}ms  coalescing off  $(nproc) cores"
"$source_dir/upstream/run-upstream.sh" "$up_port" "$fixture" >/dev/null
echo; echo "=== throughput: N=$n, no upstream delay, wrk -c64 ==="
phase throughput "http://127.0.0.1:$up_port"
"$source_dir/upstream/run-upstream.sh" "$delay_port" "$fixture" "$delay" >/dev/null
echo; echo "=== latency: N=$n, upstream delay ${delay}ms, wrk -c8 (goal for batched: p50 ≤ 2 × delay + 5 ms = $((2 * delay + 5)) ms) ==="
phase latency "http://127.0.0.1:$delay_port" --delay-ms "$delay"
