import CLibevent

/// One request in progress through an ``UpstreamClient``: queued for a connection, then in
/// flight, then finished (answered, failed, timed out or cancelled). Loop-confined.
///
/// ``cancel()`` is for a caller that no longer wants the answer: an in-flight request is
/// cancelled in libevent, which closes its connection (the upstream sees the close), and the
/// completion handler is not called.
///
/// ```
/// queued ──dispatch──▶ dispatching ──evhttp_make_request returns──▶ inFlight ──answer──▶ finished
///                           │ libevent failed it inside the call                 │ deadline, cancel,
///                           └──────────▶ finished (reported on a later loop turn) └ hostile answer ─▶ finished
/// ```
public final class UpstreamCall {
    private enum State {
        case queued
        /// Inside `evhttp_make_request`: libevent may fail the request (and free it) before
        /// the call returns, e.g. when the connect fails at once (port 0, EMFILE, ENETUNREACH).
        case dispatching(UpstreamConnection)
        case inFlight(UpstreamConnection, request: OpaquePointer)
        case finished
    }

    let request: UpstreamRequest
    private var completion: ((Result<UpstreamResponse, UpstreamError>) -> Void)?
    private unowned let pool: ConnectionPool
    private var state = State.queued
    private var deadline: LoopTimer?
    /// What libevent's error callback reported before the response callback got NULL.
    private var libeventError: evhttp_request_error?
    /// Set when libevent failed the request while `evhttp_make_request` was still running.
    private var failedWhileDispatching: UpstreamError?

    init(request: UpstreamRequest, pool: ConnectionPool, completion: @escaping (Result<UpstreamResponse, UpstreamError>) -> Void) {
        self.request = request
        self.pool = pool
        self.completion = completion
    }

    var isQueued: Bool {
        if case .queued = state { return true }
        return false
    }

    /// Whether the call has ended, one way or another.
    public var isFinished: Bool {
        if case .finished = state { return true }
        return false
    }

    /// The `evhttp_request` whose answer is being read, while in flight.
    var inFlightRequest: OpaquePointer? {
        if case .inFlight(_, let raw) = state { return raw }
        return nil
    }

    /// Starts the deadline and joins the pool's line.
    func start(loop: EventLoop) {
        let deadline = LoopTimer(loop: loop) { [unowned self] in
            // Held strongly while ending: `stop` may release the last other reference.
            let call = self
            call.stop()
            call.deliver(.failure(call.error(.timeout, "no response within \(call.request.timeout)")))
        }
        deadline.schedule(after: request.timeout)
        self.deadline = deadline
        pool.enqueue(self)
    }

    /// Fails the call before it reached a connection (the pool's line is full); the caller
    /// hears of it on a later loop turn, as of any other failure.
    func refuse(_ kind: UpstreamError.Kind, _ detail: String) {
        finish()
        pool.loop.deferred { [self] in deliver(.failure(error(kind, detail))) }
    }

    /// Sends the request on `connection`. The request's C context holds one retain of
    /// `self`, released by the response callback or, after a cancel, by ``stop()``.
    func dispatch(on connection: UpstreamConnection) {
        let context = Unmanaged.passRetained(self).toOpaque()
        guard let raw = evhttp_request_new({ raw, context in
            Unmanaged<UpstreamCall>.fromOpaque(context!).takeRetainedValue().responseArrived(raw)
        }, context) else {
            Unmanaged.passUnretained(self).release()
            failAfterDispatch(connection, error(.connectionFailed, "out of memory"))
            return
        }
        evhttp_request_set_error_cb(raw) { error, context in
            Unmanaged<UpstreamCall>.fromOpaque(context!).takeUnretainedValue().libeventError = error
        }
        let headers = evhttp_request_get_output_headers(raw)
        HeaderList.add("Host", request.base.origin.hostHeader, to: headers)
        for (name, value) in request.headers { HeaderList.add(name, value, to: headers) }
        if !request.body.isEmpty {
            EventBuffer.append(request.body, to: evhttp_request_get_output_buffer(raw))
        }
        connection.prepare(for: self)
        state = .dispatching(connection)
        let result = evhttp_make_request(connection.evcon, raw, request.method.command, request.target)
        if let failure = failedWhileDispatching {
            // libevent called back (and freed the request) inside evhttp_make_request.
            failAfterDispatch(connection, failure)
        } else if result != 0 {
            // libevent refused the request without calling back: its callback will not run.
            Unmanaged.passUnretained(self).release()
            failAfterDispatch(connection, error(.connectionFailed, "evhttp_make_request failed"))
        } else {
            state = .inFlight(connection, request: raw)
            connection.socketOpened()
        }
    }

