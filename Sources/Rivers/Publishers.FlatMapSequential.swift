public import OpenCombine

// MARK: - Operator

extension Publisher {

    /// Maps every element to an inner publisher, runs at most `maxPublishers` of them at a
    /// time, and publishes their outputs strictly in element order however they complete.
    ///
    /// An inner publisher's outputs are buffered until every earlier inner publisher
    /// completed; the first (oldest) one streams straight through. A finished inner frees its
    /// slot at once, so a slow element never stops later ones from running.
    ///
    ///     elements: -1-2-3---------|        maxPublishers: .max(2)
    ///     inner 1:   --------a|
    ///     inner 2:     --b|
    ///     inner 3:         ----c|           (starts when inner 2 finished)
    ///     output:   ---------a-b--c|
    ///
    ///     let rows = groups.publisher
    ///         .setFailureType(to: UpstreamError.self)
    ///         .flatMapSequential(maxPublishers: .max(8), onFailure: .skip) { group in
    ///             api.metadata(for: group.id).map { Row(group: group, metadata: $0) }
    ///         }
    ///
    /// - Parameters:
    ///   - maxPublishers: How many inner publishers may run at once (`.unlimited` by default).
    ///   - onFailure: What a failing inner publisher becomes; `.fail` (the default) fails the
    ///     whole stream.
    ///   - transform: Makes the inner publisher for one element.
    /// - Returns: A ``Publishers/FlatMapSequential``.
    public func flatMapSequential<Child: Publisher>(
        maxPublishers: Subscribers.Demand = .unlimited,
        onFailure: SequentialFailurePolicy<Output, Child.Output, Child.Failure> = .fail,
        _ transform: @escaping (Output) -> Child
    ) -> Publishers.FlatMapSequential<Self, Child> where Child.Failure == Failure {
        Publishers.FlatMapSequential(
            upstream: self,
            maxPublishers: maxPublishers,
            failurePolicy: onFailure,
            transform: transform
        )
    }

    /// ``flatMapSequential(maxPublishers:onFailure:_:)`` for an upstream that cannot fail:
    /// the upstream takes the inner publishers' failure type.
    ///
    ///     ids:    -1-2-|
    ///     output: ---A-B-|
    ///
    ///     let pages = [1, 2, 3].publisher.flatMapSequential(maxPublishers: .max(2)) { fetch(page: $0) }
    public func flatMapSequential<Child: Publisher>(
        maxPublishers: Subscribers.Demand = .unlimited,
        onFailure: SequentialFailurePolicy<Output, Child.Output, Child.Failure> = .fail,
        _ transform: @escaping (Output) -> Child
    ) -> Publishers.FlatMapSequential<Publishers.SetFailureType<Self, Child.Failure>, Child>
        where Failure == Never
    {
        setFailureType(to: Child.Failure.self)
            .flatMapSequential(maxPublishers: maxPublishers, onFailure: onFailure, transform)
    }

    /// ``flatMapSequential(maxPublishers:onFailure:_:)`` when neither the upstream nor the
    /// inner publishers can fail.
    ///
    ///     ids:    -1-2-|
    ///     output: ---A-B-|
    ///
    ///     let doubled = [1, 2, 3].publisher.flatMapSequential { Just($0 * 2) }
    public func flatMapSequential<Child: Publisher>(
        maxPublishers: Subscribers.Demand = .unlimited,
        onFailure: SequentialFailurePolicy<Output, Child.Output, Never> = .fail,
        _ transform: @escaping (Output) -> Child
    ) -> Publishers.FlatMapSequential<Self, Child> where Failure == Never, Child.Failure == Never {
        Publishers.FlatMapSequential(
            upstream: self,
            maxPublishers: maxPublishers,
            failurePolicy: onFailure,
            transform: transform
        )
    }
}

// MARK: - Publisher

extension Publishers {

