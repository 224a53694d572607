# Sourced by the scripts that check a running service (openapi-check, redbot-check):
#   start_demo BINARY WORKDIR [ARGUMENT…]
# starts BINARY's built-in demo (with the ARGUMENTs, e.g. `--config FILE`) (`tributary demo`, from WORKDIR, an empty directory: the
# configuration built into the binary) on a free loopback port with one worker, its log in
# WORKDIR/service.log, and sets `service` (its PID: the caller stops it) and `base`
# (http://127.0.0.1:PORT). Exits the caller if the service does not come up within 20 s.
start_demo() {
    local binary=$1 work=$2 port=
    shift 2
    (cd "$work" && exec "$binary" demo --listen 127.0.0.1:0 --workers 1 --log-level info "$@" 2>"$work/service.log") &
    service=$!
    # The port it bound: the "listening" line names it (the demo upstream's own line says "demo upstream").
    for _ in $(seq 1 200); do
        port=$(sed -n 's/.*address=127\.0\.0\.1:\([0-9]*\) workers=.* listening$/\1/p' "$work/service.log" | head -1)
        [ -n "$port" ] && break
        kill -0 "$service" 2>/dev/null || { cat "$work/service.log" >&2; echo "$(basename "$0"): the service did not start" >&2; exit 1; }
        sleep 0.1
    done
    [ -n "$port" ] || { cat "$work/service.log" >&2; echo "$(basename "$0"): no listening line within 20 s" >&2; exit 1; }
    base="http://127.0.0.1:$port"
}
