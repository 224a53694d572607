import Foundation
import JWTKit
import Testing
@testable import AccessControl
@testable import TributaryServer
import TributaryTesting

@Suite("A JWKS URL: keys fetched with the service's own client, rotated, and refetched for an unknown kid at most every 10 s")
struct JWKSTests {
    static func jwk(_ key: ES256PrivateKey, kid: String, withAlg: Bool) -> String {
        let parameters = key.publicKey.parameters!
        let alg = withAlg ? #""alg":"ES256","use":"sig","# : ""
        return #"{"kty":"EC","crv":"P-256",\#(alg)"kid":"\#(kid)","x":"\#(parameters.x)","y":"\#(parameters.y)"}"#
    }

    @Test("a rotated key set: the new kid is fetched at once, the retired kid's tokens are refused, made-up kids fetch nothing more")
    func rotation() async throws {
        let first = ES256PrivateKey()
        let second = ES256PrivateKey()
        let signers = JWTKeyCollection()
        await signers.add(ecdsa: first, kid: "first")
        await signers.add(ecdsa: second, kid: "second")
        let published = Observed(#"{"keys":[\#(Self.jwk(first, kid: "first", withAlg: true)),{"kty":"oct","kid":"shared","k":"c2VjcmV0"}]}"#)
        let fixture = TaskGroupsFixture(count: 2)
        let upstream = try await ScriptedUpstream.start { request in
            request.path == "/keys/jwks.json" ? .json(published.value) : fixture.reply(to: request) ?? .json("{}", status: 404)
        }
        let yaml = ServiceHarness.groupsYAML(upstream: upstream.baseURL, groups: "auth: {required: true}") + """

            auth:
              jwt: {issuer: \(TestTokens.issuer), audience: \(TestTokens.audience), jwks: "\(upstream.baseURL)/keys/jwks.json"}
            """
        let service = try await ServiceHarness(yaml: yaml)
        var fetches: Int { upstream.requests.filter { $0.path == "/keys/jwks.json" }.count }
        func token(_ kid: String) async throws -> String {
            let claims = TestClaims(sub: "alice", iss: TestTokens.issuer, aud: TestTokens.audience, exp: Date().timeIntervalSince1970 + 600)
            return try await signers.sign(claims, kid: JWKIdentifier(string: kid))
        }

        #expect(try await service.get("/groups", headers: TestTokens.bearer(try await token("first"))).status == 200)
        #expect(fetches == 1)

        // The issuer rotates: the new key, published without an alg, is found by its kid.
        published.update { $0 = #"{"keys":[\#(Self.jwk(second, kid: "second", withAlg: false))]}"# }
        #expect(try await service.get("/groups", headers: TestTokens.bearer(try await token("second"))).status == 200)
        #expect(fetches == 2)

        // The retired key's tokens, verified before, are checked again against the new set.
        let retired = try await service.get("/groups", headers: TestTokens.bearer(try await token("first")))
        #expect(retired.status == 401)
        #expect(retired.header("WWW-Authenticate")?.contains("invalid_token") == true)

        // Made-up kids within 10 s of the last fetch: refused, and the issuer is not asked again.
        for index in 0..<20 {
            let forged = AuthTests.renamed(try await token("second"), header: #"{"alg":"ES256","kid":"made-up-\#(index)"}"#)
            #expect(try await service.get("/groups", headers: TestTokens.bearer(forged)).status == 401)
        }
        #expect(fetches == 2)
        await service.stop()
        await upstream.shutdown()
    }

    @Test("fetching the same key set again, or failing to, keeps the verified tokens: a flood of made-up kids cannot empty the cache")
    func sameSetKeepsVerifiedTokens() async throws {
        let changes = Observed(0)
        let keys = TokenKeys(expectsJWKS: true) { changes.update { $0 += 1 } }
        keys.setConfigured([])
        let document = Array(#"{"keys":[\#(Self.jwk(ES256PrivateKey(), kid: "first", withAlg: true))]}"#.utf8)
        let made = try await TokenKeys.make(jwks: document)
        #expect(made.count == 1)
        keys.setFetched(made, from: document)
        let generation = keys.generation
        #expect(changes.value == 2, "the file's keys, then the first set")
        // What each refetch for a made-up kid does: the same document, or a failed fetch.
        for _ in 0..<5 {
            keys.setFetched(try await TokenKeys.make(jwks: document), from: document)
            keys.setFetched(nil)
        }
        #expect(keys.generation == generation)
        #expect(changes.value == 2)
        // A set that did change forgets them, so a retired key's tokens are checked again.
        let rotated = Array(#"{"keys":[\#(Self.jwk(ES256PrivateKey(), kid: "second", withAlg: true))]}"#.utf8)
        keys.setFetched(try await TokenKeys.make(jwks: rotated), from: rotated)
        #expect(keys.generation == generation + 1)
        #expect(changes.value == 3)
        #expect(keys.knows(kid: "second") && !keys.knows(kid: "first"))
    }

    @Test("a JWKS that cannot be fetched keeps the keys known; a token waits for the first fetch instead of failing")
    func unreachable() async throws {
        let signer = ES256PrivateKey()
        let signers = JWTKeyCollection()
        await signers.add(ecdsa: signer, kid: "k")
        let fixture = TaskGroupsFixture(count: 1)
        let upstream = try await ScriptedUpstream.start { request in
            request.path == "/jwks"
                ? .json(#"{"keys":[\#(Self.jwk(signer, kid: "k", withAlg: true))]}"#, delay: .milliseconds(300))
                : fixture.reply(to: request) ?? .json("{}", status: 404)
        }
        let yaml = ServiceHarness.groupsYAML(upstream: upstream.baseURL, groups: "auth: {required: true}") + """

            auth:
              jwt: {jwks: "\(upstream.baseURL)/jwks"}
            """
        let service = try await ServiceHarness(yaml: yaml)
        let claims = TestClaims(sub: "alice", exp: Date().timeIntervalSince1970 + 600)
        let token = try await signers.sign(claims, kid: "k")
        // Sent while the first fetch is still in flight: answered once it is in.
        #expect(try await service.get("/groups", headers: TestTokens.bearer(token)).status == 200)
        await service.stop()
        await upstream.shutdown()
    }
}
