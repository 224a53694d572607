public import OpenCombine

/// A publisher driven by a test, that records how it is used: each subscription, the demand
/// requested, cancellations (every call, to prove "exactly once") and what it delivered.
///
/// It honours demand: values sent while a subscriber has no outstanding demand wait in that
/// subscription's buffer until requested, so it never breaks the demand contract itself.
/// A completion is delivered as soon as the values before it were.
///
/// Hot: ``send(_:)`` and ``send(completion:)`` reach every current subscriber. Cold (made by
/// ``VirtualTimeScheduler/coldPublisher(_:values:error:)``): every subscription plays the
/// marble line from its own start.
///
///     let upstream = TestPublisher<Int, TestError>()
///     let recorder = upstream.map { $0 * 2 }.record()
///     upstream.send(1)
///     upstream.send(completion: .finished)
///     #expect(recorder.values == [2])
///     #expect(upstream.subscriptions[0].requestedDemands == [.unlimited])
public final class TestPublisher<Output, Failure: Error>: Publisher, CustomStringConvertible {
    private let scheduler: VirtualTimeScheduler?
    private let coldEvents: [TimedEvent<Output, Failure>]?
    private var conduits: [Conduit] = []

    /// Everything recorded about each subscription, in subscription order.
    public private(set) var subscriptions: [SubscriptionRecord] = []

    /// Creates a hot publisher that sends what the test tells it to.
    ///
    ///     let subject = TestPublisher<String, Never>(scheduler: scheduler)
    ///
    /// - Parameter scheduler: Stamps the records with marble frames.
    public init(scheduler: VirtualTimeScheduler? = nil) {
        self.scheduler = scheduler
        coldEvents = nil
    }

    fileprivate init(scheduler: VirtualTimeScheduler, coldEvents: [TimedEvent<Output, Failure>]) {
        self.scheduler = scheduler
        self.coldEvents = coldEvents
    }

    /// A short description for test failure messages.
    public var description: String { "TestPublisher(\(subscriptions.count) subscriptions)" }

    /// Whether some subscription is neither cancelled nor completed.
    public var hasActiveSubscription: Bool { subscriptions.contains { $0.isActive } }

    /// The number of `cancel()` calls over all subscriptions.
    public var cancelCount: Int { subscriptions.reduce(0) { $0 + $1.cancelCount } }

    /// Sends `value` to every current subscriber (buffered where there is no demand).
    ///
    ///     upstream.send(1)
    public func send(_ value: Output) {
        for conduit in conduits {
            conduit.enqueue(.value(value))
        }
    }

    /// Completes every current subscription (after its buffered values).
    ///
    ///     upstream.send(completion: .failure(.boom))
    public func send(completion: Subscribers.Completion<Failure>) {
        for conduit in conduits {
            conduit.enqueue(RecordedEvent(completion))
        }
    }

    /// Starts a recorded subscription; called by `subscribe(_:)`.
    public func receive<Downstream: Subscriber>(subscriber: Downstream)
        where Downstream.Input == Output, Downstream.Failure == Failure
    {
        let record = SubscriptionRecord(subscribedAtFrame: scheduler?.currentFrame ?? 0)
        subscriptions.append(record)
        let conduit = Conduit(
            downstream: AnySubscriber(subscriber),
            record: record,
            scheduler: scheduler
        ) { [weak self] conduit in
            self?.conduits.removeAll { $0 === conduit }
        }
        conduits.append(conduit)
        subscriber.receive(subscription: conduit)
        if let coldEvents, let scheduler {
            let start = scheduler.currentFrame
            for event in coldEvents {
                scheduler.schedule(atFrame: start + event.frame) { [weak conduit] in
                    conduit?.enqueue(event.event)
                }
            }
        }
    }

    /// What happened to one subscription of a ``TestPublisher``.
    ///
    ///     #expect(upstream.subscriptions[0].cancelCount == 1)
    public final class SubscriptionRecord: CustomStringConvertible {
        /// The frame in which the subscriber subscribed.
        public let subscribedAtFrame: Int
        /// Every demand requested, in order.
        public fileprivate(set) var requestedDemands: [Subscribers.Demand] = []
        /// How many times `cancel()` was called.
        public fileprivate(set) var cancelCount = 0
        /// The frame of the first `cancel()`.
        public fileprivate(set) var cancelledAtFrame: Int?
        /// The frame in which the completion was delivered.
        public fileprivate(set) var completedAtFrame: Int?
        /// How many values were delivered.
        public fileprivate(set) var deliveredCount = 0
        /// How many values wait for demand.
        public fileprivate(set) var bufferedCount = 0
        /// Breaches of the contract by the subscriber: requests of `.none`.
        public fileprivate(set) var violations: [String] = []

        init(subscribedAtFrame: Int) {
            self.subscribedAtFrame = subscribedAtFrame
        }

        /// Neither cancelled nor completed.
        public var isActive: Bool { cancelCount == 0 && completedAtFrame == nil }

        /// The sum of the demand requested.
        public var totalDemand: Subscribers.Demand { requestedDemands.reduce(.none, +) }

        /// A short description for test failure messages.
        public var description: String {
            "subscribed@\(subscribedAtFrame) demands=\(requestedDemands) cancels=\(cancelCount) delivered=\(deliveredCount)"
        }
    }

