public import OpenCombine

// MARK: - Operator

extension Publishers {

    /// Loads the first page at once, then the next page each time `signal` emits, until a
    /// page has no next cursor; publishes all the items loaded so far after each page.
    ///
    ///     signal:  ---------x------x-------x--
    ///     pages:   -P1-     -P2-   -P3(last)|
    ///     output:  --A--------B-------C|       A=P1 B=P1+P2 C=P1+P2+P3
    ///
    ///     let loadMore = trigger.signal(activatedBy: topic.id)
    ///     let medias = Publishers.paginated(
    ///         firstPage: api.medias(topic: topic.id, cursor: nil),
    ///         nextPage: { cursor in api.medias(topic: topic.id, cursor: cursor) },
    ///         loadingNextOn: loadMore
    ///     )
    ///
    /// - Parameters:
    ///   - firstPage: The publisher of the first page.
    ///   - nextPage: Makes the publisher of the page at a cursor.
    ///   - signal: Each output after a page loaded (and had a next cursor) loads the next one.
    ///
    /// The first and next page publishers may be of different types with the same output
    /// and failure.
    /// - Returns: A ``Publishers/Paginated`` publisher.
    public static func paginated<FirstPage: Publisher, NextPage: Publisher, Signal: Publisher, Item, Cursor>(
        firstPage: FirstPage,
        nextPage: @escaping (Cursor) -> NextPage,
        loadingNextOn signal: Signal
    ) -> Paginated<FirstPage, NextPage, Signal, Item, Cursor>
        where FirstPage.Output == Page<Item, Cursor>,
              NextPage.Output == Page<Item, Cursor>,
              NextPage.Failure == FirstPage.Failure,
              Signal.Failure == Never
    {
        Paginated(firstPage: firstPage, nextPage: nextPage, loadingNextOn: signal)
    }
}

// MARK: - Publisher

extension Publishers {

    /// A publisher of the items of a paginated list loaded so far: the first page at once,
    /// the next page only when a signal fires, until the cursor runs out.
    ///
    ///     signal:  ---------x------x-------x--
    ///     pages:   -P1-     -P2-   -P3(last)|
    ///     output:  --A--------B-------C|       A=P1 B=P1+P2 C=P1+P2+P3
    ///
    ///     let medias = Publishers.Paginated(
    ///         firstPage: api.medias(topic: id, cursor: nil),
    ///         nextPage: { api.medias(topic: id, cursor: $0) },
    ///         loadingNextOn: trigger.signal(activatedBy: id)
    ///     )
    ///
    /// The signal is subscribed anew after each page that has a next cursor (as with
    /// `wait(untilOutputFrom:)`), so outputs of the signal while a page is loading are
    /// ignored. Each page publisher is asked for `.unlimited`; every page it emits is
    /// appended (the last page's cursor counts) and the page publisher's completion ends
    /// that page.
    ///
    /// Demand: downstream receives at most what it requested; pages loaded while it had no
    /// demand are coalesced into the next array it receives. Completion: after the last page
    /// (no next cursor, or a page publisher that emitted nothing) was delivered, or when the
    /// signal finishes while waiting, since no further page can load. Failure: a page
    /// failure is forwarded at once. Cancellation cancels the loading page or the signal,
    /// whichever is active, exactly once.
    public struct Paginated<FirstPage: Publisher, NextPage: Publisher, Signal: Publisher, Item, Cursor>: Publisher
        where FirstPage.Output == Page<Item, Cursor>,
              NextPage.Output == Page<Item, Cursor>,
              NextPage.Failure == FirstPage.Failure,
              Signal.Failure == Never
    {
        /// The type of the values this publisher emits.
        public typealias Output = [Item]
        /// The type of the error this publisher may fail with.
        public typealias Failure = FirstPage.Failure

        /// The publisher of the first page.
        public let firstPage: FirstPage
        /// Makes the publisher of the page at a cursor.
        public let nextPage: (Cursor) -> NextPage
        /// The publisher whose outputs load the next page.
        public let signal: Signal

        /// Creates a paginated publisher; see ``Publishers/paginated(firstPage:nextPage:loadingNextOn:)``.
        ///
        ///     let all = Publishers.Paginated(firstPage: first, nextPage: page(at:), loadingNextOn: more)
        public init(
            firstPage: FirstPage,
            nextPage: @escaping (Cursor) -> NextPage,
            loadingNextOn signal: Signal
        ) {
            self.firstPage = firstPage
            self.nextPage = nextPage
            self.signal = signal
        }

        /// Attaches `subscriber`; called by `subscribe(_:)`, not directly.
        ///
        ///     publisher.subscribe(subscriber) // calls receive(subscriber:)
        public func receive<Downstream: Subscriber>(subscriber: Downstream)
            where Downstream.Input == Output, Downstream.Failure == Failure
        {
            let inner = Inner(downstream: subscriber, nextPage: nextPage, signal: signal)
            subscriber.receive(subscription: inner)
            inner.load(firstPage)
        }
    }
}

