import CEvhttpRequestFields
import CLibevent
import Glibc
import Synchronization
public import EventLoop
import HTTPCore

/// An HTTP/1.1 server on libevent's evhttp, running on one ``EventLoop``.
///
/// Every request goes to ``handler`` as a ``ServerRequest``; requests that break the
/// ``Limits`` or the framing rules are answered with a JSON error before the handler sees
/// them. A handler that does not answer at once leaves the request open, and the server then
/// watches the client connection (see ``ServerRequest/onDisconnect``). Loop-confined.
///
/// ```swift
/// let server = try HTTPServer(loop: loop) { request in
///     request.respond(status: 200, json: #"{"hello":"world"}"#)
/// }
/// let port = try server.bind(host: "127.0.0.1", port: 0)
/// ```
///
/// What a hostile client meets (each is a ``ServerConnection``'s job unless said otherwise):
/// connections are counted from their accept; each request must arrive whole within
/// ``Limits/timeout``; what a client sends while its request is open is read at most
/// ``ServerConnection/maxReadAhead`` ahead; chunked bodies are held to RFC 9112
/// (``RequestFraming``) and heads to ``RequestHeadRules``; and when `accept` runs out of file
/// descriptors the server stops accepting for ``acceptPause`` instead of spinning.
public final class HTTPServer {
    /// What the server accepts before a handler runs.
    public struct Limits: Sendable, Equatable {
        /// Request headers (`name: value\r\n` each) beyond this get 431.
        public var maxHeaderBytes: Int
        /// Request bodies beyond this get 413.
        public var maxBodyBytes: Int
        /// How long a client may take to send a whole request (from its connection's accept,
        /// or the end of its previous answer, to the request's last byte), and how long a write
        /// may stay blocked.
        public var timeout: Duration
        /// Client connections open at once (nil: no limit), counted from their accept; a
        /// connection accepted beyond it has its first request answered 503 and is closed.
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

    /// How long accepting pauses when `accept` fails for want of file descriptors or memory.
    public static let acceptPause: Duration = .milliseconds(250)

    public let loop: EventLoop
    public let limits: Limits
    /// Receives every request within the limits.
    public var handler: (ServerRequest) -> Void
    /// Told once about every request when it ends: answered (``ServerRequest/status``), its
    /// stream ended, or its client gone (``ServerRequest/state`` is `.disconnected`).
    public var onComplete: ((ServerRequest) -> Void)?
    /// Told each time `accept` fails and accepting pauses, with the `errno` (e.g. `EMFILE`).
    public var onAcceptPaused: ((Int32) -> Void)?
    /// Told the new ``connectionCount`` each time a connection is accepted or closed.
    public var onConnectionCountChange: ((Int) -> Void)?

    let http: OpaquePointer
    /// Chunks on their way into a connection's output (evhttp moves, never keeps, them).
    let scratchBuffer: OpaquePointer
    /// The deflate stream of this server's gzip answers, made on first use.
    private(set) lazy var gzip = Gzip()
    /// The `Date` of its answers, written once a second.
    var date = HTTPDate()
    /// The listening sockets, as evhttp knows them.
    private var boundSockets: [OpaquePointer] = []
    /// Connections attached to their `evhttp_connection`, by it.
    private var connections: [OpaquePointer: ServerConnection] = [:]
    /// Connections accepted in this loop turn, whose `evhttp_connection` evhttp is making.
    private var accepted: [ServerConnection] = []
    private var tlsContext: TLSContext?
    private var acceptResume: LoopTimer?
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
        evhttp_set_bevcb(http, { base, context in
            Unmanaged<HTTPServer>.fromOpaque(context!).takeUnretainedValue().accept(base: base!)
        }, context)
    }

    deinit {
        close()
        evbuffer_free(scratchBuffer)
        free(defaultContentType)
    }

