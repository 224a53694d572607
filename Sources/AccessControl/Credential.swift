package import Aggregation

/// A verified bearer token, as the service keeps it: whose it is, what it allows and until
/// when. Made once per token by ``TokenVerifier`` and kept in ``VerifiedTokens``; the token
/// itself is never kept in it, logged or sent anywhere.
package struct Credential: Sendable {
    /// The token's `sub`.
    package let subject: String
    /// The keyed hash of the subject alone (``IdentityHasher``): the identity of an
    /// auth-only resource's caller, the owner of the streams the token opens, the key of its
    /// rate limit. In a fleet every replica derives the same one.
    package let subjectIdentity: Identity
    let scopes: Set<String>
    /// When it stops being accepted: `exp` plus the leeway, in seconds since 1970.
    package let acceptedUntil: Double

    /// Whether it grants every one of `required`.
    func grants(_ required: [String]) -> Bool {
        required.allSatisfy { scopes.contains($0) }
    }
}
