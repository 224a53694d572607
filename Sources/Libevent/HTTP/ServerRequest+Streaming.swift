import CLibevent
import Glibc

/// Streamed (chunked) answers, e.g. server-sent events, with a drained signal for back pressure.
///
/// ```swift
/// request.startStream(status: 200, headers: [("Content-Type", "text/event-stream")])
/// request.onDrained = { sendNextEventIfAny() }   // the socket took everything written
/// request.write(Array("data: hi\n\n".utf8))
/// request.endStream()
/// ```
extension ServerRequest {
    /// Sends the status line and headers of a chunked answer. Ignored unless the request is open.
    public func startStream(status: Int, headers: [(String, String)]) {
        guard state == .open, let raw else { return }
        addHeaders(headers, to: raw)
        state = .streaming
        self.status = status
        evhttp_send_reply_start(raw, Int32(status), HTTPStatus.reasonPhrase(status))
    }

    /// Writes one chunk; ``onDrained`` runs once the socket has taken all pending output.
    /// Ignored unless streaming (after a disconnect, writes are dropped).
    public func write(_ bytes: some Collection<UInt8>) {
        guard state == .streaming, let raw, let server, !bytes.isEmpty else { return }
        let buffer = server.scratchBuffer
        EventBuffer.append(bytes, to: buffer)
        sendChunk(raw, from: buffer)
    }

    /// Moves `buffer` into the connection as one chunk, with the drained callback.
    func sendChunk(_ raw: OpaquePointer, from buffer: OpaquePointer) {
        // The context is unretained: while streaming, the connection holds `self` as its open
        // request, and evhttp replaces this callback when the stream ends.
        evhttp_send_reply_chunk_with_cb(raw, buffer, { _, context in
            Unmanaged<ServerRequest>.fromOpaque(context!).takeUnretainedValue().onDrained?()
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// Caps the kernel's send buffer for this connection (SO_SNDBUF; the kernel doubles it),
    /// so a client that stops reading holds at most that much memory: with the drained
    /// signal, what waits for it is bounded by this buffer plus one chunk.
    public func limitSocketSendBuffer(to bytes: Int) {
        guard raw != nil else { return }
        var size = Int32(clamping: bytes)
        setsockopt(bufferevent_getfd(connection.bufferEvent), SOL_SOCKET, SO_SNDBUF, &size, socklen_t(MemoryLayout<Int32>.size))
    }

    /// Bytes written but not yet taken by the socket.
    public var pendingOutputBytes: Int {
        guard raw != nil else { return 0 }
        return evbuffer_get_length(bufferevent_get_output(connection.bufferEvent))
    }

    /// Ends the stream (the last chunk) and hands the connection back to libevent.
    public func endStream() {
        guard state == .streaming, let raw else { return }
        stopWatchingConnection()
        state = .finished
        self.raw = nil
        evhttp_send_reply_end(raw)
        releaseCallbacks()
        server?.completed(self)
    }
}
