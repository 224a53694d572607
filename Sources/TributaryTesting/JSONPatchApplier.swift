public import Aggregation

/// RFC 6902 JSON Patch applied to a ``JSON`` document as a client library applies it, written
/// from the RFC and nothing of the service's: the tests check the service's patches with it
/// (the Python tests use the `jsonpatch` library, the browser test the page's own function).
/// Every operation is checked as the RFC asks: a path that does not exist, an index out of
/// range or with a leading zero, a `move` into its own child, a failed `test` all throw.
///
/// ```swift
/// let patched = try JSONPatchApplier.apply(JSON(parsing: Array(event.data.utf8)), to: document)
/// #expect(JSONPatchApplier.sameValue(patched, try JSON(parsing: getBody)))
/// ```
public enum JSONPatchApplier {
    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// `document` after `patch`, a JSON array of operations as an event carries it.
    public static func apply(_ patch: JSON, to document: JSON) throws(Failure) -> JSON {
        guard case .array(let operations) = patch else { throw Failure(description: "a JSON Patch is an array, not \(patch.kindDescription)") }
        var document = document
        for operation in operations {
            try apply(operation, to: &document)
        }
        return document
    }

    /// `document` after `operations`, each turned into its JSON form first.
    public static func apply(_ operations: [JSONPatchOperation], to document: JSON) throws(Failure) -> JSON {
        try apply(.array(operations.map(\.json)), to: document)
    }

    /// Whether `a` and `b` are the same JSON value: objects equal whatever their member order
    /// (a patch `add`s a new member at the end), strings by their exact UTF-8, numbers by their
    /// text, arrays in order.
    public static func sameValue(_ a: JSON, _ b: JSON) -> Bool {
        switch (a, b) {
        case (.null, .null): return true
        case (.bool(let x), .bool(let y)): return x == y
        case (.number(let x), .number(let y)): return x.utf8.elementsEqual(y.utf8)
        case (.string(let x), .string(let y)): return x.utf8.elementsEqual(y.utf8)
        case (.array(let x), .array(let y)): return x.count == y.count && zip(x, y).allSatisfy { sameValue($0, $1) }
        default:
            guard let x = a.objectValue, let y = b.objectValue, x.count == y.count else { return false }
            return x.allSatisfy { member in
                y.contains { $0.key.utf8.elementsEqual(member.key.utf8) && sameValue($0.value, member.value) }
            }
        }
    }

    private static func apply(_ operation: JSON, to document: inout JSON) throws(Failure) {
        guard case .string(let op)? = operation["op"], case .string(let pathText)? = operation["path"] else {
            throw Failure(description: "not an operation: \(String(decoding: operation.serialized, as: UTF8.self))")
        }
        let path = try tokens(pathText)
        switch op {
        case "add":
            try add(try value(of: operation), at: path, in: &document)
        case "remove":
            _ = try remove(at: path, in: &document)
        case "replace":
            _ = try get(path, in: document)
            if path.isEmpty {
                document = try value(of: operation)
            } else {
                _ = try remove(at: path, in: &document)
                try add(try value(of: operation), at: path, in: &document)
            }
        case "move", "copy":
            guard case .string(let fromText)? = operation["from"] else { throw Failure(description: "\(op) without from") }
            let from = try tokens(fromText)
            if op == "move" {
                guard from != path else { return }
                guard !(path.count > from.count && Array(path.prefix(from.count)) == from) else {
                    throw Failure(description: "move of \(fromText) into its own child \(pathText)")
                }
                let moved = try remove(at: from, in: &document)
                try add(moved, at: path, in: &document)
            } else {
                try add(try get(from, in: document), at: path, in: &document)
            }
        case "test":
            guard sameValue(try get(path, in: document), try value(of: operation)) else { throw Failure(description: "test of \(pathText) failed") }
        default:
            throw Failure(description: "unknown operation \(op)")
        }
    }

    private static func value(of operation: JSON) throws(Failure) -> JSON {
        guard let value = operation["value"] else { throw Failure(description: "an operation without its value") }
        return value
    }

