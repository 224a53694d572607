#!/usr/bin/env bash
# SSE scale: RSS per live /groups subscriber and the time one update takes to reach all of
# them, with 10,000 subscribers on one worker (goals: ≤ 8 KB each, p99 ≤ 250 ms).
#
#   Benchmarks/sse-scale.sh                      (from anywhere; ~1 min on a quiet machine)
#   Benchmarks/sse-scale.sh -runs 5 -updates 10 -subscribers 10000 -groups 10 [-workers 2]
#   Benchmarks/sse-scale.sh -peers tributary,nchan -updates-as snapshot,patch -changing 1 [-subscribers 18000]
#   Benchmarks/sse-scale.sh -peers tributary,nchan,floor -workers 2 -subscribers 9900 -changing 1 -updates-as patch
#
# -peers tributary,nchan measures Debian's nginx with the Nchan module beside Tributary, with the
# same load client and payloads (it installs nginx-light and libnginx-mod-nchan first if missing,
# through scripts/require-packages: as root, or it prints the command and fails). -peers …,floor
# adds the machine's floor: the tool serves the same events itself, one write(2) per subscriber
# from -workers threads of its own (any subset of the three peers). The floor holds both ends
# of every connection in the tool: (ulimit -Hn − 100) / 2 subscribers at most, 9,950 here.
#
# Before each run it waits (QUIET_WAIT=600 s at most) until the machine is at most QUIET_MAX=15%
# busy, like ../shared/bench; each update's row also shows the CPU other processes used.
# Method, flags (-profile for perf/callgrind) and results: Benchmarks/load/sse-scale/README.md.
#
# Each run starts a fresh `tributary serve` (one worker, a generated config with
# sse.maxSubscribers and server.maxConnections above the count, no interval refresh) on the
# tool's own upstream, opens the subscribers from one epoll loop (Benchmarks/load/sse-scale/,
# Go standard library), then times -updates reloads; the table gives medians over runs and
# updates. Env: TRIBUTARY_BIN=path (default: swift build -c release --product tributary).
# The binary is copied first, so a rebuild during the run changes nothing. The tool, the
# service and nginx are stopped by PID on exit, Ctrl-C included (Benchmarks/load/run-tool.sh).
set -euo pipefail
# -peers LIST or -peers=LIST (the tool's flag): with nchan in it, make sure of the packages.
peers= previous=
for argument in "$@"; do
    case $argument in -peers=* | --peers=*) peers=${argument#*=} ;; esac
    case $previous in -peers | --peers) peers=$argument ;; esac
    previous=$argument
done
case ",$peers," in
    *,nchan,*) "$(dirname "$0")/../scripts/require-packages" nginx-light libnginx-mod-nchan ;;
esac
exec "$(dirname "$0")/load/run-tool.sh" sse-scale "$@"
