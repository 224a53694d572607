import Testing
@testable import TributaryServer
import TributaryTesting

/// What one client can make the process hold (issue 35, "Bounded by memory, in O(1)"): the
/// rate limiter keeps at most `server.maxRateLimitBuckets` buckets, each new one in the place
/// of the least recently seen. Each defect with the hostile input that showed it, against a
/// real worker on loopback.
@Suite("Bounded clients: the limiter's table")
struct BoundedClientsTests {
    // MARK: - The limiter's table

    @Test("a recency table forgets its least recently used entry, one per insertion beyond its capacity")
    func recencyTable() {
        var table = RecencyTable<String, Int>(capacity: 3)
        table["a"] = 1
        table["b"] = 2
        table["c"] = 3
        #expect(table.keysByRecency == ["c", "b", "a"])
        #expect(table["a"] == 1, "reading is a use")
        table["d"] = 4
        #expect(table.keysByRecency == ["d", "a", "c"], "b, the least recently used, went")
        #expect(table["b"] == nil && table.count == 3 && table.evictions == 1)
        table["c"] = 30
        #expect(table.keysByRecency == ["c", "d", "a"] && table.evictions == 1, "an update evicts nothing")
        table["d"] = nil
        table["e"] = 5
        #expect(table.keysByRecency == ["e", "c", "a"] && table.evictions == 1, "a removed entry's slot is reused")
        for key in ["f", "g", "h"] { table[key] = 0 }
        #expect(table.keysByRecency == ["h", "g", "f"] && table.evictions == 4)
    }

    @Test("200,000 distinct clients leave the limiter at its bound, each new one evicting exactly one bucket")
    func limiterAtItsBound() {
        let limiter = LocalRateLimiter()
        let gcra = GCRA(Configuration.RateLimit(perSecond: 1.0 / 3600, burst: 1))
        var evictions = 0
        var allAdmitted = true, oneEvictionEach = true
        for index in 0..<200_000 {
            allAdmitted = allAdmitted && limiter.decide("ip:\(index)", policy: "default", gcra).admitted
            let now = limiter.evictions
            // O(1): a decision drops at most the one bucket it needs room for, never a sweep.
            oneEvictionEach = oneEvictionEach && now - evictions == (index < limiter.capacity ? 0 : 1)
            evictions = now
        }
        #expect(allAdmitted)
        #expect(oneEvictionEach)
        #expect(limiter.capacity == 100_000)
        #expect(limiter.clientCount == limiter.capacity)
        #expect(limiter.evictions == 100_000)
        // The most recent are still known (refused), the first are forgotten (a whole burst).
        #expect(!limiter.decide("ip:199999", policy: "default", gcra).admitted)
        #expect(limiter.decide("ip:0", policy: "default", gcra).admitted)
    }

    @Test("a refused client that keeps asking is the most recent: a flood of fewer new names than the bound does not free it")
    func refusedStaysKnown() {
        let limiter = LocalRateLimiter(capacity: 1000)
        let gcra = GCRA(Configuration.RateLimit(perSecond: 1.0 / 3600, burst: 1))
        #expect(limiter.decide("ip:victim-or-attacker", policy: "default", gcra).admitted)
        for round in 0..<5 {
            for index in 0..<999 { _ = limiter.decide("ip:\(round)-\(index)", policy: "default", gcra) }
            #expect(!limiter.decide("ip:victim-or-attacker", policy: "default", gcra).admitted, "round \(round)")
        }
        #expect(limiter.clientCount == 1000)
        // Only `capacity` names unseen since its last request make it forgotten.
        for index in 0..<1000 { _ = limiter.decide("ip:last-\(index)", policy: "default", gcra) }
        #expect(limiter.decide("ip:victim-or-attacker", policy: "default", gcra).admitted)
    }

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
}
