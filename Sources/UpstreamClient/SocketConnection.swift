import CLibevent
import Glibc
import EventLoop

/// A keep-alive HTTP/1.1 connection to a plain-HTTP upstream: a nonblocking socket of its own,
/// read through one persistent libevent event, its answers read by ``HTTPResponseParser``.
///
/// Why not evhttp's client, which HTTPS still uses (``EvhttpConnection``): per exchange it
/// made about six system calls (`writev`, an `ioctl` to size the read, `readv`, and
/// `epoll_ctl` to enable and disable its events) and parsed the head into allocated header
/// lists. Here a request goes out with one `send`, and its answer usually comes in with one
/// `recv`. The read event stays registered from connect to close, so an exchange costs no
/// `epoll_ctl`, and an idle connection that the upstream closes is noticed (and never reused).
/// The write event is armed only while connecting, or while a request waits for room in the
/// socket's buffer.
///
/// ```
/// fresh ─send─▶ (resolving) ─▶ connecting ─writable─▶ open ─answer─▶ open, idle ─send─▶ …
///                    │               │ refused, timeout       │ EOF, error, hostile answer, withdraw,
///                    └───────────────┴────────────────────────┴ an answer that ends keep-alive ─▶ closed
/// ```
final class SocketConnection: UpstreamConnection {
    /// The bytes one loop's connections receive into (each connection's `recv` lands here and
    /// is parsed at once, so one buffer serves them all).
    final class ReceiveBuffer {
        let bytes: UnsafeMutableRawBufferPointer

        init(capacity: Int = 64 * 1024) {
            bytes = .allocate(byteCount: capacity, alignment: 16)
        }

        deinit {
            bytes.deallocate()
        }
    }

    private enum Phase {
        case fresh
        case resolving(AddressResolver.Request)
        case connecting
        case open
        case closed
    }

    private let loop: EventLoop
    private let origin: BaseURL.Origin
    private let limits: UpstreamClient.Configuration
    private let receiveBuffer: ReceiveBuffer
    /// For a host name (nil for an IP address literal).
    private let resolver: AddressResolver?
    private var phase = Phase.fresh
    private var socket: Int32 = -1
    private var readEvent: OpaquePointer?
    private var writeEvent: OpaquePointer?
    /// The call whose request is on this connection, and its answer as read so far: the one
    /// parser, started again for each request, reads for `call` while it is set.
    private var call: UpstreamCall?
    private var parser = HTTPResponseParser(limits: .init(maxHeadBytes: 0, maxBodyBytes: 0), keptHeaders: [], expectsBody: false)
    /// The request's bytes, and how many of them the socket took.
    private var output: [UInt8] = []
    private var outputSent = 0
    /// The socket inactivity limit (``UpstreamClient/Configuration/connectionTimeout``), made
    /// when first needed: while connecting, and for a request whose own deadline is later.
    private var inactivity: LoopTimer?
    /// When the last answer ended (nil before the first): a connection idle for longer than
    /// the inactivity limit is not reused, as evhttp's client closed it. A firewall or NAT
    /// that forgot the flow silently would leave its next call without an answer until that
    /// call's deadline, where a new connection answers now. Checked when the pool reuses the
    /// connection rather than with a timer per idle connection.
    private var idleSince: MonotonicInstant?
    /// ``UpstreamClient/Configuration/connectionTimeout`` in nanoseconds, for the idle check.
    private let idleLimit: Int64
    /// Whether the call in flight got any byte of its answer yet.
    private var answerStarted = false
    /// Whether the call in flight's own deadline comes after the inactivity limit, which then
    /// guards it while it is on the socket: decided once per call, as it is sent.
    private var callOutlastsInactivityLimit = false

    init(loop: EventLoop, origin: BaseURL.Origin, resolver: AddressResolver?, receiveBuffer: ReceiveBuffer, limits: UpstreamClient.Configuration) {
        self.loop = loop
        self.origin = origin
        self.resolver = resolver
        self.receiveBuffer = receiveBuffer
        self.limits = limits
        idleLimit = MonotonicInstant.nanoseconds(of: limits.connectionTimeout)
    }

    /// A connection over a socket another loop's pool lent (``UpstreamConnection/detachSocket()``):
    /// open and idle, its earlier answers all read. Closed at once if its event cannot be made.
    convenience init(
        adopting lent: LentSocket, loop: EventLoop, origin: BaseURL.Origin, resolver: AddressResolver?,
        receiveBuffer: ReceiveBuffer, limits: UpstreamClient.Configuration
    ) {
        self.init(loop: loop, origin: origin, resolver: resolver, receiveBuffer: receiveBuffer, limits: limits)
        socket = lent.descriptor
        idleSince = lent.idleSince
        guard makeEvents() else {
            close()
            return
        }
        phase = .open
        event_add(readEvent, nil)
    }

