public import OpenCombine

/// A piece of loop work that ends in one callback (an upstream call, a Redis command, the
/// fan-out of a snapshot), as a publisher: `start` runs on the first demand and is handed the
/// callback; the work's one result is emitted (and the publisher finishes) or its error
/// fails it. Cancelling the subscription cancels the work `start` returned. The result may
/// come inside `start` itself (a call refused at once). Loop-confined, like the work.
///
/// ```swift
/// OneResultPublisher { finish in client.execute(request, completion: finish) }
/// ```
///
/// One subscription type for every such work, so that the demand, completion and
/// cancellation rules of a one-shot call are written once.
public struct OneResultPublisher<Output, Failure: Error>: Publisher {
    /// Begins the work, which calls `finish` once with its result; returns what cancels it.
    public typealias Start = (_ finish: @escaping (Result<Output, Failure>) -> Void) -> any Cancellable

    let start: Start

    public init(start: @escaping Start) {
        self.start = start
    }

    public func receive<Downstream: Subscriber>(subscriber: Downstream)
    where Downstream.Input == Output, Downstream.Failure == Failure {
        subscriber.receive(subscription: OneResultSubscription(start: start, downstream: subscriber))
    }
}

/// Starts the work on the first demand and hands its one result downstream.
private final class OneResultSubscription<Downstream: Subscriber>: Subscription {
    private var start: OneResultPublisher<Downstream.Input, Downstream.Failure>.Start?
    private var downstream: Downstream?
    private var work: (any Cancellable)?

    init(start: @escaping OneResultPublisher<Downstream.Input, Downstream.Failure>.Start, downstream: Downstream) {
        self.start = start
        self.downstream = downstream
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0, let start, downstream != nil else { return }
        self.start = nil
        let work = start { [self] result in deliver(result) }
        // Kept only while its result is still to come.
        if downstream != nil { self.work = work }
    }

    func cancel() {
        downstream = nil
        start = nil
        work?.cancel()
        work = nil
    }

    private func deliver(_ result: Result<Downstream.Input, Downstream.Failure>) {
        guard let downstream else { return }
        self.downstream = nil
        work = nil
        downstream.receive(only: result)
    }
}

extension Subscriber {
    /// Passes on the one result of a publisher that has one: its value and `.finished`, or
    /// its failure.
    @inlinable
    public func receive(only result: Result<Input, Failure>) {
        switch result {
        case .success(let value):
            _ = receive(value)
            receive(completion: .finished)
        case .failure(let error):
            receive(completion: .failure(error))
        }
    }
}
