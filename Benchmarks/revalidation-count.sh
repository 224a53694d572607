#!/usr/bin/env bash
# Instructions and allocations per refresh of a live /groups pipeline, revalidation on against
# off, counted by callgrind: counts, not times, so the same binary gives the same figures on a
# busy machine (the times are Benchmarks/revalidation.sh's).
#
#   Benchmarks/revalidation-count.sh [REFRESHES=20]
#
# One worker under callgrind (a copy of the binary without debug info: valgrind 3.19 cannot
# read Swift 6's DWARF 5), the static nginx fixture (../shared/bench's tree, written by the load
# harness) with ITEMS=200 groups and their details, one event-stream subscriber keeping the
# pipeline live, refreshes by `POST /groups/reload` with nothing changed. After 3 warm-up
# refreshes the counters are zeroed, then REFRESHES reloads go one every WAIT=1.5 s (no
# /metrics polls inside the count), and the dump is divided by REFRESHES. Method:
# Benchmarks/load/revalidation/ (its `count` scenario). Env: TRIBUTARY_BIN (default: the
# image's release build), copied first; ITEMS, WAIT (a duration: 1.5s). Everything listens on
# free loopback ports and is stopped by its PID on exit, Ctrl-C included.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
for tool in nginx valgrind objcopy; do
    command -v "$tool" >/dev/null || { echo "$tool is needed (apt-get install nginx-light valgrind binutils)" >&2; exit 2; }
done
wait=${WAIT:-1.5}
[[ $wait =~ ^[0-9.]+$ ]] && wait=${wait}s
exec "$root/Benchmarks/load/run-tool.sh" revalidation -scenarios count -refreshes "${1:-20}" -wait "$wait" \
    -counts "$root/Benchmarks/callgrind_counts.py"
