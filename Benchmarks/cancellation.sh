#!/usr/bin/env bash
# Cancellation: the time from a client's disconnect to the upstream seeing its connection
# close, over 1,000 trials (goal p99 ≤ 50 ms), then RSS and open files before and after
# 10,000 connect/disconnect cycles (goal: no growth beyond noise).
#
#   Benchmarks/cancellation.sh                   (from anywhere; ~15 s)
#   Benchmarks/cancellation.sh -trials 1000 -cycles 10000 -groups 10 [-rst]
#
# One Go process (Benchmarks/load/cancellation/, standard library) plays both the client and
# a raw-TCP upstream that hangs metadata calls and time-stamps their close, so both ends use
# one monotonic clock. Env: TRIBUTARY_BIN=path (default: swift build -c release --product
# tributary). The binary is copied first; the tool and the service are stopped by PID on exit
# (Benchmarks/load/run-tool.sh). It first waits for a quiet machine (QUIET_MAX=15%,
# QUIET_WAIT=600 s). Method and results: Benchmarks/load/cancellation/README.md.
set -euo pipefail
exec "$(dirname "$0")/load/run-tool.sh" cancellation "$@"
