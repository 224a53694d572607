#!/usr/bin/env bash
# Attack benchmark: GET /groups throughput (wrk -t2 -c64 -d10s) against the nginx fixture of
# ../shared/bench (N=10 groups), without and then with these attacks running at once, each a
# bounded number of loopback connections for a bounded time: 200 event streams flooding the
# service with bytes, 200 chunked POSTs with an endless chunk-size line, 500 slowloris
# connections (Debian's slowhttptest -H), and a burst of 2,048 silent connections beyond the service's open-file limit
# (the service runs under `prlimit --nofile=2048:2048`). Then two checks: HEAD then GET on one
# keep-alive connection (no desync), and an upstream on port 0 (no crash).
#
# The part-3 attacks (-attacks tokens,params,forwarded,xff, or all), selected the same way:
# JWTs whose exp/nbf/iat are 0, -1, 2^53, 2^63, 2^64, 1e308, 1e999, strings, null (JSON GETs
# and held streams); parameter values that are dot segments, encoded bytes, Unicode
# look-alikes or 1,024/1,025 bytes long; forwarded Authorization headers at just under
# server.maxHeaderBytes, each a new identity; 200,000 distinct X-Forwarded-For clients from
# the trusted loopback peer. They run, baseline included, with a configuration the tool
# derives from the shipped one (auth.jwt, trustedProxies, a 1,000,000/s limit by ip, three
# resources), and their answers are counted by status. For them the tool adds the fixture
# files of /me/groups and /teams/T/groups and gives the fixture's nginx 64 KiB header
# buffers. Until the service survives a token whose JSON ends 513 arrays deep, the tokens
# attack crashes it; -tokens-nested=false leaves those two tokens out (README).
#
# Goals (the hardening issue's): no crash; RSS ≤ idle RSS + 64 MiB throughout; throughput
# under attack ≥ 80% of the same run without; every service thread back to idle (< 5% of a
# core over 200 ms) within 2 s after the attacks stop. Prints a table per round, medians,
# and a PASS/FAIL line per goal; exit status 0 only if all pass.
#
#   Benchmarks/attack.sh                             3 rounds: ~2 min after the builds, + ≤ 30 s a round for a quiet machine
#   Benchmarks/attack.sh -rounds 1 -attacks fds      one attack alone (flood,chunks,slowloris,fds)
#   Benchmarks/attack.sh -flood 200 -flood-rate 64 -chunks 200 -slowloris 500 -fds 2048 -fd-limit 2048
#   Benchmarks/attack.sh -rounds 1 -attacks tokens,params,forwarded,xff      the part-3 attacks
#   Benchmarks/attack.sh -attacks all -tokens-nested=false                   all eight, 3 rounds
#
# Every flag is the tool's (Benchmarks/load/attack/, Go standard library; method and flags in
# its README.md). The service is the release build (`swift build -c release --product
# tributary`, or TRIBUTARY_BIN=path) with the shipped config/tributary.yaml, its upstreams
# pointed at the fixture, access log off (TRIBUTARY_LOG_LEVEL=warning). The tool writes the
# fixture (../shared/bench's tree, through the load harness) and runs nginx on it on a free
# loopback port itself. Env: N=10 (groups), QUIET_MAX=15 QUIET_WAIT=30 (before each round,
# wait at most QUIET_WAIT s for the machine to be at most QUIET_MAX% busy). The tool is stopped by its PID on exit,
# Ctrl-C included; it stops nginx and the services it starts by PID.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
groups=${N:-10}
command -v wrk >/dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 1; }
command -v nginx >/dev/null || { echo "nginx is missing (apt-get install nginx-light)" >&2; exit 1; }
command -v prlimit >/dev/null || { echo "prlimit is missing (util-linux)" >&2; exit 1; }
"$root/scripts/require-packages" slowhttptest   # the slowloris attack (as root; otherwise it says what to install)

exec "$root/Benchmarks/load/run-tool.sh" attack -config "$root/config/tributary.yaml" -groups "$groups" "$@"
