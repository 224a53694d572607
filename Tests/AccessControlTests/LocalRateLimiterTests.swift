import Testing
import TestThreads
@testable import AccessControl
import TributaryConfiguration

/// The process's limiter alone (issue 35, "Bounded by memory, in O(1)"): at most its
/// capacity of buckets, each new one in the place of the least recently seen, clients keyed
/// by their bytes.
@Suite("The local rate limiter: its bound, its evictions, names by their bytes")
struct LocalRateLimiterTests {
    @Test("200,000 distinct clients leave the limiter at its bound, each new one evicting exactly one bucket", .ownThread)
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

    @Test("client names are keyed by their bytes: the Kelvin sign and K, NFC and NFD é, are buckets of their own")
    func namesByBytes() {
        let limiter = LocalRateLimiter(capacity: 1000)
        let gcra = GCRA(Configuration.RateLimit(perSecond: 1.0 / 3600, burst: 1))
        for name in ["sub:K", "sub:\u{212A}", "sub:\u{E9}", "sub:e\u{301}"] {
            #expect(limiter.decide(name, policy: "default", gcra).admitted, "\(name): its own bucket, its own burst")
            #expect(!limiter.decide(name, policy: "default", gcra).admitted, "\(name): its bucket is empty now")
        }
        #expect(limiter.clientCount == 4)
        // The same name under another policy is another bucket.
        #expect(limiter.decide("sub:K", policy: "other", gcra).admitted)
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
}
