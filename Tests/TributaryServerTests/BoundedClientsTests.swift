import Testing
@testable import AccessControl
@testable import TributaryConfiguration
@testable import TributaryServer
import TributaryTesting

/// What one client can make the process hold (issue 35, "Bounded by memory, in O(1)"): the
/// rate limiter keeps at most `server.maxRateLimitBuckets` buckets, each new one in the place
/// of the least recently seen; a client is named by one canonical address (`X-Forwarded-For`
/// entries that are no address name no one, IPv6 per /64); and a client holds at most
/// `server.maxStreamsPerClient` streams and starts at most its share of a resource's live
/// pipelines and of the identities, rate limit or not, so that it cannot lock others out.
/// Each defect with the hostile input that showed it, against a real worker on loopback.
@Suite("Bounded clients: the limiter's table, client names, streams and shares per client")
struct BoundedClientsTests {
    // MARK: - The limiter's table

    /// A limit of one request an hour by address behind a trusted proxy, `maxRateLimitBuckets`
    /// buckets; `GET /groups?updates=x` is counted, then answered 400 without an upstream call,
    /// so 400 means admitted and 429 refused.
    static func limitedBehindProxy(buckets: Int = 1000) async throws -> RateLimitTests.World {
        try await RateLimitTests.World.start(top: """
            server: {trustedProxies: [127.0.0.1/32], maxRateLimitBuckets: \(buckets), rateLimit: {rate: 1/h, burst: 1, by: ip}}
            """)
    }

    /// The statuses of `GET path` with each of `forwardedFor` as `X-Forwarded-For`, in order,
    /// on one keep-alive connection, `batch` requests written at a time.
    static func statuses(
        _ service: ServiceHarness, _ path: String = "/groups?updates=x", forwardedFor values: [String], batch: Int = 50
    ) async throws -> [Int] {
        let connection = try await TestConnection(port: service.port)
        defer { connection.close() }
        var statuses: [Int] = []
        for start in stride(from: 0, to: values.count, by: batch) {
            let chunk = values[start..<min(start + batch, values.count)]
            try await connection.send(chunk.map { "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Forwarded-For: \($0)\r\n\r\n" }.joined())
            for _ in chunk { statuses.append(try await connection.readResponse().status) }
        }
        return statuses
    }

    @Test("5,000 distinct X-Forwarded-For values from a trusted proxy leave the limiter at its bound, one eviction each beyond it")
    func forwardedFlood() async throws {
        let world = try await Self.limitedBehindProxy(buckets: 1000)
        let limiter = world.service.shares.rateLimits
        let names = (0..<5000).map { "198.\($0 / 256 % 256).\($0 % 256).7" }
        let statuses = try await Self.statuses(world.service, forwardedFor: names)
        #expect(statuses.allSatisfy { $0 == 400 }, "each new client's first request is admitted")
        #expect(limiter.capacity == 1000)
        #expect(limiter.clientCount == 1000)
        #expect(limiter.evictions == 4000)
        // The last thousand are known: refused; the first was forgotten: a whole burst again.
        #expect(try await Self.statuses(world.service, forwardedFor: [names[4999], names[4000], names[0]]) == [429, 429, 400])
        #expect(world.upstream.requests.isEmpty)
        await world.stop()
    }

    // MARK: - Client names

    @Test("through a trusted proxy, an X-Forwarded-For that is no address counts as the proxy; two addresses of one /64 are one client")
    func namesOverTheWire() async throws {
        let world = try await Self.limitedBehindProxy()
        // Garbage names no one: the proxy (the peer, 127.0.0.1) is the client, each time.
        #expect(try await Self.statuses(world.service, forwardedFor: ["bogus", "also-bogus", "198.51.100.1, x", "9999999"]) == [400, 429, 429, 429])
        #expect(try await Self.statuses(world.service, forwardedFor: ["x, 198.51.100.1", "198.51.100.1:8080", "::ffff:198.51.100.1"]) == [400, 429, 429])
        // IPv6: one /64 is one client; the next /64 another.
        #expect(try await Self.statuses(world.service, forwardedFor: ["2001:db8:1:2::1", "2001:db8:1:2:ffff:ffff:ffff:ffff", "[2001:db8:1:2::77]:443"]) == [400, 429, 429])
        #expect(try await Self.statuses(world.service, forwardedFor: ["2001:db8:1:3::1"]) == [400])
        #expect(world.service.shares.rateLimits.clientCount == 4)
        await world.stop()
    }

