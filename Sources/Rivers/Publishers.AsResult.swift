public import OpenCombine

// MARK: - Operator

extension Publisher {

    /// Turns outputs into `.success` values and a failure into a final `.failure` value
    /// followed by a normal completion, so the result can never fail.
    ///
    ///     upstream: -1--2--#e
    ///     output:   -S--S--F|      S=.success(1), .success(2); F=.failure(e)
    ///
    ///     let snapshots = api.groups()
    ///         .asResult()
    ///         .sink { result in
    ///             switch result {
    ///             case let .success(groups): send(snapshot: groups)
    ///             case let .failure(error): send(error: error)
    ///             }
    ///         }
    ///
    /// - Returns: A ``Publishers/AsResult``.
    public func asResult() -> Publishers.AsResult<Self> {
        Publishers.AsResult(upstream: self)
    }
}

// MARK: - Publisher

extension Publishers {

    /// A publisher of `Result` values that never fails: the upstream's failure becomes a
    /// `.failure` value, then the publisher finishes.
    ///
    ///     upstream: -1--2--#e
    ///     output:   -S--S--F|
    ///
    ///     let results = Publishers.AsResult(upstream: api.groups())
    ///
    /// Demand passes through; the `.failure` value counts as one output, so if downstream has
    /// no demand when the upstream fails, it is held until downstream requests one.
    public struct AsResult<Upstream: Publisher>: Publisher {
        /// The type of the values this publisher emits.
        public typealias Output = Result<Upstream.Output, Upstream.Failure>
        /// This publisher never fails.
        public typealias Failure = Never

        /// The publisher whose events become results.
        public let upstream: Upstream

        /// Creates the operator; prefer `upstream.asResult()`.
        ///
        ///     let results = Publishers.AsResult(upstream: Fail<Int, MyError>(error: .boom))
        public init(upstream: Upstream) {
            self.upstream = upstream
        }

        /// Attaches `subscriber`; called by `subscribe(_:)`, not directly.
        ///
        ///     publisher.subscribe(subscriber) // calls receive(subscriber:)
        public func receive<Downstream: Subscriber>(subscriber: Downstream)
            where Downstream.Input == Output, Downstream.Failure == Failure
        {
            upstream.subscribe(Inner(downstream: subscriber))
        }
    }
}

// MARK: - Subscription

extension Publishers.AsResult {
    private final class Inner<Downstream: Subscriber>:
        Subscriber,
        Subscription,
        CustomStringConvertible
        where Downstream.Input == Result<Upstream.Output, Upstream.Failure>,
              Downstream.Failure == Never
    {
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure

        private let lock = Lock.make()
        private let downstream: Downstream
        private var state = AsResultState.awaitingSubscription
        /// The upstream's failure, held while downstream has no demand for it.
        private var heldFailure: Upstream.Failure?
        private var demand = Subscribers.Demand.none

        init(downstream: Downstream) {
            self.downstream = downstream
        }

        var description: String { "AsResult" }

        func receive(subscription: any Subscription) {
            lock.lock()
            guard case .awaitingSubscription = state else {
                lock.unlock()
                subscription.cancel()
                return
            }
            state = .subscribed(subscription)
            lock.unlock()
            downstream.receive(subscription: self)
        }

        func receive(_ input: Upstream.Output) -> Subscribers.Demand {
            lock.lock()
            guard case .subscribed = state else {
                lock.unlock()
                return .none
            }
            if demand > 0 {
                demand -= 1
            }
            lock.unlock()
            let additionalDemand = downstream.receive(.success(input))
            lock.lock()
            demand += additionalDemand
            lock.unlock()
            return additionalDemand
        }

        func receive(completion: Subscribers.Completion<Upstream.Failure>) {
            lock.lock()
            guard case .subscribed = state else {
                lock.unlock()
                return
            }
            switch completion {
            case .finished:
                state = .terminal
                lock.unlock()
                downstream.receive(completion: .finished)
            case let .failure(error):
                guard demand > 0 else {
                    state = .holdingFailure
                    heldFailure = error
                    lock.unlock()
                    return
                }
                state = .terminal
                lock.unlock()
                _ = downstream.receive(.failure(error))
                downstream.receive(completion: .finished)
            }
        }

        func request(_ demand: Subscribers.Demand) {
            lock.lock()
            switch state {
            case let .subscribed(subscription):
                self.demand += demand
                lock.unlock()
                subscription.request(demand)
            case .holdingFailure:
                state = .terminal
                let error = heldFailure.take()!
                lock.unlock()
                _ = downstream.receive(.failure(error))
                downstream.receive(completion: .finished)
            case .awaitingSubscription, .terminal:
                lock.unlock()
            }
        }

        func cancel() {
            lock.lock()
            let previous = state
            state = .terminal
            lock.unlock()
            if case let .subscribed(subscription) = previous {
                subscription.cancel()
            }
        }
    }
}

/// Where `asResult()` stands (non-generic on purpose: see `UpstreamState`).
private enum AsResultState {
    case awaitingSubscription
    case subscribed(any Subscription)
    /// The upstream failed while downstream had no demand; the error is in `heldFailure`.
    case holdingFailure
    case terminal
}