// MARK: - Subscription

extension Publishers.Paginated {
    private final class Inner<Downstream: Subscriber>: Subscription, CustomStringConvertible
        where Downstream.Input == [Item], Downstream.Failure == FirstPage.Failure
    {
        private enum Phase {
            /// A page publisher is subscribed (or being subscribed).
            case loading(generation: Int, subscription: (any Subscription)?, next: Cursor?)
            /// Waiting for the signal before loading the page at `cursor`.
            case waiting(generation: Int, subscription: (any Subscription)?, cursor: Cursor)
            /// No more pages will load.
            case done
        }

        private let lock = Lock()
        private let downstream: Downstream
        private let nextPage: (Cursor) -> NextPage
        private let signal: Signal

        private var phase = Phase.done
        private var generation = 0
        private var isTerminal = false
        private var items: [Item] = []
        private var isDirty = false
        private var demand = Subscribers.Demand.none
        private var pendingCompletion: Subscribers.Completion<Downstream.Failure>?
        private var isEmitting = false

        init(downstream: Downstream, nextPage: @escaping (Cursor) -> NextPage, signal: Signal) {
            self.downstream = downstream
            self.nextPage = nextPage
            self.signal = signal
        }

        var description: String { "Paginated" }

        /// Subscribes to `page` unless cancelled.
        func load<PagePublisher: Publisher>(_ page: PagePublisher)
            where PagePublisher.Output == Page<Item, Cursor>, PagePublisher.Failure == FirstPage.Failure
        {
            lock.lock()
            guard !isTerminal else {
                lock.unlock()
                return
            }
            generation += 1
            let current = generation
            phase = .loading(generation: current, subscription: nil, next: nil)
            lock.unlock()
            page.subscribe(PageSide(inner: self, generation: current))
        }

        // MARK: Pages

        private func page(_ generation: Int, received subscription: any Subscription) {
            lock.lock()
            guard !isTerminal, case .loading(generation, nil, let next) = phase else {
                lock.unlock()
                subscription.cancel()
                return
            }
            phase = .loading(generation: generation, subscription: subscription, next: next)
            lock.unlock()
            subscription.request(.unlimited)
        }

        private func page(_ generation: Int, received page: Page<Item, Cursor>) {
            lock.lock()
            guard !isTerminal, pendingCompletion == nil,
                  case .loading(generation, let subscription, _) = phase else {
                lock.unlock()
                return
            }
            phase = .loading(generation: generation, subscription: subscription, next: page.next)
            items.append(contentsOf: page.items)
            isDirty = true
            drain()
        }

        private func page(
            _ generation: Int,
            received completion: Subscribers.Completion<FirstPage.Failure>
        ) {
            lock.lock()
            guard !isTerminal, pendingCompletion == nil,
                  case .loading(generation, _, let next) = phase else {
                lock.unlock()
                return
            }
            switch (completion, next) {
            case (.failure, _):
                phase = .done
                pendingCompletion = completion
                drain()
            case (.finished, nil):
                phase = .done
                pendingCompletion = .finished
                drain()
            case let (.finished, cursor?):
                self.generation += 1
                let current = self.generation
                phase = .waiting(generation: current, subscription: nil, cursor: cursor)
                drain()
                signal.subscribe(SignalSide(inner: self, generation: current))
            }
        }

        // MARK: Signal

        private func signal(_ generation: Int, received subscription: any Subscription) {
            lock.lock()
            guard !isTerminal, case .waiting(generation, nil, let cursor) = phase else {
                lock.unlock()
                subscription.cancel()
                return
            }
            phase = .waiting(generation: generation, subscription: subscription, cursor: cursor)
            lock.unlock()
            subscription.request(.max(1))
        }

        private func signalFired(_ generation: Int) {
            lock.lock()
            guard !isTerminal, case .waiting(generation, let subscription, let cursor) = phase else {
                lock.unlock()
                return
            }
            phase = .done
            lock.unlock()
            subscription?.cancel()
            load(nextPage(cursor))
        }

        private func signalFinished(_ generation: Int) {
            lock.lock()
            guard !isTerminal, case .waiting(generation, _, _) = phase else {
                lock.unlock()
                return
            }
            phase = .done
            pendingCompletion = .finished
            drain()
        }

        // MARK: Subscription

        func request(_ demand: Subscribers.Demand) {
            lock.lock()
            guard !isTerminal else {
                lock.unlock()
                return
            }
            self.demand += demand
            drain()
        }

        func cancel() {
            lock.lock()
            guard !isTerminal else {
                lock.unlock()
                return
            }
            isTerminal = true
            let subscription = takeSubscription()
            lock.unlock()
            subscription?.cancel()
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
                if let completion = pendingCompletion, !isDirty || isFailure(completion) {
                    isTerminal = true
                    isEmitting = false
                    let subscription = takeSubscription()
                    lock.unlock()
                    subscription?.cancel()
                    downstream.receive(completion: completion)
                    return
                }
                guard isDirty, demand > 0 else { break }
                isDirty = false
                demand -= 1
                let snapshot = items
                lock.unlock()
                let additionalDemand = downstream.receive(snapshot)
                lock.lock()
                demand += additionalDemand
            }
            isEmitting = false
            lock.unlock()
        }