    @Test("TRIBUTARY_TRUSTED_PROXIES names the proxies (comma-separated), as deploy/compose.yaml sets it; a bad block names the variable")
    func trustedProxiesFromTheEnvironment() throws {
        let yaml = "server: {trustedProxies: [10.0.0.0/8]}"
        let configuration = try Configuration.load(yaml: yaml, file: "t.yaml", environment: ["TRIBUTARY_TRUSTED_PROXIES": "172.29.0.10, ::1,"])
        #expect(configuration.server.trustedProxies.map(\.description) == ["172.29.0.10/32", "::1/128"])
        #expect(try Configuration.load(yaml: yaml, file: "t.yaml", environment: ["TRIBUTARY_TRUSTED_PROXIES": ""]).server.trustedProxies.isEmpty)
        #expect {
            try Configuration.load(yaml: yaml, file: "t.yaml", environment: ["TRIBUTARY_TRUSTED_PROXIES": "10.0.0.1, nginx"])
        } throws: { error in
            "\(error)".contains("TRIBUTARY_TRUSTED_PROXIES") && "\(error)".contains("\"nginx\"")
        }
    }

    // MARK: - Streams per client, rate limit or not

    /// `X-Forwarded-For: address`, through the trusted proxy that every test request comes from.
    static func from(_ address: String) -> [(String, String)] { [("X-Forwarded-For", address)] }

    @Test("with no rate limit configured, a client holds at most 32 streams (the default); another client still opens one")
    func streamsWithoutRateLimit() async throws {
        let world = try await RateLimitTests.World.start(top: "server: {trustedProxies: [127.0.0.1/32]}")
        var held: [SSEClient] = []
        for _ in 0..<32 {
            let stream = try await world.service.events("/groups", headers: Self.from("198.51.100.9"))
            #expect(stream.head.status == 200)
            held.append(stream)
        }
        let refused = try await world.service.get("/groups", headers: [("Accept", "text/event-stream")] + Self.from("198.51.100.9"))
        #expect(refused.status == 429)
        #expect(refused.error?.code == "too_many_streams")
        // A /events stream counts once per resource it carries: one more is one too many.
        #expect(try await world.service.get("/events?resource=groups", headers: Self.from("198.51.100.9")).status == 429)
        let other = try await world.service.events("/groups", headers: Self.from("198.51.100.10"))
        #expect(other.head.status == 200)
        #expect(world.service.shares.streamQuota.streams(of: "ip:198.51.100.9") == 32)
        for stream in held + [other] { stream.close() }
        await world.stop()
    }

    // MARK: - Shares of the live pipelines and identities

    @Test("one client opening streams of 1,000 distinct parameter values starts only its share of the pipelines; another client still opens a new value")
    func parameterValuesShare() async throws {
        // 1000 pipelines (the default), 10 %: one client starts at most 100. Its streams are
        // not what stops it here (maxStreamsPerClient raised): the share is.
        let teams = try await ParameterizedResourceTests.Teams.start(resource: """
            server: {trustedProxies: [127.0.0.1/32], maxStreamsPerClient: 5000}
            """)
        let attacker = Self.from("198.51.100.66")
        var held: [SSEClient] = []
        var statuses: [Int: Int] = [:]
        for index in 0..<1000 {
            let stream = try await teams.service.events("/teams/v\(index)/groups", headers: attacker)
            statuses[stream.head.status, default: 0] += 1
            if stream.head.status == 200 { held.append(stream) } else { stream.close() }
        }
        #expect(statuses == [200: 100, 429: 900])
        let refused = try await teams.service.get("/teams/v1000/groups", headers: [("Accept", "text/event-stream")] + attacker)
        #expect(refused.status == 429)
        #expect(refused.error?.code == "too_many_client_pipelines")
        #expect(refused.error?.message.contains("100") == true)
        let pipelines = teams.service.shares.pipelines
        #expect(pipelines.count(of: "teamgroups") == 100)
        #expect(pipelines.started(by: "ip:198.51.100.66", of: "teamgroups").pipelines == 100)
        // Another client: a new value of its own, and a value the attacker started (joined).
        let victim = try await teams.service.events("/teams/victim/groups", headers: Self.from("198.51.100.77"))
        #expect(victim.head.status == 200)
        #expect(try await victim.next(type: "snapshot").data == ParameterizedResourceTests.Teams.document(team: "victim"))
        let joining = try await teams.service.events("/teams/v0/groups", headers: Self.from("198.51.100.77"))
        #expect(joining.head.status == 200)
        // The attacker may still join a running pipeline: joining starts nothing.
        let joined = try await teams.service.events("/teams/victim/groups", headers: attacker)
        #expect(joined.head.status == 200)
        #expect(pipelines.started(by: "ip:198.51.100.77", of: "teamgroups").pipelines == 1)
        // One of its own pipelines gone (v1: no one else follows it), it may start one more.
        held[1].close()
        let again = try await Self.openWhenAllowed(teams.service, "/teams/another/groups", headers: attacker)
        #expect(again.head.status == 200)
        for stream in held + [victim, joining, joined, again] { stream.close() }
        await teams.stop()
    }

    @Test("one client opening streams with 1,000 distinct forwarded Authorization values starts only its share of the identities; another client still gets one")
    func forwardedCredentialsShare() async throws {
        let upstream = try await IdentityTests.PerUserUpstream()
        let service = try await ServiceHarness(yaml: IdentityTests.yaml(upstream: upstream.server.baseURL, extra: """
            server: {trustedProxies: [127.0.0.1/32], maxStreamsPerClient: 5000, maxIdentities: 100}
            """))
        let attacker = Self.from("2001:db8:66:1::1")
        var held: [SSEClient] = []
        var statuses: [Int: Int] = [:]
        for index in 0..<1000 {
            // Each address of the attacker's /64 is the same client.
            let from = Self.from("2001:db8:66:1::\(String(index, radix: 16))")
            let stream = try await service.events("/groups", headers: [("Authorization", "Bearer u\(index)-secret")] + from)
            statuses[stream.head.status, default: 0] += 1
            if stream.head.status == 200 { held.append(stream) } else { stream.close() }
        }
        #expect(statuses == [200: 10, 429: 990], "10 % of 100 identities")
        let refused = try await service.get("/groups", headers: [("Accept", "text/event-stream"), ("Authorization", "Bearer u1000-secret")] + attacker)
        #expect(refused.status == 429)
        #expect(refused.error?.code == "too_many_client_identities")
        #expect(!refused.text.contains("u1000-secret"), "a forwarded value is in no error")
        #expect(service.shares.pipelines.identityCount == 10)
        #expect(service.shares.pipelines.started(by: "ip:2001:db8:66:1::/64", of: "groups").identities == 10)
        let victim = try await service.events("/groups", headers: IdentityTests.alice + Self.from("2001:db8:77:1::1"))
        #expect(victim.head.status == 200)
        #expect(try await victim.next(type: "snapshot").data == IdentityTests.PerUserUpstream.document("alice"))
        // The attacker's next /64 is another client (a /48 holds 65,536 of them: the bounds
        // above still hold for all of them together, and each is held to its share).
        let neighbour = try await service.events("/groups", headers: [("Authorization", "Bearer n-1")] + Self.from("2001:db8:66:2::1"))
        #expect(neighbour.head.status == 200)
        for stream in held + [victim, neighbour] { stream.close() }
        let identities = service.shares.pipelines
        #expect(await Self.eventually { identities.identityCount == 0 }, "every identity is forgotten with its streams")
        #expect(identities.started(by: "ip:2001:db8:66:1::/64", of: "groups").identities == 0)
        await service.stop()
        await upstream.server.shutdown()
    }

    @Test("a client's share is at least one, and a tenth of the default bounds")
    func shares() {
        #expect(Configuration.clientShare(of: 1000, percent: 10) == 100)
        #expect(Configuration.clientShare(of: 10_000, percent: 10) == 1000)
        #expect(Configuration.clientShare(of: 5, percent: 10) == 1)
        #expect(Configuration.clientShare(of: 1, percent: 1) == 1)
        #expect(Configuration.clientShare(of: 999, percent: 100) == 999)
        #expect(Configuration.clientShare(of: Int.max, percent: 100) == Int.max / 100 * 100 + Int.max % 100, "no overflow")
        var configuration = Configuration()
        #expect(configuration.streamsPerClient == 32 && !configuration.isRateLimited)
        configuration.server.maxStreamsPerClient = 3
        #expect(configuration.streamsPerClient == 3)
    }

    /// Opens `path` until it is not refused (its client's streams and pipelines are given back
    /// when the server has seen the close), within a generous deadline.
    static func openWhenAllowed(_ service: ServiceHarness, _ path: String, headers: [(String, String)]) async throws -> SSEClient {
        let deadline = ContinuousClock.now + .seconds(10)
        while true {
            let stream = try await service.events(path, headers: headers)
            if stream.head.status == 200 || ContinuousClock.now > deadline { return stream }
            stream.close()
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Whether `condition` holds within a generous deadline, polled.
    static func eventually(_ condition: @escaping @Sendable () -> Bool) async -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while !condition() {
            if ContinuousClock.now > deadline { return false }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return true
    }
}