    /// A publisher that maps elements to inner publishers, runs a bounded number of them at
    /// once and publishes their outputs in element order (flatMapSequential semantics).
    ///
    ///     elements: -1-2-3---------|        maxPublishers: .max(2)
    ///     inner 1:   --------a|
    ///     inner 2:     --b|
    ///     inner 3:         ----c|
    ///     output:   ---------a-b--c|
    ///
    ///     let ordered = Publishers.FlatMapSequential(
    ///         upstream: ids.publisher.setFailureType(to: APIError.self),
    ///         maxPublishers: .max(4),
    ///         failurePolicy: .fail,
    ///         transform: { id in api.item(id) }
    ///     )
    ///
    /// Concurrency: at most `maxPublishers` inner publishers are subscribed and not yet
    /// completed at any time; the upstream is asked for `maxPublishers` elements, then for
    /// one more each time an inner publisher completes.
    ///
    /// Demand: downstream never receives more than it requested. The oldest inner publisher,
    /// if it was the oldest when it started, is asked for exactly what downstream asks for;
    /// later ones are asked for `.unlimited` (so they can complete while they wait their turn)
    /// and their outputs are buffered until delivered. With `maxPublishers: .max(1)` this is
    /// a fully back-pressured `concatMap`.
    ///
    /// Completion: after the upstream and every inner finished and every output was
    /// delivered. Failure: an upstream failure, or an inner failure under the `.fail` policy,
    /// is forwarded at once, dropping buffered outputs and cancelling everything still running.
    /// Cancellation cancels the upstream and every running inner publisher exactly once.
    public struct FlatMapSequential<Upstream: Publisher, Child: Publisher>: Publisher
        where Child.Failure == Upstream.Failure
    {
        /// The type of the values this publisher emits.
        public typealias Output = Child.Output
        /// The type of the error this publisher may fail with.
        public typealias Failure = Upstream.Failure

        /// The publisher of elements.
        public let upstream: Upstream
        /// The most inner publishers that run at once.
        public let maxPublishers: Subscribers.Demand
        /// What a failing inner publisher becomes.
        public let failurePolicy: SequentialFailurePolicy<Upstream.Output, Child.Output, Child.Failure>
        /// Makes the inner publisher of one element.
        public let transform: (Upstream.Output) -> Child

        /// Creates the operator; prefer `upstream.flatMapSequential(...)`.
        ///
        ///     let ordered = Publishers.FlatMapSequential(
        ///         upstream: Just(1), maxPublishers: .max(1), failurePolicy: .fail
        ///     ) { Just($0 * 10) }
        ///
        /// - Precondition: `maxPublishers` is not `.none`.
        public init(
            upstream: Upstream,
            maxPublishers: Subscribers.Demand,
            failurePolicy: SequentialFailurePolicy<Upstream.Output, Child.Output, Child.Failure>,
            transform: @escaping (Upstream.Output) -> Child
        ) {
            precondition(maxPublishers > 0, "maxPublishers must be at least .max(1)")
            self.upstream = upstream
            self.maxPublishers = maxPublishers
            self.failurePolicy = failurePolicy
            self.transform = transform
        }

        /// Attaches `subscriber`; called by `subscribe(_:)`, not directly.
        ///
        ///     publisher.subscribe(subscriber) // calls receive(subscriber:)
        public func receive<Downstream: Subscriber>(subscriber: Downstream)
            where Downstream.Input == Output, Downstream.Failure == Failure
        {
            let inner = Inner(
                downstream: subscriber,
                maxPublishers: maxPublishers,
                failurePolicy: failurePolicy,
                transform: transform
            )
            subscriber.receive(subscription: inner)
            upstream.subscribe(inner)
        }
    }
}

// MARK: - Subscription

