import Foundation
import Glibc
import Synchronization

/// Suspends tasks until a file descriptor is ready, without holding a thread of Swift's
/// cooperative pool meanwhile: one thread of its own per process runs `poll(2)` over every
/// waiting descriptor and resumes each waiter when its descriptor is ready or its deadline has
/// passed. The pool has one thread per core, so tests that waited in a blocking `recv` would
/// starve every other task (the server's answer, another test's timers) on a small machine.
///
/// ```swift
/// guard try await Poller.shared.wait(for: .readable, on: fd, until: .now + .seconds(2)) else {
///     throw TestClientError.timedOut
/// }
/// let count = recv(fd, &buffer, buffer.count, 0)
/// ```
public final class Poller: Sendable {
    /// The poller of this process; its thread starts on first use and runs until exit.
    public static let shared = Poller()

    /// What a waiter waits for.
    public enum Readiness: Sendable {
        /// Data or end of stream to read (also an error or a hang-up: the next read tells which).
        case readable
        /// Room to write (also an error or a hang-up: the next write tells which).
        case writable
    }

    private enum Outcome {
        case ready, deadlinePassed, cancelled
    }

    private struct Waiter {
        let descriptor: Int32
        let events: Int16
        let deadline: ContinuousClock.Instant
        let continuation: CheckedContinuation<Outcome, Never>
    }

    private struct State {
        var waiters: [UInt64: Waiter] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Mutex(State())
    /// A pipe whose read end is in the poll set, written to when a waiter comes: it may have a
    /// nearer deadline, and its descriptor is not in the running `poll`. Both ends non-blocking.
    private let wakeup: (read: Int32, write: Int32)

    private init() {
        var ends: [Int32] = [0, 0]
        precondition(pipe(&ends) == 0, "pipe: \(String(cString: strerror(errno)))")
        for end in ends {
            _ = fcntl(end, F_SETFL, fcntl(end, F_GETFL) | O_NONBLOCK)
            _ = fcntl(end, F_SETFD, FD_CLOEXEC)
        }
        wakeup = (ends[0], ends[1])
        let thread = Thread { [self] in run() }
        thread.name = "TributaryTesting.Poller"
        thread.start()
    }

    /// Suspends until `descriptor` is ready for `readiness` (true) or `deadline` passes first
    /// (false). Throws `CancellationError` when the waiting task is cancelled. A descriptor that
    /// is ready already returns at once, without a trip through the poll thread and back onto
    /// the pool (a connect on loopback is complete before `connect` returns `EINPROGRESS`, and a
    /// test must not give the server idle time between connecting and sending its request). The
    /// descriptor must stay open until this returns.
    public func wait(for readiness: Readiness, on descriptor: Int32, until deadline: ContinuousClock.Instant) async throws -> Bool {
        let events = Int16(readiness == .readable ? POLLIN : POLLOUT)
        var immediate = pollfd(fd: descriptor, events: events, revents: 0)
        if poll(&immediate, 1, 0) > 0 { return true }
        let id = state.withLock { state in
            state.nextID += 1
            return state.nextID
        }
        let outcome = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                state.withLock { state in
                    state.waiters[id] = Waiter(descriptor: descriptor, events: events, deadline: deadline, continuation: continuation)
                }
                wake()
                // A cancellation that came before the waiter was registered found nothing to resume.
                if Task.isCancelled { resume(id, with: .cancelled) }
            }
        } onCancel: {
            resume(id, with: .cancelled)
        }
        switch outcome {
        case .ready: return true
        case .deadlinePassed: return false
        case .cancelled: throw CancellationError()
        }
    }

    /// Resumes waiter `id` unless the poll thread or a cancellation has already done so.
    private func resume(_ id: UInt64, with outcome: Outcome) {
        state.withLock { $0.waiters.removeValue(forKey: id) }?.continuation.resume(returning: outcome)
    }

    /// A full pipe already holds a wake-up, so a write that would block is dropped.
    private func wake() {
        var byte: UInt8 = 1
        _ = Glibc.write(wakeup.write, &byte, 1)
    }

    private func run() -> Never {
        while true {
            let waiting = state.withLock { state in state.waiters.map { (id: $0.key, waiter: $0.value) } }
            var descriptors = [pollfd(fd: wakeup.read, events: Int16(POLLIN), revents: 0)]
            descriptors += waiting.map { pollfd(fd: $0.waiter.descriptor, events: $0.waiter.events, revents: 0) }
            let nearest = waiting.map(\.waiter.deadline).min()
            let result = poll(&descriptors, nfds_t(descriptors.count), nearest.map(Self.milliseconds(until:)) ?? -1)
            if result < 0 && errno != EINTR { fatalError("poll: \(String(cString: strerror(errno)))") }
            if descriptors[0].revents != 0 {
                var drained = [UInt8](repeating: 0, count: 512)
                while Glibc.read(wakeup.read, &drained, drained.count) > 0 {}
            }
            let now = ContinuousClock.now
            for (index, entry) in waiting.enumerated() {
                if descriptors[index + 1].revents != 0 {
                    resume(entry.id, with: .ready)
                } else if entry.waiter.deadline <= now {
                    resume(entry.id, with: .deadlinePassed)
                }
            }
        }
    }

    /// A `poll` timeout that does not wake before `deadline` (rounded up to whole milliseconds).
    private static func milliseconds(until deadline: ContinuousClock.Instant) -> Int32 {
        let (seconds, attoseconds) = (deadline - .now).components
        guard seconds >= 0, seconds > 0 || attoseconds > 0 else { return 0 }
        let milliseconds = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: milliseconds)
    }
}
