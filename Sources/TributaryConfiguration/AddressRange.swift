import Glibc

/// A block of IP addresses in CIDR notation (`10.0.0.0/8`, `::1/128`; a bare address is a
/// block of one), as `server.trustedProxies` lists them. IPv4 addresses written as
/// IPv4-mapped IPv6 (`::ffff:10.1.2.3`, as a dual-stack socket reports them) are the same
/// addresses.
///
/// ```swift
/// let proxies = try AddressRange("10.0.0.0/8")
/// proxies.contains("10.1.2.3")      // true
/// ```
public struct AddressRange: Sendable, Equatable, CustomStringConvertible {
    /// The network's bytes (4 or 16), bits past the prefix cleared.
    let network: [UInt8]
    let prefixLength: Int

    /// Parses `ADDRESS[/PREFIX]`; nil when it is neither an IPv4 nor an IPv6 block.
    public init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = Self.bytes(of: String(parts[0])) else { return nil }
        let length: Int
        if parts.count == 2 {
            guard let given = Int(parts[1]), (0...(address.count * 8)).contains(given), parts[1].allSatisfy(\.isASCII) else { return nil }
            length = given
        } else {
            length = address.count * 8
        }
        network = Self.masked(address, to: length)
        prefixLength = length
    }

    /// Whether `host` (an address as the socket or a header gives it) is in the block.
    public func contains(_ host: String) -> Bool {
        guard let address = Self.bytes(of: host) else { return false }
        return contains(address: address)
    }

    /// Byte by byte, the prefix's bits only, allocating nothing: every request from a
    /// trusted proxy is checked against every block, once per hop.
    package func contains(address: [UInt8]) -> Bool {
        guard address.count == network.count else { return false }
        var remaining = prefixLength
        var index = 0
        while remaining > 0 {
            let bits = min(remaining, 8)
            let mask = UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
            guard address[index] & mask == network[index] else { return false }
            remaining -= bits
            index += 1
        }
        return true
    }

    public var description: String {
        let family = network.count == 4 ? AF_INET : AF_INET6
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let shown = network.withUnsafeBytes { raw in inet_ntop(family, raw.baseAddress, &text, socklen_t(text.count)) }
        let address = shown == nil ? "?" : String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return "\(address)/\(prefixLength)"
    }

    /// The 4 or 16 bytes of an address (an IPv4-mapped IPv6 one as its 4; brackets and a
    /// zone `%eth0` allowed around IPv6), nil for anything else.
    package static func bytes(of host: String) -> [UInt8]? {
        var text = host
        if text.hasPrefix("[") && text.hasSuffix("]") { text = String(text.dropFirst().dropLast()) }
        if let zone = text.firstIndex(of: "%") { text = String(text[..<zone]) }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            return withUnsafeBytes(of: v4) { Array($0) }
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: v6) { Array($0) }
        if bytes.prefix(10).allSatisfy({ $0 == 0 }) && bytes[10] == 0xFF && bytes[11] == 0xFF { return Array(bytes.suffix(4)) }
        return bytes
    }

    private static func masked(_ address: [UInt8], to length: Int) -> [UInt8] {
        address.enumerated().map { index, byte in
            let bits = min(max(length - index * 8, 0), 8)
            return bits == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xFF << (8 - bits))
        }
    }
}
