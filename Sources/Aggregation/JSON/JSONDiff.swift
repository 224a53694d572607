import HTTPCore

/// The RFC 6902 JSON Patch that turns one document into another, as small as a walk of both
/// finds it: a live stream sends it instead of the whole document when one item of a list
/// changed (`?updates=patch`).
///
/// - Equal values give nothing. Values are compared byte for byte as they are written (a
///   string's exact UTF-8, a number's exact text), not as Swift compares strings (by
///   canonical equivalence): the client's document must end up exactly the one served.
/// - Objects: a member gone is `remove`d, a new one `add`ed, a changed one patched in place;
///   an object with a repeated member name (which a pointer cannot tell apart) is replaced
///   whole. Member names are matched by their exact UTF-8 too.
/// - Arrays whose items all carry an id (the first of ``itemIDs`` that every item of both
///   arrays has, as a string or a number, none repeated) are diffed by id: items gone are
///   removed, new ones added where they belong, items that changed place moved (the fewest:
///   those outside a longest run kept in order), and then each kept item patched in place,
///   so a changed item costs only its changed members. Any other array is patched index by
///   index (``JSONArrayDiff``).
/// - Values of different kinds are replaced.
///
/// ```swift
/// let diff = JSONDiff(itemIDs: [JSONPath("id")])
/// diff.patch(from: old, to: new)   // [.replace(path: "/7/taskCount", value: 999)]
/// ```
///
/// The operations apply one after another, as RFC 6902 says: each path names a place in
/// the document as the operations before it left it.
public struct JSONDiff: Sendable, Equatable {
    /// Where an array item keeps its id, e.g. `id`, or `topic.id` for a row of a paged list.
    public let itemIDs: [JSONPath]

    public init(itemIDs: [JSONPath]) {
        self.itemIDs = itemIDs
    }

    /// The operations that turn `old` into `new`.
    public func patch(from old: JSON, to new: JSON) -> [JSONPatchOperation] {
        var operations: [JSONPatchOperation] = []
        append(from: old, to: new, at: "", to: &operations)
        return operations
    }

    /// Appends to `operations` those that turn `old`, at `pointer`, into `new`.
    func append(from old: JSON, to new: JSON, at pointer: String, to operations: inout [JSONPatchOperation]) {
        if Self.identical(old, new) { return }
        if let oldMembers = old.objectValue, let newMembers = new.objectValue {
            return appendMembers(from: oldMembers, to: newMembers, whole: new, at: pointer, to: &operations)
        }
        if case .array(let oldItems) = old, case .array(let newItems) = new {
            return JSONArrayDiff.append(from: oldItems, to: newItems, diff: self, at: pointer, to: &operations)
        }
        operations.append(.replace(path: pointer, value: new))
    }

    private func appendMembers(
        from old: [(key: String, value: JSON)], to new: [(key: String, value: JSON)], whole: JSON, at pointer: String,
        to operations: inout [JSONPatchOperation]
    ) {
        var oldByName: [[UInt8]: Int] = [:]
        oldByName.reserveCapacity(old.count)
        for (index, member) in old.enumerated() where oldByName.updateValue(index, forKey: Array(member.key.utf8)) != nil {
            return operations.append(.replace(path: pointer, value: whole))
        }
        var newNames = Set<[UInt8]>()
        newNames.reserveCapacity(new.count)
        for member in new where !newNames.insert(Array(member.key.utf8)).inserted {
            return operations.append(.replace(path: pointer, value: whole))
        }
        for member in old where !newNames.contains(Array(member.key.utf8)) {
            operations.append(.remove(path: JSONPointer.appending(member: member.key, to: pointer)))
        }
        for member in new {
            let path = JSONPointer.appending(member: member.key, to: pointer)
            if let index = oldByName[Array(member.key.utf8)] {
                append(from: old[index].value, to: member.value, at: path, to: &operations)
            } else {
                operations.append(.add(path: path, value: member.value))
            }
        }
    }

    /// Whether `a` and `b` hold the same bytes, compared eight at a time (``ByteWords``): an
    /// item of a list is ~100 bytes, and a list of 1,000 is compared item by item.
    private static func sameBytes(_ a: ArraySlice<UInt8>, _ b: ArraySlice<UInt8>) -> Bool {
        guard a.count == b.count else { return false }
        return a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in
                var offset = 0
                while offset + 8 <= a.count {
                    if ByteWords.load(a, at: offset) != ByteWords.load(b, at: offset) { return false }
                    offset += 8
                }
                while offset < a.count {
                    if a[offset] != b[offset] { return false }
                    offset += 1
                }
                return true
            }
        }
    }

    /// Whether `a` and `b` are written as the same bytes (objects with their members in the
    /// same order). Kept texts compare as text: most items of two versions of a list are
    /// equal, and that costs one comparison of their bytes, no members read.
    static func identical(_ a: JSON, _ b: JSON) -> Bool {
        switch (a, b) {
        case (.raw(let a), .raw(let b)):
            return sameBytes(a.text, b.text)
        case (.null, .null):
            return true
        case (.bool(let a), .bool(let b)):
            return a == b
        case (.number(let a), .number(let b)):
            return a.utf8.elementsEqual(b.utf8)
        case (.string(let a), .string(let b)):
            return a.utf8.elementsEqual(b.utf8)
        case (.array(let a), .array(let b)):
            return a.count == b.count && zip(a, b).allSatisfy { identical($0, $1) }
        default:
            guard let a = a.objectValue, let b = b.objectValue, a.count == b.count else { return false }
            return zip(a, b).allSatisfy { $0.key.utf8.elementsEqual($1.key.utf8) && identical($0.value, $1.value) }
        }
    }
}
