import Foundation
public import EventLoop
import HTTPServer
import Synchronization

/// An ``EventLoop`` running on a thread of its own, for tests that drive a server or client
/// from async test code. Work is submitted with ``run(_:)``; loop-confined objects made there
/// are kept in ``LoopBound`` boxes.
///
/// ```swift
/// let thread = try LoopThread()
/// let port = try await thread.run { loop in try HTTPServer(loop: loop) { ... }.bind(...) }
/// ```
public final class LoopThread: Sendable {
    public let loop: EventLoop
    /// Set by ``stop(cleanup:)``: work submitted afterwards would never run.
    private let stopped = Mutex(false)

    public init() throws {
        let ready = DispatchSemaphore(value: 0)
        let made = Mutex<Result<EventLoop, any Error>?>(nil)
        let thread = Thread {
            do {
                let loop = try EventLoop()
                made.withLock { $0 = .success(loop) }
                ready.signal()
                try? loop.run()
                loop.discardPendingWork()
            } catch {
                made.withLock { $0 = .failure(error) }
                ready.signal()
            }
        }
        thread.stackSize = 4 << 20
        thread.start()
        ready.wait()
        loop = try made.withLock { $0! }.get()
    }

    /// Runs `body` on the loop and returns its result.
    public func run<Result: Sendable>(_ body: @escaping @Sendable (EventLoop) throws -> Result) async throws -> Result {
        guard !stopped.withLock({ $0 }) else { throw LoopThreadStopped() }
        return try await withCheckedThrowingContinuation { continuation in
            loop.execute { [loop] in
                continuation.resume(with: Swift.Result { try body(loop) })
            }
        }
    }

    /// Stops the loop after running `cleanup` on it (drop loop-bound objects there).
    public func stop(cleanup: @escaping @Sendable () -> Void = {}) async {
        let alreadyStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !alreadyStopped else { return }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            loop.execute { [loop] in
                cleanup()
                loop.stop()
                continuation.resume()
            }
        }
    }

    /// Stops the loop after running `cleanup` on it, without waiting: for a `deinit`, where a
    /// harness dropped without ``stop(cleanup:)`` (its test threw) must still drop its
    /// loop-bound objects on their loop. Dropped on the test's thread instead, they would be
    /// torn down while the loop runs their callbacks on its own. Does nothing once stopped.
    public func stopWithoutWaiting(cleanup: @escaping @Sendable () -> Void = {}) {
        let alreadyStopped = stopped.withLock { stopped in
            defer { stopped = true }
            return stopped
        }
        guard !alreadyStopped else { return }
        loop.execute { [loop] in
            cleanup()
            loop.stop()
        }
    }
}

/// Work was submitted to a ``LoopThread`` after it stopped.
public struct LoopThreadStopped: Error {}
