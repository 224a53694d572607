#!/usr/bin/env bash
# Prints config/tributary.yaml with every resource's `coalesce` set to on|off, for the
# benchmarks: the peers of ../shared/bench do not coalesce identical requests, so a run side
# by side with them (or one that counts CPU per request) sets it off; `on` measures what
# coalescing buys.
#
#   Benchmarks/coalesce-config.sh off > /tmp/tributary.yaml
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
case ${1:-} in
    on) value=true ;;
    off) value=false ;;
    *) echo "usage: coalesce-config.sh on|off (not \"${1:-}\")" >&2; exit 2 ;;
esac
# Every resource's coalesce line dropped, then `coalesce: <value>` after its `kind:`.
sed -E -e '/^    coalesce:/d' -e "s/^(    kind: .*)$/\1\n    coalesce: $value/" "$root/config/tributary.yaml"
