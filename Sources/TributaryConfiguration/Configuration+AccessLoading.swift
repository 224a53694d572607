import JWTKit
import Yams

/// Reading `auth:`, `resources.<name>.auth`, the rate limits and the trusted proxies from
/// the file, each value checked where it is read so a bad one names its key; a key's PEM is
/// parsed here too, so a key the service could not use fails the start (or the reload).
extension Configuration {
    /// `auth:`.
    static func auth(_ section: YAMLSection, environment: [String: String]) throws(ConfigurationError) -> Auth {
        try section.allowOnlyDeclared()
        var auth: Auth = try Auth.fields.read(section)
        if let jwt = try section.section("jwt") {
            auth.jwt = try jwtSettings(jwt, environment: environment)
        }
        return auth
    }

    private static func jwtSettings(_ section: YAMLSection, environment: [String: String]) throws(ConfigurationError) -> JWTSettings {
        try section.allowOnlyDeclared()
        var settings: JWTSettings = try JWTSettings.fields.read(section)
        if let node = section.mapping["keys"] {
            guard case .sequence(let entries) = node else {
                throw ConfigurationError(section.location("keys"), "expected a list of keys ({kid, alg, secret | publicKey})")
            }
            for (index, entry) in entries.enumerated() {
                guard case .mapping(let mapping) = entry else {
                    throw ConfigurationError(section.location("keys[\(index)]"), "expected a mapping {kid, alg, secret | publicKey}")
                }
                let key = YAMLSection(mapping: mapping, path: "\(section.path).keys[\(index)]", file: section.file, pattern: "auth.jwt.keys[]")
                settings.keys.append(try jwtKey(key, environment: environment))
            }
        }
        guard !settings.keys.isEmpty || settings.jwks != nil else {
            throw ConfigurationError(section.location("keys"), "auth.jwt needs keys, a jwks URL, or both")
        }
        var kids: Set<String> = []
        for key in settings.keys {
            if let kid = key.kid, !kids.insert(kid).inserted {
                throw ConfigurationError(section.location("keys"), "two keys have the kid \(kid)")
            }
        }
        return settings
    }

    /// One of `auth.jwt.keys`: `alg`, `kid`, and `secret` (HS256) or `publicKey` (a PEM).
    private static func jwtKey(_ section: YAMLSection, environment: [String: String]) throws(ConfigurationError) -> JWTKey {
        try section.allowOnlyDeclared()
        let name = try section.requiredString("alg")
        guard let algorithm = TokenAlgorithm(rawValue: name) else {
            let known = TokenAlgorithm.allCases.map(\.rawValue).joined(separator: ", ")
            throw ConfigurationError(section.location("alg"), "expected one of \(known), found \"\(name)\"")
        }
        let kid = try section.string("kid").flatMap { $0.isEmpty ? nil : $0 }
        let secret = try section.string("secret")
        let pem = try section.string("publicKey")
        switch (algorithm, secret, pem) {
        case (.hs256, let secret?, nil):
            let value = try expandVariables(in: secret, from: environment, at: section.location("secret"))
            // RFC 7518 §3.2: a key at least as long as the hash output.
            guard value.utf8.count >= 32 else {
                throw ConfigurationError(section.location("secret"), "an HS256 secret needs at least 32 bytes")
            }
            return JWTKey(kid: kid, algorithm: algorithm, material: .secret(Array(value.utf8)))
        case (.hs256, _, _):
            throw ConfigurationError(section.location("secret"), "an HS256 key is a secret (and no publicKey)")
        case (_, nil, let pem?):
            let text = try expandVariables(in: pem, from: environment, at: section.location("publicKey"))
            do {
                switch algorithm {
                case .rs256: _ = try Insecure.RSA.PublicKey(pem: text)
                case .es256: _ = try ES256PublicKey(pem: text)
                case .edDSA: _ = try EdDSA.PublicKey(pem: text)
                case .hs256: break
                }
            } catch {
                throw ConfigurationError(section.location("publicKey"), "not a PEM public key for \(algorithm.rawValue)")
            }
            return JWTKey(kid: kid, algorithm: algorithm, material: .publicKey(text))
        default:
            throw ConfigurationError(section.location("publicKey"), "an \(algorithm.rawValue) key is a publicKey (a PEM, and no secret)")
        }
    }

    /// `resources.<name>.auth` and `.rateLimit`; nil when it sets neither.
    static func resourceAccess(_ section: YAMLSection) throws(ConfigurationError) -> ResourceAccessSettings? {
        var access = ResourceAccessSettings()
        if let auth = try section.section("auth") {
            try auth.allowOnlyDeclared()
            access.required = try auth.boolean("required")
            access.scopes = try auth.strings("scopes") ?? []
            for scope in access.scopes where scope.isEmpty || scope.contains(where: { $0 == " " || $0 == "\"" || $0 == "\\" }) {
                throw ConfigurationError(auth.location("scopes"), "a scope is a word without spaces, quotes or backslashes, found \"\(scope)\"")
            }
        }
        if let limit = try section.section("rateLimit") {
            access.rateLimit = try rateLimit(limit)
        }
        return access == ResourceAccessSettings() ? nil : access
    }

    /// `rateLimit: {rate: 20/s, burst: 40, by: identity | ip}`: `rate` required, `burst` by
    /// default one second of it.
    static func rateLimit(_ section: YAMLSection) throws(ConfigurationError) -> RateLimit {
        try section.allowOnlyDeclared()
        var limit: RateLimit = try RateLimit.fields.read(section)
        guard limit.perSecond > 0 else { throw ConfigurationError(section.location("rate"), "required") }
        if limit.burst == 0 { limit.burst = max(1, Int(saturating: limit.perSecond, rounding: .up) ?? 1) }
        return limit
    }

    /// An entry of `server.trustedProxies`: an address or a CIDR block (`10.0.0.0/8`, `::1`).
    static func addressRange(_ text: String, at location: String) throws(ConfigurationError) -> AddressRange {
        guard let range = AddressRange(text) else {
            throw ConfigurationError(location, "expected addresses or CIDR blocks such as 10.0.0.0/8, found \"\(text)\"")
        }
        return range
    }

    /// What the whole configuration must hold about access: a resource that requires a token
    /// needs `auth.jwt` to verify it.
    func validateAccess(file: String) throws(ConfigurationError) {
        guard auth.jwt == nil else { return }
        if auth.required {
            throw ConfigurationError("\(file): auth.required", "needs auth.jwt (the issuer and keys tokens are verified with)")
        }
        for name in resources.keys.sorted() where access(of: name).authRequired || !(resourceAccess[name]?.scopes.isEmpty ?? true) {
            throw ConfigurationError("\(file): resources.\(name).auth", "needs auth.jwt (the issuer and keys tokens are verified with)")
        }
    }
}
