import Foundation
public import Libevent
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
}

/// Work was submitted to a ``LoopThread`` after it stopped.
public struct LoopThreadStopped: Error {}

/// A loop-confined value that may be passed between threads but only used on its loop
/// (checked at run time), like NIO's `NIOLoopBound`.
public struct LoopBound<Value>: @unchecked Sendable {
    private let box: Box
    public let loop: EventLoop

    private final class Box {
        var value: Value?
        init(_ value: Value) { self.value = value }
    }

    public init(_ value: Value, loop: EventLoop) {
        precondition(loop.isCurrent, "LoopBound made off its loop")
        box = Box(value)
        self.loop = loop
    }

    /// The value; only on the loop, and only until ``release()``.
    public var value: Value {
        precondition(loop.isCurrent, "LoopBound used off its loop")
        guard let value = box.value else { preconditionFailure("LoopBound used after release") }
        return value
    }

    /// Drops the value (on the loop), e.g. to free a server before its loop stops.
    public func release() {
        precondition(loop.isCurrent, "LoopBound released off its loop")
        box.value = nil
    }
}
