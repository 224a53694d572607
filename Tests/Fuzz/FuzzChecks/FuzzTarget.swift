import CFuzzerDriver
import Glibc

/// A fuzz target's `main`: one call, whichever way the binary was linked.
///
/// - Linked with libFuzzer (`scripts/fuzz` adds the toolchain's `libclang_rt.fuzzer_no_main`):
///   libFuzzer's driver takes the command line (its flags, the corpus directory) and fuzzes
///   `check`; the process ends as libFuzzer's own `main` would end it.
/// - Linked without it (any other build, `swift build` included): the files or directories
///   named on the command line are replayed through `check`, a crash's input included.
///
/// ```swift
/// @main struct FuzzJSON { static func main() throws { try FuzzTarget.run(FuzzChecks.json) } }
/// ```
public enum FuzzTarget {
    /// The check libFuzzer's C callback calls: a C function pointer captures nothing. Set once,
    /// before the driver starts, on the one thread libFuzzer runs it on.
    nonisolated(unsafe) private static var check: ((UnsafeBufferPointer<UInt8>) -> Void)?

    public static func run(_ check: @escaping (UnsafeBufferPointer<UInt8>) -> Void) throws {
        Self.check = check
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        let status = tributary_fuzzer_run(&argc, &argv) { data, size in
            FuzzTarget.check?(UnsafeBufferPointer(start: data, count: size))
            return 0
        }
        if status != TRIBUTARY_FUZZER_ABSENT { exit(status) }
        let count = try replay(Array(CommandLine.arguments.dropFirst()), through: check)
        print("replayed \(count) inputs")
    }
}
