import EventLoop
public import HTTPCore
public import UpstreamClient
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
        /// Whether the calls live pipelines repeat ask "changed since?" with the validators
        /// of their earlier answers (``Revalidation``).
        public var revalidate: Bool
        /// What one worker keeps of those earlier answers (``KeptAnswers``), in bytes.
        public var revalidateBytes: Int

        public init(
            timeout: Duration = .seconds(5), retries: Int = 1, backoff: Duration = .milliseconds(100),
            maxResponseBytes: Int = 8 * 1024 * 1024, revalidate: Bool = true, revalidateBytes: Int = 32 * 1024 * 1024
        ) {
            self.timeout = timeout
            self.retries = retries
            self.backoff = backoff
            self.maxResponseBytes = maxResponseBytes
            self.revalidate = revalidate
            self.revalidateBytes = revalidateBytes
        }
    }

    public let name: String
    public let base: BaseURL
    public let policy: Policy
    /// The client's request headers it forwards (`forward`), by name as configured.
    public let forwardedHeaderNames: [String]
    /// What every call to it carries before any forwarded header: `Accept` and the configured
    /// `headers` (secrets: never logged). One array for all its calls.
    private let baseHeaders: UpstreamHeaders
    let client: UpstreamClient
    let metrics: UpstreamMetrics
    /// Shared by every worker's `Upstream` of this name; nil: calls are never refused.
    let breaker: CircuitBreaker?
    /// The earlier answers of the calls live pipelines repeat, with their validators; nil
    /// when ``Policy/revalidate`` is off.
    public let keptAnswers: KeptAnswers?

    /// `headers` go on every call (the configuration refuses the names a client must not
    /// set); the client's headers named in `forward` go on every call its requests cause.
    public init(
        name: String, base: BaseURL, policy: Policy = .init(), headers: [(String, String)] = [], forward: [String] = [],
        client: UpstreamClient, breaker: CircuitBreaker? = nil
    ) {
        self.name = name
        self.base = base
        self.policy = policy
        baseHeaders = acceptingJSON.appending(headers)
        forwardedHeaderNames = forward
        self.client = client
        self.breaker = breaker
        metrics = UpstreamMetrics(upstream: name)
        keptAnswers = policy.revalidate ? KeptAnswers(budget: policy.revalidateBytes) : nil
    }

    /// GET `path` (percent-encoded, with any query) and parse the 2xx body as JSON; fails
    /// with a ``ResourceError`` naming this upstream and the path. Cancelling cancels the
    /// call in flight (or the wait before a retry). Every attempt carries `trace` as a span
    /// of its own (``UpstreamRequest/trace``). While the circuit is open, it fails at
    /// once (`upstream_circuit_open`), and so does a retry that would wait for it.
    ///
    /// ```
    /// request(1) ──▶ GET ──▶ 503 ──backoff──▶ GET ──▶ 200 {…} ──▶ JSON ─|
    /// ```
    public func json(_ path: String, headers: UpstreamHeaders? = nil, trace: TraceContext, call: StaticString = "call") -> FetchJSON<JSON> {
        FetchJSON(upstream: self, path: path, headers: headers ?? baseHeaders, trace: trace, call: call, keepsObjectText: false) { .success($0) }
    }

    /// The headers of a call made for `caller`: the upstream's own, then the headers its
    /// client's request carried that this upstream forwards, checked for the wire here, once
    /// for all the calls of the caller's request.
    public func headers(for caller: Caller) -> UpstreamHeaders {
        caller.forwardedHeaders.isEmpty ? baseHeaders : baseHeaders.appending(caller.forwardedHeaders.lazy.map { ($0.name, $0.value) })
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
    ///
    /// With `revalidation`, the call asks with the validators of its earlier answer, and a
    /// `304` reads that answer's document again (``Revalidation``).
    ///
    /// `call` names what the call is for in its span (`list`, `page`, `search`).
    public func json<Value>(
        _ path: String, headers: UpstreamHeaders? = nil, trace: TraceContext, call: StaticString = "call", keepingObjectText: Bool = false,
        revalidation: Revalidation? = nil, read: @escaping (JSON) -> Result<Value, ResourceError>
    ) -> FetchJSON<Value> {
        FetchJSON(
            upstream: self, path: path, headers: headers ?? baseHeaders, trace: trace, call: call, keepsObjectText: keepingObjectText,
            revalidation: revalidation, read: read)
    }

    /// See ``Upstream/json(_:read:)``.
    public struct FetchJSON<Value>: Publisher {
        public typealias Output = Value
        public typealias Failure = ResourceError

        let upstream: Upstream
        public let path: String
        let headers: UpstreamHeaders
        public let trace: TraceContext
        let call: StaticString
        let keepsObjectText: Bool
        let revalidation: Revalidation?
        let read: (JSON) -> Result<Value, ResourceError>

        init(
            upstream: Upstream, path: String, headers: UpstreamHeaders, trace: TraceContext, call: StaticString, keepsObjectText: Bool,
            revalidation: Revalidation? = nil, read: @escaping (JSON) -> Result<Value, ResourceError>
        ) {
            self.upstream = upstream
            self.path = path
            self.headers = headers
            self.trace = trace
            self.call = call
            self.keepsObjectText = keepsObjectText
            self.revalidation = revalidation
            self.read = read
        }

        public func receive<Downstream: Subscriber>(subscriber: Downstream)
        where Downstream.Input == Value, Downstream.Failure == ResourceError {
            subscriber.receive(subscription: FetchSubscription(fetch: self, downstream: subscriber))
        }
    }
}

