#!/usr/bin/env bash
# CPU per GET /groups request of the release build (or of the Go peer), on a noisy machine:
# what a lever changes, read from CPU time or instruction counts rather than wall clock.
#
#   Benchmarks/groups-cpu.sh cpu N [SECONDS=5]     utime+stime of the server over a wrk run
#                                                   (-t2 -c64), divided by the requests wrk counted
#   Benchmarks/groups-cpu.sh callgrind N [SECONDS=20]   instructions per request under callgrind
#                                                   (one worker, counters zeroed after a warm-up),
#                                                   profile in $CALLGRIND_OUT (default
#                                                   /tmp/groups-callgrind.out)
#
# Env: CALLGRIND_OUT (where callgrind writes: two runs at once need two, and two PORT_BASEs),
# TARGET=tributary|go (cpu mode), WORKERS (tributary, default auto), PORT_BASE (default
# 18180: nginx on +1, the server on +13), COALESCE=off|on (default off, as in groups.sh: every
# request its own fetch; with coalescing, concurrent requests share runs and the count per
# request depends on timing). The fixture is ../shared/bench's gen.py and nginx;
# everything listens on 127.0.0.1 and is stopped by its PID on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
mode=${1:?usage: groups-cpu.sh cpu|callgrind N [SECONDS]}
n=${2:?usage: groups-cpu.sh cpu|callgrind N [SECONDS]}
seconds=${3:-$([ "$mode" = callgrind ] && echo 20 || echo 5)}
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
    callgrind/*) objcopy --strip-debug "${tributary[0]}" "$work/tributary"
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
requests() { awk '/requests in/ {print $1}' "$1"; }
if [ "$mode" = cpu ]; then
    wrk -t2 -c64 -d2s "http://127.0.0.1:$port/groups" >/dev/null
    read -r user_before system_before < <(ticks)
    wrk -t2 -c64 -d"${seconds}s" "http://127.0.0.1:$port/groups" >"$work/wrk"
    read -r user_after system_after < <(ticks)
    count=$(requests "$work/wrk")
    awk -v u=$((user_after - user_before)) -v k=$((system_after - system_before)) -v hz="$(getconf CLK_TCK)" \
        -v r="$count" -v s="$seconds" -v who="$target" -v n="$n" \
        'BEGIN { printf "%s N=%d: %d requests in %ss (%.0f req/s), CPU %.3f ms/request (user %.3f, kernel %.3f)\n",
                 who, n, r, s, r / s, (u + k) / hz * 1000 / r, u / hz * 1000 / r, k / hz * 1000 / r }'
else
    wrk -t1 -c4 -d5s "http://127.0.0.1:$port/groups" >/dev/null
    callgrind_control -z "$server_pid" >/dev/null
    wrk -t1 -c4 -d"${seconds}s" "http://127.0.0.1:$port/groups" >"$work/wrk"
    callgrind_control -d "$server_pid" >/dev/null
    count=$(requests "$work/wrk")
    sleep 1
    dump=$(ls -t "$profile"* | head -1)
    [ -s "$dump" ] || { echo "no callgrind dump" >&2; exit 1; }
    total=$(callgrind_annotate "$dump" 2>/dev/null | awk '/PROGRAM TOTALS/ {gsub(",", "", $1); print $1; exit}')
    awk -v i="$total" -v r="$count" -v n="$n" \
        'BEGIN { printf "callgrind N=%d: %d requests, %.0f instructions/request\n", n, r, i / r }'
    echo "profile: $dump (callgrind_annotate --inclusive=yes $dump)"
fi
