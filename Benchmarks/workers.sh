#!/usr/bin/env bash
# Worker scaling: GET /groups from Tributary with one worker and with two, side by side in one
# run against the same static nginx fixture (../shared/bench's tree, written by the load
# harness; N groups, no delay), with wrk; medians of ROUNDS interleaved rounds, and the ratio
# two/one.
#
#   Benchmarks/workers.sh [N=10]
#
# Both run the release build with the shipped configuration (poolSize 128 for the process, so
# two workers hold 64 each) and the access log off. Env: ROUNDS=5 DURATION=10s CONNECTIONS=64;
# TRIBUTARY_BIN (default: the image's release build), copied first. Method:
# Benchmarks/load/workers/main.go. Everything listens on free loopback ports; every process
# started is stopped by its PID on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
for tool in nginx wrk; do
    command -v "$tool" >/dev/null || { echo "$tool is missing (apt-get install nginx-light wrk)" >&2; exit 1; }
done
exec "$root/Benchmarks/load/run-tool.sh" workers -config "$root/config/tributary.yaml" -n "${1:-10}"
