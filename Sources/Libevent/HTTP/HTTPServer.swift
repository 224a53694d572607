import CLibevent
import Glibc

/// An HTTP/1.1 server on libevent's evhttp, running on one ``EventLoop``.
///
/// Every request goes to ``handler`` as a ``ServerRequest``; requests that break the
/// ``Limits`` are answered with a JSON error before the handler sees them. A handler that
/// does not answer at once leaves the request open, and the server then watches the client
/// connection (see ``ServerRequest/onDisconnect``). Loop-confined.
///
/// ```swift
/// let server = try HTTPServer(loop: loop) { request in
///     request.respond(status: 200, json: #"{"hello":"world"}"#)
/// }
/// let port = try server.bind(host: "127.0.0.1", port: 0)
/// ```
public final class HTTPServer {
    /// What the server accepts before a handler runs.
    public struct Limits: Sendable, Equatable {
        /// Request headers (`name: value\r\n` each) beyond this get 431.
        public var maxHeaderBytes: Int
        /// Request bodies beyond this get 413.
        public var maxBodyBytes: Int
        /// How long a client may take to send a request, and a write may stay blocked.
        public var timeout: Duration
        /// Client connections served at once (nil: no limit); a connection beyond it has its
        /// first request answered 503 and is closed. A connection counts from its first
        /// request until it closes (one that never sends a request is closed by ``timeout``).
        public var maxConnections: Int?

        public init(
            maxHeaderBytes: Int = 16 * 1024, maxBodyBytes: Int = 1024 * 1024, timeout: Duration = .seconds(60),
            maxConnections: Int? = nil
        ) {
            self.maxHeaderBytes = maxHeaderBytes
            self.maxBodyBytes = maxBodyBytes
            self.timeout = timeout
            self.maxConnections = maxConnections
        }

        /// evhttp's own hard caps, above ours: requests between the two get our JSON 431/413;
        /// beyond the cap evhttp refuses the request itself (413, connection closed) without
        /// buffering more. libevent 2.1 offers no hook to render that refusal as JSON.
        var hardHeaderCap: Int { maxHeaderBytes * 4 + 64 * 1024 }
        var hardBodyCap: Int { maxBodyBytes * 4 + 64 * 1024 }
    }

    public let loop: EventLoop
    public let limits: Limits
    /// Receives every request within the limits.
    public var handler: (ServerRequest) -> Void
    /// Told once about every request when it ends: answered (``ServerRequest/status``), its
    /// stream ended, or its client gone (``ServerRequest/state`` is `.disconnected`).
    public var onComplete: ((ServerRequest) -> Void)?

    let http: OpaquePointer
    /// Chunks on their way into a connection's output (evhttp moves, never keeps, them).
    let scratchBuffer: OpaquePointer
    private var listeners: [OpaquePointer] = []
    /// Connections that sent a request and are still open, by `evhttp_connection`.
    private var connections: [OpaquePointer: ServerConnection] = [:]
    private var tlsContext: TLSContext?
    /// evhttp keeps this pointer (it does not copy it), so it lives as long as the server.
    private let defaultContentType = strdup("application/json")!

    public init(
        loop: EventLoop, limits: Limits = Limits(), tls: TLSContext? = nil,
        handler: @escaping (ServerRequest) -> Void
    ) throws(LibeventError) {
        self.loop = loop
        self.limits = limits
        self.handler = handler
        self.tlsContext = tls
        http = try LibeventError.unwrap(evhttp_new(loop.base), "evhttp_new")
        guard let buffer = evbuffer_new() else {
            evhttp_free(http)
            throw LibeventError(call: "evbuffer_new")
        }
        scratchBuffer = buffer
        evhttp_set_max_headers_size(http, limits.hardHeaderCap)
        evhttp_set_max_body_size(http, limits.hardBodyCap)
        var timeout = timeval(limits.timeout)
        evhttp_set_timeout_tv(http, &timeout)
        evhttp_set_allowed_methods(http, HTTPMethod.allCommands)
        evhttp_set_default_content_type(http, defaultContentType)
        let context = Unmanaged.passUnretained(self).toOpaque()
        evhttp_set_gencb(http, { raw, context in
            Unmanaged<HTTPServer>.fromOpaque(context!).takeUnretainedValue().receive(raw!)
        }, context)
        if tls != nil {
            evhttp_set_bevcb(http, { base, context in
                let server = Unmanaged<HTTPServer>.fromOpaque(context!).takeUnretainedValue()
                return server.tlsContext!.serverBufferEvent(base: base!)
            }, context)
        }
    }