/// A subscriber's fetch (``Upstream/FetchJSON``): the `read` it was given, and its one value or
/// failure passed on.
private final class FetchSubscription<Value, Downstream: Subscriber>: JSONFetch<Value>, Subscription
where Downstream.Input == Value, Downstream.Failure == ResourceError {
    private let readBody: (JSON) -> Result<Value, ResourceError>
    private var downstream: Downstream?

    init(fetch: Upstream.FetchJSON<Value>, downstream: Downstream) {
        readBody = fetch.read
        self.downstream = downstream
        super.init(
            upstream: fetch.upstream, path: fetch.path, headers: fetch.headers, trace: fetch.trace, call: fetch.call,
            keeping: fetch.keepsObjectText ? .objects : .none, revalidation: fetch.revalidation)
    }

    func request(_ demand: Subscribers.Demand) {
        guard demand > 0 else { return }
        start()
    }

    override func cancel() {
        downstream = nil
        super.cancel()
    }

    override func read(_ document: JSON) -> Result<Value, ResourceError> {
        readBody(document)
    }

    override func deliver(_ result: consuming Result<Value, ResourceError>) {
        guard let downstream else { return }
        self.downstream = nil
        downstream.receive(only: result)
    }
}

/// The headers of an upstream call, as sent: name and value, checked for the wire once.
public typealias UpstreamHeaders = CheckedHeaders

/// What every fetch asks for.
private let acceptingJSON: UpstreamHeaders = [("Accept", "application/json")]

/// One JSON fetch: attempts, backoff between them, and cancellation of whichever is current.
/// What the parsed body becomes (``read(_:)``) and where the one result goes (``deliver(_:)``)
/// are a subclass's: ``FetchSubscription`` passes it to a subscriber; the list fan-out's
/// per-item fetch merges the item and reports to the fan-out, as one object per item, without
/// a subscriber, a subscription and a `read` closure besides.
class JSONFetch<Value> {
    let upstream: Upstream
    let path: String
    /// Made once for all the calls of a resource's request (``Upstream/headers(for:)``).
    private let headers: UpstreamHeaders
    private let trace: TraceContext
    /// What the call is for, in its span (``UpstreamRequest/call``).
    private let purpose: StaticString
    /// Which of the body's objects keep their text (``JSON/KeptText``).
    private let keptText: JSON.KeptText
    /// What a fetch that revalidates, or keeps its answer's headers, holds between its call
    /// and the answer; nil for the others, which most fetches are (a one-shot answer's): one
    /// reference to initialize and release instead of a dozen optional fields, on every call.
    private let conditions: FetchConditions?
    /// Whether the result was delivered or the fetch cancelled: nothing more happens then.
    private var isOver = false
    private var started = false
    private var attempt = 0
    private var call: UpstreamCall?
    private var backoff: LoopTimer?
    /// The breaker's ticket for the call in flight, to report its outcome with.
    private var ticket: CircuitBreaker.Ticket?

