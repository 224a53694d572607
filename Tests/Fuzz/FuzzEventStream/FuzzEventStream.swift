import FuzzChecks

/// libFuzzer target: `scripts/fuzz EventStream`; without libFuzzer linked, it replays the files or
/// directories given as arguments (FuzzTarget).
@main
struct FuzzEventStream {
    static func main() throws {
        try FuzzTarget.run(FuzzChecks.eventStream)
    }
}
