import CLibevent
import EventLoop
import Glibc

/// One client connection of an ``HTTPServer``, from its accept until it closes.
///
/// ```
/// accept ─▶ bufferevent made (counted, input followed) ─▶ attached to its evhttp_connection
///   ─▶ waiting for a request (deadline) ─▶ request open or streaming (watched) ─▶ waiting … ─▶ closed
/// ```
///
/// - It is counted from the accept (``HTTPServer/Limits/maxConnections``), and a connection
///   over the limit is refused when its first request arrives.
/// - A deadline bounds the wait for each whole request (``HTTPServer/Limits/timeout``): a
///   client sending one byte a minute is closed when it runs out, not kept forever.
/// - Its input is followed before evhttp parses it (``RequestFraming``); a chunked body that
///   breaks the rules is cut where it does, and its request answered 400.
/// - It owns the connection's close callback (evhttp calls it when it frees the connection,
///   whatever the reason), which keeps the server's count exact and tells the request still
///   open on it, if any, that its client is gone. That callback's context holds one retain
///   of this object, released by the callback.
///
/// Loop-confined.
final class ServerConnection {
    /// Weak: when the server is freed it frees its connections, calling back here during its
    /// own deinit.
    weak var server: HTTPServer?
    let bufferEvent: OpaquePointer
    /// The `evhttp_connection`, once evhttp has made it around ``bufferEvent``.
    private(set) var evcon: OpaquePointer?
    /// Whether it was within ``HTTPServer/Limits/maxConnections`` when accepted.
    let admitted: Bool
    /// Whether ``bufferEvent`` writes a plain socket (false: TLS, whose bytes only its OpenSSL
    /// bufferevent may write), so an answer can be written at once (``writeQueuedAnswer()``).
    let writesPlainSocket: Bool
    /// The request being answered on this connection while it is open or streaming
    /// (evhttp serves a connection's requests one at a time).
    var openRequest: ServerRequest?
    /// Requests handed to the server so far (the index of the next one).
    private(set) var requestsReceived = 0
    private(set) var isClosed = false

    /// evhttp's event callback and its argument (the `evhttp_connection`), which the watch of
    /// an open request stands in front of (see `+Watch`).
    private(set) var evhttpEventCallback: bufferevent_event_cb?
    private(set) var evhttpCallbackArgument: UnsafeMutableRawPointer?
    /// evhttp's write callback while the watch stands in front (it changes with each write).
    var evhttpWriteCallback: bufferevent_data_cb?
    /// The client sent EOF: it sends nothing more (a half-close, unless a probe finds it gone).
    var clientFinishedSending = false
    /// Notices when a client that sent EOF resets the connection (see `+Watch`).
    var resetWatch: SocketResetWatch?

    private var framing = RequestFraming()
    /// Requests whose framing broke the rules, by index, with what to tell the client.
    private var rejections: [Int: String] = [:]
    private var inputWatch: OpaquePointer?
    /// Bytes evhttp has taken from the front of the input: stream offset of its first byte.
    private var consumed = 0
    /// Set while this object edits the input (its own edits call back, too).
    private var editingInput = false
    /// After a violation: whatever the client sends next is dropped unread.
    private var discardingInput = false
    private var deadline: LoopTimer?
    /// An answer went out by ``writeQueuedAnswer()`` and evhttp's write callback is still to run.
    private var answerWrittenAtOnce = false

