public import OpenCombine

extension Publishers {

    /// A publisher that runs a new upstream publisher at once, then again each time a signal
    /// emits, republishing the latest one's outputs (an earlier one still running is
    /// cancelled).
    ///
    /// This is ``Publishers/Publish`` with one activation up front: load now, reload on demand.
    ///
    ///     signal: ---------x-----------
    ///     output: --1--2-----1--2--     (makePublisher() = --1--2-|)
    ///
    ///     let groups = Publishers.PublishAndRepeat(onOutputFrom: trigger.signal(activatedBy: "reload")) {
    ///         api.groups()
    ///     }
    ///
    /// Demand, completion and failure follow ``Publishers/Publish``.
    public struct PublishAndRepeat<Signal: Publisher, Upstream: Publisher>: Publisher
        where Signal.Failure == Never
    {
        /// The type of the values this publisher emits.
        public typealias Output = Upstream.Output
        /// The type of the error this publisher may fail with.
        public typealias Failure = Upstream.Failure

        /// The publisher whose outputs start a new upstream after the first one.
        public let signal: Signal
        /// Makes a new upstream.
        public let makePublisher: () -> Upstream

        /// Creates a publisher that runs `makePublisher()` now and anew on every output of
        /// `signal`.
        ///
        ///     let groups = Publishers.PublishAndRepeat(onOutputFrom: reloadSignal) { api.groups() }
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
                .map { _ in () }
                .prepend(())
                .setFailureType(to: Failure.self)
                .flatMapLatest { _ in makePublisher() }
                .receive(subscriber: subscriber)
        }
    }
}
