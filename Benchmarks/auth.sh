#!/usr/bin/env bash
# GET /groups (the demo upstream's 10 groups) with auth off, then with auth required (ES256
# tokens of 100 distinct clients, sent round robin: each pays one signature check, then cache
# lookups), one run side by side with the same wrk settings. Coalescing off, as in
# Benchmarks/groups.sh; the access log off. Method: the tool's header
# (Benchmarks/load/auth/main.go), which also makes the key and signs the tokens.
#
#   Benchmarks/auth.sh
#   Benchmarks/auth.sh -duration 10s -connections 100 -workers 2 -clients 100
#
# Env (the flags' defaults): DURATION=10s CONNECTIONS=100 WORKERS=2; TRIBUTARY_BIN=path
# (default: swift build -c release --product tributary), copied first. The tool starts the
# demo upstream and the services on loopback and stops each by its PID
# (Benchmarks/load/run-tool.sh), Ctrl-C included.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v wrk >/dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 1; }
exec "$root/Benchmarks/load/run-tool.sh" auth "$@"
