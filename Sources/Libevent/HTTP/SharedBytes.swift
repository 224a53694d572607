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
    public func write(_ bytes: SharedBytes) {
        guard state == .streaming, let raw, let server, bytes.count > 0 else { return }
        let buffer = server.scratchBuffer
        bytes.append(to: buffer, framedAsChunk: framesChunks)
        sendChunk(raw, from: buffer)
    }

    /// Writes `head`, copied, then `shared`, as two chunks in one write: an event whose first
    /// lines are this stream's own (its `id:`, say) and whose body is the same for many
    /// streams. The connection then holds one small buffer of its own and a reference, never
    /// a copy of the shared body.
    public func write(_ head: [UInt8], then shared: SharedBytes) {
        guard state == .streaming, let raw, let server, !head.isEmpty || shared.count > 0 else { return }
        let buffer = server.scratchBuffer
        if !head.isEmpty {
            if framesChunks { EventBuffer.append(ChunkFraming.sizeLine(head.count), to: buffer) }
            EventBuffer.append(head, to: buffer)
            if framesChunks { EventBuffer.append(ChunkFraming.end, to: buffer) }
        }
        if shared.count > 0 { shared.append(to: buffer, framedAsChunk: framesChunks) }
        sendChunk(raw, from: buffer)
    }
}
