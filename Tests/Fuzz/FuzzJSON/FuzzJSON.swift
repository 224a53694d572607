import FuzzChecks

/// libFuzzer target: `scripts/fuzz JSON`; without libFuzzer linked, it replays the files or
/// directories given as arguments (FuzzTarget).
@main
struct FuzzJSON {
    static func main() throws {
        try FuzzTarget.run(FuzzChecks.json)
    }
}
