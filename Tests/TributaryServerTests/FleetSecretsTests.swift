import Foundation
import Testing
import TributaryTesting

/// "No secret travels through Redis" (DESIGN.md, part 3): Redis is outside the trust
/// boundary, so everything two replicas say to each other is read here as anyone with access
/// to Redis would read it, with `MONITOR`: every command every client sends.
@Suite("Nothing secret crosses Redis: tokens and forwarded credentials stay in the replica")
struct FleetSecretsTests {
    @Test("a trigger steered across replicas with ?access_token= and a per-identity stream relayed by another replica: MONITOR sees the control and the documents, never the token or the forwarded cookie")
    func monitorSeesNoSecret() async throws {
        let redis = try await RedisServerProcess.start()
        let fixture = TaskGroupsFixture(count: 2)
        let upstream = try await ScriptedUpstream.start { request in fixture.reply(to: request) ?? .json("{}", status: 404) }
        let tokens = try await TestTokens()
        let yaml = ServiceHarness.groupsYAML(upstream: upstream.baseURL, groups: "auth: {required: true}") + """

              mine:
                kind: list
                upstream: personal
                list: {path: /groups, items: result, id: id}
                details: {path: "/groups/{id}/metadata", value: result}
                refreshInterval: 1h
            """ + "\n" + tokens.yaml() + """

            cluster: {redis: "\(redis.url)", leaseTTL: 1s, secret: "\(FleetTests.secret)"}
            """
        let configured = yaml.replacingOccurrences(of: "upstreams:\n", with: "upstreams:\n  personal: {url: \"\(upstream.baseURL)\", forward: [Cookie]}\n")
        let holder = try await ServiceHarness(yaml: configured)
        let other = try await ServiceHarness(yaml: configured)
        let monitor = try await RawRedisClient(port: redis.port)
        #expect(try await monitor.command("MONITOR") == .simple("OK"))

        let alice = try await tokens.token(.es, sub: "alice")
        let stream = try await holder.events("/groups", headers: TestTokens.bearer(alice))
        let announced = try await stream.next(type: "stream")
        let id = try #require(ConfigurationReloadTests.streamID(announced))
        let path = "/streams/\(id)/triggers/reload?access_token=\(alice)&note=crosses"
        // The other replica joins the fleet (503 until then) and learns where the stream is
        // from Redis (404 until then): asked until it has.
        var steered = try await TestHTTP.request(port: other.port, "POST", path)
        for _ in 0..<500 where [404, 503].contains(steered.status) {
            try await Task.sleep(for: .milliseconds(20))
            steered = try await TestHTTP.request(port: other.port, "POST", path)
        }
        #expect(steered.status == 202, "\(steered.text)")

        let cookie = "session=forwarded-cookie-4d1c9e"
        let mine = try await holder.events("/mine", headers: [("Cookie", cookie)])
        _ = try await mine.next(type: "snapshot")
        let relayed = try await other.events("/mine", headers: [("Cookie", cookie)])
        #expect(try await relayed.next(type: "snapshot").data == fixture.mergedJSON)

        // Everything sent to Redis up to a marker of our own.
        let marker = "end-of-test-\(UUID().uuidString)"
        let probe = try await RawRedisClient(port: redis.port)
        _ = try await probe.command("ECHO", marker)
        var seen: [String] = []
        while !(seen.last?.contains(marker) ?? false) {
            if case .simple(let line) = try await monitor.read() { seen.append(line) }
        }
        let all = seen.joined(separator: "\n")
        #expect(all.contains("PUBLISH") && all.contains("note"), "the control crossed Redis, with its other argument")
        #expect(all.contains("taskCount"), "documents crossed Redis")
        #expect(!all.contains(alice), "the token")
        #expect(!all.contains(String(alice.split(separator: ".")[2])), "the token's signature")
        #expect(!all.contains("forwarded-cookie-4d1c9e"), "the forwarded cookie")

        probe.close()
        monitor.close()
        stream.close()
        mine.close()
        relayed.close()
        await holder.stop()
        await other.stop()
        redis.stop()
        await upstream.shutdown()
    }
}
