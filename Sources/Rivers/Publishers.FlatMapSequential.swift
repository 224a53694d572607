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
    /// Demand: downstream never receives more than it requested. An inner publisher that
    /// started when every earlier one had completed is asked, once it is the oldest, for
    /// exactly what downstream asks for, and buffers nothing; with `maxPublishers: .max(1)`
    /// every inner starts so, and this is a fully back-pressured `concatMap`. An inner that
    /// started while an earlier one was still running is asked for `.unlimited`, so that it
    /// can complete while it waits its turn, and its outputs are buffered until delivered.
    ///
    /// Memory, with `maxPublishers` above 1: a completed inner frees its slot at once, so a
    /// stalled oldest inner (or a downstream that asks for little) does not stop the others.
    /// Element after element starts, completes and waits in a buffer: the operator can drain
    /// the whole upstream, keeping per element behind the stalled one a record (under 100
    /// bytes) and every output its inner produced. Bound the upstream (a finite list, as in
    /// `orderedFanOut`) or use `.max(1)` where that matters.
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
            inner.start()
            upstream.subscribe(inner)
        }
    }
}

// MARK: - Subscription

extension Publishers.FlatMapSequential {
    private final class Inner<Downstream: Subscriber>:
        FlatMapEmitter<Upstream, Child, Downstream>,
        Subscriber,
        SourceOwner
        where Downstream.Input == Child.Output, Downstream.Failure == Upstream.Failure
    {
        /// An inner publisher is known by its record.
        typealias SourceKey = Record

        /// One element's inner publisher, from its creation until its last output is delivered.
        /// All fields are guarded by the owning `Inner`'s lock.
        final class Record {
            /// Makes the output that takes the place of the inner's failure (`.replace`).
            let fallback: ((Child.Failure) -> Child.Output)?
            /// Started when every earlier record had completed: it is asked only for what
            /// downstream will take once it is the oldest. Any other record is asked for
            /// `.unlimited` at once, so that it can complete while it waits its turn.
            let isBackPressured: Bool
            var subscription: (any Subscription)?
            /// Requested from a back-pressured inner and not received yet.
            var demand = Subscribers.Demand.none
            var buffer = Queue<Child.Output>()
            var isCompleted = false

            init(fallback: ((Child.Failure) -> Child.Output)?, isBackPressured: Bool) {
                self.fallback = fallback
                self.isBackPressured = isBackPressured
            }
        }

        private let maxPublishers: Subscribers.Demand
        /// The `.replace` policy's closure.
        private let makeFallback: ((Upstream.Output, Child.Failure) -> Child.Output)?
        /// Whether an inner failure fails the output (`.fail`).
        private let failsOnInnerFailure: Bool

        /// Records in element order; the first one is the only one that may deliver.
        private var records = Queue<Record>()
        /// Records whose inner publisher has not completed.
        private var runningCount = 0
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
            self.maxPublishers = maxPublishers
            switch failurePolicy {
            case .fail:
                makeFallback = nil
                failsOnInnerFailure = true
            case let .replace(makeFallback):
                self.makeFallback = makeFallback
                failsOnInnerFailure = false
            case .skip:
                makeFallback = nil
                failsOnInnerFailure = false
            }
            super.init(
                downstream: downstream,
                upstreamDemand: maxPublishers,
                transform: transform,
                description: "FlatMapSequential"
            )
        }

        // MARK: Upstream

        func receive(_ input: Upstream.Output) -> Subscribers.Demand {
            lock.lock()
            guard acceptsElements else {
                lock.unlock()
                return .none
            }
            var fallback: ((Child.Failure) -> Child.Output)?
            if let makeFallback {
                fallback = { error in makeFallback(input, error) }
            }
            let record = Record(fallback: fallback, isBackPressured: runningCount == 0)
            records.append(record)
            runningCount += 1
            isReceivingElement = true
            lock.unlock()

            transform(input).subscribe(Source(self, key: record))

            lock.lock()
            isReceivingElement = false
            let owed = owedUpstreamDemand
            owedUpstreamDemand = .none
            lock.unlock()
            return owed
        }

