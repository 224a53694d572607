import FuzzChecks

// libFuzzer target: `scripts/fuzz UpstreamResponse`. Built with -DFUZZING it has no main (libFuzzer's
// runs); otherwise its main replays the files or directories given as arguments.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzUpstreamResponse(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    FuzzChecks.upstreamResponse(UnsafeBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
@main
struct ReplayUpstreamResponse {
    static func main() throws {
        let count = try replay(Array(CommandLine.arguments.dropFirst()), through: FuzzChecks.upstreamResponse)
        print("replayed \(count) inputs")
    }
}
#endif
