import Foundation
import Testing
@testable import AccessControl
@testable import TributaryServer
import TributaryTesting

/// Two replicas (two processes' worth of shares, each with its own Redis connections) and a
/// real `redis-server`: one limit for the fleet through the Redis script, and each replica
/// limiting alone while Redis is away.
@Suite("Rate limits across a fleet, through Redis")
struct FleetRateLimitTests {
    static func replica(upstream: String, redis: String) async throws -> ServiceHarness {
        let yaml = ServiceHarness.groupsYAML(upstream: upstream) + """

            server: {rateLimit: {rate: 1/m, burst: 4, by: ip}}
            cluster: {redis: "\(redis)", leaseTTL: 1s, secret: "\(FleetTests.secret)"}
            """
        return try await ServiceHarness(yaml: yaml)
    }

    /// Waits until `replica` decides its limits through Redis (`connected`) or alone.
    static func deciding(_ replica: ServiceHarness, throughRedis connected: Bool) async throws -> Bool {
        let deadline = ContinuousClock.now + .seconds(10)
        while ContinuousClock.now < deadline {
            if try await replica.withWorker({ $0.gate.isFleetConnected }) == connected { return true }
            try await Task.sleep(for: .milliseconds(20))
        }
        return false
    }

    @Test("a client gets one burst from the whole fleet; with Redis stopped, each replica gives its own")
    func fleetWideThenAlone() async throws {
        let redis = try await RedisServerProcess.start()
        let fixture = Observed(TaskGroupsFixture(count: 2))
        let upstream = try await ScriptedUpstream.start { request in fixture.value.reply(to: request) ?? .json("{}", status: 404) }
        let a = try await Self.replica(upstream: upstream.baseURL, redis: redis.url)
        let b = try await Self.replica(upstream: upstream.baseURL, redis: redis.url)
        #expect(try await Self.deciding(a, throughRedis: true))
        #expect(try await Self.deciding(b, throughRedis: true))

        var statuses: [Int] = []
        for index in 0..<8 { statuses.append(try await (index % 2 == 0 ? a : b).get("/groups").status) }
        #expect(statuses.filter { $0 == 200 }.count == 4, "\(statuses)")
        #expect(statuses.filter { $0 == 429 }.count == 4, "\(statuses)")

        redis.stop()
        #expect(try await Self.deciding(a, throughRedis: false))
        #expect(try await Self.deciding(b, throughRedis: false))
        var alone: [Int] = []
        for index in 0..<10 { alone.append(try await (index % 2 == 0 ? a : b).get("/groups").status) }
        // Each replica's own burst of 4: 8 of 10.
        #expect(alone.filter { $0 == 200 }.count == 8, "\(alone)")

        await a.stop()
        await b.stop()
        await upstream.shutdown()
    }
}
