public import OpenCombine

/// A scheduler whose clock only moves when a test moves it, so time-based pipelines are
/// tested without sleeping.
///
/// Time starts at zero. One marble frame (one character of a marble line) is one virtual
/// second: ``VirtualTimeScheduler/frame``. Actions scheduled for the same instant run in the
/// order they were scheduled.
///
///     let scheduler = VirtualTimeScheduler()
///     let input = scheduler.hotPublisher("-a--b-|")
///     let recorder = input.debounce(for: .seconds(2), scheduler: scheduler).record(on: scheduler)
///     scheduler.run()
///     #expect(recorder.timeline == Timeline("---a---(b|)"))
public final class VirtualTimeScheduler: Scheduler, CustomStringConvertible {

    /// A point in virtual time, in nanoseconds since the scheduler was created.
    public struct SchedulerTimeType: Strideable, Hashable, Sendable, CustomStringConvertible {
        /// Nanoseconds since the scheduler was created.
        public var nanoseconds: Int64

        /// Creates the instant `nanoseconds` after the start.
        ///
        ///     let start = VirtualTimeScheduler.SchedulerTimeType(nanoseconds: 0)
        public init(nanoseconds: Int64) {
            self.nanoseconds = nanoseconds
        }

        /// The instant at the start of marble frame `frame`.
        ///
        ///     scheduler.advance(to: .frame(3))
        public static func frame(_ frame: Int) -> SchedulerTimeType {
            SchedulerTimeType(nanoseconds: Int64(frame) * VirtualTimeScheduler.frame.nanoseconds)
        }

        /// The marble frame this instant falls in.
        public var frame: Int {
            Int(nanoseconds / VirtualTimeScheduler.frame.nanoseconds)
        }

        /// The stride from this instant to `other` (Strideable requirement).
        public func distance(to other: SchedulerTimeType) -> Stride {
            Stride(nanoseconds: other.nanoseconds - nanoseconds)
        }

        /// This instant moved by `stride` (Strideable requirement).
        public func advanced(by stride: Stride) -> SchedulerTimeType {
            SchedulerTimeType(nanoseconds: nanoseconds + stride.nanoseconds)
        }

        /// A short description for test failure messages.
        public var description: String { "t=\(nanoseconds)ns" }

        /// A span of virtual time, in nanoseconds.
        ///
        ///     let twoFrames: VirtualTimeScheduler.SchedulerTimeType.Stride = .frames(2)
        public struct Stride: SchedulerTimeIntervalConvertible, Comparable, SignedNumeric, Hashable,
            Sendable, CustomStringConvertible
        {
            /// The span in nanoseconds.
            public var nanoseconds: Int64

            /// Creates a span of `nanoseconds`.
            public init(nanoseconds: Int64) {
                self.nanoseconds = nanoseconds
            }

            /// Creates a span of `value` nanoseconds.
            public init(integerLiteral value: Int64) {
                self.init(nanoseconds: value)
            }

            /// Creates a span of exactly `source` nanoseconds (Numeric requirement).
            public init?<Source: BinaryInteger>(exactly source: Source) {
                guard let nanoseconds = Int64(exactly: source) else { return nil }
                self.init(nanoseconds: nanoseconds)
            }

            /// The absolute span (Numeric requirement).
            public var magnitude: Stride { Stride(nanoseconds: Int64(nanoseconds.magnitude)) }

            /// A span of `count` marble frames.
            public static func frames(_ count: Int) -> Stride {
                Stride(nanoseconds: Int64(count) * VirtualTimeScheduler.frame.nanoseconds)
            }

            /// Unit constructors (SchedulerTimeIntervalConvertible requirements).
            public static func seconds(_ s: Int) -> Stride { Stride(nanoseconds: Int64(s) * 1_000_000_000) }
            public static func seconds(_ s: Double) -> Stride { Stride(nanoseconds: Int64(s * 1e9)) }
            public static func milliseconds(_ ms: Int) -> Stride { Stride(nanoseconds: Int64(ms) * 1_000_000) }
            public static func microseconds(_ us: Int) -> Stride { Stride(nanoseconds: Int64(us) * 1_000) }
            public static func nanoseconds(_ ns: Int) -> Stride { Stride(nanoseconds: Int64(ns)) }

            /// Arithmetic and ordering on spans (Numeric and Comparable requirements).
            public static func < (lhs: Stride, rhs: Stride) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
            public static func + (lhs: Stride, rhs: Stride) -> Stride { Stride(nanoseconds: lhs.nanoseconds + rhs.nanoseconds) }
            public static func - (lhs: Stride, rhs: Stride) -> Stride { Stride(nanoseconds: lhs.nanoseconds - rhs.nanoseconds) }
            public static func * (lhs: Stride, rhs: Stride) -> Stride { Stride(nanoseconds: lhs.nanoseconds * rhs.nanoseconds) }
            public static func += (lhs: inout Stride, rhs: Stride) { lhs = lhs + rhs }
            public static func -= (lhs: inout Stride, rhs: Stride) { lhs = lhs - rhs }
            public static func *= (lhs: inout Stride, rhs: Stride) { lhs = lhs * rhs }

            /// A short description for test failure messages.
            public var description: String { "\(nanoseconds)ns" }
        }
    }

