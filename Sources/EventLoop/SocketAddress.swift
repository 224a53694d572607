package import CLibevent
import Glibc

/// Socket addresses, resolved through `evutil_getaddrinfo`: for binding the server (numeric or
/// names), and for connecting an upstream socket to an address already resolved on the loop
/// (`numericOnly`: never a blocking DNS lookup).
package struct SocketAddress {
    private var storage = sockaddr_storage()
    private var length: Int

    /// `AF_INET` or `AF_INET6`, for `socket(2)`.
    package var family: Int32 { Int32(storage.ss_family) }

    package static func resolve(host: String, port: UInt16, numericOnly: Bool = false) throws(LibeventError) -> SocketAddress {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = numericOnly ? EVUTIL_AI_NUMERICHOST | EVUTIL_AI_NUMERICSERV : EVUTIL_AI_PASSIVE | EVUTIL_AI_ADDRCONFIG
        var result: UnsafeMutablePointer<addrinfo>?
        let status = evutil_getaddrinfo(host, String(port), &hints, &result)
        guard status == 0, let first = result else {
            throw LibeventError(call: "evutil_getaddrinfo", detail: "\(host): \(String(cString: evutil_gai_strerror(status)))")
        }
        defer { evutil_freeaddrinfo(result) }
        var address = SocketAddress(length: Int(first.pointee.ai_addrlen))
        withUnsafeMutableBytes(of: &address.storage) { target in
            target.copyMemory(from: UnsafeRawBufferPointer(start: first.pointee.ai_addr, count: address.length))
        }
        return address
    }

    package mutating func withSockaddr<Result, Failure: Error>(
        _ body: (UnsafePointer<sockaddr>, Int) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        let length = self.length
        return try withUnsafePointer(to: &storage) { pointer throws(Failure) in
            try pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { address throws(Failure) in
                try body(address, length)
            }
        }
    }

    /// The local port a bound socket listens on.
    package static func localPort(of fd: Int32) -> UInt16 {
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        withUnsafeMutablePointer(to: &storage) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { _ = getsockname(fd, $0, &length) }
        }
        return withUnsafeBytes(of: &storage) { bytes in
            // sin_port and sin6_port sit at the same offset, in network byte order.
            UInt16(bigEndian: bytes.load(fromByteOffset: 2, as: UInt16.self))
        }
    }
}
