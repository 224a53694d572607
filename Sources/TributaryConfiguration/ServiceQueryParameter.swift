/// The query parameters the service itself reads on every resource, besides `fields`
/// (``FieldSelection/parameter``). They are named here, where a resource's own parameters are
/// checked against them (a parameter of one of these names would never reach the resource),
/// and the service reads them under these names (`BearerToken`, `EventUpdates`,
/// `ProgressiveDocuments`).
package enum ServiceQueryParameter {
    /// A bearer token, for clients that cannot send headers (RFC 6750 §2.3).
    @inlinable package static var accessToken: String { "access_token" }
    /// How a stream sends changes.
    @inlinable package static var updates: String { "updates" }
    /// A stream's first document as soon as the list is known.
    @inlinable package static var progressive: String { "progressive" }
}
