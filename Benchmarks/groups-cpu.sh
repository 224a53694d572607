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
# Env: CALLGRIND_OUT (where callgrind writes: two runs at once need two), TARGET=tributary|go
# (cpu mode; GO_PEER, default /tmp/tributary-bench/peers/go/peer-go), WORKERS (tributary,
# default auto), COALESCE=off|on (default off, as in groups.sh: every request its own fetch;
# with coalescing, concurrent requests share runs and the count per request depends on
# timing), BATCH and BATCH_WINDOW (Benchmarks/coalesce-config.sh's); TRIBUTARY_BIN (default:
# the image's release build), copied first. The fixture is ../shared/bench's tree and nginx
# configuration, written and run by the load harness (Benchmarks/load/groups-cpu/); everything
# listens on free loopback ports and is stopped by its PID on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
usage="usage: groups-cpu.sh cpu|callgrind N [SECONDS] | count N [REQUESTS]"
mode=${1:?$usage}
n=${2:?$usage}
for tool in nginx wrk valgrind objcopy; do
    command -v "$tool" >/dev/null || { echo "$tool is needed (apt-get install nginx-light wrk valgrind binutils)" >&2; exit 2; }
done
exec "$root/Benchmarks/load/run-tool.sh" groups-cpu -mode "$mode" -n "$n" ${3:+-span "$3"} \
    -config-script "$root/Benchmarks/coalesce-config.sh" -counts "$root/Benchmarks/callgrind_counts.py"
