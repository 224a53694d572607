import FuzzChecks

// libFuzzer target: `scripts/fuzz StreamControl`. Built with -DFUZZING it has no main (libFuzzer's
// runs); otherwise its main replays the files or directories given as arguments.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzStreamControl(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
    FuzzChecks.streamControl(UnsafeBufferPointer(start: data, count: size))
    return 0
}

#if !FUZZING
@main
struct ReplayStreamControl {
    static func main() throws {
        let count = try replay(Array(CommandLine.arguments.dropFirst()), through: FuzzChecks.streamControl)
        print("replayed \(count) inputs")
    }
}
#endif
