#!/usr/bin/env bash
# Revalidation (`upstreams.NAME.revalidate`) on against off, side by side in one run: two
# services of the same build and configuration but for `revalidate: true|false`, against the
# same nginx fixture of ../shared/bench, each kept live by its own event-stream subscribers and
# refreshed by `POST /{resource}/reload` (`refreshInterval: 1h`, so only the reloads refresh).
#
#   Benchmarks/revalidation.sh [ROUNDS=3]
#
# 1. nothing changes: `/groups`, ITEMS=200 items with per-item details (no `details.batch`),
#    static files; one `curl -N` subscriber per service. Per round and mode: WARMUP=3
#    refreshes, then REFRESHES=50 measured; ROUNDS rounds, the order of the modes swapped every
#    other round, medians of the rounds. Per refresh: upstream calls (attempts,
#    `tributary_upstream_request_duration_seconds_count`) and 304s
#    (`tributary_upstream_not_modified_total`); upstream bytes, the TCP payload the service
#    received on its connections to nginx (`bytes_received` of `ss -tinp`, the service's
#    sockets only: /proc/PID/io's rchar does not count recv() on sockets, which is how the
#    upstream client reads), and of it the bytes of headers (nginx's header sizes of a 200 and
#    a 304, measured with curl) and bodies; the service's CPU, utime+stime of /proc/PID/stat
#    and, at nanosecond resolution, the sum of its threads' /proc/PID/task/*/schedstat, less
#    what the /metrics polls that wait for each refresh cost (measured at idle, per poll,
#    before the rounds); events the subscriber received (goal 0). Goals: ≥ 20× fewer upstream
#    bytes and ≥ 5× less CPU per refresh with revalidation.
# 2. one detail changes per refresh: the same list, a subscriber with `?updates=patch`; before
#    each of CHANGES=20 refreshes one item's metadata.json is replaced (a new taskCount, written
#    to a new file renamed over the old, mtime set to an ever larger time, so nginx's ETag,
#    mtime-size, changes). Checked: exactly one event per refresh, an `event: patch` whose every
#    operation is under that item's index and which sets its new taskCount. nginx serves this
#    fixture from a copy of ../shared/bench/upstream whose nginx.conf has `open_file_cache off`:
#    the shared one caches each file's descriptor, size and mtime for 600 s
#    (`open_file_cache_valid`), and would go on answering a replaced file's old ETag, length and
#    body (a 304 to the old validators, or a body cut to the old length).
# 3. quota: IDENTITIES=100 live identities of a per-identity resource (`/me/groups` of an
#    upstream with `forward: [Authorization]`, each subscriber its own `Authorization: Bearer
#    user-N`; nginx ignores it) over a QUOTA_ITEMS=50-item list: upstream calls and 304s per
#    refresh of all of them (QUOTA_ROUNDS=5 after one warm-up), and what a 5,000/h quota that
#    counts 304s as free (as GitHub's does) would count in an hour at a 30 s refresh interval:
#    counted calls per round × 120, for all identities and per identity. An extrapolation from
#    the rounds measured, not an hour measured.
#
# A refresh is over when the attempts counter has grown by the calls it makes (polled on
# /metrics: first after 0.8 × the median time of the refreshes before, then every 2 ms;
# every wait bounded by REFRESH_TIMEOUT=30 s), and in scenario 2 when the subscriber has the
# event. Prints one table per scenario and the verdicts; exit status 1 when a run fails
# (a wait that times out, an upstream error, a wrong event), not when a goal is missed.
#
# Env: TRIBUTARY_BIN (default: the image's release build, scripts/test's, then
# .build/release/tributary), BENCH_SOURCE (default ../shared/bench), PORT_BASE=18580 (nginx on
# +1, +2 and +3 for the three scenarios, the services on +11 (on) and +12 (off)), WORKERS
# (default auto, as shipped), ROUNDS, WARMUP, REFRESHES, ITEMS, CHANGES, IDENTITIES,
# QUOTA_ITEMS, QUOTA_ROUNDS, REFRESH_TIMEOUT, SCENARIOS=1,2,3 (a subset to run), PAD=0
# (scenario 1 only: a `notes` member of PAD bytes added to every metadata.json, for details of
# the size real APIs answer; the fixture's are 64 B), KEEP_WORK=1 (keep the work directory:
# configurations, logs, event-stream files), QUIET_MAX=15 and QUIET_WAIT=300 (the wait for a
# quiet machine before scenario 1's rounds, as batching.sh), PERF_DIR (then one more run of
# REFRESHES per mode, not counted, under `perf record -g`: profiles and their top symbols
# there). Needs nginx, curl, python3 and ss. Everything listens on 127.0.0.1; every process
# started here is stopped by its PID on exit, Ctrl-C included.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${1:-${ROUNDS:-3}}
bench=${BENCH_SOURCE:-$root/../shared/bench}
base=${PORT_BASE:-18580}
warmup=${WARMUP:-3} refreshes=${REFRESHES:-50} groups=${ITEMS:-200} changes=${CHANGES:-20}
identities=${IDENTITIES:-100} quota_groups=${QUOTA_ITEMS:-50} quota_rounds=${QUOTA_ROUNDS:-5}
timeout=${REFRESH_TIMEOUT:-30} pad=${PAD:-0}
scenarios=${SCENARIOS:-1,2,3}
declare -A up_port=([1]=$((base + 1)) [2]=$((base + 2)) [3]=$((base + 3)))
declare -A port=([on]=$((base + 11)) [off]=$((base + 12)))
for v in rounds warmup refreshes groups changes identities quota_groups quota_rounds timeout pad; do
    [[ ${!v} =~ ^[0-9]+$ ]] || { echo "$v must be a whole number (not \"${!v}\")" >&2; exit 2; }
    [ "$v" = pad ] || [ "${!v}" -gt 0 ] || { echo "$v must be at least 1" >&2; exit 2; }