    deinit {
        close()
        if let readEvent { event_free(readEvent) }
        if let writeEvent { event_free(writeEvent) }
    }

    func isReusable(at now: MonotonicInstant) -> Bool {
        guard call == nil else { return false }
        switch phase {
        case .fresh: return true
        case .open: return idleSince.map { now.nanoseconds(since: $0) < idleLimit } ?? true
        case .resolving, .connecting, .closed: return false
        }
    }

    func send(_ call: UpstreamCall) {
        self.call = call
        answerStarted = false
        callOutlastsInactivityLimit = call.request.timeout > limits.connectionTimeout
        // The request is read where the call keeps it: a copy costs a retain and a release of
        // each of its strings and arrays.
        parser.restart(
            limits: .init(maxHeadBytes: limits.maxResponseHeaderBytes, maxBodyBytes: min(call.request.maxResponseBytes, limits.maxResponseBytes)),
            keptHeaders: call.request.keptResponseHeaders, expectsBody: call.request.method != .head)
        writeRequest(call.request, span: call.traceSpanID)
        switch phase {
        case .fresh: connect()
        case .open: flush()
        case .resolving, .connecting, .closed: fail(.connectionFailed, "connection not usable")
        }
    }

    func withdraw() {
        call = nil
        close()
    }

    // MARK: - Connecting

    private func connect() {
        guard let resolver else {
            open(address: origin.host)
            return
        }
        phase = .resolving(resolver.resolve(origin.host, port: origin.port) { [weak self] result in
            guard let self, case .resolving = phase else { return }
            switch result {
            case .success(let address): open(address: address)
            case .failure(let failure): fail(.connectionFailed, failure.description)
            }
        })
    }

    /// Opens the socket and starts connecting it to `address` (an IP address literal).
    private func open(address: String) {
        guard var target = try? SocketAddress.resolve(host: address, port: origin.port, numericOnly: true) else {
            fail(.connectionFailed, "\(address) is not an IP address")
            return
        }
        socket = Glibc.socket(target.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socket >= 0 else {
            fail(.connectionFailed, "socket: \(Self.systemError())")
            return
        }
        var noDelay: Int32 = 1
        setsockopt(socket, Int32(IPPROTO_TCP), TCP_NODELAY, &noDelay, socklen_t(MemoryLayout<Int32>.size))
        guard makeEvents() else {
            fail(.connectionFailed, "event_new failed (out of memory)")
            return
        }
        let result = target.withSockaddr { Glibc.connect(socket, $0, socklen_t($1)) }
        if result == 0 {
            connected()
        } else if errno == EINPROGRESS {
            phase = .connecting
            event_add(writeEvent, nil)
            startInactivityLimit()
        } else {
            fail(.connectionFailed, "connect: \(Self.systemError())")
        }
    }

    /// The socket's read and write events on this loop; false when libevent could not make them.
    private func makeEvents() -> Bool {
        let context = Unmanaged.passUnretained(self).toOpaque()
        readEvent = event_new(loop.base, socket, Int16(EV_READ | EV_PERSIST), { _, _, context in
            let connection = Unmanaged<SocketConnection>.fromOpaque(context!).takeUnretainedValue()
            withExtendedLifetime(connection) { connection.readable() }
        }, context)
        writeEvent = event_new(loop.base, socket, Int16(EV_WRITE), { _, _, context in
            let connection = Unmanaged<SocketConnection>.fromOpaque(context!).takeUnretainedValue()
            withExtendedLifetime(connection) { connection.writable() }
        }, context)
        return readEvent != nil && writeEvent != nil
    }

    private func connected() {
        phase = .open
        inactivity?.cancel()
        event_add(readEvent, nil)
        flush()
    }

    private func startInactivityLimit() {
        if inactivity == nil {
            inactivity = LoopTimer(loop: loop) { [unowned self] in
                if case .connecting = phase {
                    fail(.timeout, "connect timed out")
                } else {
                    fail(.timeout, "connection timed out")
                }
            }
        }
        inactivity?.schedule(after: limits.connectionTimeout)
    }

    // MARK: - Writing

    /// Writes the request's bytes into `output` (reusing its storage).
    private func writeRequest(_ request: UpstreamRequest, span: UInt64?) {
        var bytes = output
        output = []
        bytes.removeAll(keepingCapacity: true)
        RequestHead.write(request, span: span, hostHeader: origin.hostHeader, into: &bytes)
        output = bytes
        outputSent = 0
    }

    /// Sends what the socket takes of the request; the rest waits for the write event.
    private func flush() {
        while outputSent < output.count {
            let sent = output.withUnsafeBytes { bytes in
                Glibc.send(socket, bytes.baseAddress! + outputSent, bytes.count - outputSent, Int32(MSG_NOSIGNAL))
            }
            if sent > 0 {
                outputSent += sent
            } else if sent < 0 && errno == EINTR {
                continue
            } else if sent < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                event_add(writeEvent, nil)
                if call != nil && callOutlastsInactivityLimit { startInactivityLimit() }
                return
            } else {
                fail(.connectionFailed, "send: \(Self.systemError())", beforeAnswer: true)
                return
            }
        }
        if call != nil && callOutlastsInactivityLimit { startInactivityLimit() }
    }

