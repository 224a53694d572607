import CLibevent

/// Immutable bytes written to many connections without a copy per connection: each write
/// hands libevent a reference (`evbuffer_add_reference`) that retains this object until the
/// socket took the bytes. One event sent to 10,000 event streams is then one buffer, not
/// 10,000. The bytes are stored framed as one HTTP/1.1 chunk, so a stream that frames its own
/// chunks adds nothing of its own per write. Loop-confined (libevent releases the references
/// on the loop).
///
/// ```swift
/// let frame = SharedBytes(EventStreamFormat.event("snapshot", id: version, data: json))
/// for stream in streams { stream.request.write(frame) }
/// ```
public final class SharedBytes {
    /// The chunk: size line, the bytes, CRLF.
    let storage: UnsafeMutableRawBufferPointer
    /// Where the bytes start in ``storage``.
    let start: Int

    public init(_ bytes: [UInt8]) {
        let sizeLine = ChunkFraming.sizeLine(bytes.count)
        let framed = sizeLine + bytes + ChunkFraming.end
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: framed.count, alignment: 1)
        framed.withUnsafeBytes { storage.copyMemory(from: $0) }
        self.storage = storage
        start = sizeLine.count
        count = bytes.count
    }

    deinit {
        storage.deallocate()
    }

    /// How many bytes (without the chunk's framing).
    public let count: Int

    /// The bytes as they go on the wire: framed as a chunk, or not.
    func wire(framedAsChunk: Bool) -> UnsafeRawBufferPointer {
        framedAsChunk ? UnsafeRawBufferPointer(storage) : UnsafeRawBufferPointer(rebasing: storage[start..<start + count])
    }

    /// Adds a reference to these bytes, framed as a chunk or not, from `offset` of them on, at
    /// the end of `buffer`; the retain it holds is released by libevent's cleanup callback
    /// once the bytes are no longer needed.
    func append(to buffer: OpaquePointer, framedAsChunk: Bool, from offset: Int = 0) {
        let bytes = wire(framedAsChunk: framedAsChunk)
        guard offset < bytes.count else { return }
        let retained = Unmanaged.passRetained(self).toOpaque()
        let added = evbuffer_add_reference(buffer, bytes.baseAddress! + offset, bytes.count - offset, { _, _, context in
            Unmanaged<SharedBytes>.fromOpaque(context!).release()
        }, retained)
        if added != 0 { Unmanaged<SharedBytes>.fromOpaque(retained).release() }
    }
}

extension ServerRequest {
    /// Writes one chunk of shared bytes (see ``SharedBytes``); like ``write(_:)`` otherwise.
    ///
    /// When nothing waits in the connection's output, the bytes go straight to the socket
    /// (``ServerConnection/sendNow(_:_:)``): one system call, and nothing allocated, retained
    /// or released for this stream. What the socket does not take goes the usual way, as a
    /// reference to the rest of the bytes.
    @discardableResult
    public func write(_ bytes: SharedBytes) -> Bool {
        guard state == .streaming, let raw, let server, bytes.count > 0 else { return false }
        let wire = bytes.wire(framedAsChunk: framesChunks)
        let taken = connection.sendNow(wire, UnsafeRawBufferPointer(start: nil, count: 0))
        if taken == wire.count { return true }
        let buffer = server.scratchBuffer
        bytes.append(to: buffer, framedAsChunk: framesChunks, from: taken)
        return sendChunk(raw, from: buffer)
    }

    /// Writes two chunks of shared bytes in one write: an event whose head (its `id:`, say)
    /// is shared by the streams whose clients have the same versions, and whose body by every
    /// stream that sends that document. Straight to the socket as one, as ``write(_:)-(SharedBytes)``;
    /// otherwise the connection holds references to what is left of the two, no copy.
    @discardableResult
    public func write(_ head: SharedBytes, then body: SharedBytes) -> Bool {
        guard state == .streaming, let raw, let server, head.count + body.count > 0 else { return false }
        let headWire = head.count > 0 ? head.wire(framedAsChunk: framesChunks) : UnsafeRawBufferPointer(start: nil, count: 0)
        let bodyWire = body.count > 0 ? body.wire(framedAsChunk: framesChunks) : UnsafeRawBufferPointer(start: nil, count: 0)
        let taken = connection.sendNow(headWire, bodyWire)
        if taken == headWire.count + bodyWire.count { return true }
        let buffer = server.scratchBuffer
        if head.count > 0 { head.append(to: buffer, framedAsChunk: framesChunks, from: taken) }
        if body.count > 0 { body.append(to: buffer, framedAsChunk: framesChunks, from: max(0, taken - headWire.count)) }
        return sendChunk(raw, from: buffer)
    }
}
