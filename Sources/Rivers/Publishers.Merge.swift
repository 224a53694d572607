public import OpenCombine

// MARK: - Operator

extension Publisher {

    /// Interleaves the values of this publisher and `other` as they arrive.
    ///
    ///     self:   -1----2-----|
    ///     other:  ---a-----b-----|
    ///     output: -1-a--2--b-----|
    ///
    ///     let events = userEvents.merge(with: systemEvents)
    ///     let cancellable = events.sink { print($0) }
    ///
    /// Finishes when both finished; fails with the first failure, cancelling the other.
    ///
    /// - Parameter other: A publisher with the same output and failure types.
    /// - Returns: A ``Publishers/Merge`` of the two.
    public func merge<Other: Publisher>(
        with other: Other
    ) -> Publishers.Merge<Self, Other> where Other.Output == Output, Other.Failure == Failure {
        Publishers.Merge(self, other)
    }
}

// MARK: - Publisher

extension Publishers {

    /// A publisher that interleaves the values of two publishers of the same types.
    ///
    ///     a:      -1----2-----|
    ///     b:      ---x-----y-----|
    ///     output: -1-x--2--y-----|
    ///
    ///     let reloads = Publishers.Merge(manualReloads, timerReloads)
    ///
    /// Demand: downstream never receives more than it requested. While its demand is
    /// bounded each input is asked for one value at a time, so at most one value per input is
    /// buffered; once it asks for `.unlimited`, so are the inputs. Completion: after both
    /// inputs finished and buffered values were delivered. Failure: the first one is forwarded
    /// at once and the other input is cancelled.
    public struct Merge<A: Publisher, B: Publisher>: Publisher
        where A.Output == B.Output, A.Failure == B.Failure
    {
        /// The type of the values this publisher emits.
        public typealias Output = A.Output
        /// The type of the error this publisher may fail with.
        public typealias Failure = A.Failure

        /// The first input.
        public let a: A
        /// The second input.
        public let b: B

        /// Creates a publisher that interleaves the values of `a` and `b`.
        ///
        ///     let both = Publishers.Merge(Just(1), Just(2)) // emits 1, 2
        public init(_ a: A, _ b: B) {
            self.a = a
            self.b = b
        }

        /// Attaches `subscriber`; called by `subscribe(_:)`, not directly.
        ///
        ///     publisher.subscribe(subscriber) // calls receive(subscriber:)
        public func receive<Downstream: Subscriber>(subscriber: Downstream)
            where Downstream.Input == Output, Downstream.Failure == Failure
        {
            let engine = MergeEngine(downstream: subscriber, childCount: 2, description: "Merge")
            subscriber.receive(subscription: engine)
            engine.start()
            engine.subscribe(a, at: 0)
            engine.subscribe(b, at: 1)
        }
    }
}
