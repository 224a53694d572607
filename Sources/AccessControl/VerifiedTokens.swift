import Aggregation
import Synchronization

/// The tokens the process verified lately, with what each grants, so that a client sending
/// the same token again pays one lookup, not a signature check. For the whole process (one
/// lock): a client's requests land on any worker.
///
/// Bounded: at most ``capacity`` tokens of at most ``longestToken`` bytes each (a longer one
/// is verified every time); an entry is never used past its token's `exp` plus the leeway,
/// and everything is forgotten when the keys change (a key taken out of a JWKS must not
/// keep its tokens in).
package final class VerifiedTokens: Sendable {
    static let capacity = 10_000
    static let longestToken = 2048

    /// By the token's bytes (``ExactText``): Swift's `String` equality would take a token with
    /// `K` swapped for the Kelvin sign for the token verified.
    private let entries = Mutex<[ExactText: Credential]>([:])

    package init() {}

    /// The credential `token` was verified as, while it is still accepted at `now`.
    package func credential(for token: String, now: Double) -> Credential? {
        guard let credential = entries.withLock({ $0[ExactText(token)] }), now <= credential.acceptedUntil else { return nil }
        return credential
    }

    package func keep(_ credential: Credential, for token: String, now: Double) {
        guard token.utf8.count <= Self.longestToken else { return }
        entries.withLock { entries in
            if entries.count >= Self.capacity {
                entries = entries.filter { now <= $0.value.acceptedUntil }
                // Still full of live tokens: start over rather than scan for the oldest.
                if entries.count >= Self.capacity { entries.removeAll(keepingCapacity: true) }
            }
            entries[ExactText(token)] = credential
        }
    }

    package func removeAll() {
        entries.withLock { $0.removeAll() }
    }

    var count: Int { entries.withLock { $0.count } }
}
