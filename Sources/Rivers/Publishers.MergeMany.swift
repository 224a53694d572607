public import OpenCombine

// MARK: - Operator

extension Sequence where Element: Publisher {

    /// Interleaves the values of every publisher of this sequence as they arrive.
    ///
    ///     p0:     -1-----2---|
    ///     p1:     ---a-------|
    ///     p2:     -----x--------|
    ///     output: -1-a-x-2------|
    ///
    ///     let anyReload = streams.map(\.reloadSignal).merged()
    ///
    /// - Returns: A ``Publishers/MergeMany`` of the publishers.
    public func merged() -> Publishers.MergeMany<Element> {
        Publishers.MergeMany(self)
    }
}

// MARK: - Publisher

extension Publishers {

    /// A publisher that interleaves the values of any number of publishers of one type.
    ///
    ///     p0:     -1-----2---|
    ///     p1:     ---a-------|
    ///     p2:     -----x--------|
    ///     output: -1-a-x-2------|
    ///
    ///     let all = Publishers.MergeMany(upstreams.map { $0.events })
    ///     let cancellable = all.sink { print($0) }
    ///
    /// With no inputs it finishes at once. Demand, completion and failure follow
    /// ``Publishers/Merge``: at most one buffered value per input while demand is bounded,
    /// finished after every input finished, the first failure cancels the rest.
    public struct MergeMany<Upstream: Publisher>: Publisher {
        /// The type of the values this publisher emits.
        public typealias Output = Upstream.Output
        /// The type of the error this publisher may fail with.
        public typealias Failure = Upstream.Failure

        /// The inputs.
        public let publishers: [Upstream]

        /// Creates a publisher that interleaves the values of `publishers`.
        ///
        ///     let all = Publishers.MergeMany([Just(1), Just(2), Just(3)])
        public init<S: Swift.Sequence>(_ publishers: S) where S.Element == Upstream {
            self.publishers = Array(publishers)
        }

        /// Creates a publisher that interleaves the values of `publishers`.
        ///
        ///     let all = Publishers.MergeMany(Just(1), Just(2), Just(3))
        public init(_ publishers: Upstream...) {
            self.publishers = publishers
        }

        /// Returns a `MergeMany` with `other` added to the inputs.
        ///
        ///     let more = Publishers.MergeMany(a, b).merge(with: c)
        public func merge(with other: Upstream) -> Publishers.MergeMany<Upstream> {
            Publishers.MergeMany(publishers + [other])
        }

        /// Attaches `subscriber`; called by `subscribe(_:)`, not directly.
        ///
        ///     publisher.subscribe(subscriber) // calls receive(subscriber:)
        public func receive<Downstream: Subscriber>(subscriber: Downstream)
            where Downstream.Input == Output, Downstream.Failure == Failure
        {
            let engine = MergeEngine(
                downstream: subscriber,
                childCount: publishers.count,
                description: "MergeMany"
            )
            subscriber.receive(subscription: engine)
            engine.start()
            for (index, publisher) in publishers.enumerated() {
                engine.subscribe(publisher, at: index)
            }
        }
    }
}
