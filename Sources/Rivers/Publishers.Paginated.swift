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
    /// Each next page is `nextPage(cursor).wait(untilOutputFrom: signal)`, subscribed once the
    /// page before it completed: the signal is subscribed anew for each page, so its outputs
    /// while a page is loading are ignored. Each page publisher is asked for `.unlimited`;
    /// every page it emits is appended (the last page's cursor counts) and its completion ends
    /// that page. Pages that load synchronously (a signal such as `Just(())` loads the whole
    /// list) load one after another at a constant stack depth, however many there are.
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
            inner.start()
            inner.load(firstPage)
        }
    }
}

// MARK: - Subscription

extension Publishers.Paginated {
    private final class Inner<Downstream: Subscriber>: SerialEmitter<Downstream>, SourceOwner
        where Downstream.Input == [Item], Downstream.Failure == FirstPage.Failure
    {
        /// A page publisher is known by its generation.
        typealias SourceKey = Int
        typealias SourceOutput = Page<Item, Cursor>
        typealias SourceFailure = FirstPage.Failure

        private let nextPage: (Cursor) -> NextPage
        private let signal: Signal

        /// Identifies the current page publisher; events of earlier ones are ignored.
        private var generation = 0
        private var pageSubscription: (any Subscription)?
        /// The cursor of the last page the current page publisher emitted.
        private var nextCursor: Cursor?
        /// The current page publisher waits for the signal.
        private var isWaitingForSignal = false
        /// The cursor of the page to subscribe next: the loop subscribes it, so that pages
        /// which complete synchronously do not recurse.
        private var cursorToLoad: Cursor?
        private var items: [Item] = []
        private var isDirty = false

        init(downstream: Downstream, nextPage: @escaping (Cursor) -> NextPage, signal: Signal) {
            self.nextPage = nextPage
            self.signal = signal
            super.init(downstream: downstream, description: "Paginated")
        }

        /// Subscribes to the first page.
        func load(_ firstPage: FirstPage) {
            lock.lock()
            guard !isTerminal else {
                lock.unlock()
                return
            }
            generation += 1
            let current = generation
            lock.unlock()
            firstPage.subscribe(Source(self, key: current))
        }

        // MARK: Pages

        func source(_ generation: Int, received subscription: any Subscription) {
            lock.lock()
            guard !isTerminal, !isCompleting, generation == self.generation, pageSubscription == nil else {
                lock.unlock()
                subscription.cancel()
                return
            }
            pageSubscription = subscription
            lock.unlock()
            subscription.request(.unlimited)
        }

        func source(_ generation: Int, received page: Page<Item, Cursor>) {
            lock.lock()
            guard !isTerminal, !isCompleting, generation == self.generation else {
                lock.unlock()
                return
            }
            nextCursor = page.next
            items.append(contentsOf: page.items)
            isDirty = true
            drain()
        }

        func source(_ generation: Int, received completion: Subscribers.Completion<FirstPage.Failure>) {
            lock.lock()
            guard !isTerminal, !isCompleting, generation == self.generation else {
                lock.unlock()
                return
            }
            pageSubscription = nil
            switch completion {
            case .failure:
                complete(with: completion)
            case .finished:
                if let cursor = nextCursor.take() {
                    cursorToLoad = cursor
                } else {
                    complete(with: .finished)
                }
            }
            drain()
        }

        // MARK: Signal

        private func signalFired(_ generation: Int) {
            lock.lock()
            if generation == self.generation {
                isWaitingForSignal = false
            }
            lock.unlock()
        }

        /// The signal finished: if the current page still waited for it, no page can load.
        private func signalFinished(_ generation: Int) {
            lock.lock()
            guard !isTerminal, !isCompleting, generation == self.generation, isWaitingForSignal else {
                lock.unlock()
                return
            }
            complete(with: .finished)
            drain()
        }

        // MARK: Serial emission

        /// Delivers the items loaded so far, or subscribes the next page.
        override func emitNext() -> Bool {
            if isDirty, demand > 0 {
                isDirty = false
                deliver(items)
                return true
            }
            guard let cursor = cursorToLoad.take() else { return false }
            generation += 1
            let current = generation
            isWaitingForSignal = true
            lock.unlock()
            let signal = self.signal.handleEvents(
                receiveOutput: { [weak self] _ in self?.signalFired(current) },
                receiveCompletion: { [weak self] _ in self?.signalFinished(current) }
            )
            nextPage(cursor).wait(untilOutputFrom: signal).subscribe(Source(self, key: current))
            lock.lock()
            return true
        }

        override var isDrained: Bool {
            !isDirty
        }

        override func takeSources() -> [any Cancellable] {
            cursorToLoad = nil
            return pageSubscription.take().map { [$0] } ?? []
        }
    }
}
