#!/usr/bin/env bash
# The fleet under chaos (Benchmarks/load/fleet-chaos/): three replicas (release build, one
# worker each) behind Debian's nginx (deploy/nginx/tributary.conf.template), 1,000 /groups
# event streams and 100 JSON GETs a second through nginx; for a bounded time (90 s) one event
# every 10 s in turn: Redis frozen (SIGSTOP 4 s, SIGCONT), the lease holder SIGKILLed (and
# started again 2 s later), Redis SIGKILLed and started again empty; and every second,
# messages without the fleet's secret written to Redis (forged states, leases, reloads,
# control requests and replies; genuine messages played back). Reports, with their goals:
# crashed replicas (0), forged or invalid documents delivered (0), the longest gap between
# two snapshots of any subscriber (≤ leaseTTL + refresh + 1 s), RSS per replica.
#
#   Benchmarks/fleet-chaos.sh                                  (90 s of chaos, ~2 minutes in all)
#   Benchmarks/fleet-chaos.sh -duration 30s -subscribers 300
#   Benchmarks/fleet-chaos.sh -lease-ttl 1s -refresh 300ms -event-every 5s -freeze 2s
#
# Everything runs on loopback and is stopped by its PID. First it waits (QUIET_WAIT=300 s at
# most) until the machine is at most QUIET_MAX=15% busy. Env: TRIBUTARY_BIN=path (default:
# swift build -c release --product tributary); the binary is copied first.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
exec "$root/Benchmarks/load/run-tool.sh" fleet-chaos -template "$root/deploy/nginx/tributary.conf.template" "$@"
