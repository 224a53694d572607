import Aggregation
import UpstreamClient
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

    @Test("an expired entry with validators stays, to be revalidated; a 304 makes it fresh again")
    func staleUntilRevalidated() throws {
        let clock = ManualClock()
        let cache = DetailCache(maxAge: .seconds(10), budget: 1 << 20, clock: clock.read)
        let validators = try #require(Validators(entityTag: #""v1""#, lastModified: nil))
        cache.keep(Self.details(1), for: Self.key("/g/1"), answer: AnswerHeaders(validators: validators))
        cache.keep(Self.details(2), for: Self.key("/g/2"))
        clock.advance(by: .seconds(10))
        guard case .stale(let details, let sent) = cache.lookup(Self.key("/g/1")) else {
            Issue.record("an expired entry with an ETag is kept to revalidate")
            return
        }
        #expect(details == Self.details(1) && sent == validators)
        #expect(sent.conditionalHeaders.map { "\($0.0): \($0.1)" } == [#"If-None-Match: "v1""#])
        guard case .missing = cache.lookup(Self.key("/g/2")) else {
            Issue.record("an expired entry without validators is dropped")
            return
        }
        cache.refresh(Self.key("/g/1"), with: AnswerHeaders(validators: validators))
        #expect(cache.details(for: Self.key("/g/1")) == Self.details(1), "fresh for another 10 s")
        clock.advance(by: .seconds(10))
        #expect(cache.details(for: Self.key("/g/1")) == nil)
    }

    @Test("cacheFor: upstream reads Cache-Control as a private cache; hostile numbers are clamped, never trusted")
    func upstreamFreshness() throws {
        let clock = ManualClock()
        let cache = DetailCache(freshness: .upstream, budget: 1 << 20, clock: clock.read)
        let tag = try #require(Validators(entityTag: #""t""#, lastModified: nil))
        /// Whether details kept with `cacheControl` (and `age`) are fresh `after` that long, or kept at all.
        func state(_ cacheControl: String?, age: String? = nil, validators: Validators? = nil, after: Duration) -> String {
            let key = Self.key("/g/\(cacheControl ?? "none")-\(age ?? "")-\(after)")
            cache.keep(Self.details(1), for: key, answer: AnswerHeaders(validators: validators, cacheControl: cacheControl, age: age))
            clock.advance(by: after)
            defer { clock.advance(by: .zero - after) }
            return switch cache.lookup(key) {
            case .fresh: "fresh"
            case .stale: "stale"
            case .missing: "missing"
            }
        }
        #expect(state("max-age=60", after: .seconds(59)) == "fresh")
        #expect(state("max-age=60", after: .seconds(60)) == "missing", "expired, no validator: dropped")
        #expect(state("max-age=60", validators: tag, after: .seconds(60)) == "stale")
        #expect(state("public, max-age=60", age: "50", after: .seconds(11)) == "missing", "Age counts")
        #expect(state("Max-Age = \"60\"", after: .seconds(59)) == "fresh", "names are case-insensitive; a quoted value is tolerated")
        #expect(state("no-cache, max-age=60", validators: tag, after: .zero) == "stale", "no-cache: revalidated on every use")
        #expect(state("no-store, max-age=60", validators: tag, after: .zero) == "missing", "no-store: never kept")
        #expect(state(nil, validators: tag, after: .zero) == "stale", "no max-age: revalidated on every use")
        #expect(state(nil, after: .zero) == "missing", "nothing to revalidate with, fresh for no time: not kept")
        for hostile in ["max-age=18446744073709551616", "max-age=99999999999999999999999999"] {
            #expect(state(hostile, after: .seconds(86_400 * 365)) == "fresh", "\(hostile): at most 2^31 s")
        }
        for hostile in ["max-age=-1", "max-age=1e308", "max-age=inf", "max-age=nan", "max-age=", "max-age", "=", ",,,", "max-age=0x10"] {
            #expect(state(hostile, validators: tag, after: .zero) == "stale", "\(hostile): no freshness")
        }
        #expect(state("max-age=60", age: "18446744073709551616", validators: tag, after: .zero) == "stale", "a huge Age: stale at once")
        #expect(state("max-age=60", age: "-5", after: .seconds(59)) == "fresh", "an Age that is no number is ignored")
    }

    @Test("a 304 that says nothing of freshness keeps the max-age its answer said; repeated lines are one list")
    func freshnessKeptAndCombined() throws {
        let clock = ManualClock()
        let cache = DetailCache(freshness: .upstream, budget: 1 << 20, clock: clock.read)
        let tag = try #require(Validators(entityTag: #""t""#, lastModified: nil))
        cache.keep(Self.details(1), for: Self.key("/g/1"), answer: AnswerHeaders(validators: tag, cacheControl: "max-age=60"))
        clock.advance(by: .seconds(60))
        guard case .stale = cache.lookup(Self.key("/g/1")) else { Issue.record("expired after its max-age"); return }
        cache.refresh(Self.key("/g/1"), with: AnswerHeaders(validators: tag))
        clock.advance(by: .seconds(59))
        #expect(cache.details(for: Self.key("/g/1")) != nil, "fresh for its answer's max-age again")

        // A proxy's `Cache-Control: no-store` line after the origin's max-age: one list, and no-store wins.
        let twoLines = UpstreamResponse(status: 200, headers: [("Cache-Control", "max-age=3600"), ("cache-control", "no-store")], body: [])
        cache.keep(Self.details(2), for: Self.key("/g/2"), answer: AnswerHeaders(of: twoLines))
        guard case .missing = cache.lookup(Self.key("/g/2")) else { Issue.record("no-store on a second line keeps nothing"); return }
        // max-age twice: stale (RFC 9111 §4.2.1).
        cache.keep(Self.details(3), for: Self.key("/g/3"), answer: AnswerHeaders(validators: tag, cacheControl: "max-age=60, max-age=3600"))
        guard case .stale = cache.lookup(Self.key("/g/3")) else { Issue.record("a repeated max-age is stale"); return }
    }

    @Test("validators that cannot tell answers apart are not kept: *, empty, a list, over 1 KiB, a date within the answer's second")
    func validatorsThatTellAnswersApart() {
        func validators(_ headers: [(String, String)]) -> Validators? {
            Validators(of: UpstreamResponse(status: 200, headers: headers, body: []))
        }
        let date = "Sat, 28 Nov 2026 10:00:05 GMT"
        #expect(validators([("ETag", #""a""#)])?.entityTag == #""a""#)
        #expect(validators([("etag", #"W/"a""#)])?.conditionalHeaders.first?.1 == #"W/"a""#, "a weak tag goes back as it came")
        for refused in ["", "*", "\"a\", \"b\"", "\"" + String(repeating: "x", count: 1100) + "\""] {
            #expect(validators([("ETag", refused)]) == nil, "ETag \(refused.prefix(12))")
        }
        #expect(validators([("Last-Modified", "Sat, 28 Nov 2026 10:00:00 GMT"), ("Date", date)])?.lastModified != nil)
        #expect(validators([("Last-Modified", date), ("Date", date)]) == nil, "changed within the second it was answered")
        #expect(validators([("Last-Modified", date)]) == nil, "no Date to tell")
        let both = validators([("ETag", #""a""#), ("Last-Modified", "Sat, 28 Nov 2026 10:00:00 GMT"), ("Date", date)])
        #expect(both?.conditionalHeaders.map(\.0) == ["If-None-Match"], "the tag says all")
    }

    @Test("kept answers count what their parsed trees hold, not only their bodies")
    func keptAnswersCountTrees() throws {
        let answers = KeptAnswers(budget: 1 << 20)
        let tag = try #require(Validators(entityTag: #""t""#, lastModified: nil))
        let body = Array(("[" + (0..<1000).map { #"{"id":"item-number-\#($0)","n":\#($0)}"# }.joined(separator: ",") + "]").utf8)
        answers.keep(try JSON(parsing: body), validators: tag, for: KeptAnswers.Key(identity: .anonymous, call: "/pages/1"), bodyBytes: body.count)
        #expect(answers.keptBytes > 3 * body.count, "a tree of 1,000 objects holds several times its \(body.count) bytes: \(answers.keptBytes)")
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
