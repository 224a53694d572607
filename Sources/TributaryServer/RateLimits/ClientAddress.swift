import HTTPServer

/// The address a request comes from, for limits `by: ip`: the peer's, unless the peer is one
/// of `server.trustedProxies`; then the right-most `X-Forwarded-For` address that is not
/// itself a trusted proxy (each proxy appends the address it saw; what stands left of the
/// last untrusted one was written by the client and proves nothing).
///
/// ```
/// peer 10.0.0.5 (trusted), X-Forwarded-For: 6.6.6.6, 203.0.113.7, 10.0.0.9   →  203.0.113.7
/// ```
enum ClientAddress {
    static func of(_ request: ServerRequest, trusting proxies: [AddressRange]) -> String {
        let peer = request.peer?.host ?? "unknown"
        guard !proxies.isEmpty, isTrusted(peer, proxies) else { return peer }
        let forwarded = request.headers.filter { $0.name.lowercased() == "x-forwarded-for" }.map(\.value).joined(separator: ",")
        return client(peer: peer, forwardedFor: forwarded, trusting: proxies)
    }

    /// The client behind a trusted `peer` whose request says `X-Forwarded-For: forwardedFor`.
    static func client(peer: String, forwardedFor: String, trusting proxies: [AddressRange]) -> String {
        var client = peer
        for entry in forwardedFor.split(separator: ",").reversed() {
            let address = entry.trimmingCharacters(in: " \t")
            guard !address.isEmpty else { continue }
            client = address
            guard isTrusted(address, proxies) else { break }
        }
        return client
    }

    private static func isTrusted(_ host: String, _ proxies: [AddressRange]) -> Bool {
        guard let bytes = AddressRange.bytes(of: host) else { return false }
        return proxies.contains { $0.contains(address: bytes) }
    }
}

extension Substring {
    /// Without the leading and trailing characters among `characters`.
    func trimmingCharacters(in characters: String) -> String {
        String(drop { characters.contains($0) }.reversed().drop { characters.contains($0) }.reversed())
    }
}
