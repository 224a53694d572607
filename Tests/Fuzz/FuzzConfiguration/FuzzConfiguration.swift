import FuzzChecks

/// libFuzzer target: `scripts/fuzz Configuration`; without libFuzzer linked, it replays the files or
/// directories given as arguments (FuzzTarget).
@main
struct FuzzConfiguration {
    static func main() throws {
        try FuzzTarget.run(FuzzChecks.configuration)
    }
}
