import CLibevent

/// Immutable bytes written to many connections without a copy per connection: each write
/// hands libevent a reference (`evbuffer_add_reference`) that retains this object until the
/// socket took the bytes. One event sent to 10,000 event streams is then one buffer, not
/// 10,000. Loop-confined (libevent releases the references on the loop).
///
/// ```swift
/// let frame = SharedBytes(EventStreamFormat.event("snapshot", id: version, data: json))
/// for stream in streams { stream.request.write(frame) }
/// ```
public final class SharedBytes {
    let storage: UnsafeMutableRawBufferPointer

    public init(_ bytes: [UInt8]) {
        let storage = UnsafeMutableRawBufferPointer.allocate(byteCount: max(bytes.count, 1), alignment: 1)
        bytes.withUnsafeBytes { storage.copyMemory(from: $0) }
        self.storage = storage
        count = bytes.count
    }

    deinit {
        storage.deallocate()
    }

    public let count: Int

    /// Adds a reference to these bytes at the end of `buffer`; the retain it holds is
    /// released by libevent's cleanup callback once the bytes are no longer needed.
    func append(to buffer: OpaquePointer) {
        let retained = Unmanaged.passRetained(self).toOpaque()
        let added = evbuffer_add_reference(buffer, storage.baseAddress, count, { _, _, context in
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
        bytes.append(to: buffer)
        sendChunk(raw, from: buffer)
    }
}
