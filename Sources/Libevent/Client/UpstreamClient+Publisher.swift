public import OpenCombine

extension UpstreamClient {
    /// A publisher of one call: the call starts when a subscriber requests a value, emits the
    /// response and finishes, or fails with ``UpstreamError``. Cancelling the subscription
    /// cancels the call (an in-flight request's connection is closed).
    ///
    /// ```
    /// subscribe ──request(1)──▶ call ──────────▶ response ─|
    ///                                 cancel ──▶ connection closed upstream
    /// ```
    ///
    /// ```swift
    /// client.publisher(for: UpstreamRequest(base: tasks, path: "/groups"))
    ///     .tryMap { try decode($0.body) }
    /// ```
    public func publisher(for request: UpstreamRequest) -> CallPublisher {
        CallPublisher(client: self, request: request)
    }

    /// See ``UpstreamClient/publisher(for:)``.
    public struct CallPublisher: Publisher {
        public typealias Output = UpstreamResponse
        public typealias Failure = UpstreamError

        let client: UpstreamClient
        public let request: UpstreamRequest

        public func receive<Downstream: Subscriber>(subscriber: Downstream)
        where Downstream.Input == Output, Downstream.Failure == Failure {
            subscriber.receive(subscription: CallSubscription(client: client, request: request, downstream: subscriber))
        }
    }
}

/// Starts the call on the first demand; loop-confined like the client.
private final class CallSubscription<Downstream: Subscriber>: Subscription
where Downstream.Input == UpstreamResponse, Downstream.Failure == UpstreamError {
    private let client: UpstreamClient
    private let request: UpstreamRequest
    private var downstream: Downstream?
    private var call: UpstreamCall?

    init(client: UpstreamClient, request: UpstreamRequest, downstream: Downstream) {
        self.client = client
        self.request = request
        self.downstream = downstream
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0, call == nil, downstream != nil else { return }
        call = client.execute(request) { [self] result in
            guard let downstream else { return }
            self.downstream = nil
            call = nil
            switch result {
            case .success(let response):
                _ = downstream.receive(response)
                downstream.receive(completion: .finished)
            case .failure(let error):
                downstream.receive(completion: .failure(error))
            }
        }
    }

    func cancel() {
        downstream = nil
        call?.cancel()
        call = nil
    }
}
