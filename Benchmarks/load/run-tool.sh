#!/usr/bin/env bash
# Builds and runs one load tool of Benchmarks/load against a copy of the tributary binary:
#
#   Benchmarks/load/run-tool.sh TOOL [tool flags]      (TOOL: a folder of Benchmarks/load, e.g. sse-scale)
#
# The Benchmarks/*.sh of each tool (sse-scale.sh, keyed-scale.sh, auth.sh, …) call this; see
# them for what each tool measures. The tool is built (Go standard library, no downloads) into Benchmarks/.build-go/.
# Env: TRIBUTARY_BIN=path (default: the image's release build, scripts/test's; foundation.sh
# gives its FoundationBench instead). The binary is copied first, so a rebuild during the run
# changes nothing. The open-file limit is raised to the hard limit. The tool, which stops the
# service it starts, is stopped by PID on exit, Ctrl-C included.
set -euo pipefail
tool=${1:?usage: run-tool.sh TOOL [tool flags]}
shift
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
tools=$root/Benchmarks/.build-go
mkdir -p "$tools"
(cd "$root/Benchmarks/load" && GOFLAGS=-mod=mod GOPROXY=off go build -o "$tools/$tool" "./$tool")
if [ -z "${TRIBUTARY_BIN:-}" ]; then
    (cd "$root" && SWIFT_DETERMINISTIC_HASHING=1 swift build -c release --static-swift-stdlib --product tributary >/dev/null)
    TRIBUTARY_BIN=$root/.build/release/tributary
fi
binary=$(mktemp "$tools/tributary-under-test.XXXXXX")
cp "$TRIBUTARY_BIN" "$binary"
chmod 755 "$binary"
pid=
cleanup() {
    if [ -n "$pid" ]; then kill -TERM "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; fi
    rm -f "$binary"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
ulimit -n "$(ulimit -Hn)"   # sse-scale: 10,000 sockets here, as many in the service
"$tools/$tool" -bin "$binary" "$@" &
pid=$!
status=0
wait "$pid" || status=$?
pid=
exit "$status"
