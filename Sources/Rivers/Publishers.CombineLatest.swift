public import OpenCombine

// MARK: - Operator

extension Publisher {

    /// Subscribes to `other` as well and publishes a tuple of the latest value of each,
    /// whenever either publishes, once both have published at least once.
    ///
    /// Only the latest value of each input is kept. If downstream has no demand when an
    /// input changes, updates are coalesced and the next request receives the latest
    /// combination. The result finishes when both inputs finished (or as soon as one
    /// finishes without a value), and fails with the first failure, cancelling the other input.
    ///
    ///     self:   -1-----2-------3--|
    ///     other:  ----a-----b--------|
    ///     output: ----A--B--C----D---|    A=(1,a) B=(2,a) C=(2,b) D=(3,b)
    ///
    ///     let name = PassthroughSubject<String, Never>()
    ///     let count = PassthroughSubject<Int, Never>()
    ///     let cancellable = name.combineLatest(count).sink { print("\($0): \($1)") }
    ///     name.send("tasks")   // prints nothing yet
    ///     count.send(12)       // prints "tasks: 12"
    ///     count.send(13)       // prints "tasks: 13"
    ///
    /// - Parameter other: Another publisher with the same failure type.
    /// - Returns: A publisher of `(Output, Other.Output)` tuples.
    public func combineLatest<Other: Publisher>(
        _ other: Other
    ) -> Publishers.CombineLatest<Self, Other> where Other.Failure == Failure {
        Publishers.CombineLatest(self, other)
    }

    /// Combines the latest values of this publisher and `other` with `transform`.
    ///
    ///     self:   -1-----2--|
    ///     other:  ----a------|
    ///     output: ----A--B---|    A=f(1,a) B=f(2,a)
    ///
    ///     let total = prices.combineLatest(quantities) { $0 * Double($1) }
    ///
    /// - Parameters:
    ///   - other: Another publisher with the same failure type.
    ///   - transform: Combines the latest value of each publisher into one output.
    public func combineLatest<Other: Publisher, Result>(
        _ other: Other,
        _ transform: @escaping (Output, Other.Output) -> Result
    ) -> Publishers.Map<Publishers.CombineLatest<Self, Other>, Result>
        where Other.Failure == Failure
    {
        Publishers.CombineLatest(self, other).map(transform)
    }

    /// Combines the latest values of this publisher and two others into 3-tuples.
    ///
    ///     self:   -1--------2---|
    ///     b:      ---a-----------|
    ///     c:      -----x----------|
    ///     output: -----A----B-----|    A=(1,a,x) B=(2,a,x)
    ///
    ///     let cancellable = a.combineLatest(b, c).sink { print($0, $1, $2) }
    public func combineLatest<B: Publisher, C: Publisher>(
        _ b: B,
        _ c: C
    ) -> Publishers.CombineLatest3<Self, B, C>
        where B.Failure == Failure, C.Failure == Failure
    {
        Publishers.CombineLatest3(self, b, c)
    }

    /// Combines the latest values of this publisher and two others with `transform`.
    ///
    ///     self:   -1--------2---|
    ///     b:      ---a-----------|
    ///     c:      -----x----------|
    ///     output: -----A----B-----|    A=f(1,a,x) B=f(2,a,x)
    ///
    ///     let label = count.combineLatest(unit, locale) { format($0, $1, $2) }
    public func combineLatest<B: Publisher, C: Publisher, Result>(
        _ b: B,
        _ c: C,
        _ transform: @escaping (Output, B.Output, C.Output) -> Result
    ) -> Publishers.Map<Publishers.CombineLatest3<Self, B, C>, Result>
        where B.Failure == Failure, C.Failure == Failure
    {
        Publishers.CombineLatest3(self, b, c).map(transform)
    }

    /// Combines the latest values of this publisher and three others into 4-tuples.
    ///
    ///     self:   -1-----------2--|
    ///     b:      --a--------------|
    ///     c:      ---x--------------|
    ///     d:      ----p--------------|
    ///     output: ----A--------B-----|    A=(1,a,x,p) B=(2,a,x,p)
    ///
    ///     let cancellable = a.combineLatest(b, c, d).sink { print($0, $1, $2, $3) }
    public func combineLatest<B: Publisher, C: Publisher, D: Publisher>(
        _ b: B,
        _ c: C,
        _ d: D
    ) -> Publishers.CombineLatest4<Self, B, C, D>
        where B.Failure == Failure, C.Failure == Failure, D.Failure == Failure
    {
        Publishers.CombineLatest4(self, b, c, d)
    }

