# Sourced by the Benchmarks/*.sh scripts that start their own processes on loopback (auth.sh,
# sharing-cost.sh, tracing-cost.sh): a work directory ($work), every process started recorded
# in $pids and stopped by its PID on exit (Ctrl-C included), a free port, a process's CPU time,
# a wait until a port answers, and the demo upstream.
work=$(mktemp -d)
pids=()
stop_started() {
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null && wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap stop_started EXIT
trap 'exit 130' INT TERM

# cpu_ticks PID: the process's user and system time so far, in 1/100 s (utime + stime).
cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_port PORT PATH: until GET http://127.0.0.1:PORT/PATH answers (10 s at most).
wait_port() { for _ in $(seq 1 100); do curl -s -o /dev/null "http://127.0.0.1:$1/$2" && return; sleep 0.1; done; echo "no answer on $1" >&2; exit 1; }

# start_demo_upstream BINARY: `BINARY demo-upstream` on a free port, answering; sets $up.
start_demo_upstream() {
    up=$(free_port)
    "$1" demo-upstream --listen "127.0.0.1:$up" 2>/dev/null &
    pids+=($!)
    wait_port "$up" groups
}
