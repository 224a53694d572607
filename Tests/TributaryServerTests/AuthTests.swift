import Foundation
import Testing
import TributaryTesting

@Suite("Bearer tokens (JWT): who may read a resource and steer its streams")
struct AuthTests {
    /// A tasks upstream, tokens of every algorithm, and the service trusting them, with the
    /// groups resource's `auth` set to `groupsAuth`.
    struct World {
        let fixture: Observed<TaskGroupsFixture>
        let upstream: ScriptedUpstream
        let tokens: TestTokens
        let service: ServiceHarness

        static func start(groupsAuth: String = "auth: {required: true}", leeway: String = "1s", more: String = "") async throws -> World {
            let fixture = Observed(TaskGroupsFixture(count: 3))
            let upstream = try await ScriptedUpstream.start { request in fixture.value.reply(to: request) ?? .json("{}", status: 404) }
            let tokens = try await TestTokens()
            let yaml = ServiceHarness.groupsYAML(upstream: upstream.baseURL, groups: groupsAuth) + "\n" + tokens.yaml(leeway: leeway) + more
            let service = try await ServiceHarness(yaml: yaml)
            return World(fixture: fixture, upstream: upstream, tokens: tokens, service: service)
        }

        func stop() async {
            await service.stop()
            await upstream.shutdown()
        }
    }

    static func expectChallenge(_ response: TestResponse, invalid: Bool, _ comment: Comment) {
        #expect(response.status == 401, comment)
        #expect(response.error?.code == "unauthorized", comment)
        let challenge = response.header("WWW-Authenticate") ?? ""
        #expect(challenge.hasPrefix("Bearer realm=\"tributary\""), comment)
        #expect(challenge.contains("error=\"invalid_token\"") == invalid, comment)
        #expect(response.header("Cache-Control") == "no-store", comment)
    }

    @Test("a token signed with each of HS256, RS256, ES256 and EdDSA reads the resource; none is 401 with the realm's challenge")
    func everyAlgorithm() async throws {
        let world = try await World.start()
        for kid in TestTokens.Kid.allCases {
            let response = try await world.service.get("/groups", headers: TestTokens.bearer(try await world.tokens.token(kid)))
            #expect(response.status == 200, "\(kid.algorithm)")
            #expect(response.text == world.fixture.value.mergedJSON, "\(kid.algorithm)")
            #expect(response.header("Cache-Control") == "private, no-cache", "\(kid.algorithm)")
            #expect(response.header("Vary")?.contains("Authorization") == true, "\(kid.algorithm)")
        }
        Self.expectChallenge(try await world.service.get("/groups"), invalid: false, "no token")
        let stream = try await world.service.events("/groups")
        #expect(stream.head.status == 401)
        #expect(stream.head.header("WWW-Authenticate") == "Bearer realm=\"tributary\"")
        stream.close()
        await world.stop()
    }

    @Test("the cookie tributary_token and the query parameter access_token carry a token as the header does")
    func transports() async throws {
        let world = try await World.start()
        let token = try await world.tokens.token(.hs)
        #expect(try await world.service.get("/groups", headers: [("Cookie", "theme=dark; tributary_token=\(token)")]).status == 200)
        #expect(try await world.service.get("/groups?access_token=\(token)").status == 200)
        let stream = try await world.service.events("/groups?access_token=\(token)")
        #expect(stream.head.status == 200)
        #expect(stream.head.header("Cache-Control") == "private, no-cache")
        #expect(try await stream.next(type: "snapshot").data == world.fixture.value.mergedJSON)
        stream.close()
        // GET /events, EventSource's one stream of several resources, takes it too: the token
        // is not taken for a resource's parameter.
        let events = try await world.service.events("/events?resource=groups&access_token=\(token)")
        #expect(events.head.status == 200)
        #expect(try await events.next(type: "snapshot").data.contains(#""taskCount""#))
        events.close()
        await world.stop()
    }