extension Publishers.FlatMapSequential {
    private final class Inner<Downstream: Subscriber>:
        Subscriber,
        Subscription,
        CustomStringConvertible
        where Downstream.Input == Child.Output, Downstream.Failure == Upstream.Failure
    {
        typealias Input = Upstream.Output
        typealias Failure = Upstream.Failure

        /// One element's inner publisher, from its creation until its last output is delivered.
        /// All fields are guarded by the owning `Inner`'s lock.
        final class Record {
            /// The element, kept (as an ``ElementBox``) for the `.replace` policy until the
            /// inner completes. Typed `AnyObject` so that records of other policies never touch
            /// generic optional metadata.
            var element: AnyObject?
            /// Started while it was the oldest record: asked for exactly the downstream demand.
            let forwardsDemand: Bool
            var subscription: (any Subscription)?
            var buffer = Queue<Child.Output>()
            var isCompleted = false

            init(element: AnyObject?, forwardsDemand: Bool) {
                self.element = element
                self.forwardsDemand = forwardsDemand
            }
        }

        /// Holds an element for the `.replace` policy.
        final class ElementBox {
            let element: Upstream.Output

            init(_ element: Upstream.Output) {
                self.element = element
            }
        }

        private let lock = Lock()
        private let downstream: Downstream
        private let maxPublishers: Subscribers.Demand
        private let failurePolicy: SequentialFailurePolicy<Upstream.Output, Child.Output, Child.Failure>
        private let transform: (Upstream.Output) -> Child

        private var upstreamStatus = UpstreamState.awaitingSubscription
        private var isTerminal = false
        /// Records in element order; the first one is the only one that may deliver.
        private var records = Queue<Record>()
        private var demand = Subscribers.Demand.none
        private var pendingCompletion: Subscribers.Completion<Failure>? {
            didSet { isCompleting = pendingCompletion != nil }
        }
        /// Mirrors `pendingCompletion != nil` without touching the generic optional on hot
        /// paths (unspecialised generic code pays a metadata lookup for it).
        private var isCompleting = false
        /// The failure policy's case, checked without touching the generic enum.
        private let policyKind: PolicyKind
        private var isEmitting = false
        /// True while `receive(_:)` subscribes an inner publisher: upstream demand earned
        /// meanwhile is returned from `receive(_:)` instead of requested re-entrantly.
        private var isReceivingElement = false
        private var owedUpstreamDemand = Subscribers.Demand.none

        init(
            downstream: Downstream,
            maxPublishers: Subscribers.Demand,
            failurePolicy: SequentialFailurePolicy<Upstream.Output, Child.Output, Child.Failure>,
            transform: @escaping (Upstream.Output) -> Child
        ) {
            self.downstream = downstream
            self.maxPublishers = maxPublishers
            self.failurePolicy = failurePolicy
            self.transform = transform
            switch failurePolicy {
            case .fail: policyKind = .fail
            case .replace: policyKind = .replace
            case .skip: policyKind = .skip
            }
        }

        var description: String { "FlatMapSequential" }

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
            subscription.request(maxPublishers)
        }