done
for tool in nginx curl python3 ss; do
    command -v "$tool" >/dev/null || { echo "$tool is needed" >&2; exit 2; }
done

work=$(mktemp -d /tmp/revalidation.XXXXXX)
chmod 755 "$work"   # nginx's workers run as nobody and read the fixtures in it
pids=()          # services and subscribers, stopped by PID
upstreams=()     # the ports of the nginx instances started here
declare -A service_pid=()

stop_pids() {
    local pid
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    pids=()
}
forget() {   # PID: no longer ours to stop (it ended)
    local pid kept=()
    for pid in "${pids[@]}"; do [ "$pid" = "$1" ] || kept+=("$pid"); done
    pids=("${kept[@]}")
}
stop_upstreams() {
    local p
    for p in "${upstreams[@]}"; do "$bench/upstream/stop-upstream.sh" "$p" >/dev/null 2>&1 || true; done
    upstreams=()
}
cleanup() {
    trap - EXIT INT TERM
    stop_pids
    stop_upstreams
    if [ "${KEEP_WORK:-0}" = 1 ]; then echo "work directory kept: $work" >&2; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ -z "${TRIBUTARY_BIN:-}" ]; then
    (cd "$root" && SWIFT_DETERMINISTIC_HASHING=1 swift build -c release --static-swift-stdlib --product tributary >/dev/null)
fi
bin=${TRIBUTARY_BIN:-$root/.build/release/tributary}
[ -x "$bin" ] || { echo "no executable at $bin" >&2; exit 2; }

# The measurements: one Python driver, so that every request it sends the service is counted
# and the waits are bounded in one place.
cat >"$work/drive.py" <<'EOF'
import glob, http.client, json, os, re, statistics, subprocess, sys, time

CLK_TCK = os.sysconf("SC_CLK_TCK")


class Connection(http.client.HTTPConnection):
    """A keep-alive connection to the service that counts the bytes it sends."""
    sent = 0

    def send(self, data):
        self.sent += len(data)
        super().send(data)


def get(conn, method, path, headers=None):
    conn.request(method, path, headers=headers or {})
    response = conn.getresponse()
    body = response.read()
    return response.status, body


def metrics(conn, upstream, resource):
    status, body = get(conn, "GET", "/metrics")
    if status != 200:
        sys.exit(f"GET /metrics answered {status}")
    m = {"attempts": 0.0, "not_modified": 0.0, "errors": 0.0, "subscribers": 0.0, "pipelines": 0.0}
    up, res = f'upstream="{upstream}"', f'resource="{resource}"'
    for line in body.decode().splitlines():
        if line.startswith("#"):
            continue
        name, _, value = line.rpartition(" ")
        if up in name:
            if name.startswith("tributary_upstream_request_duration_seconds_count{"):
                m["attempts"] += float(value)
            elif name.startswith("tributary_upstream_not_modified_total{"):
                m["not_modified"] += float(value)
            elif name.startswith("tributary_upstream_errors_total{"):
                m["errors"] += float(value)
        if res in name:
            if name.startswith("tributary_sse_subscribers{"):
                m["subscribers"] += float(value)
            elif name.startswith("tributary_live_pipelines{"):
                m["pipelines"] += float(value)
    m["lines"] = [l for l in body.decode().splitlines()
                  if not l.startswith("#") and up in l and ("_count{" in l or "not_modified" in l or "errors" in l)]
    return m


def tcp_received(pid, upstream_port):
    """(bytes_received, bytes_sent) of each of the service's TCP connections to the upstream, by local address."""
    out = subprocess.run(["ss", "-tinpH", f"( dport = :{upstream_port} )"], capture_output=True, text=True,
                         check=True, timeout=10).stdout
    result, current = {}, None
    for line in out.splitlines():
        if line and not line[0].isspace():
            current = None
            if f"pid={pid}," in line:
                fields = line.split()
                local = [f for f in fields if re.match(r"^[\d.\[\]:a-f]+:\d+$", f)]
                current = local[0] if local else None
        elif current is not None:
            received = re.search(r"bytes_received:(\d+)", line)
            sent = re.search(r"bytes_sent:(\d+)", line)
            if received:
                result[current] = (int(received.group(1)), int(sent.group(1)) if sent else 0)
    return result


def sample(pid, upstream_port):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    utime, stime = int(fields[11]), int(fields[12])
    ns = 0
    for path in glob.glob(f"/proc/{pid}/task/*/schedstat"):
        try:
            with open(path) as f:
                ns += int(f.read().split()[0])
        except OSError:
            pass
    with open(f"/proc/{pid}/io") as f:
        rchar = int(next(l for l in f if l.startswith("rchar:")).split()[1])
    return {"utime": utime, "stime": stime, "ns": ns, "rchar": rchar, "tcp": tcp_received(pid, upstream_port), "t": time.monotonic()}


