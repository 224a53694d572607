import Aggregation
import Testing

@Suite("Recency table: the least recently used entry goes first, in O(1)")
struct RecencyTableTests {
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
}
