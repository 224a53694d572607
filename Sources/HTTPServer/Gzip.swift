import CZlib

/// A zlib deflate stream that compresses whole answer bodies in the gzip format (RFC 1952),
/// reused from one body to the next. Loop-confined: each ``HTTPServer`` has one
/// (``ServerRequest/gzipped(_:)``).
///
/// Reused because setting a stream up costs more than compressing a small document: zlib
/// allocates about 256 KiB of state for it. The demo's 1.3 KB `/rows` took 76 µs of CPU with a
/// fresh stream, 10 µs with this one (`deflateReset` keeps the state; docs/api.md, "Caching and
/// compression", has the numbers and the command).
///
/// ```swift
/// if body.count >= Gzip.minimumBodySize, QualityList.allowsGzip(request.header("Accept-Encoding")) {
///     request.respond(status: 200, headers: [("Content-Encoding", "gzip")], body: request.gzipped(body))
/// }
/// ```
public final class Gzip {
    /// Bodies smaller than this are sent as they are: the gzip header and trailer (18 bytes)
    /// and the CPU time are not worth it for a few hundred bytes, which fit a packet anyway.
    public static let minimumBodySize = 1024

    /// zlib's level 1 (fastest): on Tributary's JSON it compresses within 10 % of the default
    /// level 6, in about half the time on larger documents, and the CPU is the event loop's,
    /// shared with every other client of the worker.
    public static let level: Int32 = 1

    /// Heap-allocated: zlib's state points back at its stream, which must not move.
    private let stream: UnsafeMutablePointer<z_stream>

    public init(level: Int32 = Gzip.level) {
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        guard tributary_deflate_init_gzip(stream, level) == Z_OK else {
            // Only out of memory or a bad level: nothing an answer could work around.
            fatalError("deflateInit2 failed")
        }
    }

    deinit {
        deflateEnd(stream)
        stream.deinitialize(count: 1)
        stream.deallocate()
    }

    /// `bytes` compressed as one gzip member.
    public func compress(_ bytes: [UInt8]) -> [UInt8] {
        deflateReset(stream)
        // deflateBound is enough for one deflate call with Z_FINISH to finish (zlib.h).
        var output = [UInt8](repeating: 0, count: Int(deflateBound(stream, uLong(bytes.count))))
        let written = bytes.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out -> Int in
                stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.pointee.avail_in = uInt(input.count)
                stream.pointee.next_out = out.baseAddress
                stream.pointee.avail_out = uInt(out.count)
                let status = deflate(stream, Z_FINISH)
                precondition(status == Z_STREAM_END, "deflate into a deflateBound buffer did not finish: \(status)")
                return out.count - Int(stream.pointee.avail_out)
            }
        }
        output.removeSubrange(written...)
        // No pointers into this call's buffers stay behind.
        stream.pointee.next_in = nil
        stream.pointee.next_out = nil
        return output
    }
}
