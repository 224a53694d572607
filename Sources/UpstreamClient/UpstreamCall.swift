import Telemetry
/// One request in progress through an ``UpstreamClient``: queued for a connection, then in
/// flight, then finished (answered, failed, timed out or cancelled). Loop-confined.
///
/// ``cancel()`` is for a caller that no longer wants the answer: an in-flight request is
/// withdrawn from its connection, which closes (the upstream sees the close), and the
/// completion handler is not called.
///
/// ```
/// queued ──dispatch──▶ inFlight ──answered / failed (reported by the connection)──▶ finished
///    ▲                    │ a reused connection lost before any answer (idempotent, once)
///    └────────────────────┤
///    │                    │ deadline, cancel: withdrawn from the connection
///    └ deadline, cancel ──┴──────────────────────────────────────────────────────▶ finished
/// ```
public final class UpstreamCall {
    /// Who hears the call's result: a closure, or an object handed to a closure that captures
    /// nothing (a caller that is an object already saves a closure context per call).
    enum Receiver {
        case closure((Result<UpstreamResponse, UpstreamError>) -> Void)
        case object(AnyObject, (AnyObject, Result<UpstreamResponse, UpstreamError>) -> Void)

        func receive(_ result: Result<UpstreamResponse, UpstreamError>) {
            switch self {
            case .closure(let completion): completion(result)
            case .object(let receiver, let completion): completion(receiver, result)
            }
        }
    }

    private enum State {
        case queued
        case inFlight(any UpstreamConnection)
        case finished
    }

    let request: UpstreamRequest
    /// Nil once the result was delivered or the call cancelled.
    private var receiver: Receiver?
    /// Unowned and unchecked: the call reaches its pool only while it has not finished (every
    /// use is behind a state of `queued` or `inFlight`, or in ``start(deadlines:)`` and
    /// ``refuse(_:_:)``, which its pool's client calls), and the client keeps its pools until
    /// its `deinit`, which first finishes every unfinished call of each pool
    /// (``ConnectionPool/cancelAll()``). A checked `unowned` reference cost an atomic
    /// increment and decrement of the pool's unowned count per call, and an atomic strong
    /// retain and release around each use.
    private unowned(unsafe) let pool: ConnectionPool
    private var state = State.queued
    /// The client's deadlines, while the call is in one of their lines (until it ends or its
    /// deadline passes).
    private var deadlines: CallDeadlines?
    /// When the call was made: its latency counts from there, and its deadline passes
    /// ``UpstreamRequest/timeout`` after it (``CallDeadlines``).
    let startedAt: MonotonicInstant
    /// How long the call took in nanoseconds, from ``startedAt`` to its end (nil until it
    /// ended). An answered call ends at the clock reading its connection took as the answer
    /// came (the one that starts the connection's idle time): its latency costs no reading of
    /// its own.
    public private(set) var latencyNanoseconds: Int64?
    /// Whether the call already went again after losing a reused connection.
    private var wentAgain = false
    /// Where the pool keeps the call while it is on a connection (-1: not there).
    var activeIndex = -1
    /// The call's CLIENT span, when tracing is on and the request has a trace: its id is the
    /// one the `traceparent` sent upstream names.
    private var span: TracedSpan?
    /// The span id the `traceparent` names: the CLIENT span's, or nil for a new one per write.
    var traceSpanID: UInt64? { span?.trace.span }

    init(request: UpstreamRequest, pool: ConnectionPool, receiver: Receiver) {
        startedAt = .now
        // Last: the request moves in, not copied.
        self.request = request
        self.pool = pool
        self.receiver = receiver
    }

    /// How long the call took, once it ended (``latencyNanoseconds``).
    public var latency: Duration? { latencyNanoseconds.map(Duration.nanoseconds) }

    var isQueued: Bool {
        if case .queued = state { return true }
        return false
    }

    /// Whether the call has ended, one way or another.
    public var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    /// Records the call as a CLIENT span of its request's trace (``UpstreamRequest/trace``).
    func recordSpan(in spans: Spans) {
        guard let trace = request.trace else { return }
        let origin = request.base.origin
        span = spans.client(
            of: trace, method: request.method, host: origin.host, port: Int(origin.port), path: request.target, call: request.call)
    }