    /// The reference tokens of a JSON Pointer, unescaped (`~1` is `/`, `~0` is `~`).
    private static func tokens(_ pointer: String) throws(Failure) -> [String] {
        guard !pointer.isEmpty else { return [] }
        guard pointer.hasPrefix("/") else { throw Failure(description: "a JSON Pointer starts with /: \(pointer)") }
        return pointer.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map { token in
            String(token).replacingAll("~1", with: "/").replacingAll("~0", with: "~")
        }
    }

    private static func index(_ token: String, count: Int, endAllowed: Bool) throws(Failure) -> Int {
        if endAllowed && token == "-" { return count }
        guard let index = Int(token), token.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), token == "0" || !token.hasPrefix("0"),
              index <= (endAllowed ? count : count - 1) else {
            throw Failure(description: "array index \(token) is not valid for \(count) items")
        }
        return index
    }

    private static func get(_ path: [String], in document: JSON) throws(Failure) -> JSON {
        var current = document
        for token in path {
            if case .array(let items) = current {
                current = items[try index(token, count: items.count, endAllowed: false)]
            } else if let members = current.objectValue, let member = members.first(where: { $0.key.utf8.elementsEqual(token.utf8) }) {
                current = member.value
            } else {
                throw Failure(description: "no \(token) in \(current.kindDescription)")
            }
        }
        return current
    }

    private static func add(_ value: JSON, at path: [String], in document: inout JSON) throws(Failure) {
        guard let last = path.last else {
            document = value
            return
        }
        try modifyParent(of: path, in: &document) { parent throws(Failure) in
            if case .array(var items) = parent {
                items.insert(value, at: try index(last, count: items.count, endAllowed: true))
                parent = .array(items)
            } else if var members = parent.objectValue {
                if let existing = members.firstIndex(where: { $0.key.utf8.elementsEqual(last.utf8) }) {
                    members[existing].value = value
                } else {
                    members.append((last, value))
                }
                parent = .object(members)
            } else {
                throw Failure(description: "add of \(last) into \(parent.kindDescription)")
            }
        }
    }

    private static func remove(at path: [String], in document: inout JSON) throws(Failure) -> JSON {
        guard let last = path.last else { throw Failure(description: "remove of the whole document") }
        var removed = JSON.null
        try modifyParent(of: path, in: &document) { parent throws(Failure) in
            if case .array(var items) = parent {
                removed = items.remove(at: try index(last, count: items.count, endAllowed: false))
                parent = .array(items)
            } else if var members = parent.objectValue, let existing = members.firstIndex(where: { $0.key.utf8.elementsEqual(last.utf8) }) {
                removed = members.remove(at: existing).value
                parent = .object(members)
            } else {
                throw Failure(description: "remove of a missing \(last)")
            }
        }
        return removed
    }

    /// Runs `change` on the value that holds `path`'s last token, in place.
    private static func modifyParent(
        of path: [String], in document: inout JSON, _ change: (inout JSON) throws(Failure) -> Void
    ) throws(Failure) {
        guard path.count > 1 else { return try change(&document) }
        let token = path[0]
        let rest = Array(path.dropFirst())
        if case .array(var items) = document {
            let at = try index(token, count: items.count, endAllowed: false)
            try modifyParent(of: rest, in: &items[at], change)
            document = .array(items)
        } else if var members = document.objectValue, let at = members.firstIndex(where: { $0.key.utf8.elementsEqual(token.utf8) }) {
            try modifyParent(of: rest, in: &members[at].value, change)
            document = .object(members)
        } else {
            throw Failure(description: "no \(token) in \(document.kindDescription)")
        }
    }
}

extension String {
    /// Every occurrence of `target` replaced, by Unicode scalars (a pointer's tokens are
    /// exact text, not characters to compare by canonical equivalence).
    fileprivate func replacingAll(_ target: String, with replacement: String) -> String {
        var output = String.UnicodeScalarView()
        let scalars = Array(unicodeScalars)
        let targetScalars = Array(target.unicodeScalars)
        var index = 0
        while index < scalars.count {
            if index + targetScalars.count <= scalars.count, Array(scalars[index..<index + targetScalars.count]) == targetScalars {
                output.append(contentsOf: replacement.unicodeScalars)
                index += targetScalars.count
            } else {
                output.append(scalars[index])
                index += 1
            }
        }
        return String(output)
    }
}
