#!/usr/bin/env bash
# Time to the first event of a new live stream, with and without progressive=true, when one
# detail of a 100-group list takes 2 s and the others 20 ms (issue: "What the client sees").
#
#   Benchmarks/first-event.sh                                    (~1 min: 10 rounds of each mode)
#   Benchmarks/first-event.sh -rounds 10 -streams 64 -groups 100 -detail 20ms -slow 2s
#
# Each round opens 64 streams of /groups at once (progressive or not, by turns), times each
# from its connect to the end of its first snapshot, closes them and waits for the service to
# stop the pipeline, so every round starts one anew. Reports p50, p99 and max per mode, and the
# goal: with progressive, p50 ≤ the list call's latency + 15 ms. Method: the tool's header
# (Benchmarks/load/first-event/main.go). Env: TRIBUTARY_BIN=path (default: swift build -c
# release --product tributary); QUIET_MAX=15.
set -euo pipefail
exec "$(dirname "$0")/load/run-tool.sh" first-event "$@"
