// Cost of one bearer token's verification per algorithm, cold (parsed, signature checked,
// claims read) and cached (found among the verified tokens), with the service's own verifier
// (TokenVerifier, reached through the `package` interface of module AccessControl: the
// benchmark lives here, not in the service's modules) and keys made here (jwt-kit).
//
//   AuthBench [ROUNDS]    (default 2000 verifications per algorithm and kind)
import CryptoExtras
import Foundation
import JWTKit
import AccessControl
import Aggregation
import TributaryConfiguration

struct Claims: JWTPayload {
    var sub: String
    var iss: String
    var aud: String
    var exp: Double
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

let rounds = CommandLine.arguments.count > 1 ? Int(CommandLine.arguments[1]) ?? 2000 : 2000
let secret = String(repeating: "s", count: 48)
let rsa = try JWTKit.Insecure.RSA.PrivateKey(backing: _RSA.Signing.PrivateKey(keySize: .bits2048))
let es = ES256PrivateKey()
let ed = try EdDSA.PrivateKey(curve: .ed25519)
let signers = JWTKeyCollection()
await signers.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256, kid: "hs")
await signers.add(rsa: rsa, digestAlgorithm: .sha256, kid: "rs")
await signers.add(ecdsa: es, kid: "es")
await signers.add(eddsa: ed, kid: "ed")

func quoted(_ text: String) -> String { String(decoding: try! JSONEncoder().encode(text), as: UTF8.self) }
let yaml = """
    auth:
      jwt:
        issuer: bench
        audience: tributary
        keys:
          - {kid: hs, alg: HS256, secret: \(quoted(secret))}
          - {kid: rs, alg: RS256, publicKey: \(quoted(rsa.publicKey.pemRepresentation))}
          - {kid: es, alg: ES256, publicKey: \(quoted(es.publicKey.pemRepresentation))}
          - {kid: ed, alg: EdDSA, publicKey: \(quoted(ed.publicKey.pemRepresentation))}
    """
let configuration = try Configuration.load(yaml: yaml, file: "bench.yaml")
print("algorithm  cold (µs per token)  cached (ns per token)")
for (kid, name) in [("hs", "HS256"), ("rs", "RS256"), ("es", "ES256"), ("ed", "EdDSA")] {
    // 100 distinct tokens, as 100 clients would send.
    var tokens: [String] = []
    for client in 0..<100 {
        let claims = Claims(sub: "client-\(client)", iss: "bench", aud: "tributary", exp: Date().timeIntervalSince1970 + 3600)
        tokens.append(try await signers.sign(claims, kid: JWKIdentifier(string: kid)))
    }
    let cost = try await measure(configuration, tokens: tokens, rounds: max(1, rounds / 100))
    print(name.padding(toLength: 11, withPad: " ", startingAt: 0) + String(format: "%19.1f  %21.0f", cost.cold / 1000, cost.cached))
}

/// Nanoseconds per verification of each of `tokens` (all valid for `configuration`'s
/// `auth.jwt`): from scratch, `rounds` times each (what every new token costs); then found
/// among the verified tokens, `rounds` times each (what a steady client's next request costs).
func measure(_ configuration: Configuration, tokens: [String], rounds: Int) async throws -> (cold: Double, cached: Double) {
    guard let jwt = configuration.auth.jwt else { return (0, 0) }
    let verified = VerifiedTokens()
    let keys = TokenKeys(expectsJWKS: false)
    keys.setConfigured(try await TokenKeys.make(jwt.keys))
    let verifier = TokenVerifier(settings: jwt, keys: keys, tokens: verified, hasher: IdentityHasher(), refetch: nil)
    let clock = ContinuousClock()
    let now = TokenVerifier.now()
    var accepted = 0
    let cold = clock.measure {
        for _ in 0..<rounds {
            for token in tokens {
                if case .verified(let credential) = verifier.check(token, now: now) {
                    accepted += 1
                    verified.keep(credential, for: token, now: now)
                }
            }
        }
    }
    let cached = clock.measure {
        for _ in 0..<rounds {
            for token in tokens where verified.credential(for: token, now: now) != nil { accepted += 1 }
        }
    }
    guard accepted == 2 * rounds * tokens.count else { throw BenchmarkError() }
    let count = Double(rounds * tokens.count)
    return (nanoseconds(cold) / count, nanoseconds(cached) / count)
}

/// A token the verifier refused: the benchmark measured nothing.
struct BenchmarkError: Error {}

func nanoseconds(_ duration: Duration) -> Double {
    let (seconds, attoseconds) = duration.components
    return Double(seconds) * 1e9 + Double(attoseconds) / 1e9
}
