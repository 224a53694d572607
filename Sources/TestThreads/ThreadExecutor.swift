import Foundation
import Glibc

/// A task executor with one thread of its own, for test code that computes (or blocks) for a
/// long while without suspending.
///
/// Why: Swift's cooperative pool has one thread per core, two on the machines this suite must
/// pass on. A test that holds a pool thread for seconds (a thousand rounds of diffing, every
/// byte at every position of a word, an RSA key made) leaves one thread, or none, for every
/// other test's awaited steps: their answers arrive and wait, and a test that measures a
/// service's timing (a token that expires, a failover) measures the queue. On a thread of its
/// own such a test competes for the CPU as any thread does, and the pool stays free.
///
/// ```swift
/// let executor = ThreadExecutor()
/// defer { executor.shutdown() }
/// try await withTaskExecutorPreference(executor) { try heavyWork() }
/// ```
///
/// Jobs run in the order they came. After ``shutdown()`` the thread runs what is queued and
/// ends; jobs that come later go to the global concurrent executor.
public final class ThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []
    private var isShutDown = false

    /// What the thread is called, as `ps`, `perf` and `gdb` show it: a pool thread holding a
    /// test shows as the pool's, this one by this name.
    public static let threadName = "TestThreads"

    public init() {
        let thread = Thread { [self] in
            Self.nameThisThread()
            run()
        }
        // The stack a test's deepest recursion gets on the pool (JSON nested a few thousand
        // levels deep, recursive diffs).
        thread.stackSize = 8 << 20
        thread.start()
    }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        if isShutDown {
            condition.unlock()
            globalConcurrentExecutor.enqueue(job)
            return
        }
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Ends the thread once the jobs queued now have run.
    public func shutdown() {
        condition.lock()
        isShutDown = true
        condition.signal()
        condition.unlock()
    }

    /// Linux's name of the calling thread, `/proc/thread-self/comm` (the Glibc module does not
    /// import `pthread_setname_np`, and Foundation's `Thread.name` does not set it).
    private static func nameThisThread() {
        let descriptor = open("/proc/thread-self/comm", O_WRONLY)
        guard descriptor >= 0 else { return }
        _ = threadName.withCString { write(descriptor, $0, strlen($0)) }
        close(descriptor)
    }

    private func run() {
        while true {
            condition.lock()
            while jobs.isEmpty && !isShutDown { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            condition.unlock()
            job.runSynchronously(on: asUnownedTaskExecutor())
        }
    }
}

/// Runs `body` on a thread of its own (``ThreadExecutor``), not on the cooperative pool: for
/// work in a test or a test helper that computes or blocks for more than a few milliseconds
/// without suspending. Task-locals, cancellation and `#expect` work as anywhere in the test.
public func offThePool<Result, Failure: Error>(
    isolation: isolated (any Actor)? = #isolation, _ body: () async throws(Failure) -> Result
) async throws(Failure) -> Result {
    let executor = ThreadExecutor()
    defer { executor.shutdown() }
    return try await withTaskExecutorPreference(executor, isolation: isolation, operation: body)
}