    /// A connection just accepted, around `bufferEvent`, which evhttp is about to adopt.
    init(server: HTTPServer, bufferEvent: OpaquePointer, admitted: Bool, writesPlainSocket: Bool) {
        self.server = server
        self.bufferEvent = bufferEvent
        self.admitted = admitted
        self.writesPlainSocket = writesPlainSocket
        inputWatch = evbuffer_add_cb(bufferevent_get_input(bufferEvent), { buffer, info, context in
            guard let info else { return }
            Unmanaged<ServerConnection>.fromOpaque(context!).takeUnretainedValue().inputChanged(info.pointee)
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// evhttp made its connection around ``bufferEvent``: this object takes the close callback
    /// and starts the deadline for the first request.
    func attach(_ evcon: OpaquePointer, deadline limit: Duration, eventCallback: bufferevent_event_cb?) {
        self.evcon = evcon
        evhttpEventCallback = eventCallback
        evhttpCallbackArgument = UnsafeMutableRawPointer(evcon)
        evhttp_connection_set_closecb(evcon, { _, context in
            Unmanaged<ServerConnection>.fromOpaque(context!).takeRetainedValue().closed()
        }, Unmanaged.passRetained(self).toOpaque())
        startDeadline(after: limit)
    }

    private func startDeadline(after limit: Duration) {
        if deadline == nil, let loop = server?.loop {
            deadline = LoopTimer(loop: loop) { [unowned self] in deadlinePassed() }
        }
        deadline?.schedule(after: limit)
    }

    /// evhttp freed the connection before it was attached (it failed right after the accept).
    func abandon() {
        stopFollowingInput()
        isClosed = true
    }

    /// Bytes written to this connection that the socket has not taken yet.
    var pendingOutputBytes: Int { evbuffer_get_length(bufferevent_get_output(bufferEvent)) }

    /// The client's address and port, while the connection is open.
    var peer: (host: String, port: UInt16)? {
        guard let evcon, !isClosed else { return nil }
        var address: UnsafeMutablePointer<CChar>?
        var port: UInt16 = 0
        evhttp_connection_get_peer(evcon, &address, &port)
        return address.map { (String(cString: $0), port) }
    }

    /// Writes the answer evhttp has just queued now, rather than when the socket is next
    /// reported writable. evhttp only enables the write event, so every answer cost two
    /// `epoll_ctl` calls (interest in writing added, then removed) and a loop turn before its
    /// `writev`. When the socket takes the whole answer, the write event is disabled before
    /// the loop ever told epoll (the base's change list cancels the two out), and evhttp's
    /// write callback is called from a job on the loop (``EventLoop/deferred(_:)``), not from
    /// inside the handler that answered: evhttp then finishes the request as it would have. A
    /// socket that takes part of it, or fails, is left to evhttp's write event, which writes
    /// the rest or reports the error.
    ///
    /// The job, not libevent's own deferred callback: that one holds a reference on the
    /// bufferevent until it runs, so a loop stopped right after an answer (the last one of a
    /// drain) leaked the connection. Until the job runs, ``hasUnfinishedAnswer`` holds, which
    /// a drain waits for; a loop torn down before it frees the job, and nothing else.
    func writeQueuedAnswer() {
        guard writesPlainSocket, !isClosed, let loop = server?.loop else { return }
        guard writeOutputNow() else { return }
        bufferevent_disable(bufferEvent, Int16(EV_WRITE))
        answerWrittenAtOnce = true
        loop.deferred { [self] in
            answerWrittenAtOnce = false
            guard !isClosed else { return }
            bufferevent_trigger(bufferEvent, Int16(EV_WRITE), 0)
        }
    }

    /// Writes the chunk a stream has just queued now, into an output that held nothing before
    /// it, and says whether the socket took all of it. Each chunk queued through evhttp costs
    /// what an answer does (``writeQueuedAnswer()``): the write event armed, a loop turn, the
    /// `writev`, the event disarmed. An update fanned out to 10,000 streams paid that 10,000
    /// times; written here it is one `writev` each, and the write event, disabled before the
    /// loop told epoll, costs nothing (the base's change list cancels the two out).
    ///
    /// When the socket took everything, evhttp's write callback does not run for this chunk:
    /// the caller learns it from the result instead (no drained callback follows). A socket that
    /// takes part of it, or fails, is left to evhttp's write event, as for any chunk: it
    /// writes the rest, then calls the chunk's callback, or reports the error.
    func writeQueuedChunk() -> Bool {
        guard writesPlainSocket, !isClosed, writeOutputNow() else { return false }
        bufferevent_disable(bufferEvent, Int16(EV_WRITE))
        return true
    }

    /// Sends `first` then `second` to the socket now, when nothing waits before them in the
    /// output (else nothing: they must follow it), and says how many of their bytes it took.
    /// The bytes never enter the output buffer, so nothing is allocated or retained for them
    /// and no write event is armed: a stream's event sent to 10,000 sockets is 10,000
    /// `sendmsg` calls and nothing else. Zero when the socket would block, or fails: the
    /// caller then queues the bytes, and the bufferevent's write meets the error and reports it.
    func sendNow(_ first: UnsafeRawBufferPointer, _ second: UnsafeRawBufferPointer) -> Int {
        guard writesPlainSocket, !isClosed, pendingOutputBytes == 0 else { return 0 }
        let socket = bufferevent_getfd(bufferEvent)
        guard socket >= 0 else { return 0 }
        var parts = (
            iovec(iov_base: UnsafeMutableRawPointer(mutating: first.baseAddress), iov_len: first.count),
            iovec(iov_base: UnsafeMutableRawPointer(mutating: second.baseAddress), iov_len: second.count)
        )
        let sent = withUnsafeMutableBytes(of: &parts) { vectors in
            var message = msghdr()
            message.msg_iov = vectors.baseAddress!.assumingMemoryBound(to: iovec.self)
            message.msg_iovlen = second.isEmpty ? 1 : 2
            return sendmsg(socket, &message, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
        }
        return max(sent, 0)
    }

    /// Writes the output to the socket now, as the bufferevent's own write callback would, and
    /// says whether the socket took all of it. A socket bufferevent keeps its output's front
    /// frozen (no one but it removes bytes) except while it writes (bufferevent_sock.c); it
    /// is thawed for this write the same way, then frozen again. Without that, once the
    /// bufferevent's own write callback had run on a connection, every later write here failed
    /// and went the slow way.
    private func writeOutputNow() -> Bool {
        let output = bufferevent_get_output(bufferEvent)
        let socket = bufferevent_getfd(bufferEvent)
        guard socket >= 0, evbuffer_get_length(output) > 0 else { return false }
        evbuffer_unfreeze(output, 1)
        let written = evbuffer_write(output, socket)
        evbuffer_freeze(output, 1)
        return written > 0 && evbuffer_get_length(output) == 0
    }

    /// Whether an answer has yet to leave or be finished: bytes the socket has not taken, or
    /// an answer written at once whose write callback has not run yet.
    var hasUnfinishedAnswer: Bool { answerWrittenAtOnce || pendingOutputBytes > 0 }

    // MARK: - Requests

    /// A request arrived whole: its index, the rule its framing broke (if it did), and
    /// whether it used an obs-fold line. The deadline stops while it is answered.
    func requestArrived() -> (index: Int, rejection: String?, folded: Bool) {
        deadline?.cancel()
        let index = requestsReceived
        requestsReceived += 1
        return (index, rejections.removeValue(forKey: index), framing.foldedRequests.contains(index))
    }

    /// The answer to the open request is complete: the connection waits for the next request,
    /// for at most the deadline.
    func requestEnded(deadline limit: Duration) {
        guard !isClosed, openRequest == nil else { return }
        startDeadline(after: limit)
    }

    /// The open request became a stream, which may stay open for hours: its deadline timer
    /// and the framing's line buffer are let go until a next request needs them, so that an
    /// idle subscriber holds no more than it uses.
    func streamStarted() {
        deadline?.cancel()
        deadline = nil
        framing.releaseLineBuffer()
    }

    private func deadlinePassed() {
        guard let evcon, !isClosed, openRequest == nil else { return }
        // Not inside an evhttp callback: a timer may free the connection.
        evhttp_connection_free(evcon)
    }

    private func closed() {
        isClosed = true
        stopFollowingInput()
        deadline?.cancel()
        deadline = nil
        resetWatch = nil
        server?.forget(self)
        let request = openRequest
        openRequest = nil
        request?.connectionClosed()
    }

    // MARK: - Following the input

    private func stopFollowingInput() {
        if let inputWatch {
            evbuffer_remove_cb_entry(bufferevent_get_input(bufferEvent), inputWatch)
            self.inputWatch = nil
        }
    }

    /// The input buffer changed: evhttp took bytes from its front, or a read added bytes at
    /// its end, which evhttp has not parsed yet (this runs first).
    private func inputChanged(_ info: evbuffer_cb_info) {
        guard !editingInput else { return }
        consumed += info.n_deleted
        guard info.n_added > 0 else { return }
        let input = bufferevent_get_input(bufferEvent)!
        let length = evbuffer_get_length(input)
        if discardingInput {
            edit { _ = Self.keep(length - info.n_added, of: input) }
            return
        }
        guard framing.isFollowing else { return }
        if let violation = follow(input, from: length - info.n_added) {
            rejections[violation.request] = violation.message
            discardingInput = true
            // Keep what precedes the violation, and end the body there: evhttp completes the
            // request, whose answer is then the 400; nothing after it is ever parsed.
            edit {
                _ = Self.keep(violation.position - consumed, of: input)
                _ = evbuffer_add(input, "0\r\n\r\n", 5)
            }
        }
    }

    /// Feeds the input's bytes from `offset` to the framing follower (its vectors on the
    /// stack: this runs for every read of every request).
    private func follow(_ input: OpaquePointer, from offset: Int) -> RequestFraming.Violation? {
        var start = evbuffer_ptr()
        guard evbuffer_ptr_set(input, &start, offset, EVBUFFER_PTR_SET) == 0 else { return nil }
        return withUnsafeTemporaryAllocation(of: iovec.self, capacity: 8) { vectors -> RequestFraming.Violation? in
            var remaining = evbuffer_get_length(input) - offset
            while remaining > 0 {
                let count = Int(evbuffer_peek(input, remaining, &start, vectors.baseAddress, Int32(vectors.count)))
                var taken = 0
                for vector in vectors.prefix(min(count, vectors.count)) {
                    let length = min(vector.iov_len, remaining - taken)
                    if let violation = framing.feed(UnsafeRawBufferPointer(start: vector.iov_base, count: length)) {
                        return violation
                    }
                    taken += length
                }
                remaining -= taken
                guard remaining > 0, evbuffer_ptr_set(input, &start, taken, EVBUFFER_PTR_ADD) == 0 else { break }
            }
            return nil
        }
    }

    private func edit(_ change: () -> Void) {
        editingInput = true
        change()
        editingInput = false
    }

    /// Keeps the first `count` bytes of `buffer`, drops the rest (evbuffer has no call that
    /// cuts from the end: the kept bytes are moved out, the rest drained, the kept moved back).
    private static func keep(_ count: Int, of buffer: OpaquePointer) -> Bool {
        let total = evbuffer_get_length(buffer)
        guard count < total else { return true }
        guard count > 0 else { return evbuffer_drain(buffer, total) == 0 }
        guard let kept = evbuffer_new() else { return false }
        defer { evbuffer_free(kept) }
        evbuffer_remove_buffer(buffer, kept, count)
        evbuffer_drain(buffer, evbuffer_get_length(buffer))
        return evbuffer_add_buffer(buffer, kept) == 0
    }
}
