import Glibc
import HTTPServer

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
        let forwarded = request.headers.filter { $0.name.lowercased() == "x-forwarded-for" }.map(\.value).joined(separator: ",")
        return client(peer: peer, forwardedFor: forwarded, trusting: proxies)
    }

    /// The client behind `peer` whose request says `X-Forwarded-For: forwardedFor`, as a
    /// canonical name (`peer` itself, canonical, when it is not a trusted proxy).
    static func client(peer: String, forwardedFor: String, trusting proxies: [AddressRange]) -> String {
        guard var client = AddressRange.bytes(of: peer) else { return peer }
        guard isTrusted(client, proxies) else { return name(of: client) }
        for entry in forwardedFor.split(separator: ",").reversed() {
            let text = entry.trimmingCharacters(in: " \t")
            guard !text.isEmpty else { continue }
            guard let address = address(in: text) else { break }
            client = address
            guard isTrusted(address, proxies) else { break }
        }
        return name(of: client)
    }

    /// `host` in canonical form; unchanged when it is not an address (no peer: `unknown`).
    static func canonical(_ host: String) -> String {
        AddressRange.bytes(of: host).map(name(of:)) ?? host
    }

    /// The bytes of an `X-Forwarded-For` entry: an address, perhaps with a port.
    private static func address(in entry: String) -> [UInt8]? {
        if let address = AddressRange.bytes(of: entry) { return address }
        // `[v6]:port` or `v4:port`: the port goes. (A bare IPv6 address parsed above.)
        guard let colon = entry.lastIndex(of: ":") else { return nil }
        let port = entry[entry.index(after: colon)...]
        guard !port.isEmpty, port.count <= 5, port.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        let host = entry[..<colon]
        if host.hasPrefix("[") { return host.hasSuffix("]") ? AddressRange.bytes(of: String(host)) : nil }
        guard !host.contains(":") else { return nil }
        return AddressRange.bytes(of: String(host))
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

extension Substring {
    /// Without the leading and trailing characters among `characters`.
    func trimmingCharacters(in characters: String) -> String {
        String(drop { characters.contains($0) }.reversed().drop { characters.contains($0) }.reversed())
    }
}
