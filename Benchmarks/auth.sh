#!/usr/bin/env bash
# GET /groups (the demo upstream's 10 groups) with auth off, then with auth required (ES256
# tokens, one of 100 distinct clients per connection: each pays one signature check, then
# cache lookups), one run side by side with the same wrk settings. Coalescing off, as in
# Benchmarks/groups.sh; the access log off. Every process started here is stopped by its PID.
#
#   Benchmarks/auth.sh            Env: DURATION=10s CONNECTIONS=100 WORKERS=2
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
duration=${DURATION:-10s}
connections=${CONNECTIONS:-100}
workers=${WORKERS:-2}
source "$root/Benchmarks/processes.sh"
(cd "$root" && swift build -c release --product tributary >/dev/null && swift build -c release --product AuthBench >/dev/null)
bin=$root/.build/release/tributary
start_demo_upstream "$bin"

"$root/.build/release/AuthBench" sign 100 >"$work/signed"
pem=$(head -1 "$work/signed")
tail -n +2 "$work/signed" >"$work/tokens"
"$root/Benchmarks/coalesce-config.sh" off >"$work/off.yaml"
cp "$work/off.yaml" "$work/on.yaml"
cat >>"$work/on.yaml" <<YAML
auth:
  required: true
  jwt: {issuer: bench, audience: tributary, keys: [{kid: bench, alg: ES256, publicKey: $pem}]}
YAML
# Each connection sends the Authorization header of one token, chosen by its thread and order.
cat >"$work/tokens.lua" <<LUA
local tokens = {}
for line in io.lines("$work/tokens") do tokens[#tokens + 1] = line end
local next_client = 0
function setup(thread) thread:set("first", next_client); next_client = next_client + 50 end
function init(args) count = 0 end
function request()
  count = count + 1
  local token = tokens[((first + count) % #tokens) + 1]
  return wrk.format("GET", "/groups", {["Authorization"] = "Bearer " .. token})
end
LUA

run() {
    local name=$1 config=$2 script=$3 port
    port=$(free_port)
    TRIBUTARY_LOG_LEVEL=warning "$bin" serve --config "$config" --listen "127.0.0.1:$port" --workers "$workers" \
        --upstream "tasks=http://127.0.0.1:$up" --upstream "media=http://127.0.0.1:$up" --upstream "search=http://127.0.0.1:$up" 2>/dev/null &
    local pid=$!
    pids+=($pid)
    wait_port "$port" healthz
    local args=(-t2 -c"$connections" -d"$duration" --latency)
    [ -n "$script" ] && args+=(-s "$script")
    wrk "${args[@]}" "http://127.0.0.1:$port/groups" >"$work/$name.wrk"
    local rps non2xx
    rps=$(sed -n 's/^Requests\/sec: *//p' "$work/$name.wrk")
    non2xx=$(sed -n 's/.*Non-2xx or 3xx responses: *//p' "$work/$name.wrk")
    printf '%-10s %10s req/s   p99 %8s   non-2xx %s\n' "$name" "$rps" "$(awk '/ 99%/ {print $2}' "$work/$name.wrk")" "${non2xx:-0}"
    kill -TERM "$pid"; wait "$pid" 2>/dev/null || true
    echo "$rps" >"$work/$name.rps"
}
echo "# GET /groups N=10, wrk -t2 -c$connections -d$duration, $workers workers, coalescing off"
run auth-off "$work/off.yaml" ""
run auth-on "$work/on.yaml" "$work/tokens.lua"
python3 -c "print(f'auth on / auth off: {float(open(\"$work/auth-on.rps\").read()) / float(open(\"$work/auth-off.rps\").read()) * 100:.1f} %')"