    @Test("a forged, expired, early, foreign, unsigned or malformed token is 401 invalid_token")
    func invalidTokens() async throws {
        let world = try await World.start()
        let good = try await world.tokens.token(.es)
        let now = Date().timeIntervalSince1970
        let bad: [(String, String)] = [
            ("another payload under a good signature",
             TestTokens.withPayload(good, #"{"sub":"mallory","iss":"\#(TestTokens.issuer)","aud":"\#(TestTokens.audience)","exp":\#(now + 600)}"#)),
            ("expired beyond the leeway", try await world.tokens.token(.es, ttl: -5)),
            ("not valid yet", try await world.tokens.token(.rs) { $0.nbf = now + 120 }),
            ("of another issuer", try await world.tokens.token(.hs) { $0.iss = "https://evil.test" }),
            ("for another audience", try await world.tokens.token(.ed) { $0.aud = "someone-else" }),
            ("without exp", try await world.tokens.token(.hs) { $0.exp = nil }),
            ("without sub", try await world.tokens.token(.hs, sub: nil)),
            ("alg none", TestTokens.unsigned(#"{"sub":"alice","iss":"\#(TestTokens.issuer)","aud":"\#(TestTokens.audience)","exp":\#(now + 600)}"#)),
            ("naming another key's kid", Self.renamed(good, header: #"{"alg":"ES256","kid":"rs","typ":"JWT"}"#)),
            ("naming a kid no key has", Self.renamed(good, header: #"{"alg":"ES256","kid":"nobody","typ":"JWT"}"#)),
            ("not a JWT", "not.a.jwt"),
        ]
        for (what, token) in bad {
            Self.expectChallenge(try await world.service.get("/groups", headers: TestTokens.bearer(token)), invalid: true, "\(what)")
        }
        #expect(world.upstream.requests.isEmpty)
        await world.stop()
    }

    /// `token` with another header.
    static func renamed(_ token: String, header: String) -> String {
        TestTokens.base64URL(Array(header.utf8)) + "." + token.split(separator: ".").dropFirst().joined(separator: ".")
    }

    @Test("scopes: the scope claim or scp grant them; a token without one is 403 insufficient_scope")
    func scopes() async throws {
        let world = try await World.start(groupsAuth: "auth: {scopes: [groups:read]}")
        let spaced = try await world.tokens.token(.hs, scope: "profile groups:read")
        #expect(try await world.service.get("/groups", headers: TestTokens.bearer(spaced)).status == 200)
        let listed = try await world.tokens.token(.hs) { $0.scp = ["groups:read"] }
        #expect(try await world.service.get("/groups", headers: TestTokens.bearer(listed)).status == 200)
        let without = try await world.service.get("/groups", headers: TestTokens.bearer(try await world.tokens.token(.hs, scope: "profile")))
        #expect(without.status == 403)
        #expect(without.error?.code == "forbidden")
        #expect(without.header("WWW-Authenticate") == "Bearer realm=\"tributary\", error=\"insufficient_scope\", scope=\"groups:read\"")
        Self.expectChallenge(try await world.service.get("/groups"), invalid: false, "scopes need a token")
        await world.stop()
    }

    @Test("a public resource answers without a token, and refuses a bad one")
    func publicResource() async throws {
        let world = try await World.start(groupsAuth: "")
        let answer = try await world.service.get("/groups")
        #expect(answer.status == 200)
        #expect(answer.header("Cache-Control") == "no-cache")
        #expect(try await world.service.get("/groups", headers: TestTokens.bearer(try await world.tokens.token())).status == 200)
        Self.expectChallenge(try await world.service.get("/groups", headers: TestTokens.bearer("not.a.jwt")), invalid: true, "bad token")
        await world.stop()
    }

    @Test("a stream ends with event: error token_expired once its token's exp plus the leeway has passed")
    func streamExpires() async throws {
        let world = try await World.start(leeway: "1s")
        let token = try await world.tokens.token(.es, ttl: 1)
        let stream = try await world.service.events("/groups", headers: TestTokens.bearer(token))
        #expect(stream.head.status == 200)
        _ = try await stream.next(type: "snapshot")
        let opened = ContinuousClock.now
        let error = try await stream.next(type: "error")
        #expect(error.data.contains("\"code\":\"token_expired\""))
        #expect(ContinuousClock.now - opened < .seconds(5))
        #expect(try await stream.readToEnd().isEmpty)
        await world.stop()
    }

    @Test("on /events, a stream of a resource that requires a token needs one, and ends when it expires")
    func eventsExpire() async throws {
        let world = try await World.start(leeway: "1s")
        let refused = try await world.service.events("/events?resource=groups")
        #expect(refused.head.status == 401)
        refused.close()
        let token = try await world.tokens.token(.hs, ttl: 1)
        let stream = try await world.service.events("/events?resource=groups", headers: TestTokens.bearer(token))
        #expect(stream.head.status == 200)
        #expect(stream.head.header("Cache-Control") == "private, no-cache")
        let error = try await stream.next(type: "error")
        #expect(error.data.contains("\"resource\":\"groups\""))
        #expect(error.data.contains("\"code\":\"token_expired\""))
        await world.stop()
    }

    @Test("a stream opened with a token is steered only with a token of its subject: none is 401, another subject's 403")
    func controlBySubject() async throws {
        let world = try await World.start()
        let alice = try await world.tokens.token(.es, sub: "alice")
        let stream = try await world.service.events("/groups", headers: TestTokens.bearer(alice))
        let announced = try await stream.next(type: "stream")
        let id = try #require((try JSONSerialization.jsonObject(with: Data(announced.data.utf8)) as? [String: Any])?["id"] as? String)
        let path = "/streams/\(id)/triggers/reload"

        let anonymous = try await TestHTTP.request(port: world.service.port, "POST", path)
        #expect(anonymous.status == 401)
        #expect(anonymous.header("WWW-Authenticate") == "Bearer realm=\"tributary\"")
        let mallory = try await world.tokens.token(.hs, sub: "mallory")
        let other = try await TestHTTP.request(port: world.service.port, "POST", path, headers: TestTokens.bearer(mallory))
        #expect(other.status == 403)
        #expect(other.error?.code == "forbidden")
        let forged = try await TestHTTP.request(port: world.service.port, "POST", path, headers: TestTokens.bearer("a.b.c"))
        #expect(forged.status == 401)
        let again = try await world.tokens.token(.rs, sub: "alice")
        #expect(try await TestHTTP.request(port: world.service.port, "POST", path, headers: TestTokens.bearer(again)).status == 202)
        stream.close()
        await world.stop()
    }

    @Test("a stream opened without a token stays anyone's with its id, as before")
    func anonymousStreamControl() async throws {
        let world = try await World.start(groupsAuth: "")
        let stream = try await world.service.events("/groups")
        let announced = try await stream.next(type: "stream")
        let id = try #require((try JSONSerialization.jsonObject(with: Data(announced.data.utf8)) as? [String: Any])?["id"] as? String)
        #expect(try await TestHTTP.request(port: world.service.port, "POST", "/streams/\(id)/triggers/reload").status == 202)
        stream.close()
        await world.stop()
    }

    @Test("/openapi.json declares the bearer scheme, required on a protected resource, with its 401 and 403")
    func openAPI() async throws {
        let world = try await World.start(groupsAuth: "auth: {scopes: [groups:read]}")
        let document = try #require(try await world.service.get("/openapi.json").json() as? [String: Any])
        let schemes = (document["components"] as? [String: Any])?["securitySchemes"] as? [String: Any]
        let bearer = try #require(schemes?["bearerToken"] as? [String: Any])
        #expect(bearer["scheme"] as? String == "bearer" && bearer["bearerFormat"] as? String == "JWT")
        let paths = try #require(document["paths"] as? [String: Any])
        let groups = try #require((paths["/groups"] as? [String: Any])?["get"] as? [String: Any])
        #expect((groups["security"] as? [[String: Any]])?.map { Array($0.keys) } == [["bearerToken"]])
        let responses = try #require(groups["responses"] as? [String: Any])
        #expect(responses["401"] != nil && responses["403"] != nil)
        // Stream control takes a token when the stream was opened with one: optional.
        let trigger = try #require((paths["/streams/{id}/triggers/{name}"] as? [String: Any])?["post"] as? [String: Any])
        #expect((trigger["security"] as? [[String: Any]])?.map { Array($0.keys) } == [[], ["bearerToken"]])
        let text = try await world.service.get("/openapi.json").text
        #expect(!text.contains(TestTokens.secret))
        await world.stop()
    }

    @Test("two subjects never share a pipeline: each subject's identity keys its own")
    func identities() async throws {
        let world = try await World.start()
        let alice = try await world.service.events("/groups", headers: TestTokens.bearer(try await world.tokens.token(.es, sub: "alice")))
        _ = try await alice.next(type: "snapshot")
        let bob = try await world.service.events("/groups", headers: TestTokens.bearer(try await world.tokens.token(.es, sub: "bob")))
        _ = try await bob.next(type: "snapshot")
        // One list call each: two pipelines.
        #expect(world.upstream.requests.filter { $0.path == "/groups" }.count == 2)
        alice.close()
        bob.close()
        await world.stop()
    }
}

/// Stream ownership across a fleet: a trigger that reaches another replica than the one
/// holding the stream is forwarded with its token's subject (a keyed hash of it, never the
/// token), and the holder lets only the stream's owner steer it.
@Suite("Stream control by subject, across replicas")
struct FleetStreamOwnershipTests {
    @Test("a stream opened with alice's token on one replica: from the other, alice's token steers it, none is 401, bob's is 403")
    func acrossReplicas() async throws {
        let redis = try await RedisServerProcess.start()
        let fixture = TaskGroupsFixture(count: 2)
        let upstream = try await ScriptedUpstream.start { request in fixture.reply(to: request) ?? .json("{}", status: 404) }
        let tokens = try await TestTokens()
        let yaml = ServiceHarness.groupsYAML(upstream: upstream.baseURL, groups: "auth: {required: true}") + "\n" + tokens.yaml() + """

            cluster: {redis: "\(redis.url)", leaseTTL: 1s, secret: "\(FleetTests.secret)"}
            """
        let holder = try await ServiceHarness(yaml: yaml)
        let other = try await ServiceHarness(yaml: yaml)
        // Both in the fleet: until it has joined, a replica answers 503 cluster_unavailable
        // for a stream it does not hold.
        #expect(await holder.ready())
        #expect(await other.ready())
        let alice = try await tokens.token(.es, sub: "alice")
        let stream = try await holder.events("/groups", headers: TestTokens.bearer(alice))
        let announced = try await stream.next(type: "stream")
        let id = try #require((try JSONSerialization.jsonObject(with: Data(announced.data.utf8)) as? [String: Any])?["id"] as? String)
        let path = "/streams/\(id)/triggers/reload"

        // The other replica learns where the stream is from Redis, once the holder has
        // written it there: ask until it has (a deadline, not a number of tries).
        var steered = try await TestHTTP.request(port: other.port, "POST", path, headers: TestTokens.bearer(alice))
        let deadline = ContinuousClock.now + .seconds(10)
        while steered.status == 404 && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            steered = try await TestHTTP.request(port: other.port, "POST", path, headers: TestTokens.bearer(alice))
        }
        #expect(steered.status == 202, "\(steered.text)")
        #expect(try await TestHTTP.request(port: other.port, "POST", path).status == 401)
        let bob = try await TestHTTP.request(port: other.port, "POST", path, headers: TestTokens.bearer(try await tokens.token(.hs, sub: "bob")))
        #expect(bob.status == 403)
        #expect(bob.error?.code == "forbidden")
        let client = try await RawRedisClient(port: redis.port)
        if case .array(let keys?) = try await client.command("KEYS", "*") {
            for key in keys.compactMap(\.text) { #expect(!key.contains("alice") && !key.contains(alice), "\(key)") }
        }
        client.close()
        stream.close()
        await holder.stop()
        await other.stop()
        redis.stop()
        await upstream.shutdown()
    }
}
