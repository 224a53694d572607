public import OpenCombine

// MARK: - Operator

extension Publisher {

    /// Delays subscribing to this publisher until `signal` emits for the first time.
    ///
    /// Nothing upstream happens before the signal: no subscription, no request. When the
    /// signal emits, it is cancelled and this publisher is subscribed; from then on values,
    /// demand and completion pass straight through. If the signal finishes without emitting,
    /// this publisher is never subscribed and the result never completes.
    ///
    ///     signal:   -----x---x--
    ///     upstream:      (subscribed at x) -1-2-|
    ///     output:   ------1-2-|
    ///
    ///     let nextPage = api.medias(topic: id, page: cursor)
    ///         .wait(untilOutputFrom: trigger.signal(activatedBy: id))
    ///
    /// Demand requested before the signal is kept and requested from this publisher as soon
    /// as it is subscribed. Cancelling cancels the signal or this publisher, whichever is
    /// active, exactly once.
    ///
    /// - Parameter signal: The publisher whose first output starts this one.
    /// - Returns: A ``Publishers/WaitUntilOutput``.
    public func wait<Signal: Publisher>(
        untilOutputFrom signal: Signal
    ) -> Publishers.WaitUntilOutput<Self, Signal> where Signal.Failure == Never {
        Publishers.WaitUntilOutput(upstream: self, signal: signal)
    }
}

// MARK: - Publisher

extension Publishers {

    /// A publisher that subscribes to its upstream only once a signal emitted.
    ///
    ///     signal:   -----x---x--
    ///     output:   ------1-2-|     (upstream -1-2-| subscribed at x)
    ///
    ///     let delayed = Publishers.WaitUntilOutput(upstream: loadPage(), signal: loadMore)
    public struct WaitUntilOutput<Upstream: Publisher, Signal: Publisher>: Publisher
        where Signal.Failure == Never
    {
        /// The type of the values this publisher emits.
        public typealias Output = Upstream.Output
        /// The type of the error this publisher may fail with.
        public typealias Failure = Upstream.Failure

        /// The publisher subscribed once the signal emitted.
        public let upstream: Upstream
        /// The publisher whose first output starts the upstream.
        public let signal: Signal

        /// Creates the operator; prefer `upstream.wait(untilOutputFrom: signal)`.
        ///
        ///     let delayed = Publishers.WaitUntilOutput(upstream: Just(1), signal: Just(()))
        public init(upstream: Upstream, signal: Signal) {
            self.upstream = upstream
            self.signal = signal
        }

        /// Attaches `subscriber`; called by `subscribe(_:)`, not directly.
        ///
        ///     publisher.subscribe(subscriber) // calls receive(subscriber:)
        public func receive<Downstream: Subscriber>(subscriber: Downstream)
            where Downstream.Input == Output, Downstream.Failure == Failure
        {
            let inner = Inner(downstream: subscriber, upstream: upstream)
            subscriber.receive(subscription: inner)
            inner.start(waitingFor: signal)
        }
    }
}

// MARK: - Subscription

extension Publishers.WaitUntilOutput {
    private final class Inner<Downstream: Subscriber>:
        Subscriber,
        Subscription,
        SourceOwner,
        CustomStringConvertible
        where Downstream.Input == Upstream.Output, Downstream.Failure == Upstream.Failure
    {
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure
        /// The one source besides the upstream: the signal.
        typealias SourceKey = Void
        typealias SourceOutput = Signal.Output
        typealias SourceFailure = Never

        private let lock = Lock.make()
        private let downstream: Downstream
        private var upstream: Upstream?
        private var state = WaitState.waiting(nil)
        /// Demand requested before the upstream subscription arrived.
        private var pendingDemand = Subscribers.Demand.none

        init(downstream: Downstream, upstream: Upstream) {
            self.downstream = downstream
            self.upstream = upstream
        }

        var description: String { "WaitUntilOutput" }

        func start(waitingFor signal: Signal) {
            lock.lock()
            guard case .waiting = state else {
                lock.unlock()
                return
            }
            lock.unlock()
            signal.subscribe(Source(self, key: ()))
        }

        // MARK: Signal

        func source(_: Void, received subscription: any Subscription) {
            lock.lock()
            guard case .waiting(nil) = state else {
                lock.unlock()
                subscription.cancel()
                return
            }
            state = .waiting(subscription)
            lock.unlock()
            subscription.request(.max(1))
        }

        func source(_: Void, received _: Signal.Output) {
            lock.lock()
            guard case let .waiting(signalSubscription) = state,
                  let upstream = upstream.take() else {
                lock.unlock()
                return
            }
            state = .subscribing
            lock.unlock()
            signalSubscription?.cancel()
            upstream.subscribe(self)
        }

        func source(_: Void, received _: Subscribers.Completion<Never>) {
            lock.lock()
            if case .waiting = state {
                state = .waiting(nil)
            }
            lock.unlock()
        }

        // MARK: Upstream

        func receive(subscription: any Subscription) {
            lock.lock()
            guard case .subscribing = state else {
                lock.unlock()
                subscription.cancel()
                return
            }
            state = .subscribed(subscription)
            let demand = pendingDemand
            pendingDemand = .none
            lock.unlock()
            if demand > 0 {
                subscription.request(demand)
            }
        }

        func receive(_ input: Upstream.Output) -> Subscribers.Demand {
            lock.lock()
            guard case .subscribed = state else {
                lock.unlock()
                return .none
            }
            lock.unlock()
            return downstream.receive(input)
        }

        func receive(completion: Subscribers.Completion<Upstream.Failure>) {
            lock.lock()
            guard case .subscribed = state else {
                lock.unlock()
                return
            }
            state = .terminal
            lock.unlock()
            downstream.receive(completion: completion)
        }

        // MARK: Downstream

        func request(_ demand: Subscribers.Demand) {
            lock.lock()
            guard case let .subscribed(subscription) = state else {
                if case .terminal = state {
                    lock.unlock()
                    return
                }
                pendingDemand += demand
                lock.unlock()
                return
            }
            lock.unlock()
            subscription.request(demand)
        }

        func cancel() {
            lock.lock()
            let previous = state
            state = .terminal
            upstream = nil
            lock.unlock()
            switch previous {
            case let .waiting(subscription?), let .subscribed(subscription):
                subscription.cancel()
            case .waiting(nil), .subscribing, .terminal:
                break
            }
        }
    }
}

/// Where `wait(untilOutputFrom:)` stands (non-generic on purpose: see `UpstreamState`).
private enum WaitState {
    /// Subscribed (or subscribing) to the signal.
    case waiting((any Subscription)?)
    /// The signal emitted; the upstream is being subscribed.
    case subscribing
    case subscribed(any Subscription)
    case terminal
}
