#!/usr/bin/env bash
# SSE scale: RSS per live /groups subscriber and the time one update takes to reach all of
# them, with 10,000 subscribers on one worker (goals: ≤ 8 KB each, p99 ≤ 250 ms).
#
#   Benchmarks/sse-scale.sh                      (from anywhere; ~1 min on a quiet machine)
#   Benchmarks/sse-scale.sh -runs 5 -updates 10 -subscribers 10000 -groups 10 [-workers 2]
#
# Before each run it waits (QUIET_WAIT=600 s at most) until the machine is at most QUIET_MAX=15%
# busy, like ../shared/bench; each update's row also shows the CPU other processes used.
# Method, flags (-profile for perf/callgrind) and results: Benchmarks/load/sse-scale/README.md.
#
# Each run starts a fresh `tributary serve` (one worker, a generated config with
# sse.maxSubscribers and server.maxConnections above the count, no interval refresh) on the
# tool's own upstream, opens the subscribers from one epoll loop (Benchmarks/load/sse-scale/,
# Go standard library), then times -updates reloads; the table gives medians over runs and
# updates. Env: TRIBUTARY_BIN=path (default: swift build -c release --product tributary).
# The binary is copied first, so a rebuild during the run changes nothing. The tool and the
# service are stopped by PID on exit, Ctrl-C included (Benchmarks/load/run-tool.sh).
set -euo pipefail
exec "$(dirname "$0")/load/run-tool.sh" sse-scale "$@"
