/// The operations that turn one array into another, for ``JSONDiff``: by id when every item
/// of both carries one (see ``JSONDiff/itemIDs``), else index by index.
///
/// Two shortcuts first, for the common changes of a live list, which then cost one byte
/// comparison per item and nothing per id: arrays of one length whose differing items each
/// keep their id (or lack one alike) are patched in place there, as by id they would be; and
/// items equal at both ends are left out, only the window between diffed (one item added,
/// removed, or two swapped: a window of a few items).
///
/// By id, in three passes, each path valid after the operations before it:
/// 1. items whose id is gone are removed, last first (so each index is still the old one);
/// 2. the items left keep their places when they are in a longest run already in the new
///    order; every other one is moved, and every new item added, right before the next kept
///    item that follows it in the new order (in the new order, so those sharing a place end
///    up in order); current indices come from a Fenwick tree over the places, so the whole
///    pass costs O(n log n), not O(n) per operation;
/// 3. every item that was there before is patched in place, at its new index.
///
/// Index by index: items at the same index are patched in place, then the new array's extra
/// items added at the end or the old one's extra items removed from the end.
struct JSONArrayDiff {
    let diff: JSONDiff
    /// The windows of the two arrays being diffed, and where they start in both.
    let old: [JSON]
    let new: [JSON]
    let offset: Int
    let pointer: String

    /// Appends the operations that turn `old`, the array at `pointer`, into `new`.
    static func append(
        from old: [JSON], to new: [JSON], diff: JSONDiff, at pointer: String, to operations: inout [JSONPatchOperation]
    ) {
        if old.count == new.count, let changed = changedInPlace(old, new, diff: diff) {
            for index in changed {
                diff.append(from: old[index], to: new[index], at: JSONPointer.appending(index: index, to: pointer), to: &operations)
            }
            return
        }
        let shorter = min(old.count, new.count)
        var prefix = 0
        while prefix < shorter, JSONDiff.identical(old[prefix], new[prefix]) { prefix += 1 }
        var suffix = 0
        while suffix < shorter - prefix, JSONDiff.identical(old[old.count - 1 - suffix], new[new.count - 1 - suffix]) { suffix += 1 }
        let window = JSONArrayDiff(
            diff: diff, old: Array(old[prefix..<old.count - suffix]), new: Array(new[prefix..<new.count - suffix]), offset: prefix,
            pointer: pointer)
        if let ids = window.itemIDs() {
            window.appendByID(oldIDs: ids.old, newIDs: ids.new, to: &operations)
        } else {
            window.appendByIndex(to: &operations)
        }
    }

    /// The indices where `old` and `new` (of one length) differ, when each item there has the
    /// same id in both, or none in either, at the first id path: what diffing by id would
    /// patch in place. Nil otherwise.
    private static func changedInPlace(_ old: [JSON], _ new: [JSON], diff: JSONDiff) -> [Int]? {
        var changed: [Int] = []
        for index in old.indices where !JSONDiff.identical(old[index], new[index]) {
            if let path = diff.itemIDs.first {
                let oldID = path.value(in: old[index])
                let newID = path.value(in: new[index])
                switch (oldID, newID) {
                case (nil, nil): break
                case (let oldID?, let newID?) where JSONDiff.identical(oldID, newID): break
                default: return nil
                }
            }
            changed.append(index)
        }
        return changed
    }

    /// The pointer to the item at `index` of the window.
    private func path(_ index: Int) -> String {
        JSONPointer.appending(index: offset + index, to: pointer)
    }

    // MARK: - Index by index

    private func appendByIndex(to operations: inout [JSONPatchOperation]) {
        let common = min(old.count, new.count)
        for index in 0..<common {
            diff.append(from: old[index], to: new[index], at: path(index), to: &operations)
        }
        for index in common..<new.count {
            operations.append(.add(path: path(index), value: new[index]))
        }
        for index in (common..<old.count).reversed() {
            operations.append(.remove(path: path(index)))
        }
    }

    // MARK: - By id

    /// An item's id: a string or a number (by its text), as found at one of the id paths.
    private enum ItemID: Hashable {
        case string(String)
        case number(String)

        init?(_ value: JSON?) {
            switch value {
            case .string(let text): self = .string(text)
            case .number(let text): self = .number(text)
            default: return nil
            }
        }
    }

    /// Each item's id, in both arrays, at the first id path where every item has one and no
    /// two items of the same array share one; nil when there is none such.
    private func itemIDs() -> (old: [ItemID], new: [ItemID])? {
        guard !old.isEmpty || !new.isEmpty else { return nil }
        for path in diff.itemIDs {
            guard let oldIDs = Self.ids(of: old, at: path), let newIDs = Self.ids(of: new, at: path) else { continue }
            return (oldIDs, newIDs)
        }
        return nil
    }

    private static func ids(of items: [JSON], at path: JSONPath) -> [ItemID]? {
        var ids: [ItemID] = []
        ids.reserveCapacity(items.count)
        var seen = Set<ItemID>(minimumCapacity: items.count)
        for item in items {
            guard let id = ItemID(path.value(in: item)), seen.insert(id).inserted else { return nil }
            ids.append(id)
        }
        return ids
    }