    /// Cancels the call; the completion handler is not called. Closes the connection of an
    /// in-flight request. Does nothing more once finished.
    public func cancel() {
        completion = nil
        guard !isFinished else { return }
        stop()
    }

    /// Ends an in-flight call whose upstream misbehaves beyond what libevent itself bounds
    /// (``UpstreamConnection`` watches for it): its connection is closed, never reused.
    func abandon(_ kind: UpstreamError.Kind, _ detail: String) {
        guard case .inFlight(let connection, let raw) = state else { return }
        evhttp_cancel_request(raw)
        Unmanaged.passUnretained(self).release()
        finish()
        pool.checkIn(connection, from: self, reusable: false)
        deliver(.failure(error(kind, detail)))
    }

    // MARK: - Ending

    private func responseArrived(_ raw: OpaquePointer?) {
        let result: Result<UpstreamResponse, UpstreamError>
        let connection: UpstreamConnection
        switch state {
        case .inFlight(let current, _): connection = current
        case .dispatching(let current):
            failedWhileDispatching = failure(on: current)
            return
        case .queued, .finished: return
        }
        if let raw, evhttp_request_get_response_code(raw) > 0 {
            result = .success(UpstreamResponse(
                status: Int(evhttp_request_get_response_code(raw)),
                headers: request.keepsResponseHeaders ? HeaderList.entries(of: evhttp_request_get_input_headers(raw)) : [],
                body: evhttp_request_get_input_buffer(raw).map(EventBuffer.bytes(of:)) ?? []))
        } else {
            result = .failure(failure(on: connection))
        }
        finish()
        pool.checkIn(connection, from: self, reusable: raw != nil)
        deliver(result)
    }

    /// Ends the call early (deadline or cancel). An in-flight request is withdrawn from
    /// libevent, which closes its connection; its callback will not run, so the retain its
    /// C context held is balanced here.
    private func stop() {
        let ending = state
        finish()
        switch ending {
        case .inFlight(let connection, let raw):
            evhttp_cancel_request(raw)
            Unmanaged.passUnretained(self).release()
            pool.checkIn(connection, from: self, reusable: true)
        case .queued:
            pool.withdraw(self)
        case .dispatching, .finished:
            break
        }
    }

    /// A request libevent failed before (or while) taking it: the call ends now, but the
    /// connection goes back and the caller hears of it on a later loop turn. Never inside
    /// libevent's own call, and never as a recursion through the pool's line: a connect that
    /// fails at once fails every waiting call the same way.
    private func failAfterDispatch(_ connection: UpstreamConnection, _ failure: UpstreamError) {
        finish()
        let pool = self.pool  // held by the job: the client may be gone by then
        pool.loop.deferred { [self] in
            pool.checkIn(connection, from: self, reusable: false)
            deliver(.failure(failure))
        }
    }

    private func finish() {
        state = .finished
        deadline?.cancel()
        deadline = nil
    }

    private func deliver(_ result: Result<UpstreamResponse, UpstreamError>) {
        let completion = self.completion
        self.completion = nil
        completion?(result)
    }

    private func failure(on connection: UpstreamConnection) -> UpstreamError {
        if let reason = connection.tlsFailure { return error(.tls, reason) }
        switch libeventError {
        case EVREQ_HTTP_TIMEOUT: return error(.timeout, "connection timed out")
        case EVREQ_HTTP_DATA_TOO_LONG: return error(.responseTooLarge, "response exceeds \(request.maxResponseBytes) bytes")
        case EVREQ_HTTP_INVALID_HEADER: return error(.invalidResponse, "malformed response")
        case EVREQ_HTTP_EOF: return error(.connectionFailed, "connection refused or closed before a response")
        default: return error(.connectionFailed, "connection error")
        }
    }

    private func error(_ kind: UpstreamError.Kind, _ detail: String) -> UpstreamError {
        UpstreamError(kind: kind, url: request.base.origin.description + request.target, detail: detail)
    }
}
