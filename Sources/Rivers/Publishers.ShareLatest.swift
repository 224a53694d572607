public import OpenCombine

extension Publisher {
    /// Shares one subscription to this publisher among all subscribers, replaying the latest
    /// value to each newcomer and keeping, per subscriber, only the latest value it has not
    /// taken yet. The upstream is subscribed when the first subscriber arrives and cancelled
    /// when the last one leaves (the latest value is then forgotten).
    ///
    ///     upstream:      --a----b--c--d------
    ///     subscriber 1:  --a----b--c--d------   (demand always there)
    ///     subscriber 2:         b---------d--   (joins after a; asks again only after d arrived:
    ///                                           the conflated c is skipped)
    ///
    ///     let states = refreshes.scan(LiveState()) { $0.applying($1) }.shareLatest()
    ///     states.subscribe(fastClient)
    ///     states.subscribe(slowClient)    // gets the latest state whenever it asks
    ///
    /// The upstream is asked for `.unlimited`: it should be a stream of states (each value
    /// supersedes the previous), not of events that must all be seen.
    public func shareLatest() -> Publishers.ShareLatest<Self> {
        Publishers.ShareLatest(upstream: self)
    }
}

extension Publishers {
    /// A reference-counted multicast of the latest value; see ``Publisher/shareLatest()``.
    ///
    /// A class, like `share()`: copies of it are the same shared subscription.
    ///
    /// Completion (and failure) reaches every subscriber at once, dropping values they had not
    /// taken yet; a later subscriber then starts a new upstream subscription. Whatever thread
    /// the upstream completes on, a subscriber receives its subscription first, and the
    /// completion only after the value it may be receiving at that moment, never beside it.
    public final class ShareLatest<Upstream: Publisher>: Publisher {
        /// The type of the values this publisher emits.
        public typealias Output = Upstream.Output
        /// The type of the error this publisher may fail with.
        public typealias Failure = Upstream.Failure

        /// The shared publisher.
        public let upstream: Upstream

        private let lock = Lock.make()
        private var members: [ObjectIdentifier: any ShareLatestMember<Output, Failure>] = [:]
        private var connection: Connection?
        private var latest: Output?

        /// Creates a shared publisher of `upstream`'s latest value.
        ///
        ///     let shared = Publishers.ShareLatest(upstream: states)
        public init(upstream: Upstream) {
            self.upstream = upstream
        }

        /// Subscribers now attached.
        public var subscriberCount: Int {
            lock.lock()
            defer { lock.unlock() }
            return members.count
        }

        /// Attaches `subscriber`; called by `subscribe(_:)`, not directly.
        ///
        ///     shared.subscribe(subscriber) // calls receive(subscriber:)
        public func receive<Downstream: Subscriber>(subscriber: Downstream)
            where Downstream.Input == Output, Downstream.Failure == Failure
        {
            lock.lock()
            let member = Member(parent: self, downstream: subscriber, latest: latest)
            members[ObjectIdentifier(member)] = member
            let newConnection: Connection?
            if connection == nil {
                newConnection = Connection(parent: self)
                connection = newConnection
            } else {
                newConnection = nil
            }
            lock.unlock()
            subscriber.receive(subscription: member)
            member.start()
            if let newConnection { upstream.subscribe(newConnection) }
        }

        // MARK: - From the upstream

        fileprivate func receive(_ value: Output, from source: Connection) {
            lock.lock()
            guard connection === source else {
                lock.unlock()
                return
            }
            latest = value
            let current = Array(members.values)
            lock.unlock()
            for member in current { member.offer(value) }
        }

        fileprivate func receive(completion: Subscribers.Completion<Failure>, from source: Connection) {
            lock.lock()
            guard connection === source else {
                lock.unlock()
                return
            }
            connection = nil
            latest = nil
            let current = Array(members.values)
            members.removeAll()
            lock.unlock()
            for member in current { member.end(with: completion) }
        }

        // MARK: - From a subscriber

        fileprivate func remove(_ member: AnyObject) {
            lock.lock()
            guard members.removeValue(forKey: ObjectIdentifier(member)) != nil else {
                lock.unlock()
                return
            }
            let lastConnection = members.isEmpty ? connection : nil
            if lastConnection != nil {
                connection = nil
                latest = nil
            }
            lock.unlock()
            lastConnection?.cancel()
        }

        // MARK: - Subscriptions

        /// The one subscription to the upstream.
        fileprivate final class Connection: Subscriber {
            typealias Input = Output
            typealias Failure = Upstream.Failure

            private let lock = Lock.make()
            private weak var parent: ShareLatest?
            private var subscription: (any Subscription)?
            private var cancelled = false

            init(parent: ShareLatest) {
                self.parent = parent
            }

            func receive(subscription: any Subscription) {
                lock.lock()
                guard !cancelled, self.subscription == nil else {
                    lock.unlock()
                    subscription.cancel()
                    return
                }
                self.subscription = subscription
                lock.unlock()
                subscription.request(.unlimited)
            }

            func receive(_ input: Output) -> Subscribers.Demand {
                parent?.receive(input, from: self)
                return .none
            }

            func receive(completion: Subscribers.Completion<Failure>) {
                parent?.receive(completion: completion, from: self)
            }

            func cancel() {
                lock.lock()
                cancelled = true
                let subscription = self.subscription
                self.subscription = nil
                lock.unlock()
                subscription?.cancel()
            }
        }

        /// One subscriber: its outstanding demand and the latest value it has not taken.
        ///
        /// Values and the completion reach it from the upstream's thread, requests from its
        /// subscriber's: the drain loop delivers both, one at a time, the completion never
        /// during or ahead of a value in flight, and nothing before `start()`.
        fileprivate final class Member<Downstream: Subscriber>: SerialEmitter<Downstream>, ShareLatestMember
            where Downstream.Input == Output, Downstream.Failure == Failure
        {
            private var parent: ShareLatest?
            /// The latest value not taken yet.
            private var latest: Output?

            init(parent: ShareLatest, downstream: Downstream, latest: Output?) {
                self.parent = parent
                self.latest = latest
                super.init(downstream: downstream, description: "ShareLatest")
            }

            func offer(_ value: Output) {
                lock.lock()
                guard !isTerminal, !isCompleting else {
                    lock.unlock()
                    return
                }
                latest = value
                drain()
            }

            /// Ends the subscription: the completion goes after the value in flight, if any, and
            /// drops the value not taken yet (`isDrained` stays true: it never waits for demand).
            func end(with completion: Subscribers.Completion<Failure>) {
                lock.lock()
                guard !isTerminal, !isCompleting else {
                    lock.unlock()
                    return
                }
                // The parent already forgot this member.
                parent = nil
                complete(with: completion)
                drain()
            }

            // MARK: Serial emission

            override func emitNext() -> Bool {
                guard demand > 0, let value = latest.take() else { return false }
                deliver(value)
                return true
            }

            /// The membership: leaving it may cancel the upstream, if this was the last member.
            override func takeSources() -> [any Cancellable] {
                latest = nil
                guard let parent = parent.take() else { return [] }
                return [AnyCancellable { [self] in parent.remove(self) }]
            }
        }
    }
}

/// A subscriber of a ``Publishers/ShareLatest``, whatever its type.
private protocol ShareLatestMember<Output, Failure>: AnyObject {
    associatedtype Output
    associatedtype Failure: Error
    func offer(_ value: Output)
    func end(with completion: Subscribers.Completion<Failure>)
}
