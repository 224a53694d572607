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
            inner.start()
            upstream.subscribe(inner)
        }
    }
}

// MARK: - Subscription

extension Publishers.FlatMapLatest {
    private final class Inner<Downstream: Subscriber>:
        FlatMapEmitter<Upstream, Child, Downstream>,
        Subscriber,
        SourceOwner
        where Downstream.Input == Child.Output, Downstream.Failure == Upstream.Failure
    {
        /// An inner publisher is known by its generation.
        typealias SourceKey = Int

        /// Identifies the current inner publisher; events of replaced ones are ignored.
        private var generation = 0
        /// True from an element's arrival until its inner publisher completes.
        private var hasCurrentChild = false
        private var childSubscription: (any Subscription)?
        /// Requested from the current inner publisher and not received yet.
        private var childDemand = Subscribers.Demand.none
        /// Outputs received beyond what could be delivered at once (while the loop was busy).
        private var queue = Queue<Child.Output>()

        init(downstream: Downstream, transform: @escaping (Upstream.Output) -> Child) {
            super.init(
                downstream: downstream,
                upstreamDemand: .unlimited,
                transform: transform,
                description: "FlatMapLatest"
            )
        }

        // MARK: Upstream

        func receive(_ input: Upstream.Output) -> Subscribers.Demand {
            lock.lock()
            guard acceptsElements else {
                lock.unlock()
                return .none
            }
            generation += 1
            let current = generation
            hasCurrentChild = true
            let replaced = childSubscription.take()
            childDemand = .none
            queue.removeAll()
            lock.unlock()
            replaced?.cancel()
            transform(input).subscribe(Source(self, key: current))
            return .none
        }

        override var hasInnerPublishers: Bool {
            hasCurrentChild
        }

        // MARK: Inner publishers

        func source(_ generation: Int, received subscription: any Subscription) {
            lock.lock()
            guard !isTerminal, !isCompleting,
                  generation == self.generation, childSubscription == nil else {
                lock.unlock()
                subscription.cancel()
                return
            }
            childSubscription = subscription
            drain()
        }

        func source(_ generation: Int, received output: Child.Output) {
            lock.lock()
            guard !isTerminal, !isCompleting, generation == self.generation else {
                lock.unlock()
                return
            }
            if childDemand > 0 {
                childDemand -= 1
            }
            queue.append(output)
            drain()
        }

        func source(_ generation: Int, received completion: Subscribers.Completion<Child.Failure>) {
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
                if isUpstreamFinished {
                    complete(with: .finished)
                }
            case .failure:
                complete(with: completion)
            }
            drain()
        }

        // MARK: Serial emission

        /// Delivers one output, or tops the current inner publisher's demand up to what
        /// downstream asked for.
        override func emitNext() -> Bool {
            if demand > 0, !queue.isEmpty {
                deliver(queue.removeFirst())
                return true
            }
            // The demand first: most steps end here, before copying the subscription.
            guard let more = demandToRequest(requested: childDemand, buffered: queue.count),
                  let child = childSubscription else { return false }
            childDemand += more
            request(more, from: child)
            return true
        }

        override var isDrained: Bool {
            queue.isEmpty
        }

        override func takeSources() -> [any Cancellable] {
            var sources = super.takeSources()
            if let child = childSubscription.take() {
                sources.append(child)
            }
            queue.removeAll()
            return sources
        }
    }
}
