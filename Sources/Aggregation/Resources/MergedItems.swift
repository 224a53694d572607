/// The document a list snapshot builds as its items' details come in: each item merged with
/// its details, marked or dropped under ``ListResource/ItemFailurePolicy``, in list order.
/// Both fan-outs, a call per item (``ListResource/snapshotPublisher(trace:)``) and batch
/// calls (``ListResource/batchedSnapshotPublisher(trace:)``), settle their items here, so the
/// same outcomes make the same document, byte for byte, whichever way the details came.
struct MergedItems {
    /// Each item merged (or marked), in list order; `.null` until it is settled, and for an
    /// item dropped. The answer is this array itself unless an item was dropped: an array of
    /// optionals cost a copy of every item (a retain, and a release later) into a second array.
    private var merged: [JSON]
    /// The indexes of the items dropped, left out of the answer.
    private var dropped: [Int] = []
    private var settledCount = 0

    /// Room for `count` items, none settled.
    init(count: Int) {
        merged = Array(repeating: .null, count: count)
    }

    /// Whether every item is settled.
    var isComplete: Bool { settledCount == merged.count }

    /// Records item `index`'s outcome; `item` is the listed item, marked when its details
    /// failed. Returns the error that fails the whole snapshot (``ListResource/ItemFailurePolicy/fail``),
    /// else nil. `result` is handed over: its value moves in (a copy cost a retain, and a
    /// release when the result was destroyed).
    mutating func settle(
        _ index: Int, _ result: consuming Result<JSON?, ResourceError>, item: @autoclosure () -> JSON,
        policy: ListResource.ItemFailurePolicy
    ) -> ResourceError? {
        settledCount += 1
        switch consume result {
        case .success(let value?):
            merged[index] = value
        case .success(nil):
            dropped.append(index)
        case .failure(let error):
            switch policy {
            case .mark: merged[index] = ListResource.marked(item(), with: error)
            case .drop: dropped.append(index)
            case .fail: return error
            }
        }
        return nil
    }

    /// The answer so far, for a progressive first document: the settled items as in
    /// ``document``, and each item still waiting as `listed` has it, marked
    /// (``ListResource/pending(_:marker:)``).
    func partialDocument(listed: [JSON], marker: String) -> JSON {
        let left = Set(dropped)
        var items: [JSON] = []
        items.reserveCapacity(merged.count - left.count)
        for index in merged.indices where !left.contains(index) {
            if case .null = merged[index] {
                items.append(ListResource.pending(listed[index], marker: marker))
            } else {
                items.append(merged[index])
            }
        }
        return .array(items)
    }

    /// The answer: the settled items in list order, without those dropped.
    var document: JSON {
        guard !dropped.isEmpty else { return .array(merged) }
        let left = Set(dropped)
        return .array(merged.indices.filter { !left.contains($0) }.map { merged[$0] })
    }
}
