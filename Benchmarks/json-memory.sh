#!/usr/bin/env bash
# Peak memory of the release build parsing hostile upstream bodies: each shape below, just
# under the default maxResponseBytes (8 MiB), served by the tool's loopback upstream and asked
# for once through a `kind: search` resource that passes the whole body on, by a service of
# its own for each shape: [[],[],…], [[1],[1],…], [1,1,…], [[[[[]]]],…] and {"a": {}, …}.
# Prints each answer's status and error code, and the service's peak RSS (VmHWM) before and
# after: what one parse of a body can make the process grow. Method: the tool's header
# (Benchmarks/load/json-memory/main.go).
#
#   Benchmarks/json-memory.sh                                       the release build
#   TRIBUTARY_BIN=/path/to/tributary Benchmarks/json-memory.sh      another build
#
# Env: TRIBUTARY_BIN=path (default: swift build -c release --product tributary), copied first.
# Everything listens on free loopback ports; the tool stops each service by its PID
# (Benchmarks/load/run-tool.sh), Ctrl-C included.
set -euo pipefail
exec "$(dirname "$0")/load/run-tool.sh" json-memory "$@"
