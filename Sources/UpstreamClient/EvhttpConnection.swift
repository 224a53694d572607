import CEvhttpRequestFields
import CLibevent
import Glibc
import EventLoop
import HTTPCore

/// One `evhttp_connection` to an HTTPS upstream origin (evhttp's client over an OpenSSL
/// bufferevent): one request at a time, kept alive between requests by its ``ConnectionPool``.
/// Freed in `deinit` (never inside its own callback: the pool drops connections on a later
/// loop turn). Plain-HTTP origins use the leaner ``SocketConnection``.
///
/// It also guards what libevent 2.1 does not bound when reading an answer: the size line of
/// a chunked body is buffered until its line end, however far away that is, and rescanned on
/// every read. A callback on the connection's input buffer (which runs before evhttp parses
/// new bytes) abandons the call once such a line is longer than
/// ``HTTPResponseParser/maxChunkSizeLine``.
///
/// ```
/// send ──evhttp_make_request returns──▶ inFlight ──answer, error──▶ reported to the call
///   │ libevent failed the request inside that call
///   └──────────▶ reported on a later loop turn
/// ```
final class EvhttpConnection: UpstreamConnection {
    private enum State {
        case idle
        /// Inside `evhttp_make_request`: libevent may fail the request (and free it) before
        /// the call returns, e.g. when the connect fails at once (port 0, EMFILE, ENETUNREACH).
        case dispatching(UpstreamCall)
        case inFlight(UpstreamCall, request: OpaquePointer)
    }

    let evcon: OpaquePointer
    private let loop: EventLoop
    private let resolver: AddressResolver?
    /// The client's own bound on response bodies, whatever a request asks for.
    private let maxResponseBytes: Int
    private var state = State.idle
    private var inputWatch: OpaquePointer?
    /// The last socket marked close-on-exec (a reconnect makes a new one).
    private var markedSocket: Int32 = -1
    /// What libevent's error callback reported before the response callback got NULL.
    private var libeventError: evhttp_request_error?
    /// Set when libevent failed the request while `evhttp_make_request` was still running.
    private var failedWhileDispatching = false

