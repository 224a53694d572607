#!/usr/bin/env bash
# What tracing costs a JSON answer (issue 40), one run side by side: GET /groups (the demo
# upstream's 10 groups: a SERVER span and 11 CLIENT spans per request) with tracing off
# against every request sampled and exported over OTLP/HTTP to a collector on loopback.
# Goal: on ≥ 90 % of off, by req/s.
#
# The collector is a sink in the tool's own process: it reads each export and answers 200, so
# the exporter's real work (protobuf, HTTP) is done; the spans swift-otel dropped, if any, are
# read from /metrics and reported, since a dropped span is work not done. Coalescing off
# (every request its own fetch, as in Benchmarks/groups.sh), the access log off, 2 workers,
# wrk -t2 -c100 -d10s, a fresh service per phase, the phases in reverse order every other
# round, after a quiet machine. Medians over the rounds. Method: the tool's header
# (Benchmarks/load/tracing-cost/main.go).
#
#   Benchmarks/tracing-cost.sh                                   (3 rounds: ~2 min on a quiet machine)
#   Benchmarks/tracing-cost.sh -rounds 1 -duration 5s -connections 100 -workers 2
#
# Env (the flags' defaults): ROUNDS=3 DURATION=10s CONNECTIONS=100 WORKERS=2, QUIET_MAX=15
# QUIET_WAIT=120 (before each phase, wait at most QUIET_WAIT s for the machine to be at most
# QUIET_MAX % busy); TRIBUTARY_BIN=path (default: swift build -c release --product tributary),
# copied first. The tool starts the demo upstream, the collector and the services on loopback
# and stops each by its PID (Benchmarks/load/run-tool.sh), Ctrl-C included.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v wrk >/dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 1; }
exec "$root/Benchmarks/load/run-tool.sh" tracing-cost "$@"
