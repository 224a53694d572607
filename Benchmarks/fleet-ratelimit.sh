#!/usr/bin/env bash
# A fleet-wide rate limit, measured: three replicas and a real redis-server share a limit of
# 200 requests a second by client address; one client offers 1,000 a second for 10 s, round
# robin over the replicas, in an open loop (the tool's own: hey's per-worker cap is a closed
# loop; its main.go says what differed). Prints what each replica admitted and refused, and
# the admitted rate beyond the burst against the limit (goal of issue 30: within ±10%).
#
#   Benchmarks/fleet-ratelimit.sh [-rate 200] [-offered 1000] [-seconds 10] [-replicas 3] [-burst 20]
#
# Env: TRIBUTARY_BIN=path (default: swift build -c release --product tributary). Everything
# listens on loopback and is stopped by PID (Benchmarks/load/run-tool.sh).
set -euo pipefail
exec "$(dirname "$0")/load/run-tool.sh" fleet-ratelimit "$@"
