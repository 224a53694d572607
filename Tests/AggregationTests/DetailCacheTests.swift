import Aggregation
import Testing

/// The process's cache of a resource's details (`details.cacheFor`, `details.cacheBytes`):
/// reused until they are too old, bounded by bytes, evicting the least recently used, and
/// keyed by identity. Through snapshots: `BatchedDetailsTests`.
@Suite("Detail cache: reuse for a while, a byte budget, least recently used first out")
struct DetailCacheTests {
    static func details(_ count: Int) -> JSON {
        DetailCache.compact(try! JSON(parsing: Array(#"{"taskCount":\#(count)}"#.utf8), keeping: .objects))
    }

    static func key(_ call: String, _ identity: Identity = .anonymous) -> DetailCache.Key {
        DetailCache.Key(identity: identity, call: call)
    }

    /// What an entry of `details` under `key` counts.
    static func cost(_ details: JSON, _ key: DetailCache.Key) -> Int {
        details.serialized.count + key.call.utf8.count + key.identity.digest.utf8.count + DetailCache.entryOverhead
    }

    @Test("details are reused while younger than maxAge, then no more")
    func expiry() {
        let clock = ManualClock()
        let cache = DetailCache(maxAge: .seconds(10), budget: 1 << 20, clock: clock.read)
        cache.keep(Self.details(1), for: Self.key("/g/1"))
        clock.advance(by: .milliseconds(9_999))
        #expect(cache.details(for: Self.key("/g/1")) == Self.details(1))
        clock.advance(by: .milliseconds(1))
        #expect(cache.details(for: Self.key("/g/1")) == nil)
        #expect(cache.keptCount == 0, "an expired entry found is dropped")
        #expect(cache.keptBytes == 0)
    }

    @Test("one identity never reads another's details of the same call")
    func perIdentity() {
        let cache = DetailCache(maxAge: .seconds(10), budget: 1 << 20)
        let alice = Identity(digest: "a11ce")
        cache.keep(Self.details(1), for: Self.key("/g/1", alice))
        #expect(cache.details(for: Self.key("/g/1", alice)) == Self.details(1))
        #expect(cache.details(for: Self.key("/g/1", Identity(digest: "b0b"))) == nil)
        #expect(cache.details(for: Self.key("/g/1")) == nil)
    }

    @Test("beyond the budget the least recently used go first: a read counts as a use")
    func leastRecentlyUsed() {
        let entry = Self.cost(Self.details(1), Self.key("/g/1"))
        let cache = DetailCache(maxAge: .seconds(60), budget: 2 * entry)
        cache.keep(Self.details(1), for: Self.key("/g/1"))
        cache.keep(Self.details(2), for: Self.key("/g/2"))
        #expect(cache.details(for: Self.key("/g/1")) != nil)
        cache.keep(Self.details(3), for: Self.key("/g/3"))
        #expect(cache.details(for: Self.key("/g/2")) == nil, "/g/2 was used longest ago")
        #expect(cache.details(for: Self.key("/g/1")) == Self.details(1))
        #expect(cache.details(for: Self.key("/g/3")) == Self.details(3))
        #expect(cache.keptBytes == 2 * entry)
    }

    @Test("10,000 distinct calls: the kept bytes never pass the budget, and the order stays as small as the entries")
    func bounded() {
        let entry = Self.cost(Self.details(1), Self.key("/g/10000"))
        let cache = DetailCache(maxAge: .seconds(60), budget: 50 * entry)
        for index in 10_000..<20_000 {
            cache.keep(Self.details(1), for: Self.key("/g/\(index)"))
            _ = cache.details(for: Self.key("/g/\(index - 1)"))
            #expect(cache.keptBytes <= 50 * entry)
        }
        #expect(cache.keptCount == 50)
        #expect(cache.details(for: Self.key("/g/19999")) != nil)
        #expect(cache.orderSlots <= 2 * 50 + 17)
    }

    @Test("details larger than the whole budget are not kept; nor, then, what they replace")
    func oversized() {
        let cache = DetailCache(maxAge: .seconds(60), budget: Self.cost(Self.details(1), Self.key("/g/1")))
        cache.keep(Self.details(1), for: Self.key("/g/1"))
        cache.keep(Self.details(123_456_789), for: Self.key("/g/1"))
        #expect(cache.keptCount == 0)
        #expect(cache.keptBytes == 0)
    }

    @Test("a kept part of a larger body is copied into a text of its own, so it holds only its own bytes")
    func compactCopy() throws {
        let body = try JSON(parsing: Array(#"{"result":[{"id":"a","n":1},{"id":"b","n":2}],"padding":"\#(String(repeating: "x", count: 4096))"}"#.utf8), keeping: .objects)
        let item = try #require(body["result"]?.arrayValue?.first)
        let copy = DetailCache.compact(item)
        guard case .raw(let text) = copy else {
            Issue.record("expected a kept text, got \(copy)")
            return
        }
        #expect(Array(text.text) == Array(#"{"id":"a","n":1}"#.utf8))
        #expect(copy == item)
    }
}
