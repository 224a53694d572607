import FuzzChecks

/// libFuzzer target: `scripts/fuzz StreamControl`; without libFuzzer linked, it replays the files or
/// directories given as arguments (FuzzTarget).
@main
struct FuzzStreamControl {
    static func main() throws {
        try FuzzTarget.run(FuzzChecks.streamControl)
    }
}
