import CEvhttpRequestFields
import CLibevent
import Glibc
import EventLoop

/// Streamed (chunked) answers, e.g. server-sent events, with a drained signal for back pressure.
///
/// The stream frames its chunks itself (`CEvhttpRequestFields`): a chunk of ``SharedBytes`` is
/// then one reference to bytes framed once for every stream, without the two fresh buffers
/// evhttp's own framing would add around it on every stream.
///
/// ```swift
/// request.startStream(status: 200, headers: [("Content-Type", "text/event-stream")])
/// request.onDrained = { sendNextEventIfAny() }   // the socket took what had to wait
/// if request.write(Array("data: hi\n\n".utf8)) { sendNextEventIfAny() }   // taken at once
/// request.endStream()
/// ```
extension ServerRequest {
    /// Sends the status line and headers of a chunked answer. Ignored unless the request is open.
    ///
    /// A `HEAD` request gets those headers and the answer ends there: it has no body to
    /// stream, so it holds nothing open. An HTTP/1.0 client gets the stream unframed and the
    /// connection closes at its end: that is how HTTP/1.0 delimits a body of unknown length
    /// (its `Connection: keep-alive` would otherwise get a `Content-Length: 0` first).
    public func startStream(status: Int, headers: [(String, String)]) {
        guard state == .open, let raw else { return }
        guard method != .head else { return answer(status: status, headers: headers, body: [], headLength: nil) }
        addHeaders(headers, to: raw)
        if server?.isDraining == true { closeConnectionAfterAnswer(raw) }
        if tributary_evhttp_request_is_http10(raw) != 0 {
            evhttp_remove_header(evhttp_request_get_input_headers(raw), "Connection")
        }
        state = .streaming
        self.status = status
        evhttp_send_reply_start(raw, Int32(status), HTTPStatus.reasonPhrase(status))
        framesChunks = tributary_evhttp_take_over_chunk_framing(raw) != 0
        releaseHead(raw)
        connection.rewatchAfterWrite()
    }

    /// Writes one chunk and says whether the socket took it at once, with nothing written
    /// before it still waiting. When it did, that is all: ``onDrained`` does not run for it.
    /// Otherwise ``onDrained`` runs once the socket has taken all pending output. Ignored (false)
    /// unless streaming: after a disconnect, writes are dropped.
    @discardableResult
    public func write(_ bytes: some Collection<UInt8>) -> Bool {
        guard state == .streaming, let raw, let server, !bytes.isEmpty else { return false }
        let buffer = server.scratchBuffer
        if framesChunks { EventBuffer.append(ChunkFraming.sizeLine(bytes.count), to: buffer) }
        EventBuffer.append(bytes, to: buffer)
        if framesChunks { EventBuffer.append(ChunkFraming.end, to: buffer) }
        return sendChunk(raw, from: buffer)
    }

    /// Moves `buffer` (one chunk, framed if ``framesChunks``) into the connection, with the
    /// drained callback, and writes it at once when nothing waits before it
    /// (``ServerConnection/writeQueuedChunk()``); true when the socket took it all.
    func sendChunk(_ raw: OpaquePointer, from buffer: OpaquePointer) -> Bool {
        let nothingWaiting = connection.pendingOutputBytes == 0
        // The context is unretained: while streaming, the connection holds `self` as its open
        // request, and evhttp replaces this callback when the stream ends.
        evhttp_send_reply_chunk_with_cb(raw, buffer, { _, context in
            let request = Unmanaged<ServerRequest>.fromOpaque(context!).takeUnretainedValue()
            request.onDrained?()
            request.follower?.streamDrained()
        }, Unmanaged.passUnretained(self).toOpaque())
        connection.rewatchAfterWrite()
        // An answer without a body (HEAD, 204, 304) takes nothing: the buffer is the server's
        // scratch buffer, and what stayed in it would open the next stream's chunk.
        let untaken = evbuffer_get_length(buffer)
        if untaken > 0 { evbuffer_drain(buffer, untaken) }
        return nothingWaiting && connection.writeQueuedChunk()
    }

    /// Caps the kernel's send buffer for this connection (SO_SNDBUF; the kernel doubles it),
    /// so a client that stops reading holds at most that much memory: with the drained
    /// signal, what waits for it is bounded by this buffer plus one chunk.
    public func limitSocketSendBuffer(to bytes: Int) {
        guard raw != nil else { return }
        var size = Int32(clamping: bytes)
        setsockopt(bufferevent_getfd(connection.bufferEvent), SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Caps the kernel's receive buffer for this connection (SO_RCVBUF; the kernel doubles it):
    /// a client has nothing to send on a stream, and one that floods it anyway fills this much
    /// of the kernel's memory (beside the server's read-ahead), not megabytes of TCP window.
    public func limitSocketReceiveBuffer(to bytes: Int) {
        guard raw != nil else { return }
        var size = Int32(clamping: bytes)
        setsockopt(bufferevent_getfd(connection.bufferEvent), SOL_SOCKET, SO_RCVBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Bytes written but not yet taken by the socket.
    public var pendingOutputBytes: Int {
        raw == nil ? 0 : connection.pendingOutputBytes
    }

    /// Ends the stream (the last chunk) and hands the connection back to libevent (which
    /// closes it when the server is draining).
    public func endStream() {
        guard state == .streaming, let raw else { return }
        stopWatchingConnection()
        state = .finished
        self.raw = nil
        if framesChunks { tributary_evhttp_return_chunk_framing(raw) }
        // evhttp reads the answer's headers again once the last chunk is written: an added
        // `Connection: close` then frees the connection instead of waiting for a next request.
        if server?.isDraining == true { closeConnectionAfterAnswer(raw) }
        evhttp_send_reply_end(raw)
        connection.keepReadingOffAfterEOF()
        releaseCallbacks()
        server?.completed(self)
    }
}

/// The framing of one chunk in HTTP/1.1's chunked transfer coding (RFC 9112 §7.1).
enum ChunkFraming {
    /// The size line before `count` bytes of data: the size in hex, then CRLF.
    static func sizeLine(_ count: Int) -> [UInt8] { Array(String(count, radix: 16).utf8) + end }
    /// What follows the data.
    static let end: [UInt8] = Array("\r\n".utf8)
}