    private func writable() {
        guard case .connecting = phase else {
            if call != nil { flush() }
            return
        }
        var error: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(socket, SOL_SOCKET, SO_ERROR, &error, &length)
        guard error == 0 else {
            fail(.connectionFailed, "connect: \(Self.systemError(error))")
            return
        }
        connected()
    }

    // MARK: - Reading

    /// Reads what arrived: the answer of the request in flight, or, on an idle connection, its
    /// close (or bytes no request asked for, which end it too).
    private func readable() {
        let buffer = receiveBuffer.bytes
        while true {
            let count = recv(socket, buffer.baseAddress, buffer.count, 0)
            if count > 0 {
                guard call != nil else {
                    close()
                    return
                }
                answerStarted = true
                switch parser.feed(UnsafeRawBufferPointer(rebasing: buffer[..<count])) {
                case .needsMore:
                    if let inactivity, inactivity.isScheduled { inactivity.schedule(after: limits.connectionTimeout) }
                    // A full buffer may have left more behind; otherwise the event says when.
                    if count < buffer.count { return }
                case .complete(let consumed):
                    answered(leavingBytes: consumed < count)
                    return
                case .failed(let kind, let detail):
                    fail(kind, detail)
                    return
                }
            } else if count == 0 {
                guard call != nil else {
                    close()
                    return
                }
                switch parser.endOfInput() {
                case .complete: answered(leavingBytes: false)
                case .failed(let kind, let detail): fail(kind, detail, beforeAnswer: !answerStarted)
                case .needsMore: fail(.connectionFailed, "connection closed", beforeAnswer: !answerStarted)
                }
                return
            } else if errno == EINTR {
                continue
            } else if errno == EAGAIN || errno == EWOULDBLOCK {
                return
            } else {
                let reason = "recv: \(Self.systemError())"
                if call != nil { fail(.connectionFailed, reason, beforeAnswer: !answerStarted) } else { close() }
                return
            }
        }
    }

    /// The answer is whole. The connection stays open for another request only if the answer
    /// allows it, nothing followed it (bytes after an answer would otherwise be read as the
    /// start of the next one, which could be any other caller's) and the request was sent
    /// whole (an early answer to a large body: the rest of it would precede the next request).
    private func answered(leavingBytes: Bool) {
        guard let call else { return }
        self.call = nil
        // The answer is moved out of the parser where it lies: a copy of the parser cost a
        // retain and a release of each of its arrays.
        let keepsAlive = parser.keepsAlive
        let response = parser.takeResponse()
        inactivity?.cancel()
        let reusable = keepsAlive && !leavingBytes && outputSent == output.count
        // One clock reading: the call's end (its latency) and the connection's idle start.
        let now = MonotonicInstant.now
        if reusable { idleSince = now } else { close() }
        call.answered(response, reusable: reusable, at: now)
    }

    // MARK: - Ending

    /// Closes the connection and tells the call in flight why, on a later loop turn (this may
    /// run inside ``send(_:)``). `beforeAnswer`: the connection broke before any byte of the
    /// answer came. On a connection that carried an answer before, that is most often the
    /// upstream closing it while idle just as this request went out, and the call may go
    /// again on another connection (``UpstreamCall/connectionLost(_:_:)``).
    private func fail(_ kind: UpstreamError.Kind, _ detail: String, beforeAnswer: Bool = false) {
        let call = self.call
        let reused = idleSince != nil
        self.call = nil
        close()
        guard let call else { return }
        if beforeAnswer && reused {
            loop.deferred { call.connectionLost(kind, detail) }
        } else {
            loop.deferred { call.failed(kind, detail) }
        }
    }

    func detachSocket() -> LentSocket? {
        guard call == nil, case .open = phase, socket >= 0 else { return nil }
        if let readEvent { event_del(readEvent) }
        if let writeEvent { event_del(writeEvent) }
        inactivity?.cancel()
        let lent = LentSocket(descriptor: socket, idleSince: idleSince)
        socket = -1
        phase = .closed
        return lent
    }

    /// Closes the socket (the upstream sees it); the events are freed in `deinit`.
    private func close() {
        if case .resolving(let request) = phase { request.cancel() }
        phase = .closed
        if socket >= 0 {
            if let readEvent { event_del(readEvent) }
            if let writeEvent { event_del(writeEvent) }
            Glibc.close(socket)
            socket = -1
        }
        inactivity?.cancel()
    }

    private static func systemError(_ code: Int32 = errno) -> String {
        String(cString: strerror(code))
    }
}