        override var hasInnerPublishers: Bool {
            !records.isEmpty
        }

        // MARK: Inner publishers

        func source(_ record: Record, received subscription: any Subscription) {
            lock.lock()
            guard !isTerminal, !isCompleting, !record.isCompleted, record.subscription == nil else {
                lock.unlock()
                subscription.cancel()
                return
            }
            record.subscription = subscription
            // With unlimited downstream demand there is no back pressure to keep.
            let initialDemand = record.isBackPressured && demand != .unlimited
                ? (records.first === record ? demandToRequest(from: record) : nil)
                : .unlimited
            if let initialDemand {
                record.demand += initialDemand
            }
            lock.unlock()
            if let initialDemand {
                subscription.request(initialDemand)
            }
        }

        func source(_ record: Record, received output: Child.Output) {
            lock.lock()
            guard !isTerminal, !isCompleting, !record.isCompleted else {
                lock.unlock()
                return
            }
            if record.demand > 0 {
                record.demand -= 1
            }
            // The oldest record with nothing buffered is delivered without queueing.
            if !(record.buffer.isEmpty && records.first === record && deliverIfIdle(output)) {
                record.buffer.append(output)
            }
            drain()
        }

        func source(_ record: Record, received completion: Subscribers.Completion<Child.Failure>) {
            lock.lock()
            guard !isTerminal, !isCompleting, !record.isCompleted else {
                lock.unlock()
                return
            }
            if case let .failure(error) = completion {
                if let fallback = record.fallback {
                    lock.unlock()
                    let replacement = fallback(error)
                    lock.lock()
                    guard !isTerminal, !isCompleting else {
                        lock.unlock()
                        return
                    }
                    record.buffer.append(replacement)
                } else if failsOnInnerFailure {
                    record.subscription = nil
                    complete(with: .failure(error))
                    drain()
                    return
                }
            }
            record.isCompleted = true
            record.subscription = nil
            runningCount -= 1
            var upstreamToRequest: (any Subscription)?
            if maxPublishers != .unlimited, let upstream = upstreamSubscription {
                if isReceivingElement {
                    owedUpstreamDemand += 1
                } else {
                    upstreamToRequest = upstream
                }
            }
            drain()
            upstreamToRequest?.request(.max(1))
        }

        // MARK: Serial emission

        /// Delivers one output of the oldest record, retires it once completed and delivered,
        /// or tops its demand up to what downstream asked for.
        override func emitNext() -> Bool {
            guard !records.isEmpty else { return false }
            let head = records.first
            if demand > 0, !head.buffer.isEmpty {
                deliver(head.buffer.removeFirst())
                return true
            }
            if head.isCompleted {
                guard head.buffer.isEmpty else { return false }
                _ = records.removeFirst()
                if records.isEmpty, isUpstreamFinished {
                    complete(with: .finished)
                }
                return true
            }
            guard head.isBackPressured,
                  let more = demandToRequest(from: head),
                  let subscription = head.subscription else { return false }
            head.demand += more
            request(more, from: subscription)
            return true
        }

        override func takeSources() -> [any Cancellable] {
            var sources = super.takeSources()
            for record in records.takeAll() {
                if let subscription = record.subscription.take() {
                    sources.append(subscription)
                }
            }
            return sources
        }

        // MARK: Private

        /// What the oldest record, back-pressured, must be asked for so that downstream's demand
        /// is covered; `nil` if nothing. (A record that is not the oldest yet is asked for
        /// nothing: older outputs go first.)
        ///
        /// - Precondition: `lock` is held.
        private func demandToRequest(from record: Record) -> Subscribers.Demand? {
            demandToRequest(requested: record.demand, buffered: record.buffer.count)
        }
    }
}
