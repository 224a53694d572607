import CZlib

/// Compression of whole answer bodies in the gzip format (RFC 1952), with zlib.
///
/// ```swift
/// if body.count >= Gzip.minimumBodySize, AcceptEncoding.allowsGzip(request.header("Accept-Encoding")) {
///     request.respond(status: 200, headers: [("Content-Encoding", "gzip")], body: Gzip.compress(body))
/// }
/// ```
public enum Gzip {
    /// Bodies smaller than this are sent as they are: the gzip header and trailer (18 bytes)
    /// and the CPU time are not worth it for a few hundred bytes, which fit a packet anyway.
    public static let minimumBodySize = 1024

    /// zlib's level 1 (fastest): on Tributary's JSON it compresses nearly as well as the
    /// default level 6 in a fraction of the time (see README, "Caching and compression"),
    /// and the CPU is the event loop's, shared with every other client of the worker.
    public static let level: Int32 = 1

    /// `bytes` compressed as one gzip member.
    public static func compress(_ bytes: [UInt8], level: Int32 = Gzip.level) -> [UInt8] {
        var stream = z_stream()
        guard tributary_deflate_init_gzip(&stream, level) == Z_OK else {
            // Only out of memory or a bad level: nothing an answer can work around.
            fatalError("deflateInit2 failed")
        }
        defer { deflateEnd(&stream) }
        // deflateBound is enough for one deflate call with Z_FINISH to finish (zlib.h).
        var output = [UInt8](repeating: 0, count: Int(deflateBound(&stream, uLong(bytes.count))))
        let written = bytes.withUnsafeBufferPointer { input in
            output.withUnsafeMutableBufferPointer { out -> Int in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
                stream.avail_in = uInt(input.count)
                stream.next_out = out.baseAddress
                stream.avail_out = uInt(out.count)
                let status = deflate(&stream, Z_FINISH)
                precondition(status == Z_STREAM_END, "deflate with a deflateBound buffer did not finish: \(status)")
                return out.count - Int(stream.avail_out)
            }
        }
        output.removeSubrange(written...)
        return output
    }
}
