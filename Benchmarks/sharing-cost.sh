#!/usr/bin/env bash
# What the sharing key costs a JSON answer (issues 28 and 29), one run side by side:
#
#   a. GET /groups (plain) against GET /teams/core/groups: a resource with a path parameter
#      over the same upstream documents (its list and detail paths carry the value as an
#      ignored query), so the only difference is the parameter machinery: route match,
#      validation, percent-encoding into the upstream paths, the key. Goal: parameterized
#      ≥ 97 % of plain.
#   b. GET /groups on an upstream with `forward: [Authorization]` against the same resource on
#      an upstream without it, both asked with the same one bearer token: the identity hash,
#      the per-identity key, the forwarded header on every upstream call, the private answer.
#      Goal: forwarding ≥ 95 % of not forwarding.
#
# The demo upstream's 10 groups, coalescing off (every request its own fetch, as in
# Benchmarks/groups.sh), the access log off, 2 workers, wrk -t2 -c100 -d10s. Each round starts
# a fresh service serving all four resources (one generated configuration), warms each path
# for 2 s, waits for a quiet machine, then runs the four phases, in reverse order every other
# round; the summary gives medians over the rounds of each figure and of each round's ratios,
# by req/s and by the service's CPU time per request (steadier when other work shares the
# cores). Then, unless COUNT=0, the same four phases one request at a time under callgrind (one
# worker): instructions and allocations per request, the ratios that noise cannot move.
# Method: the tool's header (Benchmarks/load/sharing-cost/main.go).
#
#   Benchmarks/sharing-cost.sh
#   ROUNDS=0 Benchmarks/sharing-cost.sh        the counts only (Benchmarks/budgets.py checks them,
#                                              the "sharing" budgets)
#   Benchmarks/sharing-cost.sh -rounds 1 -duration 5s -count 50
#
# Env (the flags' defaults): ROUNDS=3 DURATION=10s CONNECTIONS=100 WORKERS=2 COUNT=200,
# QUIET_MAX=15 QUIET_WAIT=120 (before each round, wait at most QUIET_WAIT s for the machine to
# be at most QUIET_MAX % busy); TRIBUTARY_BIN=path (default: swift build -c release --product
# tributary), copied first. The tool starts the demo upstream and the services on loopback and
# stops each by its PID (Benchmarks/load/run-tool.sh), Ctrl-C included.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v wrk >/dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 1; }
exec "$root/Benchmarks/load/run-tool.sh" sharing-cost -counts "$root/Benchmarks/callgrind_counts.py" "$@"
