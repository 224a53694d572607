/// What a configuration allows that it likely did not mean to: valid settings, loaded as
/// they are, each said once as a warning when the service starts, so that an operator reads
/// it in the log rather than finding it out from an incident.
extension Configuration {
    /// One caution: the key it is about and what it lets through.
    public struct Caution: Sendable, Equatable {
        public let key: String
        public let message: String
    }

    public var cautions: [Caution] {
        guard let jwt = auth.jwt else { return [] }
        var cautions: [Caution] = []
        if jwt.issuer == nil {
            cautions.append(Caution(
                key: "auth.jwt.issuer", message: "not set: a token of any issuer is accepted if one of the keys signed it"))
        }
        if jwt.audience == nil {
            cautions.append(Caution(
                key: "auth.jwt.audience",
                message: "not set: a token meant for any service is accepted if one of the keys signed it"))
        }
        if let jwks = jwt.jwks, !jwks.origin.isTLS, !Self.isLoopback(jwks.origin.host) {
            cautions.append(Caution(
                key: "auth.jwt.jwks",
                message: "http:// to another host: the keys arrive without TLS, and whoever is on the way can replace them"))
        }
        return cautions
    }

    private static func isLoopback(_ host: String) -> Bool {
        host == "localhost" || host == "::1" || host.hasPrefix("127.")
    }
}
