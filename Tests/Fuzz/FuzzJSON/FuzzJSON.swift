import FuzzChecks

// libFuzzer target: `scripts/fuzz JSON`. Built with -DFUZZING it has no main (libFuzzer's
// runs); otherwise its main replays the files or directories given as arguments.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzJSON(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    FuzzChecks.json(UnsafeBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
@main
struct ReplayJSON {
    static func main() throws {
        let count = try replay(Array(CommandLine.arguments.dropFirst()), through: FuzzChecks.json)
        print("replayed \(count) inputs")
    }
}
#endif
