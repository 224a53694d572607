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

    /// Adds a reference to these bytes, framed as a chunk or not, at the end of `buffer`; the
    /// retain it holds is released by libevent's cleanup callback once the bytes are no longer
    /// needed.
    func append(to buffer: OpaquePointer, framedAsChunk: Bool) {
        let bytes = framedAsChunk ? UnsafeRawBufferPointer(storage) : UnsafeRawBufferPointer(rebasing: storage[start..<start + count])
        let retained = Unmanaged.passRetained(self).toOpaque()
        let added = evbuffer_add_reference(buffer, bytes.baseAddress, bytes.count, { _, _, context in
            Unmanaged<SharedBytes>.fromOpaque(context!).release()
        }, retained)
        if added != 0 { Unmanaged<SharedBytes>.fromOpaque(retained).release() }
    }
}

extension ServerRequest {
    /// Writes one chunk of shared bytes (see ``SharedBytes``); like ``write(_:)`` otherwise.
    @discardableResult
    public func write(_ bytes: SharedBytes) -> Bool {
        guard state == .streaming, let raw, let server, bytes.count > 0 else { return false }
        let buffer = server.scratchBuffer
        bytes.append(to: buffer, framedAsChunk: framesChunks)
        return sendChunk(raw, from: buffer)
    }

    /// Writes two chunks of shared bytes in one write: an event whose head (its `id:`, say)
    /// is shared by the streams whose clients have the same versions, and whose body by every
    /// stream that sends that document. The connection holds two references, no copy.
    @discardableResult
    public func write(_ head: SharedBytes, then body: SharedBytes) -> Bool {
        guard state == .streaming, let raw, let server, head.count + body.count > 0 else { return false }
        let buffer = server.scratchBuffer
        if head.count > 0 { head.append(to: buffer, framedAsChunk: framesChunks) }
        if body.count > 0 { body.append(to: buffer, framedAsChunk: framesChunks) }
        return sendChunk(raw, from: buffer)
    }
}
