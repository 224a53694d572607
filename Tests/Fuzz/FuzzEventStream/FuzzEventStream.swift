import FuzzChecks

// libFuzzer target: `scripts/fuzz EventStream`. Built with -DFUZZING it has no main (libFuzzer's
// runs); otherwise its main replays the files or directories given as arguments.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzEventStream(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    FuzzChecks.eventStream(UnsafeBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
@main
struct ReplayEventStream {
    static func main() throws {
        let count = try replay(Array(CommandLine.arguments.dropFirst()), through: FuzzChecks.eventStream)
        print("replayed \(count) inputs")
    }
}
#endif
