package import Aggregation
import EventLoop
import Glibc
import JWTKit
package import TributaryConfiguration

/// Verifies bearer tokens (JWS compact, RFC 7515/7519) for the whole process, with jwt-kit:
/// its parser reads the header and claims, its verifier for the key checks the signature
/// (HS256, RS256, ES256, EdDSA; `none` and every other algorithm are refused); then the
/// claims: `exp` (required) and `nbf` within `leeway`, `iss` and `aud` as configured, a
/// `sub`. A verified token is kept (``VerifiedTokens``), so the next request with it costs a
/// lookup.
///
/// ```swift
/// verifier.verify(token, on: loop) { outcome in
///     switch outcome {
///     case .success(let credential): …           // credential.subject, .scopes
///     case .failure(let failure): failure.answer(request)
///     }
/// }
/// ```
///
/// The answer comes at once unless the token needs keys not in yet: the first keys at
/// start, or a `kid` the JWKS does not have (fetched again at most once every 10 s); it then
/// comes on `loop` once they are.
package final class TokenVerifier: Sendable {
    let settings: Configuration.JWTSettings
    let keys: TokenKeys
    private let tokens: VerifiedTokens
    private let hasher: IdentityHasher
    /// Asks for the JWKS again because a token names `kid`; the closure runs once the fetch
    /// ended, or at once when none may be made now. Nil without a JWKS.
    let refetch: (@Sendable (_ kid: String, _ done: @escaping @Sendable () -> Void) -> Void)?

    package init(
        settings: Configuration.JWTSettings, keys: TokenKeys, tokens: VerifiedTokens, hasher: IdentityHasher,
        refetch: (@Sendable (_ kid: String, _ done: @escaping @Sendable () -> Void) -> Void)?
    ) {
        self.settings = settings
        self.keys = keys
        self.tokens = tokens
        self.hasher = hasher
        self.refetch = refetch
    }

    /// The algorithms a token may be signed with.
    static let algorithms: Set<String> = Set(Configuration.TokenAlgorithm.allCases.map(\.rawValue))

    /// Verifies `token`; `done` gets the credential or why it is refused, at once or later on
    /// `loop`.
    func verify(_ token: String, on loop: EventLoop, mayRefetch: Bool = true, _ done: @escaping (Result<Credential, AuthFailure>) -> Void) {
        let now = Self.now()
        if let credential = tokens.credential(for: token, now: now) { return done(.success(credential)) }
        let bound = LoopBound(done, loop: loop)
        let again = { @Sendable [self] in loop.execute { self.verify(token, on: loop, mayRefetch: mayRefetch, bound.value) } }
        if keys.whenLoaded(again) { return }
        switch check(token, now: now) {
        case .verified(let credential):
            tokens.keep(credential, for: token, now: now)
            done(.success(credential))
        case .refused(let failure):
            done(.failure(failure))
        case .unknownKey(let kid):
            guard mayRefetch, let refetch else { return done(.failure(.invalid(reason: "no key has its kid"))) }
            refetch(kid) { loop.execute { self.verify(token, on: loop, mayRefetch: false, bound.value) } }
        }
    }

    /// What checking a token found.
    package enum Check {
        case verified(Credential)
        case refused(AuthFailure)
        /// The token names a `kid` no key has (it may be in a newer JWKS).
        case unknownKey(String)
    }

    /// Checks `token` synchronously with the keys known now, at wall-clock time `now`.
    package func check(_ token: String, now: Double) -> Check {
        let bytes = Array(token.utf8)
        if let problem = TokenShape.problem(bytes) { return .refused(.invalid(reason: problem)) }
        let parsed: (header: JWTHeader, payload: TokenClaims, signature: [UInt8])
        do {
            let (header, payload, signature) = try DefaultJWTParser().parse(bytes, as: TokenClaims.self)
            parsed = (header, payload, Array(signature))
        } catch {
            return .refused(.invalid(reason: "it is not a signed JWT"))
        }
        guard let algorithm = parsed.header.alg, Self.algorithms.contains(algorithm) else {
            return .refused(.invalid(reason: "its alg is not one of HS256, RS256, ES256, EdDSA"))
        }
        guard parsed.header.crit == nil else { return .refused(.invalid(reason: "it names critical extensions")) }
        let kid = parsed.header.kid
        let candidates = keys.candidates(kid: kid).filter { $0.verifier.name == algorithm }
        if candidates.isEmpty {
            if let kid, !keys.knows(kid: kid) { return .unknownKey(kid) }
            return .refused(.invalid(reason: "no key verifies its alg and kid"))
        }
        // What the signature covers: the token up to its second period.
        let signingInput = bytes.prefix(bytes.indices.filter { bytes[$0] == UInt8(ascii: ".") }.dropFirst().first ?? 0)
        let signed = candidates.contains { key in (try? key.verifier.verify(parsed.signature, signs: signingInput)) == true }
        guard signed else { return .refused(.invalid(reason: "its signature does not verify")) }
        return claims(parsed.payload, now: now)
    }

    private func claims(_ claims: TokenClaims, now: Double) -> Check {
        let leeway = Self.seconds(settings.leeway)
        guard let exp = claims.exp else { return .refused(.invalid(reason: "it has no exp")) }
        guard now <= exp + leeway else { return .refused(.invalid(reason: "it expired")) }
        if let nbf = claims.nbf, now + leeway < nbf { return .refused(.invalid(reason: "it is not valid yet (nbf)")) }
        if let issuer = settings.issuer, claims.iss != issuer { return .refused(.invalid(reason: "it is of another issuer")) }
        if let audience = settings.audience, claims.aud?.contains(audience) != true {
            return .refused(.invalid(reason: "it is for another audience"))
        }
        guard let subject = claims.sub, !subject.isEmpty else { return .refused(.invalid(reason: "it has no sub")) }
        return .verified(Credential(
            subject: subject, subjectIdentity: hasher.identity(subject: subject, headers: []), scopes: claims.scopes,
            acceptedUntil: exp + leeway))
    }

    /// Wall-clock seconds since 1970: what `exp` and `nbf` count.
    package static func now() -> Double {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Double(time.tv_sec) + Double(time.tv_nsec) / 1e9
    }

    static func seconds(_ duration: Duration) -> Double {
        let (seconds, attoseconds) = duration.components
        return Double(seconds) + Double(attoseconds) / 1e18
    }
}