    /// With `revalidation`, its call asks with the validators of the answer kept before;
    /// `keepingAnswerHeaders`, its answer's validators, `Cache-Control` and `Age` are read
    /// (``answered``) for a subclass that keeps the answer beyond the call (the detail cache).
    init(
        upstream: Upstream, path: String, headers: UpstreamHeaders, trace: TraceContext, call: StaticString,
        keeping keptText: JSON.KeptText, revalidation: Revalidation? = nil, keepingAnswerHeaders: Bool = false
    ) {
        self.upstream = upstream
        self.path = path
        self.headers = headers
        self.trace = trace
        purpose = call
        self.keptText = keptText
        conditions = revalidation != nil || keepingAnswerHeaders ? FetchConditions(revalidation: revalidation) : nil
    }

    /// The validators, `Cache-Control` and `Age` of the answer being read (with
    /// `keepingAnswerHeaders`; empty otherwise).
    var answered: AnswerHeaders { conditions?.answered ?? AnswerHeaders() }

    /// The serial of the kept answer it read (``KeptAnswers/Answer/serial``): equal serials,
    /// the same answer. Nil when it read none kept.
    var answerSerial: UInt64? { conditions?.answerSerial }

    /// ``answerSerial``, when its answer was a `304` to ``Revalidation``'s validators; nil otherwise.
    var unchangedAnswer: UInt64? {
        guard let conditions, conditions.wasNotModified else { return nil }
        return conditions.answerSerial
    }

    /// What the parsed 2xx body becomes; a failure fails the fetch (not retried).
    func read(_ document: JSON) -> Result<Value, ResourceError> {
        preconditionFailure("JSONFetch.read(_:) is a subclass's")
    }

    /// The validators of an earlier answer to send with the next attempt, if any: those of
    /// the answer kept for ``revalidation``. A subclass that keeps answers of its own (an
    /// expired detail cache entry) names its own, and reads them in ``notModified()``.
    func validatorsToSend() -> Validators? {
        guard let conditions, let revalidation = conditions.revalidation else { return nil }
        conditions.keptAnswer = revalidation.answers.answer(for: revalidation.key(of: path))
        return conditions.keptAnswer?.validators
    }

    /// What a `304` to ``validatorsToSend()`` makes: the kept answer's document, read again.
    func notModified() -> Result<Value, ResourceError> {
        guard let keptAnswer = conditions?.keptAnswer else {
            preconditionFailure("a subclass that names validators of its own reads its 304s itself")
        }
        return read(keptAnswer.document)
    }

    /// The fetch's one result; never after ``cancel()``. It may come inside ``start()`` (a
    /// circuit that is open, a full pool's line). Handed over (`consuming`), so a subclass can
    /// keep its value without a copy of it.
    func deliver(_ result: consuming Result<Value, ResourceError>) {}

    /// Makes the first attempt (once; not after ``cancel()``).
    func start() {
        guard !started, !isOver else { return }
        started = true
        send()
    }

    /// Cancels the call in flight (or the wait before a retry); nothing is delivered.
    func cancel() {
        isOver = true
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
        // The trace's headers are written by the client: one shared header array for all calls,
        // but for those that ask with validators.
        let sent = conditions.map { $0.asksPlainly ? nil : validatorsToSend() } ?? nil
        conditions?.sentValidators = sent
        let request = UpstreamRequest(
            base: upstream.base, path: path, checkedHeaders: headers, headers: sent?.conditionalHeader.map { [$0] } ?? [], trace: trace,
            timeout: upstream.policy.timeout, keptResponseHeaders: conditions == nil ? [] : AnswerHeaders.names,
            maxResponseBytes: upstream.policy.maxResponseBytes, call: purpose)
        // A closure that captures nothing, handed the fetch: no allocation per call.
        call = upstream.client.execute(request, for: self) { fetch, result in
            unsafeDowncast(fetch, to: JSONFetch<Value>.self).callEnded(result)
        }
    }

