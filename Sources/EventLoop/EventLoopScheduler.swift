import CLibevent
import Glibc
public import OpenCombine

/// An OpenCombine `Scheduler` that runs actions on an ``EventLoop``, so time operators
/// (`debounce`, `throttle`, `delay`, `timeout`, `receive(on:)`) work inside Tributary's
/// single-threaded pipelines. Time is the monotonic clock.
///
/// Loop-confined: schedule from the loop's thread (pipelines run there). To hand work to a
/// loop from another thread, use ``EventLoop/execute(_:)``.
///
/// ```swift
/// let scheduler = EventLoopScheduler(loop: loop)
/// query.debounce(for: .milliseconds(300), scheduler: scheduler)
///      .removeDuplicates()
///      .flatMapLatest(search)
/// ```
public struct EventLoopScheduler: Scheduler {
    public let loop: EventLoop

    public init(loop: EventLoop) {
        self.loop = loop
    }

    /// A point on the monotonic clock, in nanoseconds.
    public struct SchedulerTimeType: Strideable, Hashable, Sendable {
        public let nanoseconds: Int64

        public init(nanoseconds: Int64) {
            self.nanoseconds = nanoseconds
        }

        public func distance(to other: Self) -> Stride {
            Stride(nanoseconds: other.nanoseconds - nanoseconds)
        }

        public func advanced(by stride: Stride) -> Self {
            Self(nanoseconds: nanoseconds + stride.nanoseconds)
        }

        /// A signed interval between two scheduler times, in nanoseconds.
        public struct Stride: SchedulerTimeIntervalConvertible, Comparable, SignedNumeric,
            ExpressibleByFloatLiteral, Hashable, Sendable
        {
            public var nanoseconds: Int64

            public init(nanoseconds: Int64) {
                self.nanoseconds = nanoseconds
            }

            public init(_ duration: Duration) {
                let (seconds, attoseconds) = duration.components
                nanoseconds = seconds * 1_000_000_000 + attoseconds / 1_000_000_000
            }

            public var duration: Duration { .nanoseconds(nanoseconds) }

            public static func seconds(_ s: Int) -> Self { Self(nanoseconds: Int64(s) * 1_000_000_000) }
            public static func seconds(_ s: Double) -> Self { Self(nanoseconds: Int64(s * 1e9)) }
            public static func milliseconds(_ ms: Int) -> Self { Self(nanoseconds: Int64(ms) * 1_000_000) }
            public static func microseconds(_ us: Int) -> Self { Self(nanoseconds: Int64(us) * 1_000) }
            public static func nanoseconds(_ ns: Int) -> Self { Self(nanoseconds: Int64(ns)) }

            public init(integerLiteral value: Int64) { self = .seconds(Int(value)) }
            public init(floatLiteral value: Double) { self = .seconds(value) }
            public init?<T: BinaryInteger>(exactly source: T) {
                guard let seconds = Int(exactly: source) else { return nil }
                self = .seconds(seconds)
            }

            public var magnitude: Self { Self(nanoseconds: nanoseconds.magnitude > Int64.max.magnitude ? .max : abs(nanoseconds)) }

            public static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
            public static func + (lhs: Self, rhs: Self) -> Self { Self(nanoseconds: lhs.nanoseconds + rhs.nanoseconds) }
            public static func - (lhs: Self, rhs: Self) -> Self { Self(nanoseconds: lhs.nanoseconds - rhs.nanoseconds) }
            public static func * (lhs: Self, rhs: Self) -> Self { Self(nanoseconds: lhs.nanoseconds * rhs.nanoseconds) }
            public static func += (lhs: inout Self, rhs: Self) { lhs = lhs + rhs }
            public static func -= (lhs: inout Self, rhs: Self) { lhs = lhs - rhs }
            public static func *= (lhs: inout Self, rhs: Self) { lhs = lhs * rhs }
        }
    }

    public typealias SchedulerOptions = Never

    public var now: SchedulerTimeType {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return SchedulerTimeType(nanoseconds: Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec))
    }

    /// libevent timers have microsecond resolution.
    public var minimumTolerance: SchedulerTimeType.Stride { .microseconds(1) }

    public func schedule(options: Never?, _ action: @escaping () -> Void) {
        loop.deferred(action)
    }

    public func schedule(
        after date: SchedulerTimeType, tolerance: SchedulerTimeType.Stride, options: Never?,
        _ action: @escaping () -> Void
    ) {
        LoopTimer.fireAndForget(loop: loop, after: now.distance(to: date).duration, action)
    }

    public func schedule(
        after date: SchedulerTimeType, interval: SchedulerTimeType.Stride,
        tolerance: SchedulerTimeType.Stride, options: Never?, _ action: @escaping () -> Void
    ) -> any Cancellable {
        RepeatingAction(loop: loop, firstIn: now.distance(to: date).duration, every: interval.duration, action)
    }
}

/// A repeating scheduled action: first at a date, then every interval, until cancelled.
///
/// Like Combine's schedulers, the action keeps repeating when the returned `Cancellable` is
/// dropped: the timer is held by the loop until ``cancel()``.
private final class RepeatingAction: Cancellable {
    private let loop: EventLoop
    private weak var timer: LoopTimer?

    init(loop: EventLoop, firstIn delay: Duration, every interval: Duration, _ action: @escaping () -> Void) {
        self.loop = loop
        let timer = LoopTimer(loop: loop, action: action)
        loop.selfRetainedTimers[ObjectIdentifier(timer)] = timer
        timer.schedule(after: delay, thenEvery: interval)
        self.timer = timer
    }

    func cancel() {
        guard let timer else { return }
        timer.cancel()
        loop.selfRetainedTimers[ObjectIdentifier(timer)] = nil
    }
}
