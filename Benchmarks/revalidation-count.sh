#!/usr/bin/env bash
# Instructions and allocations per refresh of a live /groups pipeline, revalidation on against
# off, counted by callgrind: counts, not times, so the same binary gives the same figures on a
# busy machine (the times are Benchmarks/revalidation.sh's).
#
#   Benchmarks/revalidation-count.sh [REFRESHES=20]
#
# One worker under callgrind (a copy of the binary without debug info: valgrind 3.19 cannot
# read Swift 6's DWARF 5), the nginx fixture of ../shared/bench with ITEMS=200 groups and their
# details, one event-stream subscriber keeping the pipeline live, refreshes by `POST
# /groups/reload` with nothing changed. After 3 warm-up refreshes the counters are zeroed, then
# REFRESHES reloads go one every WAIT=1.5 s (no /metrics polls inside the count), and the dump
# is divided by REFRESHES. Env: TRIBUTARY_BIN (default .build/release/tributary, built if
# missing), BENCH_SOURCE, PORT_BASE=18700 (nginx on +1, the service on +11), ITEMS, WAIT.
# Everything listens on 127.0.0.1 and is stopped by its PID on exit, Ctrl-C included.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
refreshes=${1:-20}
bench=${BENCH_SOURCE:-$root/../shared/bench}
base=${PORT_BASE:-18700}
up_port=$((base + 1)) port=$((base + 11))
items=${ITEMS:-200}
wait_s=${WAIT:-1.5}
if [ -z "${TRIBUTARY_BIN:-}" ]; then
    (cd "$root" && SWIFT_DETERMINISTIC_HASHING=1 swift build -c release --static-swift-stdlib --product tributary >/dev/null)
    TRIBUTARY_BIN=$root/.build/release/tributary
fi
work=$(mktemp -d)
fixture=/tmp/revalidation-count-fx$items
server_pid="" client_pid=""
cleanup() {
    [ -n "$client_pid" ] && kill "$client_pid" 2>/dev/null || true
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    "$bench/upstream/stop-upstream.sh" "$up_port" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

[ -f "$fixture/groups.json" ] || python3 "$bench/upstream/gen.py" "$items" "$fixture" >/dev/null
"$bench/upstream/run-upstream.sh" "$up_port" "$fixture" >/dev/null
objcopy --strip-debug "$TRIBUTARY_BIN" "$work/tributary"

count() {   # count on|off: one line of figures
    local revalidate=$1
    cat >"$work/$1.yaml" <<YAML
server: {listen: "127.0.0.1:$port", workers: 1, logLevel: warning}
upstreams:
  tasks: {url: "http://127.0.0.1:$up_port", poolSize: 128, revalidate: $([ "$1" = on ] && echo true || echo false)}
resources:
  groups:
    kind: list
    upstream: tasks
    list: {path: /groups, items: result, id: id}
    details: {path: "/groups/{id}/metadata", value: result}
    concurrency: 64
    refreshInterval: 1h
    coalesce: false
YAML
    valgrind --tool=callgrind --callgrind-out-file="$work/$1.out" "$work/tributary" --config "$work/$1.yaml" >"$work/$1.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 600); do curl -fs -o /dev/null "http://127.0.0.1:$port/healthz" && break; sleep 0.1; done
    curl -sN -H 'Accept: text/event-stream' "http://127.0.0.1:$port/groups" >"$work/$1.sse" &
    client_pid=$!
    sleep 3
    for _ in 1 2 3; do curl -fs -X POST "http://127.0.0.1:$port/groups/reload" >/dev/null; sleep "$wait_s"; done
    callgrind_control -z "$server_pid" >/dev/null 2>&1
    for _ in $(seq 1 "$refreshes"); do curl -fs -X POST "http://127.0.0.1:$port/groups/reload" >/dev/null; sleep "$wait_s"; done
    callgrind_control -d "$server_pid" >/dev/null 2>&1
    sleep 1
    local dump
    dump=$(ls -t "$work/$1.out"* | grep -v "^$work/$1.out$" | head -1)
    read -r instructions allocations < <(python3 "$root/Benchmarks/callgrind_counts.py" "$dump")
    awk -v m="$1" -v i="$instructions" -v a="$allocations" -v r="$refreshes" \
        'BEGIN { printf "revalidate %s: %.0f instructions, %.1f allocations per refresh (%d refreshes)\n", m, i / r, a / r, r }'
    kill "$client_pid" 2>/dev/null || true; client_pid=""
    kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true; server_pid=""
}
echo "# $items items with details, nothing changed, one worker under callgrind"
count on
count off