    /// This scheduler takes no options.
    public typealias SchedulerOptions = Never

    /// The duration of one marble frame: one virtual second.
    public static let frame = SchedulerTimeType.Stride.seconds(1)

    private struct Action {
        let time: SchedulerTimeType
        let sequence: Int
        let run: () -> Void
    }

    private var actions: [Action] = []
    private var nextSequence = 0

    /// The current virtual time.
    public private(set) var now = SchedulerTimeType(nanoseconds: 0)

    /// The current marble frame.
    public var currentFrame: Int { now.frame }

    /// Virtual time has no tolerance.
    public var minimumTolerance: SchedulerTimeType.Stride { .zero }

    /// How many actions wait to run.
    public var pendingActionCount: Int { actions.count }

    /// Creates a scheduler at time zero with nothing scheduled.
    ///
    ///     let scheduler = VirtualTimeScheduler()
    public init() {}

    /// A short description for test failure messages.
    public var description: String { "VirtualTimeScheduler(now: frame \(currentFrame), pending: \(actions.count))" }

    // MARK: Scheduler

    /// Runs `action` at the current instant, after what is already due (Scheduler requirement).
    public func schedule(options: Never?, _ action: @escaping () -> Void) {
        enqueue(at: now, action)
    }

    /// Runs `action` at `date` (Scheduler requirement).
    public func schedule(
        after date: SchedulerTimeType,
        tolerance: SchedulerTimeType.Stride,
        options: Never?,
        _ action: @escaping () -> Void
    ) {
        enqueue(at: max(date, now), action)
    }

    /// Runs `action` at `date`, then every `interval`, until cancelled (Scheduler requirement).
    public func schedule(
        after date: SchedulerTimeType,
        interval: SchedulerTimeType.Stride,
        tolerance: SchedulerTimeType.Stride,
        options: Never?,
        _ action: @escaping () -> Void
    ) -> any Cancellable {
        let token = RepeatToken()
        scheduleRepeating(at: max(date, now), interval: interval, token: token, action)
        return AnyCancellable { token.isCancelled = true }
    }

    // MARK: Driving time

    /// Schedules `action` at the start of marble frame `frame`.
    ///
    ///     scheduler.schedule(atFrame: 3) { subject.send(1) }
    public func schedule(atFrame frame: Int, _ action: @escaping () -> Void) {
        enqueue(at: max(.frame(frame), now), action)
    }

    /// Runs every action due up to and including `time`, in order, then sets the clock to `time`.
    ///
    ///     scheduler.advance(to: .frame(4))
    public func advance(to time: SchedulerTimeType) {
        while let next = actions.first, next.time <= time {
            actions.removeFirst()
            now = max(now, next.time)
            next.run()
        }
        now = max(now, time)
    }

    /// Moves the clock forward by `stride`, running what falls due.
    ///
    ///     scheduler.advance(by: .frames(2))
    public func advance(by stride: SchedulerTimeType.Stride) {
        advance(to: now.advanced(by: stride))
    }

    /// Runs the actions of the current instant and moves on to frame `frame`.
    ///
    ///     scheduler.advance(toFrame: 5)
    public func advance(toFrame frame: Int) {
        advance(to: .frame(frame))
    }

    /// Runs every scheduled action, including ones scheduled while running, until none is
    /// left. A repeating action would never let this end: at most `limit` actions run.
    ///
    ///     scheduler.run()
    public func run(limit: Int = 100_000) {
        var count = 0
        while let next = actions.first {
            precondition(count < limit, "VirtualTimeScheduler.run(): more than \(limit) actions; a repeating timer?")
            actions.removeFirst()
            now = max(now, next.time)
            next.run()
            count += 1
        }
    }

    // MARK: Private

    private final class RepeatToken {
        var isCancelled = false
    }

    private func scheduleRepeating(
        at time: SchedulerTimeType,
        interval: SchedulerTimeType.Stride,
        token: RepeatToken,
        _ action: @escaping () -> Void
    ) {
        enqueue(at: time) { [weak self] in
            guard !token.isCancelled else { return }
            action()
            self?.scheduleRepeating(at: time.advanced(by: interval), interval: interval, token: token, action)
        }
    }

    private func enqueue(at time: SchedulerTimeType, _ run: @escaping () -> Void) {
        let action = Action(time: time, sequence: nextSequence, run: run)
        nextSequence += 1
        let index = actions.firstIndex { ($0.time, $0.sequence) > (time, action.sequence) } ?? actions.endIndex
        actions.insert(action, at: index)
    }
}

extension VirtualTimeScheduler.SchedulerTimeType: Comparable {
    /// Orders instants (Comparable requirement).
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.nanoseconds < rhs.nanoseconds }
}
