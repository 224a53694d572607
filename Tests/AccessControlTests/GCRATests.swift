import Testing
@testable import AccessControl
import TributaryConfiguration

/// The generic cell rate algorithm alone: its arithmetic, and its saturation at the ends of
/// the settings' ranges and of what a Redis reply may claim.
@Suite("GCRA: bursts, intervals, and numbers at their extremes")
struct GCRATests {
    @Test("GCRA: burst at once, one per interval after, the whole burst back after a pause")
    func gcra() {
        let gcra = GCRA(Configuration.RateLimit(perSecond: 10, burst: 3))
        var tat: Int64 = 0
        let now: Int64 = 1_000_000
        #expect((0..<3).map { _ in gcra.decide(tat: &tat, now: now).admitted } == [true, true, true])
        let refused = gcra.decide(tat: &tat, now: now)
        #expect(!refused.admitted && refused.retryAfterSeconds == 1)
        #expect(gcra.decide(tat: &tat, now: now + 100_000).admitted)
        #expect(!gcra.decide(tat: &tat, now: now + 100_000).admitted)
        let later = gcra.decide(tat: &tat, now: now + 10_000_000)
        #expect(later.admitted && later.remaining == 2)
    }

    @Test("GCRA at its settings' extremes and with any TAT a Redis reply may claim: decisions, never a trap")
    func gcraExtremes() {
        let limits = [
            Configuration.RateLimit(perSecond: 1.0 / 3600, burst: 1_000_000), Configuration.RateLimit(perSecond: 1_000_000, burst: 1),
            Configuration.RateLimit(perSecond: 1e-300, burst: .max), Configuration.RateLimit(perSecond: .infinity, burst: 1),
            Configuration.RateLimit(perSecond: .nan, burst: 3_000_000_000),
        ]
        for limit in limits {
            let gcra = GCRA(limit)
            #expect(gcra.interval >= 1 && gcra.capacity >= gcra.interval, "\(limit)")
            for start in [0, -1, Int64.max, Int64.min, 1 << 53] {
                var tat = start
                for now in [0, Int64.max, 1 << 62] { _ = gcra.decide(tat: &tat, now: now) }
            }
            for ahead in [0, -1, Int64.max, Int64.min, Int64.max - 1] {
                let refused = gcra.decision(admitted: false, ahead: ahead)
                #expect(refused.retryAfterSeconds >= 1 && refused.remaining == 0, "\(limit), ahead \(ahead)")
                #expect(gcra.decision(admitted: true, ahead: ahead).remaining >= 0, "\(limit), ahead \(ahead)")
            }
        }
    }
}