        private func isFailure(_ completion: Subscribers.Completion<Downstream.Failure>) -> Bool {
            if case .failure = completion { return true }
            return false
        }

        /// - Precondition: `lock` is held.
        private func takeSubscription() -> (any Subscription)? {
            defer { phase = .done }
            switch phase {
            case let .loading(_, subscription, _), let .waiting(_, subscription, _):
                return subscription
            case .done:
                return nil
            }
        }

        // MARK: Sides

        /// Subscribes the operator to one page publisher.
        private struct PageSide: Subscriber {
            typealias Input = Page<Item, Cursor>
            typealias Failure = FirstPage.Failure

            let combineIdentifier = CombineIdentifier()
            private let inner: Inner
            private let generation: Int

            init(inner: Inner, generation: Int) {
                self.inner = inner
                self.generation = generation
            }

            func receive(subscription: any Subscription) {
                inner.page(generation, received: subscription)
            }

            func receive(_ input: Page<Item, Cursor>) -> Subscribers.Demand {
                inner.page(generation, received: input)
                return .none
            }

            func receive(completion: Subscribers.Completion<FirstPage.Failure>) {
                inner.page(generation, received: completion)
            }
        }

        /// Subscribes the operator to the signal while it waits for the next page.
        private struct SignalSide: Subscriber {
            typealias Input = Signal.Output
            typealias Failure = Never

            let combineIdentifier = CombineIdentifier()
            private let inner: Inner
            private let generation: Int

            init(inner: Inner, generation: Int) {
                self.inner = inner
                self.generation = generation
            }

            func receive(subscription: any Subscription) {
                inner.signal(generation, received: subscription)
            }

            func receive(_ input: Signal.Output) -> Subscribers.Demand {
                inner.signalFired(generation)
                return .none
            }

            func receive(completion: Subscribers.Completion<Never>) {
                inner.signalFinished(generation)
            }
        }
    }
}
