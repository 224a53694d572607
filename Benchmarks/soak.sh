#!/usr/bin/env bash
# Soak: JSON requests (some abandoned), SSE subscribers joining and leaving, reloads, and an
# upstream injecting faults (resets, hangs beyond the upstream timeout, garbage bodies, slow
# answers). Checks: no crash; every 5xx is an upstream error of a kind injected, no more than
# injected; answers complete and in order; RSS flat within 5% after the warm-up; nothing left
# open after the load; a clean stop on SIGTERM. Exit status 0 only if every check passed.
#
#   Benchmarks/soak.sh                  10 minutes
#   Benchmarks/soak.sh --short          60 s, for CI (bounded: ends within ~90 s after the builds)
#   SOAK_SECONDS=120 Benchmarks/soak.sh [tool flags, e.g. -seed 42 -fault-rate 0.05]
#
# Benchmarks/load/soak/ is the Go (standard library) load client and faulty upstream. Env:
# TRIBUTARY_BIN=path (default: swift build -c release --product tributary). The binary is
# copied first; the tool and the service are stopped by PID on exit
# (Benchmarks/load/run-tool.sh). Details and results: Benchmarks/load/soak/README.md.
set -euo pipefail
seconds=${SOAK_SECONDS:-600}
if [ "${1:-}" = "--short" ]; then
    shift
    seconds=${SOAK_SECONDS:-60}
fi
exec "$(dirname "$0")/load/run-tool.sh" soak -seconds "$seconds" "$@"
