import CoreMetrics
import Synchronization

/// Stops calling an upstream that keeps failing: after ``Settings/failures`` consecutive
/// failed calls (no connection, a timeout, a 5xx) every call fails at once for
/// ``Settings/openFor``; then ONE call, the probe, is let through: its success closes the
/// circuit, its failure opens it for another ``Settings/openFor``. The other calls meanwhile
/// still fail at once, so a dead upstream costs one call per `openFor`, not one per request.
///
/// ```
/// closed ──failures in a row──▶ open ──openFor passed, next call──▶ half-open (the probe runs)
///   ▲                            ▲                                      │
///   └────── probe succeeded ─────┼──────────────────────────────────────┤
///                                └────────── probe failed ──────────────┘
/// ```
///
/// One breaker per upstream serves every worker of the process (workers are threads with
/// loops of their own), so its state sits behind a `Mutex`. Outcomes that say nothing about
/// the upstream's health count neither way: a cancelled call, a call refused by a full local
/// pool (see ``Outcome/neutral``). A cancelled or refused probe hands the probe on to the
/// next call.
///
/// The gauge `tributary_upstream_circuit_state{upstream}` shows the state: 0 closed, 1 open,
/// 2 half-open. `onTransition` hears once of each opening and each closing (the service logs
/// them; half-open, and a probe handed on, are not news).
public final class CircuitBreaker: Sendable {
    /// `upstreams.<name>.circuitBreaker`.
    public struct Settings: Sendable, Equatable {
        /// Consecutive failed calls that open the circuit; 0 turns the breaker off.
        public var failures: Int
        /// How long an open circuit fails calls before it lets a probe through.
        public var openFor: Duration

        public init(failures: Int = 5, openFor: Duration = .seconds(10)) {
            self.failures = failures
            self.openFor = openFor
        }

        public var isEnabled: Bool { failures > 0 }
    }

    /// The states, with the gauge's values.
    public enum State: Int, Sendable {
        case closed = 0
        case open = 1
        case halfOpen = 2
    }

    /// Whether a call may go out.
    public enum Admission: Sendable, Equatable {
        /// Call; report the outcome with ``record(_:of:)`` and this ticket.
        case admitted(Ticket)
        /// Fail at once: the circuit is open. `retryAfter` is the time until the probe is due.
        case rejected(retryAfter: Duration)
    }

    /// What an admitted call reports back with: whether it is the probe, and which closed
    /// period admitted it (a late outcome of a call admitted before the circuit last changed
    /// counts for nothing).
    public struct Ticket: Sendable, Equatable {
        let isProbe: Bool
        let epoch: UInt64
    }

    /// What a call's outcome says about the upstream.
    public enum Outcome: Sendable {
        /// It answered (any status below 500).
        case success
        /// No connection, a timeout, a broken answer or a 5xx.
        case failure
        /// Nothing either way: cancelled, refused by a full local pool, or too large an answer.
        case neutral
    }

    /// A change of state worth a log line: the circuit opened (after failures in a row, or a
    /// failed probe) or closed (a probe succeeded). Half-open, and a probe handed on, are not.
    public struct Transition: Sendable {
        public let upstream: String
        public let from: State
        public let to: State
    }

    public let upstream: String
    public let settings: Settings
    private let gauge: Gauge
    private let onTransition: @Sendable (Transition) -> Void
    private let state = Mutex(Inner())

    private struct Inner {
        var state: State = .closed
        var consecutiveFailures = 0
        /// When an open circuit lets its probe through.
        var probeDue = ContinuousClock.now
        /// Bumped on every change of state: outcomes of calls from an earlier one are ignored.
        var epoch: UInt64 = 0
    }

    public init(upstream: String, settings: Settings, onTransition: @escaping @Sendable (Transition) -> Void = { _ in }) {
        self.upstream = upstream
        self.settings = settings
        self.onTransition = onTransition
        gauge = Gauge(label: "tributary_upstream_circuit_state", dimensions: [("upstream", upstream)])
        gauge.record(State.closed.rawValue)
    }

    /// The current state.
    public var current: State { state.withLock { $0.state } }

    /// Asks to make a call now: admitted (possibly as the probe) or rejected.
    public func admit(now: ContinuousClock.Instant = .now) -> Admission {
        guard settings.isEnabled else { return .admitted(Ticket(isProbe: false, epoch: 0)) }
        return state.withLock { inner in
            switch inner.state {
            case .closed:
                return .admitted(Ticket(isProbe: false, epoch: inner.epoch))
            case .open where now >= inner.probeDue:
                change(&inner, to: .halfOpen)
                return .admitted(Ticket(isProbe: true, epoch: inner.epoch))
            case .open:
                return .rejected(retryAfter: inner.probeDue - now)
            case .halfOpen:
                return .rejected(retryAfter: .zero)
            }
        }
    }

    /// How long until the probe when a call made now would be rejected; nil when it would be
    /// admitted. Takes nothing: a retry loop asks this before waiting out its backoff.
    public func rejection(now: ContinuousClock.Instant = .now) -> Duration? {
        guard settings.isEnabled else { return nil }
        return state.withLock { inner in
            switch inner.state {
            case .closed: nil
            case .open: now >= inner.probeDue ? nil : inner.probeDue - now
            case .halfOpen: .zero
            }
        }
    }

    /// Reports how an admitted call ended.
    public func record(_ outcome: Outcome, of ticket: Ticket, now: ContinuousClock.Instant = .now) {
        guard settings.isEnabled else { return }
        state.withLock { inner in
            guard ticket.epoch == inner.epoch else { return }
            switch (inner.state, outcome) {
            case (.closed, .success):
                inner.consecutiveFailures = 0
            case (.closed, .failure):
                inner.consecutiveFailures += 1
                if inner.consecutiveFailures >= settings.failures {
                    inner.probeDue = now + settings.openFor
                    change(&inner, to: .open, announced: true)
                }
            case (.halfOpen, .success) where ticket.isProbe:
                inner.consecutiveFailures = 0
                change(&inner, to: .closed, announced: true)
            case (.halfOpen, .failure) where ticket.isProbe:
                inner.probeDue = now + settings.openFor
                change(&inner, to: .open, announced: true)
            case (.halfOpen, .neutral) where ticket.isProbe:
                // The probe told nothing: the next call probes instead.
                inner.probeDue = now
                change(&inner, to: .open)
            default:
                break
            }
        }
    }

    /// Under the lock, so the gauge and the log see the changes in the order they happened.
    private func change(_ inner: inout Inner, to next: State, announced: Bool = false) {
        let previous = inner.state
        inner.state = next
        inner.epoch &+= 1
        gauge.record(next.rawValue)
        if announced { onTransition(Transition(upstream: upstream, from: previous, to: next)) }
    }
}
