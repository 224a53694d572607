import CEvhttpRequestFields
import CLibevent
import Glibc

/// One `evhttp_connection` to an upstream origin: one request at a time, kept alive between
/// requests by its ``ConnectionPool``. Freed in `deinit` (never inside its own callback:
/// the pool drops connections on a later loop turn).
///
/// It also guards what libevent 2.1 does not bound when reading an answer: the size line of
/// a chunked body is buffered until its line end, however far away that is, and rescanned on
/// every read. A callback on the connection's input buffer (which runs before evhttp parses
/// new bytes) abandons the call once such a line is longer than ``maxChunkSizeLine``.
final class UpstreamConnection {
    /// Longest chunk-size line accepted from an upstream (hex digits and any extensions).
    static let maxChunkSizeLine = 1024

    let evcon: OpaquePointer
    let isTLS: Bool
    private let loop: EventLoop
    /// The client's own bound on response bodies, whatever a request asks for.
    private let maxResponseBytes: Int
    /// The call whose answer is read on this connection (weak: a finished call goes).
    private weak var call: UpstreamCall?
    private var inputWatch: OpaquePointer?
    /// The last socket marked close-on-exec (a reconnect makes a new one).
    private var markedSocket: Int32 = -1

    init?(loop: EventLoop, origin: BaseURL.Origin, dns: OpaquePointer?, tls: TLSContext?, limits: UpstreamClient.Configuration) {
        self.loop = loop
        maxResponseBytes = limits.maxResponseBytes
        isTLS = origin.isTLS
        if origin.isTLS {
            guard let tls, let bufferEvent = tls.clientBufferEvent(base: loop.base, host: origin.host) else { return nil }
            // Servers often close TLS connections without close_notify; that is not an error.
            bufferevent_openssl_set_allow_dirty_shutdown(bufferEvent, 1)
            guard let evcon = evhttp_connection_base_bufferevent_new(loop.base, dns, bufferEvent, origin.host, origin.port)
            else { return nil }
            self.evcon = evcon
        } else {
            guard let evcon = evhttp_connection_base_new(loop.base, dns, origin.host, origin.port) else { return nil }
            self.evcon = evcon
        }
        var timeout = timeval(limits.connectionTimeout)
        evhttp_connection_set_timeout_tv(evcon, &timeout)
        evhttp_connection_set_max_body_size(evcon, limits.maxResponseBytes)
        evhttp_connection_set_max_headers_size(evcon, limits.maxResponseHeaderBytes)
        inputWatch = evbuffer_add_cb(input, { _, info, context in
            guard let info, info.pointee.n_added > 0 else { return }
            Unmanaged<UpstreamConnection>.fromOpaque(context!).takeUnretainedValue().inputGrew()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    deinit {
        if let inputWatch { evbuffer_remove_cb_entry(input, inputWatch) }
        evhttp_connection_free(evcon)
    }

    private var bufferEvent: OpaquePointer { evhttp_connection_get_bufferevent(evcon) }
    private var input: OpaquePointer { bufferevent_get_input(bufferEvent) }

    /// Readies the connection for `call`'s request: its answer is watched, and limited to
    /// the call's own ``UpstreamRequest/maxResponseBytes``.
    func prepare(for call: UpstreamCall) {
        self.call = call
        evhttp_connection_set_max_body_size(evcon, min(call.request.maxResponseBytes, maxResponseBytes))
    }

    /// Marks a socket evhttp just made close-on-exec (libevent 2.1 makes client sockets
    /// without it): a process the service's host starts must not keep an upstream connection
    /// open after the service closed it.
    func socketOpened() {
        let socket = bufferevent_getfd(bufferEvent)
        guard socket >= 0, socket != markedSocket else { return }
        markedSocket = socket
        _ = fcntl(socket, F_SETFD, fcntl(socket, F_GETFD) | FD_CLOEXEC)
    }

    /// Whether the socket is open (a reset connection reconnects on its next request).
    var isConnected: Bool {
        bufferevent_getfd(bufferEvent) >= 0
    }

    /// Whether it can carry another request. Never with bytes left over from the last answer
    /// (a body on a 204 or 304, bytes beyond Content-Length): evhttp would read them as the
    /// start of the next answer, which could then be any other caller's. And a TLS session
    /// cannot be resumed on a new socket by evhttp, so a TLS connection that was reset is
    /// replaced instead.
    var isReusable: Bool { evbuffer_get_length(input) == 0 && (!isTLS || isConnected) }

    /// The oldest OpenSSL error on this connection, described, or nil.
    var tlsFailure: String? {
        guard isTLS else { return nil }
        let code = bufferevent_get_openssl_error(bufferEvent)
        return code == 0 ? nil : TLSError.openSSLReason(code)
    }

    /// New bytes arrived, not yet parsed by evhttp: if evhttp is waiting for a chunk-size
    /// line and the buffer holds none within the bound, the answer is hostile. Reading stops
    /// at once; the call is abandoned on a later loop turn (not inside libevent's read).
    private func inputGrew() {
        guard let call, let raw = call.inFlightRequest, tributary_evhttp_request_awaits_chunk_size(raw) != 0,
              evbuffer_get_length(input) > Self.maxChunkSizeLine else { return }
        let lineEnd = evbuffer_search_eol(input, nil, nil, EVBUFFER_EOL_CRLF)
        guard lineEnd.pos < 0 || lineEnd.pos > Self.maxChunkSizeLine else { return }
        bufferevent_disable(bufferEvent, Int16(EV_READ))
        loop.deferred { [weak call] in
            call?.abandon(.invalidResponse, "a chunk-size line longer than \(Self.maxChunkSizeLine) bytes")
        }
    }
}
