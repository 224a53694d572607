import FuzzChecks

/// libFuzzer target: `scripts/fuzz UpstreamResponse`; without libFuzzer linked, it replays the files or
/// directories given as arguments (FuzzTarget).
@main
struct FuzzUpstreamResponse {
    static func main() throws {
        try FuzzTarget.run(FuzzChecks.upstreamResponse)
    }
}
