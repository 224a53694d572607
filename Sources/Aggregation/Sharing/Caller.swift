/// Who a pipeline runs for: the ``Identity`` that keys everything it shares, and the client's
/// request headers that its upstream forwards (`upstreams.NAME.forward`), which go on every
/// call the pipeline makes, its retries and its live refreshes included.
///
/// The header values are secrets: nothing logs, counts or describes them.
public struct Caller: Sendable {
    public let identity: Identity
    /// Name and value of each forwarded header the request carried, in the configured order.
    public let forwardedHeaders: [(name: String, value: String)]

    /// A client of a public resource: no identity, nothing forwarded.
    public static let anonymous = Caller(identity: .anonymous, forwardedHeaders: [])

    public init(identity: Identity, forwardedHeaders: [(name: String, value: String)]) {
        self.identity = identity
        self.forwardedHeaders = forwardedHeaders
    }
}
