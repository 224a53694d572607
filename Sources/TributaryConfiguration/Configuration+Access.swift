public import UpstreamClient

/// Who may call the resources, and how often: bearer tokens (`auth:`), each resource's own
/// requirement (`resources.<name>.auth`), and rate limits (`server.rateLimit`,
/// `resources.<name>.rateLimit`). docs/configuration.md lists every key; docs/api.md says
/// what a client sees.
extension Configuration {
    /// `auth:` — how bearer tokens are verified, and whether resources need one by default.
    public struct Auth: Sendable, Equatable {
        public var required = false
        /// The issuer, audience and keys tokens are verified against; nil: the service reads
        /// no token (and no resource may require one).
        public var jwt: JWTSettings?

        public init() {}
    }

    /// `auth.jwt:` — what a token must be to be accepted.
    public struct JWTSettings: Sendable, Equatable {
        /// Nil: any.
        public var issuer: String?
        /// Nil: any.
        public var audience: String?
        /// For clocks that drift.
        public var leeway: Duration = .seconds(30)
        public var keys: [JWTKey] = []
        /// A JSON Web Key Set fetched at start and every `jwksRefresh`.
        public var jwks: BaseURL?
        public var jwksRefresh: Duration = .seconds(300)

        public init() {}
    }

    /// The signature algorithms a key may be for.
    public enum TokenAlgorithm: String, Sendable, Equatable, CaseIterable {
        case hs256 = "HS256"
        case rs256 = "RS256"
        case es256 = "ES256"
        case edDSA = "EdDSA"
    }

    /// `auth.jwt.keys[]`: one key. Its secret describes and mirrors itself without it.
    public struct JWTKey: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
        /// `kid`: the key id a token's header names (nil: tokens without a `kid`).
        public let kid: String?
        /// `alg`.
        public let algorithm: TokenAlgorithm
        package let material: Material

        /// `secret` (HS256: its UTF-8 bytes, `${VAR}` expanded) or `publicKey` (a PEM).
        package enum Material: Sendable, Equatable {
            case secret([UInt8])
            case publicKey(String)
        }

        init(kid: String?, algorithm: TokenAlgorithm, material: Material) {
            self.kid = kid
            self.algorithm = algorithm
            self.material = material
        }

        public var description: String { "\(algorithm.rawValue) key \(kid ?? "(no kid)")" }
        public var customMirror: Mirror { Mirror(self, children: ["kid": kid as Any, "alg": algorithm.rawValue, "material": "<secret>"]) }
    }

    /// `rateLimit: {rate: 20/s, burst: 40, by: identity}` — a GCRA limit: `burst` requests at
    /// once, then one every `1/rate`.
    public struct RateLimit: Sendable, Equatable {
        /// `rate`: requests per second (`20/s`, `600/m`, `3600/h`).
        public var perSecond: Double
        /// `burst` (default: one second of `rate`, at least 1).
        public var burst: Int
        /// `by` (default identity).
        public var by: ClientKeyKind

        public init(perSecond: Double, burst: Int, by: ClientKeyKind = .identity) {
            self.perSecond = perSecond
            self.burst = burst
            self.by = by
        }
    }

    /// What a client is counted as: its token's subject (a request without a token: its
    /// address), or its address (``ClientAddress``).
    public enum ClientKeyKind: String, Sendable, Equatable, CaseIterable {
        case identity
        case ip
    }

    /// `resources.<name>.auth` and `.rateLimit` as the file says them (nil: the default).
    public struct ResourceAccessSettings: Sendable, Equatable {
        /// `auth.required`.
        public var required: Bool?
        /// `auth.scopes`: every one must be among the token's (naming any requires a token).
        public var scopes: [String] = []
        /// `rateLimit`.
        public var rateLimit: RateLimit?

        public init() {}
    }

    /// What applies to one resource: whether a token is required and its scopes, and its
    /// rate limit (its own, or `server.rateLimit`), named for the `RateLimit` headers.
    public struct ResourceAccess: Sendable, Equatable {
        public var authRequired: Bool
        public var scopes: [String]
        public var rateLimit: RateLimit?
        /// The policy's name: the resource's for its own limit, `default` for the server's.
        public var policyName: String

        package init(authRequired: Bool, scopes: [String], rateLimit: RateLimit?, policyName: String) {
            self.authRequired = authRequired
            self.scopes = scopes
            self.rateLimit = rateLimit
            self.policyName = policyName
        }
    }

    /// What applies to resource `name` (``ResourceAccess``).
    public func access(of name: String) -> ResourceAccess {
        let own = resourceAccess[name]
        let scopes = own?.scopes ?? []
        // Scopes are checked on a token, so naming one requires it.
        return ResourceAccess(
            authRequired: (own?.required ?? auth.required) || !scopes.isEmpty, scopes: scopes,
            rateLimit: own?.rateLimit ?? server.rateLimit, policyName: own?.rateLimit == nil ? "default" : name)
    }

    /// Open streams one client may hold in the process: `server.maxStreamsPerClient`.
    public var streamsPerClient: Int {
        server.maxStreamsPerClient
    }

    /// Whether any rate limit is configured (the server's or a resource's own).
    public var isRateLimited: Bool {
        server.rateLimit != nil || resourceAccess.values.contains { $0.rateLimit != nil }
    }

    /// How many of `bound` live pipelines (or identities) one client may start:
    /// `server.maxClientSharePercent` of it, at least one.
    public func clientShare(of bound: Int) -> Int {
        Self.clientShare(of: bound, percent: server.maxClientSharePercent)
    }

    package static func clientShare(of bound: Int, percent: Int) -> Int {
        max(1, bound / 100 * percent + bound % 100 * percent / 100)
    }
}
