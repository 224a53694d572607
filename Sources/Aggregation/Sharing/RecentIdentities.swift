
/// The identities of the callers a resource's reader saw last, so a client's next requests do
/// not each pay ``IdentityHasher``'s HMAC, the most of what forwarding cost an answer (about
/// 62k of the 89k instructions it added to an N=10 `/groups`: `Benchmarks/sharing-cost.sh`).
/// Up to ``limit`` per resource and worker, forgotten all at once when full: a flood of new
/// credentials costs what it cost without the cache, and never more memory than that.
/// Keyed by the subject and header values themselves, which stay in this process's memory
/// only, as the requests' own headers do, and compared by their bytes (``ExactText``): a
/// value canonically equivalent to another caller's (`é` composed or not) is another
/// credential, and must never be handed that caller's identity. Credentials longer than
/// ``longestKey`` bytes are hashed every time rather than kept: 1,024 headers of 16 KiB each
/// held 16 MiB per resource and worker in the part-3 attack run. Loop-confined.
package final class RecentIdentities {
    package static let limit = 1_024
    package static let longestKey = 2_048

    private let hasher: IdentityHasher
    private var identities: [ExactText: Identity] = [:]

    package init(hasher: IdentityHasher) {
        self.hasher = hasher
    }

    /// Identities remembered now.
    package var count: Int { identities.count }

    /// ``IdentityHasher/identity(subject:headers:)``, remembered.
    package func identity(subject: String?, headers: [(name: String, value: String)]) -> Identity {
        // Each part length-prefixed (nil apart from ""), so no two callers make one key.
        var key = subject.map { "\($0.utf8.count):\($0)" } ?? "-"
        for header in headers { key += "|\(header.name.utf8.count):\(header.name)\(header.value.utf8.count):\(header.value)" }
        guard key.utf8.count <= Self.longestKey else { return hasher.identity(subject: subject, headers: headers) }
        let exact = ExactText(key)
        if let known = identities[exact] { return known }
        let identity = hasher.identity(subject: subject, headers: headers)
        if identities.count >= Self.limit { identities.removeAll(keepingCapacity: true) }
        identities[exact] = identity
        return identity
    }
}
