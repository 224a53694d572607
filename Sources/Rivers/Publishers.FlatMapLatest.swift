public import OpenCombine

// MARK: - Operator

extension Publisher {

    /// Maps every element to a publisher and republishes only the latest one's outputs:
    /// a new element cancels the previous inner publisher (`map` + `switchToLatest`).
    ///
    ///     elements: -a-----b----|
    ///     inner a:   -1-2-3           (cancelled when b arrives)
    ///     inner b:         -4---5|
    ///     output:   --1-2---4---5|
    ///
    ///     let results = query
    ///         .debounce(for: .milliseconds(300), scheduler: loop)
    ///         .removeDuplicates()
    ///         .flatMapLatest { query in api.search(query) }
    ///
    /// - Parameter transform: Makes the inner publisher of one element.
    /// - Returns: A ``Publishers/FlatMapLatest``.
    public func flatMapLatest<Child: Publisher>(
        _ transform: @escaping (Output) -> Child
    ) -> Publishers.FlatMapLatest<Self, Child> where Child.Failure == Failure {
        Publishers.FlatMapLatest(upstream: self, transform: transform)
    }

    /// ``flatMapLatest(_:)`` for an upstream that cannot fail: it takes the inner
    /// publishers' failure type.
    ///
    ///     signal:  -x-----x---
    ///     output:  --1-2---1-2-
    ///
    ///     let reloaded = trigger.signal(activatedBy: "reload").flatMapLatest { api.groups() }
    public func flatMapLatest<Child: Publisher>(
        _ transform: @escaping (Output) -> Child
    ) -> Publishers.FlatMapLatest<Publishers.SetFailureType<Self, Child.Failure>, Child>
        where Failure == Never
    {
        setFailureType(to: Child.Failure.self).flatMapLatest(transform)
    }

    /// ``flatMapLatest(_:)`` when neither the upstream nor the inner publishers can fail.
    ///
    ///     input:  -a----b---
    ///     output: -A----B---
    ///
    ///     let labels = count.flatMapLatest { Just("\($0) items") }
    public func flatMapLatest<Child: Publisher>(
        _ transform: @escaping (Output) -> Child
    ) -> Publishers.FlatMapLatest<Self, Child> where Failure == Never, Child.Failure == Never {
        Publishers.FlatMapLatest(upstream: self, transform: transform)
    }
}

// MARK: - Publisher

extension Publishers {

    /// A publisher that maps elements to inner publishers and republishes the outputs of the
    /// latest one only.
    ///
    ///     elements: -a-----b----|
    ///     inner a:   -1-2-3
    ///     inner b:         -4---5|
    ///     output:   --1-2---4---5|
    ///
    ///     let latest = Publishers.FlatMapLatest(upstream: queries) { api.search($0) }
    ///
    /// Demand: the upstream is asked for `.unlimited` elements (every element is a command
    /// to switch); the current inner publisher is asked for exactly what downstream asks for,
    /// and a new inner publisher inherits the demand not yet satisfied.
    /// Completion: once the upstream finished and the current inner publisher (if any)
    /// finished. Failure: of the upstream or of the current inner publisher, forwarded at once.
    /// Cancellation cancels the upstream and the current inner publisher exactly once; each
    /// replaced inner publisher is cancelled exactly once when it is replaced.
    public struct FlatMapLatest<Upstream: Publisher, Child: Publisher>: Publisher
        where Child.Failure == Upstream.Failure
    {
        /// The type of the values this publisher emits.
        public typealias Output = Child.Output
        /// The type of the error this publisher may fail with.
        public typealias Failure = Upstream.Failure

        /// The publisher of elements.
        public let upstream: Upstream
        /// Makes the inner publisher of one element.
        public let transform: (Upstream.Output) -> Child

        /// Creates the operator; prefer `upstream.flatMapLatest { ... }`.
        ///
        ///     let latest = Publishers.FlatMapLatest(upstream: Just(1)) { Just($0 + 1) }
        public init(upstream: Upstream, transform: @escaping (Upstream.Output) -> Child) {
            self.upstream = upstream
            self.transform = transform
        }

        /// Attaches `subscriber`; called by `subscribe(_:)`, not directly.
        ///
        ///     publisher.subscribe(subscriber) // calls receive(subscriber:)
        public func receive<Downstream: Subscriber>(subscriber: Downstream)
            where Downstream.Input == Output, Downstream.Failure == Failure
        {
            let inner = Inner(downstream: subscriber, transform: transform)
            subscriber.receive(subscription: inner)
            upstream.subscribe(inner)
        }
    }
}

// MARK: - Subscription

