#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Aggregation
import JWTKit
import Synchronization
package import TributaryConfiguration

/// The keys tokens are verified with, for the whole process: those of the file
/// (`auth.jwt.keys`) and those of the last JWKS fetched (`auth.jwt.jwks`). Each is jwt-kit's
/// verifier for its algorithm, ready to check a signature synchronously on any worker's loop.
///
/// jwt-kit makes verifiers only through its key collection, an actor: the file's keys are
/// made on a task at start, a fetched set's likewise; until the first are in
/// (``isLoaded``), a token waits for them (``whenLoaded(_:)``) rather than being refused.
/// One lock guards the table; what it holds is immutable.
package final class TokenKeys: Sendable {
    /// One key: its id (nil: for tokens without a `kid`) and jwt-kit's verifier, whose
    /// `name` is the algorithm a token's header must name.
    package struct Key: Sendable {
        let kid: String?
        let verifier: any JWTAlgorithm
    }

    private struct State {
        var configured: [Key] = []
        var fetched: [Key] = []
        var configuredIn = false
        /// Whether a JWKS fetch ended (true at once without a JWKS).
        var fetchedIn: Bool
        var isLoaded: Bool { configuredIn && fetchedIn }
        /// The JWKS document the fetched keys were made from: a fetch of the same document
        /// changes nothing.
        var fetchedDocument: [UInt8]?
        /// Bumped whenever the keys change: tokens verified before are verified again.
        var generation = 0
        var waiters: [@Sendable () -> Void] = []
    }

    private let state: Mutex<State>
    /// Runs after every change (the verified tokens are forgotten).
    private let onChange: @Sendable () -> Void

    /// Keys of the file, and of a JWKS if `expectsJWKS`; none until they are set.
    package init(expectsJWKS: Bool, onChange: @escaping @Sendable () -> Void = {}) {
        state = Mutex(State(fetchedIn: !expectsJWKS))
        self.onChange = onChange
    }

    /// Whether the first keys are in (the file's, and the first fetch of a JWKS, which may
    /// have failed).
    var isLoaded: Bool { state.withLock { $0.isLoaded } }

    var generation: Int { state.withLock { $0.generation } }

    /// The keys a token with `kid` (nil: none) may be verified with.
    func candidates(kid: String?) -> [Key] {
        state.withLock { state in
            (state.configured + state.fetched).filter { $0.kid == kid }
        }
    }

    /// Whether any key has `kid`.
    func knows(kid: String) -> Bool {
        state.withLock { state in state.configured.contains { $0.kid == kid } || state.fetched.contains { $0.kid == kid } }
    }

    /// Runs `waiter` once the first keys are in: now (and returns false) if they are.
    func whenLoaded(_ waiter: @escaping @Sendable () -> Void) -> Bool {
        state.withLock { state in
            guard !state.isLoaded else { return false }
            state.waiters.append(waiter)
            return true
        }
    }

    /// The keys of the file, made.
    package func setConfigured(_ keys: [Key]) {
        change { state in
            state.configured = keys
            state.configuredIn = true
            return true
        }
    }

    /// The keys of a JWKS just fetched from `document` (nil: the fetch failed; the keys known
    /// stay). Only keys that changed forget the verified tokens: a token naming a made-up
    /// `kid` makes a fetch (at most once every 10 s), and each fetch of the same document
    /// must not empty the cache that spares every other client a signature check.
    func setFetched(_ keys: [Key]?, from document: [UInt8]? = nil) {
        change { state in
            state.fetchedIn = true
            guard let keys, document == nil || document != state.fetchedDocument else { return false }
            state.fetched = keys
            state.fetchedDocument = document
            return true
        }
    }

    /// Applies `body` (which says whether the keys changed); when they did, the generation
    /// moves and ``onChange`` runs. Waiters run once the first keys are in.
    private func change(_ body: (inout State) -> Bool) {
        let (changed, waiters) = state.withLock { state in
            let changed = body(&state)
            if changed { state.generation += 1 }
            guard state.isLoaded else { return (changed, [@Sendable () -> Void]()) }
            defer { state.waiters = [] }
            return (changed, state.waiters)
        }
        if changed { onChange() }
        for waiter in waiters { waiter() }
    }

    // MARK: - Making verifiers with jwt-kit

    /// jwt-kit's verifiers for the file's keys.
    package static func make(_ keys: [Configuration.JWTKey]) async throws -> [Key] {
        let collection = JWTKeyCollection()
        var made: [Key] = []
        for (index, key) in keys.enumerated() {
            let slot = JWKIdentifier(string: "configured-\(index)")
            switch (key.algorithm, key.material) {
            case (.hs256, .secret(let bytes)):
                await collection.add(hmac: HMACKey(from: bytes), digestAlgorithm: .sha256, kid: slot)
            case (.rs256, .publicKey(let pem)):
                await collection.add(rsa: try Insecure.RSA.PublicKey(pem: pem), digestAlgorithm: .sha256, kid: slot)
            case (.es256, .publicKey(let pem)):
                await collection.add(ecdsa: try ES256PublicKey(pem: pem), kid: slot)
            case (.edDSA, .publicKey(let pem)):
                await collection.add(eddsa: try EdDSA.PublicKey(pem: pem), kid: slot)
            default:
                continue  // the configuration refuses these
            }
            made.append(Key(kid: key.kid, verifier: try await collection.getKey(for: slot)))
        }
        return made
    }

    /// jwt-kit's verifiers for the keys of a JWKS document that name a `kid` and are for
    /// RS256, ES256 or EdDSA (said by their `alg`, or by their type when they have none);
    /// others (symmetric keys, encryption keys, other algorithms, keys jwt-kit cannot read)
    /// are left out, one by one. Throws when the document is not a key set.
    static func make(jwks document: [UInt8]) async throws -> [Key] {
        guard let entries = try JSON(parsing: document)["keys"]?.arrayValue else { throw JWKSError() }
        let collection = JWTKeyCollection()
        var made: [Key] = []
        for entry in entries {
            guard let jwk = try? JSONDecoder().decode(JWK.self, from: Data(entry.serialized)), let kid = jwk.keyIdentifier, let algorithm = signingAlgorithm(of: jwk) else { continue }
            guard (try? await collection.add(jwk: jwk)) != nil,
                  let verifier = try? await collection.getKey(for: kid, alg: algorithm), verifier.name == algorithm else { continue }
            made.append(Key(kid: kid.string, verifier: verifier))
        }
        return made
    }

    /// The algorithm a JWK verifies: its `alg`, else the one its type and curve imply.
    private static func signingAlgorithm(of jwk: JWK) -> String? {
        if let alg = jwk.algorithm?.rawValue {
            return ["RS256", "ES256", "EdDSA"].contains(alg) ? alg : nil
        }
        switch (jwk.keyType, jwk.curve) {
        case (.rsa, _): return "RS256"
        case (.ecdsa, .ecdsa(.p256)?): return "ES256"
        case (.octetKeyPair, .eddsa(.ed25519)?): return "EdDSA"
        default: return nil
        }
    }
}

/// A JWKS document without a `keys` array.
struct JWKSError: Error {}
