#!/usr/bin/env bash
# Batched details side by side in one run (DESIGN part 3, "Batched details"): GET /groups over
# the static nginx fixture (../shared/bench's tree, written by the load harness), N groups,
# every target measured by ../shared/bench's own run.sh (the same wrk settings, body checked
# against expected.json):
#
#   unbatched   Tributary, one detail call per item                    (N+1 calls per answer)
#   batched     Tributary, details.batch max: MAX                      (1 + ⌈N/MAX⌉)
#   windowed    Tributary, details.batch max: MAX, batchWindow: WINDOW (fewer: concurrent
#               requests share batch calls)
#   go          the Go peer of ../shared/bench (no batching: N+1 calls per answer, always)
#
# then the latency phase (wrk -c8) against a delayed upstream. Every Tributary runs with
# coalescing off (the peers do not coalesce): requests share nothing but batch windows. After
# each phase it prints, per Tributary, the upstream calls and detail calls per answer, read
# from its /metrics before and after (`tributary_upstream_request_duration_seconds_count`,
# `tributary_detail_batches_total`, `tributary_http_requests_total{route="/groups"}`).
#
#   Benchmarks/batching.sh [N=100] [DELAY_MS=20]
#
# Env: MAX=50 (one of the fixture's batch sizes: 1 5 10 20 25 50 100 200), WINDOW=2ms,
# DURATION=10s, ROUNDS=1, QUIET_MAX=15 QUIET_WAIT=600 (as bench-all.sh), BENCH_SOURCE (default
# ../shared/bench), BENCH_COPY (where the Go peer is built, as in groups.sh); TRIBUTARY_BIN
# (default: the image's release build), copied first. Method: Benchmarks/load/batching/main.go.
# Loopback only, on free ports; every process started is stopped by its PID on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
for tool in nginx wrk; do
    command -v "$tool" >/dev/null || { echo "$tool is missing (apt-get install nginx-light wrk)" >&2; exit 1; }
done
[ "${2:-20}" -gt 0 ] && "$root/scripts/require-packages" libnginx-mod-http-echo   # the delayed upstream (as root; otherwise it says what to install)
copy=${BENCH_COPY:-/tmp/tributary-bench}
exec "$root/Benchmarks/load/run-tool.sh" batching -n "${1:-100}" -delay "${2:-20}ms" \
    -bench "${BENCH_SOURCE:-$root/../shared/bench}" -go-peer "$copy/peers/go/peer-go" \
    -config-script "$root/Benchmarks/coalesce-config.sh"