    /// Closes the server now: its listening sockets and every connection, whose open requests
    /// see their client gone (``ServerRequest/onDisconnect``), and whose requests end
    /// (``onComplete``). It serves nothing afterwards; closing again does nothing.
    ///
    /// The server's owner calls it while what those callbacks reach is still whole: the
    /// server may outlive its owner (a request answering on the loop holds it while the owner
    /// goes), and its own `deinit` would then free the connections into callbacks whose
    /// objects are gone. Without it, the `deinit` closes. Not from inside one of this server's
    /// own callbacks (its handler, ``onComplete``, a request's): `evhttp_free` would free the
    /// connection whose callback is running.
    public func close() {
        guard !isClosed else { return }
        isClosed = true
        acceptResume?.cancel()
        for socket in boundSockets { AcceptErrors.forget(evhttp_bound_socket_get_listener(socket)) }
        boundSockets.removeAll()
        // Frees listeners and connections; open requests see their connection close.
        evhttp_free(http)
        let abandoned = accepted
        accepted.removeAll()
        for connection in abandoned { release(connection) }
    }

    /// Whether ``close()`` freed evhttp: nothing may reach `http` afterwards.
    public private(set) var isClosed = false

    /// Listens on `host:port` (port 0: any free port) and returns the bound port.
    /// `reusePort` sets SO_REUSEPORT so several workers can share one port.
    @discardableResult
    public func bind(host: String, port: UInt16, reusePort: Bool = false) throws(LibeventError) -> UInt16 {
        precondition(!isClosed, "HTTPServer.bind after close()")
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
        guard let bound = evhttp_bind_listener(http, listener) else {
            evconnlistener_free(listener)
            throw LibeventError(call: "evhttp_bind_listener", detail: endpoint)
        }
        // evhttp owns the accept callback; the error callback is ours (its argument is evhttp's,
        // so the listener finds its server through AcceptErrors).
        AcceptErrors.register(listener, server: self)
        evconnlistener_set_error_cb(listener) { listener, _ in
            AcceptErrors.server(of: listener!)?.acceptFailed(Glibc.errno)
        }
        boundSockets.append(bound)
        return SocketAddress.localPort(of: fd)
    }

    /// Stops accepting for good and drains: the listening sockets are closed (with
    /// SO_REUSEPORT the kernel would otherwise keep queueing connections to them), and every
    /// answer from now on closes its connection. Open requests and streams carry on.
    public func stopAccepting() {
        isDraining = true
        acceptResume?.cancel()
        for socket in boundSockets {
            AcceptErrors.forget(evhttp_bound_socket_get_listener(socket))
            evhttp_del_accept_socket(http, socket)
        }
        boundSockets.removeAll()
    }

    /// Whether the server is shutting down: see ``stopAccepting()``.
    public private(set) var isDraining = false

    /// Client connections now open, counted from their accept.
    public private(set) var connectionCount = 0 {
        didSet { onConnectionCountChange?(connectionCount) }
    }

    /// Requests received and not yet ended (answered, stream ended, or client gone).
    public private(set) var openRequestCount = 0

    /// Times `accept` failed and accepting paused (out of file descriptors, most often).
    public private(set) var acceptPauses = 0

    /// Whether some connection still has answer bytes the socket has not taken, or an answer
    /// evhttp has yet to finish: both happen on later loop turns, so a server stopping right
    /// after answering would lose the one or leak the other.
    public var hasPendingOutput: Bool {
        connections.values.contains { $0.hasUnfinishedAnswer }
    }

    func forget(_ connection: ServerConnection) {
        if let evcon = connection.evcon { connections[evcon] = nil }
        connectionCount -= 1
    }

    func completed(_ request: ServerRequest) {
        openRequestCount -= 1
        request.connection.requestEnded(deadline: limits.timeout)
        onComplete?(request)
    }

    // MARK: - Accepting

    /// evhttp accepted a connection and asks for its bufferevent: the connection is counted
    /// and followed from here. evhttp makes its `evhttp_connection` around the bufferevent
    /// right after this returns, before any byte is read; the connection is attached to it
    /// at the end of this loop turn (see ``attachAccepted()``).
    private func accept(base: OpaquePointer) -> OpaquePointer? {
        let made = tlsContext.map { $0.serverBufferEvent(base: base) } ?? bufferevent_socket_new(base, -1, Int32(BEV_OPT_CLOSE_ON_FREE.rawValue))
        guard let bufferEvent = made else { return nil }
        let admitted = limits.maxConnections.map { connectionCount < $0 } ?? true
        connectionCount += 1
        // Held until attached: should evhttp free the connection first, the bufferevent stays
        // valid for ``attachAccepted()`` to see it gone.
        bufferevent_incref(bufferEvent)
        accepted.append(ServerConnection(server: self, bufferEvent: bufferEvent, admitted: admitted, writesPlainSocket: tlsContext == nil))
        if accepted.count == 1 { loop.deferred { [weak self] in self?.attachAccepted() } }
        return bufferEvent
    }

