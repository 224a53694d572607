import Aggregation

/// The identities of the callers a resource's reader saw last, so a client's next requests do
/// not each pay ``IdentityHasher``'s HMAC, the most of what forwarding cost an answer (about
/// 62k of the 89k instructions it added to an N=10 `/groups`: `Benchmarks/sharing-cost.sh`).
/// Up to ``limit`` per resource and worker, forgotten all at once when full: a flood of new
/// credentials costs what it cost without the cache, and never more memory than that.
/// Keyed by the subject and header values themselves, which stay in this process's memory
/// only, as the requests' own headers do. Loop-confined.
final class RecentIdentities {
    static let limit = 1_024

    private let hasher: IdentityHasher
    private var identities: [String: Identity] = [:]

    init(hasher: IdentityHasher) {
        self.hasher = hasher
    }

    /// Identities remembered now.
    var count: Int { identities.count }

    /// ``IdentityHasher/identity(subject:headers:)``, remembered.
    func identity(subject: String?, headers: [(name: String, value: String)]) -> Identity {
        // Each part length-prefixed (nil apart from ""), so no two callers make one key.
        var key = subject.map { "\($0.utf8.count):\($0)" } ?? "-"
        for header in headers { key += "|\(header.name.utf8.count):\(header.name)\(header.value.utf8.count):\(header.value)" }
        if let known = identities[key] { return known }
        let identity = hasher.identity(subject: subject, headers: headers)
        if identities.count >= Self.limit { identities.removeAll(keepingCapacity: true) }
        identities[key] = identity
        return identity
    }
}
