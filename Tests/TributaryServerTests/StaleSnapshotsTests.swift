import Aggregation
import Testing
@testable import TributaryServer
import TestThreads

/// The process's store of last good documents (`staleIfError`), bounded by bytes: what it
/// keeps, what it evicts, and that its own bookkeeping stays bounded however it is used. End
/// to end, through a real worker: `StaleIfErrorTests`.
@Suite("Stale snapshots: a byte budget, evicting the documents fetched longest ago", .ownThread)
struct StaleSnapshotsTests {
    static func snapshot(_ bytes: Int) -> Snapshot {
        Snapshot(json: Array(repeating: UInt8(ascii: "1"), count: bytes))
    }

    /// The key of document `url` of resource `r`: its one parameter's value.
    static func key(_ url: String) -> SharingKey {
        SharingKey(resource: "r", parameters: ParameterValues(["u": url]), identity: .anonymous)
    }

    /// What a document of `bytes` JSON bytes at `url` of resource `r` counts.
    static func cost(_ bytes: Int, url: String) -> Int {
        bytes + key(url).canonicalText.utf8.count + StaleSnapshots.entryOverhead
    }

    @Test("10,000 distinct URLs: the kept bytes never pass the budget, and the newest documents are the ones kept")
    func manyURLs() {
        let budget = 50 * Self.cost(1000, url: "q0000")
        let store = StaleSnapshots(budget: budget)
        for index in 0..<10_000 {
            store.keep(Self.snapshot(1000), for: Self.key("q" + String(index + 10_000).dropFirst()))
            #expect(store.keptBytes <= budget)
        }
        #expect(store.keptCount == 50)
        #expect(store.latest(for: Self.key("q9999"), notOlderThan: .seconds(60)) != nil)
        #expect(store.latest(for: Self.key("q9950"), notOlderThan: .seconds(60)) != nil)
        #expect(store.latest(for: Self.key("q9949"), notOlderThan: .seconds(60)) == nil)
        #expect(store.orderSlots <= 2 * 50 + 17, "the order drops the places eviction passed")
    }

    @Test("a URL kept over and over replaces its document and its place: the order stays as small as the documents")
    func keptAgain() {
        let store = StaleSnapshots(budget: 10 * Self.cost(10, url: "a"))
        for _ in 0..<100_000 {
            for url in ["a", "b", "c"] { store.keep(Self.snapshot(10), for: Self.key(url)) }
        }
        #expect(store.keptCount == 3)
        #expect(store.keptBytes == 3 * Self.cost(10, url: "a"))
        #expect(store.orderSlots <= 2 * 3 + 17)
    }

    @Test("eviction follows fetching, not reading: the document fetched longest ago goes first, however recently it was read")
    func leastRecentlyFetched() {
        let store = StaleSnapshots(budget: 2 * Self.cost(100, url: "a"))
        store.keep(Self.snapshot(100), for: Self.key("a"))
        store.keep(Self.snapshot(100), for: Self.key("b"))
        #expect(store.latest(for: Self.key("a"), notOlderThan: .seconds(60)) != nil)
        store.keep(Self.snapshot(100), for: Self.key("c"))
        #expect(store.latest(for: Self.key("a"), notOlderThan: .seconds(60)) == nil)
        #expect(store.latest(for: Self.key("b"), notOlderThan: .seconds(60)) != nil)
        #expect(store.latest(for: Self.key("c"), notOlderThan: .seconds(60)) != nil)
    }

    @Test("a document larger than the whole budget is not kept, and the older one of its URL goes too")
    func tooLarge() {
        let store = StaleSnapshots(budget: Self.cost(100, url: "a"))
        store.keep(Self.snapshot(100), for: Self.key("a"))
        store.keep(Self.snapshot(101), for: Self.key("a"))
        #expect(store.latest(for: Self.key("a"), notOlderThan: .seconds(60)) == nil)
        #expect(store.keptBytes == 0)
    }

    @Test("a smaller budget (a reload) evicts at once what no longer fits, oldest first")
    func shrink() {
        let store = StaleSnapshots(budget: 4 * Self.cost(100, url: "a"))
        for url in ["a", "b", "c", "d"] { store.keep(Self.snapshot(100), for: Self.key(url)) }
        store.budget = 2 * Self.cost(100, url: "a")
        #expect(store.keptCount == 2)
        #expect(store.latest(for: Self.key("b"), notOlderThan: .seconds(60)) == nil)
        #expect(store.latest(for: Self.key("d"), notOlderThan: .seconds(60)) != nil)
    }
}