extension Publishers.FlatMapLatest {
    private final class Inner<Downstream: Subscriber>:
        Subscriber,
        Subscription,
        CustomStringConvertible
        where Downstream.Input == Child.Output, Downstream.Failure == Upstream.Failure
    {
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure

        private let lock = Lock()
        private let downstream: Downstream
        private let transform: (Upstream.Output) -> Child

        private var upstreamStatus = UpstreamState.awaitingSubscription
        private var isTerminal = false
        /// Identifies the current inner publisher; events of replaced ones are ignored.
        private var generation = 0
        /// True from an element's arrival until its inner publisher completes.
        private var hasCurrentChild = false
        private var childSubscription: (any Subscription)?
        private var queue = Queue<Child.Output>()
        private var demand = Subscribers.Demand.none
        private var pendingCompletion: Subscribers.Completion<Failure>? {
            didSet { isCompleting = pendingCompletion != nil }
        }
        /// Mirrors `pendingCompletion != nil` without touching the generic optional on hot
        /// paths (unspecialised generic code pays a metadata lookup for it).
        private var isCompleting = false
        /// Whether the pending completion is a failure (delivered without waiting for the queue).
        private var isFailing = false
        private var isEmitting = false

        init(downstream: Downstream, transform: @escaping (Upstream.Output) -> Child) {
            self.downstream = downstream
            self.transform = transform
        }

        var description: String { "FlatMapLatest" }

        // MARK: Upstream

        func receive(subscription: any Subscription) {
            lock.lock()
            guard !isTerminal, case .awaitingSubscription = upstreamStatus else {
                lock.unlock()
                subscription.cancel()
                return
            }
            upstreamStatus = .subscribed(subscription)
            lock.unlock()
            subscription.request(.unlimited)
        }

        func receive(_ input: Upstream.Output) -> Subscribers.Demand {
            lock.lock()
            guard !isTerminal, !isCompleting, case .subscribed = upstreamStatus else {
                lock.unlock()
                return .none
            }
            generation += 1
            let current = generation
            hasCurrentChild = true
            let replaced = childSubscription.take()
            queue.removeAll()
            lock.unlock()
            replaced?.cancel()
            transform(input).subscribe(Side(inner: self, generation: current))
            return .none
        }

        func receive(completion: Subscribers.Completion<Failure>) {
            lock.lock()
            guard !isTerminal, !isCompleting, case .subscribed = upstreamStatus else {
                lock.unlock()
                return
            }
            upstreamStatus = .finished
            switch completion {
            case .finished:
                if !hasCurrentChild {
                    pendingCompletion = .finished
                }
            case .failure:
                isFailing = true
                pendingCompletion = completion
            }
            drain()
        }

        // MARK: Downstream

        func request(_ demand: Subscribers.Demand) {
            lock.lock()
            guard !isTerminal else {
                lock.unlock()
                return
            }
            self.demand += demand
            let child = childSubscription
            lock.unlock()
            child?.request(demand)
            lock.lock()
            drain()
        }

        func cancel() {
            lock.lock()
            guard !isTerminal else {
                lock.unlock()
                return
            }
            isTerminal = true
            let subscriptions = takeSubscriptions()
            lock.unlock()
            for subscription in subscriptions {
                subscription.cancel()
            }
        }

        // MARK: Inner publishers

        private func child(_ generation: Int, received subscription: any Subscription) {
            lock.lock()
            guard !isTerminal, !isCompleting,
                  generation == self.generation, childSubscription == nil else {
                lock.unlock()
                subscription.cancel()
                return
            }
            childSubscription = subscription
            let demand = self.demand
            lock.unlock()
            if demand > 0 {
                subscription.request(demand)
            }
        }

        private func child(_ generation: Int, received output: Child.Output) {
            lock.lock()
            guard !isTerminal, !isCompleting, generation == self.generation else {
                lock.unlock()
                return
            }
            queue.append(output)
            drain()
        }

        private func child(
            _ generation: Int,
            received completion: Subscribers.Completion<Child.Failure>
        ) {
            lock.lock()
            guard !isTerminal, !isCompleting,
                  generation == self.generation, hasCurrentChild else {
                lock.unlock()
                return
            }
            hasCurrentChild = false
            childSubscription = nil
            switch completion {
            case .finished:
                if case .finished = upstreamStatus {
                    pendingCompletion = .finished
                }
            case .failure:
                isFailing = true
                pendingCompletion = completion
            }
            drain()
        }

        // MARK: Private

        /// - Precondition: `lock` is held.
        /// - Postcondition: `lock` is released.
        private func drain() {
            if isEmitting {
                lock.unlock()
                return
            }
            isEmitting = true
            while !isTerminal {
                if isCompleting, queue.isEmpty || isFailing {
                    isEmitting = false
                    complete()
                    return
                }
                guard demand > 0, !queue.isEmpty else { break }
                let output = queue.removeFirst()
                demand -= 1
                lock.unlock()
                let additionalDemand = downstream.receive(output)
                lock.lock()
                guard additionalDemand > 0 else { continue }
                demand += additionalDemand
                if let child = childSubscription {
                    lock.unlock()
                    child.request(additionalDemand)
                    lock.lock()
                }
            }
            isEmitting = false
            lock.unlock()
        }

        /// Terminates: cancels what is still subscribed, then sends the pending completion.
        /// Kept out of `drain()` so its hot loop never touches the generic completion.
        ///
        /// - Precondition: `lock` is held and `pendingCompletion` is set.
        /// - Postcondition: `lock` is released.
        @inline(never)
        private func complete() {
            isTerminal = true
            let completion = pendingCompletion!
            let subscriptions = takeSubscriptions()
            lock.unlock()
            for subscription in subscriptions {
                subscription.cancel()
            }
            downstream.receive(completion: completion)
        }

        /// - Precondition: `lock` is held.
        private func takeSubscriptions() -> [any Subscription] {
            var subscriptions: [any Subscription] = []
            if case let .subscribed(upstream) = upstreamStatus {
                subscriptions.append(upstream)
            }
            upstreamStatus = .finished
            if let child = childSubscription.take() {
                subscriptions.append(child)
            }
            queue.removeAll()
            return subscriptions
        }

        // MARK: Side

        /// Subscribes the operator to one inner publisher.
        private struct Side: Subscriber {
            typealias Input = Child.Output
            typealias Failure = Child.Failure

            let combineIdentifier = CombineIdentifier()
            private let inner: Inner
            private let generation: Int

            init(inner: Inner, generation: Int) {
                self.inner = inner
                self.generation = generation
            }

            func receive(subscription: any Subscription) {
                inner.child(generation, received: subscription)
            }

            func receive(_ input: Child.Output) -> Subscribers.Demand {
                inner.child(generation, received: input)
                return .none
            }

            func receive(completion: Subscribers.Completion<Child.Failure>) {
                inner.child(generation, received: completion)
            }
        }
    }
}
