/// Whose data a document is: everything the service shares (coalesced runs, live pipelines,
/// stale-if-error documents, the detail cache, the fleet's leases and channels) is keyed by it
/// through ``SharingKey``, so a document fetched with one client's credentials can never
/// answer another client.
///
/// A resource whose upstream forwards no client header and that needs no token is public:
/// every client is ``anonymous``. For a per-identity resource, the service derives the
/// identity from the token's `sub` and the forwarded header values (a keyed hash, so the
/// values themselves never appear in a key, a log line or Redis).
public struct Identity: Hashable, Sendable, CustomStringConvertible {
    /// Hex digits of a keyed hash of who the client is; empty for ``anonymous``.
    public let digest: String

    /// Everyone, for a public resource.
    public static let anonymous = Identity(digest: "")

    /// The identity whose keyed hash is `digest` (hex digits).
    public init(digest: String) {
        self.digest = digest
    }

    public var isAnonymous: Bool { digest.isEmpty }

    /// `anonymous`, or the first 8 digits of the digest: enough to follow an identity in a
    /// log, nothing to recover it from.
    public var description: String { isAnonymous ? "anonymous" : String(digest.prefix(8)) + "…" }
}
