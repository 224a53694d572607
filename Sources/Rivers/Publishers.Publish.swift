public import OpenCombine

// MARK: - Publisher

extension Publishers {

    /// A publisher that makes a new upstream publisher each time a signal emits and
    /// republishes the latest one's outputs (an earlier one still running is cancelled).
    ///
    /// Nothing is published before the signal's first output. This is
    /// `signal.flatMapLatest { _ in makePublisher() }`: a reload button as a publisher.
    ///
    ///     signal: ----x---------x------
    ///     output: -----1--2------1--2--     (makePublisher() = --1--2-|)
    ///
    ///     let groups = Publishers.Publish(onOutputFrom: trigger.signal(activatedBy: "reload")) {
    ///         api.groups()
    ///     }
    ///
    /// One operator with ``PublishAndRepeat``: ``PublishOnSignal``, whose demand, completion
    /// and failure it follows.
    public typealias Publish<Signal: Publisher, Upstream: Publisher> =
        PublishOnSignal<Signal, Upstream, FirstRunOnSignal> where Signal.Failure == Never

    /// A publisher that runs a new upstream publisher at once, then again each time a signal
    /// emits, republishing the latest one's outputs (an earlier one still running is
    /// cancelled).
    ///
    /// This is ``Publish`` with one activation up front: load now, reload on demand.
    ///
    ///     signal: ---------x-----------
    ///     output: --1--2-----1--2--     (makePublisher() = --1--2-|)
    ///
    ///     let groups = Publishers.PublishAndRepeat(onOutputFrom: trigger.signal(activatedBy: "reload")) {
    ///         api.groups()
    ///     }
    ///
    /// One operator with ``Publish``: ``PublishOnSignal``, whose demand, completion and failure
    /// it follows.
    public typealias PublishAndRepeat<Signal: Publisher, Upstream: Publisher> =
        PublishOnSignal<Signal, Upstream, FirstRunAtSubscription> where Signal.Failure == Never

    /// A publisher that runs a new upstream publisher on every output of a signal (and, as
    /// ``PublishAndRepeat``, once at subscription) and republishes the latest one's outputs;
    /// spelled ``Publish`` or ``PublishAndRepeat`` by when it runs the first one.
    ///
    ///     signal:           ------x-------x------
    ///     Publish:          -------1--2----1--2--     (makePublisher() = -1--2|)
    ///     PublishAndRepeat: -1--2--1--2----1--2--
    ///
    ///     let groups = Publishers.PublishAndRepeat(onOutputFrom: reloadSignal) { api.groups() }
    ///
    /// Demand follows ``Publishers/FlatMapLatest``: the signal is asked for `.unlimited`,
    /// the current upstream for exactly what downstream asks for. It finishes when the signal
    /// finished and the current upstream (if any) finished; an upstream failure fails it.
    public struct PublishOnSignal<Signal: Publisher, Upstream: Publisher, First: FirstRun>: Publisher
        where Signal.Failure == Never
    {
        /// The type of the values this publisher emits.
        public typealias Output = Upstream.Output
        /// The type of the error this publisher may fail with.
        public typealias Failure = Upstream.Failure

        /// The publisher whose outputs start a new upstream.
        public let signal: Signal
        /// Makes a new upstream.
        public let makePublisher: () -> Upstream

        /// Creates a publisher that runs `makePublisher()` anew on every output of `signal`
        /// (and, as ``PublishAndRepeat``, now).
        ///
        ///     let reloads = Publishers.Publish(onOutputFrom: reloadSignal) { api.groups() }
        public init(onOutputFrom signal: Signal, _ makePublisher: @escaping () -> Upstream) {
            self.signal = signal
            self.makePublisher = makePublisher
        }

        /// Attaches `subscriber`; called by `subscribe(_:)`, not directly.
        ///
        ///     publisher.subscribe(subscriber) // calls receive(subscriber:)
        public func receive<Downstream: Subscriber>(subscriber: Downstream)
            where Downstream.Input == Output, Downstream.Failure == Failure
        {
            if First.runsAtSubscription {
                run(onOutputFrom: signal.map { _ in () }.prepend(()), for: subscriber)
            } else {
                run(onOutputFrom: signal, for: subscriber)
            }
        }

        /// Runs a new upstream on every output of `activations`, for `subscriber`. The signal
        /// of ``Publish`` goes here as it is, so that it pays for no `map` or `prepend`.
        private func run<Activations: Publisher, Downstream: Subscriber>(
            onOutputFrom activations: Activations,
            for subscriber: Downstream
        ) where Activations.Failure == Never, Downstream.Input == Output, Downstream.Failure == Failure {
            let makePublisher = self.makePublisher
            activations
                .setFailureType(to: Failure.self)
                .flatMapLatest { _ in makePublisher() }
                .receive(subscriber: subscriber)
        }
    }
}

// MARK: - First run

/// When ``Publishers/PublishOnSignal`` runs its first upstream: the type parameter that
/// makes it ``Publishers/Publish`` or ``Publishers/PublishAndRepeat``.
///
///     let spelled: Publishers.PublishOnSignal<Signal, Upstream, FirstRunAtSubscription>
public protocol FirstRun {
    /// Whether the first upstream runs when a subscriber subscribes, before any signal.
    static var runsAtSubscription: Bool { get }
}

/// The first upstream runs at the signal's first output: ``Publishers/Publish``.
///
///     signal: -----x----   output: ------1--2-     (makePublisher() = -1--2|)
public enum FirstRunOnSignal: FirstRun {
    /// `false`: nothing runs before the signal.
    public static var runsAtSubscription: Bool { false }
}

/// The first upstream runs at subscription: ``Publishers/PublishAndRepeat``.
///
///     signal: -----x----   output: -1--2-1--2-     (makePublisher() = -1--2|)
public enum FirstRunAtSubscription: FirstRun {
    /// `true`: one run up front, before any signal.
    public static var runsAtSubscription: Bool { true }
}
