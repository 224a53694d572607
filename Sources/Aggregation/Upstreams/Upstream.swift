public import Libevent
public import OpenCombine

/// One configured upstream API: a name, a base URL, and how to call it (deadline, retries
/// with exponential backoff, the process's ``CircuitBreaker`` for it) through the worker's
/// ``UpstreamClient``. Loop-confined.
///
/// ```swift
/// let tasks = Upstream(name: "tasks", base: try BaseURL("http://127.0.0.1:8081"), client: client)
/// tasks.json("/groups", trace: request.traceContext)      // a publisher of the parsed body
/// ```
public final class Upstream {
    /// How a call to this upstream behaves.
    public struct Policy: Sendable, Equatable {
        /// Deadline of one attempt.
        public var timeout: Duration
        /// Extra attempts after a connection failure or a 502/503/504 answer (never after a
        /// timeout, a TLS failure, an oversized or malformed answer, or a saturated pool).
        public var retries: Int
        /// Wait before the first retry; doubled for each further one.
        public var backoff: Duration
        /// A larger response body fails the call (`upstream_unavailable`, not retried).
        public var maxResponseBytes: Int

        public init(
            timeout: Duration = .seconds(5), retries: Int = 1, backoff: Duration = .milliseconds(100),
            maxResponseBytes: Int = 8 * 1024 * 1024
        ) {
            self.timeout = timeout
            self.retries = retries
            self.backoff = backoff
            self.maxResponseBytes = maxResponseBytes
        }
    }

    public let name: String
    public let base: BaseURL
    public let policy: Policy
    let client: UpstreamClient
    let metrics: UpstreamMetrics
    /// Shared by every worker's `Upstream` of this name; nil: calls are never refused.
    let breaker: CircuitBreaker?

    public init(name: String, base: BaseURL, policy: Policy = .init(), client: UpstreamClient, breaker: CircuitBreaker? = nil) {
        self.name = name
        self.base = base
        self.policy = policy
        self.client = client
        self.breaker = breaker
        metrics = UpstreamMetrics(upstream: name)
    }

    /// GET `path` (percent-encoded, with any query) and parse the 2xx body as JSON; fails
    /// with a ``ResourceError`` naming this upstream and the path. Cancelling cancels the
    /// call in flight (or the wait before a retry). Every attempt carries `trace` as a span
    /// of its own (``TraceContext/upstreamHeaders()``). While the circuit is open, it fails at
    /// once (`upstream_circuit_open`), and so does a retry that would wait for it.
    ///
    /// ```
    /// request(1) ──▶ GET ──▶ 503 ──backoff──▶ GET ──▶ 200 {…} ──▶ JSON ─|
    /// ```
    public func json(_ path: String, trace: TraceContext) -> FetchJSON<JSON> {
        FetchJSON(upstream: self, path: path, trace: trace, keepsObjectText: false) { .success($0) }
    }

    /// GET `path` and make something of the parsed body with `read`, whose failure fails the
    /// fetch (like `flatMap` to a `Result`, without a publisher per call: the fan-outs call
    /// this once per item).
    ///
    /// ```swift
    /// tasks.json("/groups", trace: trace) { document in items(in: document) }   // Result<[JSON], ResourceError>
    /// ```
    ///
    /// With `keepingObjectText`, the body's objects come to `read` with their text where it can
    /// be copied out as is (``JSON/init(parsing:keepingObjectText:)``).
    public func json<Value>(
        _ path: String, trace: TraceContext, keepingObjectText: Bool = false,
        read: @escaping (JSON) -> Result<Value, ResourceError>
    ) -> FetchJSON<Value> {
        FetchJSON(upstream: self, path: path, trace: trace, keepsObjectText: keepingObjectText, read: read)
    }

    /// See ``Upstream/json(_:read:)``.
    public struct FetchJSON<Value>: Publisher {
        public typealias Output = Value
        public typealias Failure = ResourceError

        let upstream: Upstream
        public let path: String
        public let trace: TraceContext
        let keepsObjectText: Bool
        let read: (JSON) -> Result<Value, ResourceError>

        public func receive<Downstream: Subscriber>(subscriber: Downstream)
        where Downstream.Input == Value, Downstream.Failure == ResourceError {
            subscriber.receive(subscription: FetchSubscription(fetch: self, downstream: subscriber))
        }
    }
}

