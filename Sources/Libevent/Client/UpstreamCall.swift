import CLibevent

/// One request in progress through an ``UpstreamClient``: queued for a connection, then in
/// flight, then finished (answered, failed, timed out or cancelled). Loop-confined.
///
/// ``cancel()`` is for a caller that no longer wants the answer: an in-flight request is
/// cancelled in libevent, which closes its connection (the upstream sees the close), and the
/// completion handler is not called.
public final class UpstreamCall {
    private enum State {
        case queued
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

    /// Sends the request on `connection`. The request's C context holds one retain of
    /// `self`, released by the response callback or, after a cancel, by ``stop()``.
    func dispatch(on connection: UpstreamConnection) {
        let context = Unmanaged.passRetained(self).toOpaque()
        guard let raw = evhttp_request_new({ raw, context in
            Unmanaged<UpstreamCall>.fromOpaque(context!).takeRetainedValue().responseArrived(raw)
        }, context) else {
            Unmanaged.passUnretained(self).release()
            fail(returning: connection, .connectionFailed, "out of memory")
            return
        }
        evhttp_request_set_error_cb(raw) { error, context in
            Unmanaged<UpstreamCall>.fromOpaque(context!).takeUnretainedValue().libeventError = error
        }
        let headers = evhttp_request_get_output_headers(raw)
        evhttp_add_header(headers, "Host", request.base.origin.hostHeader)
        for (name, value) in request.headers { evhttp_add_header(headers, name, value) }
        if !request.body.isEmpty {
            EventBuffer.append(request.body, to: evhttp_request_get_output_buffer(raw))
        }
        guard evhttp_make_request(connection.evcon, raw, request.method.command, request.target) == 0 else {
            // libevent has freed the request: its callback will not run.
            Unmanaged.passUnretained(self).release()
            fail(returning: connection, .connectionFailed, "evhttp_make_request failed")
            return
        }
        state = .inFlight(connection, request: raw)
    }

    /// Cancels the call; the completion handler is not called. Closes the connection of an
    /// in-flight request. Does nothing once finished.
    public func cancel() {
        guard !isFinished else { return }
        completion = nil
        stop()
    }

    // MARK: - Ending

    private func responseArrived(_ raw: OpaquePointer?) {
        guard case .inFlight(let connection, _) = state else { return }
        let result: Result<UpstreamResponse, UpstreamError>
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
        let inFlight: UpstreamConnection?
        if case .inFlight(let connection, let raw) = state {
            evhttp_cancel_request(raw)
            Unmanaged.passUnretained(self).release()
            inFlight = connection
        } else {
            inFlight = nil
        }
        finish()
        if let inFlight { pool.checkIn(inFlight, from: self, reusable: true) }
    }

    private func fail(returning connection: UpstreamConnection, _ kind: UpstreamError.Kind, _ detail: String) {
        finish()
        pool.checkIn(connection, from: self, reusable: false)
        deliver(.failure(error(kind, detail)))
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
        case EVREQ_HTTP_DATA_TOO_LONG: return error(.responseTooLarge, "response exceeds the client's limit")
        case EVREQ_HTTP_INVALID_HEADER: return error(.invalidResponse, "malformed response")
        case EVREQ_HTTP_EOF: return error(.connectionFailed, "connection refused or closed before a response")
        default: return error(.connectionFailed, "connection error")
        }
    }

    private func error(_ kind: UpstreamError.Kind, _ detail: String) -> UpstreamError {
        UpstreamError(kind: kind, url: request.base.origin.description + request.target, detail: detail)
    }
}
