import CryptoExtras
import Foundation
import JWTKit
import TestThreads

/// The claims a test puts in a token (nil: left out).
struct TestClaims: JWTPayload {
    var sub: String?
    var iss: String?
    var aud: String?
    var exp: Double?
    var nbf: Double?
    var scope: String?
    var scp: [String]?

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Keys of every algorithm the service verifies, made for one test, and tokens signed with
/// them by jwt-kit. `yaml` is an `auth:` section that trusts them (by kid: `hs`, `rs`,
/// `es`, `ed`).
final class TestTokens: Sendable {
    static let issuer = "https://issuer.test"
    static let audience = "tributary-tests"
    static let secret = "a secret of at least thirty-two bytes, made for one test"

    let signers = JWTKeyCollection()
    let rsa: JWTKit.Insecure.RSA.PrivateKey
    let es: ES256PrivateKey
    let ed: EdDSA.PrivateKey

    enum Kid: String, CaseIterable {
        case hs, rs, es, ed
        var algorithm: String { ["hs": "HS256", "rs": "RS256", "es": "ES256", "ed": "EdDSA"][rawValue]! }
    }

    init() async throws {
        // Making an RSA key takes a debug build tenths of a second of CPU, more on a busy
        // machine: not on the cooperative pool, which the tests beside this one await on.
        rsa = try await offThePool { try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048)) }
        es = ES256PrivateKey()
        ed = try EdDSA.PrivateKey(curve: .ed25519)
        await signers.add(hmac: HMACKey(from: Self.secret), digestAlgorithm: .sha256, kid: "hs")
        await signers.add(rsa: rsa, digestAlgorithm: .sha256, kid: "rs")
        await signers.add(ecdsa: es, kid: "es")
        await signers.add(eddsa: ed, kid: "ed")
    }

    /// `auth:` trusting the four keys, with `leeway` and, if given, a JWKS URL and more.
    func yaml(leeway: String = "1s", jwks: String? = nil, required: Bool = false) -> String {
        func quoted(_ text: String) -> String {
            let data = try! JSONEncoder().encode(text)
            return String(decoding: data, as: UTF8.self)
        }
        return """
            auth:
              required: \(required)
              jwt:
                issuer: \(Self.issuer)
                audience: \(Self.audience)
                leeway: \(leeway)
            \(jwks.map { "    jwks: \($0)\n    jwksRefresh: 10s" } ?? "")
                keys:
                  - {kid: hs, alg: HS256, secret: \(quoted(Self.secret))}
                  - {kid: rs, alg: RS256, publicKey: \(quoted(rsa.publicKey.pemRepresentation))}
                  - {kid: es, alg: ES256, publicKey: \(quoted(es.publicKey.pemRepresentation))}
                  - {kid: ed, alg: EdDSA, publicKey: \(quoted(ed.publicKey.pemRepresentation))}
            """
    }

    /// A token of `sub` signed with the key `kid`, valid for `ttl` seconds from now, the
    /// tests' issuer and audience unless `claims` changes them.
    func token(
        _ kid: Kid = .es, sub: String? = "alice", ttl: Double = 600, scope: String? = nil, change: (inout TestClaims) -> Void = { _ in }
    ) async throws -> String {
        var claims = TestClaims(
            sub: sub, iss: Self.issuer, aud: Self.audience, exp: Date().timeIntervalSince1970 + ttl, nbf: nil, scope: scope, scp: nil)
        change(&claims)
        return try await signers.sign(claims, kid: JWKIdentifier(string: kid.rawValue))
    }

    static func bearer(_ token: String) -> [(String, String)] { [("Authorization", "Bearer \(token)")] }

    /// `token` with its payload replaced by `payload` (JSON), its header and signature kept:
    /// a forgery.
    static func withPayload(_ token: String, _ payload: String) -> String {
        let parts = token.split(separator: ".")
        return "\(parts[0]).\(base64URL(Array(payload.utf8))).\(parts[2])"
    }

    /// An unsigned token (`alg: none`) of `payload`.
    static func unsigned(_ payload: String, kid: String = "hs") -> String {
        "\(base64URL(Array("{\"alg\":\"none\",\"kid\":\"\(kid)\"}".utf8))).\(base64URL(Array(payload.utf8)))."
    }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
