/// A table of at most ``capacity`` entries that makes room for a new key by forgetting the
/// least recently used one, every operation in O(1): a dictionary from key to slot, and the
/// slots (in one array, reused when an entry is forgotten) linked from the most recently used
/// to the least by index, a doubly linked list threaded through the array: no node to
/// allocate or free, no sweep of the table ever. (swift-collections' `OrderedDictionary` would
/// keep the order, but removing its first key moves every other one: O(n).)
///
/// ```swift
/// var table = RecencyTable<String, Int>(capacity: 2)
/// table["a"] = 1; table["b"] = 2
/// _ = table["a"]          // a is now the most recent
/// table["c"] = 3          // full: b, the least recent, is forgotten
/// ```
///
/// The service's recent list resources and the rate limiter's buckets both keep one, each on
/// a hot path: it is `@inlinable`, so that the modules that use it specialize it for their
/// keys. The type is `public` for that alone, its members `package`: Swift 6.3.1 specializes
/// no `package` type's generic code in another module, `@inlinable` or not, and a generic
/// lookup cost a parameterized route's request some 900 instructions (Benchmarks/budgets.py).
public struct RecencyTable<Key: Hashable, Value> {
    @usableFromInline package let capacity: Int
    /// Entries forgotten to make room, since the table was made.
    @usableFromInline package internal(set) var evictions = 0

    @usableFromInline var slots: [Key: Int] = [:]
    @usableFromInline var entries: [Entry] = []
    /// The most and the least recently used slot (-1: empty).
    @usableFromInline var newest = -1
    @usableFromInline var oldest = -1
    /// Slots of entries removed (set to nil), reused before the array grows.
    @usableFromInline var freed: [Int] = []

    @usableFromInline
    struct Entry {
        @usableFromInline var key: Key
        @usableFromInline var value: Value
        /// The slots used just after and just before this one (-1: none).
        @usableFromInline var newer: Int
        @usableFromInline var older: Int

        @inlinable
        init(key: Key, value: Value, newer: Int, older: Int) {
            self.key = key
            self.value = value
            self.newer = newer
            self.older = older
        }
    }

    @inlinable
    package init(capacity: Int) {
        precondition(capacity >= 1, "a table holds at least one entry")
        self.capacity = capacity
    }

    @inlinable package var count: Int { slots.count }

    /// The value of `key`, which becomes the most recently used (reading counts as a use);
    /// setting it inserts it as the most recent, forgetting the least recent when full.
    @inlinable package subscript(key: Key) -> Value? {
        mutating get {
            guard let slot = slots[key] else { return nil }
            moveToFront(slot)
            return entries[slot].value
        }
        set {
            if let slot = slots[key] {
                if let newValue {
                    entries[slot].value = newValue
                    moveToFront(slot)
                } else {
                    remove(slot)
                }
                return
            }
            guard let newValue else { return }
            insert(key, newValue)
        }
    }

    @inlinable mutating func insert(_ key: Key, _ value: Value) {
        let entry = Entry(key: key, value: value, newer: -1, older: -1)
        let slot: Int
        if let free = freed.popLast() {
            slot = free
            entries[slot] = entry
        } else if entries.count < capacity {
            slot = entries.count
            entries.append(entry)
        } else {
            slot = oldest
            unlink(slot)
            slots[entries[slot].key] = nil
            evictions += 1
            entries[slot] = entry
        }
        slots[key] = slot
        linkAtFront(slot)
    }

    @inlinable mutating func remove(_ slot: Int) {
        unlink(slot)
        slots[entries[slot].key] = nil
        freed.append(slot)
    }

    @inlinable mutating func moveToFront(_ slot: Int) {
        guard slot != newest else { return }
        unlink(slot)
        linkAtFront(slot)
    }

    @inlinable mutating func unlink(_ slot: Int) {
        let (newer, older) = (entries[slot].newer, entries[slot].older)
        if newer >= 0 { entries[newer].older = older } else { newest = older }
        if older >= 0 { entries[older].newer = newer } else { oldest = newer }
        entries[slot].newer = -1
        entries[slot].older = -1
    }

    @inlinable mutating func linkAtFront(_ slot: Int) {
        entries[slot].older = newest
        entries[slot].newer = -1
        if newest >= 0 { entries[newest].newer = slot }
        newest = slot
        if oldest < 0 { oldest = slot }
    }

    /// The keys from the most recently used to the least (for tests).
    package var keysByRecency: [Key] {
        var keys: [Key] = []
        var slot = newest
        while slot >= 0 {
            keys.append(entries[slot].key)
            slot = entries[slot].older
        }
        return keys
    }
}