def delta(a, b):
    tcp = sum(v[0] - a["tcp"].get(k, (0, 0))[0] for k, v in b["tcp"].items())
    tcp_sent = sum(v[1] - a["tcp"].get(k, (0, 0))[1] for k, v in b["tcp"].items())
    lost = sum(1 for k in a["tcp"] if k not in b["tcp"])
    user, kernel = (b["utime"] - a["utime"]) * 1000 / CLK_TCK, (b["stime"] - a["stime"]) * 1000 / CLK_TCK
    return {"cpu_ms": user + kernel, "user_ms": user, "kernel_ms": kernel, "sched_ms": (b["ns"] - a["ns"]) / 1e6,
            "rchar": b["rchar"] - a["rchar"], "tcp": tcp, "tcp_sent": tcp_sent, "closed": lost, "opened": sum(1 for k in b["tcp"] if k not in a["tcp"]),
            "wall_s": b["t"] - a["t"]}


def events(path):
    """The complete events of an event-stream file: (event, data) pairs, `stream` left out."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return []
    blocks = text.split("\n\n")[:-1]  # the last is incomplete (or empty)
    out = []
    for block in blocks:
        name, data = "message", []
        for line in block.split("\n"):
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data.append(line[5:].lstrip(" "))
        if any(l.startswith("data:") for l in block.split("\n")) and name != "stream":
            out.append((name, "\n".join(data)))
    return out


def wait_for(predicate, seconds, what):
    deadline = time.monotonic() + seconds
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            sys.exit(f"timed out after {seconds} s waiting for {what}")
        time.sleep(0.002)


def main():
    args = json.loads(sys.argv[1])
    mode = args["mode"]
    conn = Connection("127.0.0.1", args["port"], timeout=60)
    pid, upstream, resource, up_port = args["pid"], args["upstream"], args["resource"], args["upstream_port"]
    timeout = args.get("timeout", 30)

    if mode == "ready":
        # Every subscriber's pipeline live and every first document fetched.
        want_pipelines, want_attempts = args["pipelines"], args["attempts"]
        def ready():
            m = metrics(conn, upstream, resource)
            return m if m["pipelines"] >= want_pipelines and m["attempts"] >= want_attempts else None
        m = wait_for(ready, timeout, f"{want_pipelines} live pipelines and {want_attempts} upstream calls")
        for path in args.get("sse", []):
            wait_for(lambda: events(path), timeout, f"the first event in {path}")
        print(json.dumps({"pipelines": m["pipelines"], "subscribers": m["subscribers"], "attempts": m["attempts"]}))
        return

    if mode == "polls":
        # What one GET /metrics costs the service, at idle.
        count = args["count"]
        metrics(conn, upstream, resource)
        sent0 = conn.sent
        a = sample(pid, up_port)
        for _ in range(count):
            metrics(conn, upstream, resource)
            time.sleep(0.002)
        time.sleep(0.02)
        b = sample(pid, up_port)
        d = delta(a, b)
        print(json.dumps({"cpu_ms": d["cpu_ms"] / count, "sched_ms": d["sched_ms"] / count,
                          "rchar": d["rchar"] / count, "sent": (conn.sent - sent0) / count, "tcp": d["tcp"]}))
        return

    # mode == "refresh": COUNT reloads of RESOURCE, each waited for; with `mutate`, one item's
    # details replaced before each, and its event checked.
    calls, count = args["calls"], args["count"]
    mutate = args.get("mutate")
    sse = args.get("sse")
    headers = {"Content-Length": "0"}
    before_events = len(events(sse)) if sse else 0
    m = metrics(conn, upstream, resource)
    first = m
    durations, polls, changes, per_refresh_events = [], 0, [], []
    sent0 = conn.sent
    a = sample(pid, up_port)
    for i in range(count):
        if mutate:
            ids = mutate["ids"]
            index = (mutate["start"] + i * 7) % len(ids)
            value = 1000 + mutate["start"] + i
            path = os.path.join(mutate["fixture"], "groups", ids[index], "metadata.json")
            tmp = path + ".tmp"
            with open(tmp, "w") as f:
                json.dump({"result": {"taskCount": value, "lastUpdated": "2026-11-28T00:00:00Z"}}, f, separators=(",", ":"))
            mtime = mutate["epoch"] + mutate["start"] + i
            os.utime(tmp, (mtime, mtime))
            os.chmod(tmp, 0o644)
            os.rename(tmp, path)
            changes.append((index, value))
        seen = len(events(sse)) if sse else 0
        target = m["attempts"] + calls
        t0 = time.monotonic()
        status, body = get(conn, "POST", f"/{resource}/reload", headers)
        if status // 100 != 2:
            sys.exit(f"POST /{resource}/reload answered {status}: {body[:200]!r}")
        if durations:
            time.sleep(0.8 * statistics.median(durations))
        deadline = t0 + timeout
        while True:
            m = metrics(conn, upstream, resource)
            polls += 1
            if m["attempts"] >= target:
                break
            if time.monotonic() > deadline:
                sys.exit(f"refresh {i + 1}: timed out after {timeout} s with {m['attempts'] - target + calls:.0f} "
                         f"of {calls} upstream calls; metrics: {m['lines']}")
            time.sleep(0.002)
        if mutate:
            wait_for(lambda: len(events(sse)) > seen, timeout, f"the event of refresh {i + 1}")
        durations.append(time.monotonic() - t0)
        if sse:
            per_refresh_events.append(len(events(sse)) - seen)
    time.sleep(0.02)  # the end of the last refresh's merge (no event when nothing changed)
    b = sample(pid, up_port)
    d = delta(a, b)
    result = {"count": count, "calls": m["attempts"] - first["attempts"], "not_modified": m["not_modified"] - first["not_modified"],
              "errors": m["errors"] - first["errors"], "polls": polls, "sent": conn.sent - sent0,
              "duration_ms": statistics.median(durations) * 1000, "metrics": m["lines"],
              "pipelines": m["pipelines"], "subscribers": m["subscribers"], **d}
    if sse:
        time.sleep(0.05)
        got = events(sse)[before_events:]
        result["events"] = len(got)
        result["per_refresh_events"] = per_refresh_events
        if mutate:
            problems = []
            if len(got) != count:
                problems.append(f"{len(got)} events for {count} refreshes")
            for n, ((index, value), (name, data)) in enumerate(zip(changes, got)):
                if name != "patch":
                    problems.append(f"refresh {n + 1}: event {name}, not patch")
                    continue
                ops = json.loads(data)
                if not all(op.get("path", "").startswith(f"/{index}/") for op in ops):
                    problems.append(f"refresh {n + 1}: a patch of more than item {index}: {data[:200]}")
                if not any(op.get("path") == f"/{index}/taskCount" and op.get("value") == value for op in ops):
                    problems.append(f"refresh {n + 1}: no taskCount {value} for item {index}: {data[:200]}")
            result["problems"] = problems
    print(json.dumps(result))


main()
EOF

# config MODE UPSTREAM_PORT SERVICE_PORT: the configuration of one service.
config() {
    local revalidate
    case $1 in on) revalidate=true ;; off) revalidate=false ;; esac
    cat <<EOF
server:
  listen: 127.0.0.1:$3
  workers: ${WORKERS:-auto}
  logLevel: warning
  maxStreamsPerClient: 100000
  maxClientSharePercent: 100
upstreams:
  tasks:
    url: http://127.0.0.1:$2
    poolSize: 128
    revalidate: $revalidate
  accounts:
    url: http://127.0.0.1:$2
    poolSize: 128
    forward: [Authorization]
    revalidate: $revalidate
resources:
  groups:
    kind: list
    upstream: tasks
    list: {path: /groups, items: result, id: id}
    details: {path: "/groups/{id}/metadata", value: result}
    concurrency: 64
    refreshInterval: 1h
    coalesce: false
  mygroups:
    kind: list
    upstream: accounts
    route: /me/groups
    list: {path: /groups, items: result, id: id}
    details: {path: "/groups/{id}/metadata", value: result}
    concurrency: 64
    refreshInterval: 1h
    coalesce: false
EOF
}

# start_services SCENARIO: both services against that scenario's nginx.
start_services() {
    local mode
    for mode in on off; do
        config "$mode" "${up_port[$1]}" "${port[$mode]}" >"$work/$mode.yaml"
        "$bin" serve --config "$work/$mode.yaml" >"$work/$mode-s$1.log" 2>&1 &
        service_pid[$mode]=$!
        pids+=($!)
    done
    for mode in on off; do
        for _ in $(seq 1 100); do
            curl -fs -o /dev/null "http://127.0.0.1:${port[$mode]}/healthz" && break
            kill -0 "${service_pid[$mode]}" 2>/dev/null || { cat "$work/$mode-s$1.log" >&2; exit 1; }
            sleep 0.1
        done
        curl -fs -o /dev/null "http://127.0.0.1:${port[$mode]}/healthz" ||
            { echo "the $mode service did not answer /healthz" >&2; exit 1; }
    done
}

# subscribe MODE PATH FILE [AUTH]: one event-stream subscriber in the background.
subscribe() {
    local headers=(-H 'Accept: text/event-stream')
    [ -n "${4:-}" ] && headers+=(-H "Authorization: Bearer $4")
    curl -sN "${headers[@]}" "http://127.0.0.1:${port[$1]}$2" >"$3" 2>/dev/null &
    pids+=($!)
}

# drive JSON: the driver, its one-line JSON result on stdout.
drive() { python3 "$work/drive.py" "$1"; }

# args MODE SCENARIO UPSTREAM RESOURCE [extra JSON members]: the driver's common arguments.
args() {
    printf '{"port": %d, "pid": %d, "upstream_port": %d, "upstream": "%s", "resource": "%s", "timeout": %d%s}' \
        "${port[$1]}" "${service_pid[$1]}" "${up_port[$2]}" "$3" "$4" "$timeout" "${5:+, $5}"
}

# start_upstream SCENARIO DIR [UPSTREAM_DIR]: nginx on the scenario's port.
start_upstream() {
    local runner=${3:-$bench/upstream}
    upstreams+=("${up_port[$1]}")   # first: a start that fails may leave nginx running
    "$runner/run-upstream.sh" "${up_port[$1]}" "$2" >/dev/null
}

# header_sizes PORT ID: the bytes of nginx's headers (status line included) in a 200 and a 304
# to a metadata call, and the 304 itself: nginx revalidates static files by itself.
header_sizes() {
    local url="http://127.0.0.1:$1/groups/$2/metadata" etag h200 h304 code
    etag=$(curl -fsS -D - -o /dev/null "$url" | tr -d '\r' | awk 'tolower($1) == "etag:" {print $2}')
    h200=$(curl -fsS -o /dev/null -w '%{size_header}' "$url")
    read -r code h304 < <(curl -sS -o /dev/null -w '%{http_code} %{size_header}\n' -H "If-None-Match: $etag" "$url")
    [ "$code" = 304 ] || { echo "nginx answered $code, not 304, to If-None-Match: $etag" >&2; exit 1; }
    echo "$h200 $h304 $etag"
}

results=$work/results.jsonl
: >"$results"
record() { python3 -c 'import json, sys; d = json.loads(sys.argv[2]); d.update(json.loads(sys.argv[1])); print(json.dumps(d))' "$1" "$2" >>"$results"; }
has() { [[ ",$scenarios," == *",$1,"* ]]; }

source "$root/Benchmarks/quiet.sh"   # wait_quiet
# summary JSON: one line of a refresh run's figures per refresh.
summary() {
    python3 - "$1" <<'EOF'
import json, sys
d = json.loads(sys.argv[1])
n = d["count"]
print(f"{d['calls'] / n:.1f} calls, {d['not_modified'] / n:.1f} 304s, {d['tcp'] / n:,.0f} B, "
      f"{d['cpu_ms'] / n:.2f} ms CPU (stat), {d['sched_ms'] / n:.2f} ms (schedstat), {d['polls'] / n:.1f} polls, "
      f"{d['duration_ms']:.1f} ms, {d.get('events', 0)} events in {n} refreshes")
EOF
}

echo "# revalidation.sh: $bin, workers ${WORKERS:-auto}, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%FT%TZ)"

# --- 1. Nothing changes ------------------------------------------------------------------------
if has 1; then
    fx=$work/fx1
    python3 "$bench/upstream/gen.py" "$groups" "$fx" >/dev/null
    if [ "$pad" -gt 0 ]; then
        # Larger details, as real APIs answer: a member of PAD bytes in each metadata.json.
        python3 - "$fx" "$pad" <<'EOF'
import glob, json, os, sys
for path in glob.glob(os.path.join(sys.argv[1], "groups", "*", "metadata.json")):
    with open(path) as f:
        document = json.load(f)
    document["result"]["notes"] = "x" * int(sys.argv[2])
    with open(path, "w") as f:
        json.dump(document, f, separators=(",", ":"))
    os.chmod(path, 0o644)
EOF
    fi
    start_upstream 1 "$fx"
    read -r h200 h304 etag < <(header_sizes "${up_port[1]}" "$(head -1 "$fx/ids.txt")")
    list_bytes=$(stat -c %s "$fx/groups.json")
    detail_bytes=$(cat "$fx"/groups/*/metadata.json | wc -c)
    echo "# 1. nginx: 200 headers $h200 B, 304 headers $h304 B (If-None-Match: $etag answered 304);" \
         "bodies per refresh: list $list_bytes B + details $detail_bytes B"
    record "{\"kind\": \"fixture\", \"h200\": $h200, \"h304\": $h304, \"list_bytes\": $list_bytes, \"detail_bytes\": $detail_bytes}" '{}'
    start_services 1
    wait_quiet 300
    calls=$((groups + 1))
    for mode in on off; do
        subscribe "$mode" /groups "$work/s1-$mode.sse"
        drive "$(args "$mode" 1 tasks groups "\"mode\": \"ready\", \"pipelines\": 1, \"attempts\": $calls, \"sse\": [\"$work/s1-$mode.sse\"]")" >/dev/null
        # What the /metrics polls that wait for each refresh cost, subtracted below.
        record "$(drive "$(args "$mode" 1 tasks groups '"mode": "polls", "count": 200')")" \
            "{\"kind\": \"polls\", \"mode\": \"$mode\"}"
    done
    for round in $(seq 1 "$rounds"); do
        order=(on off); [ $((round % 2)) = 0 ] && order=(off on)
        for mode in "${order[@]}"; do
            drive "$(args "$mode" 1 tasks groups "\"mode\": \"refresh\", \"calls\": $calls, \"count\": $warmup")" >/dev/null
            out=$(drive "$(args "$mode" 1 tasks groups "\"mode\": \"refresh\", \"calls\": $calls, \"count\": $refreshes, \"sse\": \"$work/s1-$mode.sse\"")")
            record "$out" "{\"kind\": \"nothing\", \"mode\": \"$mode\", \"round\": $round}"
            echo "# 1. round $round $mode: $(summary "$out")"
        done
    done
    if [ -n "${PERF_DIR:-}" ]; then
        # One more run of refreshes per mode under perf, not counted: where the CPU goes.
        mkdir -p "$PERF_DIR"
        for mode in on off; do
            perf record -q -F 1999 -g -p "${service_pid[$mode]}" -o "$PERF_DIR/perf-$mode.data" 2>"$PERF_DIR/perf-$mode.log" &
            perf_pid=$!
            pids+=("$perf_pid")
            sleep 0.5
            drive "$(args "$mode" 1 tasks groups "\"mode\": \"refresh\", \"calls\": $calls, \"count\": $refreshes")" >/dev/null
            kill -INT "$perf_pid"
            wait "$perf_pid" 2>/dev/null || true
            forget "$perf_pid"
            perf report -q -i "$PERF_DIR/perf-$mode.data" --no-children --sort dso,symbol --stdio 2>/dev/null |
                grep -v '^$' | head -60 >"$PERF_DIR/perf-$mode.txt" || true
        done
        echo "# 1. profiles: $PERF_DIR/perf-{on,off}.data, top symbols in $PERF_DIR/perf-{on,off}.txt"
    fi
    stop_pids
    stop_upstreams
fi

# --- 2. One detail changes per refresh ---------------------------------------------------------
if has 2; then
    fx=$work/fx2
    python3 "$bench/upstream/gen.py" "$groups" "$fx" >/dev/null
    # The shared nginx.conf caches open files' size and mtime for 600 s: a copy without it.
    fresh=$work/upstream-fresh
    cp -r "$bench/upstream" "$fresh"
    sed -i -e 's/^\([[:space:]]*\)open_file_cache .*;/\1open_file_cache off;/' -e '/open_file_cache_valid/d' "$fresh/nginx.conf"
    grep -q 'open_file_cache off;' "$fresh/nginx.conf" || { echo "could not turn open_file_cache off in a copy of nginx.conf" >&2; exit 1; }
    start_upstream 2 "$fx" "$fresh"
    start_services 2
    calls=$((groups + 1))
    ids=$(python3 -c 'import json, sys; print(json.dumps(open(sys.argv[1]).read().split()))' "$fx/ids.txt")
    epoch=$(($(date +%s) + 1000))
    start=0
    for mode in on off; do
        subscribe "$mode" '/groups?updates=patch' "$work/s2-$mode.sse"
        drive "$(args "$mode" 2 tasks groups "\"mode\": \"ready\", \"pipelines\": 1, \"attempts\": $calls, \"sse\": [\"$work/s2-$mode.sse\"]")" >/dev/null
    done
    for mode in on off; do
        # The warm-up takes in what changed while the other mode ran (one event), then nothing.
        drive "$(args "$mode" 2 tasks groups "\"mode\": \"refresh\", \"calls\": $calls, \"count\": $warmup")" >/dev/null
        mutate="{\"fixture\": \"$fx\", \"ids\": $ids, \"start\": $start, \"epoch\": $epoch}"
        out=$(drive "$(args "$mode" 2 tasks groups "\"mode\": \"refresh\", \"calls\": $calls, \"count\": $changes, \"sse\": \"$work/s2-$mode.sse\", \"mutate\": $mutate")")
        record "$out" "{\"kind\": \"one\", \"mode\": \"$mode\"}"
        start=$((start + changes))
    done
    stop_pids
    stop_upstreams
fi

# --- 3. Quota: many live identities ------------------------------------------------------------
if has 3; then
    fx=$work/fx3
    python3 "$bench/upstream/gen.py" "$quota_groups" "$fx" >/dev/null
    start_upstream 3 "$fx"
    start_services 3
    calls=$((identities * (quota_groups + 1)))
    for mode in on off; do
        for i in $(seq 1 "$identities"); do
            subscribe "$mode" /me/groups "$work/s3-$mode-$i.sse" "user-$i"
        done
    done
    for mode in on off; do
        drive "$(args "$mode" 3 accounts mygroups "\"mode\": \"ready\", \"pipelines\": $identities, \"attempts\": $calls, \"timeout\": $((timeout * 2))")" >/dev/null
        drive "$(args "$mode" 3 accounts mygroups "\"mode\": \"refresh\", \"calls\": $calls, \"count\": 1")" >/dev/null
        out=$(drive "$(args "$mode" 3 accounts mygroups "\"mode\": \"refresh\", \"calls\": $calls, \"count\": $quota_rounds")")
        record "$out" "{\"kind\": \"quota\", \"mode\": \"$mode\"}"
    done
    stop_pids
    stop_upstreams
fi

# --- The report ---------------------------------------------------------------------------------
python3 - "$results" "$identities" "$quota_groups" "$groups" "$refreshes" "$rounds" "$changes" "$quota_rounds" "$pad" <<'EOF'
import json, statistics, sys

rows = [json.loads(l) for l in open(sys.argv[1])]
identities, quota_groups, groups, refreshes, rounds, changes, quota_rounds, pad = map(int, sys.argv[2:10])
failed = False
verdicts = []


def med(values):
    return statistics.median(values) if values else float("nan")


def table(title, header, lines):
    print(f"\n{title}\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join(["---"] + ["---:"] * (len(header) - 1)) + "|")
    for line in lines:
        print("| " + " | ".join(line) + " |")


def ratio(off, on):
    return off / on if on > 0 else float("inf")


fixture = next((r for r in rows if r["kind"] == "fixture"), None)
polls = {r["mode"]: r for r in rows if r["kind"] == "polls"}
nothing = [r for r in rows if r["kind"] == "nothing"]
if nothing:
    per = {}
    for mode in ("on", "off"):
        rs = [r for r in nothing if r["mode"] == mode]
        p = polls[mode]

        def figure(f):
            return med([f(r) / r["count"] for r in rs])

        cpu = lambda r: r["cpu_ms"] - r["polls"] * p["cpu_ms"]
        sched = lambda r: r["sched_ms"] - r["polls"] * p["sched_ms"]
        headers = lambda r: (r["calls"] - r["not_modified"]) * fixture["h200"] + r["not_modified"] * fixture["h304"]
        per[mode] = {
            "calls": figure(lambda r: r["calls"]), "not_modified": figure(lambda r: r["not_modified"]),
            "tcp": figure(lambda r: r["tcp"]), "tcp_sent": figure(lambda r: r["tcp_sent"]), "headers": figure(headers),
            "user": figure(lambda r: r["user_ms"]), "kernel": figure(lambda r: r["kernel_ms"]),
            "bodies": figure(lambda r: r["tcp"] - headers(r)),
            "cpu": figure(cpu), "cpu_raw": figure(lambda r: r["cpu_ms"]), "sched": figure(sched),
            "sched_raw": figure(lambda r: r["sched_ms"]), "polls": figure(lambda r: r["polls"]),
            "duration": med([r["duration_ms"] for r in rs]), "events": sum(r["events"] for r in rs),
            "errors": sum(r["errors"] for r in rs), "closed": sum(r["closed"] for r in rs),
            "rounds_tcp": [r["tcp"] / r["count"] for r in rs], "rounds_cpu": [cpu(r) / r["count"] for r in rs],
            "rounds_sched": [sched(r) / r["count"] for r in rs],
        }
    on, off = per["on"], per["off"]
    fmt = lambda v, d=1: f"{v:,.{d}f}"
    rnd = lambda vs, d: ", ".join(f"{v:,.{d}f}" for v in vs)
    padded = f" (each padded by {pad:,} B)" if pad else ""
    table(f"1. Nothing changes: {groups} items + details{padded}, {refreshes} refreshes × {rounds} rounds per mode, medians of the rounds, per refresh",
          ["per refresh", "revalidate: true", "revalidate: false", "off ÷ on"], [
        ["upstream calls (attempts)", fmt(on["calls"]), fmt(off["calls"]), ""],
        ["of them 304 (not_modified)", fmt(on["not_modified"]), fmt(off["not_modified"]), ""],
        ["upstream bytes received (TCP payload)", fmt(on["tcp"], 0), fmt(off["tcp"], 0), f"×{ratio(off['tcp'], on['tcp']):.2f}"],
        ["… of which headers (nginx's 200/304 header sizes × calls)", fmt(on["headers"], 0), fmt(off["headers"], 0), f"×{ratio(off['headers'], on['headers']):.2f}"],
        ["… of which bodies (the rest)", fmt(on["bodies"], 0), fmt(off["bodies"], 0),
         f"×{ratio(off['bodies'], on['bodies']):.0f}" if on["bodies"] > 0.5 else "(on: none)"],
        ["service CPU, ms (utime+stime, polls subtracted)", fmt(on["cpu"], 2), fmt(off["cpu"], 2), f"×{ratio(off['cpu'], on['cpu']):.2f}"],
        ["… user / kernel, ms (utime / stime, polls included)", f"{on['user']:.2f} / {on['kernel']:.2f}", f"{off['user']:.2f} / {off['kernel']:.2f}", ""],
        ["service CPU, ms (schedstat, polls subtracted)", fmt(on["sched"], 2), fmt(off["sched"], 2), f"×{ratio(off['sched'], on['sched']):.2f}"],
        ["service CPU, ms (schedstat, as measured)", fmt(on["sched_raw"], 2), fmt(off["sched_raw"], 2), f"×{ratio(off['sched_raw'], on['sched_raw']):.2f}"],
        ["upstream request bytes sent (TCP payload)", fmt(on["tcp_sent"], 0), fmt(off["tcp_sent"], 0), f"×{ratio(off['tcp_sent'], on['tcp_sent']):.2f}"],
        ["/metrics polls to see it end", fmt(on["polls"], 1), fmt(off["polls"], 1), ""],
        ["refresh time, ms (reload to the last call counted)", fmt(on["duration"], 1), fmt(off["duration"], 1), f"×{ratio(off['duration'], on['duration']):.2f}"],
        ["events to the subscriber (all rounds)", str(on["events"]), str(off["events"]), ""],
    ])
    print(f"\nRounds (per refresh): bytes on {rnd(on['rounds_tcp'], 0)}, off {rnd(off['rounds_tcp'], 0)}; "
          f"CPU (schedstat) on {rnd(on['rounds_sched'], 2)}, off {rnd(off['rounds_sched'], 2)} ms; "
          f"CPU (stat) on {rnd(on['rounds_cpu'], 2)}, off {rnd(off['rounds_cpu'], 2)} ms.")
    print(f"A /metrics poll at idle cost {polls['on']['sched_ms']:.3f} / {polls['off']['sched_ms']:.3f} ms (schedstat, on / off), "
          f"{polls['on']['cpu_ms']:.3f} / {polls['off']['cpu_ms']:.3f} ms (stat); rchar counts only what the service read with "
          f"read(): {polls['on']['rchar']:.0f} B per poll against the {polls['on']['sent']:.0f} B request, not the upstream's answers.")
    if fixture:
        print(f"nginx's headers: {fixture['h200']} B in a 200, {fixture['h304']} B in a 304; the bodies of one refresh: "
              f"{fixture['list_bytes'] + fixture['detail_bytes']:,} B (list {fixture['list_bytes']:,} B, {groups} details "
              f"{fixture['detail_bytes']:,} B): a 304 saves a metadata call only its {fixture['detail_bytes'] / groups:.0f}-byte body.")
    if on["errors"] or off["errors"] or on["closed"] or off["closed"]:
        print(f"NOTE: upstream errors on/off {on['errors']:.0f}/{off['errors']:.0f}, connections closed while measured {on['closed']}/{off['closed']} (their bytes are missing)")
    if on["not_modified"] == 0:
        failed = True
        print("NO 304s COUNTED with revalidate: true; the on service's last upstream metrics:",
              [r for r in nothing if r["mode"] == "on"][-1]["metrics"])
    b, c = ratio(off["tcp"], on["tcp"]), ratio(off["sched"], on["sched"])
    def less(r):
        return f"×{r:.2f} less" if r >= 1 else f"×{1 / r:.2f} MORE"
    verdicts.append(f"1. upstream bytes: off ÷ on = ×{b:.2f}, i.e. {less(b)} with revalidation (goal ≥ ×20 less): {'MET' if b >= 20 else 'MISSED'}")
    verdicts.append(f"1. service CPU per refresh: off ÷ on = ×{c:.2f} (schedstat; utime+stime ×{ratio(off['cpu'], on['cpu']):.2f}), i.e. "
                    f"{less(c)} with revalidation (goal ≥ ×5 less): {'MET' if c >= 5 else 'MISSED'}")
    verdicts.append(f"1. no event when nothing changes: on {on['events']}, off {off['events']} events: {'OK' if on['events'] == off['events'] == 0 else 'WRONG'}")

one = {r["mode"]: r for r in rows if r["kind"] == "one"}
if one:
    lines = []
    for key, label, f in [
        ("calls", "upstream calls per refresh", lambda r: f"{r['calls'] / r['count']:.1f}"),
        ("nm", "of them 304", lambda r: f"{r['not_modified'] / r['count']:.1f}"),
        ("tcp", "upstream bytes per refresh", lambda r: f"{r['tcp'] / r['count']:,.0f}"),
        ("cpu", "service CPU per refresh, ms (schedstat, as measured)", lambda r: f"{r['sched_ms'] / r['count']:.2f}"),
        ("ev", "events per refresh (each refresh)", lambda r: ",".join(map(str, r["per_refresh_events"]))),
        ("evs", "events / refreshes", lambda r: f"{r['events']} / {r['count']}"),
        ("ok", "one patch per refresh, of the changed item only", lambda r: "pass" if not r["problems"] else "FAIL"),
    ]:
        lines.append([label] + [f(one[m]) if m in one else "" for m in ("on", "off")])
    table(f"2. One detail changes per refresh: {groups} items, {changes} refreshes per mode, ?updates=patch", ["", "revalidate: true", "revalidate: false"], lines)
    for mode, r in one.items():
        for problem in r["problems"][:10]:
            print(f"{mode}: {problem}")
        if r["problems"]:
            failed = True
    on_ok = "on" in one and not one["on"]["problems"]
    verdicts.append(f"2. exactly one event per refresh, a patch of the changed item only: "
                    + ", ".join(f"{m} {'pass' if not r['problems'] else 'FAIL'}" for m, r in one.items()))

quota = {r["mode"]: r for r in rows if r["kind"] == "quota"}
if quota:
    lines, figures = [], {}
    for mode in ("on", "off"):
        if mode not in quota:
            continue
        r = quota[mode]
        calls, free = r["calls"] / r["count"], r["not_modified"] / r["count"]
        counted = calls - free
        figures[mode] = (calls, free, counted)
    def col(f):
        return [f(*figures[m]) if m in figures else "" for m in ("on", "off")]
    lines = [
        ["live identities (pipelines)"] + [f"{quota[m]['pipelines']:.0f}" if m in quota else "" for m in ("on", "off")],
        ["upstream calls per refresh round"] + col(lambda c, f, k: f"{c:,.0f}"),
        ["of them 304 (free)"] + col(lambda c, f, k: f"{f:,.0f}"),
        ["counted calls per round"] + col(lambda c, f, k: f"{k:,.0f}"),
        ["counted per hour at 30 s, all identities (× 120)"] + col(lambda c, f, k: f"{k * 120:,.0f}"),
        ["counted per hour at 30 s, per identity"] + col(lambda c, f, k: f"{k * 120 / identities:,.0f}"),
        ["calls per hour at 30 s, per identity, 304s counted too"] + col(lambda c, f, k: f"{c * 120 / identities:,.0f}"),
        ["a 5,000/h quota per identity"] + col(lambda c, f, k: "fits" if k * 120 / identities <= 5000 else "EXCEEDED"),
    ]
    table(f"3. Quota: {identities} identities × {quota_groups}-item list ({quota_groups + 1} calls each per refresh), {quota_rounds} rounds per mode after one warm-up",
          ["", "revalidate: true", "revalidate: false"], lines)
    print("\nThe per-hour figures are an extrapolation: counted calls of one measured refresh round × 120 "
          "(a 30 s refreshInterval), 304s free as GitHub counts them; the rounds ran on reloads, not for an hour.")
    if "on" in figures and "off" in figures:
        verdicts.append(f"3. counted calls per hour at 30 s: {figures['on'][2] * 120:,.0f} with revalidation against "
                        f"{figures['off'][2] * 120:,.0f} without ({figures['on'][2] * 120 / identities:,.0f} against "
                        f"{figures['off'][2] * 120 / identities:,.0f} per identity, against a 5,000/h quota)")
    for mode, r in quota.items():
        if r["errors"]:
            print(f"NOTE: {mode}: {r['errors']:.0f} upstream errors")

print("\nVerdicts:")
for v in verdicts:
    print(f"- {v}")
sys.exit(1 if failed else 0)
EOF
