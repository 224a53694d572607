import Glibc
import HTTPCore
import HTTPServer
import TributaryConfiguration

/// The address a request comes from, for limits `by: ip` and for the quotas of clients
/// without a token: the peer's, unless the peer is one of `server.trustedProxies`; then the
/// right-most `X-Forwarded-For` address that is not itself a trusted proxy (each proxy
/// appends the address it saw; what stands left of the last untrusted one was written by the
/// client and proves nothing).
///
/// ```
/// peer 10.0.0.5 (trusted), X-Forwarded-For: 6.6.6.6, 203.0.113.7, 10.0.0.9   →  203.0.113.7
/// peer 10.0.0.5 (trusted), X-Forwarded-For: 203.0.113.7, bogus, 10.0.0.9     →  10.0.0.9
/// peer 2001:db8:1:2:a:b:c:d                                                  →  2001:db8:1:2::/64
/// ```
///
/// Every name is an address in one canonical form, so that a client cannot be counted twice
/// by writing itself two ways, and cannot be counted as something else at all:
/// - an entry must parse as an IPv4 or IPv6 address (a port after it, `1.2.3.4:80` or
///   `[2001:db8::1]:80`, is dropped). One that does not stops the walk, and the last trusted
///   hop counts (the peer, or the trusted proxy right of the entry): a trusted proxy wrote an
///   entry it could not vouch for, so nothing left of it can be vouched for either, and
///   counting the proxy lumps whoever hides that way into one client, never into many;
/// - IPv4 is dotted decimal, IPv4-mapped IPv6 (`::ffff:203.0.113.7`, as dual-stack sockets
///   report it) is the IPv4 address;
/// - IPv6 is counted per /64 (`2001:db8:1:2::/64`): one subscriber, one LAN, gets a whole
///   /64 and picks any of its 2^64 addresses at will, so counting each address would give
///   one client as many fresh buckets and quotas as it likes.
enum ClientAddress {
    /// The prefix IPv6 clients are counted by.
    static let ipv6PrefixLength = 64

    static func of(_ request: ServerRequest, trusting proxies: [AddressRange]) -> String {
        let peer = request.peer?.host ?? "unknown"
        guard !proxies.isEmpty, let bytes = AddressRange.bytes(of: peer), isTrusted(bytes, proxies) else { return canonical(peer) }
        let forwarded = request.headers.filter { $0.name.utf8.count == 15 && $0.name.lowercased() == "x-forwarded-for" }
            .map(\.value).joined(separator: ",")
        return client(peer: peer, forwardedFor: forwarded, trusting: proxies)
    }

    /// The client behind `peer` whose request says `X-Forwarded-For: forwardedFor`, as a
    /// canonical name (`peer` itself, canonical, when it is not a trusted proxy).
    ///
    /// The entries are walked from the right over the header's bytes: a trusted proxy may
    /// pass on whatever its client wrote, so this runs for every request of every flood, and
    /// a walk by `Character` cost a third of the service's time under 20,000 such requests
    /// a second (the part-3 attack's xff).
    static func client(peer: String, forwardedFor: String, trusting proxies: [AddressRange]) -> String {
        guard var client = AddressRange.bytes(of: peer) else { return peer }
        guard isTrusted(client, proxies) else { return name(of: client) }
        var header = forwardedFor
        header.withUTF8 { bytes in
            var end = bytes.count
            while end > 0 {
                var start = end
                while start > 0, bytes[start - 1] != UInt8(ascii: ",") { start -= 1 }
                var (first, last) = (start, end)
                while first < last, HTTPSyntax.isWhitespace(bytes[first]) { first += 1 }
                while last > first, HTTPSyntax.isWhitespace(bytes[last - 1]) { last -= 1 }
                end = start - 1
                guard first < last else { continue }
                guard let address = address(in: UnsafeBufferPointer(rebasing: bytes[first..<last])) else { break }
                client = address
                guard isTrusted(address, proxies) else { break }
            }
        }
        return name(of: client)
    }

    /// `host` in canonical form; unchanged when it is not an address (no peer: `unknown`).
    static func canonical(_ host: String) -> String {
        AddressRange.bytes(of: host).map(name(of:)) ?? host
    }

    /// The bytes of an `X-Forwarded-For` entry: an address, perhaps with a port. Longer than
    /// any address with a port (`[IPv6%zone]:65535`) is none, unread.
    private static func address(in entry: UnsafeBufferPointer<UInt8>) -> [UInt8]? {
        guard entry.count <= 64 else { return nil }
        let text = String(decoding: entry, as: UTF8.self)
        if let address = AddressRange.bytes(of: text) { return address }
        // `[v6]:port` or `v4:port`: the port goes. (A bare IPv6 address parsed above.)
        guard let colon = entry.lastIndex(of: UInt8(ascii: ":")) else { return nil }
        let port = entry[(colon + 1)...]
        guard !port.isEmpty, port.count <= 5, port.allSatisfy({ $0 &- UInt8(ascii: "0") < 10 }) else { return nil }
        let host = entry[..<colon]
        if host.first == UInt8(ascii: "[") {
            return host.last == UInt8(ascii: "]") ? AddressRange.bytes(of: String(decoding: host, as: UTF8.self)) : nil
        }
        guard !host.contains(UInt8(ascii: ":")) else { return nil }
        return AddressRange.bytes(of: String(decoding: host, as: UTF8.self))
    }

    /// `203.0.113.7`, or `2001:db8:1:2::/64`.
    static func name(of address: [UInt8]) -> String {
        if address.count == 4 { return text(of: address, family: AF_INET) }
        var network = address
        for index in (ipv6PrefixLength / 8)..<network.count { network[index] = 0 }
        return text(of: network, family: AF_INET6) + "/\(ipv6PrefixLength)"
    }

    private static func text(of address: [UInt8], family: Int32) -> String {
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        let shown = address.withUnsafeBytes { raw in inet_ntop(family, raw.baseAddress, &text, socklen_t(text.count)) }
        guard shown != nil else { return "?" }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func isTrusted(_ address: [UInt8], _ proxies: [AddressRange]) -> Bool {
        proxies.contains { $0.contains(address: address) }
    }
}