    deinit {
        // Frees listeners and connections; open requests see their connection close.
        evhttp_free(http)
        evbuffer_free(scratchBuffer)
        free(defaultContentType)
    }

    /// Listens on `host:port` (port 0: any free port) and returns the bound port.
    /// `reusePort` sets SO_REUSEPORT so several workers can share one port.
    @discardableResult
    public func bind(host: String, port: UInt16, reusePort: Bool = false) throws(LibeventError) -> UInt16 {
        let endpoint = "\(host):\(port)"
        var address = try SocketAddress.resolve(host: host, port: port)
        var flags = LEV_OPT_REUSEABLE | LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC
        if reusePort { flags |= LEV_OPT_REUSEABLE_PORT }
        let listener = try address.withSockaddr { pointer, length throws(LibeventError) in
            try LibeventError.unwrap(
                evconnlistener_new_bind(loop.base, nil, nil, flags, 1024, pointer, Int32(length)),
                "evconnlistener_new_bind", detail: endpoint)
        }
        let fd = evconnlistener_get_fd(listener)
        var noDelay: Int32 = 1  // accepted sockets inherit it: small SSE chunks go out at once
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        guard evhttp_bind_listener(http, listener) != nil else {
            evconnlistener_free(listener)
            throw LibeventError(call: "evhttp_bind_listener", detail: endpoint)
        }
        listeners.append(listener)
        return SocketAddress.localPort(of: fd)
    }

    /// Stops accepting new connections; open connections carry on.
    public func stopAccepting() {
        for listener in listeners { evconnlistener_disable(listener) }
    }

    /// Client connections now open (counted from their first request).
    public var connectionCount: Int { connections.count }

    /// Requests received and not yet ended (answered, stream ended, or client gone).
    public private(set) var openRequestCount = 0

    /// Whether some connection still has answer bytes the socket has not taken: an answer is
    /// written on later loop turns, so a server stopping right after answering would lose it.
    public var hasPendingOutput: Bool {
        connections.values.contains { $0.pendingOutputBytes > 0 }
    }

    func forget(_ connection: ServerConnection) {
        connections[connection.evcon] = nil
    }

    func completed(_ request: ServerRequest) {
        openRequestCount -= 1
        onComplete?(request)
    }

    // MARK: - Receiving

    private func receive(_ raw: OpaquePointer) {
        guard let method = HTTPMethod(evhttp_request_get_command(raw)) else {
            // Unreachable with the methods evhttp 2.1 knows; answered in JSON all the same.
            let error = HTTPError(status: 501, code: "not_implemented", message: "unknown request method")
            EventBuffer.append(error.json.utf8, to: evhttp_request_get_output_buffer(raw))
            evhttp_send_reply(raw, 501, "Not Implemented", nil)
            return
        }
        let (connection, admitted) = connection(of: raw)
        let request = ServerRequest(raw: raw, method: method, server: self, connection: connection)
        openRequestCount += 1
        guard admitted else {
            request.respond(HTTPError(status: 503, code: "too_many_connections",
                                      message: "the server is at its limit of \(limits.maxConnections ?? 0) connections"),
                            headers: [("Connection", "close"), ("Retry-After", "1")])
            return
        }
        if let violation = limitViolation(raw) {
            request.respond(violation, headers: [("Connection", "close")])
            return
        }
        handler(request)
        request.watchConnection()
    }

    /// The connection `raw` came on, known from its first request on, and whether it is
    /// within ``Limits/maxConnections`` (a known connection always is).
    private func connection(of raw: OpaquePointer) -> (ServerConnection, admitted: Bool) {
        let evcon = evhttp_request_get_connection(raw)!
        if let known = connections[evcon] { return (known, true) }
        let admitted = limits.maxConnections.map { connections.count < $0 } ?? true
        let connection = ServerConnection(server: self, evcon: evcon)
        connections[evcon] = connection
        return (connection, admitted)
    }

    private func limitViolation(_ raw: OpaquePointer) -> HTTPError? {
        if HeaderList.wireSize(of: evhttp_request_get_input_headers(raw)) > limits.maxHeaderBytes {
            return .headersTooLarge(limit: limits.maxHeaderBytes)
        }
        if let body = evhttp_request_get_input_buffer(raw), evbuffer_get_length(body) > limits.maxBodyBytes {
            return .bodyTooLarge(limit: limits.maxBodyBytes)
        }
        return nil
    }
}
