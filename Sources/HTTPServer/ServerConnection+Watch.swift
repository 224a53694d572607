import CEvhttpRequestFields
import CLibevent
import Glibc
import EventLoop

/// Watching the client while its request is open or streaming.
///
/// While a handler is pending, evhttp stops reading the connection, so a client that drops an
/// unanswered request would never be noticed. The watch re-arms reading with a NULL read
/// callback (evhttp's own read callback would abort the process on pipelined bytes), so EOF
/// or an error reaches the event callback. Three things stand between the client and that:
///
/// - **A read-ahead bound.** What the client sends meanwhile waits in the input buffer (it is
///   its next request, and must not be lost); at ``maxReadAhead`` bytes reading pauses and the
///   rest waits in the kernel, so a client that floods an open request or an event stream
///   costs that much memory, not hundreds of megabytes. (evhttp itself reads with a NULL
///   callback while writing an answer, so the bound stays on for the whole watch.)
/// - **A half-close is not a disconnect.** EOF means only that the client sent all it will
///   send: `shutdown(SHUT_WR)` after a request is legal and the client still waits for the
///   answer. So on EOF the watch sends a probe the client must accept — an interim
///   `100 Continue` before an HTTP/1.1 answer, or the stream's own ``ServerRequest/livenessProbe``
///   on an event stream — and a ``SocketResetWatch`` waits for the reset with which a client
///   that closed its socket answers data (one that only half-closed takes it, and is noticed
///   later the same way, whenever it closes with the probe unread). An HTTP/1.0 client cannot
///   be sent an interim answer; its EOF is taken as a half-close, and a client that really left
///   is noticed when its answer is written.
/// - **Timeouts.** The read timeout is lifted (a client that waits quietly for a slow answer
///   or an event stream is not idle); the write timeout stays.
extension ServerConnection {
    /// What a client may send ahead while a request of its is open.
    static let maxReadAhead = 64 * 1024

    /// Starts watching for `request`, which becomes the connection's open request.
    func watch(_ request: ServerRequest, writeTimeout: Duration) {
        openRequest = request
        standInFront(writeCallback: currentWriteCallback)
        bufferevent_setwatermark(bufferEvent, Int16(EV_READ), 0, Self.maxReadAhead)
        var timeout = timeval(writeTimeout)
        bufferevent_set_timeouts(bufferEvent, nil, &timeout)
        if !clientFinishedSending { bufferevent_enable(bufferEvent, Int16(EV_READ)) }
    }

    /// Puts the watch back after evhttp wrote (each write installs evhttp's own callbacks and
    /// enables reading).
    func rewatchAfterWrite() {
        guard openRequest != nil else { return }
        standInFront(writeCallback: currentWriteCallback)
        keepReadingOffAfterEOF()
    }

    /// The write callback evhttp set last (it changes with what evhttp is writing).
    private var currentWriteCallback: bufferevent_data_cb? {
        var readCallback: bufferevent_data_cb?
        var writeCallback: bufferevent_data_cb?
        var eventCallback: bufferevent_event_cb?
        var argument: UnsafeMutableRawPointer?
        bufferevent_getcb(bufferEvent, &readCallback, &writeCallback, &eventCallback, &argument)
        return writeCallback
    }

    /// Stops watching before a normal answer: keep-alive connections are reused, and a
    /// `Connection: close` answer frees the connection, which must not look like a disconnect.
    func stopWatching(readTimeout: Duration) {
        openRequest = nil
        resetWatch = nil
        bufferevent_setcb(bufferEvent, nil, nil, evhttpEventCallback, evhttpCallbackArgument)
        bufferevent_setwatermark(bufferEvent, Int16(EV_READ), 0, 0)
        var timeout = timeval(readTimeout)
        bufferevent_set_timeouts(bufferEvent, &timeout, &timeout)
    }

    /// After evhttp queued an answer it reads again to notice a close; a half-closed client's
    /// EOF must not cut the answer short, so reading stays off once the client sent EOF (a
    /// client that is really gone is noticed when the answer is written).
    func keepReadingOffAfterEOF() {
        // Closed: an answer that ended at once may have freed the bufferevent already.
        guard !isClosed else { return }
        if clientFinishedSending { bufferevent_disable(bufferEvent, Int16(EV_READ)) }
    }

    /// Puts this object's callbacks in front of evhttp's: the callback argument becomes this
    /// object, so evhttp's write callback (which needs its `evhttp_connection`) is called
    /// through a trampoline.
    private func standInFront(writeCallback: bufferevent_data_cb?) {
        evhttpWriteCallback = writeCallback
        // Each callback holds the connection while it runs: handing an event or a write to
        // evhttp may free the connection, and with it the close callback's retain of this object.
        bufferevent_setcb(bufferEvent, nil, writeCallback == nil ? nil : { _, context in
            let connection = Unmanaged<ServerConnection>.fromOpaque(context!).takeUnretainedValue()
            withExtendedLifetime(connection) { connection.forwardWrite() }
        }, { _, what, context in
            let connection = Unmanaged<ServerConnection>.fromOpaque(context!).takeUnretainedValue()
            withExtendedLifetime(connection) { connection.watchedEvent(what) }
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    private func forwardWrite() {
        evhttpWriteCallback?(bufferEvent, evhttpCallbackArgument)
    }

    /// Hands an event to evhttp, which fails the connection on EOF, errors and timeouts.
    private func forward(_ what: Int16) {
        evhttpEventCallback?(bufferEvent, what, evhttpCallbackArgument)
    }

    private func watchedEvent(_ what: Int16) {
        let eof = what & Int16(BEV_EVENT_EOF) != 0 && what & Int16(BEV_EVENT_ERROR) == 0
        guard eof, let request = openRequest, request.isOpen else { return forward(what) }
        if clientFinishedSending {
            keepReadingOffAfterEOF()
            return
        }
        clientFinishedSending = true
        guard startProbe(for: request) else { return forward(what) }
    }

    // MARK: - Half-close or gone?

    /// Sends the probe for an EOF on `request`'s connection and watches for the reset that
    /// answers it if the client is gone; false when no probe can be sent (the EOF then counts
    /// as a disconnect).
    private func startProbe(for request: ServerRequest) -> Bool {
        switch request.state {
        case .open:
            guard let raw = request.raw else { return false }
            if tributary_evhttp_request_is_http10(raw) == 0 {
                // Nothing of this request's answer is written yet: evhttp's write callback
                // (which would finish the previous answer) must not run for the probe.
                standInFront(writeCallback: nil)
                _ = evbuffer_add(bufferevent_get_output(bufferEvent), "HTTP/1.1 100 Continue\r\n\r\n", 25)
                bufferevent_enable(bufferEvent, Int16(EV_WRITE))
            }
        case .streaming:
            guard let bytes = request.livenessProbe else { return false }
            request.write(bytes)
        case .finished, .disconnected:
            return false
        }
        guard let loop = server?.loop else { return false }
        resetWatch = SocketResetWatch(loop: loop, socket: bufferevent_getfd(bufferEvent)) { [unowned self] in
            resetWatch = nil
            forward(Int16(BEV_EVENT_EOF | BEV_EVENT_READING))
        }
        return resetWatch != nil
    }
}
