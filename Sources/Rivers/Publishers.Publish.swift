public import OpenCombine

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
    /// Demand follows ``Publishers/FlatMapLatest``: the signal is asked for `.unlimited`,
    /// the current upstream for exactly what downstream asks for. It finishes when the signal
    /// finished and the current upstream (if any) finished; an upstream failure fails it.
    public struct Publish<Signal: Publisher, Upstream: Publisher>: Publisher
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

        /// Creates a publisher that runs `makePublisher()` anew on every output of `signal`.
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
            let makePublisher = self.makePublisher
            signal
                .setFailureType(to: Failure.self)
                .flatMapLatest { _ in makePublisher() }
                .receive(subscriber: subscriber)
        }
    }
}
