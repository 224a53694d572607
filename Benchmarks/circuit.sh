#!/usr/bin/env bash
# Circuit breaker: the time from an upstream going down (answering 503 to every call) to the
# first fast `503 upstream_circuit_open`, and the upstream calls while the circuit is open
# (goal: zero), with the shipped breaker defaults (5 failures, open 10 s), median of the runs.
#
#   Benchmarks/circuit.sh                        (from anywhere; ~15 s per run)
#   Benchmarks/circuit.sh -runs 5 -clients 4
#
# One Go process (Benchmarks/load/circuit/, standard library) plays the clients (GET /groups
# back to back) and the upstream. Env: TRIBUTARY_BIN=path (default: swift build -c release
# --product tributary). The binary is copied first; the tool and the service are stopped by
# PID on exit (Benchmarks/load/run-tool.sh).
set -euo pipefail
exec "$(dirname "$0")/load/run-tool.sh" circuit "$@"