    private func appendByID(oldIDs: [ItemID], newIDs: [ItemID], to operations: inout [JSONPatchOperation]) {
        var newIndex: [ItemID: Int] = [:]
        newIndex.reserveCapacity(newIDs.count)
        for (index, id) in newIDs.enumerated() { newIndex[id] = index }

        // 1. Removals, last first.
        for index in oldIDs.indices.reversed() where newIndex[oldIDs[index]] == nil {
            operations.append(.remove(path: path(index)))
        }
        // The items kept, in their old order: where each was, and where it goes.
        var keptOld: [Int] = []
        var keptTarget: [Int] = []
        for (index, id) in oldIDs.enumerated() {
            guard let target = newIndex[id] else { continue }
            keptOld.append(index)
            keptTarget.append(target)
        }
        // For each new index, the kept item that goes there (its place in `keptOld`), if any.
        var keptAt = [Int?](repeating: nil, count: newIDs.count)
        for (kept, target) in keptTarget.enumerated() { keptAt[target] = kept }

        // 2. Moves and additions, unless every kept item is in order and nothing is new.
        let inOrder = keptTarget.count == newIDs.count && keptTarget.enumerated().allSatisfy { $0.offset == $0.element }
        if !inOrder { appendPlacements(keptTarget: keptTarget, keptAt: keptAt, to: &operations) }

        // 3. The items that were there before, patched in place.
        for (target, kept) in keptAt.enumerated() {
            guard let kept else { continue }
            diff.append(from: old[keptOld[kept]], to: new[target], at: path(target), to: &operations)
        }
    }

    /// Pass 2: with the removals done, the array is the kept items in their old order
    /// (`keptTarget[k]` is where item `k` goes); moves and additions make it the new order.
    private func appendPlacements(keptTarget: [Int], keptAt: [Int?], to operations: inout [JSONPatchOperation]) {
        let staying = Self.longestIncreasingRun(keptTarget)
        // Each place an item can be at, ranked in the final order: a kept item's own place
        // (left only by movers), and, for each item moved or added, the place right before its
        // anchor (the next staying item in the new order, or the end), those of one anchor in
        // the new order.
        var anchorOf = [Int](repeating: keptTarget.count, count: keptAt.count)
        var nextStaying = keptTarget.count
        for target in keptAt.indices.reversed() {
            if let kept = keptAt[target], staying[kept] {
                nextStaying = kept
            } else {
                anchorOf[target] = nextStaying
            }
        }
        var placedBefore = [[Int]](repeating: [], count: keptTarget.count + 1)
        for target in keptAt.indices where !(keptAt[target].map { staying[$0] } ?? false) {
            placedBefore[anchorOf[target]].append(target)
        }
        var ownRank = [Int](repeating: 0, count: keptTarget.count)
        var placedRank = [Int](repeating: 0, count: keptAt.count)
        var rank = 0
        for anchor in 0...keptTarget.count {
            for target in placedBefore[anchor] {
                placedRank[target] = rank
                rank += 1
            }
            if anchor < keptTarget.count {
                ownRank[anchor] = rank
                rank += 1
            }
        }
        var places = PlaceCounts(count: rank)
        for kept in keptTarget.indices { places.insert(ownRank[kept]) }

        for target in keptAt.indices {
            if let kept = keptAt[target] {
                guard !staying[kept] else { continue }
                let from = places.count(before: ownRank[kept])
                places.remove(ownRank[kept])
                let to = places.count(before: placedRank[target])
                places.insert(placedRank[target])
                if from != to {
                    operations.append(.move(from: path(from),
                                            path: path(to)))
                }
            } else {
                let to = places.count(before: placedRank[target])
                places.insert(placedRank[target])
                operations.append(.add(path: path(to), value: new[target]))
            }
        }
    }

    /// Which of `values` (distinct) form a longest strictly increasing subsequence: patience
    /// sorting, O(n log n).
    static func longestIncreasingRun(_ values: [Int]) -> [Bool] {
        var tails: [Int] = []  // index into values of the smallest tail of each run length
        var previous = [Int](repeating: -1, count: values.count)
        for (index, value) in values.enumerated() {
            var low = 0
            var high = tails.count
            while low < high {
                let middle = (low + high) / 2
                if values[tails[middle]] < value { low = middle + 1 } else { high = middle }
            }
            if low > 0 { previous[index] = tails[low - 1] }
            if low == tails.count { tails.append(index) } else { tails[low] = index }
        }
        var inRun = [Bool](repeating: false, count: values.count)
        var index = tails.last ?? -1
        while index >= 0 {
            inRun[index] = true
            index = previous[index]
        }
        return inRun
    }
}

/// Which of `count` ranked places hold an item, and how many held places come before one:
/// a Fenwick tree, O(log n) each.
private struct PlaceCounts {
    private var tree: [Int]

    init(count: Int) {
        tree = [Int](repeating: 0, count: count + 1)
    }

    mutating func insert(_ place: Int) { add(1, at: place) }
    mutating func remove(_ place: Int) { add(-1, at: place) }

    /// Held places ranked before `place`.
    func count(before place: Int) -> Int {
        var total = 0
        var index = place
        while index > 0 {
            total += tree[index]
            index -= index & -index
        }
        return total
    }

    private mutating func add(_ delta: Int, at place: Int) {
        var index = place + 1
        while index < tree.count {
            tree[index] += delta
            index += index & -index
        }
    }
}
