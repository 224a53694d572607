import Crypto
import HTTPCore

/// Turns who a client is (the token's `sub`, the values of the headers its resource forwards)
/// into an ``Identity``: an HMAC-SHA256 under a key of the process's, so equal credentials give
/// equal identities and nothing else can be learnt from one. In a fleet the key is derived
/// from `cluster.secret`, so every replica gives a client the same identity (leases and
/// channels are keyed by it); alone, it is random per process.
///
/// ```swift
/// let hasher = IdentityHasher(secret: Array("fleet secret".utf8))
/// hasher.identity(subject: "alice", headers: [("Authorization", "Bearer t")])   // 32 hex digits
/// ```
package struct IdentityHasher: Sendable {
    private let key: SymmetricKey

    /// A hasher keyed by `secret` (the fleet's), or by random bytes when there is none.
    package init(secret: [UInt8]? = nil) {
        if let secret {
            // A key of its own, not the secret itself: fleet messages are signed with that.
            let derived = HMAC<SHA256>.authenticationCode(for: Array("tributary identity".utf8), using: SymmetricKey(data: secret))
            key = SymmetricKey(data: Array(derived))
        } else {
            key = SymmetricKey(size: .bits256)
        }
    }

    /// The identity of a client with token subject `subject` (nil: no token) whose request
    /// carried `headers` among those forwarded; ``Identity/anonymous`` when it has neither.
    package func identity(subject: String?, headers: [(name: String, value: String)]) -> Identity {
        guard subject != nil || !headers.isEmpty else { return .anonymous }
        var authenticator = HMAC<SHA256>(key: key)
        // Each part length-prefixed: no two different inputs write the same bytes.
        func add(_ text: String) {
            authenticator.update(data: Array("\(text.utf8.count):".utf8))
            authenticator.update(data: Array(text.utf8))
        }
        add(subject.map { "sub=" + $0 } ?? "")
        for header in headers {
            add(header.name.lowercased())
            add(header.value)
        }
        // 128 bits are plenty to tell identities apart, and keep keys short.
        return Identity(digest: LowercaseHex.string(bytes: Array(authenticator.finalize()).prefix(16)))
    }
}
