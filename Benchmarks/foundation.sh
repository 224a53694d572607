#!/usr/bin/env bash
# The foundation benchmark (issue 2): evhttp through Tributary's HTTPServer module against nginx
# serving the same bytes, side by side in one run, with wrk; medians of ROUNDS interleaved
# rounds, reported as ratios to nginx.
#
#   Benchmarks/foundation.sh            (from the project root; needs nginx and wrk)
#
# Rows: nginx (static file), evhttp (Benchmarks/evhttp-hello.c: libevent's evhttp in plain C
# answering the same bytes, the floor under our Swift layer), hello (Tributary's HTTPServer
# answering the same bytes from memory), proxy (each request makes one pooled upstream call
# to that nginx through UpstreamClient and answers its body). Env: ROUNDS=3 DURATION=10s CONNECTIONS=64
# PORT_BASE=8180. Every process started here is stopped by its PID on exit.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
rounds=${ROUNDS:-3}
duration=${DURATION:-10s}
connections=${CONNECTIONS:-64}
base=${PORT_BASE:-8180}
nginx_port=$base hello_port=$((base + 1)) proxy_port=$((base + 2)) evhttp_port=$((base + 3))
work=$(mktemp -d /tmp/tributary-foundation-bench.XXXXXX)
mkdir -p "$work/www"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    [ -f "$work/nginx.pid" ] && kill -TERM "$(cat "$work/nginx.pid")" 2>/dev/null || true
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT INT TERM

command -v wrk >/dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 1; }
command -v nginx >/dev/null || { echo "nginx is missing (apt-get install nginx-light)" >&2; exit 1; }
(cd "$root" && swift build -c release --product FoundationBench >/dev/null)
bench=$(cd "$root" && swift build -c release --show-bin-path)/FoundationBench
cc -O2 -o "$work/evhttp-hello" "$root/Benchmarks/evhttp-hello.c" $(pkg-config --cflags --libs libevent)

chmod 755 "$work" "$work/www"   # nginx workers run unprivileged
printf '%s' '{"hello":"world","from":"tributary"}' > "$work/www/hello.json"
cat > "$work/nginx.conf" <<CONF
worker_processes 1;
pid $work/nginx.pid;
error_log $work/error.log;
events { worker_connections 4096; }
http {
    access_log off;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$nginx_port;
        root $work/www;
        default_type application/json;
        location / { try_files \$uri /hello.json; }
    }
}
CONF
nginx -c "$work/nginx.conf" -p "$work"
"$bench" hello "$hello_port" & pids+=($!)
"$bench" proxy "$proxy_port" "http://127.0.0.1:$nginx_port" 128 & pids+=($!)
"$work/evhttp-hello" "$evhttp_port" & pids+=($!)
for port in $nginx_port $evhttp_port $hello_port $proxy_port; do
    for _ in $(seq 1 100); do curl -fs -o /dev/null "http://127.0.0.1:$port/hello.json" && break; sleep 0.1; done
    curl -fs "http://127.0.0.1:$port/hello.json" | grep -q hello || { echo "port $port does not answer" >&2; exit 1; }
done

measure() {  # measure PORT -> req/s
    wrk -t2 -c"$connections" -d"$duration" "http://127.0.0.1:$1/hello.json" | awk '/Requests\/sec/ {print $2}'
}
declare -A results=()
for round in $(seq 1 "$rounds"); do
    for target in nginx evhttp hello proxy; do
        port_var=${target}_port
        wrk -t2 -c"$connections" -d2s "http://127.0.0.1:${!port_var}/hello.json" >/dev/null  # warm-up
        results[$target]+="$(measure "${!port_var}") "
    done
done
median() { tr ' ' '\n' | grep -v '^$' | sort -n | awk '{a[NR]=$1} END {print (NR % 2) ? a[(NR+1)/2] : (a[NR/2] + a[NR/2+1]) / 2}'; }
nginx_median=$(echo "${results[nginx]}" | median)
printf '%-8s %12s %10s   %s\n' target "req/s" "vs nginx" "rounds"
for target in nginx evhttp hello proxy; do
    value=$(echo "${results[$target]}" | median)
    printf '%-8s %12.0f %9.0f%%   %s\n' "$target" "$value" "$(echo "$value / $nginx_median * 100" | bc -l)" "${results[$target]}"
done
echo "wrk -t2 -c$connections -d$duration, $rounds interleaved rounds, medians; nginx 1 worker; $(nproc) cores shared by all"
