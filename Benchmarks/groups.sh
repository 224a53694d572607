#!/usr/bin/env bash
# GET /groups against the peers of ../shared/bench (Go, Node, Hummingbird + AsyncHTTPClient,
# aiohttp), side by side in one run with the same nginx fixture and wrk settings: throughput
# with no upstream delay, then latency with a delayed upstream. Prints the harness's tables.
#
#   Benchmarks/groups.sh N [DELAY_MS=20]          e.g. Benchmarks/groups.sh 10, Benchmarks/groups.sh 100
#
# Env: PEERS="go hb node aiohttp" ROUNDS=2 (and everything ../shared/bench/bench-all.sh reads),
# COALESCE=off|on (default off: the peers do not coalesce identical requests, so Tributary
# runs with `coalesce: false` on every resource, from a temporary copy of the configuration;
# `on` measures what coalescing buys). The first line printed says which one a run used.
# BATCH=MAX (default off) fetches the groups' details in batch calls of at most MAX ids
# (`details.batch`, over the fixture's GET /groups/metadata?ids=…: MAX one of gen.py's batch
# sizes, 1 5 10 20 25 50 100 200), BATCH_WINDOW=DURATION shares them between concurrent
# requests (`details.batchWindow`); the peers still make N+1 calls per answer.
# The shared harness is read-only, so it is copied to $BENCH_COPY (default
# /tmp/tributary-bench) and missing peers are built there once (Hummingbird takes minutes).
# Tributary runs from the release build (TRIBUTARY_BIN, default the image's build) with its
# access log off (the peers log nothing).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:?usage: groups.sh N [DELAY_MS]}
delay=${2:-20}
source_dir=${BENCH_SOURCE:-$root/../shared/bench}
copy=${BENCH_COPY:-/tmp/tributary-bench}
peers=${PEERS:-go hb node aiohttp}

if [ ! -d "$copy" ]; then
    cp -r "$source_dir" "$copy"
    chmod -R u+w "$copy"
fi
# The fixture and the drivers as the harness has them now (a copy made before gen.py wrote
# the batch form would answer 404 to GET /groups/metadata?ids=…); built peers are kept.
cp -r "$source_dir/upstream" "$source_dir"/*.sh "$copy/"
for peer in $peers; do
    case $peer in
        go) [ -x "$copy/peers/go/peer-go" ] || (cd "$copy/peers/go" && GOFLAGS=-mod=mod GOPROXY=off go build -o peer-go .) ;;
        hb) [ -x "$copy/peers/hummingbird/peer-hb/.build/release/peer-hb" ] ||
                swift build -c release --package-path "$copy/peers/hummingbird/peer-hb" ;;
        aiohttp|aiohttp-uvloop) python3 -c 'import aiohttp' 2>/dev/null || pip install -q -r "$copy/peers/aiohttp/requirements.txt" ;;
    esac
done

coalesce=${COALESCE:-off}
config=$(mktemp /tmp/tributary-groups-bench.XXXXXX.yaml)
trap 'rm -f "$config"' EXIT
"$root/Benchmarks/coalesce-config.sh" "$coalesce" >"$config"

# TRIBUTARY_BIN when given; otherwise the image's own build (scripts/test's, the Dockerfile's,
# Benchmarks/budgets.py's): a build with other flags in the same .build compiles every module again.
if [ -z "${TRIBUTARY_BIN:-}" ]; then
    (cd "$root" && SWIFT_DETERMINISTIC_HASHING=1 swift build -c release --static-swift-stdlib --product tributary >/dev/null)
    TRIBUTARY_BIN="$root/.build/release/tributary"
fi
export TRIBUTARY_BIN
export TRIBUTARY_CONFIG="$config"
export TRIBUTARY_LOG_LEVEL=warning
export PEERS="$peers" ROUNDS=${ROUNDS:-2}
echo "# Tributary: coalescing $coalesce (COALESCE=$coalesce; every resource's coalesce from Benchmarks/coalesce-config.sh)"
if [ -n "${BATCH:-}" ]; then
    echo "# Tributary: details in batch calls of at most $BATCH ids (BATCH=$BATCH, batchWindow ${BATCH_WINDOW:-0})"
else
    echo "# Tributary: details one call per item (BATCH unset)"
fi
"$copy/bench-all.sh" "$n" "$delay"
