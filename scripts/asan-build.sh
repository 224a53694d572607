# shellcheck shell=bash
# The AddressSanitizer build: sourced by scripts/test, whose second step runs the tests in it,
# and by scripts/fuzz, which links its fuzz targets from the same objects. One set of flags for
# both, because any other flag compiles everything again, dependencies included (a quarter of
# an hour on two cores; docs/architecture.md, "What CI builds").
#
# The build carries libFuzzer's coverage instrumentation (edges, comparisons): scripts/fuzz
# adds libFuzzer at link time only. Linked without it (the tests), the sanitizer runtime's own
# no-op callbacks take the instrumentation's calls.
#
# SWIFT_DETERMINISTIC_HASHING=1 on the builds only, as for the release build: SwiftPM then
# writes the same commands every time, so a later build finds this one done.
asan_scratch=.build-asan
asan_flags=(--sanitize=address --disable-default-traits --scratch-path "$asan_scratch"
    -Xswiftc -sanitize-coverage=edge,inline-8bit-counters,pc-table,trace-cmp)
asan_build() { SWIFT_DETERMINISTIC_HASHING=1 swift build "$@"; }