    /// Attaches each connection accepted this turn to the `evhttp_connection` evhttp made
    /// around its bufferevent (evhttp passes it as the bufferevent's callback argument; it
    /// has no call for it). A bufferevent whose callbacks are gone was freed by evhttp.
    private func attachAccepted() {
        let attaching = accepted
        accepted.removeAll()
        for connection in attaching {
            var readCallback: bufferevent_data_cb?
            var writeCallback: bufferevent_data_cb?
            var eventCallback: bufferevent_event_cb?
            var argument: UnsafeMutableRawPointer?
            bufferevent_getcb(connection.bufferEvent, &readCallback, &writeCallback, &eventCallback, &argument)
            if let argument, eventCallback != nil {
                let evcon = OpaquePointer(argument)
                connections[evcon] = connection
                connection.attach(evcon, deadline: limits.timeout, eventCallback: eventCallback)
                bufferevent_decref(connection.bufferEvent)
            } else {
                release(connection)
            }
        }
    }

    private func release(_ connection: ServerConnection) {
        connection.abandon()
        connectionCount -= 1
        bufferevent_decref(connection.bufferEvent)
    }

    /// `accept` failed. Out of descriptors or memory, the listener would report the same
    /// pending connection on every loop turn (it is level-triggered), so it pauses instead.
    private func acceptFailed(_ code: Int32) {
        guard [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(code), !isDraining else { return }
        for socket in boundSockets { evconnlistener_disable(evhttp_bound_socket_get_listener(socket)) }
        acceptPauses += 1
        onAcceptPaused?(code)
        let resume = acceptResume ?? LoopTimer(loop: loop) { [unowned self] in
            guard !isDraining else { return }
            for socket in boundSockets { evconnlistener_enable(evhttp_bound_socket_get_listener(socket)) }
        }
        acceptResume = resume
        resume.schedule(after: Self.acceptPause)
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
        if !accepted.isEmpty { attachAccepted() }
        let evcon = evhttp_request_get_connection(raw)!
        guard let connection = connections[evcon] else {
            // Unreachable: every connection is attached before its first byte is read.
            evhttp_send_reply(raw, 500, "Internal Server Error", nil)
            return
        }
        let arrival = connection.requestArrived()
        let request = ServerRequest(raw: raw, method: method, server: self, connection: connection)
        openRequestCount += 1
        let close = [("Connection", "close")]
        guard connection.admitted else {
            return request.respond(HTTPError(status: 503, code: "too_many_connections",
                                             message: "the server is at its limit of \(limits.maxConnections ?? 0) connections"),
                                   headers: close + [("Retry-After", "1")])
        }
        if let rule = arrival.rejection ?? RequestHeadRules.violation(
            of: raw, method: method, isHTTP10: tributary_evhttp_request_is_http10(raw) != 0, folded: arrival.folded) {
            return request.respond(.malformedRequest(rule), headers: close)
        }
        if let violation = limitViolation(raw) {
            return request.respond(violation, headers: close)
        }
        handler(request)
        request.watchConnection()
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

/// Which server each listening socket belongs to, for `accept` errors: evhttp owns the
/// listener's callback argument, so the error callback finds its server here.
private enum AcceptErrors {
    private final class WeakServer: @unchecked Sendable {
        weak var server: HTTPServer?
        init(_ server: HTTPServer) { self.server = server }
    }

    private static let servers = Mutex<[UInt: WeakServer]>([:])

    static func register(_ listener: OpaquePointer, server: HTTPServer) {
        let entry = WeakServer(server)
        servers.withLock { $0[UInt(bitPattern: Int(bitPattern: listener))] = entry }
    }

    static func forget(_ listener: OpaquePointer?) {
        guard let listener else { return }
        _ = servers.withLock { $0.removeValue(forKey: UInt(bitPattern: Int(bitPattern: listener))) }
    }

    /// Read on the listener's loop, the only place its server is used.
    static func server(of listener: OpaquePointer) -> HTTPServer? {
        let entry = servers.withLock { $0[UInt(bitPattern: Int(bitPattern: listener))] }
        return entry?.server
    }
}
