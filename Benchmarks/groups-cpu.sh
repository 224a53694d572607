#!/usr/bin/env bash
# CPU per GET /groups request of the release build (or of the Go peer), on a noisy machine:
# what a lever changes, read from CPU time or instruction counts rather than wall clock.
#
#   Benchmarks/groups-cpu.sh cpu N [SECONDS=5]     utime+stime of the server over a wrk run
#                                                   (-t2 -c64), divided by the requests wrk counted
#   Benchmarks/groups-cpu.sh callgrind N [SECONDS=20]   instructions and allocations (calls to
#                                                   malloc) per request under callgrind (one
#                                                   worker, wrk -t1 -c4, counters zeroed after a
#                                                   warm-up), profile in $CALLGRIND_OUT (default
#                                                   /tmp/groups-callgrind.out)
#   Benchmarks/groups-cpu.sh count N [REQUESTS=200]     the same counts over exactly REQUESTS
#                                                   requests sent one after another on one
#                                                   keep-alive connection (after as many to warm
#                                                   up): no timing in it, so the same binary gives
#                                                   the same figures; Benchmarks/budgets.py checks
#                                                   them against Benchmarks/Thresholds/
#
# Env: CALLGRIND_OUT (where callgrind writes: two runs at once need two, and two PORT_BASEs),
# TARGET=tributary|go (cpu mode), WORKERS (tributary, default auto), PORT_BASE (default
# 18180: nginx on +1, the server on +13), COALESCE=off|on (default off, as in groups.sh: every
# request its own fetch; with coalescing, concurrent requests share runs and the count per
# request depends on timing). The fixture is ../shared/bench's gen.py and nginx;
# everything listens on 127.0.0.1 and is stopped by its PID on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: groups-cpu.sh cpu|callgrind N [SECONDS] | count N [REQUESTS]"
mode=${1:?$usage}
n=${2:?$usage}
span=${3:-$(case $mode in callgrind) echo 20 ;; count) echo 200 ;; *) echo 5 ;; esac)}
bench=${BENCH_SOURCE:-$root/../shared/bench}
base=${PORT_BASE:-18180}
up_port=$((base + 1)) port=$((base + 13))
target=${TARGET:-tributary}
fixture=/tmp/groups-cpu-fx$n
work=$(mktemp -d)
server_pid=""
profile=${CALLGRIND_OUT:-/tmp/groups-callgrind.out}
rm -f "$profile"*

cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    "$bench/upstream/stop-upstream.sh" "$up_port" >/dev/null 2>&1 || true
    rm -rf "$work"
}
trap cleanup EXIT

[ -f "$fixture/groups.json" ] || python3 "$bench/upstream/gen.py" "$n" "$fixture" >/dev/null
"$bench/upstream/run-upstream.sh" "$up_port" "$fixture" >/dev/null

"$root/Benchmarks/coalesce-config.sh" "${COALESCE:-off}" >"$work/tributary.yaml"
export TRIBUTARY_CONFIG="$work/tributary.yaml"
export TRIBUTARY_LOG_LEVEL=warning
tributary=("${TRIBUTARY_BIN:-$root/.build/release/tributary}"
    --listen "127.0.0.1:$port" --upstream "tasks=http://127.0.0.1:$up_port")
case $mode/$target in
    cpu/tributary) "${tributary[@]}" ${WORKERS:+--workers "$WORKERS"} & ;;
    cpu/go) "${GO_PEER:-/tmp/tributary-bench/peers/go/peer-go}" --port "$port" --upstream "http://127.0.0.1:$up_port" --pool 128 & ;;
    # Valgrind 3.19 cannot read Swift 6's DWARF 5: a copy without debug info (symbols kept).
    callgrind/* | count/*)
                 objcopy --strip-debug "${tributary[0]}" "$work/tributary"
                 valgrind --tool=callgrind --callgrind-out-file="$profile" \
                     "$work/tributary" "${tributary[@]:1}" --workers 1 2>"$work/valgrind.log" & ;;
    *) echo "unknown mode/target: $mode/$target" >&2; exit 2 ;;
esac
server_pid=$!
for _ in $(seq 1 600); do
    curl -fsS -o "$work/body" "http://127.0.0.1:$port/groups" 2>/dev/null && break
    sleep 0.1
done
cmp -s <(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$work/body") \
       <(python3 -c 'import json,sys; print(json.dumps(json.load(open(sys.argv[1]))))' "$fixture/expected.json") ||
    { echo "answer differs from $fixture/expected.json" >&2; exit 1; }

ticks() { awk '{print $14, $15}' "/proc/$server_pid/stat"; }

# $1 GET /groups one after another on one keep-alive connection, each answered 200.
one_by_one() {
    python3 - "$port" "$1" <<'EOF'
import http.client, sys
connection = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=60)
for _ in range(int(sys.argv[2])):
    connection.request("GET", "/groups")
    response = connection.getresponse()
    response.read()
    if response.status != 200:
        sys.exit(f"GET /groups answered {response.status}")
EOF
}

# The counts of callgrind's last dump, per request ($1 requests).
report_counts() {
    sleep 1
    local dump instructions allocations
    dump=$(ls -t "$profile"* | head -1)
    [ -s "$dump" ] || { echo "no callgrind dump" >&2; exit 1; }
    read -r instructions allocations < <(python3 "$root/Benchmarks/callgrind_counts.py" "$dump")
    awk -v i="$instructions" -v a="$allocations" -v r="$1" -v n="$n" -v m="$mode" \
        'BEGIN { printf "%s N=%d: %d requests, %.0f instructions/request, %.1f allocations/request\n", m, n, r, i / r, a / r }'
    echo "profile: $dump (callgrind_annotate --inclusive=yes $dump)"
}
requests() { awk '/requests in/ {print $1}' "$1"; }
if [ "$mode" = cpu ]; then
    wrk -t2 -c64 -d2s "http://127.0.0.1:$port/groups" >/dev/null
    read -r user_before system_before < <(ticks)
    wrk -t2 -c64 -d"${span}s" "http://127.0.0.1:$port/groups" >"$work/wrk"
    read -r user_after system_after < <(ticks)
    count=$(requests "$work/wrk")
    awk -v u=$((user_after - user_before)) -v k=$((system_after - system_before)) -v hz="$(getconf CLK_TCK)" \
        -v r="$count" -v s="$span" -v who="$target" -v n="$n" \
        'BEGIN { printf "%s N=%d: %d requests in %ss (%.0f req/s), CPU %.3f ms/request (user %.3f, kernel %.3f)\n",
                 who, n, r, s, r / s, (u + k) / hz * 1000 / r, u / hz * 1000 / r, k / hz * 1000 / r }'
elif [ "$mode" = callgrind ]; then
    wrk -t1 -c4 -d5s "http://127.0.0.1:$port/groups" >/dev/null
    callgrind_control -z "$server_pid" >/dev/null
    wrk -t1 -c4 -d"${span}s" "http://127.0.0.1:$port/groups" >"$work/wrk"
    callgrind_control -d "$server_pid" >/dev/null
    report_counts "$(requests "$work/wrk")"
else
    requests=$span
    one_by_one "$requests"
    callgrind_control -z "$server_pid" >/dev/null
    one_by_one "$requests"
    callgrind_control -d "$server_pid" >/dev/null
    report_counts "$requests"
fi
