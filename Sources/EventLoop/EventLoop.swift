import CLibevent
import Glibc
import Synchronization

/// One libevent `event_base` and the thread that runs it.
///
/// Everything Tributary does happens on an event loop: libevent's HTTP server and client
/// callbacks, OpenCombine subscriptions and timers. Objects that live on a loop (servers,
/// requests, upstream calls, timers) are *loop-confined*: create, use and drop them on the
/// loop's thread only, which is why pipeline code needs no locks. Two members are safe from
/// any thread: ``execute(_:)`` and ``stop()``; use them to hand work to a loop.
///
/// ```swift
/// let loop = try EventLoop()
/// let timer = LoopTimer(loop: loop) { print("tick") }
/// timer.schedule(after: .milliseconds(100))
/// try loop.run()          // returns after `loop.stop()`
/// ```
///
/// The loop owns its `event_base`; everything created on it holds the loop strongly, so the
/// base is freed last, after every event that refers to it.
public final class EventLoop: @unchecked Sendable {
    /// The `event_base`. Loop-confined except for the thread-safe calls libevent documents
    /// (`event_active`, `event_base_loopbreak`) once pthreads support is enabled. Visible to
    /// the package's other modules that attach C libraries to the loop (Redis: hiredis' adapter).
    package let base: OpaquePointer

    /// Work handed over by ``execute(_:)``; drained on the loop by the `wakeup` event.
    private let submitted = Mutex<[Job]>([])
    private var wakeup: OpaquePointer?
    private let owner = Mutex<pthread_t>(pthread_self())
    private let running = Atomic<Bool>(false)

    /// One-shot timers that keep themselves alive until they fire (``schedule(after:_:)``),
    /// held here so they stay reachable and are freed with the loop if they never fire.
    var selfRetainedTimers: [ObjectIdentifier: LoopTimer] = [:]

    /// Work submitted from any thread: only `Sendable` closures may cross threads.
    private struct Job: @unchecked Sendable {
        let run: () -> Void
    }

    /// Creates a loop owned by the calling thread until ``run()`` is called elsewhere.
    public init() throws(LibeventError) {
        Self.enableThreading
        base = try Self.makeBase()
        let context = Unmanaged.passUnretained(self).toOpaque()
        wakeup = event_new(base, -1, 0, { _, _, context in
            Unmanaged<EventLoop>.fromOpaque(context!).takeUnretainedValue().drainSubmitted()
        }, context)
        if wakeup == nil {
            event_base_free(base)
            throw LibeventError(call: "event_new")
        }
    }

    deinit {
        selfRetainedTimers.removeAll()
        if let wakeup { event_free(wakeup) }
        event_base_free(base)
    }

    /// libevent locks (pthreads) must be enabled before the first `event_base` exists, so
    /// that ``execute(_:)`` and ``stop()`` may wake a loop from another thread.
    private static let enableThreading: Void = {
        _ = evthread_use_pthreads()
        signal(SIGPIPE, SIG_IGN)
    }()

    /// An epoll base that batches interest changes (EPOLL_USE_CHANGELIST): evhttp enables and
    /// disables reading and writing several times per request, and the changelist turns those
    /// into at most one `epoll_ctl` per file descriptor and loop turn.
    private static func makeBase() throws(LibeventError) -> OpaquePointer {
        guard let config = event_config_new() else { throw LibeventError(call: "event_config_new") }
        defer { event_config_free(config) }
        event_config_set_flag(config, Int32(EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST.rawValue))
        return try LibeventError.unwrap(event_base_new_with_config(config), "event_base_new_with_config")
    }

    /// Runs the loop on the calling thread until ``stop()``; it keeps running with nothing
    /// to do, waiting for work from ``execute(_:)``.
    public func run() throws(LibeventError) {
        owner.withLock { $0 = pthread_self() }
        running.store(true, ordering: .sequentiallyConsistent)
        let result = event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY)
        running.store(false, ordering: .sequentiallyConsistent)
        try LibeventError.check(result, "event_base_loop")
    }

    /// Whether ``run()`` is running the loop now (work handed to a loop that is not may never
    /// run). Safe from any thread.
    public var isRunning: Bool { running.load(ordering: .sequentiallyConsistent) }

    /// Drops the work still queued once ``run()`` has returned for good, on the loop's thread.
    /// A job holds what it captured, and that often holds this loop (a connection dropped on
    /// a later turn, a failure reported on one): left queued, it would keep the loop and all
    /// of it alive in a cycle. Dropping a job can queue another (a `deinit` that hands work
    /// over), so it drops until nothing is left.
    public func discardPendingWork() {
        while true {
            let jobs = submitted.withLock { jobs in
                defer { jobs.removeAll() }
                return jobs
            }
            if jobs.isEmpty { return }
        }
    }

    /// Makes ``run()`` return after the callback that is running now. Safe from any thread.
    public func stop() {
        event_base_loopbreak(base)
    }

    /// Whether the caller is on the thread that runs (or, before ``run()``, created) the loop.
    public var isCurrent: Bool {
        owner.withLock { pthread_equal($0, pthread_self()) != 0 }
    }

    /// Runs `work` on the loop's thread soon after. Safe from any thread; jobs run in order.
    public func execute(_ work: @escaping @Sendable () -> Void) {
        enqueue(Job(run: work))
    }

    /// Runs `work` on a later turn of the loop, never inside the current call. Loop-confined.
    ///
    /// Use it to leave a libevent callback before acting on the object that called back
    /// (freeing an `evhttp_connection` inside its own callback is undefined).
    public func deferred(_ work: @escaping () -> Void) {
        enqueue(Job(run: work))
    }

    private func enqueue(_ job: Job) {
        let wasEmpty = submitted.withLock { jobs in
            jobs.append(job)
            return jobs.count == 1
        }
        if wasEmpty { event_active(wakeup, 0, 0) }
    }

    private func drainSubmitted() {
        let jobs = submitted.withLock { jobs in
            defer { jobs.removeAll(keepingCapacity: true) }
            return jobs
        }
        for job in jobs { job.run() }
    }
}