    private final class Conduit: Subscription {
        private var downstream: AnySubscriber<Output, Failure>?
        private let record: SubscriptionRecord
        private let scheduler: VirtualTimeScheduler?
        private let onEnd: (Conduit) -> Void
        private var buffer: [RecordedEvent<Output, Failure>] = []
        private var demand = Subscribers.Demand.none
        private var isDelivering = false

        init(
            downstream: AnySubscriber<Output, Failure>,
            record: SubscriptionRecord,
            scheduler: VirtualTimeScheduler?,
            onEnd: @escaping (Conduit) -> Void
        ) {
            self.downstream = downstream
            self.record = record
            self.scheduler = scheduler
            self.onEnd = onEnd
        }

        func enqueue(_ event: RecordedEvent<Output, Failure>) {
            guard downstream != nil else { return }
            buffer.append(event)
            deliver()
        }

        func request(_ demand: Subscribers.Demand) {
            record.requestedDemands.append(demand)
            if demand == .none {
                record.violations.append("request(.none)")
            }
            self.demand += demand
            deliver()
        }

        func cancel() {
            record.cancelCount += 1
            if record.cancelledAtFrame == nil {
                record.cancelledAtFrame = scheduler?.currentFrame ?? 0
            }
            end()
        }

        private func deliver() {
            guard !isDelivering else { return }
            isDelivering = true
            defer {
                isDelivering = false
                record.bufferedCount = buffer.count
            }
            while let downstream, let next = buffer.first {
                switch next {
                case let .value(value):
                    guard demand > 0 else { return }
                    buffer.removeFirst()
                    demand -= 1
                    record.deliveredCount += 1
                    demand += downstream.receive(value)
                case .finished:
                    complete(downstream, with: .finished)
                case let .failure(error):
                    complete(downstream, with: .failure(error))
                }
            }
        }

        private func complete(
            _ downstream: AnySubscriber<Output, Failure>,
            with completion: Subscribers.Completion<Failure>
        ) {
            record.completedAtFrame = scheduler?.currentFrame ?? 0
            end()
            downstream.receive(completion: completion)
        }

        private func end() {
            guard downstream != nil else { return }
            downstream = nil
            buffer.removeAll()
            onEnd(self)
        }
    }
}

extension VirtualTimeScheduler {
    /// A hot ``TestPublisher`` that plays `marbles` on this scheduler from frame 0, to
    /// whoever is subscribed at the time.
    ///
    ///     let input = scheduler.hotPublisher("-a--b-|", values: ["a": 1, "b": 2])
    public func hotPublisher<Output, Failure: Error>(
        _ marbles: String,
        values: [Character: Output],
        error: Failure? = nil
    ) -> TestPublisher<Output, Failure> {
        hotPublisher(Timeline(marbles, values: values, error: error))
    }

    /// A hot ``TestPublisher`` of single-letter strings.
    ///
    ///     let input: TestPublisher<String, Never> = scheduler.hotPublisher("-a--b-|")
    public func hotPublisher<Failure: Error>(
        _ marbles: String,
        error: Failure? = nil
    ) -> TestPublisher<String, Failure> {
        hotPublisher(Timeline(marbles, error: error))
    }

    /// A hot ``TestPublisher`` that plays `timeline` on this scheduler.
    ///
    ///     let input = scheduler.hotPublisher(Timeline<String, Never>("-a-|"))
    public func hotPublisher<Output, Failure: Error>(
        _ timeline: Timeline<Output, Failure>
    ) -> TestPublisher<Output, Failure> {
        let publisher = TestPublisher<Output, Failure>(scheduler: self)
        for event in timeline.events {
            schedule(atFrame: event.frame) { [weak publisher] in
                switch event.event {
                case let .value(value): publisher?.send(value)
                case .finished: publisher?.send(completion: .finished)
                case let .failure(error): publisher?.send(completion: .failure(error))
                }
            }
        }
        return publisher
    }

    /// A cold ``TestPublisher``: each subscription plays `marbles` from the frame it
    /// subscribed in.
    ///
    ///     let request = scheduler.coldPublisher("--a|", values: ["a": 42])  // a value 2 frames after subscribing
    public func coldPublisher<Output, Failure: Error>(
        _ marbles: String,
        values: [Character: Output],
        error: Failure? = nil
    ) -> TestPublisher<Output, Failure> {
        coldPublisher(Timeline(marbles, values: values, error: error))
    }

    /// A cold ``TestPublisher`` of single-letter strings.
    ///
    ///     let request: TestPublisher<String, TestError> = scheduler.coldPublisher("--a|")
    public func coldPublisher<Failure: Error>(
        _ marbles: String,
        error: Failure? = nil
    ) -> TestPublisher<String, Failure> {
        coldPublisher(Timeline(marbles, error: error))
    }

    /// A cold ``TestPublisher`` that plays `timeline` from the frame each subscription
    /// starts in.
    ///
    ///     let inner = scheduler.coldPublisher(Timeline<Int, Never>(events: [TimedEvent(frame: 2, event: .finished)]))
    public func coldPublisher<Output, Failure: Error>(
        _ timeline: Timeline<Output, Failure>
    ) -> TestPublisher<Output, Failure> {
        TestPublisher(scheduler: self, coldEvents: timeline.events)
    }
}
