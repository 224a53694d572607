import Glibc

/// Whether a peer's numeric address (as ``ServerRequest/peer`` gives it) is this host's own
/// loopback: `127.0.0.0/8`, `::1`, or `127.0.0.0/8` mapped into IPv6 (`::ffff:127.0.0.1`, how
/// a dual-stack socket sees an IPv4 peer). Anything else is not, a name or a scoped address
/// included (a peer's address is always numeric, so nothing that must pass is refused).
///
/// What endpoints that answer only this host's own clients check (a configuration reload
/// without an admin token), without trusting anything the client sent: the address is the
/// socket's. Behind a reverse proxy on the same host, every request comes from loopback.
///
/// ```swift
/// LoopbackAddress.contains("127.0.0.1")   // true
/// LoopbackAddress.contains("10.0.0.7")    // false
/// ```
public enum LoopbackAddress {
    public static func contains(_ address: String) -> Bool {
        var ipv4 = in_addr()
        if inet_pton(AF_INET, address, &ipv4) == 1 {
            return UInt32(bigEndian: ipv4.s_addr) >> 24 == 127
        }
        var ipv6 = in6_addr()
        guard inet_pton(AF_INET6, address, &ipv6) == 1 else { return false }
        return withUnsafeBytes(of: &ipv6) { bytes in
            let zeros = { (range: Range<Int>) in bytes[range].allSatisfy { $0 == 0 } }
            // ::1
            if zeros(0..<15) && bytes[15] == 1 { return true }
            // ::ffff:127.x.y.z
            return zeros(0..<10) && bytes[10] == 0xFF && bytes[11] == 0xFF && bytes[12] == 127
        }
    }
}
