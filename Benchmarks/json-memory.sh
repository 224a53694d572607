#!/usr/bin/env bash
# Peak memory of the release build parsing hostile upstream bodies: each shape below, just
# under the default maxResponseBytes (8 MiB), served by a static loopback upstream
# (python3 -m http.server) and asked for once through a `kind: search` resource that passes
# the whole body on, by a service of its own for each shape. Prints each answer's status and
# error code, and the service's peak RSS (VmHWM) before and after: what one parse of a body
# can make the process grow.
#
#   Benchmarks/json-memory.sh                       the build in .build/release
#   TRIBUTARY_BIN=/path/to/tributary Benchmarks/json-memory.sh     another build
#
# Env: PORT_BASE (default 18280: the upstream on +1, the service on +2). Everything listens
# on 127.0.0.1 and is stopped by its PID on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
base=${PORT_BASE:-18280}
up_port=$((base + 1)) port=$((base + 2))
work=$(mktemp -d)
upstream_pid="" server_pid=""
cleanup() {
    [ -n "$server_pid" ] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null || true
    [ -n "$upstream_pid" ] && kill "$upstream_pid" 2>/dev/null && wait "$upstream_pid" 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

shapes=(empty-arrays one-element-arrays tiny-numbers nested-arrays empty-objects-spaced)
mkdir "$work/www"
python3 - "$work/www" <<'EOF'
import sys
limit = 8 * 1024 * 1024 - 16
def fill(unit, opening="[", closing="]", separator=","):
    count = (limit - 2) // (len(unit) + len(separator))
    return opening + separator.join([unit] * count) + closing
shapes = {
    "empty-arrays": fill("[]"),                       # [[],[],...]
    "one-element-arrays": fill("[1]"),                # [[1],[1],...]
    "tiny-numbers": fill("1"),                        # [1,1,...]
    "nested-arrays": fill("[[[[]]]]"),                # [[[[[]]]],...]
    "empty-objects-spaced": fill('"a": {}', "{", "}", ", "),   # {"a": {}, "a": {}, ...}
}
for name, text in shapes.items():
    open(f"{sys.argv[1]}/{name}", "w").write(text)
EOF

{
    echo "upstreams:"
    echo "  hostile: {url: \"http://127.0.0.1:$up_port\", timeout: 30s, retries: 0}"
    echo "resources:"
    for shape in "${shapes[@]}"; do
        echo "  $shape: {kind: search, upstream: hostile, path: /$shape, coalesce: false}"
    done
} >"$work/tributary.yaml"

(cd "$work/www" && exec python3 -m http.server --bind 127.0.0.1 "$up_port" >/dev/null 2>&1) &
upstream_pid=$!
for _ in $(seq 1 100); do curl -fsS -o /dev/null "http://127.0.0.1:$up_port/" 2>/dev/null && break; sleep 0.1; done

peak() { awk '/VmHWM/ {printf "%.1f MiB", $2 / 1024}' "/proc/$server_pid/status"; }
# A service of its own for each shape: VmHWM is the process's peak so far.
for shape in "${shapes[@]}"; do
    TRIBUTARY_LOG_LEVEL=warning "${TRIBUTARY_BIN:-$root/.build/release/tributary}" serve \
        --config "$work/tributary.yaml" --listen "127.0.0.1:$port" --workers 1 &
    server_pid=$!
    for _ in $(seq 1 100); do curl -fsS -o /dev/null "http://127.0.0.1:$port/healthz" 2>/dev/null && break; sleep 0.1; done
    before=$(peak)
    status=$(curl -sS -o "$work/answer" -w '%{http_code}' --max-time 60 "http://127.0.0.1:$port/$shape?q=abcd")
    code=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("error", {}).get("code", "-"))' "$work/answer" 2>/dev/null || echo "-")
    printf '%-22s body %s bytes: %s %-20s peak RSS %s before, %s after\n' \
        "$shape" "$(stat -c %s "$work/www/$shape")" "$status" "$code" "$before" "$(peak)"
    kill "$server_pid" && wait "$server_pid" 2>/dev/null || true
    server_pid=""
done
