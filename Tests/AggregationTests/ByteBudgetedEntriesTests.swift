import Aggregation
import Testing

/// The store behind the stale-if-error documents and the detail cache: values by key under a
/// byte budget, the oldest (kept, or touched, longest ago) evicted first. Through its owners:
/// `StaleSnapshotsTests`, `DetailCacheTests`.
@Suite("Byte-budgeted entries: the oldest out first, never past the budget")
struct ByteBudgetedEntriesTests {
    @Test("keeping beyond the budget evicts the entries kept longest ago, until the rest fit")
    func evictsOldestFirst() {
        var entries = ByteBudgetedEntries<String, Int>(budget: 300)
        for (index, key) in ["a", "b", "c"].enumerated() { entries.keep(index, for: key, bytes: 100) }
        entries.keep(3, for: "d", bytes: 150)
        #expect(entries["a"] == nil && entries["b"] == nil)
        #expect(entries["c"] == 2 && entries["d"] == 3)
        #expect(entries.bytes == 250 && entries.count == 2)
    }

    @Test("a touched entry is the newest: the others go before it")
    func touchMakesNewest() {
        var entries = ByteBudgetedEntries<String, Int>(budget: 300)
        for (index, key) in ["a", "b", "c"].enumerated() { entries.keep(index, for: key, bytes: 100) }
        entries.touch("a")
        entries.keep(3, for: "d", bytes: 100)
        #expect(entries["a"] == 0, "touched, so kept")
        #expect(entries["b"] == nil, "the oldest untouched one goes")
        entries.touch("missing")
        #expect(entries.count == 3)
    }

    @Test("a value larger than the budget is not kept, and the one it replaces is dropped")
    func largerThanBudget() {
        var entries = ByteBudgetedEntries<String, Int>(budget: 100)
        entries.keep(1, for: "a", bytes: 60)
        entries.keep(2, for: "a", bytes: 101)
        #expect(entries["a"] == nil)
        #expect(entries.bytes == 0 && entries.count == 0)
    }

    @Test("keeping a key again replaces its value and its bytes; a lower budget evicts at once")
    func replaceAndLowerBudget() {
        var entries = ByteBudgetedEntries<String, Int>(budget: 1_000)
        entries.keep(1, for: "a", bytes: 400)
        entries.keep(2, for: "b", bytes: 400)
        entries.keep(3, for: "a", bytes: 100)
        #expect(entries["a"] == 3 && entries.bytes == 500)
        entries.budget = 150
        #expect(entries["b"] == nil, "kept before a's replacement: older")
        #expect(entries["a"] == 3 && entries.bytes == 100)
    }

    @Test("a key kept and touched over and over does not grow the order")
    func orderStaysBounded() {
        var entries = ByteBudgetedEntries<Int, Int>(budget: 10_000)
        for round in 0..<10_000 {
            entries.keep(round, for: round % 5, bytes: 10)
            entries.touch((round + 1) % 5)
        }
        #expect(entries.count == 5)
        #expect(entries.orderSlots <= 2 * 5 + 17)
    }
}