        func receive(_ input: Upstream.Output) -> Subscribers.Demand {
            lock.lock()
            guard !isTerminal, !isCompleting, case .subscribed = upstreamStatus else {
                lock.unlock()
                return .none
            }
            let record = Record(
                element: policyKind == .replace ? ElementBox(input) : nil,
                forwardsDemand: records.isEmpty
            )
            records.append(record)
            isReceivingElement = true
            lock.unlock()

            transform(input).subscribe(Side(inner: self, record: record))

            lock.lock()
            isReceivingElement = false
            let owed = owedUpstreamDemand
            owedUpstreamDemand = .none
            lock.unlock()
            return owed
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
                if records.isEmpty {
                    pendingCompletion = .finished
                }
            case .failure:
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
            let head = records.isEmpty ? nil : records.first
            let forwardTo = head?.forwardsDemand == true ? head?.subscription : nil
            lock.unlock()
            forwardTo?.request(demand)
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

        fileprivate func record(_ record: Record, received subscription: any Subscription) {
            lock.lock()
            guard !isTerminal, !isCompleting, record.subscription == nil else {
                lock.unlock()
                subscription.cancel()
                return
            }
            record.subscription = subscription
            let initialDemand = record.forwardsDemand ? demand : .unlimited
            lock.unlock()
            if initialDemand > 0 {
                subscription.request(initialDemand)
            }
        }

        fileprivate func record(_ record: Record, received output: Child.Output) {
            lock.lock()
            guard !isTerminal, !isCompleting, !record.isCompleted else {
                lock.unlock()
                return
            }
            if !isEmitting, demand > 0, record.buffer.isEmpty, records.first === record {
                // The oldest record with nothing buffered: deliver without queueing.
                isEmitting = true
                deliverWhileEmitting(output, from: record)
                isEmitting = false
            } else {
                record.buffer.append(output)
            }
            drain()
        }

        /// Sends one output of `record` (the oldest) downstream and takes the demand that
        /// comes back, forwarding it to `record` if it is asked for exact demand.
        ///
        /// - Precondition: `lock` is held, `isEmitting` is true and `demand > 0`.
        /// - Postcondition: `lock` is held.
        private func deliverWhileEmitting(_ output: Child.Output, from record: Record) {
            demand -= 1
            lock.unlock()
            let additionalDemand = downstream.receive(output)
            lock.lock()
            guard additionalDemand > 0 else { return }
            demand += additionalDemand
            if record.forwardsDemand, !record.isCompleted, let subscription = record.subscription {
                lock.unlock()
                subscription.request(additionalDemand)
                lock.lock()
            }
        }

        fileprivate func record(
            _ record: Record,
            received completion: Subscribers.Completion<Child.Failure>
        ) {
            lock.lock()
            guard !isTerminal, !isCompleting, !record.isCompleted else {
                lock.unlock()
                return
            }
            if case let .failure(error) = completion {
                switch policyKind {
                case .skip:
                    break
                case .fail:
                    record.subscription = nil
                    pendingCompletion = completion
                    drain()
                    return
                case .replace:
                    guard case let .replace(makeFallback) = failurePolicy else { return }
                    // The element is kept for `.replace` until the record completes.
                    let element = (record.element as! ElementBox).element
                    lock.unlock()
                    let fallback = makeFallback(element, error)
                    lock.lock()
                    guard !isTerminal, !isCompleting else {
                        lock.unlock()
                        return
                    }
                    record.buffer.append(fallback)
                }
            }
            record.isCompleted = true
            record.subscription = nil
            record.element = nil
            var upstreamToRequest: (any Subscription)?
            if maxPublishers != .unlimited, case let .subscribed(upstream) = upstreamStatus {
                if isReceivingElement {
                    owedUpstreamDemand += 1
                } else {
                    upstreamToRequest = upstream
                }
            }
            drain()
            upstreamToRequest?.request(.max(1))
        }

        // MARK: Private

        /// Delivers outputs in element order, retires completed records and completes, one
        /// call out at a time.
        ///
        /// - Precondition: `lock` is held.
        /// - Postcondition: `lock` is released.
        private func drain() {
            if isEmitting {
                lock.unlock()
                return
            }
            isEmitting = true
            while !isTerminal {
                if isCompleting {
                    isEmitting = false
                    complete()
                    return
                }
                guard !records.isEmpty else { break }
                let head = records.first
                if demand > 0, !head.buffer.isEmpty {
                    let output = head.buffer.removeFirst()
                    deliverWhileEmitting(output, from: head)
                    continue
                }
                guard head.isCompleted, head.buffer.isEmpty else { break }
                _ = records.removeFirst()
                if records.isEmpty, case .finished = upstreamStatus {
                    pendingCompletion = .finished
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
            for record in records.takeAll() {
                if let subscription = record.subscription.take() {
                    subscriptions.append(subscription)
                }
            }
            return subscriptions
        }

        // MARK: Side

        /// Subscribes the operator to one inner publisher.
        private struct Side: Subscriber {
            typealias Input = Child.Output
            typealias Failure = Child.Failure

            let combineIdentifier = CombineIdentifier()
            private let inner: Inner
            private let record: Record

            init(inner: Inner, record: Record) {
                self.inner = inner
                self.record = record
            }

            func receive(subscription: any Subscription) {
                inner.record(record, received: subscription)
            }

            func receive(_ input: Child.Output) -> Subscribers.Demand {
                inner.record(record, received: input)
                return .none
            }

            func receive(completion: Subscribers.Completion<Child.Failure>) {
                inner.record(record, received: completion)
            }
        }
    }
}

/// The case of a ``SequentialFailurePolicy`` without its payload (a non-generic type, cheap to
/// test in unspecialised generic code).
private enum PolicyKind {
    case fail
    case replace
    case skip
}
