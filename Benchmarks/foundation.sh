#!/usr/bin/env bash
# The foundation benchmark (issue 2): evhttp through Tributary's HTTPServer module against nginx
# serving the same bytes, side by side in one run, with wrk; medians of ROUNDS interleaved
# rounds, reported as ratios to nginx.
#
#   Benchmarks/foundation.sh            (from the project root; needs nginx, wrk, cc and libevent-dev)
#
# Rows: nginx (static file), evhttp (Benchmarks/evhttp-hello.c: libevent's evhttp in plain C
# answering the same bytes, the floor under our Swift layer), hello (Tributary's HTTPServer
# answering the same bytes from memory), proxy (each request makes one pooled upstream call
# to that nginx through UpstreamClient and answers its body). Env: ROUNDS=3 DURATION=10s
# CONNECTIONS=64. FoundationBench is built here (swift build -c release --product
# FoundationBench) and copied; the tool (Benchmarks/load/foundation/main.go) compiles the C
# server, puts everything on free loopback ports and stops every process by its PID on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
for tool in nginx wrk cc pkg-config; do
    command -v "$tool" >/dev/null || { echo "$tool is missing (apt-get install nginx-light wrk gcc pkg-config libevent-dev)" >&2; exit 1; }
done
(cd "$root" && swift build -c release --product FoundationBench >/dev/null)
bench=$(cd "$root" && swift build -c release --show-bin-path)/FoundationBench
# run-tool.sh copies the binary it is given as TRIBUTARY_BIN and passes the copy as -bin.
TRIBUTARY_BIN=$bench exec "$root/Benchmarks/load/run-tool.sh" foundation -evhttp "$root/Benchmarks/evhttp-hello.c" "$@"
