import Foundation
import Glibc
import Synchronization

/// A program the tests run to its end or stop themselves (the `tributary` binary): spawned by
/// ``ChildProcess`` with `posix_spawn`, its output read into ``output`` as it comes, its exit
/// reaped by PID.
///
/// Not Foundation's `Process`: its `run()` reads `/proc/self/fd` with a 256-byte copy of each
/// directory entry, which crashes the test process now and then when an entry ends a page
/// (swift-corelibs-foundation PR #5472), and a test process full of sockets is where it
/// happens.
///
/// ```swift
/// let process = try SpawnedProcess(binary.path, ["serve", "--listen", "127.0.0.1:0"])
/// _ = await process.output.wait(timeout: .seconds(20)) { $0.contains("listening") }
/// process.signal(SIGTERM)
/// #expect(await process.exitStatus() == 0)
/// ```
public final class SpawnedProcess: Sendable {
    public let pid: Int32
    /// Standard output and error together, as they are written; ends with
    /// ``ChildProcess/outputEndedMarker`` once the program closed both.
    public let output: Observed<String>
    /// The exit status once reaped: the code it exited with, or the number of the signal that
    /// ended it (as Foundation's `terminationStatus`).
    private let status = Mutex<Int32?>(nil)

    /// Spawns `executable` (a path, or a name looked up in `PATH`) with `arguments` (not
    /// counting the program name), in `directory` (else this process's), with exactly
    /// `environment` (else this process's).
    public init(
        _ executable: String, _ arguments: [String], environment: [String: String]? = nil, directory: String? = nil
    ) throws {
        output = Observed("")
        pid = try ChildProcess.spawn(
            executable, [executable] + arguments, output: output, environment: environment, workingDirectory: directory)
    }

    /// Whether it still runs (reaps it if it has just ended).
    public var isRunning: Bool {
        reap(blocking: false) == nil
    }

    /// Sends `signal` (nothing once it has been reaped: its PID may be another process's now).
    public func signal(_ signal: Int32) {
        guard isRunning else { return }
        kill(pid, signal)
    }

    /// Waits, on a thread of its own, for the exit, then until ``output`` holds all it wrote:
    /// tests read its log right after.
    public func exitStatus() async -> Int32 {
        let status = await withCheckedContinuation { continuation in
            Thread.detachNewThread { [self] in continuation.resume(returning: reap(blocking: true)!) }
        }
        _ = await output.wait(timeout: .seconds(10)) { $0.hasSuffix(ChildProcess.outputEndedMarker) }
        return status
    }

    /// The exit status, reaping the process when it has ended (first waiting for that, outside
    /// the lock, if `blocking`). Each PID is reaped once: later calls read the status kept then.
    private func reap(blocking: Bool) -> Int32? {
        if blocking {
            // Waits without reaping (WNOWAIT), so that `isRunning` is never held up meanwhile.
            var info = siginfo_t()
            while waitid(P_PID, id_t(pid), &info, WEXITED | WNOWAIT) < 0 && errno == EINTR {}
        }
        return status.withLock { status in
            if let status { return status }
            var raw: Int32 = 0
            var result: pid_t
            repeat { result = waitpid(pid, &raw, WNOHANG) } while result < 0 && errno == EINTR
            guard result == pid else { return nil }
            // WIFSIGNALED / WTERMSIG / WEXITSTATUS, which Swift does not import (macros).
            let signal = raw & 0x7f
            status = signal != 0 ? signal : (raw >> 8) & 0xff
            return status
        }
    }
}
