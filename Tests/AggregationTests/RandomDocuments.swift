import Aggregation
import HTTPCore

/// Random documents and random changes to them, from a seed (SplitMix64), for the diff's
/// property tests: lists of items with ids that are strings or numbers, now and then repeated
/// or missing, nested objects and arrays, member names that need escaping in a JSON Pointer,
/// strings that differ only in their Unicode normalization.
struct RandomDocuments {
    private var random: SplitMix64

    init(seed: Int) {
        random = SplitMix64(state: UInt64(bitPattern: Int64(seed)) &+ SplitMix64.gamma)
    }

    mutating func next() -> UInt64 { random.next() }

    mutating func int(_ range: ClosedRange<Int>) -> Int {
        range.lowerBound + Int(next() % UInt64(range.count))
    }

    mutating func chance(_ percent: Int) -> Bool { int(0...99) < percent }

    mutating func pick<T>(_ choices: [T]) -> T { choices[int(0...choices.count - 1)] }

    static let names = ["id", "name", "count", "tags", "meta", "a/b", "~x", "", "é", "e\u{301}", "\u{212A}", "K", "nested"]
    static let strings = ["", "x", "Grüße \"quoted\" \\ back ✓", "é", "e\u{301}", "line\nbreak", "\u{2028}", "1", "swift"]

    mutating func scalar() -> JSON {
        switch int(0...5) {
        case 0: .null
        case 1: .bool(chance(50))
        case 2: .integer(int(-5...1000))
        case 3: .number(pick(["1.50", "-0.5", "1e3", "0"]))
        default: .string(pick(Self.strings))
        }
    }

    mutating func value(depth: Int = 0) -> JSON {
        guard depth < 3, chance(40) else { return scalar() }
        if chance(50) {
            return .array((0..<int(0...4)).map { _ in value(depth: depth + 1) })
        }
        var members: [(key: String, value: JSON)] = []
        for _ in 0..<int(0...4) {
            let key = pick(Self.names)
            // A repeated name now and then: such an object is replaced whole.
            if members.contains(where: { $0.key.utf8.elementsEqual(key.utf8) }) && !chance(10) { continue }
            members.append((key, value(depth: depth + 1)))
        }
        return .object(members)
    }

    /// An id: a string or a number, from a small range so that `7` and `"7"` both occur.
    mutating func id() -> JSON {
        chance(50) ? .integer(int(0...400)) : .string("g\(int(0...400))")
    }

    mutating func item(depth: Int = 0) -> JSON {
        var members: [(key: String, value: JSON)] = []
        if !chance(3) { members.append(("id", id())) }
        members.append(("name", .string(pick(Self.strings))))
        members.append(("count", .integer(int(0...50))))
        if depth < 1, chance(40) { members.append(("tags", .array((0..<int(0...4)).map { _ in item(depth: depth + 1) }))) }
        if chance(30) { members.append(("meta", value(depth: 1))) }
        return .object(members)
    }

    mutating func list() -> [JSON] {
        (0..<int(0...30)).map { _ in item() }
    }

    /// `items` after one to `most` random changes: inserts, removals, moves, edits of
    /// members and nested values, ids changed (to a number or a string, to one already
    /// there, or removed).
    mutating func changed(_ items: [JSON], most: Int = 6) -> [JSON] {
        var items = items
        for _ in 0..<int(1...most) {
            switch int(0...8) {
            case 0: items.insert(item(), at: int(0...items.count))
            case 1 where !items.isEmpty: items.remove(at: int(0...items.count - 1))
            case 2 where !items.isEmpty:
                let moved = items.remove(at: int(0...items.count - 1))
                items.insert(moved, at: int(0...items.count))
            case 3 where !items.isEmpty:
                let index = int(0...items.count - 1)
                items[index] = setting("count", to: .integer(int(0...50)), in: items[index])
            case 4 where !items.isEmpty:
                let index = int(0...items.count - 1)
                items[index] = setting(pick(["meta", "name", "extra"]), to: value(depth: 1), in: items[index])
            case 5 where !items.isEmpty:
                let index = int(0...items.count - 1)
                items[index] = setting("tags", to: .array((0..<int(0...4)).map { _ in item(depth: 1) }), in: items[index])
            case 6 where items.count > 1:
                let index = int(0...items.count - 1)
                let other = items[int(0...items.count - 1)]["id"] ?? id()
                items[index] = setting("id", to: chance(50) ? other : id(), in: items[index])
            case 7 where !items.isEmpty:
                let index = int(0...items.count - 1)
                items[index] = removing(pick(["id", "name", "meta"]), from: items[index])
            default:
                items.shuffle(using: &self)
            }
        }
        return items
    }

    private func setting(_ key: String, to value: JSON, in item: JSON) -> JSON {
        var members = item.objectValue ?? []
        if let index = members.firstIndex(where: { $0.key == key }) { members[index].value = value } else { members.append((key, value)) }
        return .object(members)
    }

    private func removing(_ key: String, from item: JSON) -> JSON {
        .object((item.objectValue ?? []).filter { $0.key != key })
    }
}

extension RandomDocuments: RandomNumberGenerator {}
