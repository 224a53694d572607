#!/usr/bin/env bash
# Prints config/tributary.yaml with every resource's `coalesce` and every upstream's
# `revalidate` set to on|off, for the benchmarks: the peers of ../shared/bench neither coalesce
# identical requests nor revalidate, so a run side by side with them (or one that counts CPU
# per request) sets both off; `on` measures what they buy. (Revalidation never touches a
# one-shot JSON GET without a detail cache, which is what the peers are measured on: off says
# so in the file, it changes no figure.)
#
#   Benchmarks/coalesce-config.sh off > /tmp/tributary.yaml
#   BATCH=50 BATCH_WINDOW=2ms Benchmarks/coalesce-config.sh off > /tmp/tributary.yaml
#
# Env: BATCH=MAX turns on the file's commented `details.batch` of groups with `max: MAX`
# (the fixture serves GET /groups/metadata?ids=… for batch sizes 1, 5, 10, 20, 25, 50, 100,
# 200: ../shared/bench/upstream/gen.py), BATCH_WINDOW=DURATION its `batchWindow` too.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-} in
    on) value=true ;;
    off) value=false ;;
    *) echo "usage: coalesce-config.sh on|off (not \"${1:-}\")" >&2; exit 2 ;;
esac
batch=()
if [ -n "${BATCH:-}" ]; then
    [[ $BATCH =~ ^[1-9][0-9]*$ ]] || { echo "BATCH must be a whole number ≥ 1 (not \"$BATCH\")" >&2; exit 2; }
    grep -q '^      # batch: ' "$root/config/tributary.yaml" || { echo "config/tributary.yaml has no commented details.batch" >&2; exit 1; }
    batch=(-e "s/^      # batch: (.*)max: [0-9]+(.*)$/      batch: \1max: $BATCH\2/")
    if [ -n "${BATCH_WINDOW:-}" ]; then
        batch+=(-e "s/^      # batchWindow: [^ ]+(.*)$/      batchWindow: $BATCH_WINDOW\1/")
    fi
fi
# Every resource's coalesce line dropped, then `coalesce: <value>` after its `kind:`; every
# upstream's revalidate line dropped, then `revalidate: <value>` after its `url:`.
sed -E -e '/^    (coalesce|revalidate):/d' -e "s/^(    kind: .*)$/\1\n    coalesce: $value/" \
    -e "s/^(    url: .*)$/\1\n    revalidate: $value/" "${batch[@]}" "$root/config/tributary.yaml"
