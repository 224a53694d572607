/// Values kept by key under a budget of bytes, the oldest evicted first: the store behind
/// the stale-if-error documents (oldest = kept longest ago) and the detail cache (oldest =
/// used longest ago, as a read ``touch(_:)``es its entry). Each value counts the bytes its
/// keeper says (its text, its key's, an overhead); a value larger than the whole budget is
/// not kept. Not synchronized: its owner keeps it under a lock.
///
/// ```swift
/// var entries = ByteBudgetedEntries<String, JSON>(budget: 1 << 20)
/// entries.keep(document, for: "/groups", bytes: 2_048)   // evicts the oldest beyond the budget
/// entries.touch("/groups")                                 // now the newest
/// ```
public struct ByteBudgetedEntries<Key: Hashable, Value> {
    private struct Entry {
        let value: Value
        /// Its place in ``order``: one matching no entry's stamp is a place left behind.
        var stamp: UInt64
        let bytes: Int
    }

    /// Bytes the entries may count; lowering it evicts at once what no longer fits.
    public var budget: Int {
        didSet { evictBeyondBudget() }
    }
    /// Bytes the entries count now (at most ``budget``).
    public private(set) var bytes = 0
    private var entries: [Key: Entry] = [:]
    /// Keys oldest first from `orderHead`, each with the stamp of the keep or touch that put
    /// it there: a key kept or touched again leaves its older place behind, skipped as its
    /// stamp no longer matches and dropped once places outnumber entries (``compactOrder()``),
    /// so a key used over and over does not grow the order.
    private var order: [(key: Key, stamp: UInt64)] = []
    private var orderHead = 0
    private var nextStamp: UInt64 = 0

    public init(budget: Int) {
        self.budget = budget
    }

    /// Entries kept now.
    public var count: Int { entries.count }

    /// Places the order holds now, those left behind included (about twice ``count`` at
    /// most, plus a few).
    public var orderSlots: Int { order.count - orderHead }

    public subscript(key: Key) -> Value? { entries[key]?.value }

    /// Keeps `value` for `key`, counting `bytes`, as the newest, in place of what it had; then
    /// evicts the oldest until the rest fit. A value larger than the budget is not kept (nor the
    /// one it replaces).
    public mutating func keep(_ value: Value, for key: Key, bytes: Int) {
        remove(key)
        if bytes <= budget {
            entries[key] = Entry(value: value, stamp: stamp(key), bytes: bytes)
            self.bytes += bytes
            evictBeyondBudget()
        }
        compactOrder()
    }

    /// Makes `key`'s entry the newest, the last to be evicted.
    public mutating func touch(_ key: Key) {
        guard let index = entries.index(forKey: key) else { return }
        let newest = stamp(key)
        entries.values[index].stamp = newest
        compactOrder()
    }

    /// `key`'s value, a read that counts as a use, with one lookup: its entry is made the
    /// newest unless it is among the newest half already. The order is then least recently
    /// used within half the entries, and a store read over and over in the same order (a
    /// refresh's calls, every refresh) does not stamp, append and compact on every read.
    public mutating func use(_ key: Key) -> Value? {
        guard let index = entries.index(forKey: key) else { return nil }
        if nextStamp - entries.values[index].stamp >= UInt64(entries.count / 2) {
            let newest = stamp(key)
            entries.values[index].stamp = newest
            compactOrder()
        }
        return entries.values[index].value
    }

    public mutating func remove(_ key: Key) {
        if let entry = entries.removeValue(forKey: key) { bytes -= entry.bytes }
    }

    private mutating func stamp(_ key: Key) -> UInt64 {
        nextStamp += 1
        order.append((key, nextStamp))
        return nextStamp
    }

    /// The stamp of `key`'s entry, read in place (`entries[key]?.stamp` copied the whole
    /// entry, its value's references retained and released, for one number).
    private func stampOf(_ key: Key) -> UInt64? {
        entries.index(forKey: key).map { entries.values[$0].stamp }
    }

    /// Evicts the oldest entries until the rest fit the budget.
    private mutating func evictBeyondBudget() {
        while bytes > budget, orderHead < order.count {
            let (oldest, stamp) = order[orderHead]
            orderHead += 1
            if stampOf(oldest) == stamp { remove(oldest) }
        }
    }

    /// Drops the places no entry holds any more: those eviction passed, once they are as many
    /// as the rest, and places left behind, once there are more than twice as many places as
    /// entries. Each place is dropped once: keeping and touching stay O(1) amortized.
    private mutating func compactOrder() {
        let slots = order.count - orderHead
        if slots > 2 * entries.count + 16 {
            order = order[orderHead...].filter { stampOf($0.key) == $0.stamp }
            orderHead = 0
        } else if orderHead > 16 && orderHead >= slots {
            order.removeFirst(orderHead)
            orderHead = 0
        }
    }
}