    /// Combines the latest values of this publisher and three others with `transform`.
    ///
    ///     self:   -1-----------2--|
    ///     b:      --a--------------|
    ///     c:      ---x--------------|
    ///     d:      ----p--------------|
    ///     output: ----A--------B-----|    A=f(1,a,x,p) B=f(2,a,x,p)
    ///
    ///     let row = id.combineLatest(name, count, date) { Row(id: $0, name: $1, count: $2, date: $3) }
    public func combineLatest<B: Publisher, C: Publisher, D: Publisher, Result>(
        _ b: B,
        _ c: C,
        _ d: D,
        _ transform: @escaping (Output, B.Output, C.Output, D.Output) -> Result
    ) -> Publishers.Map<Publishers.CombineLatest4<Self, B, C, D>, Result>
        where B.Failure == Failure, C.Failure == Failure, D.Failure == Failure
    {
        Publishers.CombineLatest4(self, b, c, d).map(transform)
    }
}

// MARK: - Publishers

extension Publishers {

    /// A publisher of the latest values of two publishers, as a tuple, emitted whenever
    /// either publishes once both have published.
    ///
    ///     a:      -1-----2-------3--|
    ///     b:      ----a-----b--------|
    ///     output: ----A--B--C----D---|    A=(1,a) B=(2,a) C=(2,b) D=(3,b)
    ///
    ///     let latest = Publishers.CombineLatest(groups, metadata)
    ///
    /// Demand: each input is asked for `.unlimited` values and only its latest value is
    /// kept; downstream receives at most what it requested, the latest combination first.
    /// Completion: finishes when both inputs finished, or as soon as one finishes without a
    /// value. Failure: the first failure is forwarded and the other input is cancelled.
    public struct CombineLatest<A: Publisher, B: Publisher>: Publisher
        where A.Failure == B.Failure
    {
        /// The type of the values this publisher emits.
        public typealias Output = (A.Output, B.Output)
        /// The type of the error this publisher may fail with.
        public typealias Failure = A.Failure

        /// The first input.
        public let a: A
        /// The second input.
        public let b: B

        /// Creates a publisher of the latest values of `a` and `b`.
        ///
        ///     let latest = Publishers.CombineLatest(Just(1), Just("a")) // emits (1, "a")
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
            let inner = Inner(downstream: subscriber)
            subscriber.receive(subscription: inner)
            inner.start()
            inner.subscribe(a, b)
        }
    }

    /// A publisher of the latest values of three publishers, as a tuple.
    ///
    ///     a:      -1--------2---|
    ///     b:      ---a-----------|
    ///     c:      -----x----------|
    ///     output: -----A----B-----|    A=(1,a,x) B=(2,a,x)
    ///
    ///     let latest = Publishers.CombineLatest3(list, details, settings)
    ///
    /// Demand, completion and failure follow ``Publishers/CombineLatest``.
    public struct CombineLatest3<A: Publisher, B: Publisher, C: Publisher>: Publisher
        where A.Failure == B.Failure, B.Failure == C.Failure
    {
        /// The type of the values this publisher emits.
        public typealias Output = (A.Output, B.Output, C.Output)
        /// The type of the error this publisher may fail with.
        public typealias Failure = A.Failure

        /// The first input.
        public let a: A
        /// The second input.
        public let b: B
        /// The third input.
        public let c: C

        /// Creates a publisher of the latest values of `a`, `b` and `c`.
        ///
        ///     let latest = Publishers.CombineLatest3(Just(1), Just("a"), Just(true))
        public init(_ a: A, _ b: B, _ c: C) {
            self.a = a
            self.b = b
            self.c = c
        }

        /// Attaches `subscriber`; called by `subscribe(_:)`, not directly.
        ///
        ///     publisher.subscribe(subscriber) // calls receive(subscriber:)
        public func receive<Downstream: Subscriber>(subscriber: Downstream)
            where Downstream.Input == Output, Downstream.Failure == Failure
        {
            let inner = Inner(downstream: subscriber)
            subscriber.receive(subscription: inner)
            inner.start()
            inner.subscribe(a, b, c)
        }
    }

    /// A publisher of the latest values of four publishers, as a tuple.
    ///
    ///     a:      -1-----------2--|
    ///     b:      --a--------------|
    ///     c:      ---x--------------|
    ///     d:      ----p--------------|
    ///     output: ----A--------B-----|    A=(1,a,x,p) B=(2,a,x,p)
    ///
    ///     let latest = Publishers.CombineLatest4(list, details, settings, session)
    ///
    /// Demand, completion and failure follow ``Publishers/CombineLatest``.
    public struct CombineLatest4<A: Publisher, B: Publisher, C: Publisher, D: Publisher>: Publisher
        where A.Failure == B.Failure, B.Failure == C.Failure, C.Failure == D.Failure
    {
        /// The type of the values this publisher emits.
        public typealias Output = (A.Output, B.Output, C.Output, D.Output)
        /// The type of the error this publisher may fail with.
        public typealias Failure = A.Failure

        /// The first input.
        public let a: A
        /// The second input.
        public let b: B
        /// The third input.
        public let c: C
        /// The fourth input.
        public let d: D

        /// Creates a publisher of the latest values of `a`, `b`, `c` and `d`.
        ///
        ///     let latest = Publishers.CombineLatest4(Just(1), Just("a"), Just(true), Just(2.5))
        public init(_ a: A, _ b: B, _ c: C, _ d: D) {
            self.a = a
            self.b = b
            self.c = c
            self.d = d
        }

        /// Attaches `subscriber`; called by `subscribe(_:)`, not directly.
        ///
        ///     publisher.subscribe(subscriber) // calls receive(subscriber:)
        public func receive<Downstream: Subscriber>(subscriber: Downstream)
            where Downstream.Input == Output, Downstream.Failure == Failure
        {
            let inner = Inner(downstream: subscriber)
            subscriber.receive(subscription: inner)
            inner.start()
            inner.subscribe(a, b, c, d)
        }
    }
}

