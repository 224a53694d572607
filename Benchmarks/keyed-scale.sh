#!/usr/bin/env bash
# Keyed live pipelines at scale (issues 28 and 29): one `tributary serve` (one worker), the
# tool's own upstream, and
#   params:   1,000 distinct team values x 3 streams of GET /teams/{team}/groups (3,000 streams,
#             1,000 live pipelines)
#   identity: 1,000 distinct bearer tokens x 5 streams of GET /me/groups, whose upstream
#             forwards Authorization (5,000 streams, 1,000 identity pipelines)
# For each: RSS per live pipeline ((after - before) / 1,000, its streams included, and beyond
# its streams against the same streams on one key), and the update p99: bump the upstream's
# version, POST /{resource}/reload, time until every stream has the snapshot with it.
#
#   Benchmarks/keyed-scale.sh                        (from anywhere; ~3 min on a quiet machine)
#   Benchmarks/keyed-scale.sh -modes params -values 1000 -per-value 3 -runs 3 -updates 5 [-groups 10] [-baseline=false]
#
# Before each run it waits (QUIET_WAIT=600 s at most) until the machine is at most QUIET_MAX=15%
# busy. Every wait is bounded (180 s to connect, 60 s per update). Env: TRIBUTARY_BIN=path
# (default: swift build -c release --product tributary); the binary is copied first. The tool
# and the service are stopped by PID on exit, Ctrl-C included (Benchmarks/load/run-tool.sh).
# Method: Benchmarks/load/keyed-scale/main.go.
set -euo pipefail
exec "$(dirname "$0")/load/run-tool.sh" keyed-scale "$@"