/// One JSON fetch: attempts, backoff between them, and cancellation of whichever is current.
private final class FetchSubscription<Value, Downstream: Subscriber>: Subscription
where Downstream.Input == Value, Downstream.Failure == ResourceError {
    private let upstream: Upstream
    private let path: String
    private let trace: TraceContext
    private let keepsObjectText: Bool
    private let read: (JSON) -> Result<Value, ResourceError>
    private var downstream: Downstream?
    private var started = false
    private var attempt = 0
    private var call: UpstreamCall?
    private var backoff: LoopTimer?
    /// The breaker's ticket for the call in flight, to report its outcome with.
    private var ticket: CircuitBreaker.Ticket?

    init(fetch: Upstream.FetchJSON<Value>, downstream: Downstream) {
        upstream = fetch.upstream
        path = fetch.path
        trace = fetch.trace
        keepsObjectText = fetch.keepsObjectText
        read = fetch.read
        self.downstream = downstream
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0, !started, downstream != nil else { return }
        started = true
        send()
    }

    func cancel() {
        downstream = nil
        if let call {
            call.cancel()
            upstream.metrics.cancellations.increment()
            report(.neutral)
        }
        call = nil
        backoff = nil
    }

    private func send() {
        switch upstream.breaker?.admit() {
        case .rejected(let retryAfter)?:
            return finish(with: circuitOpen(retryAfter: retryAfter))
        case .admitted(let ticket)?:
            self.ticket = ticket
        case nil:
            break
        }
        // One array, sized once: `[Accept] + trace.upstreamHeaders()` made three.
        var headers: [(String, String)] = []
        headers.reserveCapacity(3)
        headers.append(("Accept", "application/json"))
        trace.appendUpstreamHeaders(to: &headers)
        let request = UpstreamRequest(
            base: upstream.base, path: path, headers: headers,
            timeout: upstream.policy.timeout, maxResponseBytes: upstream.policy.maxResponseBytes)
        call = upstream.client.execute(request) { [self] result in
            // The call's own start and end: no clock reading here.
            if let latency = call?.latencyNanoseconds { upstream.metrics.latency.recordNanoseconds(latency) }
            call = nil
            switch result {
            case .success(let response):
                report(response.status >= 500 ? .failure : .success)
                received(response)
            case .failure(let error):
                report(Self.outcome(of: error))
                failed(ResourceError(error, upstream: upstream.name, path: path), retryable: error.isRetryable)
            }
        }
    }

    /// Tells the breaker how the call in flight ended (once).
    private func report(_ outcome: CircuitBreaker.Outcome) {
        guard let ticket else { return }
        self.ticket = nil
        upstream.breaker?.record(outcome, of: ticket)
    }

    /// What a call that got no answer says about the upstream's health: a full local pool or
    /// an answer over our own size limit say nothing.
    private static func outcome(of error: UpstreamError) -> CircuitBreaker.Outcome {
        switch error.kind {
        case .saturated, .responseTooLarge: .neutral
        case .timeout, .connectionFailed, .tls, .invalidResponse: .failure
        }
    }

    private func circuitOpen(retryAfter: Duration) -> ResourceError {
        let seconds = ResourceError.wholeSeconds(retryAfter)
        return ResourceError(
            code: .upstreamCircuitOpen, upstream: upstream.name, path: path,
            message: "upstream \(upstream.name): GET \(path) not called: it failed repeatedly, the next try is in \(seconds)s",
            retryAfter: seconds)
    }

    private func received(_ response: UpstreamResponse) {
        guard (200..<300).contains(response.status) else {
            let error = ResourceError(
                code: .upstreamStatus, upstream: upstream.name, path: path,
                message: "upstream \(upstream.name): GET \(path) answered \(response.status)")
            failed(error, retryable: [502, 503, 504].contains(response.status))
            return
        }
        let document: JSON
        do {
            document = try JSON(parsing: response.body, keepingObjectText: keepsObjectText)
        } catch {
            return failed(ResourceError(
                code: .upstreamMalformed, upstream: upstream.name, path: path,
                message: "upstream \(upstream.name): GET \(path) returned malformed JSON (\(error))"), retryable: false)
        }
        switch read(document) {
        case .success(let value):
            guard let downstream else { return }
            self.downstream = nil
            _ = downstream.receive(value)
            downstream.receive(completion: .finished)
        case .failure(let error):
            failed(error, retryable: false)
        }
    }

    private func failed(_ error: ResourceError, retryable: Bool) {
        guard downstream != nil else { return }
        upstream.metrics.failed(error.code)
        if retryable && attempt < upstream.policy.retries {
            // The failures may just have opened the circuit: no retry goes out while it is.
            if let retryAfter = upstream.breaker?.rejection() { return finish(with: circuitOpen(retryAfter: retryAfter)) }
            let delay = upstream.policy.backoff * (1 << min(attempt, 16))
            attempt += 1
            let timer = LoopTimer(loop: upstream.client.loop) { [weak self] in
                self?.backoff = nil
                self?.send()
            }
            timer.schedule(after: delay)
            backoff = timer
            return
        }
        finish(with: error)
    }

    private func finish(with error: ResourceError) {
        let downstream = self.downstream
        self.downstream = nil
        downstream?.receive(completion: .failure(error))
    }
}