// MARK: - Subscriptions

extension Publishers.CombineLatest {
    private final class Inner<Downstream: Subscriber>: LatestEngine<Downstream>
        where Downstream.Input == (A.Output, B.Output), Downstream.Failure == A.Failure
    {
        private var a: A.Output?
        private var b: B.Output?

        init(downstream: Downstream) {
            super.init(downstream: downstream, childCount: 2, description: "CombineLatest")
        }

        func subscribe(_ a: A, _ b: B) {
            subscribe(a, at: 0, through: LatestStore(engine: self) { [unowned self] in self.a = $1 })
            subscribe(b, at: 1, through: LatestStore(engine: self) { [unowned self] in self.b = $1 })
        }

        override func snapshot() -> Downstream.Input {
            // The engine calls this only once every input has a value.
            (a!, b!)
        }
    }
}

extension Publishers.CombineLatest3 {
    private final class Inner<Downstream: Subscriber>: LatestEngine<Downstream>
        where Downstream.Input == (A.Output, B.Output, C.Output), Downstream.Failure == A.Failure
    {
        private var a: A.Output?
        private var b: B.Output?
        private var c: C.Output?

        init(downstream: Downstream) {
            super.init(downstream: downstream, childCount: 3, description: "CombineLatest3")
        }

        func subscribe(_ a: A, _ b: B, _ c: C) {
            subscribe(a, at: 0, through: LatestStore(engine: self) { [unowned self] in self.a = $1 })
            subscribe(b, at: 1, through: LatestStore(engine: self) { [unowned self] in self.b = $1 })
            subscribe(c, at: 2, through: LatestStore(engine: self) { [unowned self] in self.c = $1 })
        }

        override func snapshot() -> Downstream.Input {
            (a!, b!, c!)
        }
    }
}

extension Publishers.CombineLatest4 {
    private final class Inner<Downstream: Subscriber>: LatestEngine<Downstream>
        where Downstream.Input == (A.Output, B.Output, C.Output, D.Output),
              Downstream.Failure == A.Failure
    {
        private var a: A.Output?
        private var b: B.Output?
        private var c: C.Output?
        private var d: D.Output?

        init(downstream: Downstream) {
            super.init(downstream: downstream, childCount: 4, description: "CombineLatest4")
        }

        func subscribe(_ a: A, _ b: B, _ c: C, _ d: D) {
            subscribe(a, at: 0, through: LatestStore(engine: self) { [unowned self] in self.a = $1 })
            subscribe(b, at: 1, through: LatestStore(engine: self) { [unowned self] in self.b = $1 })
            subscribe(c, at: 2, through: LatestStore(engine: self) { [unowned self] in self.c = $1 })
            subscribe(d, at: 3, through: LatestStore(engine: self) { [unowned self] in self.d = $1 })
        }

        override func snapshot() -> Downstream.Input {
            (a!, b!, c!, d!)
        }
    }
}
