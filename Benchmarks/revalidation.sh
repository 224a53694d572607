#!/usr/bin/env bash
# Revalidation (`upstreams.NAME.revalidate`) on against off, side by side in one run: two
# services of the same build and configuration but for `revalidate: true|false`, against the
# same static nginx fixture (../shared/bench's tree, written by the load harness), each kept
# live by its own event-stream subscribers and refreshed by `POST /{resource}/reload`
# (`refreshInterval: 1h`, so only the reloads refresh).
#
#   Benchmarks/revalidation.sh [ROUNDS=3]
#   Benchmarks/revalidation.sh -rounds 3 -refreshes 50 -scenarios 1,2,3 [-pad 4096] …   (the tool's flags)
#
# 1. nothing changes: `/groups`, ITEMS=200 items with per-item details (no `details.batch`),
#    static files; one subscriber per service. Per round and mode: WARMUP=3 refreshes, then
#    REFRESHES=50 measured; ROUNDS rounds, the order of the modes swapped every other round,
#    medians of the rounds. Per refresh: upstream calls (attempts,
#    `tributary_upstream_request_duration_seconds_count`) and 304s
#    (`tributary_upstream_not_modified_total`); upstream bytes, the TCP payload the service
#    received on its connections to nginx (`bytes_received` of `ss -tinp`, the service's
#    sockets only: /proc/PID/io's rchar does not count recv() on sockets), and of it the bytes
#    of headers (nginx's header sizes of a 200 and a 304) and bodies; the service's CPU,
#    utime+stime of /proc/PID/stat and the sum of its threads' schedstat, less what the
#    /metrics polls that wait for each refresh cost (measured at idle, per poll, before the
#    rounds); events the subscriber received (goal 0). Goals: ≥ 20× fewer upstream bytes and
#    ≥ 5× less CPU per refresh with revalidation.
# 2. one detail changes per refresh: the same list, a subscriber with `?updates=patch`; before
#    each of CHANGES=20 refreshes one item's metadata.json is replaced (a new taskCount, a new
#    file renamed over the old, its mtime ever later, so nginx's ETag, mtime-size, changes).
#    Checked: exactly one event per refresh, an `event: patch` whose every operation is under
#    that item's index and which sets its new taskCount. nginx serves this fixture with
#    `open_file_cache off`: the shared template caches each file's size and mtime for 600 s and
#    would go on answering a replaced file's old ETag, length and body.
# 3. quota: IDENTITIES=100 live identities of a per-identity resource (`/me/groups` of an
#    upstream with `forward: [Authorization]`, each subscriber its own `Authorization: Bearer
#    user-N`; nginx ignores it) over a QUOTA_ITEMS=50-item list: upstream calls and 304s per
#    refresh of all of them (QUOTA_ROUNDS=5 after one warm-up), and what a 5,000/h quota that
#    counts 304s as free (as GitHub's does) would count in an hour at a 30 s refresh interval:
#    counted calls per round × 120. An extrapolation from the rounds measured.
#
# A refresh is over when the attempts counter has grown by the calls it makes (polled on
# /metrics: first after 0.8 × the median time of the refreshes before, then every 2 ms; every
# wait bounded by REFRESH_TIMEOUT=30 s), and in scenario 2 when the subscriber has the event.
# Prints one table per scenario and the verdicts; exit status 1 when a run fails (a wait that
# times out, a wrong event), not when a goal is missed. Method: Benchmarks/load/revalidation/.
#
# Env (the flags' defaults): ROUNDS, WARMUP, REFRESHES, ITEMS, CHANGES, IDENTITIES, QUOTA_ITEMS,
# QUOTA_ROUNDS, REFRESH_TIMEOUT, WORKERS (default auto, as shipped), SCENARIOS=1,2,3 (a subset),
# PAD=0 (scenario 1 only: a `notes` member of PAD bytes added to every metadata.json; the
# fixture's are 64 B), KEEP_WORK=1 (keep the work directory: configurations, logs), QUIET_MAX=15
# and QUIET_WAIT=300 (the wait for a quiet machine before scenario 1's rounds), PERF_DIR (then
# one more run of REFRESHES per mode, not counted, under `perf record -g`: profiles and their
# top symbols there); TRIBUTARY_BIN=path (default: the image's release build), copied first.
# Needs nginx and ss (iproute2). Everything listens on free loopback ports; the tool stops
# every process it starts by its PID (Benchmarks/load/run-tool.sh), Ctrl-C included.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
for tool in nginx ss; do
    command -v "$tool" >/dev/null || { echo "$tool is needed (apt-get install nginx-light iproute2)" >&2; exit 2; }
done
if [[ ${1:-} =~ ^[0-9]+$ ]]; then set -- -rounds "$1" "${@:2}"; fi
exec "$root/Benchmarks/load/run-tool.sh" revalidation "$@"