    /// The call in flight ended.
    private func callEnded(_ result: Result<UpstreamResponse, UpstreamError>) {
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
        guard !isOver else { return }
        // A 304 answers the validators sent; to a call that sent none, it is a failure (below).
        if response.status == 304, let conditions, let sent = conditions.sentValidators {
            upstream.metrics.notModified.increment()
            conditions.wasNotModified = true
            conditions.answerSerial = conditions.keptAnswer?.serial
            conditions.answered = AnswerHeaders(of: response)
            if conditions.answered.validators == nil { conditions.answered.validators = sent }
            return readAndDeliver(notModified())
        }
        if let conditions, conditions.sentValidators != nil, !(200..<300).contains(response.status) {
            // Refused as a conditional call (a 412, a 400 for a header it would not take): the
            // kept answer goes, and a 4xx gets one plain call at once, which decides.
            if let revalidation = conditions.revalidation { revalidation.answers.forget(revalidation.key(of: path)) }
            if (400..<500).contains(response.status), !conditions.asksPlainly {
                conditions.asksPlainly = true
                return send()
            }
        }
        guard (200..<300).contains(response.status) else {
            let error = ResourceError(
                code: .upstreamStatus, upstream: upstream.name, path: path,
                message: "upstream \(upstream.name): GET \(path) answered \(response.status)")
            failed(error, retryable: [502, 503, 504].contains(response.status))
            return
        }
        let document: JSON
        do {
            document = try JSON(parsing: response.body, keeping: keptText)
        } catch {
            return failed(ResourceError(
                code: .upstreamMalformed, upstream: upstream.name, path: path,
                message: "upstream \(upstream.name): GET \(path) returned malformed JSON (\(error))"), retryable: false)
        }
        if let conditions {
            conditions.answered = AnswerHeaders(of: response)
            if let revalidation = conditions.revalidation { keep(document, of: response, in: revalidation) }
        }
        readAndDeliver(read(document))
    }

    /// Keeps the answer for the next call's validators, or forgets the earlier one when this
    /// one has none (it would name an answer no longer current).
    private func keep(_ document: JSON, of response: UpstreamResponse, in revalidation: Revalidation) {
        let key = revalidation.key(of: path)
        // Nothing to ask with, or an answer that says it must not be stored (`no-store`).
        guard let answered = conditions?.answered, let validators = answered.validators,
              DetailFreshness.lifetime(cacheControl: answered.cacheControl, age: nil) != nil else {
            return revalidation.answers.forget(key)
        }
        conditions?.answerSerial = revalidation.answers.keep(document, validators: validators, for: key, bodyBytes: response.body.count)
    }

    /// Delivers what the answer read to: a failure to read fails the fetch (not retried).
    private func readAndDeliver(_ result: consuming Result<Value, ResourceError>) {
        // The result goes on as it is: taking its value out and wrapping it again copied it.
        let result = consume result
        if case .failure(let error) = result { return failed(error, retryable: false) }
        guard !isOver else { return }
        isOver = true
        deliver(consume result)
    }

    private func failed(_ error: ResourceError, retryable: Bool) {
        guard !isOver else { return }
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
        guard !isOver else { return }
        isOver = true
        deliver(.failure(error))
    }
}

/// What a ``JSONFetch`` that revalidates, or reads its answer's headers, holds between its
/// call and the answer.
final class FetchConditions {
    /// Where its earlier answer is kept, for a call that revalidates.
    let revalidation: Revalidation?
    /// The validators the call in flight sent: a `304` answers those, and only those.
    var sentValidators: Validators?
    /// The kept answer they are the validators of.
    var keptAnswer: KeptAnswers.Answer?
    /// The validators, `Cache-Control` and `Age` of the answer being read.
    var answered = AnswerHeaders()
    /// Whether the answer was a `304` to the validators sent: the earlier answer stands.
    var wasNotModified = false
    /// Whether its calls go without validators from now on: the upstream refused a
    /// conditional one.
    var asksPlainly = false
    /// The serial of the kept answer it read (``KeptAnswers/Answer/serial``): the earlier one
    /// on a `304`, its own once kept; nil when it read an answer not kept.
    var answerSerial: UInt64?

    init(revalidation: Revalidation?) {
        self.revalidation = revalidation
    }
}