    /// Starts the deadline and joins the pool's line.
    func start(deadlines: CallDeadlines) {
        self.deadlines = deadlines
        deadlines.start(self)
        pool.enqueue(self, at: startedAt)
    }

    /// Called by ``CallDeadlines`` once ``UpstreamRequest/timeout`` has passed (the call is
    /// out of its line then): the call fails with a timeout.
    func deadlinePassed() {
        deadlines = nil
        // Held strongly while ending: `stop` may release the last other reference.
        withExtendedLifetime(self) {
            stop()
            deliver(.failure(error(.timeout, "no response within \(request.timeout)")))
        }
    }

    /// Fails the call before it reached a connection (the pool's line is full); the caller
    /// hears of it on a later loop turn, as of any other failure.
    func refuse(_ kind: UpstreamError.Kind, _ detail: String) {
        finish()
        pool.loop.deferred { [self] in deliver(.failure(error(kind, detail))) }
    }

    /// Sends the request on `connection`, which reports back through ``answered(_:reusable:)``
    /// or ``failed(_:_:)``.
    func dispatch(on connection: any UpstreamConnection) {
        state = .inFlight(connection)
        connection.send(self)
    }

    /// Cancels the call; the completion handler is not called. Closes the connection of an
    /// in-flight request. Does nothing more once finished.
    public func cancel() {
        receiver = nil
        guard !isFinished else { return }
        span?.end(failure: "cancelled")
        stop()
    }

    // MARK: - Ending

    /// The connection read the answer at `now`; `reusable`: it may carry another request.
    func answered(_ response: UpstreamResponse, reusable: Bool, at now: MonotonicInstant) {
        end(.success(response), reusable: reusable, at: now)
    }

    /// The connection failed to get an answer (and is not reused).
    func failed(_ kind: UpstreamError.Kind, _ detail: String) {
        end(.failure(error(kind, detail)), reusable: false, at: .now)
    }

    /// A connection that had carried earlier answers broke before any byte of this one's: the
    /// upstream most likely closed it while idle as the request went out (a keep-alive race
    /// no client can avoid). An idempotent request goes again on another connection, once,
    /// as RFC 9112 §9.3.1 allows; anything else fails as ``failed(_:_:)``.
    func connectionLost(_ kind: UpstreamError.Kind, _ detail: String) {
        guard case .inFlight(let connection) = state, !wentAgain, request.method.isIdempotent else {
            failed(kind, detail)
            return
        }
        wentAgain = true
        state = .queued
        let now = MonotonicInstant.now
        pool.checkIn(connection, from: self, reusable: false, at: now)
        pool.enqueue(self, at: now)
    }

    private func end(_ result: Result<UpstreamResponse, UpstreamError>, reusable: Bool, at now: MonotonicInstant) {
        guard case .inFlight(let connection) = state else { return }
        finish(at: now)
        pool.checkIn(connection, from: self, reusable: reusable, at: now)
        deliver(result)
    }

    /// Ends the call early (deadline or cancel): an in-flight request is withdrawn from its
    /// connection, which closes; a queued one leaves the line.
    private func stop() {
        let ending = state
        let now = MonotonicInstant.now
        finish(at: now)
        switch ending {
        case .inFlight(let connection):
            connection.withdraw()
            pool.checkIn(connection, from: self, reusable: false, at: now)
        case .queued:
            pool.withdraw(self)
        case .finished:
            break
        }
    }

    private func finish(at now: MonotonicInstant = .now) {
        state = .finished
        latencyNanoseconds = now.nanoseconds(since: startedAt)
        if let deadlines {
            self.deadlines = nil
            deadlines.ended(self)
        }
    }

    private func deliver(_ result: Result<UpstreamResponse, UpstreamError>) {
        if let span {
            switch result {
            case .success(let response): span.end(status: response.status, isClient: true)
            case .failure(let failure): span.end(failure: failure.kind.rawValue)
            }
        }
        // Moved out, not copied: a copy cost a retain and a release of the receiver.
        receiver.take()?.receive(result)
    }

    private func error(_ kind: UpstreamError.Kind, _ detail: String) -> UpstreamError {
        UpstreamError(kind: kind, url: request.base.origin.description + request.target, detail: detail)
    }
}
