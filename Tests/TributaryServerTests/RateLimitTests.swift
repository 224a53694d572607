import Foundation
import Testing
@testable import TributaryServer
import TributaryTesting

@Suite("Rate limits: GCRA per client, 429 with Retry-After, the RateLimit fields, streams per client")
struct RateLimitTests {
    struct World {
        let fixture: Observed<TaskGroupsFixture>
        let upstream: ScriptedUpstream
        let tokens: TestTokens
        let service: ServiceHarness

        static func start(groups: String = "", top: String) async throws -> World {
            let fixture = Observed(TaskGroupsFixture(count: 2))
            let upstream = try await ScriptedUpstream.start { request in fixture.value.reply(to: request) ?? .json("{}", status: 404) }
            let tokens = try await TestTokens()
            let yaml = ServiceHarness.groupsYAML(upstream: upstream.baseURL, groups: groups) + "\n" + tokens.yaml() + "\n" + top
            return World(fixture: fixture, upstream: upstream, tokens: tokens, service: try await ServiceHarness(yaml: yaml))
        }

        func stop() async {
            await service.stop()
            await upstream.shutdown()
        }
    }

    /// Polls `GET path` until it is not 429, within `timeout`.
    static func recovered(_ service: ServiceHarness, _ path: String, headers: [(String, String)] = [], timeout: Duration = .seconds(5)) async throws -> TestResponse {
        let deadline = ContinuousClock.now + timeout
        while true {
            let response = try await service.get(path, headers: headers)
            if response.status != 429 || ContinuousClock.now > deadline { return response }
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test("a burst passes, the rest is 429 rate_limited with Retry-After; every answer carries RateLimit-Policy and RateLimit; it recovers")
    func burstAndRecovery() async throws {
        // One request a minute: however slowly the six requests go (a loaded machine), no
        // room comes back between them, so exactly the burst passes.
        let world = try await World.start(top: "server: {rateLimit: {rate: 1/m, burst: 3, by: ip}}")
        var answers: [TestResponse] = []
        for _ in 0..<6 { answers.append(try await world.service.get("/groups")) }
        #expect(answers.map(\.status) == [200, 200, 200, 429, 429, 429])
        #expect(answers[0].header("RateLimit-Policy")?.hasPrefix("\"default\";q=3;w=") == true)
        #expect(answers[0].header("RateLimit")?.hasPrefix("\"default\";r=2;t=") == true)
        for answer in answers {
            #expect(answer.header("RateLimit-Policy") != nil && answer.header("RateLimit") != nil)
            guard answer.status == 429 else { continue }
            #expect(answer.error?.code == "rate_limited")
            #expect(Int(answer.header("Retry-After") ?? "").map { (1...60).contains($0) } == true, "whole seconds, until the next request fits")
            #expect(answer.header("RateLimit")?.hasPrefix("\"default\";r=0;") == true)
        }
        await world.stop()

        // Ten a second, one at a time: a request refused passes again once a tenth of a second went.
        let quick = try await World.start(top: "server: {rateLimit: {rate: 10/s, burst: 1, by: ip}}")
        for _ in 0..<3 { _ = try await quick.service.get("/groups") }
        #expect(try await Self.recovered(quick.service, "/groups").status == 200)
        let metrics = try await quick.service.get("/metrics").text
        #expect(metrics.contains("tributary_rate_limited_total{resource=\"groups\"}"))
        // Never limited: the operations endpoints.
        for _ in 0..<10 { #expect(try await quick.service.get("/healthz").status == 200) }
        await quick.stop()
    }

    @Test("a resource's own rateLimit overrides the server's, under its own name")
    func resourceOverride() async throws {
        let world = try await World.start(groups: "rateLimit: {rate: 1/m, burst: 1}", top: "server: {rateLimit: {rate: 100/s, burst: 100}}")
        let first = try await world.service.get("/groups")
        #expect(first.status == 200)
        #expect(first.header("RateLimit-Policy") == "\"groups\";q=1;w=60")
        let second = try await world.service.get("/groups")
        #expect(second.status == 429)
        #expect(Int(second.header("Retry-After") ?? "") ?? 0 > 50)
        await world.stop()
    }

    @Test("by identity: each token's subject has its own bucket; requests without a token count by address")
    func byIdentity() async throws {
        let world = try await World.start(top: "server: {rateLimit: {rate: 1/m, burst: 2, by: identity}}")
        let alice = TestTokens.bearer(try await world.tokens.token(sub: "alice"))
        let bob = TestTokens.bearer(try await world.tokens.token(.hs, sub: "bob"))
        #expect(try await world.service.get("/groups", headers: alice).status == 200)
        #expect(try await world.service.get("/groups", headers: alice).status == 200)
        #expect(try await world.service.get("/groups", headers: alice).status == 429)
        // Another token of alice's is alice.
        #expect(try await world.service.get("/groups", headers: TestTokens.bearer(try await world.tokens.token(.rs, sub: "alice"))).status == 429)
        #expect(try await world.service.get("/groups", headers: bob).status == 200)
        #expect(try await world.service.get("/groups").status == 200)
        #expect(try await world.service.get("/groups").status == 200)
        #expect(try await world.service.get("/groups").status == 429)
        await world.stop()
    }

    @Test("stream opens and stream control count; a client holds at most maxStreamsPerClient streams")
    func streams() async throws {
        let world = try await World.start(top: "server: {maxStreamsPerClient: 2, rateLimit: {rate: 100/s, burst: 100, by: ip}}")
        let first = try await world.service.events("/groups")
        let second = try await world.service.events("/events?resource=groups")
        #expect(first.head.status == 200 && second.head.status == 200)
        #expect(first.head.header("RateLimit") != nil)
        let third = try await world.service.events("/groups")
        #expect(third.head.status == 429)
        third.close()
        first.close()
        // The server sees the close, then the client's quota has room again.
        let reopened = try await Self.openWhenAllowed(world.service, "/groups")
        #expect(reopened.head.status == 200)
        reopened.close()
        second.close()
        await world.stop()
    }

    static func openWhenAllowed(_ service: ServiceHarness, _ path: String) async throws -> SSEClient {
        let deadline = ContinuousClock.now + .seconds(5)
        while true {
            let stream = try await service.events(path)
            if stream.head.status != 429 || ContinuousClock.now > deadline { return stream }
            stream.close()
            try await Task.sleep(for: .milliseconds(20))
        }
    }

    @Test("through a trusted proxy, clients behind it are limited apart; an untrusted peer's X-Forwarded-For is ignored")
    func trustedProxy() async throws {
        let world = try await World.start(top: "server: {trustedProxies: [127.0.0.1/32], rateLimit: {rate: 1/m, burst: 1, by: ip}}")
        #expect(try await world.service.get("/groups", headers: [("X-Forwarded-For", "198.51.100.1")]).status == 200)
        #expect(try await world.service.get("/groups", headers: [("X-Forwarded-For", "198.51.100.1")]).status == 429)
        #expect(try await world.service.get("/groups", headers: [("X-Forwarded-For", "198.51.100.2")]).status == 200)
        // A client cannot pick its name by writing addresses left of the proxy's.
        #expect(try await world.service.get("/groups", headers: [("X-Forwarded-For", "1.2.3.4, 198.51.100.2")]).status == 429)
        await world.stop()

        let untrusting = try await World.start(top: "server: {rateLimit: {rate: 1/m, burst: 1, by: ip}}")
        #expect(try await untrusting.service.get("/groups", headers: [("X-Forwarded-For", "198.51.100.1")]).status == 200)
        #expect(try await untrusting.service.get("/groups", headers: [("X-Forwarded-For", "198.51.100.2")]).status == 429)
        await untrusting.stop()
    }
}
