public import OpenCombine

// MARK: - Operator

extension Sequence where Element: Publisher {

    /// Combines the latest value of every publisher of this sequence into an array in
    /// sequence order, emitted on every update once each publisher has emitted.
    ///
    ///     p0:     -a-----b------|
    ///     p1:     ---x-------y---|
    ///     output: ---A---B---C---|    A=[a,x] B=[b,x] C=[b,y]
    ///
    ///     let metadata = groups.map { group in api.metadata(for: group.id) }
    ///     let cancellable = metadata.accumulateLatest().sink { all in render(all) }
    ///
    /// - Returns: A ``Publishers/AccumulateLatestMany`` over the publishers, in order.
    public func accumulateLatest() -> Publishers.AccumulateLatestMany<Element> {
        Publishers.AccumulateLatestMany(Array(self))
    }
}

// MARK: - Publisher

extension Publishers {

    /// A publisher of the latest values of any number of publishers, as an array in input
    /// order.
    ///
    /// No output until every input has emitted once; then the whole array on every update.
    /// It finishes when all inputs finished (or as soon as one finishes without a value),
    /// fails on the first failure (cancelling the others), and with no inputs at all emits
    /// `[]` and finishes.
    ///
    ///     p0:     -a-----b------|
    ///     p1:     ---x-------y---|
    ///     p2:     -----k----------|
    ///     output: -----A-B---C----|    A=[a,x,k] B=[b,x,k] C=[b,y,k]
    ///
    ///     let rows = Publishers.AccumulateLatestMany(topics.map { rowPublisher(for: $0) })
    ///     let cancellable = rows.sink { rows in send(rows) }
    ///
    /// Cost: one update is O(1) bookkeeping under one lock plus handing the array downstream
    /// (which copies it only if downstream still holds the previous one): no chain of nested
    /// `CombineLatest`, so 1,000 inputs are fine.
    ///
    /// Demand: each input is asked for `.unlimited` values and only its latest value is kept;
    /// downstream receives at most what it requested, updates made while it had no demand
    /// being coalesced into the next array it receives.
    public struct AccumulateLatestMany<Upstream: Publisher>: Publisher {
        /// The type of the values this publisher emits.
        public typealias Output = [Upstream.Output]
        /// The type of the error this publisher may fail with.
        public typealias Failure = Upstream.Failure

        /// The inputs, in output order.
        public let publishers: [Upstream]

        /// Creates a publisher of the latest values of `publishers`, in their order.
        ///
        ///     let all = Publishers.AccumulateLatestMany([Just(1), Just(2)]) // emits [1, 2]
        public init(_ publishers: [Upstream]) {
            self.publishers = publishers
        }

        /// Creates a publisher of the latest values of `publishers`, in their order.
        ///
        ///     let all = Publishers.AccumulateLatestMany(Just(1), Just(2)) // emits [1, 2]
        public init(_ publishers: Upstream...) {
            self.init(publishers)
        }

        /// Attaches `subscriber`; called by `subscribe(_:)`, not directly.
        ///
        ///     publisher.subscribe(subscriber) // calls receive(subscriber:)
        public func receive<Downstream: Subscriber>(subscriber: Downstream)
            where Downstream.Input == Output, Downstream.Failure == Failure
        {
            let inner = Inner(downstream: subscriber, count: publishers.count)
            subscriber.receive(subscription: inner)
            inner.start()
            inner.subscribe(publishers)
        }
    }
}

// MARK: - Subscription

extension Publishers.AccumulateLatestMany {
    private final class Inner<Downstream: Subscriber>: LatestEngine<Downstream>, SourceOwner
        where Downstream.Input == [Upstream.Output], Downstream.Failure == Upstream.Failure
    {
        /// An input is known by its index.
        typealias SourceKey = Int
        typealias SourceOutput = Upstream.Output
        typealias SourceFailure = Upstream.Failure

        /// The values received before every input had one.
        private var partial: [Upstream.Output?]
        /// The latest values, once every input had one (then `partial` is emptied).
        private var values: [Upstream.Output] = []
        private var isComplete = false

        init(downstream: Downstream, count: Int) {
            partial = Array(repeating: nil, count: count)
            super.init(downstream: downstream, childCount: count, description: "AccumulateLatestMany")
        }

        func subscribe(_ publishers: [Upstream]) {
            for (index, publisher) in publishers.enumerated() {
                subscribe(publisher, at: index, through: self)
            }
        }

        // MARK: Inputs (all of one type: no LatestStore in between)

        func source(_ index: Int, received subscription: any Subscription) {
            child(index, received: subscription)
        }

        func source(_ index: Int, received value: Upstream.Output) {
            child(index) {
                if isComplete {
                    values[index] = value
                } else {
                    storePartial(value, at: index)
                }
            }
        }

        func source(_ index: Int, received completion: Subscribers.Completion<Upstream.Failure>) {
            child(index, received: completion)
        }

        /// Kept apart from the steady-state path so that path never touches `[Output?]`.
        @inline(never)
        private func storePartial(_ value: Upstream.Output, at index: Int) {
            partial[index] = value
        }

        override func snapshot() -> Downstream.Input {
            if !isComplete {
                // The engine calls this only once every input has a value.
                values = partial.map { $0! }
                partial = []
                isComplete = true
            }
            return values
        }
    }
}
