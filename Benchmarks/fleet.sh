#!/usr/bin/env bash
# The fleet: replicas coordinated through Redis, measured (Benchmarks/load/fleet/README.md):
#   - upstream list calls per refresh with K = 1, 2, 3 replicas subscribed (goal: exactly 1),
#     beside the same replicas without Redis;
#   - cross-replica trigger latency, POST on B → event on A's stream, over 1,000 triggers,
#     beside as many on A itself (goal: p99 ≤ 10 ms on loopback);
#   - failover after SIGKILL of the lease holder, over 20 kills (goal: max ≤ leaseTTL +
#     refresh interval + 1 s);
#   - 10,000 SSE subscribers spread over 3 replicas: one update reaches all (goal: p99 ≤ 300 ms).
#
#   Benchmarks/fleet.sh                                  (all four phases; ~4 minutes on a quiet machine)
#   Benchmarks/fleet.sh -phases trigger -triggers 200    (one phase, fewer rounds)
#   Benchmarks/fleet.sh -kills 20 -lease-ttl 3s -failover-refresh 1s -subscribers 10000 -updates 5
#
# The tool (Benchmarks/load/fleet/, Go standard library) starts everything itself on loopback
# and stops it by PID: a redis-server (Debian's package) on a free port, its scripted upstream
# (which counts list calls), and the replicas, `tributary serve --redis …`, one worker each.
# Before each phase it waits (QUIET_WAIT=300 s at most) until the machine is at most
# QUIET_MAX=15% busy. Env: TRIBUTARY_BIN=path (default: swift build -c release --product
# tributary); the binary is copied first, so a rebuild during the run changes nothing.
set -euo pipefail
exec "$(dirname "$0")/load/run-tool.sh" fleet "$@"
