# Sourced by the Benchmarks/*.sh scripts that time work on the 2 shared cores (batching.sh,
# revalidation.sh): `wait_quiet [DEFAULT_WAIT]` waits until the machine's other load is under
# QUIET_MAX (default 15) % of its cores, at most QUIET_WAIT seconds (default DEFAULT_WAIT, else
# 300), as ../shared/bench's bench-all.sh does before each phase, and says what it found.
wait_quiet() {
    local waited=0 b0 b1 busy sample=2
    while :; do
        b0=$(awk '$1=="cpu" {print $2+$3+$4+$7+$8+$9; exit}' /proc/stat); sleep "$sample"
        b1=$(awk '$1=="cpu" {print $2+$3+$4+$7+$8+$9; exit}' /proc/stat)
        # Busy ticks over the sample's ticks on every core: 100 when all cores were busy.
        busy=$(( (b1 - b0) * 100 / ($(getconf CLK_TCK) * sample * $(nproc)) ))
        if [ "$busy" -le "${QUIET_MAX:-15}" ] || [ "$waited" -ge "${QUIET_WAIT:-${1:-300}}" ]; then
            echo "# machine load before measuring: ${busy}% (waited ${waited}s)"; return
        fi
        sleep 3; waited=$((waited + 5))
    done
}