    /// `resolver`: for a host name (evhttp resolves through its `evdns_base`, which must live
    /// as long as this connection, so the connection holds it).
    init?(loop: EventLoop, origin: BaseURL.Origin, resolver: AddressResolver?, tls: TLSContext, limits: UpstreamClient.Configuration) {
        self.loop = loop
        self.resolver = resolver
        maxResponseBytes = limits.maxResponseBytes
        guard let bufferEvent = tls.clientBufferEvent(base: loop.base, host: origin.host) else { return nil }
        // Servers often close TLS connections without close_notify; that is not an error.
        bufferevent_openssl_set_allow_dirty_shutdown(bufferEvent, 1)
        guard let evcon = evhttp_connection_base_bufferevent_new(loop.base, resolver?.base, bufferEvent, origin.host, origin.port)
        else { return nil }
        self.evcon = evcon
        var timeout = timeval(limits.connectionTimeout)
        evhttp_connection_set_timeout_tv(evcon, &timeout)
        evhttp_connection_set_max_body_size(evcon, limits.maxResponseBytes)
        evhttp_connection_set_max_headers_size(evcon, limits.maxResponseHeaderBytes)
        inputWatch = evbuffer_add_cb(input, { _, info, context in
            guard let info, info.pointee.n_added > 0 else { return }
            Unmanaged<EvhttpConnection>.fromOpaque(context!).takeUnretainedValue().inputGrew()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        if let inputWatch { evbuffer_remove_cb_entry(input, inputWatch) }
        evhttp_connection_free(evcon)
    }

    private var bufferEvent: OpaquePointer { evhttp_connection_get_bufferevent(evcon) }
    private var input: OpaquePointer { bufferevent_get_input(bufferEvent) }

    /// Whether the socket is open (a reset connection reconnects on its next request).
    var isConnected: Bool {
        bufferevent_getfd(bufferEvent) >= 0
    }

    /// Never with bytes left over from the last answer (a body on a 204 or 304, bytes beyond
    /// Content-Length): evhttp would read them as the start of the next answer, which could
    /// then be any other caller's. And a TLS session cannot be resumed on a new socket by
    /// evhttp, so a connection that was reset is replaced instead.
    func isReusable(at now: MonotonicInstant) -> Bool { evbuffer_get_length(input) == 0 && isConnected }

    /// evhttp's connection owns its bufferevent (and TLS state): it cannot move between loops.
    func detachSocket() -> LentSocket? { nil }

    /// Sends the request. The request's C context holds one retain of `self`, released by the
    /// response callback or, after a cancel, by ``withdraw()``.
    func send(_ call: UpstreamCall) {
        let request = call.request
        libeventError = nil
        failedWhileDispatching = false
        let context = Unmanaged.passRetained(self).toOpaque()
        guard let raw = evhttp_request_new({ raw, context in
            Unmanaged<EvhttpConnection>.fromOpaque(context!).takeRetainedValue().responseArrived(raw)
        }, context) else {
            Unmanaged.passUnretained(self).release()
            reportLater(to: call, .connectionFailed, "out of memory")
            return
        }
        evhttp_request_set_error_cb(raw) { error, context in
            Unmanaged<EvhttpConnection>.fromOpaque(context!).takeUnretainedValue().libeventError = error
        }
        let headers = evhttp_request_get_output_headers(raw)
        HeaderList.add("Host", request.base.origin.hostHeader, to: headers)
        for (name, value) in request.checkedHeaders.fields + request.headers where request.trace == nil || !RequestHead.isTrace(name) {
            HeaderList.add(name, value, to: headers)
        }
        if let trace = request.trace {
            for (name, value) in trace.upstreamHeaders(span: call.traceSpanID ?? TraceContext.nextID()) {
                HeaderList.add(name, value, to: headers)
            }
        }
        if !request.body.isEmpty {
            EventBuffer.append(request.body, to: evhttp_request_get_output_buffer(raw))
        }
        evhttp_connection_set_max_body_size(evcon, min(request.maxResponseBytes, maxResponseBytes))
        state = .dispatching(call)
        let result = evhttp_make_request(evcon, raw, request.method.command, request.target)
        if failedWhileDispatching {
            // libevent called back (and freed the request) inside evhttp_make_request.
            state = .idle
            let (kind, detail) = failure()
            reportLater(to: call, kind, detail)
        } else if result != 0 {
            // libevent refused the request without calling back: its callback will not run.
            Unmanaged.passUnretained(self).release()
            state = .idle
            reportLater(to: call, .connectionFailed, "evhttp_make_request failed")
        } else {
            state = .inFlight(call, request: raw)
            markSocketCloseOnExec()
        }
    }

    /// Cancels the request in libevent, which closes the connection; its callback will not
    /// run, so the retain its C context held is balanced here.
    func withdraw() {
        guard case .inFlight(_, let raw) = state else { return }
        state = .idle
        evhttp_cancel_request(raw)
        Unmanaged.passUnretained(self).release()
    }

    private func responseArrived(_ raw: OpaquePointer?) {
        let call: UpstreamCall
        switch state {
        case .inFlight(let current, _): call = current
        case .dispatching:
            failedWhileDispatching = true
            return
        case .idle: return
        }
        state = .idle
        if let raw, evhttp_request_get_response_code(raw) > 0 {
            call.answered(UpstreamResponse(
                status: Int(evhttp_request_get_response_code(raw)),
                headers: call.request.keptResponseHeaders.isEmpty
                    ? [] : HeaderList.entries(of: evhttp_request_get_input_headers(raw)).filter { entry in
                        call.request.keptResponseHeaders.contains { $0.description == entry.name.lowercased() }
                    },
                body: evhttp_request_get_input_buffer(raw).map(EventBuffer.bytes(of:)) ?? []), reusable: true, at: .now)
        } else {
            let (kind, detail) = failure()
            call.failed(kind, detail)
        }
    }

    /// A failure found inside ``send(_:)``, reported on a later loop turn.
    private func reportLater(to call: UpstreamCall, _ kind: UpstreamError.Kind, _ detail: String) {
        loop.deferred { call.failed(kind, detail) }
    }

    /// Marks a socket evhttp just made close-on-exec (libevent 2.1 makes client sockets
    /// without it): a process the service's host starts must not keep an upstream connection
    /// open after the service closed it.
    private func markSocketCloseOnExec() {
        let socket = bufferevent_getfd(bufferEvent)
        guard socket >= 0, socket != markedSocket else { return }
        markedSocket = socket
        _ = fcntl(socket, F_SETFD, fcntl(socket, F_GETFD) | FD_CLOEXEC)
    }

    /// Why the request got no answer, from OpenSSL's or libevent's report.
    private func failure() -> (UpstreamError.Kind, String) {
        if case let code = bufferevent_get_openssl_error(bufferEvent), code != 0 {
            return (.tls, TLSError.openSSLReason(code))
        }
        switch libeventError {
        case EVREQ_HTTP_TIMEOUT: return (.timeout, "connection timed out")
        case EVREQ_HTTP_DATA_TOO_LONG: return (.responseTooLarge, "response exceeds its size limit")
        case EVREQ_HTTP_INVALID_HEADER: return (.invalidResponse, "malformed response")
        case EVREQ_HTTP_EOF: return (.connectionFailed, "connection refused or closed before a response")
        default: return (.connectionFailed, "connection error")
        }
    }

    /// New bytes arrived, not yet parsed by evhttp: if evhttp is waiting for a chunk-size
    /// line and the buffer holds none within the bound, the answer is hostile. Reading stops
    /// at once; the call is abandoned on a later loop turn (not inside libevent's read).
    private func inputGrew() {
        guard case .inFlight(let call, let raw) = state, tributary_evhttp_request_awaits_chunk_size(raw) != 0,
              evbuffer_get_length(input) > HTTPResponseParser.maxChunkSizeLine else { return }
        let lineEnd = evbuffer_search_eol(input, nil, nil, EVBUFFER_EOL_CRLF)
        guard lineEnd.pos < 0 || lineEnd.pos > HTTPResponseParser.maxChunkSizeLine else { return }
        bufferevent_disable(bufferEvent, Int16(EV_READ))
        loop.deferred { [weak self, weak call] in
            guard let self, let call, case .inFlight(let current, _) = self.state, current === call else { return }
            self.withdraw()
            call.failed(.invalidResponse, "a chunk-size line longer than \(HTTPResponseParser.maxChunkSizeLine) bytes")
        }
    }
}
