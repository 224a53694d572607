public import OpenCombine

/// A subscriber that records everything it receives and checks the Combine contract.
///
/// It records values and completion with their marble frame (when given a scheduler), the
/// demand it requested, and whether it cancelled. It asks for `initialDemand` when it gets
/// its subscription and for `demandPerValue` (or what `onValue` returns) with each value;
/// tests can request more step by step with ``request(_:)``.
///
/// Anything that breaks the contract is listed in ``violations``: a value beyond the
/// demand requested, an event after completion or after cancelling, a second subscription.
///
///     let scheduler = VirtualTimeScheduler()
///     let recorder = publisher.record(on: scheduler, initialDemand: .max(1))
///     scheduler.run()
///     #expect(recorder.values == [1])
///     recorder.request(.max(2))
///     #expect(recorder.violations.isEmpty)
public final class RecordingSubscriber<Input, Failure: Error>: Subscriber, Cancellable, CustomStringConvertible {
    private let scheduler: VirtualTimeScheduler?
    private let initialDemand: Subscribers.Demand
    private let demandPerValue: Subscribers.Demand

    /// Called with each value; what it returns is requested in addition (replaces
    /// `demandPerValue`). It may call ``request(_:)`` or ``cancel()`` re-entrantly.
    public var onValue: ((Input) -> Subscribers.Demand)?

    /// The subscription received, until cancelled or completed.
    public private(set) var subscription: (any Subscription)?
    /// How many subscriptions were received (one, if the publisher is correct).
    public private(set) var subscriptionCount = 0
    /// Every event received, with its frame.
    public private(set) var events: [TimedEvent<Input, Failure>] = []
    /// Each demand this subscriber asked for: the initial one, those returned from
    /// `receive(_:)` (when not `.none`) and explicit ``request(_:)`` calls, in order.
    public private(set) var requestedDemands: [Subscribers.Demand] = []
    /// The completion received, if any.
    public private(set) var completion: Subscribers.Completion<Failure>?
    /// Whether ``cancel()`` was called.
    public private(set) var isCancelled = false
    /// The frame in which ``cancel()`` was called.
    public private(set) var cancelledAtFrame: Int?
    /// Breaches of the Combine contract seen, in words.
    public private(set) var violations: [String] = []

    private var outstandingDemand = Subscribers.Demand.none

    /// Creates a recorder.
    ///
    ///     let recorder = RecordingSubscriber<Int, Never>(initialDemand: .max(1), demandPerValue: .max(1))
    ///     publisher.subscribe(recorder)
    ///
    /// - Parameters:
    ///   - scheduler: Stamps each event with its frame; without one every frame is 0.
    ///   - initialDemand: Requested when the subscription arrives (`.none`: nothing).
    ///   - demandPerValue: Returned from each `receive(_:)`.
    public init(
        scheduler: VirtualTimeScheduler? = nil,
        initialDemand: Subscribers.Demand = .unlimited,
        demandPerValue: Subscribers.Demand = .none
    ) {
        self.scheduler = scheduler
        self.initialDemand = initialDemand
        self.demandPerValue = demandPerValue
    }

    // MARK: Recorded facts

    /// The values received, in order.
    public var values: [Input] {
        events.compactMap { if case let .value(value) = $0.event { return value } else { return nil } }
    }

    /// Whether a `.finished` completion was received.
    public var isFinished: Bool {
        if case .finished = completion { return true }
        return false
    }

    /// The failure received, if any.
    public var failure: Failure? {
        if case let .failure(error) = completion { return error }
        return nil
    }

    /// The events as a timeline, to compare with a marble line.
    ///
    ///     #expect(recorder.timeline == Timeline("-a-b-|"))
    public var timeline: Timeline<Input, Failure> { Timeline(events: events) }

    /// The demand requested and not yet used by a value.
    public var pendingDemand: Subscribers.Demand { outstandingDemand }

    /// The sum of every demand requested.
    public var totalDemand: Subscribers.Demand {
        requestedDemands.reduce(.none, +)
    }

    /// A short description for test failure messages.
    public var description: String { "RecordingSubscriber(\(timeline))" }

    // MARK: Driving

    /// Requests `demand` more values from the subscription (nothing, once completed or
    /// cancelled).
    ///
    ///     recorder.request(.max(1))
    public func request(_ demand: Subscribers.Demand) {
        guard let subscription else {
            if subscriptionCount == 0 {
                violations.append("request(\(demand)) without a subscription")
            }
            return
        }
        requestedDemands.append(demand)
        outstandingDemand += demand
        subscription.request(demand)
    }

    /// Cancels the subscription (once: later calls do nothing).
    ///
    ///     recorder.cancel()
    public func cancel() {
        guard !isCancelled else { return }
        isCancelled = true
        cancelledAtFrame = scheduler?.currentFrame ?? 0
        let subscription = self.subscription
        self.subscription = nil
        subscription?.cancel()
    }

    // MARK: Subscriber

    /// Records the subscription and requests the initial demand (Subscriber requirement).
    public func receive(subscription: any Subscription) {
        subscriptionCount += 1
        guard subscriptionCount == 1 else {
            violations.append("a second subscription")
            subscription.cancel()
            return
        }
        self.subscription = subscription
        if initialDemand > 0 {
            request(initialDemand)
        }
    }

    /// Records a value, checking it was requested (Subscriber requirement).
    public func receive(_ input: Input) -> Subscribers.Demand {
        check("value \(input)")
        if outstandingDemand == 0 {
            violations.append("value \(input) beyond the demand requested")
        } else {
            outstandingDemand -= 1
        }
        events.append(TimedEvent(frame: frame, event: .value(input)))
        let more = onValue?(input) ?? demandPerValue
        if more > 0 {
            requestedDemands.append(more)
            outstandingDemand += more
        }
        return more
    }

    /// Records the completion (Subscriber requirement).
    public func receive(completion: Subscribers.Completion<Failure>) {
        check("completion \(completion)")
        events.append(TimedEvent(frame: frame, event: RecordedEvent(completion)))
        self.completion = self.completion ?? completion
        subscription = nil
    }

    // MARK: Private

    private var frame: Int { scheduler?.currentFrame ?? 0 }

    private func check(_ event: String) {
        if subscriptionCount == 0 {
            violations.append("\(event) before a subscription")
        }
        if isCancelled {
            violations.append("\(event) after cancel")
        }
        if completion != nil {
            violations.append("\(event) after completion")
        }
    }
}

extension Publisher {
    /// Subscribes a new ``RecordingSubscriber`` and returns it.
    ///
    ///     let recorder = publisher.record(on: scheduler, initialDemand: .max(2))
    public func record(
        on scheduler: VirtualTimeScheduler? = nil,
        initialDemand: Subscribers.Demand = .unlimited,
        demandPerValue: Subscribers.Demand = .none
    ) -> RecordingSubscriber<Output, Failure> {
        let recorder = RecordingSubscriber<Output, Failure>(
            scheduler: scheduler,
            initialDemand: initialDemand,
            demandPerValue: demandPerValue
        )
        subscribe(recorder)
        return recorder
    }
}
